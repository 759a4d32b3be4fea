//! Network: outbound HTTP for tools, only where the operator granted it.
//!
//! # Security
//!
//! A guest never holds a socket. Raw `wasi:sockets` (TCP, UDP, name
//! lookups) are off for every tool in [`crate::grants::Grants::wasi_ctx`];
//! the only way out is a `wasi:http` request, and every request — each
//! redirect hop is a new request — passes [`NetworkHooks::send_request`],
//! which checks it as `book/src/operator/network.md` (included here) specifies: the grant
//! ([`NetworkGrant`], parsed in `network/grant.rs`), the method, the count,
//! the address classes (`network/address.rs`), then the connection to the
//! checked address (`network/send.rs`) and the secret headers.
//!
//! A refused request fails inside the guest with `internal-error` and a
//! message naming the origin and the grant that would allow it, so the tool
//! can return it to the model as an ordinary result.
//!
#![doc = include_str!("../../../book/src/operator/network.md")]

mod address;
mod grant;
pub mod send;
#[cfg(test)]
mod tests;

pub(crate) use address::{Restricted, restricted};
pub use grant::{
    DEFAULT_MAX_SECRET_FILE_BYTES, HostPattern, MAX_CREDENTIAL_NAME_BYTES, NetworkGrant, OriginPattern, OriginRule,
    RawNetwork, RequestOrigin, Scheme, SecretHeader, SecretSource, SecretValue,
};

use airlock_settings::limits::{OUTGOING_BODY_CHUNK_BYTES, OUTGOING_BODY_CHUNKS};
use http::Request;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use tokio_rustls::rustls::pki_types::ServerName;
use wasmtime_wasi_http::{
    DEFAULT_FORBIDDEN_HEADERS, Error, ForbiddenHeaderFilter, RequestOptions, WasiBody, WasiHttpHooks,
};

/// What one call has used of its network allowance.
#[derive(Debug, Default)]
pub struct Usage {
    /// Requests sent (or refused for the count).
    pub requests: AtomicU32,
    /// Response body bytes received.
    pub response_bytes: AtomicU64,
}

/// The `wasi:http` hooks of one call: its grant (if any) and its usage.
pub struct NetworkHooks {
    grant: Option<Arc<NetworkGrant>>,
    usage: Arc<Usage>,
}

impl NetworkHooks {
    /// Hooks for one call under `grant`; `None` refuses every request.
    pub fn new(grant: Option<Arc<NetworkGrant>>) -> Self {
        Self { grant, usage: Arc::new(Usage::default()) }
    }

    /// Start a new call's allowance (a session reuses one store for many
    /// calls; requests still in flight keep counting against the old one).
    pub fn renew(&mut self) {
        match Arc::get_mut(&mut self.usage) {
            // Nothing in flight shares it: the same allowance, zeroed.
            Some(usage) => *usage = Usage::default(),
            None => self.usage = Arc::new(Usage::default()),
        }
    }
}

impl WasiHttpHooks for NetworkHooks {
    // An outgoing body queues at most `OUTGOING_BODY_CHUNKS + 1` writes of
    // `OUTGOING_BODY_CHUNK_BYTES` on the host, and `budget.rs` caps how many
    // bodies a call holds, so unsent bodies cannot grow host memory.
    fn p2_outgoing_body_buffer_chunks(&mut self) -> usize {
        OUTGOING_BODY_CHUNKS
    }

    fn p2_outgoing_body_chunk_size(&mut self) -> usize {
        OUTGOING_BODY_CHUNK_BYTES
    }

    fn forbidden_header_filter(&mut self) -> ForbiddenHeaderFilter {
        let grant = self.grant.clone();
        Arc::new(move |name| {
            DEFAULT_FORBIDDEN_HEADERS.contains(name) || grant.as_ref().is_some_and(|g| g.is_secret_header(name))
        })
    }

    fn send_request(
        &mut self,
        request: Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Box<dyn Future<Output = Result<send::Sent, Error>> + Send> {
        let grant = self.grant.clone();
        let usage = self.usage.clone();
        Box::new(async move {
            let (target, request, max) = check(grant.as_deref(), &usage, request).await.map_err(refusal)?;
            send::send(target, request, options, usage, max).await
        })
    }
}

/// A refusal as the guest sees it.
fn refusal(message: String) -> Error {
    Error::InternalError(Some(format!("refused by the Airlock host: {message}")))
}

/// The origin of a request URI, lowercased, trailing dot removed.
fn request_origin(uri: &http::Uri) -> Result<RequestOrigin, String> {
    let scheme = match uri.scheme_str() {
        Some("http") => Scheme::Http,
        Some("https") => Scheme::Https,
        other => return Err(format!("scheme {other:?} is not supported: use http or https")),
    };
    let host = uri.host().filter(|h| !h.is_empty()).ok_or("the request has no host")?;
    let host = host.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.').to_ascii_lowercase();
    let port = uri.port_u16().unwrap_or(scheme.default_port());
    Ok(RequestOrigin { scheme, host, port })
}

/// Every check before a request leaves: grant, origin, method, count,
/// addresses. Returns where to connect, the request with the secret headers
/// added, and the response-byte allowance.
async fn check(
    grant: Option<&NetworkGrant>,
    usage: &Usage,
    mut request: Request<WasiBody>,
) -> Result<(send::Target, Request<WasiBody>, u64), String> {
    let origin = request_origin(request.uri())?;
    let how_to_grant = "an operator can allow it by adding the origin to this tool's `network.allow` in airlock.toml";
    let Some(grant) = grant else {
        return Err(format!("{origin} was refused: this tool has no network grant; {how_to_grant}"));
    };
    let Some(rule) = grant.rule_for(&origin) else {
        return Err(format!("{origin} was refused: it is not an origin this tool may reach; {how_to_grant}"));
    };
    let allowed: Vec<&str> = match &rule.methods {
        Some(methods) => methods.iter().map(http::Method::as_str).collect(),
        None => grant::METHODS.to_vec(),
    };
    if !allowed.contains(&request.method().as_str()) {
        return Err(format!(
            "{} to {origin} was refused: this tool may send only {} there",
            request.method(),
            allowed.join(", ")
        ));
    }
    // A credential this call's principal lacks refuses the request before
    // anything is sent or counted.
    for secret in grant.secrets.iter().filter(|s| s.origin.matches(&origin)) {
        match &secret.value {
            SecretSource::Fixed(_) => {}
            SecretSource::Missing { principal } => {
                return Err(format!(
                    "{origin} was refused: this tool sends header `{}` to {origin} with a credential of the \
                     principal it acts for, and principal {principal:?} has none; an operator can add one (a file \
                     named after the principal in the `value_dir` of this tool's `network.secret_headers`)",
                    secret.name
                ));
            }
            SecretSource::PerPrincipal { .. } => {
                return Err(format!(
                    "{origin} was refused: header `{}` takes a credential per principal, and this call has no                      principal's credential",
                    secret.name
                ));
            }
        }
    }
    let sent = usage.requests.fetch_add(1, Ordering::Relaxed);
    if sent >= grant.max_requests {
        return Err(format!(
            "{origin} was refused: this call already sent {} requests, the most one call may send",
            grant.max_requests
        ));
    }

    let candidates: Vec<IpAddr> = match origin.host.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) => tokio::net::lookup_host((origin.host.as_str(), origin.port))
            .await
            .map_err(|err| format!("{origin}: the name {} could not be resolved: {err}", origin.host))?
            .map(|addr| addr.ip())
            .collect(),
    };
    let mut addrs = Vec::new();
    let mut refused = None;
    for ip in candidates {
        match address::check(grant, &rule.pattern, ip) {
            Ok(()) => addrs.push(SocketAddr::new(ip.to_canonical(), origin.port)),
            Err(class) => refused = refused.or(Some((ip, class))),
        }
    }
    if addrs.is_empty() {
        return Err(match refused {
            Some((ip, class)) => format!(
                "{origin} was refused: {} resolves to {ip}, {}; an operator can allow it by granting that address \
                 literally (e.g. \"{}://{ip}:{}\") or listing it in this tool's `network.private_addresses`",
                origin.host,
                class.describe(),
                origin.scheme.as_str(),
                origin.port
            ),
            None => format!("{origin}: the name {} has no addresses", origin.host),
        });
    }

    let tls_name = match origin.scheme {
        Scheme::Http => None,
        Scheme::Https => Some(match origin.host.parse::<IpAddr>() {
            Ok(ip) => ServerName::from(ip),
            Err(_) => ServerName::try_from(origin.host.clone())
                .map_err(|_| format!("{origin}: {} is not a valid TLS server name", origin.host))?,
        }),
    };
    let headers = request.headers_mut();
    for secret in grant.secrets.iter().filter(|s| s.origin.matches(&origin)) {
        if let SecretSource::Fixed(value) = &secret.value {
            headers.insert(secret.name.clone(), value.header_value().clone());
        }
    }
    Ok((send::Target { addrs, tls_name }, request, grant.max_response_bytes))
}

/// Replace every secret value of `grant` in `text` with `[secret withheld]`,
/// so a value a server echoed back cannot leave through a result or a log.
/// A grant resolved for a principal holds that principal's values, so
/// they are scrubbed the same way.
pub fn scrub(grant: &NetworkGrant, text: &mut String) {
    for secret in &grant.secrets {
        let SecretSource::Fixed(value) = &secret.value else { continue };
        let value = value.secret();
        if text.contains(value) {
            *text = text.replace(value, "[secret withheld]");
        }
        if let Ok(quoted) = serde_json::to_string(value) {
            let escaped = &quoted[1..quoted.len() - 1];
            if escaped != value && text.contains(escaped) {
                *text = text.replace(escaped, "[secret withheld]");
            }
        }
    }
}
