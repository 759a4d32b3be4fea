//! Airlock's approval page, on the MCP origin of `serve --http` or on
//! `[approvals] listen` (how a stdio server gets one): where the person a
//! call acts for (or the approver the operator names) approves or declines
//! it, out of reach of the MCP client between the model and them
//! (`airlock_host::approval` has the model).
//!
//! Routes, under `/approvals`:
//!
//! - `GET /approvals/<id>?sig=…`: the card, the tool and its revision, who
//!   the call acts for and who may approve, Approve and Decline (a form; a
//!   `GET` never answers). With `[http.jwt]` the person signs in first, at
//!   its issuer (`signin.rs`); without it, the link alone is enough, and
//!   only from a loopback address, and only for the caller's own approval.
//! - `POST /approvals/<id>`: the answer, with the link's `sig` and a form
//!   token bound to the person's session and the approval.
//! - `GET /approvals/signin`, `GET /approvals/callback`: the sign-in.
//! - `GET /approvals/api/pending`, `POST /approvals/api/<id>`: what a
//!   named approver answers in a terminal (`airlock approvals`), with a
//!   bearer token (`api.rs`); never the caller's own approval, since an MCP
//!   client holds the caller's token.
//!
//! # Trust
//!
//! Nothing a request sends is trusted: the link's MAC is checked against
//! the approval as kept, the session and sign-in cookies and the form
//! token are MACs under the host's link key, a `POST` must come from this
//! origin (`Origin`, `Sec-Fetch-Site`), and each client address may make
//! `[approvals] page_requests_per_second` requests (`429` past it). Every
//! response forbids framing, caching, scripts and any resource but the
//! page's own stylesheet. Who answered, how and for which revision goes to
//! the audit log with the call; a refused attempt is logged with why.

mod api;
mod page;
mod signin;

use super::connections::ClientConnection;
use super::jwt::Verifier;
use airlock_host::Approver;
use airlock_host::Host;
use airlock_host::transport::approval::{Answer, Approval, How, NotAnswered, PAGE_PATH, may_answer, now_ms};
use airlock_policy::audit::RefusedApproval;
use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use signin::{Pending, Session, SignIn};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// The policy every page response carries: nothing but this origin's
/// stylesheet and forms, no frame may hold it.
const CONTENT_SECURITY_POLICY: &str =
    "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
/// The most client addresses whose request rate is tracked at once.
const MAX_TRACKED_CLIENTS: usize = 4096;
/// The most bytes of a form body read.
const MAX_FORM_BYTES: usize = 4096;

/// The page's state.
pub(crate) struct Page {
    host: Host,
    /// The sign-in, with `[http.jwt]`.
    signin: Option<SignIn>,
    /// The origin browsers reach the page at.
    base: String,
    /// Whether that origin is https (cookies are then `Secure`).
    secure: bool,
    limiter: Limiter,
}

/// Requests per client address in the current second.
struct Limiter {
    rate: u32,
    seen: Mutex<HashMap<IpAddr, (Instant, u32)>>,
}

impl Limiter {
    /// Whether `client` may make one more request now.
    fn allow(&self, client: IpAddr) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if seen.len() >= MAX_TRACKED_CLIENTS {
            seen.retain(|_, (since, _)| now.duration_since(*since).as_secs() < 1);
        }
        if seen.len() >= MAX_TRACKED_CLIENTS && !seen.contains_key(&client) {
            return false;
        }
        let entry = seen.entry(client).or_insert((now, 0));
        if now.duration_since(entry.0).as_secs() >= 1 {
            *entry = (now, 0);
        }
        entry.1 = entry.1.saturating_add(1);
        entry.1 <= self.rate
    }
}

impl Page {
    /// The page for `host`, served at `base` (scheme, host and port).
    pub(crate) fn new(host: Host, jwt: Option<Arc<Verifier>>, base: String) -> Arc<Page> {
        let settings = host.config().approvals;
        let signin = jwt.map(|verifier| SignIn::new(verifier, settings.client_id.clone()));
        Arc::new(Page {
            secure: base.starts_with("https://"),
            base,
            limiter: Limiter { rate: settings.page_requests_per_second, seen: Mutex::new(HashMap::new()) },
            signin,
            host,
        })
    }
}

/// Refuses a request whose `Host` is not the page's own: a page reached
/// under another name (DNS rebinding) would be that name's origin, able to
/// read the form it is shown.
async fn own_host(
    State(page): State<Arc<Page>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let authority = page.base.split_once("://").map_or(page.base.as_str(), |(_, rest)| rest);
    let sent = request.headers().get(header::HOST).and_then(|v| v.to_str().ok());
    if sent.is_some_and(|host| host.eq_ignore_ascii_case(authority)) {
        return next.run(request).await;
    }
    notice(StatusCode::FORBIDDEN, "Wrong address", &format!("The approval page is served at {}.", page.base))
}

/// The page's routes.
pub(crate) fn routes(page: Arc<Page>) -> axum::Router {
    use axum::routing::{get, post};
    let checked = axum::middleware::from_fn_with_state(page.clone(), own_host);
    axum::Router::new()
        .route(&format!("{PAGE_PATH}/page.css"), get(stylesheet))
        .route(&format!("{PAGE_PATH}/signin"), get(sign_in))
        .route(&format!("{PAGE_PATH}/callback"), get(callback))
        .route(&format!("{PAGE_PATH}/api/pending"), get(api::api_pending))
        .route(&format!("{PAGE_PATH}/api/{{id}}"), post(api::api_answer))
        .route(&format!("{PAGE_PATH}/{{id}}"), get(show).post(answer))
        .layer(checked)
        .with_state(page)
}

/// Headers every page response carries. The referrer policy is
/// `same-origin`: the link's signature never leaves in a `Referer`, and a
/// form posted from the page still carries its origin (under
/// `no-referrer` a browser sends `Origin: null`, which reads as another
/// site).
fn guarded(status: StatusCode, content_type: &'static str, body: String) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CONTENT_SECURITY_POLICY));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

fn html(status: StatusCode, body: String) -> Response {
    guarded(status, "text/html; charset=utf-8", body)
}

fn notice(status: StatusCode, title: &str, text: &str) -> Response {
    html(status, page::notice(title, text))
}

fn json_response(status: StatusCode, value: &serde_json::Value) -> Response {
    guarded(status, "application/json", value.to_string())
}

async fn stylesheet() -> Response {
    guarded(StatusCode::OK, "text/css; charset=utf-8", page::STYLESHEET.to_owned())
}

/// The client's address: the connection's peer, or the one a listed
/// proxy's PROXY header gave (unknown: unspecified, never loopback).
fn client(connected: Option<&Extension<ClientConnection>>) -> IpAddr {
    connected.map_or(IpAddr::from([0, 0, 0, 0]), |Extension(connection)| connection.address())
}

/// The value of cookie `name` in `headers`.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// A `Set-Cookie` for `name` (`value` empty: removed), scoped to the page.
fn set_cookie(page: &Page, name: &str, value: &str, max_age_secs: u64) -> HeaderValue {
    let secure = if page.secure { "; Secure" } else { "" };
    let text = format!("{name}={value}; Path={PAGE_PATH}; HttpOnly; SameSite=Lax; Max-Age={max_age_secs}{secure}");
    HeaderValue::from_str(&text).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Who is answering: a signed-in person, or (without `[http.jwt]`) the
/// holder of the link on this machine.
enum Person {
    SignedIn(Session),
    Link,
}

impl Person {
    fn session_id(&self) -> &str {
        match self {
            Person::SignedIn(session) => &session.id,
            Person::Link => "link",
        }
    }
}

#[derive(Deserialize)]
struct LinkQuery {
    #[serde(default)]
    sig: String,
}

/// The approval a link names, checked; else the page that says why.
async fn linked(page: &Page, id: &str, sig: &str) -> Result<Approval, Response> {
    let approval = match page.host.approvals().get(id).await {
        Ok(Some(approval)) => approval,
        Ok(None) => {
            return Err(notice(
                StatusCode::NOT_FOUND,
                "No such approval",
                "This link names no approval that is still open: it has lapsed, or it was never issued. Ask for \
                 the call to be made again for a new link.",
            ));
        }
        Err(err) => {
            tracing::warn!("{err}");
            return Err(notice(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again shortly",
                "The approvals cannot be read right now (the shared store is unreachable).",
            ));
        }
    };
    if !page.host.approvals().key().link_checks(&approval, sig) {
        refused(page, &approval, None, "the link's signature does not match the approval");
        return Err(notice(
            StatusCode::FORBIDDEN,
            "Not a valid link",
            "This link does not match the approval it names (it was altered, or made for another call).",
        ));
    }
    let current = page.host.tools().get(&approval.tool).map(|tool| tool.revision.clone());
    if current.as_deref() != Some(approval.revision.as_str()) {
        refused(page, &approval, None, "the tool's revision changed since the approval was asked for");
        return Err(notice(
            StatusCode::CONFLICT,
            "The tool changed",
            "The tool this approval is for has changed since it was asked for (another component, description or \
             schema), so it cannot be approved. The call must be made again, and you will see what it is now.",
        ));
    }
    Ok(approval)
}

/// Log and audit a refused attempt to answer `approval` (an
/// `approval_refused` record). The page's request rate cap bounds how many
/// records one client address can make.
fn refused(page: &Page, approval: &Approval, person: Option<&str>, why: &str) {
    tracing::warn!(
        approval = %approval.id,
        tool = %approval.tool,
        principal = %approval.principal,
        person = person.unwrap_or("-"),
        "an attempt to answer an approval was refused: {why}"
    );
    page.host.audit_refused_approval(&RefusedApproval {
        approval_id: approval.id.clone(),
        tool: approval.tool.clone(),
        principal: approval.principal.clone(),
        person: person.map(str::to_owned),
        reason: why.to_owned(),
    });
}

/// Who is at the page, or the response that signs them in (or refuses).
fn person(
    page: &Page,
    headers: &HeaderMap,
    client: IpAddr,
    approval: &Approval,
    next: &str,
) -> Result<Person, Box<Response>> {
    if page.signin.is_none() {
        // Without [http.jwt] nobody can sign in: the link stands for the
        // caller, on this machine only, and only for their own approval.
        if !client.is_loopback() {
            refused(page, approval, None, "the link alone is accepted only from a loopback address");
            return Err(Box::new(notice(
                StatusCode::FORBIDDEN,
                "Not from here",
                "Without sign-in ([http.jwt]), an approval link is accepted only on the machine Airlock runs on.",
            )));
        }
        if approval.approver != Approver::Caller {
            refused(page, approval, None, "a named approver must sign in, and there is no [http.jwt]");
            return Err(Box::new(notice(
                StatusCode::FORBIDDEN,
                "Sign-in needed",
                "This call needs the approval of someone other than the person it acts for, and this server has \
                 no sign-in ([http.jwt]) to tell who you are. The approver can answer with `airlock approvals`.",
            )));
        }
        return Ok(Person::Link);
    }
    let session = cookie(headers, signin::SESSION_COOKIE)
        .and_then(|text| signin::open_session(page.host.approvals().key(), text, now_ms()));
    match session {
        Some(session) => Ok(Person::SignedIn(session)),
        None => {
            let target = format!(
                "{PAGE_PATH}/signin?next={}",
                form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>()
            );
            let mut response = StatusCode::SEE_OTHER.into_response();
            if let Ok(location) = HeaderValue::from_str(&target) {
                response.headers_mut().insert(header::LOCATION, location);
            }
            response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            Err(Box::new(response))
        }
    }
}

/// Whether the person may answer, by name; the page that refuses else.
fn allowed(page: &Page, approval: &Approval, who: &Person) -> Result<String, Box<Response>> {
    let name = match who {
        Person::SignedIn(session) => session.principal.clone(),
        Person::Link => approval.principal.clone(),
    };
    let state = page.host.state();
    match may_answer(approval, &name, |person, group| state.policy().principal_is_in(person, group)) {
        Ok(()) => Ok(name),
        Err(why) => {
            refused(page, approval, Some(&name), &why.explain(approval));
            Err(Box::new(notice(StatusCode::FORBIDDEN, "Not yours to answer", &why.explain(approval))))
        }
    }
}

/// What the page says of an approval already answered or used.
fn settled(approval: &Approval) -> Option<Response> {
    let answer = approval.answer.as_ref()?;
    let what = if answer.approved { "approved" } else { "declined" };
    let used = if approval.used { " A call ran under it; it cannot be used again." } else { "" };
    Some(notice(
        StatusCode::CONFLICT,
        &format!("Already {what}"),
        &format!("{} {what} this call already.{used}", answer.by),
    ))
}

async fn show(
    State(page): State<Arc<Page>>,
    Path(id): Path<String>,
    Query(query): Query<LinkQuery>,
    connected: Option<Extension<ClientConnection>>,
    headers: HeaderMap,
) -> Response {
    let client = client(connected.as_ref());
    if !page.limiter.allow(client) {
        return notice(StatusCode::TOO_MANY_REQUESTS, "Too many requests", "Wait a moment and reload the page.");
    }
    let approval = match linked(&page, &id, &query.sig).await {
        Ok(approval) => approval,
        Err(response) => return response,
    };
    if let Some(response) = settled(&approval) {
        // Seeing an answer given is no attempt; opening a link whose call
        // ran already is a replay.
        if approval.used {
            refused(&page, &approval, None, "the link was opened again after its call ran");
        }
        return response;
    }
    let next = format!("{PAGE_PATH}/{id}?sig={}", query.sig);
    let who = match person(&page, &headers, client, &approval, &next) {
        Ok(who) => who,
        Err(response) => return *response,
    };
    if let Err(response) = allowed(&page, &approval, &who) {
        return *response;
    }
    let key = page.host.approvals().key();
    let csrf = signin::csrf(key, who.session_id(), &approval.id);
    let signed_in = match &who {
        Person::SignedIn(session) => Some(session.principal.as_str()),
        Person::Link => None,
    };
    let minutes_left = approval.expires_ms.saturating_sub(now_ms()).div_ceil(60_000);
    html(
        StatusCode::OK,
        page::ask(&page::Ask { approval: &approval, person: signed_in, sig: &query.sig, csrf: &csrf, minutes_left }),
    )
}

#[derive(Deserialize)]
struct AnswerForm {
    #[serde(default)]
    sig: String,
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    decision: String,
}

/// Whether a `POST` comes from this page's own origin: `Origin` (when the
/// browser sends it) is the page's, and `Sec-Fetch-Site` (when sent) says
/// same-origin.
fn same_origin(page: &Page, headers: &HeaderMap) -> bool {
    let origin_ok = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()).is_none_or(|origin| origin == page.base);
    let site_ok = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()).is_none_or(|site| site == "same-origin");
    origin_ok && site_ok
}

async fn answer(
    State(page): State<Arc<Page>>,
    Path(id): Path<String>,
    connected: Option<Extension<ClientConnection>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let client = client(connected.as_ref());
    if !page.limiter.allow(client) {
        return notice(StatusCode::TOO_MANY_REQUESTS, "Too many requests", "Wait a moment and try again.");
    }
    if body.len() > MAX_FORM_BYTES {
        return notice(StatusCode::PAYLOAD_TOO_LARGE, "Not an answer", "The form sent is too large.");
    }
    let Ok(form) = serde_urlencoded::from_bytes::<AnswerForm>(&body) else {
        return notice(StatusCode::BAD_REQUEST, "Not an answer", "The form sent is not the approval page's.");
    };
    let approval = match linked(&page, &id, &form.sig).await {
        Ok(approval) => approval,
        Err(response) => return response,
    };
    if !same_origin(&page, &headers) {
        refused(&page, &approval, None, "the answer was posted from another site");
        return notice(
            StatusCode::FORBIDDEN,
            "Not from this page",
            "An answer is only accepted from Airlock's own approval page.",
        );
    }
    if let Some(response) = settled(&approval) {
        refused(&page, &approval, None, "an answer was posted for an approval answered already");
        return response;
    }
    let next = format!("{PAGE_PATH}/{id}?sig={}", form.sig);
    let who = match person(&page, &headers, client, &approval, &next) {
        Ok(who) => who,
        Err(response) => return *response,
    };
    if !signin::csrf_checks(page.host.approvals().key(), who.session_id(), &approval.id, &form.csrf) {
        refused(&page, &approval, None, "the form token is missing or not this session's");
        return notice(
            StatusCode::FORBIDDEN,
            "Not from this page",
            "This answer did not come from the approval page you were shown (its form token does not match). \
             Reload the page and answer there.",
        );
    }
    let name = match allowed(&page, &approval, &who) {
        Ok(name) => name,
        Err(response) => return *response,
    };
    let approved = match form.decision.as_str() {
        "approve" => true,
        "decline" => false,
        _ => return notice(StatusCode::BAD_REQUEST, "Not an answer", "Choose Approve or Decline."),
    };
    record(&page, &approval, Answer { by: name, how: How::Page, at_ms: now_ms(), approved }).await
}

/// Record an answer and say so.
async fn record(page: &Page, approval: &Approval, answer: Answer) -> Response {
    let approved = answer.approved;
    let by = answer.by.clone();
    match page.host.approvals().answer(&approval.id, answer).await {
        Ok(Ok(_)) => {
            tracing::info!(approval = %approval.id, tool = %approval.tool, principal = %approval.principal,
                by = %by, approved, "an approval was answered");
            if approved {
                notice(
                    StatusCode::OK,
                    "Approved",
                    &format!(
                        "You approved this call. {} runs once, now if the call is waiting, or when it is made again.",
                        approval.tool
                    ),
                )
            } else {
                notice(StatusCode::OK, "Declined", "You declined this call. It will not run.")
            }
        }
        Ok(Err(NotAnswered::Answered(given))) => {
            let what = if given.approved { "approved" } else { "declined" };
            notice(StatusCode::CONFLICT, &format!("Already {what}"), &format!("{} {what} this call already.", given.by))
        }
        Ok(Err(NotAnswered::Unknown)) => notice(StatusCode::NOT_FOUND, "No such approval", "This approval has lapsed."),
        Err(err) => {
            tracing::warn!("{err}");
            notice(StatusCode::SERVICE_UNAVAILABLE, "Try again shortly", "The answer could not be recorded.")
        }
    }
}

#[derive(Deserialize)]
struct SignInQuery {
    #[serde(default)]
    next: String,
}

async fn sign_in(
    State(page): State<Arc<Page>>,
    Query(query): Query<SignInQuery>,
    connected: Option<Extension<ClientConnection>>,
) -> Response {
    if !page.limiter.allow(client(connected.as_ref())) {
        return notice(StatusCode::TOO_MANY_REQUESTS, "Too many requests", "Wait a moment and reload the page.");
    }
    let Some(signin) = &page.signin else {
        return notice(StatusCode::NOT_FOUND, "No sign-in", "This server has no sign-in ([http.jwt]).");
    };
    // Only back to an approval page: never a redirect elsewhere.
    let next = if query.next.starts_with(&format!("{PAGE_PATH}/")) && !query.next.contains("//") {
        query.next
    } else {
        PAGE_PATH.to_owned()
    };
    let endpoints = match signin.endpoints().await {
        Ok(endpoints) => endpoints,
        Err(err) => {
            tracing::warn!("{err}");
            return notice(StatusCode::BAD_GATEWAY, "Sign-in unavailable", "The sign-in service cannot be reached.");
        }
    };
    let (Some(verifier), Some(state), Some(nonce)) = (signin::random(48), signin::random(24), signin::random(24))
    else {
        return notice(StatusCode::INTERNAL_SERVER_ERROR, "Sign-in unavailable", "No random source.");
    };
    let pending = Pending { verifier, state, nonce, next, expires_ms: now_ms().saturating_add(signin::SIGNIN_TTL_MS) };
    let Some(sealed) = signin::seal_pending(page.host.approvals().key(), &pending) else {
        return notice(StatusCode::INTERNAL_SERVER_ERROR, "Sign-in unavailable", "The sign-in could not be started.");
    };
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("response_type", "code")
        .append_pair("client_id", &signin.client_id)
        .append_pair("redirect_uri", &format!("{}{PAGE_PATH}/callback", page.base))
        .append_pair("scope", "openid")
        .append_pair("state", &pending.state)
        .append_pair("nonce", &pending.nonce)
        .append_pair("code_challenge", &signin::challenge(&pending.verifier))
        .append_pair("code_challenge_method", "S256")
        .finish();
    let separator = if endpoints.authorization_endpoint.contains('?') { '&' } else { '?' };
    let location = format!("{}{separator}{query}", endpoints.authorization_endpoint);
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let Ok(location) = HeaderValue::from_str(&location) {
        headers.insert(header::LOCATION, location);
    }
    headers.insert(header::SET_COOKIE, set_cookie(&page, signin::SIGNIN_COOKIE, &sealed, signin::SIGNIN_TTL_MS / 1000));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[derive(Deserialize)]
struct CallbackQuery {
    #[serde(default)]
    code: String,
    #[serde(default)]
    state: String,
}

async fn callback(
    State(page): State<Arc<Page>>,
    Query(query): Query<CallbackQuery>,
    connected: Option<Extension<ClientConnection>>,
    headers: HeaderMap,
) -> Response {
    if !page.limiter.allow(client(connected.as_ref())) {
        return notice(StatusCode::TOO_MANY_REQUESTS, "Too many requests", "Wait a moment and sign in again.");
    }
    let Some(signin) = &page.signin else {
        return notice(StatusCode::NOT_FOUND, "No sign-in", "This server has no sign-in ([http.jwt]).");
    };
    let key = page.host.approvals().key();
    let pending = cookie(&headers, signin::SIGNIN_COOKIE).and_then(|text| signin::open_pending(key, text, now_ms()));
    let Some(pending) = pending.filter(|p| !query.state.is_empty() && p.state == query.state) else {
        return notice(
            StatusCode::BAD_REQUEST,
            "Sign-in not recognised",
            "This sign-in was not started here, or it took too long. Open the approval link again.",
        );
    };
    let redirect_uri = format!("{}{PAGE_PATH}/callback", page.base);
    let principal = match signin.finish(&query.code, &redirect_uri, &pending).await {
        Ok(principal) => principal,
        Err(why) => {
            tracing::warn!("an approval page sign-in failed: {why}");
            return notice(StatusCode::FORBIDDEN, "Sign-in failed", &why);
        }
    };
    let Some(id) = signin::random(24) else {
        return notice(StatusCode::INTERNAL_SERVER_ERROR, "Sign-in failed", "No random source.");
    };
    let session = Session { principal, id, expires_ms: now_ms().saturating_add(signin::SESSION_TTL_MS) };
    let Some(sealed) = signin::seal_session(key, &session) else {
        return notice(StatusCode::INTERNAL_SERVER_ERROR, "Sign-in failed", "The session could not be made.");
    };
    let mut response = StatusCode::SEE_OTHER.into_response();
    let out = response.headers_mut();
    if let Ok(location) = HeaderValue::from_str(&pending.next) {
        out.insert(header::LOCATION, location);
    }
    out.append(header::SET_COOKIE, set_cookie(&page, signin::SESSION_COOKIE, &sealed, signin::SESSION_TTL_MS / 1000));
    out.append(header::SET_COOKIE, set_cookie(&page, signin::SIGNIN_COOKIE, "", 0));
    out.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
