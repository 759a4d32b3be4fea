//! The operator's settings for running Airlock as a service: `[metrics]`
//! (where `/metrics` is served and how many principals and tools it names),
//! `[traces]` (OpenTelemetry spans over OTLP, off by default, and the
//! export queue and timeout), `[serve]` (the shutdown graces) and `[log]`
//! (how much of a client's data a log line holds and how often client
//! errors are summed up). Raw serde types that refuse unknown keys, checked
//! into [`MetricsSettings`], [`TraceSettings`], [`ServeSettings`] and
//! [`LogSettings`].
//!
//! Trusts the operator's file; every value is range-checked and each error
//! names the key and what is accepted.

use crate::limits::{
    DEFAULT_CANCEL_GRACE, DEFAULT_CLIENT_ERROR_LOG_INTERVAL, DEFAULT_MAX_LOGGED_CLIENT_BYTES, DEFAULT_MAX_QUEUED_SPANS,
    DEFAULT_MAX_TOOL_LABELS, DEFAULT_METRICS_MAX_PRINCIPALS, DEFAULT_OTLP_EXPORT_TIMEOUT, DEFAULT_SHUTDOWN_GRACE,
    DEFAULT_STARTUP_LIST_WAIT, MAX_CANCEL_GRACE, MAX_CLIENT_ERROR_LOG_INTERVAL, MAX_LOGGED_CLIENT_BYTES_CEILING,
    MAX_METRICS_PRINCIPALS, MAX_OTLP_EXPORT_TIMEOUT, MAX_QUEUED_SPANS_CEILING, MAX_SHUTDOWN_GRACE,
    MAX_STARTUP_LIST_WAIT, MAX_TOOL_LABELS_CEILING, MIN_LOGGED_CLIENT_BYTES, in_range,
};
use serde::Deserialize;
use std::net::SocketAddr;
use std::time::Duration;

/// `[metrics]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawMetrics {
    listen: Option<String>,
    public: Option<bool>,
    max_principals: Option<usize>,
    max_tool_labels: Option<usize>,
    #[serde(default)]
    readers: Vec<String>,
}

/// Most principals `[metrics] readers` may name.
pub const MAX_METRICS_READERS: usize = 64;
/// Longest principal name in `[metrics] readers` (as long as a principal
/// the pipeline accepts).
pub const MAX_METRICS_READER_BYTES: usize = 256;

/// Where and how `/metrics` is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsSettings {
    /// A separate address for `/metrics`, `/healthz` and `/readyz`
    /// (`[metrics] listen`); `None` serves them on the MCP HTTP server only.
    pub listen: Option<SocketAddr>,
    /// `/metrics` on the separate loopback address without a bearer token
    /// (`[metrics] public`, only for a loopback `listen`).
    pub public: bool,
    /// Most principals named in per-principal series; the others are
    /// counted under `other` (`[metrics] max_principals`).
    pub max_principals: usize,
    /// Most tool names labelled; the others are counted under `other`
    /// (`[metrics] max_tool_labels`).
    pub max_tool_labels: usize,
    /// The principals that may read `/metrics` when the server
    /// authenticates its clients (`[metrics] readers`). The series name
    /// principals and tools, so an ordinary client (any holder of a valid
    /// JWT) must not read them; empty means nobody, unless the server has
    /// no tokens at all (loopback only, every client is the local one).
    pub readers: Vec<String>,
}

impl Default for MetricsSettings {
    fn default() -> Self {
        Self {
            listen: None,
            public: false,
            max_principals: DEFAULT_METRICS_MAX_PRINCIPALS,
            max_tool_labels: DEFAULT_MAX_TOOL_LABELS,
            readers: Vec::new(),
        }
    }
}

impl MetricsSettings {
    /// Check `[metrics]`.
    ///
    /// # Errors
    ///
    /// An address that does not parse, `public` without a loopback
    /// `listen`, `max_principals` or `max_tool_labels` out of range.
    pub fn from_raw(raw: RawMetrics) -> Result<Self, String> {
        let listen = match raw.listen {
            None => None,
            Some(text) => Some(text.parse::<SocketAddr>().map_err(|err| {
                format!("[metrics] listen = {text:?} is not an address ({err}); write IP:PORT, e.g. \"127.0.0.1:9464\"")
            })?),
        };
        let public = raw.public.unwrap_or(false);
        if public && !listen.is_some_and(|addr| addr.ip().is_loopback()) {
            return Err("[metrics] public = true is accepted only with a loopback `listen` address (e.g. \
                        \"127.0.0.1:9464\"): elsewhere /metrics needs a bearer token from [http] tokens, as the MCP \
                        endpoint does"
                .to_owned());
        }
        let max_principals = raw.max_principals.unwrap_or(DEFAULT_METRICS_MAX_PRINCIPALS);
        if max_principals > MAX_METRICS_PRINCIPALS {
            return Err(format!(
                "[metrics] max_principals = {max_principals} is over the most accepted, {MAX_METRICS_PRINCIPALS}: \
                 every principal named is a series a scraper keeps"
            ));
        }
        let max_tool_labels = match raw.max_tool_labels {
            None => DEFAULT_MAX_TOOL_LABELS,
            Some(n) => in_range("[metrics] max_tool_labels", n, 0, MAX_TOOL_LABELS_CEILING)?,
        };
        if raw.readers.len() > MAX_METRICS_READERS {
            return Err(format!(
                "[metrics] readers names {} principals, over the {MAX_METRICS_READERS} accepted: give the scrapers \
                 one principal (one token each maps to it)",
                raw.readers.len()
            ));
        }
        if let Some(bad) = raw.readers.iter().find(|r| r.is_empty() || r.len() > MAX_METRICS_READER_BYTES) {
            return Err(format!(
                "[metrics] readers: {bad:?} is not a principal name: write 1 to {MAX_METRICS_READER_BYTES} bytes, \
                 the principal a scraper's token maps to (e.g. \"prometheus\")"
            ));
        }
        Ok(Self { listen, public, max_principals, max_tool_labels, readers: raw.readers })
    }
}

/// `[traces]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawTraces {
    endpoint: Option<String>,
    principal: Option<String>,
    service_name: Option<String>,
    max_queued_spans: Option<usize>,
    export_timeout_secs: Option<u64>,
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

/// Longest `[traces] service_name` accepted.
const MAX_SERVICE_NAME_LEN: usize = 128;

/// OpenTelemetry spans over OTLP (`[traces]`); `None` in the host's `Config`
/// when no endpoint is configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceSettings {
    /// The OTLP/HTTP traces URL (`[traces] endpoint`), e.g.
    /// `http://127.0.0.1:4318/v1/traces`.
    pub endpoint: String,
    /// How spans name the principal (`[traces] principal`).
    pub principal: PrincipalInSpans,
    /// The `service.name` resource attribute (`[traces] service_name`).
    pub service_name: String,
    /// Most finished spans held for export; more are dropped and counted
    /// (`[traces] max_queued_spans`).
    pub max_queued_spans: usize,
    /// How long one export may take (`[traces] export_timeout_secs`).
    pub export_timeout: Duration,
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
        let principal = match raw.principal.as_deref() {
            None | Some("hash") => PrincipalInSpans::Hash,
            Some("omit") => PrincipalInSpans::Omit,
            Some("plain") => PrincipalInSpans::Plain,
            Some(other) => {
                return Err(format!(
                    "[traces] principal = {other:?} is not accepted: use \"hash\" (the default), \"omit\" or \"plain\""
                ));
            }
        };
        let service_name = raw.service_name.unwrap_or_else(|| "airlock".to_owned());
        if service_name.is_empty() || service_name.len() > MAX_SERVICE_NAME_LEN {
            return Err(format!("[traces] service_name must be 1 to {MAX_SERVICE_NAME_LEN} bytes long"));
        }
        let max_queued_spans = match raw.max_queued_spans {
            None => DEFAULT_MAX_QUEUED_SPANS,
            Some(n) => in_range("[traces] max_queued_spans", n, 1, MAX_QUEUED_SPANS_CEILING)?,
        };
        let export_timeout = match raw.export_timeout_secs {
            None => DEFAULT_OTLP_EXPORT_TIMEOUT,
            Some(secs) => Duration::from_secs(in_range(
                "[traces] export_timeout_secs",
                secs,
                1,
                MAX_OTLP_EXPORT_TIMEOUT.as_secs(),
            )?),
        };
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
        Ok(Some(Self { endpoint, principal, service_name, max_queued_spans, export_timeout }))
    }
}

/// `[serve]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawServe {
    shutdown_grace_secs: Option<u64>,
    cancel_grace_secs: Option<u64>,
    startup_list_wait_secs: Option<u64>,
}

/// How `airlock serve` behaves as a service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeSettings {
    /// On SIGTERM or Ctrl-C, how long calls in flight may take to finish
    /// before they are cancelled (`[serve] shutdown_grace_secs`).
    pub shutdown_grace: Duration,
    /// After the calls still running at the end of the grace were
    /// cancelled, how long they may take to write their `cancelled` results
    /// (`[serve] cancel_grace_secs`).
    pub cancel_grace: Duration,
    /// While the tools are still loading at start-up, how long after the
    /// server started a `tools/list` waits for them
    /// (`[serve] startup_list_wait_secs`): long enough for a cold compile
    /// cache, so that a client that lists once (many agent frameworks do)
    /// sees every tool. A tool still loading then is announced with
    /// `notifications/tools/list_changed` when it is ready.
    pub startup_list_wait: Duration,
}

impl Default for ServeSettings {
    fn default() -> Self {
        Self {
            shutdown_grace: DEFAULT_SHUTDOWN_GRACE,
            cancel_grace: DEFAULT_CANCEL_GRACE,
            startup_list_wait: DEFAULT_STARTUP_LIST_WAIT,
        }
    }
}

impl ServeSettings {
    /// Check `[serve]`.
    ///
    /// # Errors
    ///
    /// A grace over [`MAX_SHUTDOWN_GRACE`] or a cancel grace over
    /// [`MAX_CANCEL_GRACE`].
    pub fn from_raw(raw: RawServe) -> Result<Self, String> {
        let mut settings = Self::default();
        if let Some(secs) = raw.shutdown_grace_secs {
            let grace = Duration::from_secs(secs);
            if grace > MAX_SHUTDOWN_GRACE {
                return Err(format!(
                    "[serve] shutdown_grace_secs = {secs} is over the most accepted, {}",
                    MAX_SHUTDOWN_GRACE.as_secs()
                ));
            }
            settings.shutdown_grace = grace;
        }
        if let Some(secs) = raw.cancel_grace_secs {
            settings.cancel_grace =
                Duration::from_secs(in_range("[serve] cancel_grace_secs", secs, 0, MAX_CANCEL_GRACE.as_secs())?);
        }
        if let Some(secs) = raw.startup_list_wait_secs {
            let max = MAX_STARTUP_LIST_WAIT.as_secs();
            settings.startup_list_wait = Duration::from_secs(in_range("[serve] startup_list_wait_secs", secs, 0, max)?);
        }
        Ok(settings)
    }
}

/// `[log]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawLog {
    max_client_bytes: Option<usize>,
    client_error_interval_secs: Option<u64>,
}

/// How errors a client causes are logged (the host's `client_log`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogSettings {
    /// Longest piece of a client's data written to a log line, the `…`
    /// that marks a cut included (`[log] max_client_bytes`).
    pub max_client_bytes: usize,
    /// At most one warning counting client errors per this interval
    /// (`[log] client_error_interval_secs`).
    pub client_error_interval: Duration,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self {
            max_client_bytes: DEFAULT_MAX_LOGGED_CLIENT_BYTES,
            client_error_interval: DEFAULT_CLIENT_ERROR_LOG_INTERVAL,
        }
    }
}

impl LogSettings {
    /// Check `[log]`.
    ///
    /// # Errors
    ///
    /// `max_client_bytes` or `client_error_interval_secs` out of range.
    pub fn from_raw(raw: RawLog) -> Result<Self, String> {
        let mut settings = Self::default();
        if let Some(n) = raw.max_client_bytes {
            settings.max_client_bytes =
                in_range("[log] max_client_bytes", n, MIN_LOGGED_CLIENT_BYTES, MAX_LOGGED_CLIENT_BYTES_CEILING)?;
        }
        if let Some(secs) = raw.client_error_interval_secs {
            let max = MAX_CLIENT_ERROR_LOG_INTERVAL.as_secs();
            settings.client_error_interval =
                Duration::from_secs(in_range("[log] client_error_interval_secs", secs, 1, max)?);
        }
        Ok(settings)
    }
}
