//! The rmcp [`ServerHandler`]: `tools/list`, `tools/call`, confirmation,
//! cancellation and list_changed subscriptions, converted to and from core
//! types at this edge.
//!
//! Trusts nothing a client sends: a call's name and arguments go to the
//! pipeline as proposed (it resolves, validates, authorizes and audits
//! them); the principal is never taken from the message but from the
//! transport (the `--principal` of stdio, or the bearer token checked by
//! the HTTP layer). Results are rendered here from the typed outcome of a
//! [`ToolResult`]: the tool's JSON result and its text, or the failure's
//! message with its kind and code as data; never captured guest output.

use super::cancel::linked;
use super::changes::Changes;
use super::client_log::{LogNotifier, SessionLevel};
use super::confirm::{APPROVAL_KEY, CONFIRM_KEY, Confirmations, ElicitConfirmer, Owner, Resumed, Started};
use super::jsonrpc::{self, Rejection};
use super::progress::Notifier;
use super::revision;
use airlock_core::arguments::RawArguments;
use airlock_core::call::{CallRequest, ToolResult};
use airlock_core::caller::TokenAttributes;
use airlock_core::content::ModelText;
use airlock_core::progress::ProgressSink;
use airlock_core::render;
use airlock_core::tool_log::LogSink;
use airlock_core::trace_parent::TraceParent;
use airlock_pipeline::Format;
use airlock_pipeline::Host;
use airlock_policy::confirm::Confirmer;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities, ContentBlock,
    CustomRequest, CustomResult, GetTaskParams, GetTaskResult, Implementation, InitializeRequestParams,
    InitializeResult, InputRequests, InputRequiredResult, JsonObject, ListToolsResult, MetaObject,
    PaginatedRequestParams, ProgressToken, ProtocolVersion, ServerCapabilities, ServerConfig, SubscriptionFilter,
    TASKS_EXTENSION_ID, Tool, UpdateTaskParams,
};
#[allow(deprecated, reason = "logging/setLevel: deprecated by 2026-07-28, part of the earlier revisions")]
use rmcp::model::{SetLevelRequestMethod, SetLevelRequestParams};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio_util::sync::CancellationToken;

/// State shared by every session of one server.
pub struct Shared {
    /// The host that runs the calls.
    pub host: Host,
    /// Who hears about tool list changes.
    pub changes: Changes,
    /// Calls waiting for a confirmation answer (2026-07-28).
    pub confirmations: Arc<Confirmations>,
    /// With `[fleet]`: signed, fleet-wide single-use confirmations in place
    /// of `confirmations` (2026-07-28).
    pub signed: Option<super::signed::SignedConfirmations>,
    /// Some client was sent a tool list while start-up was loading tools:
    /// only then do tools that become ready need a list_changed.
    pub partial_list_sent: AtomicBool,
}

/// Who sent an HTTP request, as established by the HTTP layer. Requests
/// that reached the handler over HTTP without it are refused.
#[derive(Debug, Clone)]
pub struct Caller {
    /// The principal the bearer token maps to (or the default principal).
    pub principal: String,
    /// The attributes the token carried (`[http.jwt] attribute_claims`;
    /// empty for static tokens).
    pub attributes: TokenAttributes,
    /// Cancelled when the client drops the HTTP response.
    pub disconnected: CancellationToken,
}

/// One MCP server; clones share everything (one per HTTP session).
#[derive(Clone)]
pub struct AirlockServer {
    shared: Arc<Shared>,
    principal: Arc<str>,
    /// The least level of the tools' log lines this session's client asked
    /// for (`logging/setLevel`).
    log_level: Arc<SessionLevel>,
}

impl AirlockServer {
    /// A server whose calls act as `principal` unless the HTTP layer says
    /// otherwise.
    pub fn new(shared: Arc<Shared>, principal: String) -> Self {
        Self { shared, principal: principal.into(), log_level: Arc::default() }
    }

    /// The server for a new session: the same host and principal, and
    /// nothing of another session's own state.
    pub fn for_session(&self) -> Self {
        Self { shared: self.shared.clone(), principal: self.principal.clone(), log_level: Arc::default() }
    }

    /// The model-facing tool list, from the MCP projection only.
    fn tools(&self) -> Vec<Tool> {
        self.shared
            .host
            .schemas(Format::Mcp, false)
            .into_iter()
            .filter_map(|value| match serde_json::from_value::<Tool>(value) {
                Ok(tool) => Some(tool),
                Err(err) => {
                    tracing::error!("a tool's MCP schema is not a valid MCP tool and is left out: {err}");
                    None
                }
            })
            .collect()
    }

    /// Who is calling and the tokens that cancel the call: the request's
    /// own (`notifications/cancelled`, end of session) and, over HTTP, the
    /// client dropping the response.
    /// Who the request acts for (principal and token attributes) and what
    /// cancels it.
    fn caller(
        &self,
        context: &RequestContext<RoleServer>,
    ) -> Result<(String, TokenAttributes, Vec<CancellationToken>), ErrorData> {
        let mut cancel = vec![context.ct.clone()];
        let Some(parts) = context.extensions.get::<axum::http::request::Parts>() else {
            // A stdio call run by rmcp's loop: cancelled at the end of input
            // by the transport, which then waits for its answer.
            if let Some(end) = context.extensions.get::<super::stdio::CallsEnd>() {
                cancel.push(end.0.clone());
            }
            return Ok((self.principal.to_string(), TokenAttributes::default(), cancel));
        };
        let Some(caller) = parts.extensions.get::<Caller>() else {
            // Fail closed: every HTTP request passes the HTTP layer first.
            return Err(ErrorData::internal_error("the request did not pass authentication", None));
        };
        cancel.push(caller.disconnected.clone());
        Ok((caller.principal.clone(), caller.attributes.clone(), cancel))
    }
}

/// The caller's trace context: the request's `_meta.traceparent`
/// (SEP-414; 2026-07-28 clients send it there), else the HTTP request's
/// `traceparent` header. One that does not parse is ignored.
fn trace_parent(request: &CallToolRequestParams, context: &RequestContext<RoleServer>) -> Option<TraceParent> {
    let from_meta =
        request.meta.as_ref().and_then(|meta| meta.get_traceparent()).or_else(|| context.meta.get_traceparent());
    let from_header = || {
        let parts = context.extensions.get::<axum::http::request::Parts>()?;
        parts.headers.get("traceparent")?.to_str().ok().and_then(TraceParent::parse)
    };
    from_meta.and_then(TraceParent::parse).or_else(from_header)
}

/// The request's `progressToken`: in the params' `_meta`, or (as rmcp
/// reads it) the request context's.
fn progress_token(request: &CallToolRequestParams, context: &RequestContext<RoleServer>) -> Option<ProgressToken> {
    request.meta.as_ref().and_then(|meta| meta.get_progress_token()).or_else(|| context.meta.get_progress_token())
}

/// The least level of the log lines a call's client gets: its session's,
/// on the revisions with `initialize`; on 2026-07-28 the one the request
/// names in `_meta` (`io.modelcontextprotocol/logLevel`), and none (no
/// lines) when it names none.
fn log_level(
    modern: bool,
    session: &Arc<SessionLevel>,
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Option<Arc<SessionLevel>> {
    if !modern {
        return Some(session.clone());
    }
    let level = request.meta.as_ref().and_then(|meta| meta.log_level()).or_else(|| context.meta.log_level())?;
    Some(Arc::new(SessionLevel::at(level)))
}

/// Whether the client can answer a form elicitation.
fn can_elicit(capabilities: Option<ClientCapabilities>) -> bool {
    let Some(elicitation) = capabilities.and_then(|c| c.elicitation) else { return false };
    // A capability without modes predates URL elicitation and means form.
    elicitation.form.is_some() || elicitation.url.is_none()
}

/// Whether the client declared URL-mode elicitation: it can send a person
/// to Airlock's approval page.
fn can_open_url(capabilities: Option<ClientCapabilities>) -> bool {
    capabilities.and_then(|c| c.elicitation).is_some_and(|e| e.url.is_some())
}

/// The `_meta` key of an error result's kind (`denied`, `timeout`, …).
pub const META_KIND: &str = "airlock/kind";
/// The `_meta` key of a tool error's own code, when the tool gave one.
pub const META_CODE: &str = "airlock/code";
/// The `_meta` key of who has to act on an error result (`caller`, `tool`,
/// `operator`, `host`).
pub const META_BLAME: &str = "airlock/blame";
/// The `_meta` key of whether the same call can succeed (`no`,
/// `with_changes`, `later`, `after_approval`, `unknown`).
pub const META_RETRY: &str = "airlock/retry";

/// What a client is told about a `requestState` that is not honoured
/// (unknown, expired, already used, altered, or issued for another call).
/// One message for every case, so the answer tells nothing about other
/// callers' states.
const STATE_REFUSED: &str = "requestState is not valid for this call: it is unknown, expired, already used, altered, or was issued for another tool or other arguments; nothing was run. Send the call again without requestState and inputResponses.";

/// The error of a retry whose tool changed since its `requestState` was
/// issued.
const TOOL_CHANGED: &str = "the tool changed since this confirmation was asked (the operator put another revision of it in force: its component or its description or schemas differ), so what was confirmed is not what would run and nothing was run. Make the call again without requestState and inputResponses, to be asked about the tool as it is now.";

/// The MCP result of a finished call, rendered here from the typed outcome.
/// Every failure, an unknown tool included, is an `isError` result: its
/// text is the failure's message, and the kind, blame and retry (and a
/// tool error's code) travel as data in `_meta`, read from the
/// [`Failure`](airlock_core::outcome::Failure), never from text.
///
/// An error result carries no `structuredContent`: a tool's `outputSchema`
/// describes its successful result, and clients that check structured
/// content against it (the TypeScript SDK does, even for error results)
/// would throw instead of showing the model the message.
///
/// An unknown tool is a result rather than the `-32602` protocol error the
/// spec also allows: agent frameworks hand a result to the model (which can
/// pick one of the tools the text names) but turn a protocol error into an
/// exception that ends the run or hides the message.
///
/// A success's content blocks (contract 0.3.0) follow its text block, as
/// the request's `revision` can show them (`blocks.rs`).
pub(super) fn to_response(result: ToolResult, revision: Option<&ProtocolVersion>) -> CallToolResponse {
    match result.outcome.into_result() {
        Err(failure) => {
            let mut meta = JsonObject::new();
            meta.insert(META_KIND.to_owned(), Value::from(failure.kind.as_str()));
            if let Some(code) = &failure.code {
                meta.insert(META_CODE.to_owned(), Value::from(code.as_str()));
            }
            meta.insert(META_BLAME.to_owned(), Value::from(failure.blame.as_str()));
            meta.insert(META_RETRY.to_owned(), Value::from(failure.retry.as_str()));
            let mut out = CallToolResult::error(vec![ContentBlock::text(render::failure_text(&failure))]);
            out.meta = Some(MetaObject(meta));
            out.into()
        }
        Ok(mut success) => {
            let text = render::success_text(&success);
            let budget = ModelText::after(&text);
            let mut content = vec![ContentBlock::text(text)];
            content.extend(super::blocks::render(std::mem::take(&mut success.blocks), revision, budget));
            let mut out = CallToolResult::success(content);
            // MCP structured content is an object; a tool with an (object)
            // output schema always produces one, and a bare scalar result
            // stays text only.
            out.structured_content = Some(success.value).filter(Value::is_object);
            out.into()
        }
    }
}

/// The answer to a first round: the result, or "input required".
fn started(started: Started, revision: Option<&ProtocolVersion>) -> Result<CallToolResponse, ErrorData> {
    match started {
        Started::Done(result) => Ok(to_response(*result, revision)),
        Started::Ask { state, elicitation } => {
            let mut requests = InputRequests::new();
            requests.insert(CONFIRM_KEY.to_owned(), *elicitation);
            Ok(InputRequiredResult::new(Some(requests), Some(state)).into())
        }
        Started::AskOnPage { state, elicitation } => {
            let mut requests = InputRequests::new();
            requests.insert(APPROVAL_KEY.to_owned(), *elicitation);
            Ok(InputRequiredResult::new(Some(requests), Some(state)).into())
        }
        Started::Lost => Err(ErrorData::internal_error("the call was lost", None)),
    }
}

/// The answer to a retry with a `requestState`.
fn resumed(resumed: Resumed, revision: Option<&ProtocolVersion>) -> Result<CallToolResponse, ErrorData> {
    match resumed {
        Resumed::Done(result) => Ok(to_response(*result, revision)),
        // The conformance suite (SEP-2322) requires a protocol error for a
        // state that fails verification; a state for other arguments is the
        // same mistake and gets the same answer.
        Resumed::Unknown | Resumed::Mismatch => Err(ErrorData::invalid_params(STATE_REFUSED, None)),
        Resumed::Changed => Err(ErrorData::invalid_params(TOOL_CHANGED, None)),
        Resumed::Lost => Err(ErrorData::internal_error("the call was lost", None)),
        Resumed::Unavailable(why) => Err(ErrorData::internal_error(
            format!(
                "{why}. The confirmation could not be checked as unused across the fleet, so nothing was run; send \
                 the same retry again later (it stays valid until its requestState expires)"
            ),
            None,
        )),
    }
}

impl ServerHandler for AirlockServer {
    fn get_info(&self) -> ServerConfig {
        // The tasks extension is advertised to 2026-07-28 clients
        // (`server/discover`), the revision that defines it; an
        // `initialize` answer never shows it (`initialize` below).
        let capabilities =
            ServerCapabilities::builder().enable_tools().enable_tool_list_changed().enable_tasks().build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("airlock", env!("CARGO_PKG_VERSION")))
            .with_instructions("Tools run as sandboxed WebAssembly components. Failed calls come back as results with isError and a message saying what to change.")
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        // The revisions with `initialize` have logging: the tools whose
        // operator allows it send their log lines (`client_log`).
        result.capabilities.logging = Some(Default::default());
        // Nor do they have the tasks extension, whatever the client
        // declares (the MCP Inspector declares it on every revision).
        if let Some(extensions) = result.capabilities.extensions.as_mut() {
            extensions.remove(TASKS_EXTENSION_ID);
            if extensions.is_empty() {
                result.capabilities.extensions = None;
            }
        }
        Ok(result)
    }

    #[allow(deprecated, reason = "logging/setLevel: deprecated by 2026-07-28, part of the earlier revisions")]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // 2026-07-28 removed the method.
        if context.protocol_version().is_some_and(|version| !version.has_initialize()) {
            return Err(ErrorData::method_not_found::<SetLevelRequestMethod>());
        }
        self.log_level.set(request.level);
        Ok(())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // The list is one page and no `nextCursor` is ever given, so no
        // cursor is one this server issued.
        if let Some(cursor) = request.as_ref().and_then(|params| params.cursor.as_deref()) {
            return Err(Rejection::invalid_params(None, &jsonrpc::unknown_cursor(cursor)).into_error());
        }
        // During start-up, wait for the tools still loading (bounded by
        // `[serve] startup_list_wait_secs`), so that a client that lists
        // once sees every tool.
        let wait = self.shared.host.state().config().serve.startup_list_wait;
        airlock_pipeline::transport::startup::settle(&self.shared.host, wait).await;
        // Noted before the tools are read: a tool installed after that
        // read finds the note and is announced.
        if !self.shared.host.readiness().finished() {
            self.shared.partial_list_sent.store(true, Ordering::SeqCst);
        }
        // One page: the tool list is small and bounded by the operator.
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        let schema = self.shared.host.schema(name, Format::Mcp, false)?;
        serde_json::from_value(schema)
            .inspect_err(|err| tracing::error!("the MCP schema of {name} is not a valid MCP tool: {err}"))
            .ok()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (principal, attributes, cancel) = self.caller(&context)?;
        let protocol = context.protocol_version();
        let protocol = protocol.as_ref();
        let modern = protocol.is_some_and(|version| !version.has_initialize());
        let elicit = can_elicit(context.client_capabilities());
        // A link to Airlock's page goes to a client of a revision with
        // URL-mode elicitation that declared it, and not again to the retry
        // of a call whose client was handed it (2026-07-28): whatever it
        // answered, that round ends with the link in the call's result.
        let page_retry = super::confirm::is_page_retry(request.request_state.as_deref());
        let open_url = can_open_url(context.client_capabilities())
            && revision::has(protocol, &revision::URL_ELICITATION)
            && !page_retry;
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let call = CallRequest {
            call_id: format!("mcp:{}", context.id),
            tool: request.name.to_string(),
            arguments: RawArguments::Json(arguments),
            principal: principal.clone(),
            attributes,
            trace_parent: trace_parent(&request, &context),
            // The tool's progress goes to a client that sent a token, and
            // nowhere otherwise.
            progress: progress_token(&request, &context).map(|token| {
                let lines = context.extensions.get::<super::stdio::CallLines>().cloned();
                Arc::new(Notifier::new(context.peer.clone(), lines, token, protocol)) as Arc<dyn ProgressSink>
            }),
            // The tool's log lines may go to the client, at or above the
            // level of its session (`logging/setLevel`) or, on 2026-07-28,
            // of the request (none named: no lines); the pipeline sends
            // them only for a tool whose operator turned `client_log` on.
            log: log_level(modern, &self.log_level, &request, &context).map(|least| {
                let lines = context.extensions.get::<super::stdio::CallLines>().cloned();
                Arc::new(LogNotifier::new(context.peer.clone(), lines, least)) as Arc<dyn LogSink>
            }),
            task: None,
        };
        // A task (a 2026-07-28 client declared the tasks extension, and the
        // operator lets the tool's calls be tasks): answered with its handle
        // at once; nothing of this request reaches the call.
        let declared = revision::has(protocol, &revision::TASKS_EXTENSION)
            && context.client_capabilities().is_some_and(|caps| caps.supports_tasks());
        let support = self.shared.host.state().config().pipeline_for(&request.name).task;
        if super::tasks::becomes_task(support, declared)? {
            // A task outlives its request: its log lines go to the
            // operator's log only.
            let call = CallRequest { log: None, ..call };
            let client = super::tasks::Client { form: elicit, url: open_url, revision: protocol.cloned() };
            return Ok(super::tasks::start(&self.shared, call, client).await);
        }
        if !modern {
            let linked = linked(&cancel);
            let run_cancel = linked.token();
            let confirmer = (elicit || open_url).then(|| ElicitConfirmer {
                peer: context.peer.clone(),
                form: elicit,
                url: open_url,
                cancel: run_cancel.clone(),
                progress: context.meta.get_progress_token(),
            });
            // Boxed: the pipeline's future is large, and rmcp moves this
            // handler's future into a new task for every request; a box
            // keeps that move small.
            let result = linked
                .run(Box::pin(self.shared.host.call_cancellable(
                    call,
                    confirmer.as_ref().map(|c| c as &dyn Confirmer),
                    run_cancel,
                )))
                .await;
            return Ok(to_response(result, protocol));
        }
        // 2026-07-28: no server-to-client requests. A call that needs
        // confirmation is parked and answered with "input required".
        // Bound to the revision in force now: a retry after a reload that
        // changed the tool finds another one and is refused. During
        // start-up the tool may still be loading: its revision is the one
        // it is loaded with (the call would wait for it anyway), not "no
        // such tool", which its retry would take for a change.
        {
            let waiting = linked(&cancel);
            let host = &self.shared.host;
            waiting
                .run(airlock_pipeline::transport::startup::wait_for_tool(host, request.name.as_ref(), waiting.token()))
                .await;
        }
        let revision = self.shared.host.tools().get(request.name.as_ref()).map(|tool| tool.revision.clone());
        let owner = Owner { principal, tool: request.name.to_string(), arguments: request.arguments.clone(), revision };
        let responses = request.input_responses.as_ref();
        // A retry after the approval page runs the call again: the approval
        // is found by the call's principal, tool revision and arguments,
        // on any replica, so the state carries nothing to check.
        let state = request.request_state.as_deref().filter(|_| !page_retry);
        // In a fleet, no call waits here: the state is signed and any
        // replica finishes the call.
        if let Some(signed) = &self.shared.signed {
            let host = &self.shared.host;
            return match state {
                Some(state) => resumed(signed.resume(host, call, state, &owner, responses, &cancel).await, protocol),
                None => started(signed.start(host, call, &owner, (elicit, open_url), &cancel).await, protocol),
            };
        }
        let confirmations = &self.shared.confirmations;
        if let Some(state) = state {
            return resumed(confirmations.resume(state, &owner, responses, &cancel).await, protocol);
        }
        started(confirmations.start(self.shared.host.clone(), call, owner, (elicit, open_url), &cancel).await, protocol)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let (principal, _, _) = self.caller(&context)?;
        let tasks = self.shared.host.tasks();
        let task = tasks.get(&request.task_id, &principal).await.map_err(|err| super::tasks::unavailable(&err))?;
        let Some(task) = task else { return Err(super::tasks::unknown(&request.task_id)) };
        let settings = self.shared.host.state().config().tasks;
        Ok(GetTaskResult::new(super::tasks::detailed(&task, &settings)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (principal, _, _) = self.caller(&context)?;
        let answers = super::tasks::answers(&request.input_responses);
        let tasks = self.shared.host.tasks();
        match tasks.respond(&request.task_id, &principal, answers).await {
            Ok(Some(())) => Ok(()),
            Ok(None) => Err(super::tasks::unknown(&request.task_id)),
            Err(err) => Err(super::tasks::unavailable(&err)),
        }
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let (principal, _, _) = self.caller(&context)?;
        let ttl = self.shared.host.state().config().tasks.result_ttl;
        match self.shared.host.tasks().cancel(&request.task_id, &principal, ttl).await {
            Ok(Some(())) => Ok(()),
            Ok(None) => Err(super::tasks::unknown(&request.task_id)),
            Err(err) => Err(super::tasks::unavailable(&err)),
        }
    }

    /// rmcp's catch-all: a request for a method it does not know, or for
    /// one it knows whose params are not that method's (a `tools/call`
    /// without a string `name`, with `arguments` that are not an object).
    /// The second is `-32602` naming what is wrong (see `jsonrpc`); only
    /// the first is `-32601`. A 2026-07-28 request has no `initialize`
    /// (the revision has no handshake), so that method is not served to
    /// it, whatever its params (over HTTP: 404).
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        let handshake = context.protocol_version().is_none_or(|version| version.has_initialize());
        let problem = (handshake || request.method != "initialize")
            .then(|| jsonrpc::params_problem(&request.method, request.params.as_ref()))
            .flatten();
        Err(match problem {
            Some(detail) => Rejection::invalid_params(None, &detail).into_error(),
            None => jsonrpc::method_not_found(&request.method),
        })
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.shared.changes.register(context.peer);
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        // Only the tool list ever changes here; other categories are
        // accepted as nothing rather than refusing the whole subscription.
        let filter = SubscriptionFilter::builder();
        Some(if requested.tools_list_changed == Some(true) { filter.tools_list_changed() } else { filter }.build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let Some(mut slot) = self.shared.changes.listen() else {
            return Err(ErrorData::internal_error("too many subscriptions are open; try again later", None));
        };
        loop {
            tokio::select! {
                () = context.cancelled() => return Ok(()),
                changed = slot.changed.recv() => match changed {
                    Ok(()) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                        if context.sink().notify_tool_list_changed().await.is_err() {
                            return Ok(());
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return Ok(()),
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_core::outcome::{Authority, CallOutcome, ErrorKind, Failure, Success};
    use serde_json::json;

    fn result(outcome: Result<Success, Failure>) -> ToolResult {
        ToolResult::new("c", "echo", CallOutcome::Ran { authority: Authority::Allowed, result: outcome })
    }

    fn complete(response: CallToolResponse) -> CallToolResult {
        match response {
            CallToolResponse::Complete(result) => result,
            other => panic!("not complete: {other:?}"),
        }
    }

    fn meta(out: &CallToolResult) -> Value {
        serde_json::to_value(out.meta.as_ref().expect("an error result has _meta")).unwrap()
    }

    fn text(out: &CallToolResult) -> Value {
        serde_json::to_value(&out.content[0]).unwrap()["text"].clone()
    }

    #[test]
    fn success_carries_text_and_object_structured_content() {
        let out = complete(to_response(result(Ok(Success::new(json!({"text": "hi"})))), None));
        assert_eq!(out.is_error, Some(false));
        assert_eq!(text(&out), r#"{"text":"hi"}"#);
        assert_eq!(out.structured_content, Some(json!({"text": "hi"})));
        assert_eq!(out.meta, None);
        let out = complete(to_response(result(Ok(Success::new(json!("hi")))), None));
        assert_eq!(text(&out), "hi");
        assert_eq!(out.structured_content, None, "a scalar result is text only");
    }

    #[test]
    fn content_blocks_follow_the_text_and_structured_content_stays() {
        use airlock_core::content::{Block, Content, Media};
        let image =
            Block::new(Content::Image(Media { mime_type: "image/png".into(), data: vec![1] }), "sha256:0".into());
        let success = Success { blocks: vec![image], ..Success::new(json!({"n": 1})) };
        let out = complete(to_response(result(Ok(success)), Some(&ProtocolVersion::V_2025_06_18)));
        let content = serde_json::to_value(&out.content).unwrap();
        assert_eq!(
            content,
            json!([{"type": "text", "text": r#"{"n":1}"#}, {"type": "image", "data": "AQ==", "mimeType": "image/png"}])
        );
        assert_eq!(out.structured_content, Some(json!({"n": 1})));
    }

    #[test]
    fn failure_is_an_error_result_with_the_kind_in_meta_and_no_structured_content() {
        let out = complete(to_response(result(Err(Failure::new(ErrorKind::Timeout, "too slow"))), None));
        assert_eq!(out.is_error, Some(true));
        assert_eq!(out.structured_content, None, "an error result must not be checked against the output schema");
        let data = json!({"airlock/kind": "timeout", "airlock/blame": "caller", "airlock/retry": "with_changes"});
        assert_eq!(meta(&out), data);
        assert_eq!(
            text(&out),
            "error (timeout): too slow. The same call will fail again: change it before calling again.",
            "the kind, blame and retry are data in _meta, and the text names the kind and says the advice"
        );
    }

    #[test]
    fn a_tool_error_carries_its_code_as_data_and_in_the_text() {
        let failed = Failure::tool_error("no such file", Some("not_found"));
        let out = complete(to_response(result(Err(failed)), None));
        let data = json!({
            "airlock/kind": "tool_error", "airlock/code": "not_found", "airlock/blame": "tool", "airlock/retry": "unknown"
        });
        assert_eq!(meta(&out), data);
        assert_eq!(text(&out), "tool error (not_found): no such file");
        // A message that looks like another kind changes nothing: the kind is data.
        let out = complete(to_response(result(Err(Failure::new(ErrorKind::Denied, "error (timeout): forged"))), None));
        assert_eq!(meta(&out)["airlock/kind"], "denied");
        assert!(
            text(&out).as_str().unwrap().starts_with("error (denied): error (timeout): forged. "),
            "{}",
            text(&out)
        );
    }

    #[test]
    fn unknown_tool_is_an_error_result_naming_the_tools() {
        let failure = Failure::new(
            ErrorKind::UnknownTool,
            "there is no tool named \"ech\". Available tools, closest first: echo",
        );
        let unknown = ToolResult::new("c", "ech", CallOutcome::not_reached(failure));
        let out = complete(to_response(unknown, None));
        assert_eq!(out.is_error, Some(true));
        assert_eq!(meta(&out)["airlock/kind"], "unknown_tool");
        assert!(text(&out).as_str().unwrap().contains("closest first: echo"), "{}", text(&out));
    }

    #[test]
    fn elicitation_capability_without_modes_means_form() {
        let caps = |value: Value| Some(serde_json::from_value::<ClientCapabilities>(value).unwrap());
        assert!(can_elicit(caps(json!({"elicitation": {}}))));
        assert!(can_elicit(caps(json!({"elicitation": {"form": {}}}))));
        assert!(!can_elicit(caps(json!({"elicitation": {"url": {}}}))));
        assert!(!can_elicit(caps(json!({}))));
        assert!(!can_elicit(None));
    }
}
