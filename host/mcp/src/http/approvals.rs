//! Airlock's approval page, on the MCP origin of `serve --http` or on
//! `[approvals] listen` (how a stdio server gets one): where the person a
//! call acts for (or the approver the operator names) approves or declines
//! it, out of reach of the MCP client between the model and them
//! (`airlock_pipeline::approval` has the model).
//!
//! Presence, not possession: the link, the page's cookies and form tokens
//! only say that someone holds them, and an MCP client holds them all. An
//! answer counts only when the person proved they are there: with a
//! passkey (WebAuthn with user verification, `approval/passkey.rs` in the
//! host) where there is no `[http.jwt]`, by signing in at its issuer where
//! there is (`signin.rs`), or both with `[approvals] require_passkey`. The
//! answer is recorded as given by whoever proved it (the passkey's
//! principal and credential id, or the signed-in principal), never by the
//! link's principal. A page that could not tell who is there is not
//! served: [`Page::new`] says why, and start-up refuses `mode = "page"`
//! then.
//!
//! Routes, under `/approvals`:
//!
//! - `GET /approvals/<id>?sig=…`: the card, the tool and its revision, who
//!   the call acts for and who may approve, Approve and Decline (each with
//!   a passkey challenge of its own when a passkey answers; a `GET` never
//!   answers). With `[http.jwt]` the person signs in first.
//! - `POST /approvals/<id>`: the answer (a form, nothing else), with the
//!   link's `sig`, the passkey's assertion and its sealed challenge, and,
//!   signed in, a form token bound to the session.
//! - `GET|POST /approvals/enroll/<token>`: a person's passkey added through
//!   a one-time link the operator made (`airlock approvals enroll`);
//!   `GET|POST /approvals/passkeys`: added after signing in (`enrol.rs`).
//!   Once a principal has a passkey, one of theirs confirms a new one.
//! - `GET /approvals/signin`, `GET /approvals/callback`: the sign-in.
//! - `GET /approvals/api/pending`: what a named approver lists in a
//!   terminal (`airlock approvals list`, `api.rs`); answers are given here.
//! - `GET /approvals/page.css`, `GET /approvals/passkey.js`: the page's
//!   stylesheet and its one script.
//!
//! # Trust
//!
//! Nothing a request sends is trusted: the link's MAC is checked against
//! the approval as kept, the session and sign-in cookies, the form token
//! and the sealed passkey challenges are MACs under the host's link key,
//! an assertion is verified against the challenge, the page's origin and
//! the public key kept, a `POST` must be a form from this origin
//! (`Origin`, `Sec-Fetch-Site`). The client's address is the one the MCP
//! gate uses (a listed proxy's PROXY header or `X-Forwarded-For`). Requests
//! are capped per principal and in all (`limit.rs`). Every response
//! forbids framing and caching, and any script or resource but the page's
//! own. Who answered, how and for which revision goes to the audit log with
//! the call; a refused attempt is logged and audited with why.

mod api;
mod enrol;
mod limit;
mod page;
mod signin;

use super::connections::ClientConnection;
use super::jwt::Verifier;
use airlock_pipeline::Host;
use airlock_pipeline::transport::approval::{
    Answer, Approval, Challenge, NotAnswered, PAGE_PATH, Proof, Purpose, RelyingParty, credential_id, eligible,
    may_answer, now_ms,
};
use airlock_policy::audit::RefusedApproval;
use axum::Extension;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use limit::{Bucket, Limiter};
use serde::Deserialize;
use signin::{Session, SignIn};
use std::net::IpAddr;
use std::sync::Arc;

/// The most bytes of a form body read: a passkey's assertion and its
/// sealed challenge, or a new passkey and its registration.
const MAX_FORM_BYTES: usize = 128 << 10;

/// The page's state.
pub(crate) struct Page {
    host: Host,
    /// The sign-in, with `[http.jwt]`.
    signin: Option<SignIn>,
    /// The relying party of the passkeys that must answer: without
    /// `[http.jwt]`, or with `require_passkey`.
    passkeys: Option<RelyingParty>,
    /// The origin browsers reach the page at.
    base: String,
    /// Whether that origin is https (cookies are then `Secure`).
    secure: bool,
    /// The response headers' Content-Security-Policy.
    policy: HeaderValue,
    limiter: Limiter,
}

impl Page {
    /// The page for `host`, served at `base` (scheme, host and port), with
    /// `[http.jwt]`'s verifier when there is one.
    ///
    /// # Errors
    ///
    /// The page could not tell who is there: passkeys must answer (no
    /// `[http.jwt]`, or `require_passkey`) and they cannot be had at
    /// `base` or kept anywhere. The message says what to add.
    pub(crate) fn new(host: Host, jwt: Option<Arc<Verifier>>, base: String) -> Result<Arc<Page>, String> {
        let settings = host.config().approvals;
        let signin = jwt.map(|verifier| SignIn::new(verifier, settings.client_id.clone()));
        let passkeys = if signin.is_none() || settings.require_passkey {
            let why = if signin.is_none() {
                "there is no [http.jwt] to sign people in, so a passkey must prove that a person answers"
            } else {
                "[approvals] require_passkey asks for a passkey besides sign-in"
            };
            let rp = RelyingParty::for_page(&base).map_err(|err| format!("{why}, and {err}"))?;
            if !host.approvals().passkeys().kept() {
                return Err(format!(
                    "{why}, and there is nowhere to keep passkeys: set [approvals] state_dir (or [fleet])"
                ));
            }
            Some(rp)
        } else {
            None
        };
        let policy = format!(
            "default-src 'none'; script-src {base}{PAGE_PATH}/passkey.js; style-src 'self'; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'"
        );
        let policy = HeaderValue::from_str(&policy).map_err(|_| format!("{base:?} cannot be written in a header"))?;
        Ok(Arc::new(Page {
            secure: base.starts_with("https://"),
            base,
            policy,
            limiter: Limiter::new(settings.page_requests_per_second, settings.page_requests_per_second_total),
            signin,
            passkeys,
            host,
        }))
    }

    /// How people prove they are at the page, as start-up says it.
    pub(crate) fn presence(&self) -> String {
        let passkeys =
            self.passkeys.as_ref().map(|rp| format!("passkeys for the relying party {} at {}", rp.id(), rp.origin()));
        let signin = self.signin.as_ref().map(|s| format!("sign-in at {}", s.verifier.issuer()));
        [signin, passkeys].into_iter().flatten().collect::<Vec<_>>().join(" and ")
    }
}

/// Refuses a request whose `Host` is not the page's own: a page reached
/// under another name (DNS rebinding) would be that name's origin, able to
/// read the form it is shown, and a passkey is bound to the page's name.
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
    notice(&page, StatusCode::FORBIDDEN, "Wrong address", &format!("The approval page is served at {}.", page.base))
}

/// The page's routes.
pub(crate) fn routes(page: Arc<Page>) -> axum::Router {
    use axum::routing::get;
    let checked = axum::middleware::from_fn_with_state(page.clone(), own_host);
    axum::Router::new()
        .route(&format!("{PAGE_PATH}/page.css"), get(stylesheet))
        .route(&format!("{PAGE_PATH}/passkey.js"), get(script))
        .route(&format!("{PAGE_PATH}/signin"), get(signin::sign_in))
        .route(&format!("{PAGE_PATH}/callback"), get(signin::callback))
        .route(&format!("{PAGE_PATH}/api/pending"), get(api::api_pending))
        .route(&format!("{PAGE_PATH}/enroll/{{token}}"), get(enrol::show_link).post(enrol::add_by_link))
        .route(&format!("{PAGE_PATH}/passkeys"), get(enrol::show_signed_in).post(enrol::add_signed_in))
        .route(&format!("{PAGE_PATH}/{{id}}"), get(show).post(answer))
        .layer(checked)
        .with_state(page)
}

/// Headers every page response carries. The referrer policy is
/// `same-origin`: the link's signature never leaves in a `Referer`, and a
/// form posted from the page still carries its origin (under
/// `no-referrer` a browser sends `Origin: null`, which reads as another
/// site).
fn guarded(page: &Page, status: StatusCode, content_type: &'static str, body: String) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CONTENT_SECURITY_POLICY, page.policy.clone());
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    response
}

fn html(page: &Page, status: StatusCode, body: String) -> Response {
    guarded(page, status, "text/html; charset=utf-8", body)
}

fn notice(page: &Page, status: StatusCode, title: &str, text: &str) -> Response {
    html(page, status, page::notice(title, text))
}

fn json_response(page: &Page, status: StatusCode, value: &serde_json::Value) -> Response {
    guarded(page, status, "application/json", value.to_string())
}

fn too_many(page: &Page) -> Response {
    notice(page, StatusCode::TOO_MANY_REQUESTS, "Too many requests", "Wait a moment and try again.")
}

async fn stylesheet(State(page): State<Arc<Page>>) -> Response {
    guarded(&page, StatusCode::OK, "text/css; charset=utf-8", page::STYLESHEET.to_owned())
}

async fn script(State(page): State<Arc<Page>>) -> Response {
    guarded(&page, StatusCode::OK, "text/javascript; charset=utf-8", page::SCRIPT.to_owned())
}

/// The client's address, as the MCP gate reads it (`ClientConnection`):
/// the peer's, or what a listed proxy says (unknown: unspecified, never
/// loopback).
fn client(connected: Option<&Extension<ClientConnection>>, headers: &HeaderMap) -> IpAddr {
    connected.map_or(IpAddr::from([0, 0, 0, 0]), |Extension(connection)| connection.client(headers))
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

/// A `303` to `location`.
fn see_other(location: &str) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    if let Ok(location) = HeaderValue::from_str(location) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[derive(Deserialize)]
struct LinkQuery {
    #[serde(default)]
    sig: String,
}

/// The live approval `id`, or the page that says why not.
async fn find(page: &Page, id: &str) -> Result<Approval, Response> {
    match page.host.approvals().get(id).await {
        Ok(Some(approval)) => Ok(approval),
        Ok(None) => Err(notice(
            page,
            StatusCode::NOT_FOUND,
            "No such approval",
            "This link names no approval that is still open: it has lapsed, it was withdrawn to make room for \
             another's (the host keeps only so many waiting), or it was never issued. Ask for the call to be made \
             again for a new link.",
        )),
        Err(err) => {
            tracing::warn!("{err}");
            Err(notice(
                page,
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again shortly",
                "The approvals cannot be read right now (the shared store is unreachable).",
            ))
        }
    }
}

/// The approval `id` a request is about, within the request rate of its
/// principal (of the client's address while no approval is found), with
/// its link checked; else the page that says why.
async fn linked(page: &Page, id: &str, sig: &str, client: IpAddr) -> Result<Approval, Response> {
    let approval = match find(page, id).await {
        Ok(approval) => approval,
        Err(response) if page.limiter.allow(Bucket::Address(client)) => return Err(response),
        Err(_) => return Err(too_many(page)),
    };
    if !page.limiter.allow(Bucket::Principal(approval.principal.clone())) {
        return Err(too_many(page));
    }
    if !page.host.approvals().key().link_checks(&approval, sig) {
        refused(page, &approval, None, "the link's signature does not match the approval");
        return Err(notice(
            page,
            StatusCode::FORBIDDEN,
            "Not a valid link",
            "This link does not match the approval it names (it was altered, or made for another call).",
        ));
    }
    let current = page.host.tools().get(&approval.tool).map(|tool| tool.revision.clone());
    if current.as_deref() != Some(approval.revision.as_str()) {
        refused(page, &approval, None, "the tool's revision changed since the approval was asked for");
        return Err(notice(
            page,
            StatusCode::CONFLICT,
            "The tool changed",
            "The tool this approval is for has changed since it was asked for (another component, description or \
             schema), so it cannot be approved. The call must be made again, and you will see what it is now.",
        ));
    }
    Ok(approval)
}

/// Log and audit a refused attempt to answer `approval` (an
/// `approval_refused` record). The page's request rate bounds how many
/// records one principal's approvals can make.
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

/// The signed-in person, with `[http.jwt]` (`None` without it); a person
/// not signed in yet is sent to sign in, and back to `next`.
fn signed_in(page: &Page, headers: &HeaderMap, next: &str) -> Result<Option<Session>, Box<Response>> {
    if page.signin.is_none() {
        return Ok(None);
    }
    let session = cookie(headers, signin::SESSION_COOKIE)
        .and_then(|text| signin::open_session(page.host.approvals().key(), text, now_ms()));
    match session {
        Some(session) => Ok(Some(session)),
        None => {
            let next = form_urlencoded::byte_serialize(next.as_bytes()).collect::<String>();
            Err(Box::new(see_other(&format!("{PAGE_PATH}/signin?next={next}"))))
        }
    }
}

/// Whether `person` may answer `approval`; the page that refuses else.
fn allowed(page: &Page, approval: &Approval, person: &str) -> Result<(), Box<Response>> {
    let state = page.host.state();
    match may_answer(approval, person, |person, group| state.policy().principal_is_in(person, group)) {
        Ok(()) => Ok(()),
        Err(why) => {
            refused(page, approval, Some(person), &why.explain(approval));
            Err(Box::new(notice(page, StatusCode::FORBIDDEN, "Not yours to answer", &why.explain(approval))))
        }
    }
}

/// What the page says of an approval already answered or used.
fn settled(page: &Page, approval: &Approval) -> Option<Response> {
    let answer = approval.answer.as_ref()?;
    let what = if answer.approved { "approved" } else { "declined" };
    let used = if approval.used { " A call ran under it; it cannot be used again." } else { "" };
    Some(notice(
        page,
        StatusCode::CONFLICT,
        &format!("Already {what}"),
        &format!("{} {what} this call already.{used}", answer.by),
    ))
}

/// The passkey challenges that approve and decline `approval`, answered by
/// a passkey of someone who may (of `only`, when signed in); or the page
/// that says nobody who may has one.
async fn challenges(
    page: &Page,
    rp: &RelyingParty,
    approval: &Approval,
    only: Option<&str>,
) -> Result<(Challenge, Challenge), Response> {
    let people = match page.host.approvals().passkeys().people().await {
        Ok(people) => people,
        Err(err) => {
            tracing::warn!("{err}");
            return Err(notice(page, StatusCode::SERVICE_UNAVAILABLE, "Try again shortly", "Passkeys cannot be read."));
        }
    };
    let state = page.host.state();
    let who = eligible(approval, people.keys().map(String::as_str).filter(|p| only.is_none_or(|o| o == *p)), |p, g| {
        state.policy().principal_is_in(p, g)
    });
    let allowed: Vec<_> = who
        .iter()
        .filter_map(|p| people.get(*p))
        .flat_map(|person| person.passkeys.iter().map(|c| c.passkey.clone()))
        .collect();
    if allowed.is_empty() {
        let approver = approval.approver.describe(&approval.principal);
        let how = match (only, &page.signin) {
            (Some(_), _) | (None, Some(_)) => {
                format!("add one at {}{PAGE_PATH}/passkeys, signed in", page.base)
            }
            (None, None) => "the operator makes a one-time link that adds one: `airlock approvals enroll NAME`".into(),
        };
        return Err(notice(
            page,
            StatusCode::FORBIDDEN,
            "A passkey is needed",
            &format!(
                "This call needs the approval of {approver}, given with a passkey, and nobody who may approve it has \
                 one yet: {how}. Then open this link again."
            ),
        ));
    }
    let key = page.host.approvals().key();
    let now = now_ms();
    let ask = |approved| rp.ask(key, Purpose::answer(approval, approved), &allowed, now);
    match (ask(true), ask(false)) {
        (Ok(approve), Ok(decline)) => Ok((approve, decline)),
        (Err(err), _) | (_, Err(err)) => {
            tracing::warn!("a passkey challenge could not be made: {err}");
            Err(notice(page, StatusCode::INTERNAL_SERVER_ERROR, "Try again", "The challenge could not be made."))
        }
    }
}

async fn show(
    State(page): State<Arc<Page>>,
    Path(id): Path<String>,
    Query(query): Query<LinkQuery>,
    connected: Option<Extension<ClientConnection>>,
    headers: HeaderMap,
) -> Response {
    let approval = match linked(&page, &id, &query.sig, client(connected.as_ref(), &headers)).await {
        Ok(approval) => approval,
        Err(response) => return response,
    };
    if let Some(response) = settled(&page, &approval) {
        // Seeing an answer given is no attempt; opening a link whose call
        // ran already is a replay.
        if approval.used {
            refused(&page, &approval, None, "the link was opened again after its call ran");
        }
        return response;
    }
    let next = format!("{PAGE_PATH}/{id}?sig={}", query.sig);
    let session = match signed_in(&page, &headers, &next) {
        Ok(session) => session,
        Err(response) => return *response,
    };
    if let Some(session) = &session
        && let Err(response) = allowed(&page, &approval, &session.principal)
    {
        return *response;
    }
    let passkey = match &page.passkeys {
        Some(rp) => match challenges(&page, rp, &approval, session.as_ref().map(|s| s.principal.as_str())).await {
            Ok(pair) => Some(pair),
            Err(response) => return response,
        },
        None => None,
    };
    let csrf = session.as_ref().map(|s| signin::csrf(page.host.approvals().key(), &s.id, &approval.id));
    let minutes_left = approval.expires_ms.saturating_sub(now_ms()).div_ceil(60_000);
    let ask = page::Ask {
        approval: &approval,
        person: session.as_ref().map(|s| s.principal.as_str()),
        sig: &query.sig,
        csrf: csrf.as_deref(),
        passkey: passkey.as_ref().map(|(approve, decline)| (approve, decline)),
        minutes_left,
    };
    html(&page, StatusCode::OK, page::ask(&ask))
}

#[derive(Deserialize)]
struct AnswerForm {
    #[serde(default)]
    sig: String,
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    decision: String,
    /// The passkey challenge, sealed.
    #[serde(default)]
    state: String,
    /// The passkey's assertion (the browser's JSON).
    #[serde(default)]
    credential: String,
}

/// Whether a `POST` comes from this page's own origin: `Origin` (when the
/// browser sends it) is the page's, and `Sec-Fetch-Site` (when sent) says
/// same-origin.
fn same_origin(page: &Page, headers: &HeaderMap) -> bool {
    let origin_ok = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()).is_none_or(|origin| origin == page.base);
    let site_ok = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok()).is_none_or(|site| site == "same-origin");
    origin_ok && site_ok
}

/// A posted form: `application/x-www-form-urlencoded` within
/// [`MAX_FORM_BYTES`] and of the shape `T`; anything else (a `text/plain`
/// body among them) is no answer.
fn form<T: for<'de> Deserialize<'de>>(page: &Page, headers: &HeaderMap, body: &[u8]) -> Result<T, Box<Response>> {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    let media = content_type.split(';').next().unwrap_or_default().trim();
    if !media.eq_ignore_ascii_case("application/x-www-form-urlencoded") {
        return Err(Box::new(notice(
            page,
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Not an answer",
            "An answer is the approval page's form (application/x-www-form-urlencoded), nothing else.",
        )));
    }
    if body.len() > MAX_FORM_BYTES {
        return Err(Box::new(notice(page, StatusCode::PAYLOAD_TOO_LARGE, "Not an answer", "The form is too large.")));
    }
    serde_urlencoded::from_bytes::<T>(body).map_err(|_| {
        Box::new(notice(page, StatusCode::BAD_REQUEST, "Not an answer", "The form sent is not the approval page's."))
    })
}

/// The principal whose passkey answered for `purpose` (checked against
/// the sealed challenge), with the credential's id; the refusal else,
/// audited against `approval`.
async fn passkey_answer(
    page: &Page,
    rp: &RelyingParty,
    approval: &Approval,
    purpose: &Purpose,
    state: &str,
    credential: &str,
) -> Result<(String, String), Box<Response>> {
    let approvals = page.host.approvals();
    let refuse = |person: Option<&str>, why: &str| {
        refused(page, approval, person, why);
        Box::new(notice(page, StatusCode::FORBIDDEN, "Not proven", &format!("No answer was taken: {why}.")))
    };
    let result = match rp.check(approvals.key(), purpose, state, credential, now_ms()) {
        Ok(result) => result,
        Err(why) => return Err(refuse(None, &why.0)),
    };
    let id = credential_id(result.cred_id());
    let people = match approvals.passkeys().people().await {
        Ok(people) => people,
        Err(err) => {
            tracing::warn!("{err}");
            return Err(Box::new(notice(page, StatusCode::SERVICE_UNAVAILABLE, "Try again shortly", "")));
        }
    };
    let Some(owner) = people.iter().find(|(_, p)| p.passkeys.iter().any(|c| c.id == id)).map(|(who, _)| who.clone())
    else {
        return Err(refuse(None, &format!("the passkey {id} is no one's any more (revoked)")));
    };
    if let Err(err) = approvals.passkeys().used(&owner, &result, now_ms()).await {
        tracing::warn!("{err}");
    }
    Ok((owner, id))
}

async fn answer(
    State(page): State<Arc<Page>>,
    Path(id): Path<String>,
    connected: Option<Extension<ClientConnection>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let form: AnswerForm = match form(&page, &headers, &body) {
        Ok(form) => form,
        Err(response) => {
            tracing::warn!(approval = %id.escape_debug(), "a post to the approval page that is not its form was refused");
            return *response;
        }
    };
    let approval = match linked(&page, &id, &form.sig, client(connected.as_ref(), &headers)).await {
        Ok(approval) => approval,
        Err(response) => return response,
    };
    if !same_origin(&page, &headers) {
        refused(&page, &approval, None, "the answer was posted from another site");
        return notice(
            &page,
            StatusCode::FORBIDDEN,
            "Not from this page",
            "An answer is only accepted from Airlock's own approval page.",
        );
    }
    if let Some(response) = settled(&page, &approval) {
        refused(&page, &approval, None, "an answer was posted for an approval answered already");
        return response;
    }
    let approved = match form.decision.as_str() {
        "approve" => true,
        "decline" => false,
        _ => return notice(&page, StatusCode::BAD_REQUEST, "Not an answer", "Choose Approve or Decline."),
    };
    let next = format!("{PAGE_PATH}/{id}?sig={}", form.sig);
    let session = match signed_in(&page, &headers, &next) {
        Ok(session) => session,
        Err(response) => return *response,
    };
    if let Some(session) = &session
        && !signin::csrf_checks(page.host.approvals().key(), &session.id, &approval.id, &form.csrf)
    {
        refused(&page, &approval, Some(&session.principal), "the form token is missing or not this session's");
        return notice(
            &page,
            StatusCode::FORBIDDEN,
            "Not from this page",
            "This answer did not come from the approval page you were shown (its form token does not match). \
             Reload the page and answer there.",
        );
    }
    let (by, proof, credential) = match (&page.passkeys, session) {
        (Some(rp), session) => {
            let purpose = Purpose::answer(&approval, approved);
            let (owner, id) = match passkey_answer(&page, rp, &approval, &purpose, &form.state, &form.credential).await
            {
                Ok(proven) => proven,
                Err(response) => return *response,
            };
            if let Some(session) = &session
                && session.principal != owner
            {
                let why = format!("the passkey is {owner}'s, and {} is signed in", session.principal);
                refused(&page, &approval, Some(&owner), &why);
                return notice(&page, StatusCode::FORBIDDEN, "Not yours to answer", &why);
            }
            let proof = if session.is_some() { Proof::SignInAndPasskey } else { Proof::Passkey };
            (owner, proof, Some(id))
        }
        (None, Some(session)) => (session.principal, Proof::SignIn, None),
        (None, None) => {
            // `Page::new` refuses a page that has neither.
            return notice(&page, StatusCode::FORBIDDEN, "Not proven", "This page cannot tell who you are.");
        }
    };
    if let Err(response) = allowed(&page, &approval, &by) {
        return *response;
    }
    record(&page, &approval, Answer { by, proof, credential, at_ms: now_ms(), approved }).await
}

/// Record an answer and say so.
async fn record(page: &Page, approval: &Approval, answer: Answer) -> Response {
    let approved = answer.approved;
    let by = answer.by.clone();
    let credential = answer.credential.clone().unwrap_or_else(|| "-".to_owned());
    match page.host.approvals().answer(&approval.id, answer).await {
        Ok(Ok(_)) => {
            tracing::info!(approval = %approval.id, tool = %approval.tool, principal = %approval.principal,
                by = %by, credential = %credential, approved, "an approval was answered");
            if approved {
                notice(
                    page,
                    StatusCode::OK,
                    "Approved",
                    &format!(
                        "You approved this call. {} runs once, now if the call is waiting, or when it is made again.",
                        approval.tool
                    ),
                )
            } else {
                notice(page, StatusCode::OK, "Declined", "You declined this call. It will not run.")
            }
        }
        Ok(Err(NotAnswered::Answered(given))) => {
            refused(page, approval, Some(&by), "an answer was posted for an approval answered already");
            let what = if given.approved { "approved" } else { "declined" };
            let text = format!("{} {what} this call already.", given.by);
            notice(page, StatusCode::CONFLICT, &format!("Already {what}"), &text)
        }
        Ok(Err(NotAnswered::Unknown)) => {
            notice(page, StatusCode::NOT_FOUND, "No such approval", "This approval has lapsed.")
        }
        Err(err) => {
            tracing::warn!("{err}");
            notice(page, StatusCode::SERVICE_UNAVAILABLE, "Try again shortly", "The answer could not be recorded.")
        }
    }
}
