//! The host's Prometheus metrics: families registered once at start, each
//! series a handful of atomics (`prometheus-client`), rendered as
//! Prometheus text at `/metrics`.
//!
//! # Cost on the call path
//!
//! A finished call costs one read lock and one lookup by tool name (no
//! allocation once the tool has been seen), a few atomic adds and one
//! observation per stage that ran. Series for a tool are created the first
//! time it finishes a call with that outcome.
//!
//! # Cardinality
//!
//! Label values come only from the operator's side or from fixed sets:
//! tools are resolved names (a call to an unknown tool counts under
//! [`UNKNOWN_TOOL`]; at most `[metrics] max_tool_labels` names
//! (`DEFAULT_MAX_TOOL_LABELS`), the rest under [`OTHER`]), outcomes are `ok` or an [`ErrorKind`], stages are the
//! pipeline's. Principals are unbounded (JWT subjects), so per-principal
//! series name at most `[metrics] max_principals` of them, the first seen;
//! every other principal is counted under [`OTHER`].
//!
//! Gauges that mirror state held elsewhere (live sessions, confirmations
//! pending, tools ready, the process's memory and descriptors) are read
//! when scraped, never updated on the call path.

use airlock_core::call::ToolResult;
use airlock_core::outcome::ErrorKind;
use airlock_core::timeline::{Stage, Timeline};
use airlock_settings::service::DEFAULT_MAX_TOOL_LABELS;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

/// The `tool` label of calls to a tool that does not exist.
pub const UNKNOWN_TOOL: &str = "_unknown";
/// The label value of what is past a cardinality cap.
pub const OTHER: &str = "other";
/// The content type of `/metrics`.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Outcomes: `ok`, then every error kind in [`ErrorKind::ALL`] order.
const OUTCOMES: usize = ErrorKind::ALL.len() + 1;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CallLabels {
    tool: String,
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabel {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StageLabel {
    stage: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct QuotaLabels {
    principal: String,
    quota: &'static str,
}

type Histograms<L> = Family<L, Histogram, fn() -> Histogram>;

/// Durations of calls and stages: 10 µs to about 84 s.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-5, 4.0, 12))
}

/// The series of one tool, fetched once.
struct ToolSeries {
    calls: [OnceLock<Counter>; OUTCOMES],
    fuel: Counter,
    duration: Histogram,
    label: String,
}

/// Every metric of one host.
pub struct Metrics {
    registry: Registry,
    calls: Family<CallLabels, Counter>,
    fuel: Family<ToolLabel, Counter>,
    call_duration: Histograms<ToolLabel>,
    stages: [Histogram; Stage::ALL.len()],
    audit_writes: Histogram,
    audit_failures: Counter,
    spans_dropped: Counter,
    in_flight: Gauge,
    reloads: Family<ResultLabel, Counter>,
    quota_refusals: Family<QuotaLabels, Counter>,
    sessions: Gauge,
    confirmations: Gauge,
    tools_configured: Gauge,
    tools_ready: Gauge,
    ready: Gauge,
    resident: Gauge,
    fds: Gauge,
    memory_budget: Gauge,
    memory_reserved: Gauge,
    memory_waiting: Gauge,
    tools: RwLock<HashMap<String, Arc<ToolSeries>>>,
    principals: Mutex<HashSet<String>>,
    max_principals: usize,
    max_tool_labels: usize,
}

/// What `/metrics` reads from elsewhere when it is scraped.
#[derive(Debug, Clone, Copy, Default)]
pub struct Snapshot {
    /// Live interpreter sessions.
    pub sessions: usize,
    /// Components the config names.
    pub tools_configured: usize,
    /// Tools serving now.
    pub tools_ready: usize,
    /// Whether `/readyz` would answer 200.
    pub ready: bool,
    /// The host memory budget: its size, what is reserved, and how many
    /// reservations wait.
    pub memory: Option<airlock_runtime::memory_budget::Snapshot>,
}

impl Metrics {
    /// Every family registered, none with a series yet; at most
    /// `max_principals` principals and `DEFAULT_MAX_TOOL_LABELS` tools
    /// named.
    pub fn new(max_principals: usize) -> Self {
        let mut registry = Registry::default();
        let calls = Family::<CallLabels, Counter>::default();
        registry.register("airlock_calls", "Calls finished, by tool and outcome (ok or the error kind)", calls.clone());
        let fuel = Family::<ToolLabel, Counter>::default();
        registry.register("airlock_fuel_used", "Fuel the guests used, by tool", fuel.clone());
        let call_duration: Histograms<ToolLabel> = Family::new_with_constructor(duration_histogram);
        registry.register(
            "airlock_call_duration_seconds",
            "Time from receipt to result, by tool",
            call_duration.clone(),
        );
        let stage_family: Histograms<StageLabel> = Family::new_with_constructor(duration_histogram);
        registry.register(
            "airlock_stage_duration_seconds",
            "Time spent in each pipeline stage (the audit write is airlock_audit_write_duration_seconds)",
            stage_family.clone(),
        );
        let stages = Stage::ALL.map(|stage| stage_family.get_or_create_owned(&StageLabel { stage: stage.as_str() }));
        let audit_writes = duration_histogram();
        registry.register(
            "airlock_audit_write_duration_seconds",
            "Time to append one audit record (durable as [audit] durability says)",
            audit_writes.clone(),
        );
        let audit_failures = Counter::default();
        registry.register(
            "airlock_audit_write_failures",
            "Audit records that could not be written (the call's result was withheld, or a call with side effects was refused before it ran)",
            audit_failures.clone(),
        );
        let spans_dropped = Counter::default();
        registry.register(
            "airlock_spans_dropped",
            "Finished spans dropped because [traces] max_queued_spans were already waiting for export",
            spans_dropped.clone(),
        );
        let in_flight = Gauge::default();
        registry.register("airlock_calls_in_flight", "Calls received and not yet answered", in_flight.clone());
        let reloads = Family::<ResultLabel, Counter>::default();
        registry.register("airlock_reloads", "Reloads of the configuration, by result (ok or failed)", reloads.clone());
        let quota_refusals = Family::<QuotaLabels, Counter>::default();
        registry.register(
            "airlock_quota_refusals",
            "Calls and sessions refused by a per-principal quota (principals past [metrics] max_principals count as \
             other; quota is call for calls_in_flight, calls_per_minute and sessions_per_tool, or http_sessions)",
            quota_refusals.clone(),
        );
        let sessions = Gauge::default();
        registry.register("airlock_sessions_live", "Live interpreter sessions", sessions.clone());
        let confirmations = Gauge::default();
        registry.register(
            "airlock_confirmations_pending",
            "Calls waiting for the user to answer a confirmation",
            confirmations.clone(),
        );
        let tools_configured = Gauge::default();
        registry.register("airlock_tools_configured", "Components the config names", tools_configured.clone());
        let tools_ready = Gauge::default();
        registry.register("airlock_tools_ready", "Tools serving now", tools_ready.clone());
        let ready = Gauge::default();
        registry.register("airlock_ready", "1 when /readyz answers 200", ready.clone());
        let resident = Gauge::default();
        registry.register(
            "process_resident_memory_bytes",
            "Resident memory of the host process (guest memory included)",
            resident.clone(),
        );
        let fds = Gauge::default();
        registry.register(
            "process_open_fds",
            "File descriptors the host process holds (guests' open files included)",
            fds.clone(),
        );
        let memory_budget = Gauge::default();
        registry.register(
            "airlock_memory_budget_bytes",
            "The host memory budget calls, sessions and compilations reserve from ([engine] memory_budget_mib)",
            memory_budget.clone(),
        );
        let memory_reserved = Gauge::default();
        registry.register(
            "airlock_memory_reserved_bytes",
            "Memory of the budget reserved by calls, sessions and compilations now",
            memory_reserved.clone(),
        );
        let memory_waiting = Gauge::default();
        registry.register(
            "airlock_memory_waiting",
            "Calls, sessions and compilations waiting for room in the memory budget",
            memory_waiting.clone(),
        );
        Self {
            registry,
            calls,
            fuel,
            call_duration,
            stages,
            audit_writes,
            audit_failures,
            spans_dropped,
            in_flight,
            reloads,
            quota_refusals,
            sessions,
            confirmations,
            tools_configured,
            tools_ready,
            ready,
            resident,
            fds,
            memory_budget,
            memory_reserved,
            memory_waiting,
            tools: RwLock::new(HashMap::new()),
            principals: Mutex::new(HashSet::new()),
            max_principals,
            max_tool_labels: DEFAULT_MAX_TOOL_LABELS,
        }
    }

    /// At most `max` tool names labelled (`[metrics] max_tool_labels`);
    /// calls to other tools are counted under the label `other`
    /// (`OTHER`).
    #[must_use]
    pub fn with_max_tool_labels(mut self, max: usize) -> Self {
        self.max_tool_labels = max;
        self
    }

    /// The counter of spans dropped at the export queue (shared with the
    /// span exporter, which counts them).
    pub(crate) fn spans_dropped(&self) -> Counter {
        self.spans_dropped.clone()
    }

    /// A call was received; it counts in flight until the guard is dropped.
    pub(crate) fn call_started(self: &Arc<Self>) -> InFlightGuard {
        self.in_flight.inc();
        InFlightGuard(self.clone())
    }

    /// Count a finished call: by tool and outcome, its fuel, its duration
    /// and each stage it went through. `tool` is the resolved tool's name.
    pub(crate) fn call_finished(&self, timeline: &Timeline, result: &ToolResult, tool: Option<&str>, principal: &str) {
        let series = self.tool(tool.unwrap_or(UNKNOWN_TOOL));
        let outcome =
            result.kind().map_or(0, |kind| ErrorKind::ALL.iter().position(|k| *k == kind).map_or(0, |i| i + 1));
        if let Some(slot) = series.calls.get(outcome) {
            slot.get_or_init(|| {
                self.calls
                    .get_or_create_owned(&CallLabels { tool: series.label.clone(), outcome: result.outcome_name() })
            })
            .inc();
        }
        if let Some(fuel) = result.fuel_used {
            series.fuel.inc_by(fuel);
        }
        series.duration.observe(result.duration.as_secs_f64());
        for (stage, lap) in timeline.laps() {
            match stage {
                // The audit write has its own histogram.
                Stage::Audit => self.audit_writes.observe(lap.length.as_secs_f64()),
                _ => {
                    if let Some(histogram) = self.stages.get(stage as usize) {
                        histogram.observe(lap.length.as_secs_f64());
                    }
                }
            }
        }
        if result.kind() == Some(ErrorKind::QuotaExceeded) {
            self.quota_refused(principal, "call");
        }
    }

    /// A call waits for the user's answer until the guard is dropped.
    pub(crate) fn confirmation_pending(self: &Arc<Self>) -> ConfirmationGuard {
        self.confirmations.inc();
        ConfirmationGuard(self.clone())
    }

    /// An audit record could not be written.
    pub(crate) fn audit_failed(&self) {
        self.audit_failures.inc();
    }

    /// A per-principal quota refused something (`quota` names which).
    pub fn quota_refused(&self, principal: &str, quota: &'static str) {
        let principal = self.principal_label(principal);
        self.quota_refusals.get_or_create(&QuotaLabels { principal, quota }).inc();
    }

    /// A reload finished, put in force or refused.
    pub(crate) fn reloaded(&self, ok: bool) {
        self.reloads.get_or_create(&ResultLabel { result: if ok { "ok" } else { "failed" } }).inc();
    }

    /// Prometheus text of every metric, the scrape-time gauges read from
    /// `snapshot` and the process.
    pub fn render(&self, snapshot: Snapshot) -> String {
        let to_i64 = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.sessions.set(to_i64(snapshot.sessions));
        self.tools_configured.set(to_i64(snapshot.tools_configured));
        self.tools_ready.set(to_i64(snapshot.tools_ready));
        self.ready.set(i64::from(snapshot.ready));
        if let Some(memory) = snapshot.memory {
            let bytes = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
            self.memory_budget.set(bytes(memory.total));
            self.memory_reserved.set(bytes(memory.reserved));
            self.memory_waiting.set(to_i64(memory.waiting));
        }
        if let Some(process) = process::read() {
            self.resident.set(i64::try_from(process.resident_bytes).unwrap_or(i64::MAX));
            self.fds.set(to_i64(process.open_fds));
        }
        let mut text = String::new();
        if let Err(err) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            tracing::error!("cannot render the metrics: {err}");
        }
        text
    }

    /// The series of `name`, created the first time.
    fn tool(&self, name: &str) -> Arc<ToolSeries> {
        if let Some(series) = self.tools.read().unwrap_or_else(PoisonError::into_inner).get(name) {
            return series.clone();
        }
        let mut tools = self.tools.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(series) = tools.get(name) {
            return series.clone();
        }
        let label = if tools.len() < self.max_tool_labels { name } else { OTHER };
        if let Some(series) = tools.get(label) {
            return series.clone();
        }
        let tool = ToolLabel { tool: label.to_owned() };
        let series = Arc::new(ToolSeries {
            calls: Default::default(),
            fuel: self.fuel.get_or_create_owned(&tool),
            duration: self.call_duration.get_or_create_owned(&tool),
            label: label.to_owned(),
        });
        tools.insert(label.to_owned(), series.clone());
        series
    }

    /// `principal` if it is one of the first `max_principals` seen, else
    /// [`OTHER`].
    fn principal_label(&self, principal: &str) -> String {
        let mut seen = self.principals.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.contains(principal) {
            return principal.to_owned();
        }
        if seen.len() < self.max_principals && principal != OTHER {
            seen.insert(principal.to_owned());
            return principal.to_owned();
        }
        OTHER.to_owned()
    }
}

/// A call in flight; dropping it takes it off `airlock_calls_in_flight`.
pub(crate) struct InFlightGuard(Arc<Metrics>);

impl Drop for InFlightGuard {
    fn drop(&mut self) {
        self.0.in_flight.dec();
    }
}

/// A call waiting for a confirmation answer.
pub(crate) struct ConfirmationGuard(Arc<Metrics>);

impl Drop for ConfirmationGuard {
    fn drop(&mut self) {
        self.0.confirmations.dec();
    }
}

impl Metrics {
    /// Calls in flight now (for shutdown: it waits for this to reach 0).
    pub(crate) fn in_flight(&self) -> i64 {
        self.in_flight.get()
    }
}

/// The process's own resident memory and descriptors, from `/proc` (Linux;
/// elsewhere nothing is reported).
mod process {
    pub(super) struct Process {
        pub(super) resident_bytes: u64,
        pub(super) open_fds: usize,
    }

    /// Most descriptors counted: a scrape stays cheap whatever the process
    /// holds.
    const MAX_COUNTED_FDS: usize = 1 << 20;

    pub(super) fn read() -> Option<Process> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let kib: u64 = status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))?
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        let open_fds = std::fs::read_dir("/proc/self/fd").map(|dir| dir.take(MAX_COUNTED_FDS).count()).unwrap_or(0);
        Some(Process { resident_bytes: kib.saturating_mul(1024), open_fds })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_core::outcome::{Authority, CallOutcome, Failure, Success};
    use std::time::Duration;

    fn finish(metrics: &Metrics, tool: Option<&str>, outcome: Result<Success, Failure>, principal: &str) {
        let mut timeline = Timeline::start(false);
        timeline.lap(Stage::Admit);
        timeline.lap(Stage::Audit);
        let mut result = ToolResult::new(
            "c",
            tool.unwrap_or("nope"),
            CallOutcome::Ran { authority: Authority::Allowed, result: outcome },
        );
        result.fuel_used = Some(7);
        result.duration = Duration::from_millis(1);
        metrics.call_finished(&timeline, &result, tool, principal);
    }

    #[test]
    fn calls_are_counted_by_tool_and_outcome_and_principals_are_capped() {
        let metrics = Metrics::new(2);
        finish(&metrics, Some("echo"), Ok(Success::new(serde_json::json!("hi"))), "a");
        finish(&metrics, Some("echo"), Ok(Success::new(serde_json::json!("hi"))), "a");
        finish(&metrics, Some("echo"), Err(Failure::new(ErrorKind::Timeout, "slow")), "a");
        finish(&metrics, None, Err(Failure::new(ErrorKind::UnknownTool, "no")), "a");
        for principal in ["p1", "p2", "p3", "p4"] {
            finish(&metrics, Some("echo"), Err(Failure::new(ErrorKind::QuotaExceeded, "no")), principal);
        }
        let text = metrics.render(Snapshot::default());
        assert!(text.contains("airlock_calls_total{tool=\"echo\",outcome=\"ok\"} 2"), "{text}");
        assert!(text.contains("airlock_calls_total{tool=\"echo\",outcome=\"timeout\"} 1"), "{text}");
        assert!(text.contains("airlock_calls_total{tool=\"_unknown\",outcome=\"unknown_tool\"} 1"), "{text}");
        assert!(text.contains("airlock_fuel_used_total{tool=\"echo\"} 49"), "{text}");
        assert!(text.contains("airlock_quota_refusals_total{principal=\"p1\",quota=\"call\"} 1"), "{text}");
        assert!(text.contains("airlock_quota_refusals_total{principal=\"other\",quota=\"call\"} 2"), "{text}");
        assert!(!text.contains("p3"), "principals past the cap are not named: {text}");
        assert!(text.contains("airlock_stage_duration_seconds_count{stage=\"admit\"} 8"), "{text}");
        assert!(text.contains("airlock_audit_write_duration_seconds_count 8"), "{text}");
        assert!(text.contains("airlock_calls_in_flight 0"), "{text}");
    }

    #[test]
    fn tool_labels_are_capped() {
        let metrics = Metrics::new(0);
        for n in 0..DEFAULT_MAX_TOOL_LABELS + 5 {
            let _ = metrics.tool(&format!("t{n}"));
        }
        assert_eq!(metrics.tools.read().unwrap().len(), DEFAULT_MAX_TOOL_LABELS + 1, "the cap and one `other`");
        assert_eq!(metrics.tool("t9999").label, OTHER);
    }

    #[test]
    fn past_max_tool_labels_the_next_tool_is_counted_as_other() {
        let metrics = Metrics::new(0).with_max_tool_labels(2);
        let ok = || Ok(Success::new(serde_json::json!("hi")));
        for tool in ["a", "b", "c", "a", "d"] {
            finish(&metrics, Some(tool), ok(), "p");
        }
        let text = metrics.render(Snapshot::default());
        assert!(text.contains("airlock_calls_total{tool=\"a\",outcome=\"ok\"} 2"), "{text}");
        assert!(text.contains("airlock_calls_total{tool=\"b\",outcome=\"ok\"} 1"), "{text}");
        assert!(text.contains("airlock_calls_total{tool=\"other\",outcome=\"ok\"} 2"), "{text}");
        assert!(!text.contains("tool=\"c\"") && !text.contains("tool=\"d\""), "{text}");
        let none = Metrics::new(0).with_max_tool_labels(0);
        finish(&none, Some("a"), ok(), "p");
        assert!(none.render(Snapshot::default()).contains("airlock_calls_total{tool=\"other\",outcome=\"ok\"} 1"));
        assert!(text.contains("airlock_spans_dropped_total 0"), "{text}");
    }
}
