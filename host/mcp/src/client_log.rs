//! A tool's log lines as MCP `notifications/message`, for the tools whose
//! operator turned `client_log` on (the pipeline hands the sink to no
//! other tool).
//!
//! On the revisions with `initialize` (whose answer declares the `logging`
//! capability), the client's `logging/setLevel` sets the least level sent
//! for its session; before that, every line is. 2026-07-28 deprecates
//! logging: a request gets lines only when its `_meta` names the least
//! level (`io.modelcontextprotocol/logLevel`), and none otherwise. Each notification names the tool
//! as its `logger` and carries the line as its `data`, as the sandbox
//! checked it (one line, capped, at most `max_log_lines` a call, the
//! operator's secrets taken out); the lines of a call arrive in order,
//! before its result.

#![allow(deprecated, reason = "rmcp marks logging deprecated (SEP-2577, 2026-07-28); the earlier revisions have it")]

use super::progress::Route;
use super::stdio::CallLines;
use airlock_core::tool_log::{LogLevel, LogSink};
use rmcp::RoleServer;
use rmcp::model::{LoggingLevel, LoggingMessageNotification, LoggingMessageNotificationParam, ServerNotification};
use rmcp::service::Peer;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

/// The least level a session's client asked for with `logging/setLevel`;
/// each session has its own, and a new one has none (every line is sent).
#[derive(Debug, Default)]
pub(crate) struct SessionLevel(AtomicU8);

impl SessionLevel {
    /// A level fixed at `level` (a 2026-07-28 request's own).
    pub(crate) fn at(level: LoggingLevel) -> Self {
        Self(AtomicU8::new(rank(level)))
    }

    /// What `logging/setLevel` asked for.
    pub(crate) fn set(&self, level: LoggingLevel) {
        self.0.store(rank(level), Ordering::Relaxed);
    }

    /// Whether a line at `level` goes to the client.
    fn admits(&self, level: LoggingLevel) -> bool {
        rank(level) >= self.0.load(Ordering::Relaxed)
    }
}

/// A level's place in MCP's order, from 1 (`debug`) up; 0 is below all.
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 1,
        LoggingLevel::Info => 2,
        LoggingLevel::Notice => 3,
        LoggingLevel::Warning => 4,
        LoggingLevel::Error => 5,
        LoggingLevel::Critical => 6,
        LoggingLevel::Alert => 7,
        LoggingLevel::Emergency => 8,
    }
}

/// MCP's name for a tool's level.
fn mcp_level(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
    }
}

/// Where one call's log lines go: the client that made it.
pub(crate) struct LogNotifier {
    route: Route,
    session: Arc<SessionLevel>,
}

impl LogNotifier {
    /// A sink for a call that came over `peer` (or, on stdio, queued with
    /// its answer on `lines`), from a session whose level is `session`.
    pub(crate) fn new(peer: Peer<RoleServer>, lines: Option<CallLines>, session: Arc<SessionLevel>) -> Self {
        Self { route: Route::new(peer, lines), session }
    }
}

impl std::fmt::Debug for LogNotifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogNotifier").field("session", &self.session).finish_non_exhaustive()
    }
}

impl LogSink for LogNotifier {
    fn line(&self, tool: &str, level: LogLevel, text: String) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        let level = mcp_level(level);
        if !self.session.admits(level) {
            return Box::pin(async {});
        }
        let note = LoggingMessageNotificationParam::new(level, Value::String(text)).with_logger(tool);
        Box::pin(
            self.route.notify(ServerNotification::LoggingMessageNotification(LoggingMessageNotification::new(note))),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_gets_every_line_until_it_sets_a_level() {
        let session = SessionLevel::default();
        assert!(session.admits(LoggingLevel::Debug), "no level set: every line");
        session.set(LoggingLevel::Warning);
        assert!(!session.admits(mcp_level(LogLevel::Info)));
        assert!(session.admits(mcp_level(LogLevel::Warning)));
        assert!(session.admits(mcp_level(LogLevel::Error)));
        session.set(LoggingLevel::Emergency);
        assert!(!session.admits(mcp_level(LogLevel::Error)), "nothing a tool writes is an emergency");
    }
}
