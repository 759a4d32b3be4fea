//! Confirm: a call the policy asks about runs only when the user confirms
//! it. The question, with the tool's card (`[tools.NAME] confirm`, rendered
//! from the arguments and the caller), goes to the front end's confirmer;
//! without one nobody can be asked and the call is declined. A question
//! handed to the client (a fleet's signed `requestState`) leaves the call
//! pending; a server that begins shutting down declines the calls still
//! waiting, since no answer can arrive once its listener is closed. Time
//! spent waiting does not count against the tool's deadline.

use super::{Call, Pipeline, Stop};
use crate::approval::{Approval, NewApproval, Opening};
use airlock_core::outcome::{Authority, Blame, ErrorKind, Failure, Refusal, Retry};
use airlock_core::timeline::Stage;
use airlock_policy::audit::ApprovalNote;
use airlock_policy::card;
use airlock_policy::confirm::{ApprovalMode, Approver, ConfirmRequest, PageApproval, PageOutcome};

/// What the user is asked about, as the policy asks it (the call and its
/// arguments are in the [`Call`]).
pub(super) struct Question {
    /// Why the policy asks.
    pub(super) reason: String,
    /// Who must approve (the policy's `@approver`, else the tool's
    /// `approver`); `None`: the caller.
    pub(super) approver: Option<Approver>,
}

impl Pipeline {
    /// Ask the question: on Airlock's approval page when the mode in force
    /// says so (and a page is served, for `page-when-possible`), else to
    /// the call's confirmer. `Ok` when the call may run: it runs confirmed,
    /// under the approval it used, if any.
    pub(super) async fn confirm(&self, call: &mut Call<'_>, mut question: Question) -> Result<(), Stop> {
        let tool = call.tool()?;
        let card = tool.pipeline.confirm.as_ref().map(|template| {
            let caller = call.caller_value();
            let caps = call.state.config().cards;
            let scope = card::Scope { value: &call.arguments.value, caller: &caller };
            template.render(scope, caps.max_card_bytes, caps.max_value_bytes)
        });
        // The tool's own mode and approver come before the host's; the
        // policy's `@approver`, which can depend on the arguments, before
        // the tool's.
        if question.approver.is_none() {
            question.approver = tool.pipeline.approver.clone();
        }
        let mode = tool.pipeline.approvals.unwrap_or(call.state.config().approvals.mode);
        let on_page = match mode {
            ApprovalMode::Client => false,
            ApprovalMode::Page => true,
            ApprovalMode::PageWhenPossible => self.approvals.page().is_some(),
        };
        if on_page || question.approver.is_some() {
            let approval = self.approve_on_page(call, question, card).await?;
            call.approval = approval.answer.as_ref().map(|answer| ApprovalNote {
                id: approval.id.clone(),
                by: answer.by.clone(),
                how: "page",
                proof: answer.proof.as_str(),
                credential: answer.credential.clone(),
                at_ms: answer.at_ms,
                revision: approval.revision.clone(),
            });
        } else {
            self.confirm_by(call, question, card).await?;
        }
        call.authority = Some(Authority::Confirmed);
        Ok(())
    }

    /// The question on Airlock's page: open (or find) the approval of this
    /// call, then use it if it is approved (`Ok` with it), or let the front
    /// end send the person to it, or hand the model its link.
    async fn approve_on_page(
        &self,
        call: &mut Call<'_>,
        question: Question,
        card: Option<String>,
    ) -> Result<Approval, Stop> {
        let tool = call.tool()?;
        let Question { reason, approver } = question;
        let refuse = |refusal, failure| Err(Stop::Refused(refusal, failure));
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
        let request = &call.request;
        let arguments = &call.arguments.value;
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
        let opened = self.approvals.open(new, &call.state.config().approvals).await;
        let approval = match opened {
            Ok(Opening { approval, withdrawn }) => {
                if let Some(withdrawn) = withdrawn {
                    self.audit_withdrawn(call, &withdrawn);
                }
                approval
            }
            Err(failure) => return refuse(Refusal::Pending, failure),
        };
        let who = approver_for_model(&approval.approver, &approval.principal);
        match &approval.answer {
            Some(answer) if answer.approved => return self.use_approval(&approval).await,
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
        let outcome = match call.confirmer {
            Some(confirmer) => {
                let approvals = self.approvals.clone();
                let id = approval.id.clone();
                let waiting = call.cancel.child_token();
                let closing = self.confirmations_closed.clone();
                let answered = Box::pin(async move {
                    tokio::select! {
                        answer = approvals.answered(&id, &waiting) => matches!(answer, Ok(Some(a)) if a.approved),
                        () = closing.cancelled() => false,
                    }
                });
                call.timeline.mark();
                let _pending = self.telemetry.metrics.confirmation_pending();
                let page = PageApproval { link: &link, id: &approval.id, answered };
                let outcome = confirmer.approve_on_page(ask, page).await;
                call.timeline.lap(Stage::Confirm);
                outcome
            }
            None => PageOutcome::NotShown,
        };
        match outcome {
            PageOutcome::Answered(true) => self.use_approval(&approval).await,
            PageOutcome::Answered(false) => refuse(
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
            PageOutcome::NotShown => {
                let ask = match approval.approver {
                    Approver::Caller => "ask them to open it and approve the call there".to_owned(),
                    _ => format!("ask them to pass it to {who}, who approves the call there"),
                };
                let minutes = call.state.config().approvals.link_ttl.as_secs().div_ceil(60);
                refuse(
                    Refusal::Pending,
                    Failure::new(
                        ErrorKind::ApprovalRequired,
                        format!(
                            "this call needs the approval of {who} on Airlock's approval page ({reason}); nothing \
                             was run. Show the user this link and {ask}: {link}\nThe approval runs this same call, \
                             with the same arguments, once, if it is made again within {minutes} minutes."
                        ),
                    ),
                )
            }
        }
    }

    /// Run the call under `approval`, once: another call of the same
    /// principal, revision and arguments may have used it first.
    async fn use_approval(&self, approval: &Approval) -> Result<Approval, Stop> {
        let declined = |failure| Err(Stop::Refused(Refusal::Declined, failure));
        match self.approvals.take(&approval.id).await {
            Ok(Ok(used)) => Ok(used),
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

    /// Ask the call's confirmer the question; `Ok` when the user
    /// confirmed.
    async fn confirm_by(&self, call: &mut Call<'_>, question: Question, card: Option<String>) -> Result<(), Stop> {
        let tool = call.tool()?;
        let Question { reason, .. } = question;
        let refuse = |refusal, failure| Err(Stop::Refused(refusal, failure));
        let Some(confirmer) = call.confirmer.filter(|confirmer| confirmer.can_ask()) else {
            return refuse(Refusal::Declined, nobody_asked(&reason));
        };
        let ask = ConfirmRequest {
            principal: &call.request.principal,
            tool: &tool.name,
            arguments: &call.arguments.value,
            reason: &reason,
            card: card.as_deref(),
        };
        call.timeline.mark();
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
        call.timeline.lap(Stage::Confirm);
        if confirmed {
            return Ok(());
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

/// Who must approve, as the model reads it: the principal the call acts
/// for is the user it talks to (`local` on stdio names nobody the model
/// knows), anyone else by name.
fn approver_for_model(approver: &Approver, principal: &str) -> String {
    match approver {
        Approver::Caller => "the user (the person this call acts for)".to_owned(),
        other => other.describe(principal),
    }
}

/// Why a call nobody could be asked about was not run: the front end has
/// no way to put the question to a person (an MCP client without
/// elicitation). Asking again changes nothing, so the model is not told to
/// retry.
fn nobody_asked(reason: &str) -> Failure {
    Failure::new(
        ErrorKind::Declined,
        format!(
            "this call needs a person's confirmation ({reason}), and nobody could be asked: this client cannot show \
             Airlock's question (it does not support MCP elicitation); nothing was run. Tell the user: the operator \
             can have such calls approved on Airlock's approval page ([approvals] mode = \"page\")"
        ),
    )
    .blame(Blame::Operator)
    .retry(Retry::No)
}

/// Why a call the user did not confirm was not run.
fn not_confirmed(reason: &str) -> Failure {
    Failure::new(
        ErrorKind::Declined,
        format!("this call needs confirmation ({reason}) and the user did not confirm it; nothing was run"),
    )
}
