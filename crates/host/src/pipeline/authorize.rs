//! Authorize: the operator's policy decides outside the tool, from the
//! call's principal, the attributes authenticated with it, the tool's facts
//! and the arguments (`airlock_policy::authorize`): allow, deny, or ask the
//! user (the confirm stage). A principal the policy denies whatever the
//! arguments is refused before they are parsed ([`deny_early`]), so such a
//! call costs the host no validation.

use super::Refused;
use crate::state::State;
use airlock_core::call::CallRequest;
use airlock_core::outcome::{Blame, ErrorKind, Failure, Refusal, Retry};
use airlock_policy::authorize::{ToolFacts, Verdict};
use airlock_runtime::loader::LoadedTool;
use serde_json::Value;
use std::sync::Arc;

/// A call the policy let through, or asked about.
pub(super) enum Authorized {
    /// Allowed under `policy`.
    Allowed {
        /// The policy that allowed it, if one did.
        policy: Option<String>,
    },
    /// To run only if the user confirms it.
    Ask {
        /// Why the policy asks.
        reason: String,
        /// The policy that asks.
        policy: Option<String>,
        /// Who must approve (the policy's `@approver`); `None`: the caller.
        approver: Option<airlock_policy::confirm::Approver>,
    },
}

/// The call refused when the policy denies its principal this tool
/// whatever the arguments.
pub(super) fn deny_early(state: &State, request: &CallRequest, tool: &Arc<LoadedTool>) -> Result<(), Refused> {
    let facts = ToolFacts { name: &tool.name, side_effect: tool.settings.side_effect };
    match state.policy().deny_whatever_the_arguments(&request.principal, &request.attributes, &facts) {
        Some(Verdict::Deny { reason, policy }) => {
            let mut refused = denied(&reason, policy, tool);
            // Denied whatever the arguments: only the operator's policy can
            // let the call through.
            refused.failure = refused.failure.blame(Blame::Operator).retry(Retry::No);
            Err(refused)
        }
        _ => Ok(()),
    }
}

/// What the policy decides about the call with `arguments` (the ones the
/// tool would get).
pub(super) fn authorize(
    state: &State,
    request: &CallRequest,
    tool: &Arc<LoadedTool>,
    arguments: &Value,
) -> Result<Authorized, Refused> {
    let facts = ToolFacts { name: &tool.name, side_effect: tool.settings.side_effect };
    match state.policy().decide_as(&request.principal, &request.attributes, &facts, arguments) {
        Verdict::Allow { policy } => Ok(Authorized::Allowed { policy }),
        Verdict::Deny { reason, policy } => Err(denied(&reason, policy, tool)),
        Verdict::Ask { reason, policy, approver } => Ok(Authorized::Ask { reason, policy, approver }),
    }
}

/// A call the policy denied, saying why.
fn denied(reason: &str, policy: Option<String>, tool: &Arc<LoadedTool>) -> Refused {
    let failure = Failure::new(ErrorKind::Denied, format!("{reason}. This call is not allowed."));
    Refused::by_policy(Refusal::Denied, failure, policy, tool)
}
