//! `airlock:tool/log` (contract 0.3.0): lines a tool writes for the
//! operator, as `tracing` events under the target [`TARGET`] at the line's
//! level (`warning` is `WARN`), tagged with the tool, the call id and the
//! principal. They never reach the model or
//! the client.
//!
//! Trusts nothing the guest writes: each line is cleaned to one line (no
//! control or bidirectional formatting characters, so it cannot forge
//! another line of the log) and cut at `max_log_line_bytes`; a call's
//! lines past `max_log_lines` are counted, not logged, and the count is
//! logged once when the call ends. Lines written while the metadata is
//! read are dropped (no call, no one to tag them with).

use airlock_core::content::clean_line;
use airlock_settings::limits::Limits;
use wasmtime::component::{HasSelf, Linker};

use crate::bindings::v0_3::airlock::tool::log as wit;

/// The `tracing` target of tools' lines: `RUST_LOG=airlock::tool_log=debug`
/// shows them all, `airlock::tool_log=off` none.
pub const TARGET: &str = "airlock::tool_log";

/// Who a line is tagged with.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tags {
    pub(crate) tool: String,
    pub(crate) call_id: String,
    pub(crate) principal: String,
}

/// The log lines of the call being served.
pub(crate) struct ToolLog {
    /// `None` while the metadata is read.
    tags: Option<Tags>,
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
            max_lines: limits.max_log_lines,
            max_line_bytes: limits.max_log_line_bytes,
            written: 0,
            dropped: 0,
        }
    }

    /// Start a call under `limits` whose lines are tagged with `tags`
    /// (none: dropped).
    pub(crate) fn renew(&mut self, limits: &Limits, tags: Option<Tags>) {
        *self = Self { tags, ..Self::new(limits) };
    }

    /// The call is over: say how many lines were dropped, once.
    pub(crate) fn finish(&mut self) {
        if self.dropped > 0
            && let Some(tags) = &self.tags
        {
            tracing::warn!(
                target: TARGET,
                tool = %tags.tool,
                call_id = %tags.call_id,
                principal = %tags.principal,
                dropped = self.dropped,
                "{} more lines dropped: the call wrote more than max_log_lines = {}",
                self.dropped,
                self.max_lines
            );
        }
        self.dropped = 0;
        self.written = 0;
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
        let line = airlock_core::render::cap(&line, self.max_line_bytes);
        let (tool, call_id, principal) = (&tags.tool, &tags.call_id, &tags.principal);
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_past_the_cap_are_counted_not_written() {
        let limits = Limits { max_log_lines: 2, ..Limits::default() };
        let mut log = ToolLog::new(&limits);
        wit::Host::write(&mut log, wit::Level::Info, "while reading metadata".into());
        assert_eq!((log.written, log.dropped), (0, 0), "no call, no line");
        log.renew(&limits, Some(Tags { tool: "t".into(), call_id: "c".into(), principal: "p".into() }));
        for _ in 0..5 {
            wit::Host::write(&mut log, wit::Level::Error, "x\ny".into());
        }
        assert_eq!((log.written, log.dropped), (2, 3));
        log.finish();
        assert_eq!((log.written, log.dropped), (0, 0), "reported once");
    }
}
