//! A call as every front end hands it to the host ([`CallRequest`]) and as
//! it comes back ([`ToolResult`]): the vocabulary the pipeline, the
//! transports, metrics and traces share.

use crate::arguments::RawArguments;
use crate::caller::TokenAttributes;
use crate::outcome::{CallOutcome, Decision, ErrorKind, Failure, Success};
use crate::progress::ProgressSink;
use crate::render;
use crate::tool_log::LogSink;
use crate::trace_parent::TraceParent;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Longest principal name accepted; longer ones are cut.
pub const MAX_PRINCIPAL_LEN: usize = 256;
/// Longest call id accepted; longer ones are cut.
pub const MAX_CALL_ID_LEN: usize = 256;

/// A proposed call.
#[derive(Debug, Clone)]
pub struct CallRequest {
    /// The id the model or client gave the call (echoed in the result).
    pub call_id: String,
    /// The tool name.
    pub tool: String,
    /// The arguments as proposed.
    pub arguments: RawArguments,
    /// Who is asking (a user id known to the policy).
    pub principal: String,
    /// Attributes authenticated with the principal (a JWT's
    /// `attribute_claims`; empty otherwise): the policy and the tool see
    /// them in place of the entities file's attributes of the same name.
    pub attributes: TokenAttributes,
    /// The caller's span (W3C `traceparent`), when it sent one: the call's
    /// span is its child.
    pub trace_parent: Option<TraceParent>,
    /// Where the tool's progress reports go, when the client asked to be
    /// told (an MCP `progressToken`); `None` drops them.
    pub progress: Option<Arc<dyn ProgressSink>>,
    /// Where the tool's log lines go besides the operator's log, when the
    /// front end can show them to its client; the host uses it only for a
    /// tool whose operator turned `client_log` on. `None` keeps them in the
    /// operator's log.
    pub log: Option<Arc<dyn LogSink>>,
    /// The id of the MCP task the call runs as, when a front end made it
    /// one: its audit records name the task, and a tool whose calls may be
    /// tasks gets its `task_timeout_ms` as the deadline.
    pub task: Option<String>,
}

impl CallRequest {
    /// A call with JSON arguments.
    pub fn new(principal: impl Into<String>, tool: impl Into<String>, arguments: Value) -> Self {
        Self {
            call_id: String::new(),
            tool: tool.into(),
            arguments: RawArguments::Json(arguments),
            principal: principal.into(),
            attributes: TokenAttributes::default(),
            trace_parent: None,
            progress: None,
            log: None,
            task: None,
        }
    }

    /// Set the call id.
    pub fn with_call_id(mut self, call_id: impl Into<String>) -> Self {
        self.call_id = call_id.into();
        self
    }

    /// Send the tool's log lines to `sink` too (when the operator turned
    /// `client_log` on for the tool).
    pub fn with_log(mut self, sink: Arc<dyn LogSink>) -> Self {
        self.log = Some(sink);
        self
    }

    /// Send the tool's progress reports to `sink`.
    pub fn with_progress(mut self, sink: Arc<dyn ProgressSink>) -> Self {
        self.progress = Some(sink);
        self
    }
}

/// The result of a call, success or failure, as every front end sees it.
/// The outcome is a value, never text: front ends render it at their edge
/// ([`ToolResult::text`] for the model, [`ToolResult::human_line`] for
/// people) and read the kind and code from the [`Failure`].
#[derive(Debug, Clone)]
pub struct ToolResult {
    /// The call id of the request.
    pub call_id: String,
    /// The tool name as requested.
    pub tool: String,
    /// What was decided about the call and what came of it.
    pub outcome: CallOutcome,
    /// Captured stdout (for humans and logs, never the model).
    pub stdout: Captured,
    /// Captured stderr (for humans and logs, never the model).
    pub stderr: Captured,
    /// Time from receipt to result.
    pub duration: Duration,
    /// Fuel the guest used, if it ran.
    pub fuel_used: Option<u64>,
    /// The session the call ran in, for tools that keep sessions.
    pub session: Option<String>,
    /// The tool's one-line presentation of its result (`[tools.NAME]
    /// present_result`), for logs and UIs; never sent to a model.
    pub presented: Option<String>,
}

impl ToolResult {
    /// A result of the call `call_id` to `tool`, with nothing captured, no
    /// fuel, no session and no duration yet.
    pub fn new(call_id: impl Into<String>, tool: impl Into<String>, outcome: CallOutcome) -> Self {
        Self {
            call_id: call_id.into(),
            tool: tool.into(),
            outcome,
            stdout: Captured::default(),
            stderr: Captured::default(),
            duration: Duration::ZERO,
            fuel_used: None,
            session: None,
            presented: None,
        }
    }

    /// What was decided about the call before it ran.
    pub fn decision(&self) -> Decision {
        self.outcome.decision()
    }

    /// The tool's result, or why there is none.
    pub fn result(&self) -> Result<&Success, &Failure> {
        self.outcome.result()
    }

    /// True for every failure.
    pub fn is_error(&self) -> bool {
        self.result().is_err()
    }

    /// Why the call failed; `None` on success.
    pub fn failure(&self) -> Option<&Failure> {
        self.outcome.failure()
    }

    /// The kind of failure; `None` on success.
    pub fn kind(&self) -> Option<ErrorKind> {
        self.failure().map(|failure| failure.kind)
    }

    /// The tool's own error code, for [`ErrorKind::ToolError`] failures
    /// that name one.
    pub fn code(&self) -> Option<&str> {
        self.failure().and_then(|failure| failure.code.as_deref())
    }

    /// The tool's JSON result, on success.
    pub fn value(&self) -> Option<&Value> {
        self.result().ok().map(|success| &success.value)
    }

    /// The protocol name of the outcome: `ok` or the error kind.
    pub fn outcome_name(&self) -> &'static str {
        self.outcome.name()
    }

    /// What the model reads in a provider's tool-result message: the
    /// result, or `error (kind): message` (`tool error (code): message` for
    /// a tool's own error), cut at 32 KiB with a note.
    pub fn text(&self) -> String {
        render::model_text(self.result())
    }

    /// A one-line presentation for humans.
    pub fn human_line(&self) -> String {
        render::human_line(&self.tool, self.result(), self.presented.as_deref(), self.duration.as_secs_f64() * 1e3)
    }
}

/// What a guest wrote to one stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// The first bytes written, at most the cap, as (lossy) UTF-8.
    pub text: String,
    /// Bytes written past the cap and dropped.
    pub dropped: u64,
}
