//! The request gate: the axum middleware in front of rmcp that checks a
//! request's `Origin`, `Host`, bearer token and `Mcp-Session-Id`, reads its
//! body (see `body`), and binds new sessions to their principal.
//!
//! Trusts nothing in a request: the token alone decides the principal, and
//! a session is usable only by the principal that opened it, authenticated
//! the same way: a JWT principal's session is not a static token's of the
//! same name unless `[http.jwt] shared_principals` makes them one (a reload
//! may add a static token named as a JWT user). See the parent module for
//! the order of the checks and what each refusal is.

use super::super::server::Caller;
use super::MCP_PATH;
use super::body::read_message;
use super::connections::ClientConnection;
use super::jwt::Verifier;
use super::priming;
use super::probes::METRICS_PATH;
use airlock_core::caller::TokenAttributes;
use airlock_pipeline::transport::access::{Access, normalize_origin};
use airlock_pipeline::transport::metrics::Metrics;
use airlock_settings::http::HttpCaps;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt as _;
use rmcp::transport::streamable_http_server::SessionManager as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

const SESSION_HEADER: &str = "mcp-session-id";
/// How long the start of a POST's event stream is held back at most, so
/// that a call answered within it reaches the client in one write (see
/// [`held_back`]). Short beside any call a person waits for; the first
/// event of a longer call (its progress, a confirmation) comes this much
/// later.
const COALESCE: std::time::Duration = std::time::Duration::from_millis(5);
const LAST_EVENT_ID_HEADER: &str = "last-event-id";
/// An event index longer than this is not one rmcp issued.
const MAX_EVENT_INDEX_DIGITS: usize = 19;

/// A principal's `http_sessions` quota, read from the quotas in force.
pub(super) type SessionQuota = Box<dyn Fn(&str) -> usize + Send + Sync>;
/// The bearer tokens and allowed origins in force.
pub(super) type CurrentAccess = Box<dyn Fn() -> Arc<Access> + Send + Sync>;

/// The checks in front of rmcp, and the session → principal bindings.
pub(super) struct Gate {
    pub(super) access: CurrentAccess,
    /// JWT access tokens, accepted besides the static tokens (see `jwt`).
    pub(super) jwt: Option<Arc<Verifier>>,
    pub(super) loopback: bool,
    pub(super) default_principal: String,
    pub(super) sessions: Mutex<HashMap<String, Owner>>,
    pub(super) manager: Arc<LocalSessionManager>,
    pub(super) session_quota: SessionQuota,
    /// Counts `http_sessions` refusals.
    pub(super) metrics: Arc<Metrics>,
    /// `POST`s whose responses are not written yet (shutdown waits for
    /// them).
    pub(super) posts: Arc<AtomicUsize>,
    /// The body and session caps (`[http]`).
    pub(super) caps: HttpCaps,
    /// The principals that may read `/metrics` (`[metrics] readers`).
    pub(super) metrics_readers: Vec<String>,
}

/// Who opened a session: its principal, and whether an access token (a
/// JWT, in a namespace of its own) named it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Owner {
    principal: String,
    by_jwt: bool,
}

/// One `POST` in flight until dropped (with the response body, for a
/// streamed response).
struct Post(Arc<AtomicUsize>);

impl Post {
    fn new(posts: &Arc<AtomicUsize>) -> Self {
        posts.fetch_add(1, Ordering::SeqCst);
        Post(posts.clone())
    }
}

impl Drop for Post {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Why a new session was not bound.
#[derive(Debug, PartialEq, Eq)]
enum Unbound {
    /// `[http] max_sessions` sessions are open (that many).
    Full(usize),
    /// The principal holds `open` sessions, at least its `http_sessions`
    /// quota.
    Quota { principal: String, open: usize, quota: usize },
}

impl Unbound {
    fn response(&self) -> Response {
        match self {
            Unbound::Full(max) => {
                airlock_pipeline::transport::client_log::refused(
                    "HTTP 503",
                    &format!("{max} MCP sessions are open, the cap ([http] max_sessions)"),
                );
                refuse(StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable: too many sessions; close one and retry")
            }
            Unbound::Quota { principal, open, quota } => {
                tracing::info!(
                    principal = %principal,
                    open,
                    "a principal is at its http_sessions quota; refusing a new session"
                );
                let message = format!(
                    "Too Many Requests: principal {principal:?} already has {open} open MCP sessions, its quota \
                     (http_sessions = {quota}); close one (DELETE {MCP_PATH} with its Mcp-Session-Id) and retry. This \
                     quota is per principal; {}\n",
                    airlock_pipeline::transport::quota::raise_hint(principal, "http_sessions")
                );
                (StatusCode::TOO_MANY_REQUESTS, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], message)
                    .into_response()
            }
        }
    }
}

/// The axum middleware: origin, host, token, session binding, body; then
/// rmcp.
pub(super) async fn check(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    // Counted from the start (a JWT check may wait for the issuer's keys):
    // shutdown waits for every POST it has begun to answer.
    let post = (request.method() == Method::POST && request.uri().path() == MCP_PATH).then(|| Post::new(&gate.posts));
    let headers = request.headers();
    // One reading of the tokens and origins in force serves the whole request.
    let access = (gate.access)();
    if let Some(origin) = headers.get(header::ORIGIN)
        && !origin_allowed(&access, origin)
    {
        airlock_pipeline::transport::client_log::refused("HTTP 403", "an Origin that is not allowed");
        return refuse(StatusCode::FORBIDDEN, "Forbidden: this Origin is not allowed");
    }
    if gate.loopback && !headers.get(header::HOST).and_then(|h| h.to_str().ok()).is_some_and(is_loopback_authority) {
        airlock_pipeline::transport::client_log::refused(
            "HTTP 403",
            "a Host header that does not name a loopback host",
        );
        return refuse(StatusCode::FORBIDDEN, "Forbidden: the Host header must name a loopback host");
    }
    let (owner, attributes) = match (gate.authenticate(&access, headers), &gate.jwt) {
        (Some(principal), _) => (Owner { principal, by_jwt: false }, TokenAttributes::default()),
        (None, Some(jwt)) => match jwt.authenticate(headers, &access).await {
            Ok((principal, attributes)) => (Owner { principal, by_jwt: !jwt.shares_principals() }, attributes),
            Err(rejection) => {
                // An invalid token was logged (capped) by the verifier.
                if matches!(rejection, super::jwt::Rejection::Missing) {
                    airlock_pipeline::transport::client_log::refused("HTTP 401", "no bearer token");
                }
                return jwt.unauthorized(&rejection);
            }
        },
        (None, None) => {
            airlock_pipeline::transport::client_log::refused("HTTP 401", "no valid bearer token");
            return unauthorized();
        }
    };
    let principal = owner.principal.clone();
    // The connection leaves the unauthenticated pool, or, past the caps of
    // authenticated connections, this request is refused and it is closed.
    if let Some(connection) = request.extensions().get::<ClientConnection>()
        && let Err(full) = connection.authenticated(headers)
    {
        airlock_pipeline::transport::client_log::refused("HTTP 503", &full);
        return connections_full();
    }
    // `/metrics` names principals and tools: when clients authenticate,
    // only the principals `[metrics] readers` lists may read it (any end
    // user with a valid JWT would otherwise see the others).
    if request.uri().path() == METRICS_PATH
        && (access.has_tokens() || gate.jwt.is_some())
        && !gate.metrics_readers.contains(&principal)
    {
        airlock_pipeline::transport::client_log::refused(
            "HTTP 403",
            "a principal not in [metrics] readers asked for /metrics",
        );
        return refuse(
            StatusCode::FORBIDDEN,
            "Forbidden: this principal may not read /metrics; the operator lists the scrapers' principals in \
             [metrics] readers",
        );
    }
    // Everything else behind the gate needs only the checks above.
    if request.uri().path() != MCP_PATH {
        return next.run(request).await;
    }
    let session = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    if let Some(id) = &session
        && !gate.session_belongs_to(id, &owner)
    {
        return refuse(StatusCode::NOT_FOUND, "Not Found: Session not found");
    }
    let mut request = match read_message(request, &gate.caps).await {
        Ok(request) => request,
        Err(refused) => return refused,
    };
    let method = request.method().clone();
    let understands_priming = priming::understood(request.headers(), request.extensions().get::<priming::Initialize>());
    resume_after_last_event(request.headers_mut());
    let disconnected = CancellationToken::new();
    request.extensions_mut().insert(Caller {
        principal: principal.clone(),
        attributes,
        disconnected: disconnected.clone(),
    });
    let response = next.run(request).await;

    if session.is_none()
        && let Some(id) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok())
        && let Err(unbound) = gate.bind(id, owner).await
    {
        let _ = gate.manager.close_session(&Arc::from(id)).await;
        if let Unbound::Quota { principal, .. } = &unbound {
            gate.metrics.quota_refused(principal, "http_sessions");
        }
        return unbound.response();
    }
    if method == Method::DELETE
        && response.status().is_success()
        && let Some(id) = &session
    {
        gate.sessions.lock().unwrap_or_else(|e| e.into_inner()).remove(id);
        // rmcp answers 202; the session is gone once it returns, and clients
        // (the Python SDK) log "Session termination failed" for anything but
        // 200 or 204.
        let mut response = response;
        *response.status_mut() = StatusCode::OK;
        return response;
    }
    let streamed = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    if method == Method::POST && streamed {
        // A POST's event stream carries the call's result: the client
        // dropping it cancels the call (a resumed stream would see a
        // cancelled result, which is what an abandoned call should get).
        let (parts, body) = response.into_parts();
        let guard = disconnected.drop_guard();
        let (held, rest) = held_back(priming::for_client(body.into_data_stream(), understands_priming)).await;
        let stream = futures::stream::iter(held).chain(rest).map(move |chunk| {
            let _alive = (&guard, &post);
            chunk
        });
        return Response::from_parts(parts, Body::from_stream(stream));
    }
    if streamed && !understands_priming {
        // A `GET` stream of a client that predates priming events.
        let (parts, body) = response.into_parts();
        return Response::from_parts(parts, Body::from_stream(priming::for_client(body.into_data_stream(), false)));
    }
    response
}

/// The events of a POST's stream that arrive within [`COALESCE`] of its
/// start, and the rest of the stream (none once it has ended). rmcp opens
/// the stream with a priming event (the id a reconnecting client resumes
/// from) before the call has run; sent at once, it costs a write of its
/// own and wakes the client for nothing. Held back, a call that answers
/// within the window goes out with its headers in one write; a longer one
/// gets its headers and the priming event when the window closes.
async fn held_back<S>(mut stream: S) -> (Vec<S::Item>, impl futures::Stream<Item = S::Item>)
where
    S: futures::Stream + Unpin,
{
    let until = tokio::time::Instant::now() + COALESCE;
    let mut held = Vec::new();
    loop {
        match tokio::time::timeout_at(until, stream.next()).await {
            Ok(Some(event)) => held.push(event),
            // Ended: it is not polled again.
            Ok(None) => return (held, futures::future::Either::Left(futures::stream::empty())),
            Err(_) => return (held, futures::future::Either::Right(stream)),
        }
    }
}

/// Make rmcp's stream resumption start after the client's `Last-Event-ID`.
///
/// The SSE standard has a reconnecting client send the id of the last event
/// it received; the server sends what came after it. rmcp 3.11's in-memory
/// replay starts *at* that event, so the last message before a disconnect
/// is delivered twice: an `elicitation/create` asks the user a second time.
/// rmcp's ids are `INDEX` or `INDEX/STREAM`; the index is moved one on, and
/// an id of any other form is left for rmcp to refuse. (This applies to
/// rmcp's in-memory cache, the only one used here: an `EventStore` replays
/// through its own `replay_events_after`.)
fn resume_after_last_event(headers: &mut HeaderMap) {
    let Some(next) = headers.get(LAST_EVENT_ID_HEADER).and_then(|v| v.to_str().ok()).and_then(next_event_id) else {
        return;
    };
    if let Ok(value) = HeaderValue::from_str(&next) {
        headers.insert(LAST_EVENT_ID_HEADER, value);
    }
}

/// `INDEX[/STREAM]` with the index one higher, or `None` for another form.
fn next_event_id(id: &str) -> Option<String> {
    let (index, stream) = match id.split_once('/') {
        Some((index, stream)) => (index, Some(stream)),
        None => (id, None),
    };
    if index.is_empty() || index.len() > MAX_EVENT_INDEX_DIGITS || !index.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let next = index.parse::<u64>().ok()?.checked_add(1)?;
    Some(match stream {
        Some(stream) => format!("{next}/{stream}"),
        None => next.to_string(),
    })
}

/// The `401` when only static tokens are configured.
fn unauthorized() -> Response {
    let mut response = refuse(StatusCode::UNAUTHORIZED, "Unauthorized: send Authorization: Bearer <token>");
    response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"airlock\""));
    response
}

/// The `503` when the caps of authenticated connections are reached: the
/// client may retry in a second, on a new connection (this one closes).
fn connections_full() -> Response {
    let mut response = refuse(
        StatusCode::SERVICE_UNAVAILABLE,
        "Service Unavailable: too many connections are open; retry on a new connection",
    );
    let headers = response.headers_mut();
    headers.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

fn refuse(status: StatusCode, message: &'static str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], message).into_response()
}

impl Gate {
    /// The principal of a request's static token under `access`, or
    /// `None` when it has none (then a JWT, when configured, is tried).
    fn authenticate(&self, access: &Access, headers: &HeaderMap) -> Option<String> {
        if !access.has_tokens() && self.jwt.is_none() {
            return Some(self.default_principal.clone());
        }
        let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
        let (scheme, token) = value.trim().split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        access.principal_of(token.trim())
    }

    /// Whether `owner` may use session `id`. Unknown ids are refused:
    /// every session is opened through this gate.
    fn session_belongs_to(&self, id: &str, owner: &Owner) -> bool {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner()).get(id).is_some_and(|opener| opener == owner)
    }

    /// Bind a new session to `owner`, unless its principal is at its
    /// `http_sessions` quota or `[http] max_sessions` are open.
    async fn bind(&self, id: &str, owner: Owner) -> Result<(), Unbound> {
        let principal = owner.principal.clone();
        let quota = (self.session_quota)(&principal);
        let (full, at_quota) = {
            let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
            (sessions.len() >= self.caps.max_sessions, open_of(&sessions, &principal) >= quota)
        };
        if full || at_quota {
            // Forget sessions rmcp has closed (idle timeout, DELETE, errors):
            // every one when the table is full, else the principal's own.
            let ids: Vec<String> = self
                .sessions
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .filter(|(_, opener)| full || opener.principal == principal)
                .map(|(id, _)| id.clone())
                .collect();
            for old in ids {
                if !self.manager.has_session(&Arc::from(old.as_str())).await.unwrap_or(false) {
                    self.sessions.lock().unwrap_or_else(|e| e.into_inner()).remove(&old);
                }
            }
        }
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        let open = open_of(&sessions, &principal);
        if open >= quota {
            return Err(Unbound::Quota { principal, open, quota });
        }
        if sessions.len() >= self.caps.max_sessions {
            return Err(Unbound::Full(self.caps.max_sessions));
        }
        sessions.insert(id.to_owned(), owner);
        Ok(())
    }
}

/// Sessions bound to `principal` (the quota is the principal's, however
/// it authenticated).
fn open_of(sessions: &HashMap<String, Owner>, principal: &str) -> usize {
    sessions.values().filter(|owner| owner.principal == principal).count()
}

/// Whether a request's `Origin` is a loopback origin or one `access` lists.
fn origin_allowed(access: &Access, origin: &HeaderValue) -> bool {
    let Ok(origin) = origin.to_str() else { return false };
    let origin = normalize_origin(origin);
    if access.origin_listed(&origin) {
        return true;
    }
    match origin.split_once("://") {
        Some(("http" | "https", authority)) => is_loopback_authority(authority),
        _ => false,
    }
}

/// Whether `host[:port]` names a loopback host: `localhost`, an address in
/// `127.0.0.0/8`, or `[::1]`.
fn is_loopback_authority(authority: &str) -> bool {
    let authority = authority.trim();
    let host = if let Some(rest) = authority.strip_prefix('[') {
        match rest.split_once(']') {
            Some((ip, port)) if port.is_empty() || is_port(port.strip_prefix(':').unwrap_or("x")) => ip,
            _ => return false,
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) if is_port(port) => host,
            Some(_) => return false,
            None => authority,
        }
    };
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn is_port(text: &str) -> bool {
    !text.is_empty() && text.len() <= 5 && text.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(tokens: &[(&str, &str)], origins: &[&str]) -> Arc<Access> {
        let tokens = tokens
            .iter()
            .map(|(t, p)| airlock_pipeline::BearerToken { token: (*t).into(), principal: (*p).into(), file: None })
            .collect();
        let allowed_origins = origins.iter().map(|o| (*o).to_owned()).collect();
        Arc::new(Access::new(&airlock_pipeline::HttpSettings {
            tokens,
            allowed_origins,
            ..airlock_pipeline::HttpSettings::default()
        }))
    }

    fn gate(tokens: &[(&str, &str)], origins: &[&str]) -> Gate {
        let access = access(tokens, origins);
        Gate {
            access: Box::new(move || access.clone()),
            jwt: None,
            loopback: true,
            default_principal: "local".into(),
            sessions: Mutex::new(HashMap::new()),
            manager: Arc::new(LocalSessionManager::default()),
            session_quota: Box::new(|principal: &str| if principal == "small" { 1 } else { 3 }),
            metrics: Arc::new(Metrics::new(10)),
            posts: Arc::new(AtomicUsize::new(0)),
            caps: HttpCaps { max_sessions: 4, ..HttpCaps::default() },
            metrics_readers: Vec::new(),
        }
    }

    fn by_token(principal: &str) -> Owner {
        Owner { principal: principal.into(), by_jwt: false }
    }

    fn by_jwt(principal: &str) -> Owner {
        Owner { principal: principal.into(), by_jwt: true }
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(name.clone(), HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn loopback_authorities() {
        for ok in ["localhost", "LOCALHOST:8080", "127.0.0.1", "127.1.2.3:1", "[::1]", "[::1]:8080"] {
            assert!(is_loopback_authority(ok), "{ok}");
        }
        for bad in [
            "example.com",
            "localhost.evil.com",
            "127.0.0.1.nip.io",
            "10.0.0.1:80",
            "[::2]",
            "[::1]x",
            "localhost:http",
            "",
            "0.0.0.0",
        ] {
            assert!(!is_loopback_authority(bad), "{bad}");
        }
    }

    #[test]
    fn origins() {
        let access = access(&[], &["https://app.example.com/"]);
        let allowed = |o: &str| origin_allowed(&access, &HeaderValue::from_str(o).unwrap());
        assert!(allowed("http://localhost:3000"));
        assert!(allowed("http://127.0.0.1"));
        assert!(allowed("https://APP.example.com"));
        assert!(!allowed("https://evil.example.com"));
        assert!(!allowed("null"));
        assert!(!allowed("file://localhost"));
    }

    #[test]
    fn tokens_map_to_principals() {
        let gate = gate(&[("0123456789abcdef-alice", "alice"), ("0123456789abcdef-bob", "bob")], &[]);
        let access = (gate.access)();
        let auth = |v: &str| gate.authenticate(&access, &headers(&[(header::AUTHORIZATION, v)]));
        assert_eq!(auth("Bearer 0123456789abcdef-alice").as_deref(), Some("alice"));
        assert_eq!(auth("bearer 0123456789abcdef-bob").as_deref(), Some("bob"));
        assert_eq!(auth("Bearer 0123456789abcdef-carol"), None);
        assert_eq!(auth("Basic 0123456789abcdef-alice"), None);
        assert_eq!(auth("0123456789abcdef-alice"), None);
        assert_eq!(gate.authenticate(&access, &HeaderMap::new()), None);
    }

    #[test]
    fn no_tokens_means_the_default_principal() {
        let gate = gate(&[], &[]);
        assert_eq!(gate.authenticate(&(gate.access)(), &HeaderMap::new()).as_deref(), Some("local"));
    }

    #[tokio::test]
    async fn sessions_are_bound_to_their_principal() {
        let gate = gate(&[], &[]);
        assert_eq!(gate.bind("s1", by_token("alice")).await, Ok(()));
        assert!(gate.session_belongs_to("s1", &by_token("alice")));
        assert!(!gate.session_belongs_to("s1", &by_token("bob")));
        assert!(!gate.session_belongs_to("s2", &by_token("alice")), "unknown sessions are refused");
    }

    #[tokio::test]
    async fn a_jwt_principals_session_is_not_a_static_tokens_of_the_same_name() {
        let gate = gate(&[], &[]);
        assert_eq!(gate.bind("s1", by_jwt("alice")).await, Ok(()));
        assert!(gate.session_belongs_to("s1", &by_jwt("alice")));
        assert!(!gate.session_belongs_to("s1", &by_token("alice")), "another namespace, another principal");
        assert_eq!(gate.bind("s2", by_token("alice")).await, Ok(()));
        assert!(!gate.session_belongs_to("s2", &by_jwt("alice")));
    }

    #[tokio::test]
    async fn a_principal_at_its_quota_is_refused_and_others_are_not() {
        let gate = gate(&[], &[]);
        // Sessions rmcp keeps open (the workers keep them alive).
        let mut workers = Vec::new();
        let mut ids = Vec::new();
        for _ in 0..3 {
            let (id, worker) = gate.manager.create_session().await.expect("session");
            ids.push(id.to_string());
            workers.push(worker);
        }
        assert_eq!(gate.bind(&ids[0], by_token("small")).await, Ok(()));
        let refused = gate.bind(&ids[1], by_token("small")).await;
        assert_eq!(refused, Err(Unbound::Quota { principal: "small".into(), open: 1, quota: 1 }));
        assert_eq!(gate.bind(&ids[1], by_token("bob")).await, Ok(()), "another principal is not affected");
        // A session rmcp has closed no longer counts against the quota.
        gate.manager.close_session(&Arc::from(ids[0].as_str())).await.expect("close");
        assert_eq!(gate.bind(&ids[2], by_token("small")).await, Ok(()));
        assert!(!gate.session_belongs_to(&ids[0], &by_token("small")), "the closed session is forgotten");
        drop(workers);
    }

    #[tokio::test]
    async fn the_quota_refusal_names_the_quota() {
        let response = Unbound::Quota { principal: "alice".into(), open: 2, quota: 2 }.response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        let body = axum::body::to_bytes(response.into_body(), 4096).await.expect("body");
        let text = String::from_utf8_lossy(&body);
        for needle in ["\"alice\" already has 2 open MCP sessions", "http_sessions = 2", "[quotas.principals.alice]"] {
            assert!(text.contains(needle), "{text:?} should contain {needle:?}");
        }
        assert_eq!(Unbound::Full(4).response().status(), StatusCode::SERVICE_UNAVAILABLE);
    }

    #[tokio::test]
    async fn sessions_are_capped_at_the_configured_count() {
        // The gate's `[http] max_sessions` is 4; each principal's quota 3.
        let gate = gate(&[], &[]);
        let mut workers = Vec::new();
        let mut ids = Vec::new();
        for _ in 0..5 {
            let (id, worker) = gate.manager.create_session().await.expect("session");
            ids.push(id.to_string());
            workers.push(worker);
        }
        for (id, principal) in ids.iter().zip(["alice", "alice", "bob", "carol"]) {
            assert_eq!(gate.bind(id, by_token(principal)).await, Ok(()), "at most max_sessions are bound");
        }
        assert_eq!(gate.bind(&ids[4], by_token("dave")).await, Err(Unbound::Full(4)), "one more is refused");
        // A closed session frees its place.
        gate.manager.close_session(&Arc::from(ids[0].as_str())).await.expect("close");
        assert_eq!(gate.bind(&ids[4], by_token("dave")).await, Ok(()));
        drop(workers);
    }

    #[test]
    fn resumption_starts_after_the_last_event_received() {
        assert_eq!(next_event_id("3/0").as_deref(), Some("4/0"));
        assert_eq!(next_event_id("0").as_deref(), Some("1"));
        for other in ["", "x/0", "-1/2", "1e3", "99999999999999999999/1", "18446744073709551615"] {
            assert_eq!(next_event_id(other), None, "{other}");
        }
    }
}
