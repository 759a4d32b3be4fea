//! A tool's network grant as the operator writes it in `airlock.toml`, and
//! its validated form: which origins, which methods, which private
//! addresses, how much per call, and which secret headers the host adds.

use http::{HeaderName, HeaderValue, Method};
use ipnet::IpNet;
use serde::Deserialize;
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// Requests one call may send when the grant does not say.
pub const DEFAULT_MAX_REQUESTS: u32 = 16;
/// Response body bytes one call may receive when the grant does not say.
pub const DEFAULT_MAX_RESPONSE_BYTES: u64 = 4 << 20;
/// Most requests a grant may allow per call.
const MAX_REQUESTS_CAP: u32 = 1000;
/// Most response bytes a grant may allow per call.
const MAX_RESPONSE_BYTES_CAP: u64 = 1 << 30;
/// Largest credential file accepted in a secret header's `value_dir`
/// unless its `max_value_bytes` says otherwise.
pub const DEFAULT_MAX_SECRET_FILE_BYTES: u64 = 16 << 10;
/// Accepted `max_value_bytes` of a secret header with a `value_dir`.
const MAX_VALUE_BYTES_RANGE: std::ops::RangeInclusive<u64> = 8..=(1 << 20);
/// Longest principal id that can name a credential file (the usual file
/// name limit).
pub const MAX_CREDENTIAL_NAME_BYTES: usize = 255;
/// Fewest characters a secret value may have.
const MIN_SECRET_LEN: usize = 8;

/// `[tools.NAME.network]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNetwork {
    #[serde(default)]
    allow: Vec<RawOrigin>,
    #[serde(default)]
    private_addresses: Vec<String>,
    max_requests: Option<u32>,
    max_response_bytes: Option<u64>,
    #[serde(default)]
    secret_headers: Vec<RawSecret>,
}

/// An allowed origin: a string, or a table naming its methods.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawOrigin {
    Origin(String),
    WithMethods { origin: String, methods: Vec<String> },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSecret {
    origin: String,
    header: String,
    value_env: Option<String>,
    value_file: Option<PathBuf>,
    value_dir: Option<PathBuf>,
    max_value_bytes: Option<u64>,
    #[serde(default)]
    prefix: String,
}

/// URL scheme of an origin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// `http://`, default port 80.
    Http,
    /// `https://`, default port 443.
    Https,
}

impl Scheme {
    /// The port used when an origin names none.
    pub fn default_port(self) -> u16 {
        match self {
            Self::Http => 80,
            Self::Https => 443,
        }
    }

    /// `http` or `https`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
        }
    }
}

/// The host part of an origin pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPattern {
    /// One host name, lowercase.
    Name(String),
    /// One IP address, written literally; the only way to reach a private,
    /// loopback or link-local address besides `private_addresses`.
    Ip(IpAddr),
    /// `*.example.com`: any name below `example.com`, not `example.com`.
    Subdomains(String),
    /// `*`: any public host.
    Any,
}

/// `scheme://host[:port]`, with an optional `*.` wildcard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginPattern {
    /// Scheme; an origin never matches the other scheme.
    pub scheme: Scheme,
    /// Host or host pattern.
    pub host: HostPattern,
    /// Port, the scheme's default when not written.
    pub port: u16,
}

/// The origin of one request, as the host checks it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestOrigin {
    /// Scheme of the request.
    pub scheme: Scheme,
    /// Host name (lowercase) or IP literal, without brackets.
    pub host: String,
    /// Port, explicit or the scheme's default.
    pub port: u16,
}

impl fmt::Display for RequestOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        if self.port == self.scheme.default_port() {
            write!(f, "{}://{host}", self.scheme.as_str())
        } else {
            write!(f, "{}://{host}:{}", self.scheme.as_str(), self.port)
        }
    }
}

impl OriginPattern {
    /// Parse `scheme://host[:port]`; `host` may be `*.name` or `*`.
    ///
    /// # Errors
    ///
    /// Anything but an origin: a path, a query, user info, another scheme,
    /// a wildcard anywhere but the first label.
    pub fn parse(text: &str) -> Result<Self, String> {
        let accepted = "expected scheme://host[:port] with scheme http or https, e.g. \"https://api.example.com\", \
                        \"https://*.example.com\" or \"http://127.0.0.1:8080\"";
        let (scheme, rest) = match text.split_once("://") {
            Some(("http", rest)) => (Scheme::Http, rest),
            Some(("https", rest)) => (Scheme::Https, rest),
            _ => return Err(format!("origin {text:?} is not accepted: {accepted}")),
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
            return Err(format!("origin {text:?} is not accepted (no path, query or user info): {accepted}"));
        }
        let (host, port) =
            split_host_port(rest).ok_or_else(|| format!("origin {text:?} has a bad port: {accepted}"))?;
        let port = port.unwrap_or(scheme.default_port());
        let host = host.to_ascii_lowercase();
        let host = if host == "*" {
            HostPattern::Any
        } else if let Some(base) = host.strip_prefix("*.") {
            if !valid_name(base) || base.parse::<IpAddr>().is_ok() {
                return Err(format!("origin {text:?}: `*.` must be followed by a host name: {accepted}"));
            }
            HostPattern::Subdomains(base.to_owned())
        } else if let Ok(ip) = host.parse::<IpAddr>() {
            HostPattern::Ip(ip)
        } else if valid_name(&host) {
            HostPattern::Name(host)
        } else {
            return Err(format!("origin {text:?} has an invalid host: {accepted}"));
        };
        Ok(Self { scheme, host, port })
    }

    /// Whether a request to `origin` matches this pattern.
    pub fn matches(&self, origin: &RequestOrigin) -> bool {
        if self.scheme != origin.scheme || self.port != origin.port {
            return false;
        }
        match &self.host {
            HostPattern::Name(name) => *name == origin.host,
            HostPattern::Ip(ip) => origin.host.parse::<IpAddr>().is_ok_and(|host| host == *ip),
            HostPattern::Subdomains(base) => {
                origin.host.parse::<IpAddr>().is_err()
                    && origin.host.strip_suffix(base.as_str()).is_some_and(|head| head.len() > 1 && head.ends_with('.'))
            }
            HostPattern::Any => true,
        }
    }
}

/// `host[:port]`, with IPv6 in brackets; `None` for a bad port.
fn split_host_port(text: &str) -> Option<(&str, Option<u16>)> {
    if let Some(inner) = text.strip_prefix('[') {
        let (host, after) = inner.split_once(']')?;
        return match after {
            "" => Some((host, None)),
            _ => Some((host, Some(after.strip_prefix(':')?.parse().ok()?))),
        };
    }
    match text.rsplit_once(':') {
        Some((host, port)) => Some((host, Some(port.parse().ok().filter(|p| *p != 0)?))),
        None => Some((text, None)),
    }
}

/// A DNS name: labels of letters, digits, `-` and `_`, 1–63 bytes each.
fn valid_name(name: &str) -> bool {
    name.len() <= 253
        && name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
}

/// One allowed origin and the methods allowed to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginRule {
    /// Where requests may go.
    pub pattern: OriginPattern,
    /// Allowed methods; `None` allows every method in `METHODS` (GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS).
    pub methods: Option<Vec<Method>>,
}

/// A header value the operator keeps from the guest. Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretValue {
    header: HeaderValue,
    secret: String,
}

impl SecretValue {
    /// The header value (prefix and secret), marked sensitive.
    pub fn header_value(&self) -> &HeaderValue {
        &self.header
    }

    /// The secret without its prefix, for scrubbing it out of what a guest
    /// returns.
    pub fn secret(&self) -> &str {
        &self.secret
    }
}

impl fmt::Debug for SecretValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SecretValue(<redacted>)")
    }
}

/// Where the value of a secret header comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// One value for every call (`value_env` or `value_file`, read at load).
    Fixed(SecretValue),
    /// One value per principal (`value_dir`): the file named after the
    /// call's principal in `dir`, read when the call starts.
    PerPrincipal {
        /// The directory of credential files.
        dir: PathBuf,
        /// Written before each value, e.g. `Bearer `.
        prefix: String,
        /// Largest credential file used (`max_value_bytes`); a larger one
        /// leaves the principal without a credential.
        max_bytes: u64,
    },
    /// The call's principal has no usable credential here: requests to the
    /// origin are refused, naming the header and the principal.
    Missing {
        /// The principal of the call.
        principal: String,
    },
}

/// A header the host adds to every request to `origin`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretHeader {
    /// Requests to this origin get the header.
    pub origin: OriginPattern,
    /// Header name, e.g. `authorization`; the guest may not set it.
    pub name: HeaderName,
    /// Header value: fixed at load, or the call's principal's.
    pub value: SecretSource,
    /// The file the value was read from (`value_file`), which
    /// `serve --watch` watches.
    pub file: Option<PathBuf>,
}

/// Everything a tool may do on the network. A tool without one may not
/// send any request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkGrant {
    /// Allowed origins, first match wins.
    pub allow: Vec<OriginRule>,
    /// Private, loopback or link-local networks reachable by name.
    pub private_addresses: Vec<IpNet>,
    /// Requests per call.
    pub max_requests: u32,
    /// Response body bytes per call, over all requests.
    pub max_response_bytes: u64,
    /// Headers the host adds.
    pub secrets: Vec<SecretHeader>,
}

impl NetworkGrant {
    /// Validate a raw grant. `resolve` makes relative paths absolute.
    ///
    /// # Errors
    ///
    /// A message naming the key and what is accepted.
    pub fn from_raw(raw: RawNetwork, resolve: &dyn Fn(&Path) -> PathBuf) -> Result<Self, String> {
        let mut allow = Vec::new();
        for origin in raw.allow {
            let (text, methods) = match origin {
                RawOrigin::Origin(text) => (text, None),
                RawOrigin::WithMethods { origin, methods } => (origin, Some(methods)),
            };
            let pattern = OriginPattern::parse(&text).map_err(|m| format!("network.allow: {m}"))?;
            let methods = match methods {
                None => None,
                Some(methods) if methods.is_empty() => {
                    return Err(format!(
                        "network.allow {text:?}: methods is empty; leave it out to allow every method"
                    ));
                }
                Some(methods) => Some(methods.iter().map(|m| parse_method(m)).collect::<Result<Vec<_>, _>>()?),
            };
            allow.push(OriginRule { pattern, methods });
        }
        let private_addresses = raw
            .private_addresses
            .iter()
            .map(|text| {
                text.parse::<IpNet>().or_else(|_| text.parse::<IpAddr>().map(IpNet::from)).map_err(|_| {
                    format!("network.private_addresses: {text:?} is not an address or network, e.g. \"10.0.0.0/8\"")
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let max_requests = raw.max_requests.unwrap_or(DEFAULT_MAX_REQUESTS);
        if !(1..=MAX_REQUESTS_CAP).contains(&max_requests) {
            return Err(format!(
                "network.max_requests = {max_requests} is out of range: accepted 1..={MAX_REQUESTS_CAP}"
            ));
        }
        let max_response_bytes = raw.max_response_bytes.unwrap_or(DEFAULT_MAX_RESPONSE_BYTES);
        if !(1..=MAX_RESPONSE_BYTES_CAP).contains(&max_response_bytes) {
            return Err(format!(
                "network.max_response_bytes = {max_response_bytes} is out of range: accepted 1..={MAX_RESPONSE_BYTES_CAP}"
            ));
        }
        let secrets = raw.secret_headers.into_iter().map(|s| secret(s, resolve)).collect::<Result<Vec<_>, _>>()?;
        for secret in &secrets {
            if !allow.iter().any(|rule| rule.pattern == secret.origin) {
                return Err(format!(
                    "network.secret_headers: origin {:?} is not in network.allow; a secret goes only to an allowed origin",
                    secret.origin
                ));
            }
            if matches!(secret.origin.host, HostPattern::Any | HostPattern::Subdomains(_)) {
                return Err(
                    "network.secret_headers: origin must name one host, not a wildcard, so a secret reaches only that host"
                        .to_owned(),
                );
            }
        }
        Ok(Self { allow, private_addresses, max_requests, max_response_bytes, secrets })
    }

    /// The first rule matching `origin`.
    pub fn rule_for(&self, origin: &RequestOrigin) -> Option<&OriginRule> {
        self.allow.iter().find(|rule| rule.pattern.matches(origin))
    }

    /// This grant for one call of `principal`, with each credential kept
    /// per principal read from its file (or marked missing); `None` when no
    /// credential is kept per principal.
    ///
    /// # Security
    ///
    /// `principal` comes from the front end and names a file: an id that is
    /// empty, longer than [`MAX_CREDENTIAL_NAME_BYTES`], starts with `.` or
    /// holds `/`, `\` or NUL names none, so no principal reaches a file
    /// outside the directory (or a hidden one in it). Values are never
    /// logged.
    pub fn for_principal(&self, principal: &str) -> Option<NetworkGrant> {
        if !self.secrets.iter().any(|secret| matches!(secret.value, SecretSource::PerPrincipal { .. })) {
            return None;
        }
        let mut grant = self.clone();
        for secret in &mut grant.secrets {
            if let SecretSource::PerPrincipal { dir, prefix, max_bytes } = &secret.value {
                secret.value = match read_credential(dir, prefix, *max_bytes, principal, &secret.name) {
                    Some(value) => SecretSource::Fixed(value),
                    None => SecretSource::Missing { principal: principal.to_owned() },
                };
            }
        }
        Some(grant)
    }

    /// Whether the guest may not set header `name` (a secret's name).
    pub fn is_secret_header(&self, name: &HeaderName) -> bool {
        self.secrets.iter().any(|secret| secret.name == *name)
    }

    /// A short summary, e.g. `net https://api.example.com, http://127.0.0.1:8080`.
    pub fn summary(&self) -> String {
        let origins: Vec<String> = self.allow.iter().map(|rule| pattern_text(&rule.pattern)).collect();
        format!("net {}", origins.join(", "))
    }
}

fn pattern_text(pattern: &OriginPattern) -> String {
    let host = match &pattern.host {
        HostPattern::Name(name) => name.clone(),
        HostPattern::Ip(IpAddr::V6(ip)) => format!("[{ip}]"),
        HostPattern::Ip(ip) => ip.to_string(),
        HostPattern::Subdomains(base) => format!("*.{base}"),
        HostPattern::Any => "*".to_owned(),
    };
    if pattern.port == pattern.scheme.default_port() {
        format!("{}://{host}", pattern.scheme.as_str())
    } else {
        format!("{}://{host}:{}", pattern.scheme.as_str(), pattern.port)
    }
}

/// The methods a grant may name; a rule without `methods` allows these.
/// `CONNECT` (a tunnel past the checks), `TRACE` and others never pass.
pub const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

fn parse_method(text: &str) -> Result<Method, String> {
    let upper = text.to_ascii_uppercase();
    if !METHODS.contains(&upper.as_str()) {
        return Err(format!("network.allow: method {text:?} is not accepted: use {}", METHODS.join(", ")));
    }
    Method::from_bytes(upper.as_bytes()).map_err(|_| format!("network.allow: method {text:?} is not a method"))
}

fn secret(raw: RawSecret, resolve: &dyn Fn(&Path) -> PathBuf) -> Result<SecretHeader, String> {
    let ctx = format!("network.secret_headers {:?}", raw.header);
    let origin = OriginPattern::parse(&raw.origin).map_err(|m| format!("{ctx}: {m}"))?;
    let name = HeaderName::from_bytes(raw.header.as_bytes())
        .map_err(|_| format!("{ctx}: not a header name, e.g. \"authorization\""))?;
    let mut value_file = None;
    if raw.max_value_bytes.is_some() && raw.value_dir.is_none() {
        return Err(format!("{ctx}: max_value_bytes caps the credential files of a `value_dir`; this header has none"));
    }
    let value = match (&raw.value_env, &raw.value_file, &raw.value_dir) {
        (Some(var), None, None) => {
            std::env::var(var).map_err(|_| format!("{ctx}: value_env = {var:?} is not set in the host environment"))?
        }
        (None, Some(file), None) => {
            let path = resolve(file);
            let text = std::fs::read_to_string(&path)
                .map_err(|err| format!("{ctx}: value_file = {:?} cannot be read: {err}", path.display()))?;
            value_file = Some(path);
            text.trim_end_matches(['\r', '\n']).to_owned()
        }
        (None, None, Some(dir)) => {
            let dir = resolve(dir);
            if !std::fs::metadata(&dir).is_ok_and(|meta| meta.is_dir()) {
                return Err(format!(
                    "{ctx}: value_dir = {:?} is not a directory; it holds one credential file per principal, named after the principal",
                    dir.display()
                ));
            }
            if HeaderValue::from_str(&raw.prefix).is_err() {
                return Err(format!("{ctx}: the prefix is not a valid header value (visible ASCII only)"));
            }
            let max_bytes = raw.max_value_bytes.unwrap_or(DEFAULT_MAX_SECRET_FILE_BYTES);
            if !MAX_VALUE_BYTES_RANGE.contains(&max_bytes) {
                return Err(format!(
                    "{ctx}: max_value_bytes = {max_bytes} is out of range: accepted {}..={}",
                    MAX_VALUE_BYTES_RANGE.start(),
                    MAX_VALUE_BYTES_RANGE.end()
                ));
            }
            return Ok(SecretHeader {
                origin,
                name,
                value: SecretSource::PerPrincipal { dir, prefix: raw.prefix, max_bytes },
                file: None,
            });
        }
        _ => return Err(format!("{ctx}: needs exactly one of `value_env`, `value_file` or `value_dir`")),
    };
    let value = secret_value(&raw.prefix, value).map_err(|why| format!("{ctx}: {why}"))?;
    Ok(SecretHeader { origin, name, value: SecretSource::Fixed(value), file: value_file })
}

/// `prefix` and `secret` as a sensitive header value; the error says what
/// is wrong without the value.
fn secret_value(prefix: &str, secret: String) -> Result<SecretValue, String> {
    if secret.len() < MIN_SECRET_LEN {
        return Err(format!(
            "the secret value has {} characters; a secret has at least {MIN_SECRET_LEN}",
            secret.len()
        ));
    }
    let mut header = HeaderValue::from_str(&format!("{prefix}{secret}"))
        .map_err(|_| "the value is not a valid header value (visible ASCII only)".to_owned())?;
    header.set_sensitive(true);
    Ok(SecretValue { header, secret })
}

/// Whether `principal` can name a credential file: not empty, at most
/// [`MAX_CREDENTIAL_NAME_BYTES`], no `/`, `\` or NUL, not starting with
/// `.` (which also rules out `.` and `..`).
fn credential_name(principal: &str) -> bool {
    !principal.is_empty()
        && principal.len() <= MAX_CREDENTIAL_NAME_BYTES
        && !principal.starts_with('.')
        && !principal.contains(['/', '\\', '\0'])
}

/// The credential of `principal` in `dir` (a file of at most `max_bytes`),
/// or `None` when it has none usable. A file that exists but cannot be used
/// is logged (its path and why, never its content) so the operator can fix
/// it.
fn read_credential(
    dir: &Path,
    prefix: &str,
    max_bytes: u64,
    principal: &str,
    header: &HeaderName,
) -> Option<SecretValue> {
    use std::io::Read as _;
    if !credential_name(principal) {
        return None;
    }
    let path = dir.join(principal);
    let unusable = |why: &str| {
        tracing::warn!(path = %path.display(), header = %header, "the credential file cannot be used: {why}");
        None
    };
    let file = match std::fs::File::open(&path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
        Err(err) => return unusable(&err.to_string()),
    };
    match file.metadata() {
        Ok(meta) if !meta.is_file() => return unusable("not a regular file"),
        Ok(meta) if meta.len() > max_bytes => {
            return unusable(&format!(
                "it is {} bytes, over the {max_bytes}-byte cap (max_value_bytes of this secret header)",
                meta.len()
            ));
        }
        Ok(_) => {}
        Err(err) => return unusable(&err.to_string()),
    }
    let mut text = String::new();
    // The cap holds even if the file grows after the size check.
    if let Err(err) = file.take(max_bytes).read_to_string(&mut text) {
        return unusable(&err.to_string());
    }
    let secret = text.trim_end_matches(['\r', '\n']).to_owned();
    match secret_value(prefix, secret) {
        Ok(value) => Some(value),
        Err(why) => unusable(&why),
    }
}
