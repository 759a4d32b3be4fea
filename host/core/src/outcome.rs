//! The result of a call, as data: a [`Success`] or a [`Failure`] with an
//! error kind the model can act on, and the [`Decision`] that let the call
//! run (or stopped it), held together as one [`CallOutcome`]. A denial, a timeout or a trap is an ordinary value
//! here; only host faults are Rust errors, and even those become
//! [`ErrorKind::Internal`] before they reach a front end.
//!
//! Who has to act on a failure ([`Blame`]) and whether the same call can
//! succeed ([`Retry`]) are data on the [`Failure`] too, as pingora-error
//! carries its error's source and retry: each kind has its defaults
//! ([`ErrorKind::default_blame`], [`ErrorKind::default_retry`]), which
//! [`Failure::new`] takes and a site whose failure differs overrides with
//! [`Failure::blame`] or [`Failure::retry`]. The advice a model reads is
//! rendered from them once (`render::advice`), never written in a message.
//!
//! Nothing here is text for a model or a terminal: front ends render these
//! values at their edge (`render.rs` for the model-facing text, the MCP
//! server, the CLI, the audit log), and none of them reads rendered text
//! back.

use crate::text::tool_char;
use serde::Serialize;
use serde_json::Value;
use std::fmt;

/// Why a call did not produce a good result. The snake_case names are part
/// of the public protocol: front ends and audit records carry them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// No tool has that name.
    UnknownTool,
    /// The arguments are not JSON, too large, or fail the parameters schema.
    InvalidArguments,
    /// The operator's policy forbids the call.
    Denied,
    /// Confirmation was needed and not given.
    Declined,
    /// The wall-clock deadline passed.
    Timeout,
    /// The fuel budget ran out.
    OutOfFuel,
    /// The memory (or table) cap was hit.
    OutOfMemory,
    /// The guest trapped: panic, stack overflow, invalid operation.
    Trapped,
    /// The guest made the host hold more for it than the call's host
    /// limits allow (WASI resources, host memory, open files) and was
    /// stopped.
    HostLimit,
    /// The result was larger than the output cap.
    OutputTooLarge,
    /// The result is not JSON or fails the tool's output schema.
    InvalidOutput,
    /// The tool's own schema (of its parameters or of its result) could
    /// not be applied: the host's validator failed on it (it no longer
    /// compiles, or evaluating it overflowed the validator's stack). A
    /// fault of the tool, whatever the arguments.
    InvalidSchema,
    /// The tool reported an error on purpose.
    ToolError,
    /// The caller cancelled the call.
    Cancelled,
    /// The principal is at one of its quotas (`[quotas]`): calls in flight,
    /// calls per minute or sessions of a tool. Other principals are not
    /// affected; the message names the quota.
    QuotaExceeded,
    /// The host had no room for the call in its memory budget
    /// (`[engine] memory_budget_mib`) before the call's deadline: other
    /// calls held it. Nothing ran; the same call may succeed later.
    Busy,
    /// The call needs the approval of a person on Airlock's approval page
    /// (the principal it acts for, or the approver the operator names),
    /// and nobody has given it yet. Nothing ran; the message has the link
    /// to relay, and the same call made again after the approval runs.
    ApprovalRequired,
    /// The host could not run the call (e.g. a granted directory vanished).
    Internal,
}

impl ErrorKind {
    /// The protocol name, e.g. `out_of_fuel`.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::UnknownTool => "unknown_tool",
            ErrorKind::InvalidArguments => "invalid_arguments",
            ErrorKind::Denied => "denied",
            ErrorKind::Declined => "declined",
            ErrorKind::Timeout => "timeout",
            ErrorKind::OutOfFuel => "out_of_fuel",
            ErrorKind::OutOfMemory => "out_of_memory",
            ErrorKind::Trapped => "trapped",
            ErrorKind::HostLimit => "host_limit",
            ErrorKind::OutputTooLarge => "output_too_large",
            ErrorKind::InvalidOutput => "invalid_output",
            ErrorKind::InvalidSchema => "invalid_schema",
            ErrorKind::ToolError => "tool_error",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::QuotaExceeded => "quota_exceeded",
            ErrorKind::Busy => "busy",
            ErrorKind::ApprovalRequired => "approval_required",
            ErrorKind::Internal => "internal",
        }
    }

    /// Every kind, for tests and documentation.
    pub const ALL: [ErrorKind; 18] = [
        ErrorKind::UnknownTool,
        ErrorKind::InvalidArguments,
        ErrorKind::Denied,
        ErrorKind::Declined,
        ErrorKind::Timeout,
        ErrorKind::OutOfFuel,
        ErrorKind::OutOfMemory,
        ErrorKind::Trapped,
        ErrorKind::HostLimit,
        ErrorKind::OutputTooLarge,
        ErrorKind::InvalidOutput,
        ErrorKind::InvalidSchema,
        ErrorKind::ToolError,
        ErrorKind::Cancelled,
        ErrorKind::QuotaExceeded,
        ErrorKind::Busy,
        ErrorKind::ApprovalRequired,
        ErrorKind::Internal,
    ];

    /// Who has to act on a failure of this kind, unless its site says
    /// otherwise ([`Failure::blame`]).
    pub fn default_blame(self) -> Blame {
        match self {
            ErrorKind::UnknownTool
            | ErrorKind::InvalidArguments
            | ErrorKind::Denied
            | ErrorKind::Declined
            | ErrorKind::Timeout
            | ErrorKind::OutOfFuel
            | ErrorKind::OutOfMemory
            | ErrorKind::OutputTooLarge
            | ErrorKind::Cancelled
            | ErrorKind::QuotaExceeded
            | ErrorKind::ApprovalRequired => Blame::Caller,
            ErrorKind::Trapped
            | ErrorKind::HostLimit
            | ErrorKind::InvalidOutput
            | ErrorKind::InvalidSchema
            | ErrorKind::ToolError => Blame::Tool,
            ErrorKind::Busy | ErrorKind::Internal => Blame::Host,
        }
    }

    /// Whether the same call can succeed after a failure of this kind,
    /// unless its site says otherwise ([`Failure::retry`]).
    pub fn default_retry(self) -> Retry {
        match self {
            // What the call asks is what fails: a smaller input, another
            // name or other arguments may work. A timeout counts here: the
            // tool's own deadline ran out on what it was asked to do.
            ErrorKind::UnknownTool
            | ErrorKind::InvalidArguments
            | ErrorKind::Denied
            | ErrorKind::Timeout
            | ErrorKind::OutOfFuel
            | ErrorKind::OutOfMemory
            | ErrorKind::OutputTooLarge => Retry::WithChanges,
            ErrorKind::Trapped | ErrorKind::HostLimit | ErrorKind::InvalidOutput | ErrorKind::InvalidSchema => {
                Retry::No
            }
            ErrorKind::Declined | ErrorKind::ApprovalRequired => Retry::AfterApproval,
            ErrorKind::Cancelled | ErrorKind::QuotaExceeded | ErrorKind::Busy | ErrorKind::Internal => Retry::Later,
            ErrorKind::ToolError => Retry::Unknown,
        }
    }
}

/// Who has to change something for a failed call to work. The snake_case
/// names ([`Blame::as_str`]) are protocol, as the kinds are: MCP results
/// carry them in `_meta` and audit records in `blame`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Blame {
    /// The caller: the call as sent (the tool it names, its arguments, how
    /// much it asks for) or how much its principal sends at once. The model
    /// can change it.
    Caller,
    /// The tool: its code or its schemas. Only its author can fix it.
    Tool,
    /// The operator: the host's settings (policy, limits, budget, the
    /// approval page) or what the host stands on (an audit log that cannot
    /// be written).
    Operator,
    /// The host itself: it had no room, was starting or stopping, or failed
    /// on its own. Nothing about the call is wrong.
    Host,
}

impl Blame {
    /// The protocol name, e.g. `caller`.
    pub fn as_str(self) -> &'static str {
        match self {
            Blame::Caller => "caller",
            Blame::Tool => "tool",
            Blame::Operator => "operator",
            Blame::Host => "host",
        }
    }

    /// Every blame, for tests and documentation.
    pub const ALL: [Blame; 4] = [Blame::Caller, Blame::Tool, Blame::Operator, Blame::Host];
}

impl fmt::Display for Blame {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether the same call can succeed if it is sent again. The snake_case
/// names ([`Retry::as_str`]) are protocol, as the kinds are: MCP results
/// carry them in `_meta` and audit records in `retry`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Retry {
    /// The same call will fail again, and nothing the caller can change
    /// about it helps: whoever is blamed (the tool's author, the operator)
    /// has to act first.
    No,
    /// The same call will fail again until the caller changes it (its
    /// arguments, the tool it names, how much it asks for).
    WithChanges,
    /// The same call may succeed later, unchanged: the host had no room, a
    /// quota refills, something the call waited for was slow or out of
    /// reach, the server restarts.
    Later,
    /// The same call runs once a person has approved it.
    AfterApproval,
    /// The host cannot tell: the tool reported the failure itself
    /// ([`ErrorKind::ToolError`]), and its message is what says whether the
    /// same call can succeed.
    Unknown,
}

impl Retry {
    /// The protocol name, e.g. `with_changes`.
    pub fn as_str(self) -> &'static str {
        match self {
            Retry::No => "no",
            Retry::WithChanges => "with_changes",
            Retry::Later => "later",
            Retry::AfterApproval => "after_approval",
            Retry::Unknown => "unknown",
        }
    }

    /// Every retry, for tests and documentation.
    pub const ALL: [Retry; 5] = [Retry::No, Retry::WithChanges, Retry::Later, Retry::AfterApproval, Retry::Unknown];
}

impl fmt::Display for Retry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed call: its kind, a message written for the model, who has to
/// act on it and whether the same call can succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// What went wrong and what would work, for the model. Whether to call
    /// again is not said here: it is rendered from `blame` and `retry`.
    pub message: String,
    /// The tool's own error code, for [`ErrorKind::ToolError`].
    pub code: Option<String>,
    /// Who has to change something for the call to work.
    pub blame: Blame,
    /// Whether the same call can succeed if it is sent again.
    pub retry: Retry,
}

impl Failure {
    /// A failure of `kind` with `message`, blamed and retried as the kind's
    /// defaults say ([`ErrorKind::default_blame`],
    /// [`ErrorKind::default_retry`]).
    ///
    /// ```
    /// use airlock_core::outcome::{Blame, ErrorKind, Failure, Retry};
    ///
    /// let busy = Failure::new(ErrorKind::Busy, "the host is busy");
    /// assert_eq!((busy.blame, busy.retry), (Blame::Host, Retry::Later));
    /// // A site whose failure differs from its kind's says so.
    /// let capped = Failure::new(ErrorKind::Internal, "more than the whole budget")
    ///     .blame(Blame::Operator)
    ///     .retry(Retry::No);
    /// assert_eq!((capped.blame, capped.retry), (Blame::Operator, Retry::No));
    /// ```
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), code: None, blame: kind.default_blame(), retry: kind.default_retry() }
    }

    /// The error a tool reported, made safe to show: the code checked by
    /// [`tool_code`] and the message cleaned by [`tool_message`]. Every
    /// [`ErrorKind::ToolError`] the guest sends is built here.
    pub fn tool_error(message: &str, code: Option<&str>) -> Self {
        Self { code: code.map(tool_code), ..Self::new(ErrorKind::ToolError, tool_message(message)) }
    }

    /// The same failure blamed on `blame`, where it differs from its kind's
    /// default.
    #[must_use]
    pub fn blame(mut self, blame: Blame) -> Self {
        self.blame = blame;
        self
    }

    /// The same failure with `retry`, where it differs from its kind's
    /// default.
    #[must_use]
    pub fn retry(mut self, retry: Retry) -> Self {
        self.retry = retry;
        self
    }
}

/// Longest tool error code shown, in bytes (see [`tool_code`]).
pub const MAX_TOOL_ERROR_CODE: usize = 64;

/// Longest tool error message kept, in bytes; the rest is cut with a note.
pub const MAX_TOOL_ERROR_MESSAGE: usize = 8 << 10;

/// The code shown in place of a tool error code that is not
/// `[a-z0-9_.-]{1,64}`; the code as sent is dropped.
pub const INVALID_TOOL_CODE: &str = "invalid_code";

/// A tool error code as shown: `code` when it is 1 to
/// [`MAX_TOOL_ERROR_CODE`] bytes of `a-z`, `0-9`, `_`, `.` and `-`;
/// otherwise [`INVALID_TOOL_CODE`]. A code is data for programs: anything
/// else (spaces, capitals, newlines, a megabyte) is not echoed anywhere,
/// so a tool cannot write text that reads as the host's.
pub fn tool_code(code: &str) -> String {
    let valid = !code.is_empty()
        && code.len() <= MAX_TOOL_ERROR_CODE
        && code.bytes().all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-'));
    if valid { code.to_owned() } else { INVALID_TOOL_CODE.to_owned() }
}

/// A tool error message as kept: control characters removed except `\n`
/// and `\t` (`\r\n` and the Unicode line and paragraph separators become
/// `\n`; bidirectional overrides are removed), cut at
/// [`MAX_TOOL_ERROR_MESSAGE`] bytes with a note saying how much was cut.
/// Line breaks are kept for tracebacks; where the message is rendered for
/// the model, every line after the first is indented (`render.rs`), so no
/// line of it can read as a new line of the host's.
pub fn tool_message(message: &str) -> String {
    let mut clean = String::with_capacity(message.len().min(MAX_TOOL_ERROR_MESSAGE + 64));
    let mut dropped = 0usize;
    for c in message.chars() {
        // Once a character does not fit, nothing after it is kept either.
        if dropped > 0 || clean.len() + c.len_utf8() > MAX_TOOL_ERROR_MESSAGE {
            dropped += c.len_utf8();
            continue;
        }
        if let Some(kept) = tool_char(c) {
            clean.push(kept);
        }
    }
    if dropped > 0 {
        clean.push_str(&format!(
            "… [{dropped} more bytes cut: a tool error message is kept to {MAX_TOOL_ERROR_MESSAGE} bytes]"
        ));
    }
    clean
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

/// A call that produced a good result.
#[derive(Debug, Clone, PartialEq)]
pub struct Success {
    /// The tool's JSON result, checked against its output schema.
    pub value: Value,
    /// A sentence the host adds for the model after the result: that the
    /// call's session was reset although the call produced a result (the
    /// interpreter recovered from its memory cap).
    pub note: Option<String>,
    /// The content blocks the tool attached while it ran (contract 0.3.0),
    /// in order, each checked as it was attached; shown after the result.
    pub blocks: Vec<crate::content::Block>,
}

impl Success {
    /// A result with no note and no content blocks.
    pub fn new(value: Value) -> Self {
        Self { value, note: None, blocks: Vec::new() }
    }
}

/// What was decided about a call before it ran. The protocol names
/// ([`Decision::as_str`]) are part of the audit record format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Decision {
    /// The policy allowed the call.
    #[serde(rename = "allow")]
    Allow,
    /// The policy denied the call.
    #[serde(rename = "deny")]
    Deny,
    /// The policy asked and the user confirmed.
    #[serde(rename = "ask:confirmed")]
    AskConfirmed,
    /// The policy asked and the user declined (or could not be asked).
    #[serde(rename = "ask:declined")]
    AskDeclined,
    /// The policy asked and the question went to the client with a signed
    /// `requestState` (a fleet, MCP 2026-07-28): nothing ran here, and the
    /// call runs on whichever replica the client sends the answer to.
    #[serde(rename = "ask:pending")]
    AskPending,
    /// The call failed before the policy was consulted (quota, unknown
    /// tool, invalid arguments).
    #[serde(rename = "not_reached")]
    NotReached,
}

impl Decision {
    /// The protocol name: `allow`, `deny`, `ask:confirmed`, `ask:declined`,
    /// `ask:pending` or `not_reached`.
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Deny => "deny",
            Decision::AskConfirmed => "ask:confirmed",
            Decision::AskDeclined => "ask:declined",
            Decision::AskPending => "ask:pending",
            Decision::NotReached => "not_reached",
        }
    }

    /// Every decision, for tests and documentation.
    pub const ALL: [Decision; 6] = [
        Decision::Allow,
        Decision::Deny,
        Decision::AskConfirmed,
        Decision::AskDeclined,
        Decision::AskPending,
        Decision::NotReached,
    ];
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a call was refused before it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// It failed before the policy was consulted (a quota, an unknown tool,
    /// invalid arguments, the host shutting down).
    NotReached,
    /// The policy denied it.
    Denied,
    /// The policy asked and the user declined (or could not be asked).
    Declined,
    /// The policy asked and the question went to the client
    /// ([`Decision::AskPending`]).
    Pending,
}

/// What let a call run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Authority {
    /// The policy allowed it.
    Allowed,
    /// The policy asked and the user confirmed.
    Confirmed,
}

impl Authority {
    /// The decision that let the call run.
    pub fn decision(self) -> Decision {
        match self {
            Authority::Allowed => Decision::Allow,
            Authority::Confirmed => Decision::AskConfirmed,
        }
    }
}

/// What became of a call: refused before it ran, with only a failure, or
/// authorized and run, with a result or a failure. The [`Decision`] is read
/// from it, so a denied call with a result, or a result nobody authorized,
/// cannot be built.
///
/// `S` is what a success carries: the tool's [`Success`] in a result, `()`
/// in an audit record, which keeps the outcome but not the value.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome<S = Success> {
    /// Refused before it ran.
    Refused {
        /// Why it was refused.
        refusal: Refusal,
        /// What the model reads about it.
        failure: Failure,
    },
    /// Authorized and run (or stopped while it ran, or withheld after).
    Ran {
        /// What let it run.
        authority: Authority,
        /// The tool's result, or why there is none.
        result: Result<S, Failure>,
    },
}

impl<S> CallOutcome<S> {
    /// A call refused before the policy was consulted.
    pub fn not_reached(failure: Failure) -> Self {
        CallOutcome::Refused { refusal: Refusal::NotReached, failure }
    }

    /// What was decided about the call.
    pub fn decision(&self) -> Decision {
        match self {
            CallOutcome::Refused { refusal: Refusal::NotReached, .. } => Decision::NotReached,
            CallOutcome::Refused { refusal: Refusal::Denied, .. } => Decision::Deny,
            CallOutcome::Refused { refusal: Refusal::Declined, .. } => Decision::AskDeclined,
            CallOutcome::Refused { refusal: Refusal::Pending, .. } => Decision::AskPending,
            CallOutcome::Ran { authority, .. } => authority.decision(),
        }
    }

    /// The success, or the failure.
    pub fn result(&self) -> Result<&S, &Failure> {
        match self {
            CallOutcome::Refused { failure, .. } => Err(failure),
            CallOutcome::Ran { result, .. } => result.as_ref(),
        }
    }

    /// The success, or the failure, by value.
    pub fn into_result(self) -> Result<S, Failure> {
        match self {
            CallOutcome::Refused { failure, .. } => Err(failure),
            CallOutcome::Ran { result, .. } => result,
        }
    }

    /// Why the call failed; `None` on success.
    pub fn failure(&self) -> Option<&Failure> {
        self.result().err()
    }

    /// The protocol name of the outcome: `ok` or the error kind.
    pub fn name(&self) -> &'static str {
        self.failure().map_or("ok", |failure| failure.kind.as_str())
    }

    /// Replace whatever the call produced with `failure`, keeping what was
    /// decided: a result that must not be handed out (its audit record
    /// could not be written).
    pub fn withhold(&mut self, withheld: Failure) {
        match self {
            CallOutcome::Refused { failure, .. } => *failure = withheld,
            CallOutcome::Ran { result, .. } => *result = Err(withheld),
        }
    }

    /// The same outcome without the success's value.
    pub fn without_value(&self) -> CallOutcome<()> {
        match self {
            CallOutcome::Refused { refusal, failure } => {
                CallOutcome::Refused { refusal: *refusal, failure: failure.clone() }
            }
            CallOutcome::Ran { authority, result } => {
                CallOutcome::Ran { authority: *authority, result: result.as_ref().map(|_| ()).map_err(Failure::clone) }
            }
        }
    }
}

#[cfg(test)]
mod tests;
