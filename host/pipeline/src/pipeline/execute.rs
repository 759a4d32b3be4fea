//! Execute: the tool runs under its limits with only the grants the
//! operator gave it, in a fresh instance of its component
//! (`airlock_runtime::sandbox`) or in the call's session (`session.rs`).
//! The deadline is what is left of the tool's `timeout_ms` (of its
//! `task_timeout_ms` for a call that runs as a task) once the host's own
//! checks and the wait for memory took their part (the schedule stage); a
//! call with nothing left does not start. The call's turn in the
//! scheduler is given back as soon as the guest is done.

use super::{Call, Pipeline, Stop};
use crate::tool::Tool;
use airlock_core::caller::Caller;
use airlock_core::outcome::{ErrorKind, Failure};
use airlock_core::timeline::Stage;
use airlock_runtime::sandbox::{self, Attached, Execution, Invocation};
use airlock_settings::limits::Limits;
use std::sync::Arc;
use std::time::Instant;

/// What the guest returned: its result's JSON text, unchecked, the content
/// blocks it attached (contract 0.3.0) and the note of a session reset by
/// a call that still produced a result.
pub(super) struct Returned {
    /// The result as the guest wrote it.
    pub(super) text: String,
    /// The blocks it attached, each checked as it was (or the refusal of
    /// the first the host refused).
    pub(super) content: Attached,
    /// The sentence saying the call's session was reset.
    pub(super) note: Option<String>,
}

/// What the sandbox needs to know of the call besides its arguments: the
/// tool (its log lines are tagged with it), the caller, and the front
/// end's progress sink.
fn invocation<'a>(call: &'a Call<'_>, tool: &'a Tool, caller: &'a Arc<Caller>) -> Invocation<'a> {
    // A tool's log lines reach the front end's sink (and so, perhaps, the
    // model) only when the operator said so; otherwise they stay in the
    // operator's log.
    let log = if tool.pipeline.client_log { call.request.log.as_ref() } else { None };
    Invocation { tool: &tool.name, caller, progress: call.request.progress.as_ref(), log }
}

impl Pipeline {
    /// Run the call in its turn: what the guest returned, or its failure.
    /// What it printed and the fuel it used go to the call either way.
    pub(super) async fn execute(&self, call: &mut Call<'_>) -> Result<Returned, Stop> {
        let tool = call.tool()?;
        let settings = &tool.settings;
        let call_limits = call.limits(&tool);
        // (A session call keeps the call's whole deadline: sessions apply
        // it themselves.)
        let limits = Limits { timeout: call.time_left, ..call_limits };
        let turn = call.slot.take();
        let (execution, note) = match (&call.session, settings.sessions) {
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
                let caller = call.caller();
                let invocation = invocation(call, &tool, &caller);
                let run = self
                    .sessions
                    .call(
                        &tool,
                        session_settings,
                        &call_limits,
                        call.sessions_per_tool,
                        &invocation,
                        id,
                        &call.arguments.text,
                        call.cancel,
                    )
                    .await;
                (run.execution, run.reset)
            }
            _ => {
                let caller = call.caller();
                let invocation = invocation(call, &tool, &caller);
                // The timeout names the tool's `timeout_ms` (or its
                // `task_timeout_ms`), not what the host's checks left of it.
                let stated = call_limits.timeout;
                let arguments = &call.arguments.text;
                let grants = &settings.grants;
                let execution =
                    sandbox::call(&tool.pre(), &limits, stated, grants, &invocation, arguments, call.cancel).await;
                (execution, None)
            }
        };
        drop(turn);
        call.timeline.lap(Stage::Execute);
        let Execution { result, stdout, stderr, fuel_used, duration, content } = execution;
        (call.stdout, call.stderr, call.fuel_used) = (stdout, stderr, fuel_used);
        // The result is checked within what is left of the deadline.
        call.time_left = call.time_left.saturating_sub(duration);
        match result {
            Ok(text) => Ok(Returned { text, content, note }),
            // A refused content block is the call's failure, whatever the
            // guest did after it.
            Err(failure) => Err(Stop::Failed(content.refused.unwrap_or(failure))),
        }
    }
}
