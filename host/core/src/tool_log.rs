//! A tool's log lines as a front end forwards them: the [`LogLevel`] of a
//! line, and the [`LogSink`] a front end hands over with a call so that
//! the tool's lines reach its client too.
//!
//! Lines come from the guest (`airlock:tool/log`, contract 0.3.0). The
//! sandbox cleans each one to one line, cuts it at `max_log_line_bytes`
//! and stops after `max_log_lines` of a call; a sink only ever sees lines
//! that passed those checks. The host hands a call's sink to the sandbox
//! only when the operator turned `client_log` on for the tool: by default
//! a tool's lines go to the operator's log and nowhere else.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

/// How much a log line matters, as the tool wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// Detail for someone debugging the tool.
    Debug,
    /// What the tool is doing.
    Info,
    /// Something unexpected that the tool got past.
    Warning,
    /// Something that failed.
    Error,
}

impl LogLevel {
    /// The level's name as tools write it (`debug`, `info`, `warning`,
    /// `error`).
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
        }
    }
}

impl fmt::Display for LogLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a call's log lines go besides the operator's log. A front end
/// implements it for a client that may be shown them; a call without one
/// logs for the operator only.
pub trait LogSink: fmt::Debug + Send + Sync {
    /// Send one line, at `level`, on behalf of `tool`. The host awaits it
    /// before sending the next, and the last before the call's result:
    /// lines arrive in the order the guest wrote them, before the result.
    fn line(&self, tool: &str, level: LogLevel, text: String) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}
