//! The call pipeline, its stages in order (`Stage::ALL`):
//!
//! admit → resolve → parse → validate → authorize → confirm → schedule → execute → check → audit
//!
//! Every front end goes through [`Pipeline::call`] / [`Pipeline::dispatch`].
//! Each stage is a module of this one, named after it and declared in that
//! order; this module only sequences them. The stages share one shape, as
//! pingora's phases do: each takes the pipeline and the call's one context,
//! [`Call`] (what it arrived with and what every stage before learned about
//! it), and returns `Result<Next, Stop>`, what the next stage needs or the
//! [`Stop`] that ends the call there. Any failure in any stage becomes
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
use crate::quota::{Admission, QuotaTracker};
use crate::session::{SessionId, Sessions};
use crate::state::State;
use crate::tool::Tool;
use airlock_core::arguments::Parsed;
use airlock_core::call::{CallRequest, Captured, MAX_CALL_ID_LEN, MAX_PRINCIPAL_LEN, ToolResult};
use airlock_core::caller::{Caller, PrincipalFacts};
use airlock_core::outcome::{Authority, ErrorKind, Failure, Refusal, Success};
use airlock_core::timeline::Timeline;
use airlock_policy::audit::ApprovalNote;
use airlock_policy::card;
use airlock_policy::confirm::Confirmer;
use airlock_runtime::memory_budget::{MemoryBudget, Reservation};
use airlock_settings::limits::Limits;
use schedule::Slot;
use serde_json::Value;
use std::sync::{Arc, OnceLock};
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

/// A call on its way through the pipeline: the one context every stage
/// takes. It holds what the call arrived with, and each stage fills in
/// what it learned for the stages after it (the field docs name the
/// stage); the audit stage consumes it and turns it into the
/// [`ToolResult`], so what a call holds (its admission, its memory, its
/// turn in the scheduler) is given back when its result is returned.
struct Call<'a> {
    /// The state in force when the call was received; it serves the call
    /// to its end.
    state: &'a State,
    /// The request, its principal and call id capped.
    request: CallRequest,
    /// When it was received.
    started: Instant,
    /// Each stage's start and length, for metrics and spans.
    timeline: Timeline,
    /// Who answers a confirmation, when anyone can.
    confirmer: Option<&'a dyn Confirmer>,
    /// The caller's cancellation.
    cancel: &'a CancellationToken,
    /// Counts the call in `airlock_calls_in_flight` until it is dropped.
    _gauge: InFlightGuard,
    /// Admit: the call's place under its principal's quotas, held until
    /// its result is returned.
    admission: Option<Admission<'a>>,
    /// Admit: the principal's quota of sessions of one tool.
    sessions_per_tool: usize,
    /// The principal's facts (its attributes, those of its token in
    /// front), looked up once, by the first stage that needs them.
    principal_facts: OnceLock<Arc<PrincipalFacts>>,
    /// Resolve: the tool.
    tool: Option<Arc<Tool>>,
    /// Parse: the arguments, without the session id once authorize took it
    /// out (empty before parse).
    arguments: Parsed,
    /// Validate: host time spent on the call before it was authorized
    /// (parsing and validating the arguments); it counts against the
    /// tool's deadline. Waiting for a confirmation does not.
    host_time: Duration,
    /// Authorize: the session the call runs in, for tools that keep them.
    session: Option<SessionId>,
    /// Authorize: the policy that decided, if one did.
    policy: Option<String>,
    /// Authorize or confirm: what let the call run; `None` until then.
    authority: Option<Authority>,
    /// Confirm: the approval on Airlock's page the call runs under, for
    /// its audit records.
    approval: Option<ApprovalNote>,
    /// Schedule: what the call may make the host hold, reserved from the
    /// host memory budget.
    memory: Option<Reservation>,
    /// Schedule: the call's turn to run, given back when the guest is done.
    slot: Option<Slot<'a>>,
    /// Schedule: what is left of the tool's deadline for the guest; after
    /// execute, what is left of it for the check.
    time_left: Duration,
    /// Execute: what the guest wrote to stdout.
    stdout: Captured,
    /// Execute: what the guest wrote to stderr.
    stderr: Captured,
    /// Execute: the fuel the guest used, if it ran.
    fuel_used: Option<u64>,
    /// Check: the operator's one-line presentation of the checked result.
    presented: Option<String>,
}

/// Why a call stops before it has a result: the one error of every stage,
/// carrying what its audit record needs beyond the [`Call`] itself.
enum Stop {
    /// Refused before it ran, as the [`Refusal`] says: before the policy
    /// was consulted (a quota, an unknown tool, invalid arguments), denied,
    /// declined or pending.
    Refused(Refusal, Failure),
    /// Stopped after it was authorized: no room for it, its guest failed or
    /// its result failed the check. Recorded as run under its authority.
    Failed(Failure),
    /// As [`Stop::Failed`], where the audit log cannot take the record: the
    /// write-ahead record of a tool with side effects could not be written,
    /// so nothing ran. The call is answered and counted, recorded nowhere.
    Unrecorded(Failure),
}

impl Stop {
    /// Refused before the policy was consulted.
    fn not_reached(failure: Failure) -> Self {
        Stop::Refused(Refusal::NotReached, failure)
    }
}

impl<'a> Call<'a> {
    /// The call's tool, found by the resolve stage. Only the stages after
    /// resolve ask for it, and resolve stops every call it finds no tool
    /// for; were a stage ever sequenced before it, the call would fail as
    /// a host fault rather than panic.
    fn tool(&self) -> Result<Arc<Tool>, Stop> {
        self.tool.clone().ok_or_else(|| {
            Stop::not_reached(Failure::new(
                ErrorKind::Internal,
                "the host lost track of the tool this call names; nothing was run",
            ))
        })
    }

    /// What let the call run, from the authorize or confirm stage. The
    /// stages that let it run ask for it, so that a call nothing
    /// authorized stops there rather than reaching the guest, were the
    /// stages ever sequenced otherwise.
    fn authority(&self) -> Result<Authority, Stop> {
        self.authority.ok_or_else(|| {
            Stop::not_reached(Failure::new(
                ErrorKind::Internal,
                "the host lost track of what authorized this call, so it was not run",
            ))
        })
    }

    /// The call's limits: its tool's, or, for a call that runs as an MCP
    /// task, with the tool's task deadline ([`Tool::limits_for`]).
    fn limits(&self, tool: &Tool) -> Limits {
        tool.limits_for(self.request.task.is_some())
    }

    /// The principal's facts, looked up in the policy the call was
    /// received under the first time a stage asks.
    fn principal_facts(&self) -> Arc<PrincipalFacts> {
        let request = &self.request;
        Arc::clone(
            self.principal_facts
                .get_or_init(|| self.state.policy().principal_facts_as(&request.principal, &request.attributes)),
        )
    }

    /// Who the call acts for, as the tool may read it: the request's
    /// principal (never an argument), the operator's facts about it, the
    /// call id and the session.
    fn caller(&self) -> Arc<Caller> {
        let request = &self.request;
        Arc::new(Caller {
            principal: request.principal.clone(),
            facts: self.principal_facts(),
            call_id: request.call_id.clone(),
            session: self.session.as_ref().map(|id| id.as_str().to_owned()),
        })
    }

    /// The caller as templates read it (`caller.principal`,
    /// `caller.attributes.NAME`).
    fn caller_value(&self) -> Value {
        card::caller_value(&self.request.principal, &self.principal_facts().attributes)
    }
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
        let mut call = self.receive(state, request, confirmer, cancel);
        let result = match self.approve(&mut call).await {
            Ok(()) => self.run(&mut call).await,
            Err(stop) => Err(stop),
        };
        self.audit(call, result)
    }

    /// Answer a call with `failure` without running any stage (the host is
    /// shutting down, say); it is audited and counted as any other.
    pub(crate) fn refuse(&self, state: &State, request: CallRequest, failure: Failure) -> ToolResult {
        let nobody_cancels = CancellationToken::new();
        let call = self.receive(state, request, None, &nobody_cancels);
        self.audit(call, Err(Stop::not_reached(failure)))
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
            let mut call = self.receive(state, request, confirmer, cancel);
            let verdict = self.approve(&mut call).await;
            approved.push((call, verdict));
        }
        let runs = approved.into_iter().map(|(mut call, verdict)| async move {
            let result = match verdict {
                Ok(()) => self.run(&mut call).await,
                Err(stop) => Err(stop),
            };
            self.audit(call, result)
        });
        futures::future::join_all(runs).await
    }

    /// admit → resolve → parse → validate → authorize (→ confirm): `Ok`
    /// once the call may run. A principal the policy denies the tool
    /// whatever the arguments is refused before they are parsed.
    async fn approve<'a>(&'a self, call: &mut Call<'a>) -> Result<(), Stop> {
        self.admit(call)?;
        self.resolve(call)?;
        self.deny_early(call)?;
        self.parse(call)?;
        self.validate(call).await?;
        if let Some(question) = self.authorize(call)? {
            self.confirm(call, question).await?;
        }
        Ok(())
    }

    /// schedule → execute → check: the result of an approved call.
    async fn run<'a>(&'a self, call: &mut Call<'a>) -> Result<Success, Stop> {
        self.schedule(call).await?;
        let returned = self.execute(call).await?;
        self.check(call, returned).await
    }

    /// A call received now, under `state`.
    fn receive<'a>(
        &self,
        state: &'a State,
        mut request: CallRequest,
        confirmer: Option<&'a dyn Confirmer>,
        cancel: &'a CancellationToken,
    ) -> Call<'a> {
        let principal_end = request.principal.floor_char_boundary(MAX_PRINCIPAL_LEN);
        request.principal.truncate(principal_end);
        let call_id_end = request.call_id.floor_char_boundary(MAX_CALL_ID_LEN);
        request.call_id.truncate(call_id_end);
        let timeline = self.telemetry.timeline();
        Call {
            state,
            started: timeline.started(),
            timeline,
            request,
            confirmer,
            cancel,
            _gauge: self.telemetry.metrics.call_started(),
            admission: None,
            sessions_per_tool: 0,
            principal_facts: OnceLock::new(),
            tool: None,
            arguments: Parsed { value: Value::Null, text: String::new() },
            host_time: Duration::ZERO,
            session: None,
            policy: None,
            authority: None,
            approval: None,
            memory: None,
            slot: None,
            time_left: Duration::ZERO,
            stdout: Captured::default(),
            stderr: Captured::default(),
            fuel_used: None,
            presented: None,
        }
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
