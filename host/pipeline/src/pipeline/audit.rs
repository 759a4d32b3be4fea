//! Audit: every call leaves a record in the audit log before its result is
//! returned (`airlock_policy::audit`), and its metrics and spans are
//! reported then. A call to a tool with side effects leaves two: a
//! `started` record before it runs ([`Pipeline::write_ahead`], which the
//! schedule stage writes; if that cannot be written the call is refused
//! and nothing runs) and its outcome. When the outcome record cannot be
//! written, the caller gets an error instead of the tool's result: an
//! unaudited success is not handed out.
//!
//! This is the last stage: it consumes the call's context and turns it,
//! with what the stages before produced (a [`Success`] or the [`Stop`]
//! that ended the call), into the [`ToolResult`].

use super::{Call, Pipeline, Stop};
use crate::approval::{Approval, withdrawal_reason};
use airlock_core::call::ToolResult;
use airlock_core::content::Block;
use airlock_core::outcome::{Authority, Blame, CallOutcome, ErrorKind, Failure, Refusal, Success};
use airlock_core::timeline::Stage;
use airlock_policy::audit::{AuditEntry, Event, WithdrawnApproval};
use airlock_runtime::loader::LoadedTool;

impl Pipeline {
    /// Record `withdrawn`, a pending approval withdrawn to make room for
    /// this call's (the fair share of `[approvals] max_pending`): an
    /// `approval_withdrawn` record and a line in the log. A record that
    /// cannot be written is logged: nothing runs under a withdrawn
    /// approval, so nothing waits on it.
    pub(super) fn audit_withdrawn(&self, call: &Call<'_>, withdrawn: &Approval) {
        let reason = withdrawal_reason(call.state.config().approvals.max_pending);
        tracing::info!(approval = %withdrawn.id, principal = %withdrawn.principal, tool = %withdrawn.tool, "{reason}");
        let Some(log) = call.state.audit() else { return };
        let record = WithdrawnApproval {
            approval_id: withdrawn.id.clone(),
            tool: withdrawn.tool.clone(),
            principal: withdrawn.principal.clone(),
            reason,
        };
        if let Err(err) = log.append_approval_withdrawn(&record) {
            self.telemetry.metrics.audit_failed();
            tracing::error!(path = %log.path().display(), approval = %withdrawn.id, "cannot write the approval_withdrawn audit record: {err}");
        }
    }

    /// The write-ahead record of a call to a tool with side effects
    /// ([`Event::Started`]), durable as the log's durability says before
    /// the tool runs. When it cannot be written the call stops
    /// ([`Stop::Unrecorded`]) and nothing runs: the refusal is audited
    /// nowhere (the log is failing) but counted in
    /// `airlock_audit_write_failures_total` and the call metrics. Without
    /// an audit log there is nothing to write.
    pub(super) fn write_ahead(&self, call: &Call<'_>, tool: &LoadedTool, authority: Authority) -> Result<(), Stop> {
        let Some(log) = call.state.audit() else { return Ok(()) };
        let request = &call.request;
        let entry = AuditEntry {
            call_id: request.call_id.clone(),
            principal: request.principal.clone(),
            tool: request.tool.clone(),
            session: call.session.as_ref().map(|id| id.as_str().to_owned()),
            task: request.task.clone(),
            component_digest: Some(tool.digest.clone()),
            component_ref: tool.origin.as_ref().map(|o| o.reference.clone()),
            signer: tool.origin.as_ref().and_then(|o| o.signer.clone()),
            revision: Some(tool.revision.clone()),
            arguments: request.arguments.clone().into_audit(),
            event: Event::Started(authority),
            policy: call.policy.clone(),
            approval: call.approval.clone(),
            duration_us: u64::try_from(call.started.elapsed().as_micros()).unwrap_or(u64::MAX),
            fuel_used: None,
            content: Vec::new(),
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
        Err(Stop::Unrecorded(failure))
    }

    /// The call's result from what the stages produced, its audit record
    /// written before it is returned, then its metrics and spans. If the
    /// record cannot be written, the caller gets an error result instead of
    /// the tool's: an unaudited success is not handed out.
    pub(super) fn audit(&self, mut call: Call<'_>, result: Result<Success, Stop>) -> ToolResult {
        let (outcome, recorded) = match (result, call.authority) {
            (Err(Stop::Refused(refusal, failure)), _) => (CallOutcome::Refused { refusal, failure }, true),
            (Ok(success), Some(authority)) => (CallOutcome::Ran { authority, result: Ok(success) }, true),
            (Err(Stop::Failed(failure)), Some(authority)) => {
                (CallOutcome::Ran { authority, result: Err(failure) }, true)
            }
            (Err(Stop::Unrecorded(failure)), Some(authority)) => {
                (CallOutcome::Ran { authority, result: Err(failure) }, false)
            }
            // What nothing authorized is not handed out, whatever it is. The
            // stages stop a call before its authorization with a refusal,
            // so this only keeps the record true if one ever did not.
            (Ok(_) | Err(Stop::Failed(_) | Stop::Unrecorded(_)), None) => {
                let failure = Failure::new(
                    ErrorKind::Internal,
                    "the host lost track of what authorized this call, so nothing it produced is handed out",
                );
                (CallOutcome::Refused { refusal: Refusal::NotReached, failure }, true)
            }
        };
        // A refused call ran in no session.
        let session = match &outcome {
            CallOutcome::Ran { .. } => call.session.as_ref().map(|id| id.as_str().to_owned()),
            CallOutcome::Refused { .. } => None,
        };
        let mut result = ToolResult {
            stdout: std::mem::take(&mut call.stdout),
            stderr: std::mem::take(&mut call.stderr),
            duration: call.started.elapsed(),
            fuel_used: call.fuel_used,
            session,
            presented: call.presented.take(),
            ..ToolResult::new(&call.request.call_id, &call.request.tool, outcome)
        };
        // A call refused before it was resolved (a quota) still counts
        // under its tool when there is one by that name.
        let registry = call.state.registry();
        let tool = call
            .tool
            .as_deref()
            .or_else(|| registry.get(&call.request.tool).map(|tool| &**tool))
            .map(|tool| &tool.loaded);
        let Some(log) = call.state.audit().filter(|_| recorded) else {
            let request = &call.request;
            self.telemetry.finish(&call.timeline, &result, tool, &request.principal, request.trace_parent.as_ref());
            return result;
        };
        let request = call.request;
        let entry = AuditEntry {
            call_id: request.call_id,
            principal: request.principal,
            tool: request.tool,
            session: result.session.clone(),
            task: request.task,
            component_digest: tool.map(|t| t.digest.clone()),
            component_ref: tool.and_then(|t| t.origin.as_ref()).map(|o| o.reference.clone()),
            signer: tool.and_then(|t| t.origin.as_ref()).and_then(|o| o.signer.clone()),
            revision: tool.map(|t| t.revision.clone()),
            arguments: request.arguments.into_audit(),
            event: Event::Finished(result.outcome.without_value()),
            policy: call.policy.take(),
            approval: call.approval.take(),
            duration_us: u64::try_from(result.duration.as_micros()).unwrap_or(u64::MAX),
            fuel_used: result.fuel_used,
            // Each block's kind, media type, size and digest; never its bytes.
            content: result
                .result()
                .map_or_else(|_| Vec::new(), |success| success.blocks.iter().map(Block::summary).collect()),
        };
        let written = log.append(&entry);
        call.timeline.lap(Stage::Audit);
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
        self.telemetry.finish(&call.timeline, &result, tool, &entry.principal, request.trace_parent.as_ref());
        result
    }
}
