//! Audit: every call leaves a record in the audit log before its result is
//! returned (`airlock_policy::audit`), and its metrics and spans are
//! reported then. A call to a tool with side effects leaves two: a
//! `started` record before it runs ([`Pipeline::write_ahead`]; if that
//! cannot be written the call is refused and nothing runs) and its outcome.
//! When the outcome record cannot be written, the caller gets an error
//! instead of the tool's result: an unaudited success is not handed out.

use super::{InFlight, Pipeline};
use crate::session::SessionId;
use crate::state::State;
use airlock_core::call::ToolResult;
use airlock_core::outcome::{Authority, Blame, CallOutcome, ErrorKind, Failure};
use airlock_core::timeline::Stage;
use airlock_policy::audit::{AuditEntry, Event};
use airlock_runtime::loader::LoadedTool;

impl Pipeline {
    /// The write-ahead record of a call to a tool with side effects
    /// ([`Event::Started`]), durable as the log's durability says
    /// before the tool runs. When it cannot be written the call is refused
    /// and nothing runs: the refusal is audited nowhere (the log is
    /// failing) but counted in `airlock_audit_write_failures_total` and the
    /// call metrics. Without an audit log there is nothing to write.
    pub(super) fn write_ahead(
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
            revision: Some(tool.revision.clone()),
            arguments: request.arguments.clone().into_audit(),
            event: Event::Started(authority),
            policy: policy.cloned(),
            approval: flight.approval.clone(),
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
            "the host could not record this call in its audit log before running it (the audit log cannot be \
             written), so it was not run and nothing was changed",
        )
        .blame(Blame::Operator);
        let result = ToolResult {
            duration: flight.started.elapsed(),
            session: entry.session,
            ..ToolResult::new(&request.call_id, &request.tool, CallOutcome::Ran { authority, result: Err(failure) })
        };
        self.telemetry.finish(&flight.timeline, &result, Some(tool), &request.principal, request.trace_parent.as_ref());
        Err(Box::new(result))
    }

    /// Write the audit record before the result is returned, then report
    /// the call's metrics and spans. If the record cannot be written, the
    /// caller gets an error result instead of the tool's: an unaudited
    /// success is not handed out.
    pub(super) fn audit(
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
            revision: tool.map(|t| t.revision.clone()),
            arguments: request.arguments.into_audit(),
            event: Event::Finished(result.outcome.without_value()),
            policy,
            approval: flight.approval.take(),
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
                "the host could not record this call in its audit log, so its result is withheld",
            )
            .blame(Blame::Operator);
            result.outcome.withhold(failure);
        }
        self.telemetry.finish(&flight.timeline, &result, tool, &entry.principal, request.trace_parent.as_ref());
        result
    }
}
