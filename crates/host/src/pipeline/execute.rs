//! Execute: the tool runs under its limits with only the grants the
//! operator gave it, in a fresh instance of its component
//! (`airlock_runtime::sandbox`) or in the call's session (`session.rs`).
//! The deadline is what is left of the tool's `timeout_ms` (of its
//! `task_timeout_ms` for a call that runs as a task) once the host's own
//! checks took their part; a call with nothing left does not start.
//! The call first waits for its turn in the scheduler (the schedule stage).

use super::Pipeline;
use crate::session::SessionId;
use crate::state::State;
use crate::tool::Tool;
use airlock_core::call::CallRequest;
use airlock_core::caller::Caller;
use airlock_core::outcome::{ErrorKind, Failure};
use airlock_runtime::loader::LoadedTool;
use airlock_runtime::sandbox::{self, Execution, Invocation};
use airlock_settings::limits::Limits;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// A call ready to run.
pub(super) struct Run<'a> {
    /// The call.
    pub(super) request: &'a CallRequest,
    /// Its tool.
    pub(super) tool: &'a Arc<Tool>,
    /// The arguments as the tool gets them (JSON text).
    pub(super) arguments: &'a str,
    /// The session it runs in, for tools that keep sessions.
    pub(super) session: Option<&'a SessionId>,
    /// The principal's quota of sessions of one tool.
    pub(super) sessions_per_tool: usize,
    /// The call's limits: the tool's, or those of a call that runs as a
    /// task ([`Tool::limits_for`]).
    pub(super) limits: Limits,
    /// What is left of the call's deadline ([`time_left`]).
    pub(super) time_left: Duration,
}

/// What is left of the call's deadline (`limits`: the tool's `timeout_ms`,
/// or its `task_timeout_ms` for a task) after `host_time`, the time the
/// host spent on the call before it was authorized (parsing and validating
/// its arguments; waiting for a confirmation does not count). Whole
/// milliseconds, as deadlines are configured: a check that took
/// microseconds leaves the tool its whole deadline.
pub(super) fn time_left(limits: &Limits, host_time: Duration) -> Duration {
    let host_ms = Duration::from_millis(u64::try_from(host_time.as_millis()).unwrap_or(u64::MAX));
    limits.timeout.saturating_sub(host_ms)
}

/// What is left of `time_left` after `waited` for room in the memory
/// budget, in whole milliseconds as [`time_left`] counts.
pub(super) fn after_wait(time_left: Duration, waited: Duration) -> Duration {
    time_left.saturating_sub(Duration::from_millis(u64::try_from(waited.as_millis()).unwrap_or(u64::MAX)))
}

/// What the sandbox needs to know of the call besides its arguments: the
/// tool (its log lines are tagged with it), the caller, and the front
/// end's progress sink.
fn invocation<'a>(tool: &'a LoadedTool, caller: &'a Arc<Caller>, request: &'a CallRequest) -> Invocation<'a> {
    Invocation { tool: &tool.name, caller, progress: request.progress.as_ref() }
}

impl Pipeline {
    /// Schedule and run the call: what the guest returned, and the note of
    /// a session reset by a call that still produced a result.
    pub(super) async fn execute(
        &self,
        state: &State,
        run: Run<'_>,
        cancel: &CancellationToken,
    ) -> (Execution, Option<String>) {
        let Run { request, tool, arguments, session, sessions_per_tool, limits: call_limits, time_left } = run;
        let settings = &tool.settings;
        // (A session call keeps the call's whole deadline: sessions apply
        // it themselves.)
        let limits = Limits { timeout: time_left, ..call_limits };
        match (session, settings.sessions) {
            _ if limits.timeout.is_zero() => {
                let failure = Failure::new(
                    ErrorKind::Timeout,
                    format!(
                        "the call's {} ms deadline passed before the tool could start (its arguments took that long \
                         to check); send smaller arguments",
                        call_limits.timeout.as_millis()
                    ),
                );
                (Execution::failed(failure, Instant::now()), None)
            }
            (Some(id), Some(session_settings)) => {
                let caller = Self::caller(state, request, Some(id));
                let invocation = invocation(tool, &caller, request);
                let call = self.sessions.call(
                    tool,
                    session_settings,
                    &call_limits,
                    sessions_per_tool,
                    &invocation,
                    id,
                    arguments,
                    cancel,
                );
                let run = self.scheduler.run(tool.pipeline.concurrency_safe, call).await;
                (run.execution, run.reset)
            }
            _ => {
                let caller = Self::caller(state, request, None);
                let invocation = invocation(tool, &caller, request);
                // The timeout names the tool's `timeout_ms` (or its
                // `task_timeout_ms`), not what the host's checks left of it.
                let stated = call_limits.timeout;
                let call = sandbox::call(&tool.pre, &limits, stated, &settings.grants, &invocation, arguments, cancel);
                (self.scheduler.run(tool.pipeline.concurrency_safe, call).await, None)
            }
        }
    }
}
