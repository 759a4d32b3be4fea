//! Log lines on stderr: text for a person, or one JSON object per line for
//! a log collector; client errors counted and rate-limited (`client_log`).

use std::io::IsTerminal;

/// How log lines are written.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line: `timestamp`, `level`, `target`, `message` and the event's fields.
    Json,
}

/// Install the global subscriber: `-v` levels, `RUST_LOG` overriding them.
pub fn init_logging(verbose: u8, format: LogFormat) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let default = match verbose {
        0 => "warn",
        1 => "info",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colour codes only for a person at a terminal: a client or a log file
    // reading a pipe would get them as literal escape sequences.
    let text = (format == LogFormat::Text).then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(std::io::stderr().is_terminal())
            .with_target(false)
    });
    let json = (format == LogFormat::Json).then(|| {
        tracing_subscriber::fmt::layer()
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(false)
            .with_writer(std::io::stderr)
    });
    // Client errors rmcp would log as warnings with the client's data are
    // counted and logged at a bounded rate instead (see `client_log`).
    let _ =
        tracing_subscriber::registry().with(airlock::QuietClientErrors).with(filter).with(text).with(json).try_init();
}
