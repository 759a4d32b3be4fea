//! Measurement hooks for `make bench`, the one support module of the
//! `airlock` package: not part of the supported API, hidden from the
//! documentation.
//!
//! # Security
//!
//! `execute_only` skips resolve, validate, authorize and audit: it exists
//! so benchmarks can separate the pipeline's own cost from execution. Front
//! ends must use [`Host::call`].

use crate::api::Host;
use airlock_runtime::sandbox::{self, Execution};
use tokio_util::sync::CancellationToken;

/// Check `arguments` (JSON text) against the parameters schema of `tool`
/// in the metered validator, as the validate stage does: `None` without
/// such a tool, else whether they match.
pub async fn validate_only(host: &Host, tool: &str, arguments: &str) -> Option<bool> {
    let registry = host.tools();
    let tool = registry.get(tool)?;
    let cancel = CancellationToken::new();
    let timeout = tool.settings.limits.timeout;
    let deadline = crate::pipeline::validate::Deadline {
        at: tokio::time::Instant::now() + timeout,
        timeout_ms: timeout.as_millis(),
        cancel: &cancel,
    };
    Some(crate::pipeline::validate::check_arguments(tool, arguments, deadline).await.is_ok())
}

/// Run `tool` on `arguments` in a fresh instance, nothing else.
pub async fn execute_only(host: &Host, tool: &str, arguments: &str) -> Option<Execution> {
    let registry = host.tools();
    let tool = registry.get(tool)?;
    let settings = &tool.settings;
    let caller =
        std::sync::Arc::new(airlock_core::caller::Caller { principal: "bench".to_owned(), ..Default::default() });
    let invocation = sandbox::Invocation { tool: &tool.name, caller: &caller, progress: None, log: None };
    Some(
        sandbox::call(
            &tool.pre(),
            &settings.limits,
            settings.limits.timeout,
            &settings.grants,
            &invocation,
            arguments,
            &CancellationToken::new(),
        )
        .await,
    )
}
