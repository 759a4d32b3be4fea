//! The MCP front end: Airlock's tools served over the Model Context Protocol,
//! on stdio and on streamable HTTP, with [`rmcp`].
//!
//! # What this module trusts and what it does not
//!
//! Trusted: the [`Host`] (its pipeline decides every call) and the
//! operator's config (bearer tokens, allowed origins, the files to watch),
//! read from the host state in force.
//!
//! Not trusted: everything a client sends, and that it reads what it is
//! sent. rmcp implements the protocol; the framing in front of it is ours.
//! Each JSON-RPC message is capped in size ([`MAX_STDIO_MESSAGE_BYTES`],
//! `[http] max_body_bytes`) and nesting ([`MAX_MESSAGE_DEPTH`]) and parsed
//! before rmcp sees it; what is not one message is answered with the
//! JSON-RPC error for it (`-32700` Parse error, `-32600` Invalid Request,
//! `"id": null` when the id is unknown) and the connection goes on. On stdio
//! at most [`MAX_STDIO_REQUESTS_IN_FLIGHT`] requests are read ahead of their
//! written replies, so a client that does not read stops being read (see
//! `stdio`). Over HTTP, connections that no request has authenticated yet
//! have their own small pool (`[http] max_unauthenticated_connections`,
//! `unauthenticated_timeout_secs`), authenticated ones are capped (`[http]
//! max_connections`, `max_connections_per_peer`), and all must send their
//! headers within `header_timeout_secs` (see `http`). Tool names and arguments go
//! to the pipeline as proposed, which resolves, validates and authorizes
//! them. The HTTP `Authorization`, `Origin`, `Host` and `Mcp-Session-Id`
//! headers are checked before rmcp sees a request (see `http`). Answers to confirmation requests
//! (elicitation results, `requestState` and `inputResponses` on retried
//! calls) are only ever read as "the user confirmed" or "did not": a
//! `requestState` is an opaque handle to state kept here, bound to the
//! principal, tool and arguments it was issued for, used once and expired
//! after [`CONFIRM_TIMEOUT`]. With `[fleet]` it is instead signed with the
//! fleet's shared key over the same binding and redeemed once across the
//! fleet in Redis, so that any replica can finish the call (see `signed`).
//!
//! Tool lists come only from [`Host::schemas`] with [`Format::Mcp`](airlock_pipeline::Format::Mcp):
//! the projection is the trust boundary, this module never builds tool JSON
//! from host-side tool definitions.
//!
//! # Start-up
//!
//! `airlock serve` builds its host with
//! [`HostBuilder::load_in_background`](airlock_pipeline::HostBuilder::load_in_background):
//! `initialize` (and `server/discover`) are answered at once, even while
//! components compile. A tool appears in `tools/list` once it is ready and
//! clients are sent `notifications/tools/list_changed`; a list asked for
//! while tools are loading waits for them until `[serve]
//! startup_list_wait_secs` after the start; a call for a tool still
//! compiling waits for it until the tool's deadline.
//!
//! Nothing here writes to stdout: the stdio transport owns it, guest output
//! is captured by the sandbox, and logs go to stderr through `tracing`.
//!
//! # Protocol revisions
//!
//! Every revision rmcp knows is served: the `initialize`-based ones
//! (2024-11-05 … 2025-11-25), where a call that needs confirmation sends
//! `elicitation/create` to the client, and 2026-07-28 (`server/discover`,
//! per-request metadata), where the server may not send requests and a call
//! that needs confirmation answers with an "input required" result instead
//! (SEP-2322) and finishes when the client retries with the user's answer.
//! A client is sent only what its revision defines (`revision`): no SSE
//! priming event or URL-mode elicitation before 2025-11-25, no task before
//! 2026-07-28.

mod blocks;
mod cancel;
mod changes;
mod client_log;
mod confirm;
mod http;
mod jsonrpc;
mod listen_page;
mod progress;
mod revision;
mod server;
mod shutdown;
mod signed;
mod stdio;
mod tasks;
mod watch;

use airlock_pipeline::Host;
use anyhow::Context as _;
use changes::Changes;
use confirm::Confirmations;
use rmcp::ServiceExt as _;
use server::{AirlockServer, Shared};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub use http::{HEALTHZ_PATH, HTTP_SHUTDOWN_GRACE, METRICS_PATH, READYZ_PATH};
pub use jsonrpc::MAX_MESSAGE_DEPTH;
pub use listen_page::{
    BIND_RETRY, PAGE_IDLE_CHECK, PAGE_LOG_FILE, PAGE_SUBCOMMAND, PAGE_TAKEOVER_POLL, serve_handed_page,
};
pub use stdio::{MAX_QUEUED_REPLIES, MAX_STDIO_MESSAGE_BYTES, MAX_STDIO_REQUESTS_IN_FLIGHT};
/// How long a call waits for the user to answer a confirmation request
/// before it is declined.
pub const CONFIRM_TIMEOUT: Duration = Duration::from_secs(300);
/// Quiet time after the last change to a watched file before a reload
/// (`--watch`): long enough to take an editor's save (write, rename,
/// close) as one change.
pub const RELOAD_DEBOUNCE: Duration = Duration::from_millis(100);
/// Longest time from the first change of a burst to its reload
/// (`--watch`), however often the watched files keep changing.
pub const RELOAD_MAX_WAIT: Duration = Duration::from_millis(300);
/// The first wait before a reload that failed only because the host was
/// busy (no room in the memory budget to compile a component in time) is
/// tried again (`--watch`); each later wait is twice the one before.
pub const RELOAD_RETRY_FIRST: Duration = Duration::from_secs(1);
/// The longest wait between two tries of a reload that keeps failing only
/// because the host is busy: it is tried until it loads or fails for a
/// reason of its own.
pub const RELOAD_RETRY_MAX: Duration = Duration::from_secs(60);
/// Tools that become ready within this time of each other during start-up
/// are announced with one `notifications/tools/list_changed`.
pub const STARTUP_NOTICE_COALESCE: Duration = Duration::from_millis(100);

/// Serve the host's tools over MCP on stdin/stdout until stdin closes, or
/// until SIGTERM or Ctrl-C: then calls received from then on are refused,
/// calls in flight get `[serve] shutdown_grace_secs` to finish and the
/// rest are cancelled (their `cancelled` results are written), and it
/// returns. With `[metrics] listen`, `/metrics`, `/healthz` and `/readyz`
/// are served there meanwhile.
///
/// Every call acts as `principal`. With `watch`, every file the host state
/// is built from and the tool directories are watched; a change reloads the
/// state and, when the tool list changed, clients are sent
/// `notifications/tools/list_changed`.
///
/// # Errors
///
/// The transport fails before the client connects, or the watcher cannot
/// be started.
pub async fn serve_stdio(host: Host, principal: String, watch: bool) -> anyhow::Result<()> {
    let shared = Shared::new(host.clone())?;
    let _watcher = if watch { Some(watch::spawn(shared.clone())?) } else { None };
    let stop_metrics = tokio_util::sync::CancellationToken::new();
    let metrics = match host.config().metrics.listen {
        Some(addr) => Some(http::serve_metrics_only(&host, addr, &principal, stop_metrics.clone()).await?),
        None => None,
    };
    // A stdio server has no origin: the approval page needs `[approvals]
    // listen` of its own, and outlives the server while approvals wait
    // (see `listen_page`).
    let page = match host.config().approvals.listen {
        Some(addr) => listen_page::ListenPage::start(&host, addr).await?,
        None => None,
    };
    let server = AirlockServer::new(shared, principal);
    let (reader, writer) = rmcp::transport::stdio_pipes();
    let transport = stdio::StdioTransport::new(reader, writer);
    let unanswered = transport.unanswered();
    let direct = transport.opener();
    // Clients on the initialize-based revisions are registered for
    // list_changed by `notifications/initialized`; 2026-07-28 clients
    // subscribe with `subscriptions/listen`. The client connecting is
    // raced against a signal, so that SIGTERM stops a server whose client
    // never spoke.
    let running = tokio::select! {
        running = server.clone().serve(transport) => running.context("the MCP client did not connect on stdio"),
        () = shutdown::signal() => {
            if let Some(page) = page {
                page.finish().await;
            }
            host.begin_shutdown();
            host.finish().await;
            return Ok(());
        }
    };
    let running = match running {
        Ok(running) => running,
        Err(err) => {
            if let Some(page) = page {
                page.finish().await;
            }
            return Err(err);
        }
    };
    // The session is up: calls are answered beside rmcp's loop from now on.
    direct.open(server, running.peer().clone());
    let service = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    let reason = tokio::select! {
        reason = &mut waiting => Some(reason),
        () = shutdown::signal() => None,
    };
    let reason = match reason {
        Some(reason) => {
            let reason = reason.context("the MCP stdio service stopped unexpectedly")?;
            compile_on(&host).await;
            shutdown::end_orphans(&host).await;
            reason
        }
        None => {
            shutdown::last_resort(shutdown::longest(&host, STDIO_SHUTDOWN_REST));
            // New calls are refused from now on; the replies of calls that
            // finish are written as usual. A request read but not yet in
            // the pipeline (rmcp has not run its task) counts as busy too.
            shutdown::drain(&host, || host.calls_in_flight_total() > 0 || unanswered.count() > 0).await;
            // rmcp writes the replies still queued before it stops.
            service.cancel();
            waiting.await.context("the MCP stdio service stopped unexpectedly")?
        }
    };
    tracing::info!(?reason, "MCP stdio session ended");
    stop_metrics.cancel();
    if let Some(page) = page {
        page.finish().await;
    }
    if let Some(served) = metrics
        && let Ok(open) = served.await
    {
        let _ = tokio::time::timeout(HTTP_SHUTDOWN_GRACE, open.wait()).await;
    }
    host.finish().await;
    Ok(())
}

/// The client went away while tools were still loading (a client that
/// starts a server per call, and closes it at once): the loads go on until
/// they are done, up to `[serve] startup_list_wait_secs` after the start, so
/// that what they compile is in the cache for the next start. A signal
/// ends the wait; compilations already running finish in their own
/// processes and keep their artifacts in the cache themselves.
async fn compile_on(host: &Host) {
    if host.readiness().finished() {
        return;
    }
    let wait = host.state().config().serve.startup_list_wait;
    tracing::info!(
        "stdin closed while tools are still loading; finishing them (up to {wait:?} after the start) so that the \
         next start finds them compiled; SIGTERM stops now"
    );
    tokio::select! {
        () = airlock_pipeline::transport::startup::settle(host, wait) => {}
        () = shutdown::signal() => {}
    }
}

/// On stdio, once the calls are done, how long rmcp, the metrics listener
/// and the exports may take before the last-resort exit.
const STDIO_SHUTDOWN_REST: Duration = Duration::from_secs(15);

/// Serve the host's tools over MCP streamable HTTP at `http://ADDR/mcp`
/// until interrupted (Ctrl-C or SIGTERM), then shut down gracefully (see
/// `http`): no new connections, calls in flight finish within `[serve]
/// shutdown_grace_secs` or are cancelled, the audit log is synced.
///
/// Requests act as the principal their bearer token maps to
/// (`[http] tokens`), or as `principal` when no tokens are configured. The
/// bound address is announced on stderr in one line, so that a caller that
/// asked for port 0 learns the port.
///
/// # Security
///
/// Refuses to bind a non-loopback address unless the config has at least
/// one bearer token. See `http` for the header checks.
///
/// # Errors
///
/// The address is refused or cannot be bound, or the watcher cannot be
/// started.
pub async fn serve_http(host: Host, addr: SocketAddr, principal: String, watch: bool) -> anyhow::Result<()> {
    let shared = Shared::new(host)?;
    let _watcher = if watch { Some(watch::spawn(shared.clone())?) } else { None };
    http::serve(shared, addr, principal).await
}

impl Shared {
    /// The state of one server. `[fleet]` (read from the config at start)
    /// turns on signed, fleet-wide single-use confirmations.
    fn new(host: Host) -> anyhow::Result<Arc<Self>> {
        let config = host.config();
        let signed = match &config.fleet {
            Some(fleet) => Some(signed::SignedConfirmations::new(fleet).map_err(anyhow::Error::msg)?),
            None => None,
        };
        let shared = Arc::new(Shared {
            host,
            changes: Changes::default(),
            confirmations: Arc::new(Confirmations::new(config.http.caps.max_pending_confirmations)),
            signed,
            partial_list_sent: AtomicBool::new(false),
        });
        announce_startup(&shared);
        Ok(shared)
    }
}

/// While the host loads its tools in the background, tell clients each
/// time the tool list grew (coalesced over [`STARTUP_NOTICE_COALESCE`]),
/// once some client was sent a list that lacked tools still loading: a
/// client that has not listed the tools yet will see them when it does.
/// The task ends when start-up is done or the server is gone.
fn announce_startup(shared: &Arc<Shared>) {
    let mut changes = shared.host.startup().subscribe();
    if changes.borrow_and_update().finished() {
        return;
    }
    let shared = Arc::downgrade(shared);
    tokio::spawn(async move {
        while changes.changed().await.is_ok() {
            tokio::time::sleep(STARTUP_NOTICE_COALESCE).await;
            let Some(shared) = shared.upgrade() else { return };
            // Marked seen before the notice: a tool installed after this
            // point gets a notice of its own.
            let finished = changes.borrow_and_update().finished();
            if shared.partial_list_sent.load(Ordering::SeqCst) {
                shared.changes.notify();
            }
            if finished {
                return;
            }
        }
    });
}
