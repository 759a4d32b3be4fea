//! Execute: the tool runs under its limits with only the grants the
//! operator gave it, in a fresh instance of its component
//! (`airlock_runtime::sandbox`) or in the call's session (`session.rs`).
//! The deadline is what is left of the tool's `timeout_ms` once the host's
//! own checks and the wait for memory took their part (the schedule
//! stage); a call with nothing left does not start. The call's turn in the
//! scheduler is given back as soon as the guest is done.

use super::{Call, Pipeline, Stop};
use airlock_core::outcome::{ErrorKind, Failure};
use airlock_core::timeline::Stage;
use airlock_runtime::sandbox::{self, Execution};
use airlock_settings::limits::Limits;
use std::time::Instant;

/// What the guest returned: its result's JSON text, unchecked, and the
/// note of a session reset by a call that still produced a result.
pub(super) struct Returned {
    /// The result as the guest wrote it.
    pub(super) text: String,
    /// The sentence saying the call's session was reset.
    pub(super) note: Option<String>,
}

impl Pipeline {
    /// Run the call in its turn: what the guest returned, or its failure.
    /// What it printed and the fuel it used go to the call either way.
    pub(super) async fn execute(&self, call: &mut Call<'_>) -> Result<Returned, Stop> {
        let tool = call.tool()?;
        let settings = &tool.settings;
        // (A session call keeps the tool's whole timeout: sessions apply
        // it themselves.)
        let limits = Limits { timeout: call.time_left, ..settings.limits };
        let turn = call.slot.take();
        let (execution, note) = match (&call.session, settings.sessions) {
            _ if limits.timeout.is_zero() => {
                let failure = Failure::new(
                    ErrorKind::Timeout,
                    format!(
                        "the call's {} ms deadline passed before the tool could start (its arguments took that long \
                         to check); send smaller arguments",
                        settings.limits.timeout.as_millis()
                    ),
                );
                (Execution::failed(failure, Instant::now()), None)
            }
            (Some(id), Some(session_settings)) => {
                let caller = call.caller();
                let run = self
                    .sessions
                    .call(
                        &tool,
                        session_settings,
                        call.sessions_per_tool,
                        &caller,
                        id,
                        &call.arguments.text,
                        call.cancel,
                    )
                    .await;
                (run.execution, run.reset)
            }
            _ => {
                let caller = call.caller();
                // The timeout names the tool's `timeout_ms`, not what the
                // host's checks left of it.
                let stated = settings.limits.timeout;
                let arguments = &call.arguments.text;
                let execution =
                    sandbox::call(&tool.pre, &limits, stated, &settings.grants, &caller, arguments, call.cancel).await;
                (execution, None)
            }
        };
        drop(turn);
        call.timeline.lap(Stage::Execute);
        let Execution { result, stdout, stderr, fuel_used, duration } = execution;
        (call.stdout, call.stderr, call.fuel_used) = (stdout, stderr, fuel_used);
        // The result is checked within what is left of the deadline.
        call.time_left = call.time_left.saturating_sub(duration);
        let text = result.map_err(Stop::Failed)?;
        Ok(Returned { text, note })
    }
}
