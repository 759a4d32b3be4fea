//! Authorize: the operator's policy decides outside the tool, from the
//! call's principal, the attributes authenticated with it, the tool's facts
//! and the arguments (`airlock_policy::authorize`): allow, deny, or ask the
//! user (the confirm stage). A principal the policy denies whatever the
//! arguments is refused before they are parsed ([`Pipeline::deny_early`]),
//! so such a call costs the host no validation. The host consumes the
//! session argument of a tool that keeps sessions here, before the policy
//! sees the arguments: the policy and the tool see the others.

use super::confirm::Question;
use super::{Call, Pipeline, Stop};
use crate::session;
use airlock_core::outcome::{Authority, Blame, ErrorKind, Failure, Refusal, Retry};
use airlock_core::timeline::Stage;
use airlock_policy::authorize::{ToolFacts, Verdict};

impl Pipeline {
    /// Refuse the call when the policy denies its principal this tool
    /// whatever the arguments.
    pub(super) fn deny_early(&self, call: &mut Call<'_>) -> Result<(), Stop> {
        let tool = call.tool()?;
        let facts = ToolFacts { name: &tool.name, side_effect: tool.pipeline.side_effect };
        let request = &call.request;
        let Some(Verdict::Deny { reason, policy }) =
            call.state.policy().deny_whatever_the_arguments(&request.principal, &request.attributes, &facts)
        else {
            return Ok(());
        };
        call.timeline.lap(Stage::Authorize);
        call.policy = policy;
        // Denied whatever the arguments: only the operator's policy can let
        // the call through.
        Err(Stop::Refused(Refusal::Denied, denied(&reason).blame(Blame::Operator).retry(Retry::No)))
    }

    /// What the policy decides about the call with the arguments the tool
    /// would get (the session id taken out): `Ok(None)` when it may run,
    /// the question to ask when the policy asks.
    pub(super) fn authorize(&self, call: &mut Call<'_>) -> Result<Option<Question>, Stop> {
        let tool = call.tool()?;
        call.session = session::split(&tool, &mut call.arguments).map_err(Stop::not_reached)?;
        let facts = ToolFacts { name: &tool.name, side_effect: tool.pipeline.side_effect };
        let request = &call.request;
        let verdict =
            call.state.policy().decide_as(&request.principal, &request.attributes, &facts, &call.arguments.value);
        call.timeline.lap(Stage::Authorize);
        match verdict {
            Verdict::Allow { policy } => {
                call.policy = policy;
                call.authority = Some(Authority::Allowed);
                Ok(None)
            }
            Verdict::Deny { reason, policy } => {
                call.policy = policy;
                Err(Stop::Refused(Refusal::Denied, denied(&reason)))
            }
            Verdict::Ask { reason, policy, approver } => {
                call.policy = policy;
                Ok(Some(Question { reason, approver }))
            }
        }
    }
}

/// What the caller reads about a call the policy denied, saying why.
fn denied(reason: &str) -> Failure {
    Failure::new(ErrorKind::Denied, format!("{reason}. This call is not allowed."))
}
