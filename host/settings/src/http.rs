//! `[http]` and `[http.jwt]`: the settings of the MCP streamable-HTTP
//! transport, bearer tokens, JWT access tokens and extra allowed origins,
//! each key declared once ([`HTTP`], [`JWT`]). `airlock-mcp` enforces the
//! caps; `airlock-pipeline` reads the tokens and origins into each state.
//!
//! A token is a secret: it comes from the config file or, better, from an
//! environment variable (`token_env`) or a file (`token_file`, which
//! `serve --watch` watches) named there, and is refused when
//! shorter than [`MIN_TOKEN_LEN`]. The transport compares presented tokens
//! against these; nothing else reads them, and `airlock config` shows them
//! redacted.
//!
//! The caps of the transport (connections, header and body time, body
//! size, sessions, waiting confirmations) and of access tokens (token,
//! principal and key-set sizes, clock skew, fetch time, list claims) are the
//! operator's to set, each within a range declared here; they are read when
//! the server starts.

use crate::key_doc::{Unit, Value, check_range};
use serde::Deserialize;
use std::collections::BTreeMap;
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
/// How long a `POST` body may take to arrive once its headers have, unless
/// `[http] body_timeout_secs` says otherwise; past it the request is
/// answered `408` with a JSON-RPC error.
pub const DEFAULT_HTTP_BODY_READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Most connections open at once unless `[http] max_connections` says
/// otherwise; more are accepted and closed at once.
pub const DEFAULT_MAX_HTTP_CONNECTIONS: usize = 256;
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
/// How long a connection may stay unauthenticated (from when it is
/// accepted until a request on it passes the gate) unless `[http]
/// unauthenticated_timeout_secs` says otherwise; past it the connection is
/// closed.
pub const DEFAULT_UNAUTHENTICATED_TIMEOUT: Duration = Duration::from_secs(10);
/// Most entries `[http] trusted_proxies` may list.
pub const MAX_TRUSTED_PROXIES: usize = 256;
/// Largest request body accepted, in bytes, unless `[http] max_body_bytes`
/// says otherwise (a call's arguments are capped at
/// `MAX_ARGUMENT_BYTES`; this leaves room
/// for the envelope).
pub const DEFAULT_MAX_HTTP_BODY_BYTES: usize = 4 << 20;
/// Most MCP sessions (`initialize`-based revisions) kept open at once
/// unless `[http] max_sessions` says otherwise.
pub const DEFAULT_MAX_HTTP_SESSIONS: usize = 1024;
/// Most calls waiting at once for a confirmation answer (MCP
/// 2026-07-28 `inputRequests`, any transport) unless `[http]
/// max_pending_confirmations` says otherwise; beyond, a call is declined.
pub const DEFAULT_MAX_PENDING_CONFIRMATIONS: usize = 256;

/// Longest access token accepted, in bytes, unless `[http.jwt]
/// max_token_bytes` says otherwise.
pub const DEFAULT_MAX_JWT_BYTES: usize = 8 << 10;
/// Clock skew allowed when checking `exp` and `nbf` unless `[http.jwt]
/// leeway_secs` says otherwise.
pub const DEFAULT_JWT_LEEWAY: Duration = Duration::from_secs(60);
/// Longest principal a token's principal claim may name, in bytes, unless
/// `[http.jwt] max_principal_bytes` says otherwise.
pub const DEFAULT_MAX_PRINCIPAL_BYTES: usize = airlock_core::call::MAX_PRINCIPAL_LEN;
/// Largest JWKS document read (file or URL), in bytes, unless `[http.jwt]
/// max_jwks_bytes` says otherwise.
pub const DEFAULT_MAX_JWKS_BYTES: usize = 256 << 10;
/// Most keys a JWKS document may hold unless `[http.jwt] max_jwks_keys`
/// says otherwise; a document with more is refused.
pub const DEFAULT_MAX_JWKS_KEYS: usize = 64;
/// How long fetching the JWKS URL may take, connecting to the last byte,
/// unless `[http.jwt] jwks_fetch_timeout_secs` says otherwise.
pub const DEFAULT_JWKS_FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Most items of a list claim that becomes an attribute
/// (`attribute_claims`) unless `[http.jwt] max_claim_list_items` says
/// otherwise; a longer list gives no attribute.
pub const DEFAULT_MAX_CLAIM_LIST_ITEMS: usize = 64;

/// Most MCP sessions `[http] max_sessions` (and a principal's `[quotas]
/// http_sessions`) may name.
pub const MAX_HTTP_SESSIONS: usize = 65_536;

/// Most claims `[http.jwt] attribute_claims` may name.
pub const MAX_ATTRIBUTE_CLAIMS: usize = 32;
/// Longest attribute or claim name in `[http.jwt] attribute_claims`.
pub const MAX_ATTRIBUTE_NAME_BYTES: usize = 64;

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

/// One `[[http.tokens]]` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawToken {
    token: Option<String>,
    token_env: Option<String>,
    token_file: Option<PathBuf>,
    principal: String,
}

crate::section! {
    /// The keys of `[http]`.
    pub const HTTP: Section<HttpSettings> = "http";
    /// `[http]` as written.
    pub struct RawHttp {
        jwt: Option<RawJwt>,
    }
    hand {
        /// bearer tokens, each mapped to the principal its requests act as; binding a non-loopback address needs one (or `[http.jwt]`)
        tokens: Option<Vec<RawToken>>, Reload,
            accepts "an array of tables: exactly one of `token`, `token_env` or `token_file` (at least 16 characters), and `principal`",
            unset "none: no authentication, loopback only",
            example "[{ token_env = \"AIRLOCK_TOKEN_ALICE\", principal = \"alice\" }]";
        /// `Origin` values accepted besides loopback origins
        allowed_origins: Option<Vec<String>>, Reload, accepts "an array of origins",
            unset "`[]`: loopback origins only",
            show |h: &HttpSettings| Some(Value::List(h.allowed_origins.clone())),
            example "[\"https://agent.example.com\"]";
        /// proxies whose PROXY protocol header or `X-Forwarded-For` name the client
        trusted_proxies: Option<Vec<String>>, Restart, accepts "an array of at most 256 addresses or CIDR blocks",
            unset "`[]`: the TCP peer is the client",
            show |h: &HttpSettings| Some(Value::List(h.trusted_proxies.iter().map(ToString::to_string).collect())),
            example "[\"10.0.0.0/8\"]";
    }
    /// What the MCP HTTP transport spends on its clients (`[http]`), read
    /// when the server starts.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    group pub struct HttpCaps: Default (RawHttpCaps) at (caps) {
        ;
        /// time to send a request's headers, also the keep-alive idle time; past it the connection is closed
        header_timeout_secs => header_timeout: Duration = DEFAULT_HTTP_HEADER_READ_TIMEOUT, Restart,
            range Secs 1..=300;
        /// time for a `POST` body after its headers; past it: `408`, JSON-RPC -32600
        body_timeout_secs => body_timeout: Duration = DEFAULT_HTTP_BODY_READ_TIMEOUT, Restart,
            range Secs 1..=600;
        /// authenticated connections open at once; past it: `503` with `Retry-After: 1`, the connection closed
        max_connections => max_connections: usize = DEFAULT_MAX_HTTP_CONNECTIONS, Restart,
            range Count 1..=65_536;
        /// authenticated connections open at once from one client IPv4 address or IPv6 /64, at most `max_connections`; past it: `503`
        max_connections_per_peer => max_connections_per_peer: usize = DEFAULT_MAX_HTTP_CONNECTIONS_PER_PEER, Restart,
            range Count 1..=65_536, unset "`32`, at most `max_connections`", example "32";
        /// connections open at once that no request has authenticated yet; past it the oldest that has sent nothing is closed for the new one
        max_unauthenticated_connections => max_unauthenticated_connections: usize = DEFAULT_MAX_UNAUTHENTICATED_CONNECTIONS,
            Restart, range Count 1..=65_536;
        /// time for a connection to send a request that passes the gate; past it the connection is closed
        unauthenticated_timeout_secs => unauthenticated_timeout: Duration = DEFAULT_UNAUTHENTICATED_TIMEOUT, Restart,
            range Secs 1..=300;
        /// a request body; past it: `413`, JSON-RPC -32600
        max_body_bytes => max_body_bytes: usize = DEFAULT_MAX_HTTP_BODY_BYTES, Restart,
            range Bytes 1024..=64 << 20;
        /// MCP sessions kept at once, all principals; past it: `503` to the `initialize`
        max_sessions => max_sessions: usize = DEFAULT_MAX_HTTP_SESSIONS, Restart,
            range Count 1..=MAX_HTTP_SESSIONS as u64;
        /// calls waiting at once for a confirmation answer (2026-07-28 `inputRequests`, any transport); past it the call is declined
        max_pending_confirmations => max_pending_confirmations: usize = DEFAULT_MAX_PENDING_CONFIRMATIONS, Restart,
            range Count 1..=65_536;
    }
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

crate::section! {
    /// The keys of `[http.jwt]`.
    pub const JWT: Section<JwtSettings> = "http.jwt";
    /// `[http.jwt]` as written.
    pub struct RawJwt {}
    hand {
        /// the `iss` a token must carry
        issuer: String, Restart, accepts "a string", unset "required in `[http.jwt]`",
            show |j: &JwtSettings| Some(Value::Text(j.issuer.clone())),
            example "\"https://idp.example.com\"";
        /// the value a token's `aud` must carry (or contain)
        audience: String, Restart, accepts "a string", unset "required in `[http.jwt]`",
            show |j: &JwtSettings| Some(Value::Text(j.audience.clone())),
            example "\"https://airlock.example.com/mcp\"";
        /// a JWKS document on disk, read at start (exactly one of `jwks_file` and `jwks_url`)
        jwks_file: Option<PathBuf>, Restart, accepts "a path", unset "not set: `jwks_url`",
            show |j: &JwtSettings| match &j.jwks {
                JwksSource::File(file) => Some(Value::path(file)),
                JwksSource::Url(_) => None,
            },
            example "\"jwks.json\"";
        /// a JWKS document fetched, cached and refreshed (exactly one of `jwks_file` and `jwks_url`)
        jwks_url: Option<String>, Restart, accepts "an `https://` URL (`http://` only to a loopback host)",
            unset "not set: `jwks_file`",
            show |j: &JwtSettings| match &j.jwks {
                JwksSource::Url(url) => Some(Value::Text(url.clone())),
                JwksSource::File(_) => None,
            },
            example "\"https://idp.example.com/.well-known/jwks.json\"";
        /// the accepted `alg` values: asymmetric ones only
        algorithms: Option<Vec<String>>, Restart, accepts "an array of some of `\"RS256\"`, `\"ES256\"`, `\"EdDSA\"`",
            unset "`[\"RS256\", \"ES256\", \"EdDSA\"]`",
            show |j: &JwtSettings| Some(Value::List(j.algorithms.clone())),
            example "[\"RS256\", \"ES256\", \"EdDSA\"]";
        /// the authorization servers the protected-resource metadata document lists
        authorization_servers: Option<Vec<String>>, Restart, accepts "an array of URLs", unset "`[issuer]`",
            show |j: &JwtSettings| Some(Value::List(j.authorization_servers.clone())),
            example "[\"https://idp.example.com\"]";
        /// this server's resource identifier in the metadata document
        resource: Option<String>, Restart, accepts "this server's `https://` (or `http://`) URL", unset "the audience",
            show |j: &JwtSettings| Some(Value::Text(j.resource.clone())),
            example "\"https://airlock.example.com/mcp\"";
        /// the token's claims that become attributes of the principal, for the policy (`principal.ATTRIBUTE`) and the tool
        attribute_claims: Option<BTreeMap<String, String>>, Restart,
            accepts "a table of at most 32 `ATTRIBUTE = \"CLAIM\"` (names of 1 to 64 bytes)", unset "`{}`",
            identity |j: &JwtSettings| Some(format!("{:?}", j.attribute_claims)),
            example "{ tenant = \"org_id\" }";
    }
    /// `[http.jwt]`: accept JWT access tokens (OAuth 2.1 resource server).
    #[derive(Debug, Clone, PartialEq, Eq)]
    group pub struct JwtSettings (RawJwtKeys) at () {
        /// The `iss` a token must carry.
        pub issuer: String = String::new(),
        /// The value a token's `aud` must carry (or contain).
        pub audience: String = String::new(),
        /// Where the verification keys come from.
        pub jwks: JwksSource = JwksSource::Url(String::new()),
        /// The accepted `alg` values, a subset of [`JWT_ALGORITHMS`].
        pub algorithms: Vec<String> = Vec::new(),
        /// The authorization servers the metadata document lists (default: the
        /// issuer).
        pub authorization_servers: Vec<String> = Vec::new(),
        /// This server's resource identifier for the metadata document
        /// (default: the audience).
        pub resource: String = String::new(),
        /// `(attribute, claim)`: the token's claims that become attributes of
        /// the principal, for the policy (`principal.ATTRIBUTE`) and for the
        /// tool (`airlock:tool/caller`), sorted by attribute.
        pub attribute_claims: Vec<(String, String)> = Vec::new(),
        /// What checking a token and the key set may cost.
        pub caps: JwtCaps = JwtCaps::default();
        /// the claim whose string value is the principal
        principal_claim => principal_claim: String = "sub".to_owned(), Restart;
        /// whether a token may name a principal a static `[http] tokens` entry names, and act as it
        shared_principals => shared_principals: bool = false, Restart;
        /// how long a fetched JWKS is used before it is fetched again
        jwks_refresh_seconds => jwks_refresh: Duration = DEFAULT_JWKS_REFRESH, Restart, range Secs 1..=u64::MAX;
        /// least time between two fetches of `jwks_url`, whatever the tokens presented (an unknown `kid` asks for one)
        jwks_min_refresh_seconds => jwks_min_refresh: Duration = DEFAULT_JWKS_MIN_REFRESH, Restart,
            range Secs 1..=u64::MAX;
    }
    /// What checking an access token and its key set may cost (`[http.jwt]`).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    group pub struct JwtCaps: Default (RawJwtCaps) at (caps) {
        ;
        /// the longest token, checked before it is decoded; past it: `401` naming the key
        max_token_bytes => max_token_bytes: usize = DEFAULT_MAX_JWT_BYTES, Restart, range Bytes 512..=64 << 10;
        /// clock skew allowed for `exp` and `nbf`
        leeway_secs => leeway: Duration = DEFAULT_JWT_LEEWAY, Restart, range Secs 0..=600;
        /// the longest principal a token's principal claim may name; it can only be lowered; past it: `401` naming the key
        max_principal_bytes => max_principal_bytes: usize = DEFAULT_MAX_PRINCIPAL_BYTES, Restart,
            range Bytes 1..=airlock_core::call::MAX_PRINCIPAL_LEN as u64;
        /// the largest JWKS document read (file or URL)
        max_jwks_bytes => max_jwks_bytes: usize = DEFAULT_MAX_JWKS_BYTES, Restart, range Bytes 1024..=16 << 20;
        /// most keys a JWKS document may hold; one with more is refused
        max_jwks_keys => max_jwks_keys: usize = DEFAULT_MAX_JWKS_KEYS, Restart, range Count 1..=1024;
        /// time to fetch `jwks_url`, connecting to the last byte; then the keys held are kept
        jwks_fetch_timeout_secs => jwks_fetch_timeout: Duration = DEFAULT_JWKS_FETCH_TIMEOUT, Restart,
            range Secs 1..=120;
        /// most items of a list claim that becomes an attribute; a longer list gives none
        max_claim_list_items => max_claim_list_items: usize = DEFAULT_MAX_CLAIM_LIST_ITEMS, Restart,
            range Count 1..=1024;
    }
}

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
    /// variable is set or its file readable, and it is long enough; each
    /// cap within its range.
    ///
    /// # Errors
    ///
    /// The first key refused: a token as `[[http.tokens]] #N ...`, a cap as
    /// `[http] KEY = VALUE is out of range ...`, with what is accepted.
    pub fn from_raw(mut raw: RawHttp, resolve: &dyn Fn(&Path) -> PathBuf) -> Result<HttpSettings, String> {
        let mut tokens = Vec::new();
        for (i, token) in raw.tokens.take().unwrap_or_default().into_iter().enumerate() {
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
        let jwt = raw.jwt.as_ref().map(|jwt| JwtSettings::from_raw(jwt, resolve)).transpose()?;
        let scope = HTTP.scope();
        let mut keys = RawHttpCaps::from(&raw);
        // One peer may take every connection (a load balancer is one peer),
        // never more: its range ends where `max_connections` does.
        let per_peer = keys.max_connections_per_peer.take();
        let mut caps = HttpCaps::from_keys(&keys, &HttpCaps::default(), &scope)?;
        let most = u64::try_from(caps.max_connections).unwrap_or(u64::MAX);
        caps.max_connections_per_peer = match per_peer {
            None => caps.max_connections_per_peer.min(caps.max_connections),
            Some(n) => {
                let n = check_range(
                    &scope,
                    "max_connections_per_peer",
                    n,
                    1,
                    most,
                    Unit::Count,
                    "at most max_connections",
                )?;
                usize::try_from(n).unwrap_or(caps.max_connections)
            }
        };
        let trusted_proxies = trusted_proxies(&raw.trusted_proxies.unwrap_or_default())?;
        Ok(HttpSettings {
            tokens,
            allowed_origins: raw.allowed_origins.unwrap_or_default(),
            jwt,
            caps,
            trusted_proxies,
        })
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
    /// Check `[http.jwt]`; a relative `jwks_file` is resolved by `resolve`.
    ///
    /// # Errors
    ///
    /// The first key refused, as `[http.jwt] KEY ...` with what is
    /// accepted.
    pub fn from_raw(raw: &RawJwt, resolve: &dyn Fn(&Path) -> PathBuf) -> Result<JwtSettings, String> {
        let scope = JWT.scope();
        let ctx = scope.as_str();
        if raw.issuer.is_empty() || raw.audience.is_empty() {
            return Err(format!("{ctx} issuer and audience must not be empty"));
        }
        let mut settings = JwtSettings::from_keys(&raw.into(), &JwtSettings::defaults(), ctx)?;
        settings.caps = JwtCaps::from_keys(&raw.into(), &JwtCaps::default(), ctx)?;
        settings.jwks = match (&raw.jwks_file, &raw.jwks_url) {
            (Some(file), None) => JwksSource::File(resolve(file)),
            (None, Some(url)) => {
                check_jwks_url(url)?;
                JwksSource::Url(url.clone())
            }
            _ => return Err(format!("{ctx} needs exactly one of `jwks_file` or `jwks_url`")),
        };
        let algorithms =
            raw.algorithms.clone().unwrap_or_else(|| JWT_ALGORITHMS.iter().map(|a| (*a).to_owned()).collect());
        if algorithms.is_empty() {
            return Err(format!("{ctx} algorithms is empty; name some of {JWT_ALGORITHMS:?}"));
        }
        if let Some(other) = algorithms.iter().find(|a| !JWT_ALGORITHMS.contains(&a.as_str())) {
            return Err(format!("{ctx} algorithms: {other:?} is not accepted; use some of {JWT_ALGORITHMS:?}"));
        }
        let resource = raw.resource.clone().unwrap_or_else(|| raw.audience.clone());
        if !(resource.starts_with("https://") || resource.starts_with("http://")) {
            return Err(format!(
                "{ctx} resource = {resource:?} (the audience when not given) must be this server's URL, e.g. \
                 \"https://airlock.example.com/mcp\", for the protected-resource metadata document"
            ));
        }
        let attribute_claims = raw.attribute_claims.clone().unwrap_or_default();
        if attribute_claims.len() > MAX_ATTRIBUTE_CLAIMS {
            return Err(format!(
                "{ctx} attribute_claims names {} claims; at most {MAX_ATTRIBUTE_CLAIMS} are accepted",
                attribute_claims.len()
            ));
        }
        for (attribute, claim) in &attribute_claims {
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
        settings.authorization_servers = raw.authorization_servers.clone().unwrap_or_else(|| vec![raw.issuer.clone()]);
        settings.issuer = raw.issuer.clone();
        settings.audience = raw.audience.clone();
        settings.algorithms = algorithms;
        settings.resource = resource;
        settings.attribute_claims = attribute_claims.into_iter().collect();
        Ok(settings)
    }
}

#[cfg(test)]
mod tests;
