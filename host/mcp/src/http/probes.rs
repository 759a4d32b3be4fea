//! `/healthz`, `/readyz` and `/metrics`: what an orchestrator, a load
//! balancer and a metrics scraper read.
//!
//! - `/healthz` answers `200 ok` while the process serves HTTP at all
//!   (liveness: restart it when this fails).
//! - `/readyz` answers `200 ready` once every component is loaded or
//!   refused and the audit log takes writes, and `503` with the reason
//!   before that, when the audit log cannot be written, and from the moment
//!   shutdown begins (readiness: send it traffic only when this passes).
//! - `/metrics` is Prometheus text (see `metrics.rs`).
//!
//! The two probes are public: they say nothing but ready or not (and why
//! not, in words the operator wrote: paths, counts). `/metrics` is behind
//! the same gate as `/mcp` (bearer token, Host and Origin checks), except
//! on a separate loopback `[metrics] listen` address with `public = true`.

use airlock_pipeline::Host;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;

/// Liveness.
pub const HEALTHZ_PATH: &str = "/healthz";
/// Readiness.
pub const READYZ_PATH: &str = "/readyz";
/// Prometheus metrics.
pub const METRICS_PATH: &str = "/metrics";

const TEXT: &str = "text/plain; charset=utf-8";

/// `/healthz` and `/readyz` added to `router`.
pub(super) fn with_probes(router: axum::Router, host: &Host) -> axum::Router {
    let host = host.clone();
    router.route(HEALTHZ_PATH, axum::routing::get(|| async { ([(header::CONTENT_TYPE, TEXT)], "ok\n") })).route(
        READYZ_PATH,
        axum::routing::get(move || {
            let ready = host.ready_check();
            async move {
                match ready {
                    Ok(()) => (StatusCode::OK, [(header::CONTENT_TYPE, TEXT)], "ready\n".to_owned()),
                    Err(why) => {
                        (StatusCode::SERVICE_UNAVAILABLE, [(header::CONTENT_TYPE, TEXT)], format!("not ready: {why}\n"))
                    }
                }
            }
        }),
    )
}

/// `/metrics` added to `router`.
pub(super) fn with_metrics(router: axum::Router, host: &Host) -> axum::Router {
    let host = host.clone();
    router.route(
        METRICS_PATH,
        axum::routing::get(move || {
            let text = host.metrics_text();
            async move {
                ([(header::CONTENT_TYPE, airlock_pipeline::transport::metrics::CONTENT_TYPE)], text).into_response()
            }
        }),
    )
}
