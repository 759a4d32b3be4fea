//! The one place a finished call is reported to metrics and traces
//! ([`Telemetry::finish`]), from its [`Timeline`].
//!
//! Everything here happens once, after the audit record is written, from
//! the finished [`ToolResult`]. Nothing here reads the call's arguments or
//! result: metrics see the tool, the outcome kind, fuel and durations;
//! spans see the same and a principal hashed or left out as configured.

use crate::metrics::Metrics;
use crate::otel::Traces;
use airlock_core::call::ToolResult;
use airlock_core::timeline::Timeline;
use airlock_core::trace_parent::TraceParent;
use airlock_runtime::loader::LoadedTool;
use std::sync::Arc;

/// The host's metrics and, when `[traces]` names an endpoint, its span
/// exporter: one per host, for its whole life.
pub(crate) struct Telemetry {
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) traces: Option<Traces>,
}

impl Telemetry {
    /// A timeline for a call received now.
    pub(crate) fn timeline(&self) -> Timeline {
        Timeline::start(self.traces.is_some())
    }

    /// Report a finished call: its counters and histograms, and its spans
    /// when they are sent. `tool` is the resolved tool, when the call got
    /// that far.
    pub(crate) fn finish(
        &self,
        timeline: &Timeline,
        result: &ToolResult,
        tool: Option<&LoadedTool>,
        principal: &str,
        parent: Option<&TraceParent>,
    ) {
        self.metrics.call_finished(timeline, result, tool.map(|t| t.name.as_str()), principal);
        if let Some(traces) = &self.traces {
            traces.call_finished(timeline, result, tool.map(|t| t.name.as_str()), principal, parent);
        }
    }
}
