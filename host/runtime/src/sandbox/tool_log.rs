//! `airlock:tool/log` (contract 0.3.0): lines a tool writes for the
//! operator, as `tracing` events under the target [`TARGET`] at the line's
//! level (`warning` is `WARN`), tagged with the tool, the call id and the
//! principal. By default they never reach the client or the model: only
//! a call whose front end handed over a [`LogSink`] (which the pipeline
//! does only for a tool whose operator turned `client_log` on) also sends
//! each line, as logged, to that sink, with secrets withheld as they are
//! from the result (`secrets.rs`: secret header values, well-known
//! credentials, the operator's `secret_patterns`); an MCP client gets them as `notifications/message`
//! and may show them to its model. [`forward`] sends them in order, the
//! last before the call's result, while the guest goes on: a slow client
//! never blocks the guest, and what waits for it is bounded by the
//! call's `max_log_lines` × `max_log_line_bytes`.
//!
//! Trusts nothing the guest writes: each line is cleaned to one line (no
//! control or bidirectional formatting characters, so it cannot forge
//! another line of the log) and cut at `max_log_line_bytes`; a call's
//! lines past `max_log_lines` are counted, not logged, and the count is
//! logged once when the call ends. Lines written while the metadata is
//! read are dropped (no call, no one to tag them with). The sink sees
//! the same lines as the operator's log: cleaned, cut and within
//! `max_log_lines`, never the count of the dropped ones.

use crate::secrets::Scrubber;
use airlock_core::caller::Caller;
use airlock_core::content::clean_line;
use airlock_core::tool_log::{LogLevel, LogSink};
use airlock_settings::limits::Limits;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use wasmtime::component::{HasSelf, Linker};

use crate::bindings::v0_3::airlock::tool::log as wit;

/// The `tracing` target of tools' lines: `RUST_LOG=airlock::tool_log=debug`
/// shows them all, `airlock::tool_log=off` none.
pub const TARGET: &str = "airlock::tool_log";

/// Who a line is tagged with: the tool, and the caller whose call id and
/// principal it names.
#[derive(Debug, Clone)]
pub(crate) struct Tags {
    pub(crate) tool: String,
    pub(crate) caller: Arc<Caller>,
}

/// The log lines of the call being served.
pub(crate) struct ToolLog {
    /// `None` while the metadata is read.
    tags: Option<Tags>,
    /// Where the lines go besides the operator's log (`None`: nowhere).
    sink: Option<Sender>,
    max_lines: usize,
    max_line_bytes: usize,
    written: usize,
    dropped: u64,
}

impl ToolLog {
    /// A log that writes nothing until a call starts.
    pub(crate) fn new(limits: &Limits) -> Self {
        Self {
            tags: None,
            sink: None,
            max_lines: limits.max_log_lines,
            max_line_bytes: limits.max_log_line_bytes,
            written: 0,
            dropped: 0,
        }
    }

    /// Start a call under `limits` whose lines are tagged with `tags`
    /// (none: dropped) and also sent to `sink`, if any.
    pub(crate) fn renew(&mut self, limits: &Limits, tags: Option<Tags>, sink: Option<Sender>) {
        *self = Self { tags, sink, ..Self::new(limits) };
    }

    /// The call is over: say how many lines were dropped, once.
    pub(crate) fn finish(&mut self) {
        if self.dropped > 0
            && let Some(tags) = &self.tags
        {
            tracing::warn!(
                target: TARGET,
                tool = %tags.tool,
                call_id = %tags.caller.call_id,
                principal = %tags.caller.principal,
                dropped = self.dropped,
                "{} more lines dropped: the call wrote more than max_log_lines = {}",
                self.dropped,
                self.max_lines
            );
        }
        self.dropped = 0;
        self.written = 0;
        // The channel belongs to the call: closing it ends `forward`, and a
        // session's next call brings its own.
        self.sink = None;
    }

    /// Link `airlock:tool/log` (0.3.0), answering from the log `project`
    /// finds in the store's data.
    pub(crate) fn add_to_linker<T: Send + 'static>(
        linker: &mut Linker<T>,
        project: fn(&mut T) -> &mut ToolLog,
    ) -> wasmtime::Result<()> {
        wit::add_to_linker::<T, HasSelf<ToolLog>>(linker, project)
    }
}

impl wit::Host for ToolLog {
    fn write(&mut self, level: wit::Level, message: String) {
        let Some(tags) = &self.tags else { return };
        if self.written >= self.max_lines {
            self.dropped = self.dropped.saturating_add(1);
            return;
        }
        self.written += 1;
        let line = clean_line(&message);
        let line = airlock_core::text::cap(&line, self.max_line_bytes);
        let (tool, call_id, principal) = (&tags.tool, &tags.caller.call_id, &tags.caller.principal);
        match level {
            wit::Level::Debug => {
                tracing::debug!(target: TARGET, %tool, %call_id, %principal, "{line}");
            }
            wit::Level::Info => tracing::info!(target: TARGET, %tool, %call_id, %principal, "{line}"),
            wit::Level::Warning => {
                tracing::warn!(target: TARGET, %tool, %call_id, %principal, "{line}");
            }
            wit::Level::Error => {
                tracing::error!(target: TARGET, %tool, %call_id, %principal, "{line}");
            }
        }
        if let Some(sink) = &self.sink {
            // Fails only when the call's forwarding is gone: the line
            // stays in the operator's log.
            let _ = sink.send((level_of(level), line.into_owned()));
        }
    }
}

/// The sending end of a call's log channel: lines that passed the checks,
/// for the client. Unbounded because the sandbox bounds it: at most
/// `max_log_lines` lines of at most `max_log_line_bytes` each per call.
pub(crate) type Sender = mpsc::UnboundedSender<(LogLevel, String)>;

/// A channel for one call's lines: the log's end and [`forward`]'s.
pub(crate) fn channel() -> (Sender, mpsc::UnboundedReceiver<(LogLevel, String)>) {
    mpsc::unbounded_channel()
}

/// Send the lines arriving on `lines` to `sink`, in order, each with the
/// secrets `secrets` finds withheld (as from the result), until the channel closes (the call is
/// over) or, once `ended` fires, no line is left waiting.
pub(crate) async fn forward(
    mut lines: mpsc::UnboundedReceiver<(LogLevel, String)>,
    sink: &dyn LogSink,
    tool: &str,
    secrets: &Scrubber,
    ended: CancellationToken,
) {
    loop {
        let next = tokio::select! {
            biased;
            next = lines.recv() => next,
            () = ended.cancelled() => lines.try_recv().ok(),
        };
        let Some((level, mut text)) = next else { return };
        secrets.scrub(&mut text);
        sink.line(tool, level, text).await;
    }
}

/// The core's name for a level of the contract.
fn level_of(level: wit::Level) -> LogLevel {
    match level {
        wit::Level::Debug => LogLevel::Debug,
        wit::Level::Info => LogLevel::Info,
        wit::Level::Warning => LogLevel::Warning,
        wit::Level::Error => LogLevel::Error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A sink that keeps what reached it.
    #[derive(Debug, Default)]
    struct Lines(Mutex<Vec<(LogLevel, String)>>);

    impl LogSink for Lines {
        fn line(
            &self,
            _tool: &str,
            level: LogLevel,
            text: String,
        ) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
            if let Ok(mut lines) = self.0.lock() {
                lines.push((level, text));
            }
            Box::pin(async {})
        }
    }

    #[test]
    fn lines_past_the_cap_are_counted_not_written() {
        let limits = Limits { max_log_lines: 2, ..Limits::default() };
        let mut log = ToolLog::new(&limits);
        wit::Host::write(&mut log, wit::Level::Info, "while reading metadata".into());
        assert_eq!((log.written, log.dropped), (0, 0), "no call, no line");
        let (sender, receiver) = channel();
        let caller = Caller { principal: "p".into(), call_id: "c".into(), ..Caller::default() };
        let tags = Tags { tool: "t".into(), caller: Arc::new(caller) };
        log.renew(&limits, Some(tags), Some(sender));
        for _ in 0..5 {
            wit::Host::write(&mut log, wit::Level::Error, "x\ny".into());
        }
        assert_eq!((log.written, log.dropped), (2, 3));
        log.finish();
        assert_eq!((log.written, log.dropped), (0, 0), "reported once");
        // The channel closed with the call: `forward` sends what waits and
        // returns without `ended`.
        let sink = Lines::default();
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        runtime.block_on(forward(receiver, &sink, "t", &Scrubber::default(), CancellationToken::new()));
        let seen = sink.0.lock().map(|lines| lines.clone()).unwrap_or_default();
        assert_eq!(seen, vec![(LogLevel::Error, "x y".to_owned()); 2], "the sink sees the lines as logged");
    }

    #[test]
    fn lines_for_the_client_lose_secrets_as_the_result_does() {
        let own = crate::secrets::SecretPatterns::new(vec!["acme_[a-z0-9]{8}".into()]).expect("a pattern");
        let secrets = Scrubber::new(None, Some(Arc::new(own)));
        let (sender, receiver) = channel();
        let line = "key AKIAIOSFODNN7EXAMPLE, acme_abcd1234, plain";
        sender.send((LogLevel::Info, line.into())).expect("the channel is open");
        drop(sender);
        let sink = Lines::default();
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
        runtime.block_on(forward(receiver, &sink, "t", &secrets, CancellationToken::new()));
        let seen = sink.0.lock().map(|lines| lines.clone()).unwrap_or_default();
        assert_eq!(seen, vec![(LogLevel::Info, "key [secret withheld], [secret withheld], plain".to_owned())]);
    }
}
