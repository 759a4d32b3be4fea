//! Errors a client causes (a line that is not JSON-RPC, an unknown method,
//! a request without a valid token) logged so that a hostile client cannot
//! turn them into a log flood: each one at debug level, with what it sent
//! cut to [`MAX_LOGGED_CLIENT_BYTES`], and at most one warning per
//! [`CLIENT_ERROR_LOG_INTERVAL`] counting them.
//!
//! rmcp logs the errors it answers (`-32601` for an unknown method,
//! `-32602` for bad parameters) as warnings carrying the client's method
//! name in full; [`QuietClientErrors`], a layer of the log subscriber,
//! turns those events into the same debug line and count instead.
//!
//! Trusts nothing in what is logged: every piece of client data is cut at
//! a character boundary before it reaches a log line.

use crate::render;
use std::fmt::Write as _;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// At most one warning counting client errors per this interval.
pub const CLIENT_ERROR_LOG_INTERVAL: Duration = Duration::from_secs(60);
/// Longest piece of a client's data written to a log line.
pub const MAX_LOGGED_CLIENT_BYTES: usize = 128;
/// The log target of client errors (`RUST_LOG=airlock::client=debug`
/// shows each one).
pub const CLIENT_LOG_TARGET: &str = "airlock::client";

/// Errors counted since the last warning.
struct Summary {
    last_warning: Option<Instant>,
    unreported: u64,
}

static SUMMARY: Mutex<Summary> = Mutex::new(Summary { last_warning: None, unreported: 0 });

/// A client's request was refused: `what` is the answer (`HTTP 401`,
/// `JSON-RPC -32700`), `detail` why, possibly with the client's data (cut
/// here).
pub fn refused(what: &str, detail: &str) {
    let detail = render::cap(detail, MAX_LOGGED_CLIENT_BYTES);
    tracing::debug!(target: CLIENT_LOG_TARGET, "refused a client's request: {what}: {detail}");
    let count = {
        let mut summary = SUMMARY.lock().unwrap_or_else(PoisonError::into_inner);
        summary.unreported += 1;
        if summary.last_warning.is_some_and(|at| at.elapsed() < CLIENT_ERROR_LOG_INTERVAL) {
            return;
        }
        summary.last_warning = Some(Instant::now());
        std::mem::take(&mut summary.unreported)
    };
    tracing::warn!(
        target: CLIENT_LOG_TARGET,
        count,
        "{count} client requests refused (malformed JSON-RPC, unknown methods or bad parameters, refused \
         authentication) since the last report, which comes at most every {}s; the latest: {what}: {detail}; \
         each one is logged at debug level (RUST_LOG={CLIENT_LOG_TARGET}=debug)",
        CLIENT_ERROR_LOG_INTERVAL.as_secs()
    );
}

/// The messages of rmcp's warnings about errors it answered to a client.
const RMCP_CLIENT_ERRORS: [&str; 2] = ["response error", "rejected peer request"];

/// A log-subscriber layer that takes rmcp's warnings about a client's
/// errors out of the log and counts them through [`refused`] instead.
#[derive(Debug, Default, Clone, Copy)]
pub struct QuietClientErrors;

impl<S: Subscriber> Layer<S> for QuietClientErrors {
    fn event_enabled(&self, event: &Event<'_>, _ctx: Context<'_, S>) -> bool {
        let meta = event.metadata();
        if *meta.level() != Level::WARN || !meta.target().starts_with("rmcp") {
            return true;
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        if !fields.client_error {
            return true;
        }
        refused("JSON-RPC error", &fields.detail);
        false
    }
}

/// The fields of an rmcp warning: whether it is about a client's error,
/// and the others as text (capped while written).
#[derive(Default)]
struct Fields {
    client_error: bool,
    detail: String,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" && !self.client_error {
            let mut text = Capped::new(MAX_LOGGED_CLIENT_BYTES);
            let _ = write!(text, "{value:?}");
            if RMCP_CLIENT_ERRORS.contains(&text.0.as_str()) {
                self.client_error = true;
                return;
            }
        }
        let room = MAX_LOGGED_CLIENT_BYTES.saturating_sub(self.detail.len());
        if room > 0 {
            let mut text = Capped::new(room);
            let _ = write!(text, "{}={value:?} ", field.name());
            self.detail.push_str(&text.0);
        }
    }
}

/// Text written up to a number of bytes, the rest dropped as it is
/// formatted (a client's method name can be megabytes long).
struct Capped(String, usize);

impl Capped {
    fn new(max: usize) -> Self {
        Capped(String::new(), max)
    }
}

impl std::fmt::Write for Capped {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        let room = self.1.saturating_sub(self.0.len());
        let end = text.floor_char_boundary(room.min(text.len()));
        self.0.push_str(text.get(..end).unwrap_or_default());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_text_stops_at_its_size_on_a_character_boundary() {
        let mut text = Capped::new(5);
        let _ = write!(text, "ab{}", "é".repeat(100));
        assert_eq!(text.0, "abé");
    }
}
