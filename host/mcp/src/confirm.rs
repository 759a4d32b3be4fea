//! Confirmation of "ask" decisions through the MCP client.
//!
//! On the `initialize`-based revisions the server sends `elicitation/create`
//! ([`ElicitConfirmer`]). On 2026-07-28 the server may not send requests:
//! the call answers with an "input required" result carrying the same
//! elicitation, and finishes when the client retries it with the user's
//! answer ([`Confirmations`]).
//!
//! Trusts nothing from the client: an answer only counts as confirmation
//! when it is an `accept` whose `allow` field is `true`; anything else
//! (decline, cancel, malformed, missing, late) declines. A `requestState`
//! is a random handle to a call waiting here; it is only honoured for the
//! principal, tool and arguments it was issued for, only once, and only
//! until the confirmer gives up after [`CONFIRM_TIMEOUT`]. The number of
//! waiting calls is capped by `[http] max_pending_confirmations`.
//! Arguments shown
//! to the user are JSON-encoded (control characters escaped) and cut at
//! [`MAX_CONFIRM_ARGUMENT_BYTES`].
//!
//! While an `elicitation/create` is unanswered, a call that came with a
//! `progressToken` gets `notifications/progress` every
//! [`CONFIRM_PROGRESS_INTERVAL`]: a client's request timeout would otherwise
//! fire long before a person answers (clients that reset the timeout on
//! progress, e.g. the TypeScript SDK's `resetTimeoutOnProgress`, keep waiting).

use super::CONFIRM_TIMEOUT;
use super::cancel::watching;
use airlock_core::call::{CallRequest, ToolResult};
use airlock_core::text::cap;
use airlock_pipeline::Host;
use airlock_policy::confirm::{ConfirmRequest, Confirmer, PageApproval, PageOutcome};
use futures::future::BoxFuture;
use rmcp::model::{
    CustomNotification, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema,
    InputRequest, InputResponses, JsonObject, ProgressNotificationParam, ProgressToken, ServerNotification,
};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// How often a call waiting for the user's confirmation reports progress
/// (to clients that sent a `progressToken`), so that their request timeouts
/// do not fire while the user reads the question.
pub const CONFIRM_PROGRESS_INTERVAL: Duration = Duration::from_secs(2);
/// Arguments shown in a confirmation message are cut at this many bytes.
pub const MAX_CONFIRM_ARGUMENT_BYTES: usize = 2048;
/// The key of the confirmation in `inputRequests` / `inputResponses`.
pub const CONFIRM_KEY: &str = "confirm";
/// The key of the approval page's URL-mode elicitation in `inputRequests`.
pub const APPROVAL_KEY: &str = "approval";
/// The boolean field of the confirmation form.
const ALLOW_FIELD: &str = "allow";
/// How a `requestState` that stands for an approval on Airlock's page
/// starts: a retry with one runs the call again, which finds the
/// approval by its principal, tool revision and arguments (the state
/// itself names nothing to trust).
const PAGE_STATE_PREFIX: &str = "approval.";
/// The notification that tells a 2025-11-25 client a URL-mode elicitation
/// is complete.
const ELICITATION_COMPLETE: &str = "notifications/elicitation/complete";

/// What the person reads beside the link.
pub fn page_message(request: &ConfirmRequest<'_>) -> String {
    let reason = request.reason.trim().trim_end_matches('.');
    format!(
        "{} wants to call {}: {reason}. Open the link to review it on Airlock's approval page and approve or decline \
         it there.",
        request.principal, request.tool
    )
}

/// The URL-mode elicitation that sends a person to the page of the
/// approval `page`, with an `elicitationId` of its own
/// ([`elicitation_id`]). (rmcp writes the id on every revision; 2026-07-28,
/// which has none, ignores it, and an id is better there than `""`.)
pub fn url_request(message: String, page: &PageApproval<'_>) -> (ElicitRequestParams, String) {
    let id = elicitation_id(page.id);
    let params = ElicitRequestParams::UrlElicitationParams {
        meta: None,
        message,
        url: page.link.to_owned(),
        elicitation_id: id.clone(),
    };
    (params, id)
}

/// A new elicitation's id: the approval's id and 128 random bits, so that
/// each elicitation of the same approval (a call made again asks again)
/// has its own, as 2025-11-25 requires.
fn elicitation_id(approval: &str) -> String {
    format!("{approval}.{}", uuid::Uuid::new_v4().simple())
}

/// The question put to the user, e.g. `alice wants to call create_transfer
/// with {"amount":20000,"to":"bob"}: transfers above 10,000 need
/// confirmation. Allow?`. A tool with a confirmation card shows the card
/// (already escaped and capped) in place of the arguments: `Transfer 20000
/// to bob\n\nalice wants to call create_transfer: transfers above 10,000
/// need confirmation. Allow?`.
pub fn message(request: &ConfirmRequest<'_>) -> String {
    let reason = request.reason.trim().trim_end_matches('.');
    if let Some(card) = request.card {
        return format!("{card}\n\n{} wants to call {}: {reason}. Allow?", request.principal, request.tool);
    }
    let arguments = request.arguments.to_string();
    let arguments = cap(&arguments, MAX_CONFIRM_ARGUMENT_BYTES);
    format!("{} wants to call {} with {arguments}: {reason}. Allow?", request.principal, request.tool)
}

/// The form: one required boolean, `allow`, defaulting to `false`.
pub fn form(message: String) -> ElicitRequestParams {
    let schema = json!({
        "type": "object",
        "properties": {
            ALLOW_FIELD: {
                "type": "boolean",
                "title": "Allow this call",
                "description": "Run the tool now with the arguments shown.",
                "default": false,
            }
        },
        "required": [ALLOW_FIELD],
    });
    let requested_schema: ElicitationSchema = match serde_json::from_value(schema) {
        Ok(schema) => schema,
        // The literal above is tested; failing here is a bug in this crate.
        Err(err) => unreachable!("the confirmation schema is invalid: {err}"),
    };
    ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema }
}

/// Whether an elicitation result confirms the call.
pub fn accepted(result: &ElicitResult) -> bool {
    result.action == ElicitationAction::Accept
        && result.content.as_ref().and_then(|c| c.get(ALLOW_FIELD)) == Some(&Value::Bool(true))
}

/// Whether the `inputResponses` of a retried call confirm it.
pub fn accepted_responses(responses: Option<&InputResponses>) -> bool {
    responses
        .and_then(|r| r.get(CONFIRM_KEY))
        .and_then(|value| serde_json::from_value::<ElicitResult>(value.clone()).ok())
        .is_some_and(|result| accepted(&result))
}

/// Asks with `elicitation/create` (the `initialize`-based revisions).
pub struct ElicitConfirmer {
    /// The client of the session the call came from.
    pub peer: Peer<RoleServer>,
    /// Whether the client can answer a form elicitation (the client-mode
    /// confirmation).
    pub form: bool,
    /// Whether the client declared URL-mode elicitation: it can send the
    /// person to Airlock's approval page.
    pub url: bool,
    /// The call's cancellation: a cancelled call stops waiting and declines.
    pub cancel: CancellationToken,
    /// The call's `progressToken`, when the client sent one: progress is
    /// reported while the user has not answered.
    pub progress: Option<ProgressToken>,
}

impl ElicitConfirmer {
    /// Tell the client the call is still alive (it waits for the user), so
    /// that a client resetting its request timeout on progress keeps waiting.
    async fn still_waiting(&self, token: &ProgressToken, count: u32) {
        let note = ProgressNotificationParam::new(token.clone(), f64::from(count))
            .with_message("waiting for the user to confirm this call");
        if let Err(err) = self.peer.notify_progress(note).await {
            tracing::debug!("cannot send a progress notification: {err}");
        }
    }
}

impl ElicitConfirmer {
    /// Wait for `answered` while telling the client the call is alive.
    async fn wait_for_page(&self, answered: BoxFuture<'_, bool>) -> bool {
        tokio::pin!(answered);
        let mut ticks = tokio::time::interval(CONFIRM_PROGRESS_INTERVAL);
        let mut count = 0u32;
        loop {
            tokio::select! {
                answer = &mut answered => return answer,
                () = self.cancel.cancelled() => return false,
                _ = ticks.tick(), if self.progress.is_some() => {
                    if let Some(token) = &self.progress {
                        count = count.saturating_add(1);
                        self.still_waiting(token, count).await;
                    }
                }
            }
        }
    }
}

impl Confirmer for ElicitConfirmer {
    fn approve_on_page<'a>(
        &'a self,
        request: ConfirmRequest<'a>,
        page: PageApproval<'a>,
    ) -> BoxFuture<'a, PageOutcome> {
        if !self.url {
            return Box::pin(async { PageOutcome::NotShown });
        }
        let (params, id) = url_request(page_message(&request), &page);
        Box::pin(async move {
            // The client shows the link and says whether the person went
            // there; only the page says what they decided.
            let opened = self.peer.create_elicitation_with_timeout(params, Some(CONFIRM_TIMEOUT)).await;
            match opened {
                Ok(result) if result.action == ElicitationAction::Accept => {}
                // Declined, cancelled (a client that cannot open a link,
                // Claude Code in `-p`, cancels) or never shown: the result
                // carries the link for the model to relay, once.
                Ok(result) => {
                    tracing::debug!(action = ?result.action, "the client did not open the approval link");
                    return PageOutcome::NotShown;
                }
                Err(err) => {
                    tracing::info!("the approval link could not be shown, the result carries it: {err}");
                    return PageOutcome::NotShown;
                }
            }
            let approved = self.wait_for_page(page.answered).await;
            let done = CustomNotification::new(ELICITATION_COMPLETE, Some(json!({"elicitationId": id})));
            if let Err(err) = self.peer.send_notification(ServerNotification::CustomNotification(done)).await {
                tracing::debug!("cannot send {ELICITATION_COMPLETE}: {err}");
            }
            PageOutcome::Answered(approved)
        })
    }

    fn can_ask(&self) -> bool {
        self.form
    }

    fn confirm<'a>(&'a self, request: ConfirmRequest<'a>) -> BoxFuture<'a, bool> {
        if !self.form {
            return Box::pin(async { false });
        }
        let params = form(message(&request));
        Box::pin(async move {
            let answer = self.peer.create_elicitation_with_timeout(params, Some(CONFIRM_TIMEOUT));
            tokio::pin!(answer);
            // The first tick is immediate: the client hears at once that the
            // call waits for the user, then every interval until the answer.
            let mut ticks = tokio::time::interval(CONFIRM_PROGRESS_INTERVAL);
            let mut count = 0u32;
            loop {
                tokio::select! {
                    answer = &mut answer => return match answer {
                        Ok(result) => accepted(&result),
                        Err(err) => {
                            tracing::info!("confirmation request failed, the call is declined: {err}");
                            false
                        }
                    },
                    () = self.cancel.cancelled() => return false,
                    _ = ticks.tick(), if self.progress.is_some() => {
                        if let Some(token) = &self.progress {
                            count = count.saturating_add(1);
                            self.still_waiting(token, count).await;
                        }
                    }
                }
            }
        })
    }
}

/// Who a waiting call belongs to: a retry must match all of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Owner {
    /// The principal of the call.
    pub principal: String,
    /// The tool name as requested.
    pub tool: String,
    /// The arguments as requested.
    pub arguments: Option<JsonObject>,
    /// The revision of the tool in force when the call was made (`None`:
    /// no such tool). A retry after a reload that changed the tool finds
    /// another one, and is refused ([`Resumed::Changed`]).
    pub revision: Option<String>,
}

/// A call waiting for the user's answer.
struct Slot {
    owner: Owner,
    answer: oneshot::Sender<bool>,
    result: oneshot::Receiver<ToolResult>,
    cancel: CancellationToken,
}

/// Calls waiting for a confirmation answer (2026-07-28), by `requestState`.
pub struct Confirmations {
    slots: Mutex<HashMap<String, Slot>>,
    /// Most calls waiting at once (`[http] max_pending_confirmations`).
    max: usize,
}

/// How the first round of a call ended.
pub enum Started {
    /// The call finished (no confirmation was needed, or it was declined).
    Done(Box<ToolResult>),
    /// The call waits for a person on Airlock's approval page: show them
    /// `elicitation` (URL mode) and retry with `state`, which runs the
    /// call again.
    AskOnPage {
        /// The `requestState` to hand out ([`PAGE_STATE_PREFIX`]).
        state: String,
        /// The URL-mode elicitation to put in `inputRequests`.
        elicitation: Box<InputRequest>,
    },
    /// The call waits: answer `elicitation` and retry with `state`.
    Ask {
        /// The `requestState` to hand out.
        state: String,
        /// The elicitation to put in `inputRequests`.
        elicitation: Box<InputRequest>,
    },
    /// The pipeline task died (a bug): no result.
    Lost,
}

/// How a retried call ended.
pub enum Resumed {
    /// The call finished.
    Done(Box<ToolResult>),
    /// No call waits under that state for this principal (never issued,
    /// already used, expired, or someone else's).
    Unknown,
    /// The state belongs to a different tool or different arguments.
    Mismatch,
    /// The tool changed since the state was issued (a reload put another
    /// revision of it in force): what was confirmed is not what would run,
    /// so nothing ran and the call must be made again.
    Changed,
    /// The pipeline task died (a bug): no result.
    Lost,
    /// The fleet's shared store could not say whether the state was used
    /// (why, in words): nothing was run.
    Unavailable(String),
}

/// What a 2026-07-28 call hands its request handler.
enum Question {
    /// A question for the client's form, and where to send the answer.
    Form(String, oneshot::Sender<bool>),
    /// A link to Airlock's approval page: the client sends the person
    /// there and calls again; nothing waits here.
    Page(Box<InputRequest>, String),
}

/// The confirmer of a 2026-07-28 call: hands the question to the request
/// handler once, then waits for the answer.
struct AskOnce {
    ask: Mutex<Option<oneshot::Sender<Question>>>,
    /// Whether the client can answer a form elicitation.
    form: bool,
    /// Whether the client declared URL-mode elicitation.
    url: bool,
    cancel: CancellationToken,
}

/// The `inputRequests` entry and `requestState` that send a 2026-07-28
/// client's person to the page, if the client can. The retry finds the
/// approval by its call, not by the state; a retry with this state is
/// never handed the link again (see [`is_page_retry`]).
pub fn page_handoff(request: &ConfirmRequest<'_>, page: &PageApproval<'_>) -> (Box<InputRequest>, String) {
    let (params, _) = url_request(page_message(request), page);
    (Box::new(InputRequest::Elicitation(ElicitRequest::new(params))), format!("{PAGE_STATE_PREFIX}{}", page.id))
}

/// Whether a 2026-07-28 call is the retry of one whose client was handed
/// the page's link ([`page_handoff`]). Whatever it answered (`accept`, or
/// `cancel` from a client that cannot open a link), that round is not
/// repeated: if the approval is still pending, the call's result carries
/// the link for the model to show, so that a client retrying at once does
/// not loop on the same input request.
pub fn is_page_retry(request_state: Option<&str>) -> bool {
    request_state.is_some_and(|state| state.starts_with(PAGE_STATE_PREFIX))
}

impl Confirmer for AskOnce {
    fn approve_on_page<'a>(
        &'a self,
        request: ConfirmRequest<'a>,
        page: PageApproval<'a>,
    ) -> BoxFuture<'a, PageOutcome> {
        let ask = if self.url { self.ask.lock().unwrap_or_else(|e| e.into_inner()).take() } else { None };
        let Some(ask) = ask else { return Box::pin(async { PageOutcome::NotShown }) };
        let (elicitation, state) = page_handoff(&request, &page);
        let handed = ask.send(Question::Page(elicitation, state)).is_ok();
        Box::pin(async move { if handed { PageOutcome::HandedOff } else { PageOutcome::NotShown } })
    }

    fn can_ask(&self) -> bool {
        self.form
    }

    fn confirm<'a>(&'a self, request: ConfirmRequest<'a>) -> BoxFuture<'a, bool> {
        let question = message(&request);
        let ask = if self.form { self.ask.lock().unwrap_or_else(|e| e.into_inner()).take() } else { None };
        Box::pin(async move {
            let Some(ask) = ask else { return false };
            let (answer_tx, answer_rx) = oneshot::channel();
            if ask.send(Question::Form(question, answer_tx)).is_err() {
                return false;
            }
            tokio::select! {
                answer = tokio::time::timeout(CONFIRM_TIMEOUT, answer_rx) => matches!(answer, Ok(Ok(true))),
                () = self.cancel.cancelled() => false,
            }
        })
    }
}

impl Confirmations {
    /// No call waiting yet; at most `max` at once (`[http]
    /// max_pending_confirmations`).
    pub fn new(max: usize) -> Self {
        Confirmations { slots: Mutex::new(HashMap::new()), max }
    }

    /// Run `request`. If the policy asks and `can_elicit`, the call is
    /// parked and [`Started::Ask`] returned; without `can_elicit`, ask
    /// means declined. A call to approve on Airlock's page is not parked:
    /// with `can_open_url` the client gets [`Started::AskOnPage`] and calls
    /// again; without, the result carries the link. `cancel` cancels the
    /// call while this round runs.
    pub async fn start(
        self: &Arc<Self>,
        host: Host,
        request: CallRequest,
        owner: Owner,
        (can_elicit, can_open_url): (bool, bool),
        cancel: &[CancellationToken],
    ) -> Started {
        let state = uuid::Uuid::new_v4().simple().to_string();
        let run_cancel = CancellationToken::new();
        let (ask_tx, mut ask_rx) = oneshot::channel();
        let (result_tx, mut result_rx) = oneshot::channel();
        let confirmer = AskOnce {
            ask: Mutex::new((can_elicit || can_open_url).then_some(ask_tx)),
            form: can_elicit,
            url: can_open_url,
            cancel: run_cancel.clone(),
        };
        let this = Arc::clone(self);
        let (task_state, task_cancel) = (state.clone(), run_cancel.clone());
        tokio::spawn(async move {
            let result = host.call_cancellable(request, Some(&confirmer), &task_cancel).await;
            let _ = result_tx.send(result);
            // Nobody retried in time: drop the parked slot.
            this.slots.lock().unwrap_or_else(|e| e.into_inner()).remove(&task_state);
        });
        // The question is sent before the call can finish: looked at first,
        // it is never missed for a result that was ready as well (a link
        // handed off ends the call at once).
        let answered = async {
            tokio::select! {
                biased;
                asked = &mut ask_rx => {
                    let (question, answer) = match asked {
                        Ok(Question::Form(question, answer)) if can_elicit => (question, answer),
                        // The page's link: the call ends pending (its audit
                        // record is written as it finishes) and the client
                        // calls again.
                        Ok(Question::Page(elicitation, state)) => return Started::AskOnPage { state, elicitation },
                        // The confirmer was dropped without asking, or asked
                        // what this client cannot answer: the call is finishing.
                        _ => return result_rx.await.map_or(Started::Lost, |r| Started::Done(Box::new(r))),
                    };
                    if let Err(result_rx) = self.park(&state, owner, answer, result_rx, run_cancel.clone()) {
                        // No room: the call was declined and is finishing.
                        return result_rx.await.map_or(Started::Lost, |r| Started::Done(Box::new(r)));
                    }
                    let elicitation = Box::new(InputRequest::Elicitation(ElicitRequest::new(form(question))));
                    Started::Ask { state, elicitation }
                }
                result = &mut result_rx => result.map_or(Started::Lost, |r| Started::Done(Box::new(r))),
            }
        };
        watching(&run_cancel, cancel).run(answered).await
    }

    /// Park a call under `state`. With `[http] max_pending_confirmations`
    /// calls already waiting, the call is declined and its result handed
    /// back.
    fn park(
        &self,
        state: &str,
        owner: Owner,
        answer: oneshot::Sender<bool>,
        result: oneshot::Receiver<ToolResult>,
        cancel: CancellationToken,
    ) -> Result<(), oneshot::Receiver<ToolResult>> {
        let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
        // Calls whose confirmer gave up (timeout, cancellation) are gone.
        slots.retain(|_, slot| !slot.answer.is_closed());
        if slots.len() >= self.max {
            tracing::warn!(
                "{} calls already wait for confirmation ([http] max_pending_confirmations); this one is declined",
                self.max
            );
            let _ = answer.send(false);
            return Err(result);
        }
        slots.insert(state.to_owned(), Slot { owner, answer, result, cancel });
        Ok(())
    }

    /// Finish a parked call with the user's answer from `responses`.
    /// `cancel` cancels the call while this round runs.
    pub async fn resume(
        &self,
        state: &str,
        owner: &Owner,
        responses: Option<&InputResponses>,
        cancel: &[CancellationToken],
    ) -> Resumed {
        let slot = {
            let mut slots = self.slots.lock().unwrap_or_else(|e| e.into_inner());
            match slots.get(state) {
                // Someone else's state reads as unknown, and stays usable by its owner.
                None => return Resumed::Unknown,
                Some(slot) if slot.owner.principal != owner.principal => return Resumed::Unknown,
                Some(slot) if slot.owner.tool != owner.tool || slot.owner.arguments != owner.arguments => {
                    return Resumed::Mismatch;
                }
                Some(slot) if slot.owner.revision != owner.revision => {
                    // The parked call would run the tool it was asked
                    // about, which is no longer the one served: it is
                    // cancelled, and the state used up.
                    if let Some(slot) = slots.remove(state) {
                        slot.cancel.cancel();
                    }
                    return Resumed::Changed;
                }
                Some(_) => match slots.remove(state) {
                    Some(slot) => slot,
                    None => return Resumed::Unknown,
                },
            }
        };
        let _ = slot.answer.send(accepted_responses(responses));
        let result = watching(&slot.cancel, cancel).run(slot.result).await;
        result.map_or(Resumed::Lost, |r| Resumed::Done(Box::new(r)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_confirmations_are_capped_at_the_configured_count() {
        let confirmations = Confirmations::new(2);
        let owner = Owner { principal: "alice".into(), tool: "t".into(), arguments: None, revision: None };
        let mut answers = Vec::new();
        let mut park = |state: &str| {
            let (answer, answered) = oneshot::channel();
            let (_result, result) = oneshot::channel();
            answers.push(answered);
            confirmations.park(state, owner.clone(), answer, result, CancellationToken::new()).is_ok()
        };
        assert!(park("a") && park("b"), "two calls wait: the cap");
        assert!(!park("c"), "a third is declined");
        let declined = answers.pop().unwrap();
        assert_eq!(declined.blocking_recv(), Ok(false), "the declined call is told so");
    }

    #[tokio::test]
    async fn a_retry_after_the_tool_changed_is_refused_and_the_parked_call_cancelled() {
        let confirmations = Confirmations::new(2);
        let before = Owner {
            principal: "alice".into(),
            tool: "t".into(),
            arguments: None,
            revision: Some(format!("sha256:{}", "ab".repeat(32))),
        };
        let (answer, _answered) = oneshot::channel();
        let (_result, result) = oneshot::channel();
        let parked = CancellationToken::new();
        assert!(confirmations.park("s", before.clone(), answer, result, parked.clone()).is_ok());
        let after = Owner { revision: Some(format!("sha256:{}", "cd".repeat(32))), ..before };
        assert!(matches!(confirmations.resume("s", &after, None, &[]).await, Resumed::Changed));
        assert!(parked.is_cancelled(), "the call asked about does not run");
        assert!(matches!(confirmations.resume("s", &after, None, &[]).await, Resumed::Unknown), "used up");
    }

    #[test]
    fn the_form_is_a_valid_elicitation_schema() {
        let ElicitRequestParams::FormElicitationParams { requested_schema, .. } = form("ok?".into()) else {
            panic!("not a form")
        };
        let value = serde_json::to_value(requested_schema).unwrap();
        assert_eq!(value["properties"]["allow"]["type"], "boolean");
        assert_eq!(value["required"], json!(["allow"]));
    }

    #[test]
    fn only_accept_with_allow_true_confirms() {
        let check = |value: Value, expect: bool| {
            let mut responses = InputResponses::new();
            responses.insert(CONFIRM_KEY.into(), value.clone());
            assert_eq!(accepted_responses(Some(&responses)), expect, "{value}");
        };
        check(json!({"action": "accept", "content": {"allow": true}}), true);
        check(json!({"action": "accept", "content": {"allow": false}}), false);
        check(json!({"action": "accept", "content": {"allow": "true"}}), false);
        check(json!({"action": "accept"}), false);
        check(json!({"action": "decline", "content": {"allow": true}}), false);
        check(json!({"action": "cancel"}), false);
        check(json!("yes"), false);
        assert!(!accepted_responses(None));
    }

    #[test]
    fn the_message_names_who_what_and_why_and_caps_arguments() {
        let arguments = json!({"to": "bob", "amount": 20000, "memo": "x".repeat(10_000)});
        let request = ConfirmRequest {
            principal: "alice",
            tool: "create_transfer",
            arguments: &arguments,
            reason: "transfers above 10,000 need confirmation.",
            card: None,
        };
        let text = message(&request);
        assert!(text.starts_with("alice wants to call create_transfer with {"), "{text}");
        assert!(text.ends_with(": transfers above 10,000 need confirmation. Allow?"), "{text}");
        assert!(text.len() < MAX_CONFIRM_ARGUMENT_BYTES + 200);
        let card = ConfirmRequest { card: Some("Transfer 20000 to bob"), ..request };
        assert_eq!(
            message(&card),
            "Transfer 20000 to bob\n\nalice wants to call create_transfer: transfers above 10,000 need confirmation. Allow?"
        );
    }
}
