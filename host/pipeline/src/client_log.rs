//! Errors a client causes (a line that is not JSON-RPC, an unknown method,
//! a request without a valid token) logged so that a hostile client cannot
//! turn them into a log flood: each one at debug level, with what it sent
//! cut to `[log] max_client_bytes` (`DEFAULT_MAX_LOGGED_CLIENT_BYTES`), and
//! at most one warning per `[log] client_error_interval_secs`
//! (`DEFAULT_CLIENT_ERROR_LOG_INTERVAL`) counting them. The log is the
//! process's, so these two settings are too: [`configure`] puts the
//! configuration's in force (at start and at each reload).
//!
//! rmcp logs the errors it answers (`-32601` for an unknown method,
//! `-32602` for bad parameters) as warnings carrying the client's method
//! name in full; [`QuietClientErrors`], a layer of the log subscriber,
//! turns those events into the same debug line and count instead.
//!
//! Trusts nothing in what is logged: every piece of client data is cut at
//! a character boundary before it reaches a log line.

use airlock_core::text;
use airlock_settings::service::LogSettings;
use airlock_settings::service::{DEFAULT_CLIENT_ERROR_LOG_INTERVAL, DEFAULT_MAX_LOGGED_CLIENT_BYTES};
use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// How much of an rmcp message is read to tell whether it is about a
/// client's error (longer than each of [`RMCP_CLIENT_ERRORS`]).
const MESSAGE_MATCH_BYTES: usize = 64;
/// The log target of client errors (`RUST_LOG=airlock::client=debug`
/// shows each one).
pub const CLIENT_LOG_TARGET: &str = "airlock::client";

/// Errors counted since the last warning.
struct Summary {
    last_warning: Option<Instant>,
    unreported: u64,
}

static SUMMARY: Mutex<Summary> = Mutex::new(Summary { last_warning: None, unreported: 0 });

/// `[log] max_client_bytes` in force.
static MAX_CLIENT_BYTES: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_LOGGED_CLIENT_BYTES);
/// `[log] client_error_interval_secs` in force.
static INTERVAL_SECS: AtomicU64 = AtomicU64::new(DEFAULT_CLIENT_ERROR_LOG_INTERVAL.as_secs());

/// Put `settings` in force for every log line written from now on.
pub fn configure(settings: &LogSettings) {
    MAX_CLIENT_BYTES.store(settings.max_client_bytes, Ordering::Relaxed);
    INTERVAL_SECS.store(settings.client_error_interval.as_secs(), Ordering::Relaxed);
}

/// The settings in force.
fn current() -> LogSettings {
    LogSettings {
        max_client_bytes: MAX_CLIENT_BYTES.load(Ordering::Relaxed),
        client_error_interval: Duration::from_secs(INTERVAL_SECS.load(Ordering::Relaxed)),
    }
}

/// What of a client's `detail` a log line holds under `settings`: all of
/// it up to `max_client_bytes`, else cut to that many bytes ending in `…`.
fn logged<'a>(detail: &'a str, settings: &LogSettings) -> Cow<'a, str> {
    text::cap(detail, settings.max_client_bytes)
}

/// A client's request was refused: `what` is the answer (`HTTP 401`,
/// `JSON-RPC -32700`), `detail` why, possibly with the client's data (cut
/// here).
pub fn refused(what: &str, detail: &str) {
    let settings = current();
    let interval = settings.client_error_interval;
    let detail = logged(detail, &settings);
    tracing::debug!(target: CLIENT_LOG_TARGET, "refused a client's request: {what}: {detail}");
    let count = {
        let mut summary = SUMMARY.lock().unwrap_or_else(PoisonError::into_inner);
        summary.unreported += 1;
        if summary.last_warning.is_some_and(|at| at.elapsed() < interval) {
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
        interval.as_secs()
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
        let mut fields = Fields { max: current().max_client_bytes, ..Fields::default() };
        event.record(&mut fields);
        if !fields.client_error {
            return true;
        }
        refused("JSON-RPC error", &fields.detail);
        false
    }
}

/// The fields of an rmcp warning: whether it is about a client's error,
/// and the others as text (capped at `max` bytes while written).
#[derive(Default)]
struct Fields {
    client_error: bool,
    detail: String,
    max: usize,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" && !self.client_error {
            let mut text = Capped::new(MESSAGE_MATCH_BYTES);
            let _ = write!(text, "{value:?}");
            if RMCP_CLIENT_ERRORS.contains(&text.0.as_str()) {
                self.client_error = true;
                return;
            }
        }
        let room = self.max.saturating_sub(self.detail.len());
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
    fn a_client_string_of_exactly_max_client_bytes_is_logged_whole_and_one_more_is_cut() {
        let settings = crate::config::testing::parse("[log]\nmax_client_bytes = 20\n").unwrap().log;
        assert_eq!(settings.max_client_bytes, 20);
        let exact = "m".repeat(20);
        assert_eq!(logged(&exact, &settings), exact.as_str());
        let over = "m".repeat(21);
        let cut = logged(&over, &settings);
        assert!(cut.ends_with(text::ELLIPSIS) && cut.len() <= 20, "{cut}");
        assert_eq!(cut, format!("{}{}", "m".repeat(20 - text::ELLIPSIS.len()), text::ELLIPSIS));
        // The default holds until a configuration says otherwise.
        let default = LogSettings::default();
        assert_eq!(
            logged(&"m".repeat(DEFAULT_MAX_LOGGED_CLIENT_BYTES), &default).len(),
            DEFAULT_MAX_LOGGED_CLIENT_BYTES
        );
        assert!(logged(&"m".repeat(DEFAULT_MAX_LOGGED_CLIENT_BYTES + 1), &default).ends_with(text::ELLIPSIS));
    }

    #[test]
    fn rmcp_messages_are_recognised_whatever_the_cap() {
        assert!(RMCP_CLIENT_ERRORS.iter().all(|message| message.len() < MESSAGE_MATCH_BYTES));
        // Matching under `[log] max_client_bytes` would miss one of them at
        // the least value accepted.
        assert!(
            RMCP_CLIENT_ERRORS.iter().any(|message| message.len() > airlock_settings::service::MIN_LOGGED_CLIENT_BYTES)
        );
    }

    #[test]
    fn capped_text_stops_at_its_size_on_a_character_boundary() {
        let mut text = Capped::new(5);
        let _ = write!(text, "ab{}", "é".repeat(100));
        assert_eq!(text.0, "abé");
    }
}
