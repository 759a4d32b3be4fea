//! The result of a call, as data: success or an error kind the model can act
//! on. A denial, a timeout or a trap is an ordinary value here; only host
//! faults are Rust errors, and even those become [`ErrorKind::Internal`]
//! before they reach a front end.

use serde::Serialize;
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
    /// The tool reported an error on purpose.
    ToolError,
    /// The caller cancelled the call.
    Cancelled,
    /// The principal is at one of its quotas (`[quotas]`): calls in flight,
    /// calls per minute or sessions of a tool. Other principals are not
    /// affected; the message names the quota.
    QuotaExceeded,
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
            ErrorKind::ToolError => "tool_error",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::QuotaExceeded => "quota_exceeded",
            ErrorKind::Internal => "internal",
        }
    }

    /// Every kind, for tests and documentation.
    pub const ALL: [ErrorKind; 15] = [
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
        ErrorKind::ToolError,
        ErrorKind::Cancelled,
        ErrorKind::QuotaExceeded,
        ErrorKind::Internal,
    ];
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed call: its kind and a message written for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// What went wrong and what would work, for the model.
    pub message: String,
    /// The tool's own error code, for [`ErrorKind::ToolError`].
    pub code: Option<String>,
}

impl Failure {
    /// A failure of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Self { kind, message: message.into(), code: None }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_serde() {
        for kind in ErrorKind::ALL {
            let json = serde_json::to_value(kind).unwrap();
            assert_eq!(json, kind.as_str());
        }
    }
}
