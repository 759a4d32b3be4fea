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
//!    session. At most `[http] max_sessions` sessions are kept (503 beyond),
//!    and at most its `[quotas] http_sessions` per principal (429 beyond,
//!    naming the quota), so one principal cannot take every slot.
//!
//! 5. The body of a `POST` (`application/json`) is read, at most
//!    `[http] max_body_bytes` within `body_timeout_secs`, and must be
//!    one JSON-RPC message (see `jsonrpc`); else it is answered with a
//!    JSON-RPC error, `"id": null` unless the id could be read: `413`
//!    (`-32600`) over the cap, `400` with `-32700` when it is not JSON, `400`
//!    with `-32600` when it is JSON but not a message, `408` when it is too
//!    slow. rmcp gets the bytes unchanged.
//!
//! Nor does it trust a client to use its connection: connections are
//! served here with hyper, not `axum::serve`. A new connection enters a
//! pool of its own, `[http] max_unauthenticated_connections` (the oldest
//! closed to make room for a new one), and is closed unless a request on it
//! passes checks 1–3 within `unauthenticated_timeout_secs`; then it counts
//! against `max_connections` and `max_connections_per_peer` of its
//! client's address (`503` with `Retry-After` past either), so clients
//! without a token cannot take the places of clients with one. Each
//! connection must finish a request's headers within `header_timeout_secs`
//! of being ready for one, which also closes idle kept-alive connections.
//! The client's address is the peer's unless the peer is listed in `[http]
//! trusted_proxies`: then its PROXY protocol header and `X-Forwarded-For`
//! give it. Refusals are logged at debug, with at most one warning a minute
//! counting them. These caps ([`HttpCaps`]) are read when the server
//! starts; a reload does not change them.
//!
//! A client dropping the response stream of a call cancels the call. Tokens
//! and allowed origins are read from the host state in force for each
//! request, so a reload that adds a token lets it in and one that removes a
//! token shuts it out from the next request on. A server on a non-loopback
//! address makes the host refuse any reload that would leave no token.
//!
//! `/healthz` and `/readyz` are public and `/metrics` passes checks 1–3
//! (see `probes`); they are also served on `[metrics] listen` when the
//! operator gives a separate address.
//!
//! On SIGTERM or Ctrl-C the listener is closed, idle connections are
//! closed, `/readyz` turns 503, and calls in flight get `[serve]
//! shutdown_grace_secs` to finish (see `super::shutdown`); then the event
//! streams end and the process exits 0.
//!
//! Checks 1–4 and the session bindings are in `gate`, check 5 in `body`,
//! the connections and their pools in `connections`, client addresses
//! behind proxies in `proxy`, the probes and metrics in `probes`.

mod approvals;
mod body;
mod connections;
mod gate;
mod jwt;
mod priming;
mod probes;
mod proxy;

pub use probes::{HEALTHZ_PATH, METRICS_PATH, READYZ_PATH};

use super::server::{AirlockServer, Shared};
use super::shutdown;
use airlock_pipeline::Host;
use airlock_settings::http::HttpCaps;
use anyhow::Context as _;
use gate::{Gate, check};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The path the MCP endpoint is served at.
pub const MCP_PATH: &str = "/mcp";
/// At shutdown, once the calls are done, how long connections may take to
/// finish writing their responses.
pub const HTTP_SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// How long past every grace the process exits regardless.
const HTTP_SHUTDOWN_HARD_STOP: Duration = Duration::from_secs(5);

/// Serve until Ctrl-C or SIGTERM.
pub async fn serve(shared: Arc<Shared>, addr: SocketAddr, principal: String) -> anyhow::Result<()> {
    let settings = shared.host.config().http;
    // From here on the host refuses any reload that would leave this
    // server without bearer tokens or JWT validation.
    if !addr.ip().is_loopback() && shared.host.require_http_tokens(addr).is_err() {
        anyhow::bail!(
            "refusing to serve MCP over HTTP on {addr}: it is not a loopback address and the config has no bearer tokens \
             and no [http.jwt]. Add `[http] tokens = [{{ token_env = \"AIRLOCK_TOKEN\", principal = \"alice\" }}]` or an \
             `[http.jwt]` section to the config, or serve on 127.0.0.1"
        );
    }
    let jwt = settings.jwt.as_ref().map(jwt::Verifier::new).transpose()?.map(Arc::new);
    let manager = Arc::new(LocalSessionManager::default());
    let caps = settings.caps;
    let gate = gate(&shared.host, jwt.clone(), addr, &principal, manager.clone(), caps);
    // Cancelled once the calls are done: ends rmcp's event streams.
    let streams = CancellationToken::new();
    // Host and Origin are checked by `gate` (rmcp's own lists would refuse
    // a token-protected server's public host name).
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(caps.max_body_bytes)
        .with_cancellation_token(streams.child_token());
    let host = shared.host.clone();
    let metrics_listener = match host.config().metrics.listen {
        Some(listen) => Some(bind_metrics(&host, listen, &principal, jwt.clone()).await?),
        None => None,
    };
    let server = AirlockServer::new(shared, principal);
    let service = StreamableHttpService::new(move || Ok(server.for_session()), manager, config);
    let posts = gate.posts.clone();
    // With `[metrics] listen`, `/metrics` is served there only: an
    // operator who moved it off the MCP port does not want it on both.
    let mut app = axum::Router::new().route_service(MCP_PATH, service);
    if metrics_listener.is_none() {
        app = probes::with_metrics(app, &host);
    }
    let mut app = app.layer(axum::middleware::from_fn_with_state(gate, check));
    app = probes::with_probes(app, &host);
    let page_jwt = jwt.clone();
    if let Some(jwt) = jwt {
        // The metadata document is public (a client reads it before it has
        // a token), so it is routed after the gate's layer.
        let document = jwt.metadata().to_string();
        let for_mcp = document.clone();
        app = app
            .route(
                jwt::METADATA_PATH,
                axum::routing::get(move || {
                    std::future::ready(([(axum::http::header::CONTENT_TYPE, "application/json")], document.clone()))
                }),
            )
            .route(
                &format!("{}{MCP_PATH}", jwt::METADATA_PATH),
                axum::routing::get(move || {
                    std::future::ready(([(axum::http::header::CONTENT_TYPE, "application/json")], for_mcp.clone()))
                }),
            );
    }
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr().context("cannot read the bound address")?;
    eprintln!("airlock: serving MCP (streamable HTTP) on http://{local}{MCP_PATH}");

    let stop = CancellationToken::new();
    let trusted = proxy::TrustedProxies::new(&settings.trusted_proxies);
    // The approval page: on its own `[approvals] listen` address when the
    // operator gives one, else on this origin.
    let page_serving = match host.config().approvals.listen {
        Some(listen) => serve_page_with(&host, bind_page(listen).await?, page_jwt, stop.clone())?,
        None => {
            if let Some(page) = page_at(&host, page_jwt, local)? {
                app = app.merge(approvals::routes(page));
            }
            None
        }
    };
    let serving = tokio::spawn(connections::serve(listener, app, caps, trusted.clone(), stop.clone()));
    let metrics_serving = metrics_listener
        .map(|(listener, app)| tokio::spawn(connections::serve(listener, app, caps, trusted.clone(), stop.clone())));
    shutdown::signal().await;
    shutdown::last_resort(shutdown::longest(&host, HTTP_SHUTDOWN_GRACE + HTTP_SHUTDOWN_HARD_STOP));
    // No new connections; idle ones close, busy ones after their response.
    stop.cancel();
    let mut open = Vec::new();
    for task in std::iter::once(serving).chain(metrics_serving).chain(page_serving) {
        match task.await {
            Ok(tasks) => open.push(tasks),
            Err(err) => tracing::error!("the HTTP accept loop failed: {err}"),
        }
    }
    // Calls in flight, and the responses of POSTs still being written.
    shutdown::drain(&host, || host.calls_in_flight_total() > 0 || posts.load(Ordering::SeqCst) > 0).await;
    streams.cancel();
    let closed = async {
        for tasks in &open {
            tasks.wait().await;
        }
    };
    if tokio::time::timeout(HTTP_SHUTDOWN_GRACE, closed).await.is_err() {
        let still: usize = open.iter().map(TaskTracker::len).sum();
        tracing::info!("{still} HTTP connections still open after {HTTP_SHUTDOWN_GRACE:?}; closing them");
    }
    host.finish().await;
    Ok(())
}

/// The gate in front of everything but the probes, for a server on `addr`.
fn gate(
    host: &Host,
    jwt: Option<Arc<jwt::Verifier>>,
    addr: SocketAddr,
    principal: &str,
    manager: Arc<LocalSessionManager>,
    caps: HttpCaps,
) -> Arc<Gate> {
    Arc::new(Gate {
        access: {
            let host = host.clone();
            Box::new(move || host.state().access().clone())
        },
        jwt,
        loopback: addr.ip().is_loopback(),
        default_principal: principal.to_owned(),
        sessions: Mutex::new(HashMap::new()),
        manager,
        session_quota: {
            let host = host.clone();
            Box::new(move |principal: &str| host.quotas().for_principal(principal).http_sessions)
        },
        metrics: host.metrics().clone(),
        posts: Arc::new(AtomicUsize::new(0)),
        caps,
        metrics_readers: host.config().metrics.readers.clone(),
    })
}

/// The separate `[metrics] listen` address: `/metrics` (behind the gate
/// unless `public`, with the MCP server's JWT verifier `jwt` when there is
/// one, so that one task refreshes the key set), `/healthz` and `/readyz`.
async fn bind_metrics(
    host: &Host,
    addr: SocketAddr,
    principal: &str,
    jwt: Option<Arc<jwt::Verifier>>,
) -> anyhow::Result<(tokio::net::TcpListener, axum::Router)> {
    let settings = host.config();
    let mut app = probes::with_metrics(axum::Router::new(), host);
    if !settings.metrics.public {
        if !addr.ip().is_loopback() && host.require_http_tokens(addr).is_err() {
            anyhow::bail!(
                "refusing to serve /metrics on {addr}: it is not a loopback address and the config has no bearer \
                 tokens and no [http.jwt] to protect it. Add `[http] tokens` (a scraper sends one as a bearer \
                 token, and `[metrics] readers` names its principal), or listen on a loopback address (with \
                 `[metrics] public = true` if the scraper sends no token)"
            );
        }
        let jwt = match jwt {
            Some(jwt) => Some(jwt),
            None => settings.http.jwt.as_ref().map(jwt::Verifier::new).transpose()?.map(Arc::new),
        };
        let gate = gate(host, jwt, addr, principal, Arc::new(LocalSessionManager::default()), settings.http.caps);
        app = app.layer(axum::middleware::from_fn_with_state(gate, check));
    }
    let app = probes::with_probes(app, host);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} ([metrics] listen)"))?;
    let local = listener.local_addr().context("cannot read the bound address")?;
    eprintln!("airlock: serving metrics on http://{local}{METRICS_PATH}");
    Ok((listener, app))
}

/// Bind `[approvals] listen` for the approval page alone (beside an HTTP
/// server, or a stdio one, which has no origin of its own).
///
/// # Errors
///
/// It cannot be bound.
pub(super) async fn bind_page(addr: SocketAddr) -> anyhow::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr} ([approvals] listen)"))
}

/// Serve the approval page alone on `listener` until `stop` is cancelled;
/// the page signs people in with `[http.jwt]` when there is one. Links name
/// its origin from now on. `None` when the page cannot tell who is there
/// and nothing needs it (start-up says so).
///
/// # Errors
///
/// The bound address cannot be read, or the page cannot tell who is there
/// and the config has calls confirmed on it.
pub(super) fn serve_page_on(
    host: &Host,
    listener: tokio::net::TcpListener,
    stop: CancellationToken,
) -> anyhow::Result<Option<tokio::task::JoinHandle<TaskTracker>>> {
    serve_page_with(host, listener, None, stop)
}

/// [`serve_page_on`] with the HTTP server's verifier (`jwt`, for one
/// key-set refresh).
fn serve_page_with(
    host: &Host,
    listener: tokio::net::TcpListener,
    jwt: Option<Arc<jwt::Verifier>>,
    stop: CancellationToken,
) -> anyhow::Result<Option<tokio::task::JoinHandle<TaskTracker>>> {
    let settings = host.config();
    let jwt = match jwt {
        Some(jwt) => Some(jwt),
        None => settings.http.jwt.as_ref().map(jwt::Verifier::new).transpose()?.map(Arc::new),
    };
    let local = listener.local_addr().context("cannot read the bound address")?;
    let Some(page) = page_at(host, jwt, local)? else { return Ok(None) };
    let app = approvals::routes(page);
    let trusted = proxy::TrustedProxies::new(&settings.http.trusted_proxies);
    Ok(Some(tokio::spawn(connections::serve(listener, app, settings.http.caps, trusted, stop))))
}

/// The page's origin as browsers reach it: `[approvals] public_url`, else
/// `http://localhost:PORT` for a loopback address (a passkey's relying
/// party must be a name, and `localhost` is the one browsers trust over
/// plain http), else the address itself.
pub(super) fn page_base(host: &Host, local: SocketAddr) -> String {
    match host.config().approvals.public_url {
        Some(url) => url,
        None if local.ip().is_loopback() => format!("http://localhost:{}", local.port()),
        None => format!("http://{local}"),
    }
}

/// Whether the config has calls confirmed on the page: `[approvals] mode =
/// "page"`, or a tool on the page or with an approver of its own.
fn page_needed(host: &Host) -> bool {
    let config = host.config();
    config.approvals.mode == airlock_pipeline::ApprovalMode::Page
        || config.tools.values().any(|tool| {
            tool.pipeline.approvals == Some(airlock_pipeline::ApprovalMode::Page) || tool.pipeline.approver.is_some()
        })
}

/// The approval page served on `local`, and its links made from then on;
/// `None` (said on stderr) when it could not tell who is there and
/// nothing needs it.
///
/// # Errors
///
/// It could not tell who is there, and the config has calls confirmed on
/// it: what to add.
fn page_at(
    host: &Host,
    jwt: Option<Arc<jwt::Verifier>>,
    local: SocketAddr,
) -> anyhow::Result<Option<Arc<approvals::Page>>> {
    let Some(page) = page_for(host, jwt, local)? else { return Ok(None) };
    let base = page_base(host, local);
    host.approvals().serve_page_at(&base);
    eprintln!(
        "airlock: serving the approval page on {base}{}; people prove they are there with {}",
        airlock_pipeline::transport::approval::PAGE_PATH,
        page.presence()
    );
    Ok(Some(page))
}

/// Whether the approval page can be served on `local` without sign-in (a
/// stdio server's `[approvals] listen`); `false` said on stderr.
///
/// # Errors
///
/// As [`page_at`].
pub(super) fn page_servable(host: &Host, local: SocketAddr) -> anyhow::Result<bool> {
    Ok(page_for(host, None, local)?.is_some())
}

/// The approval page that would be served on `local`, its links not made
/// yet; `None` (said on stderr) when it could not tell who is there and
/// nothing needs it.
///
/// # Errors
///
/// As [`page_at`].
fn page_for(
    host: &Host,
    jwt: Option<Arc<jwt::Verifier>>,
    local: SocketAddr,
) -> anyhow::Result<Option<Arc<approvals::Page>>> {
    let base = page_base(host, local);
    match approvals::Page::new(host.clone(), jwt, base.clone()) {
        Ok(page) => Ok(Some(page)),
        Err(why) if page_needed(host) => anyhow::bail!(
            "refusing to serve the approval page at {base}: {why}. A page that cannot tell who is there would \
             take any process's answer; calls the config has approved on the page could never run"
        ),
        Err(why) => {
            eprintln!("airlock: not serving the approval page at {base}: {why}");
            Ok(None)
        }
    }
}

/// Serve `[metrics] listen` beside a transport that is not HTTP (stdio)
/// until `stop` is cancelled.
pub(super) async fn serve_metrics_only(
    host: &Host,
    addr: SocketAddr,
    principal: &str,
    stop: CancellationToken,
) -> anyhow::Result<tokio::task::JoinHandle<TaskTracker>> {
    let (listener, app) = bind_metrics(host, addr, principal, None).await?;
    let settings = host.config().http;
    let trusted = proxy::TrustedProxies::new(&settings.trusted_proxies);
    Ok(tokio::spawn(connections::serve(listener, app, settings.caps, trusted, stop)))
}
