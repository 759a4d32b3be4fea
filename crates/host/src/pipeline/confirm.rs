//! Confirm: a call the policy asks about runs only when the user confirms
//! it. The question, with the tool's card (`[tools.NAME] confirm`, rendered
//! from the arguments and the caller), goes to the front end's confirmer;
//! without one nobody can be asked and the call is declined. A question
//! handed to the client (a fleet's signed `requestState`) leaves the call
//! pending; a server that begins shutting down declines the calls still
//! waiting, since no answer can arrive once its listener is closed. Time
//! spent waiting does not count against the tool's deadline.

use super::{Pipeline, Refused, caller_value};
use crate::state::State;
use airlock_core::call::CallRequest;
use airlock_core::outcome::{ErrorKind, Failure, Refusal};
use airlock_core::timeline::{Stage, Timeline};
use airlock_policy::card;
use airlock_policy::confirm::{ConfirmRequest, Confirmer};
use airlock_runtime::loader::LoadedTool;
use serde_json::Value;
use std::sync::Arc;

/// What the user is asked about.
pub(super) struct Question<'a> {
    /// The call.
    pub(super) request: &'a CallRequest,
    /// Its tool.
    pub(super) tool: &'a Arc<LoadedTool>,
    /// The arguments the tool would get.
    pub(super) arguments: &'a Value,
    /// Why the policy asks.
    pub(super) reason: String,
    /// The policy that asks.
    pub(super) policy: Option<String>,
}

impl Pipeline {
    /// Ask `confirmer` the question; `Ok` with the asking policy when the
    /// user confirmed.
    pub(super) async fn confirm(
        &self,
        state: &State,
        question: Question<'_>,
        confirmer: Option<&dyn Confirmer>,
        timeline: &mut Timeline,
    ) -> Result<Option<String>, Refused> {
        let Question { request, tool, arguments, reason, policy } = question;
        let refuse = |refusal, message: String| {
            Err(Refused::by_policy(refusal, Failure::new(ErrorKind::Declined, message), policy.clone(), tool))
        };
        let Some(confirmer) = confirmer else {
            return refuse(Refusal::Declined, not_confirmed(&reason));
        };
        let card = tool.settings.confirm.as_ref().map(|template| {
            let caller = caller_value(state, request);
            let caps = state.config().cards;
            let scope = card::Scope { value: arguments, caller: &caller };
            template.render(scope, caps.max_card_bytes, caps.max_value_bytes)
        });
        let ask = ConfirmRequest {
            principal: &request.principal,
            tool: &tool.name,
            arguments,
            reason: &reason,
            card: card.as_deref(),
        };
        timeline.mark();
        let _pending = self.telemetry.metrics.confirmation_pending();
        let confirmed = tokio::select! {
            confirmed = confirmer.confirm(ask) => confirmed,
            () = self.confirmations_closed.cancelled() => {
                return refuse(
                    Refusal::Declined,
                    format!(
                        "this call needs confirmation ({reason}) and the server began shutting down before it was answered; nothing was run. Propose it again once the server is back."
                    ),
                );
            }
        };
        timeline.lap(Stage::Confirm);
        if confirmed {
            return Ok(policy);
        }
        if confirmer.handed_off() {
            return refuse(
                Refusal::Pending,
                format!(
                    "this call needs confirmation ({reason}); the question was handed to the client and nothing was run yet: it runs when the call is sent again with the user's answer."
                ),
            );
        }
        refuse(Refusal::Declined, not_confirmed(&reason))
    }
}

/// Why a call the user did not confirm was not run.
fn not_confirmed(reason: &str) -> String {
    format!(
        "this call needs confirmation ({reason}) and the user did not confirm it; nothing was run. Ask the user before proposing it again."
    )
}
