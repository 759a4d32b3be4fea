//! The operator's settings for running Airlock as a service: `[metrics]`
//! (where `/metrics` is served and how many principals it names),
//! `[traces]` (OpenTelemetry spans over OTLP, off by default) and
//! `[serve]` (the shutdown grace). Raw serde types that refuse unknown keys,
//! checked into [`MetricsSettings`], [`TraceSettings`] and
//! [`ServeSettings`].
//!
//! Trusts the operator's file; every value is range-checked and each error
//! names the key and what is accepted.

use crate::limits::{
    DEFAULT_METRICS_MAX_PRINCIPALS, DEFAULT_SHUTDOWN_GRACE, MAX_METRICS_PRINCIPALS, MAX_SHUTDOWN_GRACE,
};
use serde::Deserialize;
use std::net::SocketAddr;
use std::time::Duration;

/// `[metrics]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMetrics {
    listen: Option<String>,
    public: Option<bool>,
    max_principals: Option<usize>,
}

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
}

impl Default for MetricsSettings {
    fn default() -> Self {
        Self { listen: None, public: false, max_principals: DEFAULT_METRICS_MAX_PRINCIPALS }
    }
}

impl MetricsSettings {
    /// Check `[metrics]`.
    ///
    /// # Errors
    ///
    /// An address that does not parse, `public` without a loopback
    /// `listen`, `max_principals` out of range.
    pub(crate) fn from_raw(raw: RawMetrics) -> Result<Self, String> {
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
        Ok(Self { listen, public, max_principals })
    }
}

/// `[traces]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTraces {
    endpoint: Option<String>,
    principal: Option<String>,
    service_name: Option<String>,
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

/// Longest `[traces] service_name` accepted.
const MAX_SERVICE_NAME_LEN: usize = 128;

/// OpenTelemetry spans over OTLP (`[traces]`); `None` in [`crate::Config`]
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
}

impl TraceSettings {
    /// Check `[traces]`; `None` when it names no endpoint.
    ///
    /// # Errors
    ///
    /// An endpoint that is not an `http://` URL, an unknown `principal`
    /// mode, a `service_name` that is empty or too long.
    pub(crate) fn from_raw(raw: RawTraces) -> Result<Option<Self>, String> {
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
        Ok(Some(Self { endpoint, principal, service_name }))
    }
}

/// `[serve]` as written.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawServe {
    shutdown_grace_secs: Option<u64>,
}

/// How `airlock serve` behaves as a service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServeSettings {
    /// On SIGTERM or Ctrl-C, how long calls in flight may take to finish
    /// before they are cancelled (`[serve] shutdown_grace_secs`).
    pub shutdown_grace: Duration,
}

impl Default for ServeSettings {
    fn default() -> Self {
        Self { shutdown_grace: DEFAULT_SHUTDOWN_GRACE }
    }
}

impl ServeSettings {
    /// Check `[serve]`.
    ///
    /// # Errors
    ///
    /// A grace over [`MAX_SHUTDOWN_GRACE`].
    pub(crate) fn from_raw(raw: RawServe) -> Result<Self, String> {
        let Some(secs) = raw.shutdown_grace_secs else { return Ok(Self::default()) };
        let grace = Duration::from_secs(secs);
        if grace > MAX_SHUTDOWN_GRACE {
            return Err(format!(
                "[serve] shutdown_grace_secs = {secs} is over the most accepted, {}",
                MAX_SHUTDOWN_GRACE.as_secs()
            ));
        }
        Ok(Self { shutdown_grace: grace })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testing::{check_err, parse};

    #[test]
    fn defaults_serve_metrics_on_the_mcp_server_and_send_no_spans() {
        let config = parse("").unwrap();
        assert_eq!(config.metrics, MetricsSettings::default());
        assert_eq!(config.traces, None);
        assert_eq!(config.serve.shutdown_grace, DEFAULT_SHUTDOWN_GRACE);
    }

    #[test]
    fn settings_are_read_and_checked() {
        let config = parse(
            "[metrics]\nlisten = \"127.0.0.1:9464\"\npublic = true\nmax_principals = 5\n[traces]\nendpoint = \
             \"http://127.0.0.1:4318/v1/traces\"\nprincipal = \"omit\"\n[serve]\nshutdown_grace_secs = 3",
        )
        .unwrap();
        assert_eq!(config.metrics.listen, Some("127.0.0.1:9464".parse().unwrap()));
        assert!(config.metrics.public);
        assert_eq!(config.metrics.max_principals, 5);
        let traces = config.traces.unwrap();
        assert_eq!(traces.principal, PrincipalInSpans::Omit);
        assert_eq!(traces.service_name, "airlock");
        assert_eq!(config.serve.shutdown_grace, Duration::from_secs(3));
        check_err("[metrics]\nlisten = \"0.0.0.0:9464\"\npublic = true", &["public", "loopback"]);
        check_err("[metrics]\npublic = true", &["public", "loopback"]);
        check_err("[metrics]\nlisten = \"nowhere\"", &["listen", "IP:PORT"]);
        check_err("[metrics]\nmax_principals = 100000", &["max_principals", "most accepted"]);
        check_err("[traces]\nendpoint = \"https://collector:4318\"", &["endpoint", "http://"]);
        check_err("[traces]\nendpoint = \"http://c/v1/traces\"\nprincipal = \"x\"", &["principal", "hash", "omit"]);
        check_err("[serve]\nshutdown_grace_secs = 100000", &["shutdown_grace_secs"]);
        check_err("[metrics]\nbogus = 1", &["bogus"]);
    }
}
