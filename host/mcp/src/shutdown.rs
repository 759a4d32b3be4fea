//! Shutdown as an orchestrator expects it: on SIGTERM (what Kubernetes and
//! systemd send) or Ctrl-C, stop taking new work, let the calls in flight
//! finish within `[serve] shutdown_grace_secs`, cancel the rest (each ends
//! with a `cancelled` result, audited like any other), then sync the audit
//! log, export the last spans and exit 0.
//!
//! Trusts nothing about how long calls take: past the grace they are
//! cancelled, and a cancelled call gets `[serve] cancel_grace_secs`
//! (`DEFAULT_CANCEL_GRACE`) to write its result; a second signal cancels
//! them at once. The transports call
//! [`signal`] and [`drain`]; what "in flight" means (calls, and over HTTP
//! also the responses still being written) is theirs to say.

use airlock_pipeline::Host;
use std::time::Duration;
use tokio::time::Instant;

/// How often draining checks whether the work in flight is done.
const DRAIN_POLL: Duration = Duration::from_millis(20);

/// Resolves on Ctrl-C or, on Unix, SIGTERM.
pub(super) async fn signal() {
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

/// The most shutdown can take after the signal, for the last-resort exit:
/// the grace, the cancelled calls' grace, and `rest` for the transport.
pub(super) fn longest(host: &Host, rest: Duration) -> Duration {
    let serve = host.config().serve;
    serve.shutdown_grace + serve.cancel_grace + rest
}

/// Stop taking calls and wait until `busy` says nothing is in flight: up to
/// the shutdown grace, then the calls still running are cancelled and
/// given `[serve] cancel_grace_secs`. Returns how many calls were
/// cancelled.
pub(super) async fn drain(host: &Host, busy: impl Fn() -> bool) -> usize {
    host.begin_shutdown();
    let serve = host.config().serve;
    let (grace, cancel_grace) = (serve.shutdown_grace, serve.cancel_grace);
    tracing::info!(
        calls_in_flight = host.calls_in_flight_total(),
        "shutting down: no new calls; waiting up to {grace:?} for the calls in flight"
    );
    let finished = tokio::select! {
        finished = idle(&busy, Instant::now() + grace) => finished,
        () = signal() => {
            tracing::info!("a second signal: cancelling the calls in flight now");
            false
        }
    };
    if finished {
        return 0;
    }
    let cancelled = host.calls_in_flight_total();
    if cancelled > 0 {
        tracing::warn!("{cancelled} calls still running at the end of the shutdown grace ({grace:?}); cancelling them");
    }
    host.cancel_calls();
    if !idle(&busy, Instant::now() + cancel_grace).await {
        tracing::warn!(
            "work still in flight {cancel_grace:?} after the calls were cancelled ([serve] cancel_grace_secs); \
             stopping anyway"
        );
    }
    cancelled
}

/// The client of a stdio server went away: calls still running (tasks,
/// whose results nobody can fetch once this process exits) are cancelled
/// at once and given `[serve] cancel_grace_secs` to write their audit
/// records.
pub(super) async fn end_orphans(host: &Host) {
    let running = host.calls_in_flight_total();
    if running == 0 {
        return;
    }
    tracing::info!("the client went away with {running} calls still running (tasks); cancelling them");
    host.begin_shutdown();
    host.cancel_calls();
    let cancel_grace = host.config().serve.cancel_grace;
    if !idle(&|| host.calls_in_flight_total() > 0, Instant::now() + cancel_grace).await {
        tracing::warn!("calls still running {cancel_grace:?} after they were cancelled; stopping anyway");
    }
}

/// Wait until `busy` is false (true) or `deadline` passes (false).
async fn idle(busy: &impl Fn() -> bool, deadline: Instant) -> bool {
    loop {
        if !busy() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(DRAIN_POLL).await;
    }
}

/// Exit the process `after` from now whatever the runtime is doing: a
/// thread outside it, so that shutdown ends even if something keeps the
/// runtime's workers from running its timers. Nothing is lost by it: every
/// result's audit record was written before the result was sent.
pub(super) fn last_resort(after: Duration) {
    std::thread::spawn(move || {
        std::thread::sleep(after);
        eprintln!("airlock: shutdown did not finish within {after:?}; exiting");
        std::process::exit(0);
    });
}
