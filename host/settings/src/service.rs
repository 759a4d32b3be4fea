//! The operator's settings for running Airlock as a service: `[metrics]`
//! (where `/metrics` is served and how many principals and tools it names),
//! `[traces]` (OpenTelemetry spans over OTLP, off by default, and the
//! export queue and timeout), `[serve]` (the shutdown graces) and `[log]`
//! (how much of a client's data a log line holds and how often client
//! errors are summed up). Each section is declared once
//! ([`METRICS`], [`TRACES`], [`SERVE`], [`LOG`]) and checked into
//! [`MetricsSettings`], [`TraceSettings`], [`ServeSettings`] and
//! [`LogSettings`].
//!
//! Trusts the operator's file; every value is range-checked and each error
//! names the key and what is accepted.

use crate::key_doc::Value;
use std::net::SocketAddr;
use std::time::Duration;

/// Default of `[metrics] max_principals`: principals named in per-principal
/// series (quota refusals); the rest are counted under `other`, so that a
/// fleet of JWT subjects cannot grow the scrape without bound.
pub const DEFAULT_METRICS_MAX_PRINCIPALS: usize = 50;
/// Most `[metrics] max_principals` accepted.
pub const MAX_METRICS_PRINCIPALS: usize = 10_000;
/// Default of `[metrics] max_tool_labels`: tool names labelled in metrics;
/// more (over many reloads) are counted under `tool="other"`.
pub const DEFAULT_MAX_TOOL_LABELS: usize = 1024;
/// Most `[metrics] max_tool_labels` accepted.
pub const MAX_TOOL_LABELS_CEILING: usize = 10_000;
/// Most principals `[metrics] readers` may name.
pub const MAX_METRICS_READERS: usize = 64;
/// Longest principal name in `[metrics] readers` (as long as a principal
/// the pipeline accepts).
pub const MAX_METRICS_READER_BYTES: usize = 256;
/// Default of `[traces] max_queued_spans`: finished spans held for export
/// (queued or being exported); more are dropped and counted in
/// `airlock_spans_dropped_total`, never waited for.
pub const DEFAULT_MAX_QUEUED_SPANS: usize = 8192;
/// Most `[traces] max_queued_spans` accepted (a span is about a kilobyte).
pub const MAX_QUEUED_SPANS_CEILING: usize = 131_072;
/// Default of `[traces] export_timeout_secs`: how long one OTLP export may
/// take before it is abandoned.
pub const DEFAULT_OTLP_EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// Most `[traces] export_timeout_secs` accepted.
pub const MAX_OTLP_EXPORT_TIMEOUT: Duration = Duration::from_secs(300);
/// Longest `[traces] service_name` accepted.
const MAX_SERVICE_NAME_LEN: usize = 128;
/// Default of `[serve] shutdown_grace_secs`: how long calls in flight may
/// take to finish after SIGTERM (Kubernetes waits 30 s before SIGKILL by
/// default; a pod's `terminationGracePeriodSeconds` should exceed this).
pub const DEFAULT_SHUTDOWN_GRACE: Duration = Duration::from_secs(30);
/// Most `[serve] shutdown_grace_secs` accepted.
pub const MAX_SHUTDOWN_GRACE: Duration = Duration::from_secs(3600);
/// Default of `[serve] cancel_grace_secs`: after the calls still running
/// at the end of the shutdown grace were cancelled, how long they may take
/// to write their `cancelled` results.
pub const DEFAULT_CANCEL_GRACE: Duration = Duration::from_secs(5);
/// Most `[serve] cancel_grace_secs` accepted.
pub const MAX_CANCEL_GRACE: Duration = Duration::from_secs(600);
/// Default of `[serve] startup_list_wait_secs`: with an empty compile
/// cache the bundled tools take 20–40 s to compile on two cores
/// (`run_python` the longest), and many agent frameworks list the tools
/// once, so the first `tools/list` waits for them rather than answer with
/// a partial list.
pub const DEFAULT_STARTUP_LIST_WAIT: Duration = Duration::from_secs(60);
/// Most `[serve] startup_list_wait_secs` accepted.
pub const MAX_STARTUP_LIST_WAIT: Duration = Duration::from_secs(600);
/// Default of `[log] max_client_bytes`: the longest piece of a client's data
/// written to a log line (the `…` that marks a cut counts toward it).
pub const DEFAULT_MAX_LOGGED_CLIENT_BYTES: usize = 128;
/// Least `[log] max_client_bytes` accepted: room for a few characters and
/// the `…`.
pub const MIN_LOGGED_CLIENT_BYTES: usize = 16;
/// Most `[log] max_client_bytes` accepted.
pub const MAX_LOGGED_CLIENT_BYTES_CEILING: usize = 65_536;
/// Default of `[log] client_error_interval_secs`: at most one warning
/// counting client errors per this interval.
pub const DEFAULT_CLIENT_ERROR_LOG_INTERVAL: Duration = Duration::from_secs(60);
/// Most `[log] client_error_interval_secs` accepted (a day).
pub const MAX_CLIENT_ERROR_LOG_INTERVAL: Duration = Duration::from_secs(86_400);

crate::section! {
    /// The keys of `[metrics]`.
    pub const METRICS: Section<MetricsSettings> = "metrics";
    /// `[metrics]` as written.
    pub struct RawMetrics {}
    hand {
        /// a separate address for `/metrics`, `/healthz` and `/readyz`
        listen: Option<String>, Restart, accepts "an address `IP:PORT`",
            unset "not set: served on the MCP HTTP server only",
            show |m: &MetricsSettings| m.listen.map(|listen| Value::Text(listen.to_string())),
            example "\"127.0.0.1:9464\"";
        /// the principals that may read `/metrics` when the server authenticates its clients
        readers: Option<Vec<String>>, Restart, accepts "an array of at most 64 principal names of 1 to 256 bytes",
            unset "`[]`: nobody, unless the server has no tokens (loopback only)",
            show |m: &MetricsSettings| Some(Value::List(m.readers.clone())),
            example "[\"prometheus\"]";
    }
    /// Where and how `/metrics` is served.
    #[derive(Debug, Clone, PartialEq, Eq)]
    group pub struct MetricsSettings: Default (RawMetricsKeys) at () {
        /// A separate address for `/metrics`, `/healthz` and `/readyz`
        /// (`[metrics] listen`); `None` serves them on the MCP HTTP server only.
        pub listen: Option<SocketAddr> = None,
        /// The principals that may read `/metrics` when the server
        /// authenticates its clients (`[metrics] readers`). The series name
        /// principals and tools, so an ordinary client (any holder of a valid
        /// JWT) must not read them; empty means nobody, unless the server has
        /// no tokens at all (loopback only, every client is the local one).
        pub readers: Vec<String> = Vec::new();
        /// `/metrics` on the separate loopback `listen` address without a bearer token
        public => public: bool = false, Restart;
        /// principals named in per-principal series; the others are counted under `principal="other"`
        max_principals => max_principals: usize = DEFAULT_METRICS_MAX_PRINCIPALS, Restart,
            range Count 0..=MAX_METRICS_PRINCIPALS as u64;
        /// tool names labelled; the others are counted under `tool="other"`
        max_tool_labels => max_tool_labels: usize = DEFAULT_MAX_TOOL_LABELS, Restart,
            range Count 0..=MAX_TOOL_LABELS_CEILING as u64;
    }
}

impl MetricsSettings {
    /// Check `[metrics]`.
    ///
    /// # Errors
    ///
    /// An address that does not parse, `public` without a loopback
    /// `listen`, `max_principals` or `max_tool_labels` out of range, too
    /// many `readers` or one that is not a principal name.
    pub fn from_raw(raw: RawMetrics) -> Result<Self, String> {
        let mut settings = Self::from_keys(&(&raw).into(), &Self::defaults(), &METRICS.scope())?;
        settings.listen = match raw.listen {
            None => None,
            Some(text) => Some(text.parse::<SocketAddr>().map_err(|err| {
                format!("[metrics] listen = {text:?} is not an address ({err}); write IP:PORT, e.g. \"127.0.0.1:9464\"")
            })?),
        };
        if settings.public && !settings.listen.is_some_and(|addr| addr.ip().is_loopback()) {
            return Err("[metrics] public = true is accepted only with a loopback `listen` address (e.g. \
                        \"127.0.0.1:9464\"): elsewhere /metrics needs a bearer token from [http] tokens, as the MCP \
                        endpoint does"
                .to_owned());
        }
        let readers = raw.readers.unwrap_or_default();
        if readers.len() > MAX_METRICS_READERS {
            return Err(format!(
                "[metrics] readers names {} principals, over the {MAX_METRICS_READERS} accepted: give the scrapers \
                 one principal (one token each maps to it)",
                readers.len()
            ));
        }
        if let Some(bad) = readers.iter().find(|r| r.is_empty() || r.len() > MAX_METRICS_READER_BYTES) {
            return Err(format!(
                "[metrics] readers: {bad:?} is not a principal name: write 1 to {MAX_METRICS_READER_BYTES} bytes, \
                 the principal a scraper's token maps to (e.g. \"prometheus\")"
            ));
        }
        settings.readers = readers;
        Ok(settings)
    }
}

/// How a span names the call's principal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PrincipalInSpans {
    /// The SHA-256 of the principal, hex, first 16 bytes (the default).
    #[default]
    Hash,
    /// Not at all.
    Omit,
    /// As it is.
    Plain,
}

impl PrincipalInSpans {
    /// The value as `[traces] principal` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            PrincipalInSpans::Hash => "hash",
            PrincipalInSpans::Omit => "omit",
            PrincipalInSpans::Plain => "plain",
        }
    }
}

crate::section! {
    /// The keys of `[traces]`.
    pub const TRACES: Section<TraceSettings> = "traces";
    /// `[traces]` as written.
    pub struct RawTraces {}
    hand {
        /// the OTLP/HTTP traces URL spans are sent to
        endpoint: Option<String>, Restart, accepts "an `http://` URL",
            unset "not set: no spans are sent",
            show |t: &TraceSettings| Some(Value::Text(t.endpoint.clone())),
            example "\"http://127.0.0.1:4318/v1/traces\"";
        /// how a span names the call's principal
        principal: Option<String>, Restart, accepts "`\"hash\"` (its SHA-256), `\"omit\"` or `\"plain\"`",
            unset "`\"hash\"`",
            show |t: &TraceSettings| Some(Value::Text(t.principal.as_str().to_owned())),
            example "\"hash\"";
    }
    /// OpenTelemetry spans over OTLP (`[traces]`); `None` in the host's
    /// `Config` when no endpoint is configured.
    #[derive(Debug, Clone, PartialEq, Eq)]
    group pub struct TraceSettings (RawTracesKeys) at () {
        /// The OTLP/HTTP traces URL (`[traces] endpoint`), e.g.
        /// `http://127.0.0.1:4318/v1/traces`.
        pub endpoint: String = String::new(),
        /// How spans name the principal (`[traces] principal`).
        pub principal: PrincipalInSpans = PrincipalInSpans::Hash;
        /// the `service.name` resource attribute, 1 to 128 bytes
        service_name => service_name: String = "airlock".to_owned(), Restart;
        /// finished spans held for export; more are dropped and counted in `airlock_spans_dropped_total`
        max_queued_spans => max_queued_spans: usize = DEFAULT_MAX_QUEUED_SPANS, Restart,
            range Count 1..=MAX_QUEUED_SPANS_CEILING as u64;
        /// how long one export to the collector may take; then the batch is dropped
        export_timeout_secs => export_timeout: Duration = DEFAULT_OTLP_EXPORT_TIMEOUT, Restart,
            range Secs 1..=MAX_OTLP_EXPORT_TIMEOUT.as_secs();
    }
}

impl TraceSettings {
    /// Check `[traces]`; `None` when it names no endpoint.
    ///
    /// # Errors
    ///
    /// An endpoint that is not an `http://` URL, an unknown `principal`
    /// mode, a `service_name` that is empty or too long, `max_queued_spans`
    /// or `export_timeout_secs` out of range.
    pub fn from_raw(raw: RawTraces) -> Result<Option<Self>, String> {
        let mut settings = Self::from_keys(&(&raw).into(), &Self::defaults(), &TRACES.scope())?;
        settings.principal = match raw.principal.as_deref() {
            None | Some("hash") => PrincipalInSpans::Hash,
            Some("omit") => PrincipalInSpans::Omit,
            Some("plain") => PrincipalInSpans::Plain,
            Some(other) => {
                return Err(format!(
                    "[traces] principal = {other:?} is not accepted: use \"hash\" (the default), \"omit\" or \"plain\""
                ));
            }
        };
        if settings.service_name.is_empty() || settings.service_name.len() > MAX_SERVICE_NAME_LEN {
            return Err(format!("[traces] service_name must be 1 to {MAX_SERVICE_NAME_LEN} bytes long"));
        }
        let Some(endpoint) = raw.endpoint else { return Ok(None) };
        let uri: http::Uri = endpoint.parse().map_err(|err| {
            format!(
                "[traces] endpoint = {endpoint:?} is not a URL ({err}); write the OTLP/HTTP traces URL, e.g. \
                 \"http://127.0.0.1:4318/v1/traces\""
            )
        })?;
        if uri.scheme_str() != Some("http") || uri.host().is_none() {
            return Err(format!(
                "[traces] endpoint = {endpoint:?} is not accepted: spans are sent over plain http:// to a collector \
                 (usually an agent on the same host or pod), e.g. \"http://127.0.0.1:4318/v1/traces\""
            ));
        }
        settings.endpoint = endpoint;
        Ok(Some(settings))
    }
}

crate::section! {
    /// The keys of `[serve]`.
    pub const SERVE: Section<ServeSettings> = "serve";
    /// `[serve]` as written.
    pub struct RawServe {}
    hand {}
    /// How `airlock serve` behaves as a service.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    group pub struct ServeSettings: Default (RawServeKeys) at () {
        ;
        /// on SIGTERM or Ctrl-C, how long calls in flight may take to finish before they are cancelled
        shutdown_grace_secs => shutdown_grace: Duration = DEFAULT_SHUTDOWN_GRACE, Reload,
            range Secs 0..=MAX_SHUTDOWN_GRACE.as_secs();
        /// then, how long the cancelled calls may take to write their `cancelled` results
        cancel_grace_secs => cancel_grace: Duration = DEFAULT_CANCEL_GRACE, Reload,
            range Secs 0..=MAX_CANCEL_GRACE.as_secs();
        /// while the tools still load at start-up, how long after the server started a `tools/list` waits for them (a tool ready later is announced with `notifications/tools/list_changed`)
        startup_list_wait_secs => startup_list_wait: Duration = DEFAULT_STARTUP_LIST_WAIT, Reload,
            range Secs 0..=MAX_STARTUP_LIST_WAIT.as_secs();
    }
}

impl ServeSettings {
    /// Check `[serve]`.
    ///
    /// # Errors
    ///
    /// A grace or wait out of its range.
    pub fn from_raw(raw: RawServe) -> Result<Self, String> {
        Self::from_keys(&(&raw).into(), &Self::defaults(), &SERVE.scope())
    }
}

crate::section! {
    /// The keys of `[log]`.
    pub const LOG: Section<LogSettings> = "log";
    /// `[log]` as written.
    pub struct RawLog {}
    hand {}
    /// How errors a client causes are logged (the host's `client_log`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    group pub struct LogSettings: Default (RawLogKeys) at () {
        ;
        /// the longest piece of a client's data written to a log line, the `…` that marks a cut included
        max_client_bytes => max_client_bytes: usize = DEFAULT_MAX_LOGGED_CLIENT_BYTES, Reload,
            range Bytes MIN_LOGGED_CLIENT_BYTES as u64..=MAX_LOGGED_CLIENT_BYTES_CEILING as u64;
        /// at most one warning counting client errors (bad JSON-RPC, unknown methods, refused tokens) per this interval
        client_error_interval_secs => client_error_interval: Duration = DEFAULT_CLIENT_ERROR_LOG_INTERVAL, Reload,
            range Secs 1..=MAX_CLIENT_ERROR_LOG_INTERVAL.as_secs();
    }
}

impl LogSettings {
    /// Check `[log]`.
    ///
    /// # Errors
    ///
    /// `max_client_bytes` or `client_error_interval_secs` out of range.
    pub fn from_raw(raw: RawLog) -> Result<Self, String> {
        Self::from_keys(&(&raw).into(), &Self::defaults(), &LOG.scope())
    }
}

#[cfg(test)]
mod tests;
