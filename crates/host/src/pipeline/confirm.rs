//! Confirm: a call the policy asks about runs only when the user confirms
//! it. The question, with the tool's card (`[tools.NAME] confirm`, rendered
//! from the arguments and the caller), goes to the front end's confirmer;
//! without one nobody can be asked and the call is declined. A question
//! handed to the client (a fleet's signed `requestState`) leaves the call
//! pending; a server that begins shutting down declines the calls still
//! waiting, since no answer can arrive once its listener is closed. Time
//! spent waiting does not count against the tool's deadline.

use super::{Pipeline, Refused, caller_value};
use crate::approval::{Approval, NewApproval};
use crate::state::State;
use airlock_core::call::CallRequest;
use airlock_core::outcome::{Blame, ErrorKind, Failure, Refusal, Retry};
use airlock_core::timeline::{Stage, Timeline};
use airlock_policy::card;
use airlock_policy::confirm::{ApprovalMode, Approver, ConfirmRequest, Confirmer, PageApproval, PageOutcome};
use airlock_runtime::loader::LoadedTool;
use serde_json::Value;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

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
    /// Who must approve (the policy's `@approver`, else the tool's
    /// `approver`); `None`: the caller.
    pub(super) approver: Option<Approver>,
}

/// How a confirmed call was confirmed.
pub(super) enum Confirmed {
    /// The front end's confirmer said yes (a client's elicitation, the
    /// terminal, a library callback).
    ByConfirmer,
    /// A person approved it on Airlock's page, and this call used the
    /// approval.
    OnPage(Box<Approval>),
}

impl Pipeline {
    /// Ask the question: on Airlock's approval page when the mode in force
    /// says so (and a page is served, for `page-when-possible`), else to
    /// `confirmer`. `Ok` with the asking policy, and how, when the call may
    /// run.
    pub(super) async fn confirm(
        &self,
        state: &State,
        mut question: Question<'_>,
        confirmer: Option<&dyn Confirmer>,
        timeline: &mut Timeline,
        cancel: &CancellationToken,
    ) -> Result<(Option<String>, Confirmed), Refused> {
        let card = question.tool.settings.confirm.as_ref().map(|template| {
            let caller = caller_value(state, question.request);
            let caps = state.config().cards;
            let scope = card::Scope { value: question.arguments, caller: &caller };
            template.render(scope, caps.max_card_bytes, caps.max_value_bytes)
        });
        // The tool's own mode and approver come before the host's; the
        // policy's `@approver`, which can depend on the arguments, before
        // the tool's.
        if question.approver.is_none() {
            question.approver = question.tool.settings.approver.clone();
        }
        let mode = question.tool.settings.approvals.unwrap_or(state.config().approvals.mode);
        let on_page = match mode {
            ApprovalMode::Client => false,
            ApprovalMode::Page => true,
            ApprovalMode::PageWhenPossible => self.approvals.page().is_some(),
        };
        if on_page || question.approver.is_some() {
            return self.approve_on_page(state, question, card, confirmer, timeline, cancel).await;
        }
        let policy = self.confirm_by(state, question, card, confirmer, timeline).await?;
        Ok((policy, Confirmed::ByConfirmer))
    }

    /// The question on Airlock's page: open (or find) the approval of this
    /// call, then use it if it is approved, or let the front end send the
    /// person to it, or hand the model its link.
    async fn approve_on_page(
        &self,
        state: &State,
        question: Question<'_>,
        card: Option<String>,
        confirmer: Option<&dyn Confirmer>,
        timeline: &mut Timeline,
        cancel: &CancellationToken,
    ) -> Result<(Option<String>, Confirmed), Refused> {
        let Question { request, tool, arguments, reason, policy, approver } = question;
        let refuse = |refusal, failure| Err(Refused::by_policy(refusal, failure, policy.clone(), tool));
        if self.approvals.page().is_none() {
            // Nobody can approve it until the operator serves the page.
            let failure = Failure::new(
                ErrorKind::Declined,
                format!(
                    "this call needs the approval of a person on Airlock's approval page ({reason}), and this \
                     server serves no such page; nothing was run. The operator can serve it with `airlock serve \
                     --http` or `[approvals] listen`"
                ),
            );
            return refuse(Refusal::Declined, failure.blame(Blame::Operator).retry(Retry::No));
        }
        // Without a card, the arguments as JSON, escaped as a card's values
        // are (JSON leaves bidirectional and invisible characters raw).
        let shown = card.clone().unwrap_or_else(|| {
            format!("{} with {}", tool.name, card::escape(&arguments.to_string(), card::DEFAULT_MAX_CARD_BYTES))
        });
        let new = NewApproval {
            principal: request.principal.clone(),
            tool: tool.name.clone(),
            revision: tool.revision.clone(),
            argument_digest: airlock_policy::audit::argument_digest(arguments),
            call_id: request.call_id.clone(),
            card: shown,
            reason: reason.clone(),
            approver: approver.clone().unwrap_or(Approver::Caller),
        };
        let opened = self.approvals.open(new, &state.config().approvals).await;
        let approval = match opened {
            Ok(approval) => approval,
            Err(failure) => return Err(Refused::by_policy(Refusal::Pending, failure, policy.clone(), tool)),
        };
        let who = approval.approver.describe(&approval.principal);
        match &approval.answer {
            Some(answer) if answer.approved => return self.use_approval(&approval, &policy, tool).await,
            Some(answer) => {
                let message = format!(
                    "this call needs approval ({reason}) and {} declined it on Airlock's approval page; nothing was run",
                    answer.by
                );
                return refuse(Refusal::Declined, Failure::new(ErrorKind::Declined, message));
            }
            None => {}
        }
        let Some(link) = self.approvals.link(&approval) else {
            // The page went away under the call (the server is stopping).
            let failure = Failure::new(ErrorKind::Declined, "the approval page stopped being served");
            return refuse(Refusal::Declined, failure.blame(Blame::Host).retry(Retry::Later));
        };
        let ask = ConfirmRequest {
            principal: &request.principal,
            tool: &tool.name,
            arguments,
            reason: &reason,
            card: card.as_deref(),
        };
        let outcome = match confirmer {
            Some(confirmer) => {
                let approvals = self.approvals.clone();
                let id = approval.id.clone();
                let waiting = cancel.child_token();
                let closing = self.confirmations_closed.clone();
                let answered = Box::pin(async move {
                    tokio::select! {
                        answer = approvals.answered(&id, &waiting) => matches!(answer, Ok(Some(a)) if a.approved),
                        () = closing.cancelled() => false,
                    }
                });
                timeline.mark();
                let _pending = self.telemetry.metrics.confirmation_pending();
                let page = PageApproval { link: &link, id: &approval.id, answered };
                let outcome = confirmer.approve_on_page(ask, page).await;
                timeline.lap(Stage::Confirm);
                outcome
            }
            None => PageOutcome::NotShown,
        };
        match outcome {
            PageOutcome::Answered(true) => self.use_approval(&approval, &policy, tool).await,
            PageOutcome::Answered(false) | PageOutcome::Refused => refuse(
                Refusal::Declined,
                Failure::new(
                    ErrorKind::Declined,
                    format!(
                        "this call needs the approval of {who} on Airlock's approval page ({reason}), and it was not \
                         given (declined, or the link lapsed); nothing was run"
                    ),
                ),
            ),
            PageOutcome::HandedOff => refuse(
                Refusal::Pending,
                Failure::new(
                    ErrorKind::ApprovalRequired,
                    format!(
                        "this call needs the approval of {who} ({reason}); the link was handed to the client and \
                         nothing was run yet. Link: {link}"
                    ),
                ),
            ),
            PageOutcome::NotShown => refuse(
                Refusal::Pending,
                Failure::new(
                    ErrorKind::ApprovalRequired,
                    format!(
                        "this call needs the approval of {who} ({reason}); nothing was run. Ask them to open {link} \
                         and approve it there: the approval runs the same call, with the same arguments, once, \
                         within {} minutes",
                        state.config().approvals.link_ttl.as_secs().div_ceil(60)
                    ),
                ),
            ),
        }
    }

    /// Run the call under `approval`, once: another call of the same
    /// principal, revision and arguments may have used it first.
    async fn use_approval(
        &self,
        approval: &Approval,
        policy: &Option<String>,
        tool: &Arc<LoadedTool>,
    ) -> Result<(Option<String>, Confirmed), Refused> {
        let declined = |failure| Err(Refused::by_policy(Refusal::Declined, failure, policy.clone(), tool));
        match self.approvals.take(&approval.id).await {
            Ok(Ok(used)) => Ok((policy.clone(), Confirmed::OnPage(Box::new(used)))),
            Ok(Err(_)) => declined(Failure::new(
                ErrorKind::Declined,
                "the approval of this call was used by an identical call already (an approval runs one call); \
                 nothing was run",
            )),
            Err(err) => {
                tracing::warn!("{err}");
                // The approval stays unused until the store is back.
                let failure = Failure::new(
                    ErrorKind::Declined,
                    "the shared store of approvals (Redis) cannot be reached, so the approval cannot be used; \
                     nothing was run",
                );
                declined(failure.blame(Blame::Host).retry(Retry::Later))
            }
        }
    }

    /// Ask `confirmer` the question; `Ok` with the asking policy when the
    /// user confirmed.
    async fn confirm_by(
        &self,
        state: &State,
        question: Question<'_>,
        card: Option<String>,
        confirmer: Option<&dyn Confirmer>,
        timeline: &mut Timeline,
    ) -> Result<Option<String>, Refused> {
        let Question { request, tool, arguments, reason, policy, .. } = question;
        let refuse = |refusal, failure| Err(Refused::by_policy(refusal, failure, policy.clone(), tool));
        let Some(confirmer) = confirmer else {
            return refuse(Refusal::Declined, not_confirmed(&reason));
        };
        let _ = state;
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
                let failure = Failure::new(
                    ErrorKind::Declined,
                    format!(
                        "this call needs confirmation ({reason}) and the server began shutting down before it was \
                         answered; nothing was run"
                    ),
                );
                return refuse(Refusal::Declined, failure.blame(Blame::Host).retry(Retry::Later));
            }
        };
        timeline.lap(Stage::Confirm);
        if confirmed {
            return Ok(policy);
        }
        if confirmer.handed_off() {
            return refuse(
                Refusal::Pending,
                Failure::new(
                    ErrorKind::Declined,
                    format!(
                        "this call needs confirmation ({reason}); the question was handed to the client, and \
                         nothing was run yet"
                    ),
                ),
            );
        }
        refuse(Refusal::Declined, not_confirmed(&reason))
    }
}

/// Why a call the user did not confirm was not run.
fn not_confirmed(reason: &str) -> Failure {
    Failure::new(
        ErrorKind::Declined,
        format!("this call needs confirmation ({reason}) and the user did not confirm it; nothing was run"),
    )
}
