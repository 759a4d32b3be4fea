//! The call pipeline, its stages in order (`Stage::ALL`):
//!
//! admit → resolve → parse → validate → authorize → confirm → schedule → execute → check → audit
//!
//! Every front end goes through [`Pipeline::call`] / [`Pipeline::dispatch`].
//! Each stage lives in its own module; this one only sequences them. Any
//! failure in any stage becomes an ordinary [`ToolResult`] whose outcome is
//! a [`Failure`] with a kind: nothing a model, client or guest sends makes
//! this return a Rust error or panic, and every call leaves one audit
//! record before its result is returned. A call to a tool with side
//! effects leaves two: a `started` record before it runs (if that cannot
//! be written, the call is refused and nothing runs) and its outcome. The
//! outcome stays a value here: front ends render it at their edge
//! (`airlock_core::render`).

use crate::check::check_output;
use crate::metrics::InFlightGuard;
use crate::observe::Telemetry;
use crate::quota::QuotaTracker;
use crate::resolve::resolve;
use crate::schedule::Scheduler;
use crate::session::{self, SessionId, Sessions};
use crate::state::State;
use crate::validate::{Deadline, validate};
use airlock_core::arguments;
use airlock_core::call::{CallRequest, MAX_CALL_ID_LEN, MAX_PRINCIPAL_LEN, ToolResult};
use airlock_core::caller::Caller;
use airlock_core::optional_null;
use airlock_core::outcome::{Authority, CallOutcome, ErrorKind, Failure, Refusal, Success};
use airlock_core::timeline::{Stage, Timeline};
use airlock_policy::audit::{AuditEntry, Event};
use airlock_policy::authorize::{ToolFacts, Verdict};
use airlock_policy::card;
use airlock_policy::confirm::{ConfirmRequest, Confirmer};
use airlock_runtime::loader::LoadedTool;
use airlock_runtime::sandbox;
use airlock_settings::limits::Limits;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// The stages, with what they share for the host's whole life. What is
/// built from the config (tools, policy, audit log, quotas) comes with each
/// call as the [`State`] in force when the call was received, and that one
/// state serves the call from admission to its audit record.
pub struct Pipeline {
    /// The scheduler (its cap follows the state in force).
    pub scheduler: Scheduler,
    /// Calls in flight and call rates per principal, against `[quotas]`.
    pub quota: QuotaTracker,
    /// Live sessions of tools that keep them.
    pub sessions: Arc<Sessions>,
    /// Metrics and spans of finished calls.
    pub(crate) telemetry: Telemetry,
    /// Cancelled when shutdown begins: a call waiting for its confirmation
    /// is declined then, since no answer can arrive once the listener is
    /// closed (it would otherwise hold the shutdown for its whole grace).
    pub confirmations_closed: CancellationToken,
}

/// A call that passed resolve, parse, validate and authorize.
struct Approved {
    tool: Arc<LoadedTool>,
    arguments: String,
    session: Option<SessionId>,
    authority: Authority,
    policy: Option<String>,
    /// Host time spent on the call before it was authorized (parsing and
    /// validating the arguments); it counts against the tool's deadline.
    /// Waiting for a confirmation does not.
    host_time: Duration,
}

/// The failure of a call the policy denied, saying why.
fn denied(reason: &str) -> Failure {
    Failure::new(ErrorKind::Denied, format!("{reason}. This call is not allowed; do not retry it unchanged."))
}

/// A call refused before it ran.
struct Refused {
    /// Why, as decided.
    refusal: Refusal,
    /// What the model reads about it.
    failure: Failure,
    /// The policy that determined the decision, if one did.
    policy: Option<String>,
    /// The tool, when the call got as far as resolving it.
    tool: Option<Arc<LoadedTool>>,
}

impl Refused {
    /// Refused before the policy was consulted.
    fn not_reached(failure: Failure, tool: Option<Arc<LoadedTool>>) -> Self {
        Refused { refusal: Refusal::NotReached, failure, policy: None, tool }
    }

    /// Refused by the policy (`refusal` says how) under `policy`.
    fn by_policy(refusal: Refusal, failure: Failure, policy: Option<String>, tool: &Arc<LoadedTool>) -> Self {
        Refused { refusal, failure, policy, tool: Some(tool.clone()) }
    }
}

/// A call on its way through the pipeline.
struct InFlight {
    request: CallRequest,
    started: Instant,
    /// Each stage's start and length, for metrics and spans.
    timeline: Timeline,
    /// Counts the call in `airlock_calls_in_flight` until it is dropped.
    _gauge: InFlightGuard,
}

impl Pipeline {
    /// Run one call through every stage, under `state`. Before anything
    /// else, the call is admitted under its principal's quotas; it counts
    /// in flight until its result is returned.
    pub async fn call(
        &self,
        state: &State,
        request: CallRequest,
        confirmer: Option<&dyn Confirmer>,
        cancel: &CancellationToken,
    ) -> ToolResult {
        let mut flight = self.receive(request);
        let quota = state.quotas().for_principal(&flight.request.principal);
        let admitted = self.quota.admit(&flight.request.principal, quota);
        flight.timeline.lap(Stage::Admit);
        let _admitted = match admitted {
            Ok(admitted) => admitted,
            Err(failure) => return self.finish_early(state, flight, Refused::not_reached(failure, None)),
        };
        match self.approve(state, &mut flight, confirmer, cancel).await {
            Ok(approved) => self.run(state, flight, approved, quota.sessions_per_tool, cancel).await,
            Err(refused) => self.finish_early(state, flight, refused),
        }
    }

    /// Answer a call with `failure` without running any stage (the host is
    /// shutting down, say); it is audited and counted as any other.
    pub(crate) fn refuse(&self, state: &State, request: CallRequest, failure: Failure) -> ToolResult {
        let flight = self.receive(request);
        self.finish_early(state, flight, Refused::not_reached(failure, None))
    }

    /// Run a batch of calls (as a model proposes them in one turn).
    /// Admission under the quotas and approval (including any confirmation
    /// prompt) happen one call at a time in the proposed order, so a batch
    /// larger than its principal's `calls_in_flight` has its last calls
    /// refused; execution follows the scheduling rules; results come back in
    /// the proposed order.
    pub async fn dispatch(
        &self,
        state: &State,
        requests: Vec<CallRequest>,
        confirmer: Option<&dyn Confirmer>,
        cancel: &CancellationToken,
    ) -> Vec<ToolResult> {
        let mut approved = Vec::with_capacity(requests.len());
        for request in requests {
            let mut flight = self.receive(request);
            let quota = state.quotas().for_principal(&flight.request.principal);
            let admitted = self.quota.admit(&flight.request.principal, quota);
            flight.timeline.lap(Stage::Admit);
            let (admitted, verdict) = match admitted {
                Ok(admitted) => (Some(admitted), self.approve(state, &mut flight, confirmer, cancel).await),
                Err(failure) => (None, Err(Refused::not_reached(failure, None))),
            };
            approved.push((flight, admitted, quota.sessions_per_tool, verdict));
        }
        let runs = approved.into_iter().map(|(flight, admitted, sessions_per_tool, verdict)| async move {
            // The call counts in flight until its result is ready.
            let _admitted = admitted;
            match verdict {
                Ok(approved) => self.run(state, flight, approved, sessions_per_tool, cancel).await,
                Err(refused) => self.finish_early(state, flight, refused),
            }
        });
        futures::future::join_all(runs).await
    }

    /// resolve → parse → validate → authorize (→ confirm).
    async fn approve(
        &self,
        state: &State,
        flight: &mut InFlight,
        confirmer: Option<&dyn Confirmer>,
        cancel: &CancellationToken,
    ) -> Result<Approved, Refused> {
        let InFlight { request, timeline, .. } = flight;
        let resolved = resolve(state.registry(), &request.tool);
        timeline.lap(Stage::Resolve);
        let tool = resolved.map_err(|failure| Refused::not_reached(failure, None))?;
        // A principal the policy denies whatever the arguments is refused
        // before they are parsed and validated: such a call costs the host
        // no validation.
        let facts = ToolFacts { name: &tool.name, side_effect: tool.settings.side_effect };
        if let Some(Verdict::Deny { reason, policy }) =
            state.policy().deny_whatever_the_arguments(&request.principal, &request.attributes, &facts)
        {
            timeline.lap(Stage::Authorize);
            return Err(Refused::by_policy(Refusal::Denied, denied(&reason), policy, &tool));
        }
        let not_reached = |failure: Failure| Refused::not_reached(failure, Some(tool.clone()));
        let parsed = arguments::parse(&request.arguments);
        timeline.lap(Stage::Parse);
        let mut arguments = parsed.map_err(not_reached)?;
        // `null` for an optional property means "absent" (strict mode makes
        // every property required and optional ones nullable).
        optional_null::drop_absent_nulls(tool.parameters.json(), &mut arguments);
        // The call's deadline starts at receipt: time spent checking the
        // arguments is taken from the time the tool gets.
        let timeout = tool.settings.limits.timeout;
        let deadline = Deadline {
            at: tokio::time::Instant::from_std(flight.started) + timeout,
            timeout_ms: timeout.as_millis(),
            cancel,
        };
        let validated = validate(&tool, &arguments.text, deadline).await;
        timeline.lap(Stage::Validate);
        validated.map_err(not_reached)?;
        let host_time = flight.started.elapsed();
        // The host consumes `session` for tools that keep sessions; the
        // policy and the tool see the other arguments.
        let session = session::split(&tool, &mut arguments).map_err(not_reached)?;
        let verdict = state.policy().decide_as(&request.principal, &request.attributes, &facts, &arguments.value);
        timeline.lap(Stage::Authorize);
        let (authority, policy) = match verdict {
            Verdict::Allow { policy } => (Authority::Allowed, policy),
            Verdict::Deny { reason, policy } => {
                return Err(Refused::by_policy(Refusal::Denied, denied(&reason), policy, &tool));
            }
            Verdict::Ask { reason, policy } => {
                let confirmed = match confirmer {
                    Some(confirmer) => {
                        let card = tool.settings.confirm.as_ref().map(|template| {
                            let caller = Self::caller_value(state, request);
                            let caps = state.config().cards;
                            let scope = card::Scope { value: &arguments.value, caller: &caller };
                            template.render(scope, caps.max_card_bytes, caps.max_value_bytes)
                        });
                        let ask = ConfirmRequest {
                            principal: &request.principal,
                            tool: &tool.name,
                            arguments: &arguments.value,
                            reason: &reason,
                            card: card.as_deref(),
                        };
                        timeline.mark();
                        let _pending = self.telemetry.metrics.confirmation_pending();
                        let confirmed = tokio::select! {
                            confirmed = confirmer.confirm(ask) => confirmed,
                            () = self.confirmations_closed.cancelled() => {
                                let failure = Failure::new(
                                    ErrorKind::Declined,
                                    format!(
                                        "this call needs confirmation ({reason}) and the server began shutting down before it was answered; nothing was run. Propose it again once the server is back."
                                    ),
                                );
                                return Err(Refused::by_policy(Refusal::Declined, failure, policy, &tool));
                            }
                        };
                        timeline.lap(Stage::Confirm);
                        confirmed
                    }
                    None => false,
                };
                if !confirmed && confirmer.is_some_and(|c| c.handed_off()) {
                    let failure = Failure::new(
                        ErrorKind::Declined,
                        format!(
                            "this call needs confirmation ({reason}); the question was handed to the client and nothing was run yet: it runs when the call is sent again with the user's answer."
                        ),
                    );
                    return Err(Refused::by_policy(Refusal::Pending, failure, policy, &tool));
                }
                if !confirmed {
                    let failure = Failure::new(
                        ErrorKind::Declined,
                        format!(
                            "this call needs confirmation ({reason}) and the user did not confirm it; nothing was run. Ask the user before proposing it again."
                        ),
                    );
                    return Err(Refused::by_policy(Refusal::Declined, failure, policy, &tool));
                }
                (Authority::Confirmed, policy)
            }
        };
        Ok(Approved { tool, arguments: arguments.text, session, authority, policy, host_time })
    }

    /// schedule → execute → check output → render → audit.
    /// `sessions_per_tool` is the principal's quota of sessions of one tool.
    async fn run(
        &self,
        state: &State,
        mut flight: InFlight,
        approved: Approved,
        sessions_per_tool: usize,
        cancel: &CancellationToken,
    ) -> ToolResult {
        let Approved { tool, arguments, session, authority, policy, host_time } = approved;
        let settings = &tool.settings;
        // What is left of the deadline after the host's own checks. (A
        // session call keeps the tool's whole timeout: sessions apply it
        // themselves.)
        // Whole milliseconds, as deadlines are configured: a check that took
        // microseconds leaves the tool its whole `timeout_ms`.
        let host_ms = Duration::from_millis(u64::try_from(host_time.as_millis()).unwrap_or(u64::MAX));
        let limits = Limits { timeout: settings.limits.timeout.saturating_sub(host_ms), ..settings.limits };
        // Nothing with side effects runs unaudited: its record goes first.
        if settings.side_effect
            && let Err(refused) = self.write_ahead(state, &flight, &tool, authority, policy.as_ref(), session.as_ref())
        {
            return *refused;
        }
        let (execution, reset) = match (&session, settings.sessions) {
            _ if limits.timeout.is_zero() => {
                let failure = Failure::new(
                    ErrorKind::Timeout,
                    format!(
                        "the call's {} ms deadline passed before the tool could start (its arguments took that long \
                         to check); send smaller arguments",
                        settings.limits.timeout.as_millis()
                    ),
                );
                (sandbox::Execution::failed(failure, Instant::now()), None)
            }
            (Some(id), Some(session_settings)) => {
                let caller = Self::caller(state, &flight.request, Some(id));
                let call =
                    self.sessions.call(&tool, session_settings, sessions_per_tool, &caller, id, &arguments, cancel);
                let run = self.scheduler.run(settings.concurrency_safe, call).await;
                (run.execution, run.reset)
            }
            _ => {
                let caller = Self::caller(state, &flight.request, None);
                // The timeout names the tool's `timeout_ms`, not what the
                // host's checks left of it.
                let stated = settings.limits.timeout;
                let call = sandbox::call(&tool.pre, &limits, stated, &settings.grants, &caller, &arguments, cancel);
                (self.scheduler.run(settings.concurrency_safe, call).await, None)
            }
        };
        flight.timeline.lap_split(Stage::Schedule, Stage::Execute, execution.duration);
        let checked = match &execution.result {
            Ok(text) => {
                // The result is checked within what is left of the deadline.
                let left = limits.timeout.saturating_sub(execution.duration);
                let deadline = Deadline {
                    at: tokio::time::Instant::now() + left,
                    timeout_ms: settings.limits.timeout.as_millis(),
                    cancel,
                };
                check_output(&tool, text, deadline).await
            }
            Err(failure) => Err(failure.clone()),
        };
        if execution.result.is_ok() {
            flight.timeline.lap(Stage::Check);
        }
        // A session reset by a call that still produced a result (the
        // interpreter recovered from its memory cap) is said after it.
        let result = checked.map(|value| Success { value, note: reset });
        let presented = match (&settings.present_result, &result) {
            (Some(template), Ok(success)) => {
                let caller = Self::caller_value(state, &flight.request);
                let caps = state.config().cards;
                let scope = card::Scope { value: &success.value, caller: &caller };
                Some(template.render(scope, caps.max_presented_bytes, caps.max_value_bytes))
            }
            _ => None,
        };
        let result = ToolResult {
            stdout: execution.stdout,
            stderr: execution.stderr,
            duration: flight.started.elapsed(),
            fuel_used: execution.fuel_used,
            session: session.map(|id| id.as_str().to_owned()),
            presented,
            ..ToolResult::new(&flight.request.call_id, &flight.request.tool, CallOutcome::Ran { authority, result })
        };
        self.audit(state, flight, result, policy, Some(&*tool))
    }

    /// The write-ahead record of a call to a tool with side effects
    /// ([`Event::Started`]), durable as the log's durability says
    /// before the tool runs. When it cannot be written the call is refused
    /// and nothing runs: the refusal is audited nowhere (the log is
    /// failing) but counted in `airlock_audit_write_failures_total` and the
    /// call metrics. Without an audit log there is nothing to write.
    fn write_ahead(
        &self,
        state: &State,
        flight: &InFlight,
        tool: &LoadedTool,
        authority: Authority,
        policy: Option<&String>,
        session: Option<&SessionId>,
    ) -> Result<(), Box<ToolResult>> {
        let Some(log) = state.audit() else { return Ok(()) };
        let request = &flight.request;
        let entry = AuditEntry {
            call_id: request.call_id.clone(),
            principal: request.principal.clone(),
            tool: request.tool.clone(),
            session: session.map(|id| id.as_str().to_owned()),
            component_digest: Some(tool.digest.clone()),
            component_ref: tool.origin.as_ref().map(|o| o.reference.clone()),
            signer: tool.origin.as_ref().and_then(|o| o.signer.clone()),
            arguments: request.arguments.clone().into_audit(),
            event: Event::Started(authority),
            policy: policy.cloned(),
            duration_us: u64::try_from(flight.started.elapsed().as_micros()).unwrap_or(u64::MAX),
            fuel_used: None,
        };
        let Err(err) = log.append(&entry) else { return Ok(()) };
        self.telemetry.metrics.audit_failed();
        tracing::error!(
            path = %log.path().display(),
            tool = %tool.name,
            "cannot write the audit record of a call before it runs, so it was refused: {err}"
        );
        let failure = Failure::new(
            ErrorKind::Internal,
            "the host could not record this call in its audit log before running it, so it was not run and \
             nothing was changed; tell the operator (the audit log cannot be written) and try again later",
        );
        let result = ToolResult {
            duration: flight.started.elapsed(),
            session: entry.session,
            ..ToolResult::new(&request.call_id, &request.tool, CallOutcome::Ran { authority, result: Err(failure) })
        };
        self.telemetry.finish(&flight.timeline, &result, Some(tool), &request.principal, request.trace_parent.as_ref());
        Err(Box::new(result))
    }

    /// Who the call acts for, as the tool may read it: the request's
    /// principal (never an argument), the operator's facts about it, the
    /// call id and the session.
    fn caller(state: &State, request: &CallRequest, session: Option<&SessionId>) -> Arc<Caller> {
        Arc::new(Caller {
            principal: request.principal.clone(),
            facts: state.policy().principal_facts_as(&request.principal, &request.attributes),
            call_id: request.call_id.clone(),
            session: session.map(|id| id.as_str().to_owned()),
        })
    }

    /// The caller as templates read it (`caller.principal`,
    /// `caller.attributes.NAME`).
    fn caller_value(state: &State, request: &CallRequest) -> Value {
        let facts = state.policy().principal_facts_as(&request.principal, &request.attributes);
        card::caller_value(&request.principal, &facts.attributes)
    }

    fn finish_early(&self, state: &State, flight: InFlight, refused: Refused) -> ToolResult {
        let Refused { refusal, failure, policy, tool } = refused;
        let result = ToolResult {
            duration: flight.started.elapsed(),
            ..ToolResult::new(&flight.request.call_id, &flight.request.tool, CallOutcome::Refused { refusal, failure })
        };
        // A call refused before it was resolved (a quota) still counts
        // under its tool when there is one by that name.
        let registry = state.registry();
        let tool = tool.as_deref().or_else(|| registry.get(&flight.request.tool).map(|tool| &**tool));
        self.audit(state, flight, result, policy, tool)
    }

    /// Write the audit record before the result is returned, then report
    /// the call's metrics and spans. If the record cannot be written, the
    /// caller gets an error result instead of the tool's: an unaudited
    /// success is not handed out.
    fn audit(
        &self,
        state: &State,
        mut flight: InFlight,
        mut result: ToolResult,
        policy: Option<String>,
        tool: Option<&LoadedTool>,
    ) -> ToolResult {
        let Some(log) = state.audit() else {
            let request = &flight.request;
            self.telemetry.finish(&flight.timeline, &result, tool, &request.principal, request.trace_parent.as_ref());
            return result;
        };
        let request = flight.request;
        let entry = AuditEntry {
            call_id: request.call_id,
            principal: request.principal,
            tool: request.tool,
            session: result.session.clone(),
            component_digest: tool.map(|t| t.digest.clone()),
            component_ref: tool.and_then(|t| t.origin.as_ref()).map(|o| o.reference.clone()),
            signer: tool.and_then(|t| t.origin.as_ref()).and_then(|o| o.signer.clone()),
            arguments: request.arguments.into_audit(),
            event: Event::Finished(result.outcome.without_value()),
            policy,
            duration_us: u64::try_from(result.duration.as_micros()).unwrap_or(u64::MAX),
            fuel_used: result.fuel_used,
        };
        let written = log.append(&entry);
        flight.timeline.lap(Stage::Audit);
        if let Err(err) = written {
            self.telemetry.metrics.audit_failed();
            tracing::error!(path = %log.path().display(), "cannot write the audit record: {err}");
            let failure = Failure::new(
                ErrorKind::Internal,
                "the host could not record this call in its audit log, so its result is withheld; tell the operator",
            );
            result.outcome.withhold(failure);
        }
        self.telemetry.finish(&flight.timeline, &result, tool, &entry.principal, request.trace_parent.as_ref());
        result
    }

    /// A call received now.
    fn receive(&self, mut request: CallRequest) -> InFlight {
        let principal_end = request.principal.floor_char_boundary(MAX_PRINCIPAL_LEN);
        request.principal.truncate(principal_end);
        let call_id_end = request.call_id.floor_char_boundary(MAX_CALL_ID_LEN);
        request.call_id.truncate(call_id_end);
        let timeline = self.telemetry.timeline();
        InFlight { started: timeline.started(), timeline, request, _gauge: self.telemetry.metrics.call_started() }
    }
}

#[cfg(test)]
mod tests {
    use airlock_core::timeline::Stage;

    /// The stages as `Stage::ALL` lists them, joined as the docs write them.
    fn chain() -> String {
        Stage::ALL.iter().map(|stage| stage.as_str()).collect::<Vec<_>>().join(" → ")
    }

    #[test]
    fn the_stage_table_follows_the_code() {
        let doc = include_str!("../../ARCHITECTURE.md");
        let section = doc.split("## The call pipeline").nth(1).expect("the pipeline section");
        let section = section.split("\n## ").next().unwrap_or(section);
        let table: Vec<(usize, String)> = section
            .lines()
            .filter_map(|line| {
                let cells: Vec<&str> = line.split('|').map(str::trim).collect();
                Some((cells.get(1)?.parse().ok()?, (*cells.get(2)?).to_owned()))
            })
            .collect();
        let expected: Vec<(usize, String)> =
            Stage::ALL.iter().enumerate().map(|(i, stage)| (i + 1, stage.as_str().to_owned())).collect();
        assert_eq!(table, expected, "ARCHITECTURE.md's stage table and Stage::ALL disagree");
    }

    #[test]
    fn the_module_docs_list_the_stages_in_order() {
        for (file, text) in [("pipeline.rs", include_str!("pipeline.rs")), ("lib.rs", include_str!("lib.rs"))] {
            assert!(text.contains(&format!("//! {}\n", chain())), "{file} does not list the stages as Stage::ALL does");
        }
    }
}
