//! MCP streamable HTTP: rmcp's service behind axum at `/mcp`, with the
//! checks a local or token-protected server needs in front of it.
//!
//! Trusts nothing in a request. Before rmcp sees it, in this order:
//!
//! 1. `Origin` (DNS rebinding, cross-site browsers): when present it must be
//!    a loopback origin or listed in `[http] allowed_origins`, else 403.
//! 2. `Host` (DNS rebinding): when bound to a loopback address it must name a
//!    loopback host (`localhost`, `127.0.0.0/8`, `[::1]`), else 403.
//! 3. `Authorization`: when `[http] tokens` are configured, a request needs
//!    `Bearer <token>` with a configured token, else 401 with
//!    `WWW-Authenticate: Bearer`. Tokens are compared by SHA-256 digest in
//!    constant time (see `access`). The token decides the principal;
//!    nothing in the body can.
//! 4. `Mcp-Session-Id`: a session is bound to the principal that opened it;
//!    another principal presenting its id gets 404, as for an unknown
//!    session. At most [`MAX_HTTP_SESSIONS`] sessions are kept (503 beyond),
//!    and at most its `[quotas] http_sessions` per principal (429 beyond,
//!    naming the quota), so one principal cannot take every slot.
//!
//! 5. The body of a `POST` (`application/json`) is read, at most
//!    [`MAX_HTTP_BODY_BYTES`] within [`HTTP_BODY_READ_TIMEOUT`], and must be
//!    one JSON-RPC message (see `jsonrpc`); else it is answered with a
//!    JSON-RPC error, `"id": null` unless the id could be read: `413`
//!    (`-32600`) over the cap, `400` with `-32700` when it is not JSON, `400`
//!    with `-32600` when it is JSON but not a message, `408` when it is too
//!    slow. rmcp gets the bytes unchanged.
//!
//! Nor does it trust a client to use its connection: connections are
//! served here with hyper, not `axum::serve`, so that at most
//! [`MAX_HTTP_CONNECTIONS`] are open, at most
//! [`MAX_HTTP_CONNECTIONS_PER_PEER`] from one address (beyond either, a
//! connection is accepted and closed at once), and each must finish a
//! request's headers within [`HTTP_HEADER_READ_TIMEOUT`] of being ready
//! for one, which also closes idle kept-alive connections. Refusals are
//! logged at debug, with at most one warning a minute counting them.
//!
//! A client dropping the response stream of a call cancels the call. Tokens
//! and allowed origins are read from the host state in force for each
//! request, so a reload that adds a token lets it in and one that removes a
//! token shuts it out from the next request on. A server on a non-loopback
//! address makes the host refuse any reload that would leave no token.

use super::jsonrpc::{self, Rejection};
use super::server::{AirlockServer, Caller, Shared};
use crate::access::{Access, normalize_origin};
use anyhow::Context as _;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures::StreamExt as _;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{SessionManager as _, StreamableHttpServerConfig, StreamableHttpService};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Largest request body accepted, in bytes (a call's arguments are capped
/// at [`MAX_ARGUMENT_BYTES`](crate::MAX_ARGUMENT_BYTES); this leaves room
/// for the envelope).
pub const MAX_HTTP_BODY_BYTES: usize = 4 << 20;
/// Most MCP sessions (`initialize`-based revisions) kept open at once.
pub const MAX_HTTP_SESSIONS: usize = 1024;
/// How long a connection may take to send a request's headers, counted
/// from when it is ready for a request: when it is opened, and on a kept
/// alive connection when the previous response is written. So this is also
/// how long an idle kept-alive connection is kept. Past it the connection is
/// closed (hyper's `header_read_timeout`, which runs in both cases).
pub const HTTP_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a `POST` body may take to arrive once its headers have; past
/// it the request is answered `408` with a JSON-RPC error.
pub const HTTP_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Most bytes of a body over [`MAX_HTTP_BODY_BYTES`] read (and dropped)
/// before the `413`; a body declared larger is refused unread.
const MAX_HTTP_DRAINED_BYTES: usize = 4 * MAX_HTTP_BODY_BYTES;
/// Most connections open at once; more are accepted and closed at once.
pub const MAX_HTTP_CONNECTIONS: usize = 256;
/// Most connections open at once from one IPv4 address or IPv6 /64; more
/// are accepted and closed at once.
pub const MAX_HTTP_CONNECTIONS_PER_PEER: usize = 32;
/// How long shutdown waits for connections to finish their responses.
const HTTP_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How long after the grace the process exits regardless.
const HTTP_SHUTDOWN_HARD_STOP: Duration = Duration::from_secs(1);
/// Pause after a failed `accept` (out of file descriptors, say).
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);
/// At most one warning about refused connections per this interval.
const REFUSAL_LOG_INTERVAL: Duration = Duration::from_secs(60);
/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";

const SESSION_HEADER: &str = "mcp-session-id";
const LAST_EVENT_ID_HEADER: &str = "last-event-id";
/// An event index longer than this is not one rmcp issued.
const MAX_EVENT_INDEX_DIGITS: usize = 19;

/// A principal's `http_sessions` quota, read from the quotas in force.
type SessionQuota = Box<dyn Fn(&str) -> usize + Send + Sync>;
/// The bearer tokens and allowed origins in force.
type CurrentAccess = Box<dyn Fn() -> Arc<Access> + Send + Sync>;

/// The checks in front of rmcp, and the session → principal bindings.
struct Gate {
    access: CurrentAccess,
    loopback: bool,
    default_principal: String,
    sessions: Mutex<HashMap<String, String>>,
    manager: Arc<LocalSessionManager>,
    session_quota: SessionQuota,
}

/// Why a new session was not bound.
#[derive(Debug, PartialEq, Eq)]
enum Unbound {
    /// [`MAX_HTTP_SESSIONS`] sessions are open.
    Full,
    /// The principal holds `open` sessions, at least its `http_sessions`
    /// quota.
    Quota { principal: String, open: usize, quota: usize },
}

impl Unbound {
    fn response(&self) -> Response {
        match self {
            Unbound::Full => {
                tracing::warn!("{MAX_HTTP_SESSIONS} MCP sessions are open; refusing a new one");
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
                    crate::quota::raise_hint(principal, "http_sessions")
                );
                (StatusCode::TOO_MANY_REQUESTS, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], message)
                    .into_response()
            }
        }
    }
}

/// Serve until Ctrl-C or SIGTERM.
pub async fn serve(shared: Arc<Shared>, addr: SocketAddr, principal: String) -> anyhow::Result<()> {
    // From here on the host refuses any reload that would leave this
    // server without tokens.
    if !addr.ip().is_loopback() && shared.host.require_http_tokens(addr).is_err() {
        anyhow::bail!(
            "refusing to serve MCP over HTTP on {addr}: it is not a loopback address and the config has no bearer tokens. \
             Add `[http] tokens = [{{ token_env = \"AIRLOCK_TOKEN\", principal = \"alice\" }}]` to the config, or serve on 127.0.0.1"
        );
    }
    let manager = Arc::new(LocalSessionManager::default());
    let gate = Arc::new(Gate {
        access: {
            let host = shared.host.clone();
            Box::new(move || host.state().access().clone())
        },
        loopback: addr.ip().is_loopback(),
        default_principal: principal.clone(),
        sessions: Mutex::new(HashMap::new()),
        manager: manager.clone(),
        session_quota: {
            let host = shared.host.clone();
            Box::new(move |principal: &str| host.quotas().for_principal(principal).http_sessions)
        },
    });
    let shutdown = CancellationToken::new();
    // Host and Origin are checked by `gate` (rmcp's own lists would refuse
    // a token-protected server's public host name).
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(MAX_HTTP_BODY_BYTES)
        .with_cancellation_token(shutdown.child_token());
    let server = AirlockServer::new(shared, principal);
    let service = StreamableHttpService::new(move || Ok(server.clone()), manager, config);
    let app =
        axum::Router::new().route_service(MCP_PATH, service).layer(axum::middleware::from_fn_with_state(gate, check));
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr().context("cannot read the bound address")?;
    eprintln!("airlock: serving MCP (streamable HTTP) on http://{local}{MCP_PATH}");

    // Connections are served here rather than by `axum::serve`, which sets
    // no header timeout and caps nothing.
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(HTTP_HEADER_READ_TIMEOUT).keep_alive(true);
    let connections = Connections::new();
    let mut refusals = Refusals::default();
    let tasks = TaskTracker::new();
    let interrupted = interrupted();
    tokio::pin!(interrupted);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors, say: wait rather than spin.
                    refusals.note(format_args!("cannot accept a connection: {err}"));
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    continue;
                }
            },
            () = &mut interrupted => break,
        };
        let slot = match connections.admit(peer.ip()) {
            Ok(slot) => slot,
            Err(full) => {
                // Closed at once: the peer learns nothing but that it was
                // refused, and holds nothing here.
                drop(tcp);
                refusals.note(format_args!("refused a connection from {peer}: {full}"));
                continue;
            }
        };
        // Responses go out in several small writes (headers, then
        // event-stream frames): with Nagle's algorithm on, the last one
        // waits for the client's delayed ACK, about 40 ms per call.
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {err}");
        }
        let connection = http.serve_connection(TokioIo::new(tcp), TowerToHyperService::new(app.clone()));
        let stop = shutdown.clone();
        tasks.spawn(async move {
            let _slot = slot;
            tokio::pin!(connection);
            let ended = tokio::select! {
                ended = connection.as_mut() => ended,
                () = stop.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(err) = ended {
                tracing::debug!("HTTP connection from {peer} ended: {err}");
            }
        });
    }
    // A hard stop outside the runtime: shutdown must end within its grace
    // even if something keeps the runtime's workers from running the
    // timer below. Nothing is lost: every result's audit record was
    // written before the result was sent.
    std::thread::spawn(|| {
        std::thread::sleep(HTTP_SHUTDOWN_GRACE + HTTP_SHUTDOWN_HARD_STOP);
        eprintln!("airlock: the HTTP server did not stop within its shutdown grace; exiting");
        std::process::exit(0);
    });
    // Ends rmcp's event streams, then lets every connection finish the
    // response it is writing.
    shutdown.cancel();
    tasks.close();
    if tokio::time::timeout(HTTP_SHUTDOWN_GRACE, tasks.wait()).await.is_err() {
        tracing::info!("{} HTTP connections still open after {HTTP_SHUTDOWN_GRACE:?}; closing them", tasks.len());
    }
    Ok(())
}

/// Resolves on Ctrl-C or, on Unix, SIGTERM.
async fn interrupted() {
    #[cfg(unix)]
    let terminated = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(err) => {
                tracing::debug!("cannot listen for SIGTERM: {err}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminated = std::future::pending::<()>();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminated => {}
    }
}

/// Open connections, in total and per peer.
struct Connections {
    open: Mutex<Open>,
}

#[derive(Default)]
struct Open {
    total: usize,
    per_peer: HashMap<IpAddr, usize>,
}

/// One admitted connection; dropping it frees its place.
struct Slot {
    connections: Arc<Connections>,
    peer: IpAddr,
}

impl Connections {
    fn new() -> Arc<Self> {
        Arc::new(Connections { open: Mutex::new(Open::default()) })
    }

    /// A place for a connection from `ip`, or which cap is reached.
    fn admit(self: &Arc<Self>, ip: IpAddr) -> Result<Slot, String> {
        let peer = peer_key(ip);
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.total >= MAX_HTTP_CONNECTIONS {
            return Err(format!("{MAX_HTTP_CONNECTIONS} connections are open (MAX_HTTP_CONNECTIONS)"));
        }
        let from_peer = open.per_peer.entry(peer).or_default();
        if *from_peer >= MAX_HTTP_CONNECTIONS_PER_PEER {
            return Err(format!(
                "{MAX_HTTP_CONNECTIONS_PER_PEER} connections from this address are open (MAX_HTTP_CONNECTIONS_PER_PEER)"
            ));
        }
        *from_peer += 1;
        open.total += 1;
        Ok(Slot { connections: self.clone(), peer })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut open = self.connections.open.lock().unwrap_or_else(|e| e.into_inner());
        open.total = open.total.saturating_sub(1);
        if let Some(count) = open.per_peer.get_mut(&self.peer) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.per_peer.remove(&self.peer);
            }
        }
    }
}

/// The address a per-peer cap counts: an IPv4 address (also when mapped
/// into IPv6), or an IPv6 /64, the block one host is usually given.
fn peer_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !u128::from(u64::MAX))),
        v4 => v4,
    }
}

/// Refused connections and accept errors: each is logged at debug, and at
/// most one warning per [`REFUSAL_LOG_INTERVAL`] counts them, so that a
/// client cannot flood the log.
#[derive(Default)]
struct Refusals {
    last_warning: Option<tokio::time::Instant>,
    unreported: u64,
}

impl Refusals {
    fn note(&mut self, what: std::fmt::Arguments<'_>) {
        tracing::debug!("{what}");
        self.unreported += 1;
        if self.last_warning.is_none_or(|at| at.elapsed() >= REFUSAL_LOG_INTERVAL) {
            tracing::warn!(
                "{} HTTP connections refused or failed since the last report; the latest: {what}",
                self.unreported
            );
            self.last_warning = Some(tokio::time::Instant::now());
            self.unreported = 0;
        }
    }
}

/// The axum middleware: origin, host, token, session binding, body; then
/// rmcp.
async fn check(State(gate): State<Arc<Gate>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    // One reading of the tokens and origins in force serves the whole request.
    let access = (gate.access)();
    if let Some(origin) = headers.get(header::ORIGIN)
        && !origin_allowed(&access, origin)
    {
        return refuse(StatusCode::FORBIDDEN, "Forbidden: this Origin is not allowed");
    }
    if gate.loopback && !headers.get(header::HOST).and_then(|h| h.to_str().ok()).is_some_and(is_loopback_authority) {
        return refuse(StatusCode::FORBIDDEN, "Forbidden: the Host header must name a loopback host");
    }
    let Some(principal) = gate.authenticate(&access, headers) else {
        let mut response = refuse(StatusCode::UNAUTHORIZED, "Unauthorized: send Authorization: Bearer <token>");
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"airlock\""));
        return response;
    };
    let session = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    if let Some(id) = &session
        && !gate.session_belongs_to(id, &principal)
    {
        return refuse(StatusCode::NOT_FOUND, "Not Found: Session not found");
    }
    let mut request = match read_message(request).await {
        Ok(request) => request,
        Err(refused) => return refused,
    };
    let method = request.method().clone();
    resume_after_last_event(request.headers_mut());
    let disconnected = CancellationToken::new();
    request.extensions_mut().insert(Caller { principal: principal.clone(), disconnected: disconnected.clone() });
    let response = next.run(request).await;

    if session.is_none()
        && let Some(id) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok())
        && let Err(unbound) = gate.bind(id, principal).await
    {
        let _ = gate.manager.close_session(&Arc::from(id)).await;
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
        let stream = body.into_data_stream().map(move |chunk| {
            let _alive = &guard;
            chunk
        });
        return Response::from_parts(parts, Body::from_stream(stream));
    }
    response
}

/// Buffer a `POST`'s JSON body (at most [`MAX_HTTP_BODY_BYTES`], within
/// [`HTTP_BODY_READ_TIMEOUT`]) and check that it is one JSON-RPC message;
/// pass it on unchanged when it is, or answer as JSON-RPC says: `413` for a
/// body over the cap, `400` with `-32700` for one that is not JSON, `400`
/// with `-32600` for JSON that is not a message, `408` for one too slow.
/// Other requests, and bodies not declared `application/json` (rmcp answers
/// those `415` without reading them), pass unread.
async fn read_message(request: Request) -> Result<Request, Response> {
    if request.method() != Method::POST || !declares_json(request.headers()) {
        return Ok(request);
    }
    let too_large =
        || rejected(StatusCode::PAYLOAD_TOO_LARGE, &Rejection::too_large("request body", MAX_HTTP_BODY_BYTES));
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|length| length > MAX_HTTP_DRAINED_BYTES as u64) {
        return Err(too_large());
    }
    let (parts, body) = request.into_parts();
    let mut seen = 0usize;
    let collected = tokio::time::timeout(HTTP_BODY_READ_TIMEOUT, collect(body, &mut seen)).await;
    let bytes = match collected {
        _ if seen > MAX_HTTP_BODY_BYTES => return Err(too_large()),
        Ok(Ok(bytes)) => bytes,
        Ok(Err(err)) => {
            let rejection = Rejection::invalid_request(None, format!("the request body could not be read ({err})"));
            return Err(rejected(StatusCode::BAD_REQUEST, &rejection));
        }
        Err(_) => {
            let rejection = Rejection::invalid_request(
                None,
                format!("the request body did not arrive within {HTTP_BODY_READ_TIMEOUT:?} of its headers"),
            );
            return Err(rejected(StatusCode::REQUEST_TIMEOUT, &rejection));
        }
    };
    if let Err(rejection) = jsonrpc::parse(&bytes) {
        tracing::debug!(code = rejection.code(), "refused an HTTP request body");
        return Err(rejected(StatusCode::BAD_REQUEST, &rejection));
    }
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// The body, if at most [`MAX_HTTP_BODY_BYTES`]; `seen` counts what came.
/// Past the cap the rest is read and dropped, up to
/// [`MAX_HTTP_DRAINED_BYTES`], so that a client still sending can read the
/// `413` (a connection closed with unread data is reset, and the reset can
/// destroy the response before the client reads it).
async fn collect(body: Body, seen: &mut usize) -> Result<Bytes, axum::Error> {
    let mut collected = BytesMut::new();
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        *seen = seen.saturating_add(chunk.len());
        if *seen > MAX_HTTP_DRAINED_BYTES {
            break;
        }
        if *seen <= MAX_HTTP_BODY_BYTES {
            collected.extend_from_slice(&chunk);
        }
    }
    Ok(collected.freeze())
}

/// Whether the request says its body is `application/json` (any
/// parameters, any case), as rmcp requires of a `POST`.
fn declares_json(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|value| {
        value.split_once(';').map_or(value, |(essence, _)| essence).trim().eq_ignore_ascii_case("application/json")
    })
}

/// A JSON-RPC error response with an HTTP status.
fn rejected(status: StatusCode, rejection: &Rejection) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], rejection.to_json().to_string()).into_response()
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

fn refuse(status: StatusCode, message: &'static str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], message).into_response()
}

impl Gate {
    /// The principal of a request under `access`, or `None` when it must
    /// be refused.
    fn authenticate(&self, access: &Access, headers: &HeaderMap) -> Option<String> {
        if !access.has_tokens() {
            return Some(self.default_principal.clone());
        }
        let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
        let (scheme, token) = value.trim().split_once(' ')?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return None;
        }
        access.principal_of(token.trim())
    }

    /// Whether `principal` may use session `id`. Unknown ids are refused:
    /// every session is opened through this gate.
    fn session_belongs_to(&self, id: &str, principal: &str) -> bool {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner()).get(id).is_some_and(|owner| owner == principal)
    }

    /// Bind a new session to `principal`, unless the principal is at its
    /// `http_sessions` quota or [`MAX_HTTP_SESSIONS`] are open.
    async fn bind(&self, id: &str, principal: String) -> Result<(), Unbound> {
        let quota = (self.session_quota)(&principal);
        let (full, at_quota) = {
            let sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
            (sessions.len() >= MAX_HTTP_SESSIONS, open_of(&sessions, &principal) >= quota)
        };
        if full || at_quota {
            // Forget sessions rmcp has closed (idle timeout, DELETE, errors):
            // every one when the table is full, else the principal's own.
            let ids: Vec<String> = self
                .sessions
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .filter(|(_, owner)| full || **owner == principal)
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
        if sessions.len() >= MAX_HTTP_SESSIONS {
            return Err(Unbound::Full);
        }
        sessions.insert(id.to_owned(), principal);
        Ok(())
    }
}

/// Sessions bound to `principal`.
fn open_of(sessions: &HashMap<String, String>, principal: &str) -> usize {
    sessions.values().filter(|owner| *owner == principal).count()
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
            .map(|(t, p)| crate::config::BearerToken { token: (*t).into(), principal: (*p).into(), file: None })
            .collect();
        let allowed_origins = origins.iter().map(|o| (*o).to_owned()).collect();
        Arc::new(Access::new(&crate::config::HttpSettings { tokens, allowed_origins }))
    }

    fn gate(tokens: &[(&str, &str)], origins: &[&str]) -> Gate {
        let access = access(tokens, origins);
        Gate {
            access: Box::new(move || access.clone()),
            loopback: true,
            default_principal: "local".into(),
            sessions: Mutex::new(HashMap::new()),
            manager: Arc::new(LocalSessionManager::default()),
            session_quota: Box::new(|principal: &str| if principal == "small" { 1 } else { 3 }),
        }
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
        assert_eq!(gate.bind("s1", "alice".into()).await, Ok(()));
        assert!(gate.session_belongs_to("s1", "alice"));
        assert!(!gate.session_belongs_to("s1", "bob"));
        assert!(!gate.session_belongs_to("s2", "alice"), "unknown sessions are refused");
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
        assert_eq!(gate.bind(&ids[0], "small".into()).await, Ok(()));
        let refused = gate.bind(&ids[1], "small".into()).await;
        assert_eq!(refused, Err(Unbound::Quota { principal: "small".into(), open: 1, quota: 1 }));
        assert_eq!(gate.bind(&ids[1], "bob".into()).await, Ok(()), "another principal is not affected");
        // A session rmcp has closed no longer counts against the quota.
        gate.manager.close_session(&Arc::from(ids[0].as_str())).await.expect("close");
        assert_eq!(gate.bind(&ids[2], "small".into()).await, Ok(()));
        assert!(!gate.session_belongs_to(&ids[0], "small"), "the closed session is forgotten");
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
        assert_eq!(Unbound::Full.response().status(), StatusCode::SERVICE_UNAVAILABLE);
    }

    fn post(content_type: &str, body: Body) -> Request {
        Request::builder()
            .method(Method::POST)
            .uri(MCP_PATH)
            .header(header::CONTENT_TYPE, content_type)
            .body(body)
            .unwrap()
    }

    async fn refused(request: Request) -> (StatusCode, serde_json::Value) {
        let response = read_message(request).await.expect_err("refused");
        let status = response.status();
        assert_eq!(response.headers().get(header::CONTENT_TYPE).unwrap(), "application/json");
        let body = axum::body::to_bytes(response.into_body(), 1 << 16).await.unwrap();
        (status, serde_json::from_slice(&body).unwrap())
    }

    #[tokio::test]
    async fn post_bodies_must_be_one_json_rpc_message() {
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let passed = read_message(post("application/json", Body::from(&ping[..]))).await.expect("a ping passes");
        let body = axum::body::to_bytes(passed.into_body(), 1 << 16).await.unwrap();
        assert_eq!(&body[..], &ping[..], "rmcp gets the bytes unchanged");

        let (status, error) = refused(post("application/json; charset=utf-8", Body::from("nope"))).await;
        assert_eq!(
            (status, error["error"]["code"].as_i64(), error["id"].is_null()),
            (StatusCode::BAD_REQUEST, Some(-32700), true)
        );
        let (status, error) = refused(post("application/json", Body::from(r#"{"id":5}"#))).await;
        assert_eq!(
            (status, error["error"]["code"].as_i64(), error["id"].as_i64()),
            (StatusCode::BAD_REQUEST, Some(-32600), Some(5))
        );

        // Streamed past the cap with no declared length.
        let chunks = (0..5).map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![b' '; 1 << 20])));
        let (status, error) = refused(post("application/json", Body::from_stream(futures::stream::iter(chunks)))).await;
        assert_eq!((status, error["error"]["code"].as_i64()), (StatusCode::PAYLOAD_TOO_LARGE, Some(-32600)));

        // Not declared JSON: left to rmcp (415), unread.
        assert!(read_message(post("text/plain", Body::from("nope"))).await.is_ok());
    }

    #[test]
    fn peers_are_addresses_or_ipv6_blocks() {
        let v4: IpAddr = "10.1.2.3".parse().unwrap();
        assert_eq!(peer_key("::ffff:10.1.2.3".parse().unwrap()), v4);
        assert_eq!(peer_key("2001:db8::1".parse().unwrap()), peer_key("2001:db8::ffff:1".parse().unwrap()));
        assert_ne!(peer_key("2001:db8::1".parse().unwrap()), peer_key("2001:db8:0:1::1".parse().unwrap()));
    }

    #[test]
    fn connections_are_capped_in_total_and_per_peer() {
        let connections = Connections::new();
        let peer: IpAddr = "10.0.0.1".parse().unwrap();
        let mut slots: Vec<Slot> =
            (0..MAX_HTTP_CONNECTIONS_PER_PEER).map(|_| connections.admit(peer).unwrap()).collect();
        assert!(connections.admit(peer).err().is_some_and(|e| e.contains("MAX_HTTP_CONNECTIONS_PER_PEER")));
        slots.pop();
        slots.push(connections.admit(peer).expect("a freed place is reused"));
        let mut others = 0u32;
        while slots.len() < MAX_HTTP_CONNECTIONS {
            others += 1;
            let other = IpAddr::from(std::net::Ipv4Addr::from(0x0b00_0000 + others / 8));
            if let Ok(slot) = connections.admit(other) {
                slots.push(slot);
            }
        }
        assert!(
            connections.admit("192.0.2.1".parse().unwrap()).err().is_some_and(|e| e.contains("MAX_HTTP_CONNECTIONS"))
        );
        drop(slots);
        let open = connections.open.lock().unwrap();
        assert_eq!((open.total, open.per_peer.len()), (0, 0), "every place is freed");
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
