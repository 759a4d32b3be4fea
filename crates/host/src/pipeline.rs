//! The call pipeline, its stages in order (`Stage::ALL`):
//!
//! admit → resolve → parse → validate → authorize → confirm → schedule → execute → check → audit
//!
//! Every front end goes through [`Pipeline::call`] / [`Pipeline::dispatch`].
//! Each stage is a module of this one, named after it and declared in that
//! order; this module only sequences them. Any failure in any stage becomes
//! an ordinary [`ToolResult`] whose outcome is a [`Failure`] with a kind:
//! nothing a model, client or guest sends makes this return a Rust error or
//! panic, and every call leaves one audit record before its result is
//! returned (two for a tool with side effects: `audit.rs`). The outcome
//! stays a value here: front ends render it at their edge
//! (`airlock_core::render`).

mod admit;
mod resolve;
mod parse;
pub(crate) mod validate;
mod authorize;
mod confirm;
mod schedule;
mod execute;
mod check;
mod audit;

pub(crate) use schedule::Scheduler;

use crate::metrics::InFlightGuard;
use crate::observe::Telemetry;
use crate::quota::QuotaTracker;
use crate::reservation::{self, Purpose};
use crate::session::{self, SessionId, Sessions};
use crate::state::State;
use crate::tool::Tool;
use airlock_core::call::{CallRequest, MAX_CALL_ID_LEN, MAX_PRINCIPAL_LEN, ToolResult};
use airlock_core::caller::Caller;
use airlock_core::outcome::{Authority, CallOutcome, Failure, Refusal, Success};
use airlock_core::timeline::{Stage, Timeline};
use airlock_policy::card;
use airlock_policy::confirm::Confirmer;
use airlock_runtime::memory_budget::MemoryBudget;
use authorize::Authorized;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use validate::Deadline;

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
    /// The host memory budget every call reserves from before it runs
    /// (the engine's; `reservation.rs`).
    pub memory: MemoryBudget,
    /// Metrics and spans of finished calls.
    pub(crate) telemetry: Telemetry,
    /// Approvals on Airlock's page, for the host's life.
    pub approvals: Arc<crate::approval::Approvals>,
    /// Cancelled when shutdown begins: a call waiting for its confirmation
    /// is declined then, since no answer can arrive once the listener is
    /// closed (it would otherwise hold the shutdown for its whole grace).
    pub confirmations_closed: CancellationToken,
}

/// A call that passed resolve, parse, validate and authorize.
struct Approved {
    tool: Arc<Tool>,
    arguments: String,
    session: Option<SessionId>,
    authority: Authority,
    policy: Option<String>,
    /// Host time spent on the call before it was authorized (parsing and
    /// validating the arguments); it counts against the tool's deadline.
    /// Waiting for a confirmation does not.
    host_time: Duration,
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
    tool: Option<Arc<Tool>>,
}

impl Refused {
    /// Refused before the policy was consulted.
    fn not_reached(failure: Failure, tool: Option<Arc<Tool>>) -> Self {
        Refused { refusal: Refusal::NotReached, failure, policy: None, tool }
    }

    /// Refused by the policy (`refusal` says how) under `policy`.
    fn by_policy(refusal: Refusal, failure: Failure, policy: Option<String>, tool: &Arc<Tool>) -> Self {
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
    /// The approval on Airlock's page the call runs under, for its audit
    /// records.
    approval: Option<airlock_policy::audit::ApprovalNote>,
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
        let (quota, admitted) = admit::admit(&self.quota, state, &flight.request.principal);
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
            let (quota, admitted) = admit::admit(&self.quota, state, &flight.request.principal);
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
        let InFlight { request, timeline, started, approval: approved_on_page, .. } = flight;
        let resolved = resolve::resolve(state.registry(), &request.tool);
        timeline.lap(Stage::Resolve);
        let tool = resolved.map_err(|failure| Refused::not_reached(failure, None))?;
        let denied = authorize::deny_early(state, request, &tool);
        if denied.is_err() {
            timeline.lap(Stage::Authorize);
        }
        denied?;
        let not_reached = |failure: Failure| Refused::not_reached(failure, Some(tool.clone()));
        let parsed = parse::parse(&tool, &request.arguments);
        timeline.lap(Stage::Parse);
        let mut arguments = parsed.map_err(not_reached)?;
        // The call's deadline starts at receipt: time spent checking the
        // arguments is taken from the time the tool gets. A call that runs
        // as a task has its tool's task deadline.
        let timeout = tool.limits_for(request.task.is_some()).timeout;
        let deadline = Deadline {
            at: tokio::time::Instant::from_std(*started) + timeout,
            timeout_ms: timeout.as_millis(),
            cancel,
        };
        // The check's validator memory is reserved while it runs.
        let reserved = reservation::reserve(
            &self.memory,
            &request.principal,
            tool.settings.limits.validation_memory_bytes as u64,
            Purpose::Arguments(&tool.name),
            (deadline.at, deadline.timeout_ms),
            cancel,
        )
        .await;
        let validated = match reserved {
            Ok(_checking) => validate::validate(&tool, &arguments.text, deadline).await,
            Err(failure) => Err(failure),
        };
        timeline.lap(Stage::Validate);
        validated.map_err(not_reached)?;
        let host_time = started.elapsed();
        // The host consumes `session_id` for tools that keep sessions; the
        // policy and the tool see the other arguments.
        let session = session::split(&tool, &mut arguments).map_err(not_reached)?;
        let authorized = authorize::authorize(state, request, &tool, &arguments.value);
        timeline.lap(Stage::Authorize);
        let (authority, policy) = match authorized? {
            Authorized::Allowed { policy } => (Authority::Allowed, policy),
            Authorized::Ask { reason, policy, approver } => {
                let question =
                    confirm::Question { request, tool: &tool, arguments: &arguments.value, reason, policy, approver };
                let (policy, how) = self.confirm(state, question, confirmer, timeline, cancel).await?;
                if let confirm::Confirmed::OnPage(approval) = how {
                    *approved_on_page = approval.answer.as_ref().map(|answer| airlock_policy::audit::ApprovalNote {
                        id: approval.id.clone(),
                        by: answer.by.clone(),
                        how: answer.how.as_str(),
                        at_ms: answer.at_ms,
                        revision: approval.revision.clone(),
                    });
                }
                (Authority::Confirmed, policy)
            }
        };
        Ok(Approved { tool, arguments: arguments.text, session, authority, policy, host_time })
    }

    /// schedule → execute → check → audit.
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
        let limits = tool.limits_for(flight.request.task.is_some());
        let time_left = execute::time_left(&limits, host_time);
        // What the call may make the host hold is reserved before anything
        // of it runs, and held until its result is checked.
        let reserving = Instant::now();
        let (_memory, time_left) =
            match self.reserve(&flight.request, &tool, session.is_some(), time_left, cancel).await {
                Ok(memory) => (memory, execute::after_wait(time_left, reserving.elapsed())),
                Err(failure) => {
                    let result = ToolResult {
                        duration: flight.started.elapsed(),
                        session: session.map(|id| id.as_str().to_owned()),
                        ..ToolResult::new(
                            &flight.request.call_id,
                            &flight.request.tool,
                            CallOutcome::Ran { authority, result: Err(failure) },
                        )
                    };
                    return self.audit(state, flight, result, policy, Some(&tool.loaded));
                }
            };
        // Nothing with side effects runs unaudited: its record goes first.
        if tool.pipeline.side_effect
            && let Err(refused) = self.write_ahead(state, &flight, &tool, authority, policy.as_ref(), session.as_ref())
        {
            return *refused;
        }
        let run = execute::Run {
            request: &flight.request,
            tool: &tool,
            arguments: &arguments,
            session: session.as_ref(),
            sessions_per_tool,
            limits,
            time_left,
        };
        let (execution, reset) = self.execute(state, run, cancel).await;
        flight.timeline.lap_split(Stage::Schedule, Stage::Execute, execution.duration);
        let checked = match &execution.result {
            Ok(text) => {
                // The result is checked within what is left of the deadline.
                let deadline = Deadline {
                    at: tokio::time::Instant::now() + time_left.saturating_sub(execution.duration),
                    timeout_ms: limits.timeout.as_millis(),
                    cancel,
                };
                check::check_output(&tool, text, deadline).await
            }
            Err(failure) => Err(failure.clone()),
        };
        if execution.result.is_ok() {
            flight.timeline.lap(Stage::Check);
        }
        // A session reset by a call that still produced a result (the
        // interpreter recovered from its memory cap) is said after it.
        // A refused content block is the call's failure, whatever the
        // tool returned; a failed call returns no blocks.
        let result = check::with_content(checked, execution.content).map(|(value, blocks)| Success {
            value,
            note: reset,
            blocks,
        });
        let presented = match (&tool.pipeline.present_result, &result) {
            (Some(template), Ok(success)) => {
                let caller = caller_value(state, &flight.request);
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
        self.audit(state, flight, result, policy, Some(&tool.loaded))
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

    /// A call refused before it ran, answered and audited.
    fn finish_early(&self, state: &State, flight: InFlight, refused: Refused) -> ToolResult {
        let Refused { refusal, failure, policy, tool } = refused;
        let result = ToolResult {
            duration: flight.started.elapsed(),
            ..ToolResult::new(&flight.request.call_id, &flight.request.tool, CallOutcome::Refused { refusal, failure })
        };
        // A call refused before it was resolved (a quota) still counts
        // under its tool when there is one by that name.
        let registry = state.registry();
        let tool =
            tool.as_deref().or_else(|| registry.get(&flight.request.tool).map(|tool| &**tool)).map(|tool| &tool.loaded);
        self.audit(state, flight, result, policy, tool)
    }

    /// A call received now.
    fn receive(&self, mut request: CallRequest) -> InFlight {
        let principal_end = request.principal.floor_char_boundary(MAX_PRINCIPAL_LEN);
        request.principal.truncate(principal_end);
        let call_id_end = request.call_id.floor_char_boundary(MAX_CALL_ID_LEN);
        request.call_id.truncate(call_id_end);
        let timeline = self.telemetry.timeline();
        InFlight {
            started: timeline.started(),
            timeline,
            request,
            _gauge: self.telemetry.metrics.call_started(),
            approval: None,
        }
    }
}

/// The caller as templates read it (`caller.principal`,
/// `caller.attributes.NAME`).
fn caller_value(state: &State, request: &CallRequest) -> Value {
    let facts = state.policy().principal_facts_as(&request.principal, &request.attributes);
    card::caller_value(&request.principal, &facts.attributes)
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
        let doc = include_str!("../../../ARCHITECTURE.md");
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
    fn each_stage_is_a_module_named_after_it_in_order() {
        let declared: Vec<&str> = include_str!("pipeline.rs")
            .lines()
            .filter_map(|line| line.strip_prefix("pub(crate) mod ").or_else(|| line.strip_prefix("mod ")))
            .filter_map(|line| line.strip_suffix(';'))
            .collect();
        let stages: Vec<&str> = Stage::ALL.iter().map(|stage| stage.as_str()).collect();
        assert_eq!(declared, stages, "pipeline.rs declares its stage modules as Stage::ALL lists the stages");
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/pipeline");
        for stage in stages {
            let file = dir.join(format!("{stage}.rs"));
            let text = std::fs::read_to_string(&file).unwrap_or_else(|err| panic!("{}: {err}", file.display()));
            let title = format!("//! {}{}:", stage[..1].to_uppercase(), &stage[1..]);
            assert!(text.starts_with(&title), "{} does not open with {title:?}", file.display());
        }
    }

    #[test]
    fn the_module_docs_list_the_stages_in_order() {
        for (file, text) in [("pipeline.rs", include_str!("pipeline.rs")), ("lib.rs", include_str!("lib.rs"))] {
            assert!(text.contains(&format!("//! {}\n", chain())), "{file} does not list the stages as Stage::ALL does");
        }
    }
}
