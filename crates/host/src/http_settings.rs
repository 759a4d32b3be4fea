//! `[http]`: the settings of the MCP streamable-HTTP transport, bearer
//! tokens, JWT access tokens (`[http.jwt]`) and extra allowed origins.
//!
//! A token is a secret: it comes from the config file or, better, from an
//! environment variable (`token_env`) or a file (`token_file`, which
//! `serve --watch` watches) named there, and is refused when
//! shorter than [`MIN_TOKEN_LEN`]. The transport (`mcp/http`) compares
//! presented tokens against these; nothing else reads them, and
//! `airlock config` shows them redacted.
//!
//! The caps of the transport (connections, header and body time, body
//! size, sessions, waiting confirmations) and of access tokens (token,
//! principal and key-set sizes, clock skew, fetch time, list claims) are the
//! operator's to set, each within a range checked here; they are read when
//! the server starts.

use serde::Deserialize;
use std::fmt::Display;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Fewest characters a bearer token may have.
pub const MIN_TOKEN_LEN: usize = 16;
/// The JWT signature algorithms `[http.jwt] algorithms` may name (and
/// accepts by default): asymmetric ones only, so a key set's public key
/// can never be used as an HMAC secret.
pub const JWT_ALGORITHMS: [&str; 3] = ["RS256", "ES256", "EdDSA"];
/// How long a fetched JWKS is used before it is fetched again, unless
/// `[http.jwt] jwks_refresh_seconds` says otherwise.
pub const DEFAULT_JWKS_REFRESH: Duration = Duration::from_secs(3600);
/// Least time between two fetches of a JWKS URL, whatever the tokens
/// presented (an unknown `kid` asks for a fetch), unless `[http.jwt]
/// jwks_min_refresh_seconds` says otherwise.
pub const DEFAULT_JWKS_MIN_REFRESH: Duration = Duration::from_secs(60);

/// How long a connection may take to send a request's headers unless
/// `[http] header_timeout_secs` says otherwise, counted from when it is
/// ready for a request: when it is opened, and on a kept-alive connection
/// when the previous response is written. So this is also how long an idle
/// kept-alive connection is kept. Past it the connection is closed (hyper's
/// `header_read_timeout`, which runs in both cases).
pub const DEFAULT_HTTP_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Accepted `[http] header_timeout_secs`.
pub const HEADER_TIMEOUT_SECS_RANGE: RangeInclusive<u64> = 1..=300;
/// How long a `POST` body may take to arrive once its headers have, unless
/// `[http] body_timeout_secs` says otherwise; past it the request is
/// answered `408` with a JSON-RPC error.
pub const DEFAULT_HTTP_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Accepted `[http] body_timeout_secs`.
pub const BODY_TIMEOUT_SECS_RANGE: RangeInclusive<u64> = 1..=600;
/// Most connections open at once unless `[http] max_connections` says
/// otherwise; more are accepted and closed at once.
pub const DEFAULT_MAX_HTTP_CONNECTIONS: usize = 256;
/// Accepted `[http] max_connections`.
pub const MAX_CONNECTIONS_RANGE: RangeInclusive<usize> = 1..=65_536;
/// Most connections open at once from one IPv4 address or IPv6 /64 unless
/// `[http] max_connections_per_peer` says otherwise (at most
/// `max_connections`); more are accepted and closed at once.
pub const DEFAULT_MAX_HTTP_CONNECTIONS_PER_PEER: usize = 32;
/// Most connections open at once that have not yet sent a request the
/// gate admitted (no complete request, or no valid token yet), unless
/// `[http] max_unauthenticated_connections` says otherwise. They are
/// counted apart from `max_connections` and `max_connections_per_peer`,
/// which count authenticated connections only; when this pool is full, a
/// new connection takes the place of the oldest unauthenticated one.
pub const DEFAULT_MAX_UNAUTHENTICATED_CONNECTIONS: usize = 64;
/// Accepted `[http] max_unauthenticated_connections`.
pub const MAX_UNAUTHENTICATED_CONNECTIONS_RANGE: RangeInclusive<usize> = 1..=65_536;
/// How long a connection may stay unauthenticated (from when it is
/// accepted until a request on it passes the gate) unless `[http]
/// unauthenticated_timeout_secs` says otherwise; past it the connection is
/// closed.
pub const DEFAULT_UNAUTHENTICATED_TIMEOUT: Duration = Duration::from_secs(10);
/// Accepted `[http] unauthenticated_timeout_secs`.
pub const UNAUTHENTICATED_TIMEOUT_SECS_RANGE: RangeInclusive<u64> = 1..=300;
/// Most entries `[http] trusted_proxies` may list.
pub const MAX_TRUSTED_PROXIES: usize = 256;
/// Largest request body accepted, in bytes, unless `[http] max_body_bytes`
/// says otherwise (a call's arguments are capped at
/// [`MAX_ARGUMENT_BYTES`](crate::MAX_ARGUMENT_BYTES); this leaves room for
/// the envelope).
pub const DEFAULT_MAX_HTTP_BODY_BYTES: usize = 4 << 20;
/// Accepted `[http] max_body_bytes`.
pub const MAX_BODY_BYTES_RANGE: RangeInclusive<usize> = 1024..=(64 << 20);
/// Most MCP sessions (`initialize`-based revisions) kept open at once
/// unless `[http] max_sessions` says otherwise.
pub const DEFAULT_MAX_HTTP_SESSIONS: usize = 1024;
/// Accepted `[http] max_sessions` (and `[quotas] http_sessions`).
pub const MAX_SESSIONS_RANGE: RangeInclusive<usize> = 1..=65_536;
/// Most calls waiting at once for a confirmation answer (MCP
/// 2026-07-28 `inputRequests`, any transport) unless `[http]
/// max_pending_confirmations` says otherwise; beyond, a call is declined.
pub const DEFAULT_MAX_PENDING_CONFIRMATIONS: usize = 256;
/// Accepted `[http] max_pending_confirmations`.
pub const MAX_PENDING_CONFIRMATIONS_RANGE: RangeInclusive<usize> = 1..=65_536;

/// Longest access token accepted, in bytes, unless `[http.jwt]
/// max_token_bytes` says otherwise.
pub const DEFAULT_MAX_JWT_BYTES: usize = 8 << 10;
/// Accepted `[http.jwt] max_token_bytes`.
pub const MAX_TOKEN_BYTES_RANGE: RangeInclusive<usize> = 512..=(64 << 10);
/// Clock skew allowed when checking `exp` and `nbf` unless `[http.jwt]
/// leeway_secs` says otherwise.
pub const DEFAULT_JWT_LEEWAY: Duration = Duration::from_secs(60);
/// Accepted `[http.jwt] leeway_secs`.
pub const LEEWAY_SECS_RANGE: RangeInclusive<u64> = 0..=600;
/// Longest principal a token's principal claim may name, in bytes, unless
/// `[http.jwt] max_principal_bytes` says otherwise.
pub const DEFAULT_MAX_PRINCIPAL_BYTES: usize = airlock_core::call::MAX_PRINCIPAL_LEN;
/// Accepted `[http.jwt] max_principal_bytes`: it can only be lowered, as
/// the pipeline cuts a longer principal (and two cut ones could be taken
/// for one another).
pub const MAX_PRINCIPAL_BYTES_RANGE: RangeInclusive<usize> = 1..=airlock_core::call::MAX_PRINCIPAL_LEN;
/// Largest JWKS document read (file or URL), in bytes, unless `[http.jwt]
/// max_jwks_bytes` says otherwise.
pub const DEFAULT_MAX_JWKS_BYTES: usize = 256 << 10;
/// Accepted `[http.jwt] max_jwks_bytes`.
pub const MAX_JWKS_BYTES_RANGE: RangeInclusive<usize> = 1024..=(16 << 20);
/// Most keys a JWKS document may hold unless `[http.jwt] max_jwks_keys`
/// says otherwise; a document with more is refused.
pub const DEFAULT_MAX_JWKS_KEYS: usize = 64;
/// Accepted `[http.jwt] max_jwks_keys`.
pub const MAX_JWKS_KEYS_RANGE: RangeInclusive<usize> = 1..=1024;
/// How long fetching the JWKS URL may take, connecting to the last byte,
/// unless `[http.jwt] jwks_fetch_timeout_secs` says otherwise.
pub const DEFAULT_JWKS_FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Accepted `[http.jwt] jwks_fetch_timeout_secs`.
pub const JWKS_FETCH_TIMEOUT_SECS_RANGE: RangeInclusive<u64> = 1..=120;
/// Most items of a list claim that becomes an attribute
/// (`attribute_claims`) unless `[http.jwt] max_claim_list_items` says
/// otherwise; a longer list gives no attribute.
pub const DEFAULT_MAX_CLAIM_LIST_ITEMS: usize = 64;
/// Accepted `[http.jwt] max_claim_list_items`.
pub const MAX_CLAIM_LIST_ITEMS_RANGE: RangeInclusive<usize> = 1..=1024;

/// A bearer token accepted by the MCP HTTP transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BearerToken {
    /// The secret value.
    pub token: String,
    /// The principal a request with this token acts as.
    pub principal: String,
    /// The file the token was read from (`token_file`), which
    /// `serve --watch` watches.
    pub file: Option<PathBuf>,
}

/// MCP streamable-HTTP settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpSettings {
    /// Accepted bearer tokens; empty means no authentication (loopback only).
    pub tokens: Vec<BearerToken>,
    /// Extra `Origin` values accepted besides loopback origins.
    pub allowed_origins: Vec<String>,
    /// JWT access tokens accepted besides `tokens`.
    pub jwt: Option<JwtSettings>,
    /// The caps of the transport.
    pub caps: HttpCaps,
    /// The proxies whose PROXY protocol header and `X-Forwarded-For` give
    /// a client's address (`trusted_proxies`); empty: the peer's address
    /// is the client's, and those headers are not read.
    pub trusted_proxies: Vec<ipnet::IpNet>,
}

/// What the MCP HTTP transport spends on its clients (`[http]`), read
/// when the server starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpCaps {
    /// Time to send a request's headers, also the keep-alive idle time
    /// (`header_timeout_secs`).
    pub header_timeout: Duration,
    /// Time for a `POST` body after its headers (`body_timeout_secs`).
    pub body_timeout: Duration,
    /// Authenticated connections open at once (`max_connections`).
    pub max_connections: usize,
    /// Authenticated connections open at once from one client IPv4
    /// address or IPv6 /64 (`max_connections_per_peer`).
    pub max_connections_per_peer: usize,
    /// Connections open at once that no request has authenticated yet
    /// (`max_unauthenticated_connections`).
    pub max_unauthenticated_connections: usize,
    /// How long a connection may stay unauthenticated
    /// (`unauthenticated_timeout_secs`).
    pub unauthenticated_timeout: Duration,
    /// Largest request body, in bytes (`max_body_bytes`).
    pub max_body_bytes: usize,
    /// MCP sessions kept at once (`max_sessions`).
    pub max_sessions: usize,
    /// Calls waiting at once for a confirmation answer
    /// (`max_pending_confirmations`).
    pub max_pending_confirmations: usize,
}

impl Default for HttpCaps {
    fn default() -> Self {
        HttpCaps {
            header_timeout: DEFAULT_HTTP_HEADER_READ_TIMEOUT,
            body_timeout: DEFAULT_HTTP_BODY_READ_TIMEOUT,
            max_connections: DEFAULT_MAX_HTTP_CONNECTIONS,
            max_connections_per_peer: DEFAULT_MAX_HTTP_CONNECTIONS_PER_PEER,
            max_unauthenticated_connections: DEFAULT_MAX_UNAUTHENTICATED_CONNECTIONS,
            unauthenticated_timeout: DEFAULT_UNAUTHENTICATED_TIMEOUT,
            max_body_bytes: DEFAULT_MAX_HTTP_BODY_BYTES,
            max_sessions: DEFAULT_MAX_HTTP_SESSIONS,
            max_pending_confirmations: DEFAULT_MAX_PENDING_CONFIRMATIONS,
        }
    }
}

/// What checking an access token and its key set may cost (`[http.jwt]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JwtCaps {
    /// Longest token, in bytes (`max_token_bytes`).
    pub max_token_bytes: usize,
    /// Clock skew allowed for `exp` and `nbf` (`leeway_secs`).
    pub leeway: Duration,
    /// Longest principal, in bytes (`max_principal_bytes`).
    pub max_principal_bytes: usize,
    /// Largest JWKS document, in bytes (`max_jwks_bytes`).
    pub max_jwks_bytes: usize,
    /// Most keys in a JWKS document (`max_jwks_keys`).
    pub max_jwks_keys: usize,
    /// Time to fetch `jwks_url` (`jwks_fetch_timeout_secs`).
    pub jwks_fetch_timeout: Duration,
    /// Most items of a list claim that becomes an attribute
    /// (`max_claim_list_items`).
    pub max_claim_list_items: usize,
}

impl Default for JwtCaps {
    fn default() -> Self {
        JwtCaps {
            max_token_bytes: DEFAULT_MAX_JWT_BYTES,
            leeway: DEFAULT_JWT_LEEWAY,
            max_principal_bytes: DEFAULT_MAX_PRINCIPAL_BYTES,
            max_jwks_bytes: DEFAULT_MAX_JWKS_BYTES,
            max_jwks_keys: DEFAULT_MAX_JWKS_KEYS,
            jwks_fetch_timeout: DEFAULT_JWKS_FETCH_TIMEOUT,
            max_claim_list_items: DEFAULT_MAX_CLAIM_LIST_ITEMS,
        }
    }
}

/// `value`, or `default` when not given, if it is in `range`; else an
/// error naming `ctx key`, the value and the range.
fn ranged<T: PartialOrd + Display + Copy>(
    ctx: &str,
    key: &str,
    value: Option<T>,
    default: T,
    range: &RangeInclusive<T>,
) -> Result<T, String> {
    airlock_settings::limits::in_range(&format!("{ctx} {key}"), value.unwrap_or(default), *range.start(), *range.end())
}

/// Seconds as [`ranged`] checks them, as a duration.
fn ranged_secs(
    ctx: &str,
    key: &str,
    value: Option<u64>,
    default: Duration,
    range: &RangeInclusive<u64>,
) -> Result<Duration, String> {
    ranged(ctx, key, value, default.as_secs(), range).map(Duration::from_secs)
}

/// Where the keys that sign access tokens are read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    /// A JWKS document on disk, read at start.
    File(PathBuf),
    /// A JWKS document fetched over HTTPS (plain HTTP only from a loopback
    /// address), cached and refreshed.
    Url(String),
}

/// `[http.jwt]`: accept JWT access tokens (OAuth 2.1 resource server).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtSettings {
    /// The `iss` a token must carry.
    pub issuer: String,
    /// The value a token's `aud` must carry (or contain).
    pub audience: String,
    /// Where the verification keys come from.
    pub jwks: JwksSource,
    /// The claim whose string value is the principal (default `sub`).
    pub principal_claim: String,
    /// Whether a token may name a principal that a static bearer token
    /// (`[[http.tokens]]`) names, and then act as it (`shared_principals`,
    /// default `false`: such a token is refused, so that an identity
    /// provider's user cannot act as a static token's holder).
    pub shared_principals: bool,
    /// The accepted `alg` values, a subset of [`JWT_ALGORITHMS`].
    pub algorithms: Vec<String>,
    /// The authorization servers the metadata document lists (default: the
    /// issuer).
    pub authorization_servers: Vec<String>,
    /// This server's resource identifier for the metadata document
    /// (default: the audience).
    pub resource: String,
    /// How long a fetched JWKS is used before it is fetched again.
    pub jwks_refresh: Duration,
    /// Least time between two fetches of the JWKS URL.
    pub jwks_min_refresh: Duration,
    /// `(attribute, claim)`: the token's claims that become attributes of
    /// the principal, for the policy (`principal.ATTRIBUTE`) and for the
    /// tool (`airlock:tool/caller`), sorted by attribute.
    pub attribute_claims: Vec<(String, String)>,
    /// What checking a token and the key set may cost.
    pub caps: JwtCaps,
}

/// `[http]` as written.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawHttp {
    #[serde(default)]
    tokens: Vec<RawToken>,
    #[serde(default)]
    allowed_origins: Vec<String>,
    jwt: Option<RawJwt>,
    header_timeout_secs: Option<u64>,
    body_timeout_secs: Option<u64>,
    max_connections: Option<usize>,
    max_connections_per_peer: Option<usize>,
    max_unauthenticated_connections: Option<usize>,
    unauthenticated_timeout_secs: Option<u64>,
    #[serde(default)]
    trusted_proxies: Vec<String>,
    max_body_bytes: Option<usize>,
    max_sessions: Option<usize>,
    max_pending_confirmations: Option<usize>,
}

/// `[http.jwt]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawJwt {
    issuer: String,
    audience: String,
    jwks_file: Option<PathBuf>,
    jwks_url: Option<String>,
    principal_claim: Option<String>,
    #[serde(default)]
    shared_principals: bool,
    algorithms: Option<Vec<String>>,
    authorization_servers: Option<Vec<String>>,
    resource: Option<String>,
    jwks_refresh_seconds: Option<u64>,
    jwks_min_refresh_seconds: Option<u64>,
    #[serde(default)]
    attribute_claims: std::collections::BTreeMap<String, String>,
    max_token_bytes: Option<usize>,
    leeway_secs: Option<u64>,
    max_principal_bytes: Option<usize>,
    max_jwks_bytes: Option<usize>,
    max_jwks_keys: Option<usize>,
    jwks_fetch_timeout_secs: Option<u64>,
    max_claim_list_items: Option<usize>,
}

/// One `[[http.tokens]]` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToken {
    token: Option<String>,
    token_env: Option<String>,
    token_file: Option<PathBuf>,
    principal: String,
}

/// Most claims `[http.jwt] attribute_claims` may name.
pub const MAX_ATTRIBUTE_CLAIMS: usize = 32;
/// Longest attribute or claim name in `[http.jwt] attribute_claims`.
pub const MAX_ATTRIBUTE_NAME_BYTES: usize = 64;

/// Whether `name` can be written `principal.NAME` in Cedar: letters,
/// digits and `_`, not starting with a digit, not reserved by Cedar.
fn is_attribute_name(name: &str) -> bool {
    const RESERVED: [&str; 10] = ["true", "false", "if", "then", "else", "in", "like", "has", "is", "__cedar"];
    let mut chars = name.chars();
    name.len() <= MAX_ATTRIBUTE_NAME_BYTES
        && chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !RESERVED.contains(&name)
}

impl HttpSettings {
    /// Check `[http]`: each token is given exactly once (`token`,
    /// `token_env` or `token_file`, relative paths through `resolve`), its
    /// variable is set or its file readable, and it is long enough.
    ///
    /// # Errors
    ///
    /// The first token refused, as `[[http.tokens]] #N ...` with what is
    /// accepted.
    pub fn from_raw(raw: RawHttp, resolve: &dyn Fn(&Path) -> PathBuf) -> Result<HttpSettings, String> {
        let mut tokens = Vec::new();
        for (i, token) in raw.tokens.into_iter().enumerate() {
            let ctx = format!("[[http.tokens]] #{}", i + 1);
            let (value, file) = match (token.token, token.token_env, token.token_file) {
                (Some(value), None, None) => (value, None),
                (None, Some(var), None) => (
                    std::env::var(&var)
                        .map_err(|_| format!("{ctx} token_env = {var:?}: that environment variable is not set"))?,
                    None,
                ),
                (None, None, Some(file)) => {
                    let path = resolve(&file);
                    let text = std::fs::read_to_string(&path)
                        .map_err(|err| format!("{ctx} token_file = {:?} cannot be read: {err}", path.display()))?;
                    // One token per file; the line break an editor adds is not part of it.
                    (text.trim_end_matches(['\r', '\n']).to_owned(), Some(path))
                }
                _ => return Err(format!("{ctx} needs exactly one of `token`, `token_env` or `token_file`")),
            };
            if value.len() < MIN_TOKEN_LEN {
                return Err(format!(
                    "{ctx} the token is {} characters; use at least {MIN_TOKEN_LEN} random characters",
                    value.len()
                ));
            }
            tokens.push(BearerToken { token: value, principal: token.principal, file });
        }
        let jwt = raw.jwt.map(|jwt| JwtSettings::from_raw(jwt, resolve)).transpose()?;
        let ctx = "[http]";
        let max_connections =
            ranged(ctx, "max_connections", raw.max_connections, DEFAULT_MAX_HTTP_CONNECTIONS, &MAX_CONNECTIONS_RANGE)?;
        // One peer may take every connection (a load balancer is one peer),
        // never more.
        let per_peer = ranged(
            ctx,
            "max_connections_per_peer",
            raw.max_connections_per_peer,
            DEFAULT_MAX_HTTP_CONNECTIONS_PER_PEER.min(max_connections),
            &(1..=max_connections),
        )
        .map_err(|err| format!("{err} (at most max_connections)"))?;
        let caps = HttpCaps {
            header_timeout: ranged_secs(
                ctx,
                "header_timeout_secs",
                raw.header_timeout_secs,
                DEFAULT_HTTP_HEADER_READ_TIMEOUT,
                &HEADER_TIMEOUT_SECS_RANGE,
            )?,
            body_timeout: ranged_secs(
                ctx,
                "body_timeout_secs",
                raw.body_timeout_secs,
                DEFAULT_HTTP_BODY_READ_TIMEOUT,
                &BODY_TIMEOUT_SECS_RANGE,
            )?,
            max_connections,
            max_connections_per_peer: per_peer,
            max_unauthenticated_connections: ranged(
                ctx,
                "max_unauthenticated_connections",
                raw.max_unauthenticated_connections,
                DEFAULT_MAX_UNAUTHENTICATED_CONNECTIONS,
                &MAX_UNAUTHENTICATED_CONNECTIONS_RANGE,
            )?,
            unauthenticated_timeout: ranged_secs(
                ctx,
                "unauthenticated_timeout_secs",
                raw.unauthenticated_timeout_secs,
                DEFAULT_UNAUTHENTICATED_TIMEOUT,
                &UNAUTHENTICATED_TIMEOUT_SECS_RANGE,
            )?,
            max_body_bytes: ranged(
                ctx,
                "max_body_bytes",
                raw.max_body_bytes,
                DEFAULT_MAX_HTTP_BODY_BYTES,
                &MAX_BODY_BYTES_RANGE,
            )?,
            max_sessions: ranged(
                ctx,
                "max_sessions",
                raw.max_sessions,
                DEFAULT_MAX_HTTP_SESSIONS,
                &MAX_SESSIONS_RANGE,
            )?,
            max_pending_confirmations: ranged(
                ctx,
                "max_pending_confirmations",
                raw.max_pending_confirmations,
                DEFAULT_MAX_PENDING_CONFIRMATIONS,
                &MAX_PENDING_CONFIRMATIONS_RANGE,
            )?,
        };
        let trusted_proxies = trusted_proxies(&raw.trusted_proxies)?;
        Ok(HttpSettings { tokens, allowed_origins: raw.allowed_origins, jwt, caps, trusted_proxies })
    }
}

/// `[http] trusted_proxies`: each entry an address (`10.0.0.5`, `::1`) or
/// a block (`10.0.0.0/8`, `fd00::/8`).
fn trusted_proxies(entries: &[String]) -> Result<Vec<ipnet::IpNet>, String> {
    if entries.len() > MAX_TRUSTED_PROXIES {
        return Err(format!(
            "[http] trusted_proxies lists {} entries; at most {MAX_TRUSTED_PROXIES} are accepted (use blocks such as \
             \"10.0.0.0/8\")",
            entries.len()
        ));
    }
    entries
        .iter()
        .map(|entry| {
            let text = entry.trim();
            text.parse::<ipnet::IpNet>()
                .ok()
                .or_else(|| text.parse::<std::net::IpAddr>().ok().map(ipnet::IpNet::from))
                .map(|net| net.trunc())
                .ok_or_else(|| {
                    format!(
                        "[http] trusted_proxies: {entry:?} is not an address or a block; use e.g. \"10.0.0.5\", \
                         \"10.0.0.0/8\" or \"fd00::/8\""
                    )
                })
        })
        .collect()
}

/// Whether `url` may be `[http.jwt] jwks_url`: `https://` with a host, or
/// `http://` to a loopback host (`localhost`, `127.0.0.0/8`, `[::1]`), where
/// nothing between the host and the issuer can change the keys.
fn check_jwks_url(url: &str) -> Result<(), String> {
    let refuse = |why: &str| Err(format!("[http.jwt] jwks_url = {url:?}: {why}"));
    let Ok(uri) = url.parse::<http::Uri>() else {
        return refuse("not a URL; use e.g. \"https://idp.example.com/.well-known/jwks.json\"");
    };
    let Some(host) = uri.host().filter(|h| !h.is_empty()) else {
        return refuse("the URL has no host; use e.g. \"https://idp.example.com/.well-known/jwks.json\"");
    };
    if uri.authority().is_some_and(|a| a.as_str().contains('@')) {
        return refuse("a URL with user information is not accepted; name the key set's URL alone");
    }
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let loopback =
        host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    match uri.scheme_str() {
        Some("https") => Ok(()),
        Some("http") if loopback => Ok(()),
        Some("http") => refuse(
            "plain http:// is accepted only for a loopback host (localhost, 127.0.0.1, [::1]), where no one on \
             the way can change the keys; use https://",
        ),
        _ => refuse("use an https:// URL"),
    }
}

impl JwtSettings {
    fn from_raw(raw: RawJwt, resolve: &dyn Fn(&Path) -> PathBuf) -> Result<JwtSettings, String> {
        let ctx = "[http.jwt]";
        if raw.issuer.is_empty() || raw.audience.is_empty() {
            return Err(format!("{ctx} issuer and audience must not be empty"));
        }
        let jwks = match (raw.jwks_file, raw.jwks_url) {
            (Some(file), None) => JwksSource::File(resolve(&file)),
            (None, Some(url)) => {
                check_jwks_url(&url)?;
                JwksSource::Url(url)
            }
            _ => return Err(format!("{ctx} needs exactly one of `jwks_file` or `jwks_url`")),
        };
        let algorithms = raw.algorithms.unwrap_or_else(|| JWT_ALGORITHMS.iter().map(|a| (*a).to_owned()).collect());
        if algorithms.is_empty() {
            return Err(format!("{ctx} algorithms is empty; name some of {JWT_ALGORITHMS:?}"));
        }
        if let Some(other) = algorithms.iter().find(|a| !JWT_ALGORITHMS.contains(&a.as_str())) {
            return Err(format!("{ctx} algorithms: {other:?} is not accepted; use some of {JWT_ALGORITHMS:?}"));
        }
        let resource = raw.resource.unwrap_or_else(|| raw.audience.clone());
        if !(resource.starts_with("https://") || resource.starts_with("http://")) {
            return Err(format!(
                "{ctx} resource = {resource:?} (the audience when not given) must be this server's URL, e.g. \
                 \"https://airlock.example.com/mcp\", for the protected-resource metadata document"
            ));
        }
        if raw.attribute_claims.len() > MAX_ATTRIBUTE_CLAIMS {
            return Err(format!(
                "{ctx} attribute_claims names {} claims; at most {MAX_ATTRIBUTE_CLAIMS} are accepted",
                raw.attribute_claims.len()
            ));
        }
        for (attribute, claim) in &raw.attribute_claims {
            if !is_attribute_name(attribute) {
                return Err(format!(
                    "{ctx} attribute_claims: {attribute:?} is not an attribute name; use letters, digits and `_`, \
                     not starting with a digit, at most {MAX_ATTRIBUTE_NAME_BYTES} bytes (e.g. tenant = \"org_id\")"
                ));
            }
            if claim.is_empty() || claim.len() > MAX_ATTRIBUTE_NAME_BYTES {
                return Err(format!(
                    "{ctx} attribute_claims.{attribute}: name a claim of 1 to {MAX_ATTRIBUTE_NAME_BYTES} bytes"
                ));
            }
        }
        let caps = JwtCaps {
            max_token_bytes: ranged(
                ctx,
                "max_token_bytes",
                raw.max_token_bytes,
                DEFAULT_MAX_JWT_BYTES,
                &MAX_TOKEN_BYTES_RANGE,
            )?,
            leeway: ranged_secs(ctx, "leeway_secs", raw.leeway_secs, DEFAULT_JWT_LEEWAY, &LEEWAY_SECS_RANGE)?,
            max_principal_bytes: ranged(
                ctx,
                "max_principal_bytes",
                raw.max_principal_bytes,
                DEFAULT_MAX_PRINCIPAL_BYTES,
                &MAX_PRINCIPAL_BYTES_RANGE,
            )?,
            max_jwks_bytes: ranged(
                ctx,
                "max_jwks_bytes",
                raw.max_jwks_bytes,
                DEFAULT_MAX_JWKS_BYTES,
                &MAX_JWKS_BYTES_RANGE,
            )?,
            max_jwks_keys: ranged(
                ctx,
                "max_jwks_keys",
                raw.max_jwks_keys,
                DEFAULT_MAX_JWKS_KEYS,
                &MAX_JWKS_KEYS_RANGE,
            )?,
            jwks_fetch_timeout: ranged_secs(
                ctx,
                "jwks_fetch_timeout_secs",
                raw.jwks_fetch_timeout_secs,
                DEFAULT_JWKS_FETCH_TIMEOUT,
                &JWKS_FETCH_TIMEOUT_SECS_RANGE,
            )?,
            max_claim_list_items: ranged(
                ctx,
                "max_claim_list_items",
                raw.max_claim_list_items,
                DEFAULT_MAX_CLAIM_LIST_ITEMS,
                &MAX_CLAIM_LIST_ITEMS_RANGE,
            )?,
        };
        let seconds = |value: Option<u64>, default: Duration, key: &str| match value {
            Some(0) => Err(format!("{ctx} {key} must be at least 1")),
            Some(s) => Ok(Duration::from_secs(s)),
            None => Ok(default),
        };
        Ok(JwtSettings {
            authorization_servers: raw.authorization_servers.unwrap_or_else(|| vec![raw.issuer.clone()]),
            issuer: raw.issuer,
            audience: raw.audience,
            jwks,
            principal_claim: raw.principal_claim.unwrap_or_else(|| "sub".to_owned()),
            shared_principals: raw.shared_principals,
            algorithms,
            resource,
            jwks_refresh: seconds(raw.jwks_refresh_seconds, DEFAULT_JWKS_REFRESH, "jwks_refresh_seconds")?,
            attribute_claims: raw.attribute_claims.into_iter().collect(),
            jwks_min_refresh: seconds(
                raw.jwks_min_refresh_seconds,
                DEFAULT_JWKS_MIN_REFRESH,
                "jwks_min_refresh_seconds",
            )?,
            caps,
        })
    }
}

#[cfg(test)]
mod tests;
