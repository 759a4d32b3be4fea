//! MCP tasks on the wire (the `io.modelcontextprotocol/tasks` extension of
//! revision 2026-07-28): a `tools/call` answered with a task handle
//! (`CreateTaskResult`) while the call runs on, `tasks/get` to read it
//! (the result inlined once it ended), `tasks/update` to answer its input
//! requests, and `tasks/cancel` to stop it.
//!
//! Which calls become tasks is the operator's choice per tool (`[tools.NAME]
//! task`), for a 2026-07-28 client that declared the extension on the
//! request (a client of an earlier revision that declares it gets what it
//! would without: the extension is not of its wire); a tool that needs it
//! (`"required"`) refuses other clients with `-32021`. A task is a call like any other: the pipeline runs it whole
//! (quotas, validation, authorization, confirmation, the memory budget,
//! the audit log, whose records name the task), under the tool's
//! `task_timeout_ms`; only the wait is the client's no more. A confirmation
//! the call needs goes through the same approval path as any call: the
//! task shows `input_required` with the question (the client's form, or
//! the link to Airlock's approval page) until `tasks/update` answers it.
//!
//! # What this module trusts and what it does not
//!
//! Trusted: the host (the pipeline decides the call; the store keeps the
//! task, `airlock_pipeline::transport::tasks`). Not trusted: task ids (checked for shape,
//! then compared; a task of another principal reads as unknown, `-32602`,
//! so ids cannot be probed), and answers (each is read only as "accepted",
//! "accepted and allowed" or not, and only for a request still
//! outstanding). A task survives its client going away: nothing of the
//! request that created it (its connection, its cancellation) reaches the
//! running call; only `tasks/cancel` and the host's shutdown stop it.

use super::CONFIRM_TIMEOUT;
use super::confirm::{APPROVAL_KEY, CONFIRM_KEY, form, message, page_message, url_request};
use super::server::{Shared, to_response};
use airlock_core::call::{CallRequest, ToolResult};
use airlock_core::outcome::ErrorKind;
use airlock_core::render;
use airlock_pipeline::transport::tasks::{self as store, Finished, Input, NewTask, SHARED_POLL, Status};
use airlock_pipeline::{TaskSettings, TaskSupport};
use airlock_policy::confirm::{ConfirmRequest, Confirmer, PageApproval, PageOutcome};
use futures::future::BoxFuture;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResponse, ClientCapabilities, CreateTaskResult, DetailedTask, ElicitRequest, ElicitResult,
    ElicitationAction, ErrorCode, InputRequest, InputRequests, InputResponses, JsonObject, ProtocolVersion,
    Task as WireTask, TaskPayload, TaskStatus,
};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Mutex, mpsc};
use tokio_util::sync::CancellationToken;

/// How long past its longest run (its deadline and the longest wait for an
/// answer) a task in a fleet keeps its place while its replica says
/// nothing: then it is dropped.
pub const LEASE_MARGIN: Duration = Duration::from_secs(60);
/// The JSON-RPC error code of a failed task's `error`: the call could not
/// finish (the host failed, or the guest crashed).
const FAILED_CODE: ErrorCode = ErrorCode::INTERNAL_ERROR;
/// Answers a running call can have waiting; more are dropped (a client
/// answers one question at a time, and only outstanding keys get here).
const MAX_WAITING_ANSWERS: usize = 16;
/// The answer that confirms a call: an `accept` whose `allow` is `true`.
const ACCEPTED_AND_ALLOWED: &str = "accept:allow";
/// A task id shown in an error is cut to this many characters.
const MAX_SHOWN_ID_CHARS: usize = 64;

/// What the task's status says while it waits for a person on the page
/// after the client said it sent them there.
const WAITING_FOR_PAGE: &str = "waiting for the person to answer on Airlock's approval page";

/// Whether a call to a tool whose operator says `support` becomes a task
/// for a client that did (`declared`) or did not declare the extension.
///
/// # Errors
///
/// `-32021` for a tool that runs only as a task, with the capability it
/// needs in `data`.
pub fn becomes_task(support: TaskSupport, declared: bool) -> Result<bool, ErrorData> {
    match support {
        TaskSupport::Never => Ok(false),
        TaskSupport::Optional => Ok(declared),
        TaskSupport::Required if declared => Ok(true),
        TaskSupport::Required => {
            let mut error =
                ErrorData::missing_required_client_capability(ClientCapabilities::builder().enable_tasks().build());
            error.message = "this tool runs only as a task (the operator's `[tools.NAME] task = \"required\"`): \
                             declare the io.modelcontextprotocol/tasks extension in the request's \
                             _meta[\"io.modelcontextprotocol/clientCapabilities\"].extensions (or at initialize) \
                             and poll tasks/get for its result"
                .into();
            Err(error)
        }
    }
}

/// What the client of a new task can answer.
pub struct Client {
    /// It can answer a form elicitation (the client-mode confirmation).
    pub form: bool,
    /// It declared URL-mode elicitation (Airlock's approval page).
    pub url: bool,
    /// The protocol revision of the request that made the task (`None`:
    /// the newest): the kept result shows the content blocks it can.
    pub revision: Option<ProtocolVersion>,
}

/// Start `call` as a task: once the task exists (any `tasks/get` finds it),
/// answer with its handle while the call runs on. A task over one of its
/// principal's or the host's caps is refused: the call is answered, and
/// audited, as refused (`quota_exceeded` or `busy`), naming the cap.
pub async fn start(shared: &Arc<Shared>, mut call: CallRequest, client: Client) -> CallToolResponse {
    let host = &shared.host;
    let state = host.state();
    let config = state.config();
    let settings = config.tasks;
    let tool = config.settings_for(&call.tool);
    let pipeline = config.pipeline_for(&call.tool);
    // Whether the tool can attach content blocks is known once it is loaded;
    // until then its result may carry them.
    let has_content = state.registry().get(&call.tool).is_none_or(|tool| tool.contract().has_content());
    let content_bytes = if has_content { tool.limits.max_content_bytes } else { 0 };
    let answer_wait = CONFIRM_TIMEOUT.max(config.approvals.link_ttl);
    let new = NewTask {
        principal: call.principal.clone(),
        tool: call.tool.clone(),
        reserve: store::result_reserve(tool.limits.max_output_bytes, content_bytes),
        lease: pipeline.limits_for(tool.limits, true).timeout.saturating_add(answer_wait).saturating_add(LEASE_MARGIN),
    };
    let task = match host.tasks().create(new, &settings).await {
        Ok(task) => task,
        Err(failure) => return to_response(host.refuse(call, failure), client.revision.as_ref()),
    };
    call.task = Some(task.id.clone());
    let handle = CreateTaskResult::new(wire_task(&task, &settings));
    tracing::debug!(task = %task.id, tool = %call.tool, "call runs as a task");
    let run = Run { shared: Arc::clone(shared), id: task.id, client };
    tokio::spawn(run.run(call));
    CallToolResponse::Task(handle)
}

/// A task's call, run in the background.
struct Run {
    shared: Arc<Shared>,
    id: String,
    client: Client,
}

impl Run {
    /// `[tasks]` in force now (a reload moves them for running tasks too).
    fn settings(&self) -> TaskSettings {
        self.shared.host.state().config().tasks
    }

    /// Run the call, hearing the task's cancel and answers meanwhile, then
    /// keep its outcome.
    async fn run(self, call: CallRequest) {
        let host = self.shared.host.clone();
        let tasks = host.tasks().clone();
        let cancel = CancellationToken::new();
        let done = CancellationToken::new();
        let (answers_tx, answers_rx) = mpsc::channel(MAX_WAITING_ANSWERS);
        let confirmer = TaskConfirmer {
            run: &self,
            answers: Mutex::new(answers_rx),
            form: self.client.form,
            url: self.client.url,
            cancel: cancel.clone(),
        };
        let running = async {
            let result = host.call_cancellable(call, Some(&confirmer), &cancel).await;
            done.cancel();
            result
        };
        let watching = async {
            loop {
                match tasks.signal(&self.id, &done).await {
                    Ok(_) if done.is_cancelled() => return,
                    Ok(signal) if signal.cancelled => {
                        cancel.cancel();
                        return;
                    }
                    Ok(signal) => {
                        for answer in signal.answers {
                            if answers_tx.try_send(answer).is_err() {
                                tracing::debug!(task = %self.id, "an answer to the task was dropped: too many wait");
                            }
                        }
                    }
                    Err(err) => {
                        tracing::warn!(task = %self.id, "{err}");
                        tokio::select! {
                            () = tokio::time::sleep(SHARED_POLL) => {}
                            () = done.cancelled() => return,
                        }
                    }
                }
            }
        };
        let (result, ()) = tokio::join!(running, watching);
        drop(confirmer);
        let finished = finished(result, self.client.revision.as_ref());
        // A result the store cannot keep is lost to the client (the audit
        // log has the outcome): try a few times before giving up.
        for attempt in 1..=3u32 {
            match tasks.finish(&self.id, finished.clone(), self.settings().result_ttl).await {
                Ok(()) => break,
                Err(err) => {
                    tracing::warn!(task = %self.id, attempt, "cannot keep the task's outcome: {err}");
                    tokio::time::sleep(Duration::from_millis(250u64 << attempt)).await;
                }
            }
        }
    }

    /// Show the client `input` (nothing: the task is working).
    async fn ask(&self, input: Input) {
        if let Err(err) = self.shared.host.tasks().set_input(&self.id, input).await {
            tracing::warn!(task = %self.id, "cannot show the task's input requests: {err}");
        }
    }
}

/// How the call ended, as the task keeps it: a result the model reads
/// (also an error result: `completed`), or the call could not finish
/// (`failed`: the guest crashed, or the host failed), or it was cancelled.
fn finished(result: ToolResult, revision: Option<&ProtocolVersion>) -> Finished {
    match result.failure().map(|failure| failure.kind) {
        Some(ErrorKind::Cancelled) => Finished { status: Status::Cancelled, outcome: None },
        Some(ErrorKind::Trapped | ErrorKind::Internal) => {
            let Some(failure) = result.failure() else { return failed_by_host("the call ended without a result") };
            let error = json!({
                "code": FAILED_CODE.0,
                "message": render::failure_text(failure),
                "data": {
                    super::server::META_KIND: failure.kind.as_str(),
                    super::server::META_BLAME: failure.blame.as_str(),
                    super::server::META_RETRY: failure.retry.as_str(),
                },
            });
            Finished { status: Status::Failed, outcome: Some(error.to_string()) }
        }
        _ => match to_response(result, revision) {
            CallToolResponse::Complete(result) => match serde_json::to_string(&result) {
                Ok(text) => Finished { status: Status::Completed, outcome: Some(text) },
                Err(err) => failed_by_host(&format!("the result could not be kept: {err}")),
            },
            _ => failed_by_host("the call ended without a result"),
        },
    }
}

/// A task the host could not finish.
fn failed_by_host(why: &str) -> Finished {
    let error = json!({ "code": FAILED_CODE.0, "message": why });
    Finished { status: Status::Failed, outcome: Some(error.to_string()) }
}

/// The confirmer of a task's call: its question becomes the task's input
/// request, its answer comes from `tasks/update`.
struct TaskConfirmer<'a> {
    run: &'a Run,
    answers: Mutex<mpsc::Receiver<(String, String)>>,
    form: bool,
    url: bool,
    cancel: CancellationToken,
}

impl TaskConfirmer<'_> {
    /// The next answer to `key` (`None`: the wait ended first).
    async fn answer(&self, key: &str, within: Duration) -> Option<String> {
        let mut answers = self.answers.lock().await;
        let wait = async {
            while let Some((answered, answer)) = answers.recv().await {
                if answered == key {
                    return Some(answer);
                }
            }
            None
        };
        tokio::select! {
            answer = tokio::time::timeout(within, wait) => answer.ok().flatten(),
            () = self.cancel.cancelled() => None,
        }
    }
}

/// `request` as the task shows it.
fn input_request(key: &str, request: InputRequest) -> Input {
    let text = serde_json::to_string(&request).unwrap_or_else(|_| "{}".to_owned());
    Input { requests: vec![(key.to_owned(), text)], message: None }
}

impl Confirmer for TaskConfirmer<'_> {
    fn can_ask(&self) -> bool {
        self.form
    }

    fn confirm<'a>(&'a self, request: ConfirmRequest<'a>) -> BoxFuture<'a, bool> {
        if !self.form {
            return Box::pin(async { false });
        }
        let question = InputRequest::Elicitation(ElicitRequest::new(form(message(&request))));
        Box::pin(async move {
            self.run.ask(input_request(CONFIRM_KEY, question)).await;
            let answer = self.answer(CONFIRM_KEY, CONFIRM_TIMEOUT).await;
            self.run.ask(Input::default()).await;
            answer.as_deref() == Some(ACCEPTED_AND_ALLOWED)
        })
    }

    fn approve_on_page<'a>(
        &'a self,
        request: ConfirmRequest<'a>,
        page: PageApproval<'a>,
    ) -> BoxFuture<'a, PageOutcome> {
        if !self.url {
            return Box::pin(async { PageOutcome::NotShown });
        }
        let (params, _) = url_request(page_message(&request), &page);
        let question = InputRequest::Elicitation(ElicitRequest::new(params));
        Box::pin(async move {
            self.run.ask(input_request(APPROVAL_KEY, question)).await;
            let answered = page.answered;
            tokio::pin!(answered);
            let mut shown = false;
            loop {
                tokio::select! {
                    approved = &mut answered => {
                        self.run.ask(Input::default()).await;
                        return PageOutcome::Answered(approved);
                    }
                    sent = self.answer(APPROVAL_KEY, CONFIRM_TIMEOUT), if !shown => match sent {
                        // The client sent the person to the page: only the
                        // page says what they decided.
                        Some(answer) if answer.starts_with("accept") => {
                            shown = true;
                            self.run.ask(Input { requests: Vec::new(), message: Some(WAITING_FOR_PAGE.to_owned()) }).await;
                        }
                        // Declined, cancelled, or no answer: the task's
                        // result carries the link for the model to relay.
                        _ => {
                            self.run.ask(Input::default()).await;
                            return PageOutcome::NotShown;
                        }
                    },
                    () = self.cancel.cancelled() => return PageOutcome::Answered(false),
                }
            }
        })
    }
}

/// An answer as the running call reads it: `accept:allow` (accepted, with
/// `allow: true`), `accept`, `decline`, `cancel`, or `invalid`.
pub fn answer_of(value: &Value) -> String {
    match serde_json::from_value::<ElicitResult>(value.clone()) {
        Ok(result) if result.action == ElicitationAction::Accept => {
            let allowed = result.content.as_ref().and_then(|c| c.get("allow")) == Some(&Value::Bool(true));
            if allowed { ACCEPTED_AND_ALLOWED } else { "accept" }.to_owned()
        }
        Ok(result) if result.action == ElicitationAction::Decline => "decline".to_owned(),
        Ok(_) => "cancel".to_owned(),
        Err(_) => "invalid".to_owned(),
    }
}

/// The answer to a request for a task the caller has no task by.
pub fn unknown(id: &str) -> ErrorData {
    let shown: String = id.chars().take(MAX_SHOWN_ID_CHARS).collect();
    ErrorData::invalid_params(
        format!(
            "no task {} for this caller: it never existed, it expired (a task is kept `[tasks] result_ttl_secs` after \
             it ended), or it is another principal's",
            Value::String(shown)
        ),
        None,
    )
}

/// The answer when the fleet's store of tasks cannot be reached.
pub fn unavailable(err: &store::Unavailable) -> ErrorData {
    tracing::warn!("{err}");
    ErrorData::internal_error(
        "the shared store of tasks (Redis) cannot be reached; nothing was changed. Try again shortly",
        None,
    )
}

/// The answers of `tasks/update` as the store keeps them.
pub fn answers(responses: &InputResponses) -> Vec<(String, String)> {
    responses.iter().map(|(key, value)| (key.clone(), answer_of(value))).collect()
}

/// `task` on the wire, without its payload.
fn wire_task(task: &store::Task, settings: &TaskSettings) -> WireTask {
    let now = store::now_ms();
    let result_ttl = u64::try_from(settings.result_ttl.as_millis()).unwrap_or(u64::MAX);
    let kept_until = task.expires_ms.unwrap_or_else(|| now.saturating_add(result_ttl));
    let poll = u64::try_from(settings.poll_interval.as_millis()).unwrap_or(u64::MAX);
    let mut wire =
        WireTask::new(task.id.clone(), wire_status(task.status), iso8601(task.created_ms), iso8601(task.updated_ms))
            .with_ttl_ms(kept_until.saturating_sub(task.created_ms).max(1))
            .with_poll_interval_ms(poll);
    wire.status_message = task.message.clone();
    wire
}

/// The wire's status.
fn wire_status(status: Status) -> TaskStatus {
    match status {
        Status::Working => TaskStatus::Working,
        Status::InputRequired => TaskStatus::InputRequired,
        Status::Completed => TaskStatus::Completed,
        Status::Failed => TaskStatus::Failed,
        Status::Cancelled => TaskStatus::Cancelled,
    }
}

/// `task` as `tasks/get` answers it: the result or error inlined once it
/// ended, its input requests while it waits for them.
///
/// # Errors
///
/// What the store keeps is not what this module put there (a bug, or a
/// store written by another version).
pub fn detailed(task: &store::Task, settings: &TaskSettings) -> Result<DetailedTask, ErrorData> {
    let object = |text: &str| serde_json::from_str::<JsonObject>(text).ok();
    let corrupt = || ErrorData::internal_error("the task's kept state cannot be read", None);
    let payload = match task.status {
        Status::Working => TaskPayload::Working,
        Status::Cancelled => TaskPayload::Cancelled,
        Status::InputRequired => {
            let mut requests = InputRequests::new();
            for (key, text) in &task.input {
                let request = serde_json::from_str::<InputRequest>(text).map_err(|_| corrupt())?;
                requests.insert(key.clone(), request);
            }
            TaskPayload::InputRequired { input_requests: requests }
        }
        Status::Completed => {
            TaskPayload::Completed { result: task.outcome.as_deref().and_then(object).ok_or_else(corrupt)? }
        }
        Status::Failed => {
            let stated = task.outcome.as_deref().and_then(object);
            let error = stated.unwrap_or_else(|| {
                let message = task.message.clone().unwrap_or_else(|| "the task failed".to_owned());
                let mut error = JsonObject::new();
                error.insert("code".into(), Value::from(FAILED_CODE.0));
                error.insert("message".into(), Value::String(message));
                error
            });
            TaskPayload::Failed { error }
        }
    };
    Ok(DetailedTask::new(wire_task(task, settings), payload))
}

/// Unix milliseconds as an ISO 8601 time in UTC with milliseconds
/// (`2026-07-28T10:30:00.123Z`).
fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (H. Hinnant's algorithm).
    let z = i64::try_from(days).unwrap_or(i64::MAX / 2).saturating_add(719_468);
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        ms % 1000
    )
}

#[cfg(test)]
mod tests;
