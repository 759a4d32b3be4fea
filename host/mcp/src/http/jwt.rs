//! JWT access tokens (OAuth 2.1 resource server, `[http.jwt]`): the
//! verification keys (a JWKS file, or a JWKS URL fetched, cached and
//! refreshed), the checks a token passes before its claim names the
//! principal, the `401` challenge and the protected-resource metadata
//! document (RFC 9728) that tells a client where to get a token.
//!
//! Trusts nothing in a token until its signature verifies with a key from
//! the configured JWKS: its size is capped (`[http.jwt] max_token_bytes`,
//! checked before anything is decoded), its `alg`
//! must be one the operator accepts (asymmetric only, so a public key can
//! never serve as an HMAC secret and `none` is never accepted), and the key
//! must be of that algorithm's type. Then `iss`, `aud` and `exp` must be
//! present and right, `exp`/`nbf` with `leeway_secs` of clock skew, and
//! the principal claim a string of 1 to `max_principal_bytes` bytes that
//! is a principal's name ([`principal_fault`]: no control, format or
//! invisible character, no space at either end, no word mixing scripts): a
//! principal is written into audit records and logs, matched by policies
//! and shown on confirmation cards, where such a character could forge a
//! line or hide what the name is. A refusal names the code point as
//! `U+XXXX`, never the character itself.
//!
//! A token's principal lives apart from the principals of the static
//! bearer tokens (`[[http.tokens]]`): a token whose principal claim names
//! one of those is refused, so that whoever the identity provider names
//! `alice` cannot act as the holder of the static token of `alice`, unless
//! the operator shares the two namespaces (`[http.jwt] shared_principals =
//! true`). The tokens in force decide, at each request (a reload may add
//! one).
//!
//! A token whose header has `crit` is refused: it names extensions the
//! token's reader must understand, and this one understands none (RFC 7515
//! §4.1.11).
//!
//! Nor does it trust the IdP's document: it is capped in bytes
//! (`max_jwks_bytes`) and keys (`max_jwks_keys`), fetched within
//! `jwks_fetch_timeout_secs` over HTTPS (plain HTTP only to a loopback
//! address, checked at start-up and again on the resolved addresses), and a
//! key it cannot use is skipped.
//!
//! Fetching keys is off the request path. The keys held are read under a
//! lock that is never held across a fetch, so known keys keep verifying
//! while one runs. A background task fetches the key set at start and every
//! `jwks_refresh_seconds` (after a failure, every
//! `jwks_min_refresh_seconds`). A token naming an unknown `kid` asks for a
//! fetch, but there is at most one fetch at a time and fetches start at
//! least `jwks_min_refresh_seconds` apart whatever clients send, so random
//! `kid`s cannot make the host hammer the IdP; such a request waits for the
//! running fetch at most [`UNKNOWN_KID_WAIT`]. A failed fetch keeps the
//! keys already held. A `kid` still unknown when the key set could not be
//! read (the last fetch failed, none succeeded yet, or it is still running)
//! is answered `503` with `Retry-After`, not `invalid_token`: the token may
//! be good, and a client would otherwise discard it.

use airlock_core::caller::{MAX_CALLER_ATTRIBUTE_BYTES, TokenAttributes};
use airlock_pipeline::transport::access::Access;
use airlock_pipeline::transport::outbound::Outbound;
use airlock_pipeline::{JwksSource, JwtSettings};
use airlock_policy::principal::principal_fault;
use airlock_settings::http::JwtCaps;
use anyhow::Context as _;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Where the protected-resource metadata document is served (RFC 9728);
/// also at this path followed by the MCP path.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The key a principal's length is capped by, as a refusal names it.
const MAX_PRINCIPAL_BYTES_KEY: &str = "[http.jwt] max_principal_bytes";

/// A verification key from the JWKS.
struct Key {
    kid: Option<String>,
    algorithm: Algorithm,
    key: DecodingKey,
}

/// Longest a request whose token names an unknown `kid` waits for the
/// key-set fetch it asked for (or joined), at most `[http.jwt]
/// jwks_fetch_timeout_secs`; past it the request is answered `503`.
pub(super) const UNKNOWN_KID_WAIT: Duration = Duration::from_secs(3);
/// Least time between two background refreshes of the key set.
const MIN_REFRESH_PAUSE: Duration = Duration::from_secs(1);

/// The keys held and when they were fetched.
struct Keys {
    keys: Arc<[Key]>,
    /// When the keys were last read successfully.
    loaded: Option<Instant>,
    /// When a fetch was last started, successful or not.
    tried: Option<Instant>,
    /// Whether the last fetch failed.
    failing: bool,
    /// While a fetch runs: what sees it end.
    fetching: Option<watch::Receiver<bool>>,
}

/// The key set: the keys held behind a lock never held across a fetch,
/// and where to fetch them.
struct KeyStore {
    /// `jwks_url`, or `None` for a `jwks_file` read at start.
    url: Option<String>,
    caps: JwtCaps,
    refresh: Duration,
    min_refresh: Duration,
    keys: Mutex<Keys>,
}

/// Why a request's token was not accepted.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Rejection {
    /// No `Authorization: Bearer` header.
    Missing,
    /// A token was sent and is not accepted, for this reason.
    Invalid(String),
    /// The token's key is unknown and the key set could not be read: the
    /// client should retry in this many seconds.
    Unavailable(u64),
}

/// Checks access tokens against `[http.jwt]`.
pub(super) struct Verifier {
    settings: JwtSettings,
    algorithms: Vec<Algorithm>,
    store: Arc<KeyStore>,
}

impl Verifier {
    /// The verifier for `settings`; a JWKS file is read now, a URL by a
    /// background task started now (when there is a runtime to run it) and
    /// ending when the verifier is dropped.
    ///
    /// # Errors
    ///
    /// The JWKS file cannot be read or holds no usable key.
    pub(super) fn new(settings: &JwtSettings) -> anyhow::Result<Verifier> {
        let algorithms = settings.algorithms.iter().filter_map(|name| algorithm(name)).collect();
        let mut keys = Keys { keys: Arc::new([]), loaded: None, tried: None, failing: false, fetching: None };
        if let JwksSource::File(path) = &settings.jwks {
            let bytes = std::fs::read(path)
                .with_context(|| format!("[http.jwt] jwks_file = {:?}: cannot read it", path.display()))?;
            keys.keys = parse_jwks(&bytes, &settings.caps)
                .map_err(|err| anyhow::anyhow!("[http.jwt] jwks_file = {:?}: {err}", path.display()))?
                .into();
            if keys.keys.is_empty() {
                anyhow::bail!(
                    "[http.jwt] jwks_file = {:?} holds no usable signing key (accepted: {:?} keys, for the algorithms \
                     {:?})",
                    path.display(),
                    ["RSA", "EC P-256", "OKP Ed25519"],
                    settings.algorithms
                );
            }
            keys.loaded = Some(Instant::now());
        }
        let store = Arc::new(KeyStore {
            url: match &settings.jwks {
                JwksSource::Url(url) => Some(url.clone()),
                JwksSource::File(_) => None,
            },
            caps: settings.caps,
            refresh: settings.jwks_refresh,
            min_refresh: settings.jwks_min_refresh,
            keys: Mutex::new(keys),
        });
        if store.url.is_some()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(refresh(Arc::downgrade(&store)));
        }
        Ok(Verifier { settings: settings.clone(), algorithms, store })
    }

    /// The principal a request's bearer token names, refused when it is a
    /// principal of a static token of `access` (the tokens in force) and
    /// `[http.jwt] shared_principals` is off.
    pub(super) async fn authenticate(
        &self,
        headers: &HeaderMap,
        access: &Access,
    ) -> Result<(String, TokenAttributes), Rejection> {
        let value = headers.get(header::AUTHORIZATION).ok_or(Rejection::Missing)?;
        let token = value
            .to_str()
            .ok()
            .and_then(|v| v.trim().split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, token)| token.trim())
            .ok_or_else(|| Rejection::Invalid("send the token as Authorization: Bearer <token>".into()))?;
        let result = self.principal(token).await.and_then(|verified| self.apart_from(access, verified));
        // Logged like every client error: capped and at debug, summed up in
        // one warning a minute (a flood of bad tokens is not a flood of
        // log lines; a `kid` is the client's text).
        match &result {
            Err(Rejection::Invalid(why)) => airlock_pipeline::transport::client_log::refused("an access token", why),
            Err(Rejection::Unavailable(_)) => airlock_pipeline::transport::client_log::refused(
                "HTTP 503",
                "an access token's key is unknown and the key set ([http.jwt] jwks_url) cannot be read",
            ),
            _ => {}
        }
        result
    }

    /// Whether a token may act as a static token's principal of the same
    /// name (`[http.jwt] shared_principals`): then the two are one
    /// principal, sessions included.
    pub(super) fn shares_principals(&self) -> bool {
        self.settings.shared_principals
    }

    /// `verified`, unless its principal is one a static token of `access`
    /// names and the operator has not shared the two namespaces.
    fn apart_from(
        &self,
        access: &Access,
        verified: (String, TokenAttributes),
    ) -> Result<(String, TokenAttributes), Rejection> {
        match self.static_principal(access, &verified.0, "an access token") {
            None => Ok(verified),
            Some(why) => Err(Rejection::Invalid(why)),
        }
    }

    /// Why `principal`, named by a token (`what`: an access token, an ID
    /// token), cannot act: it is a principal a static token of `access`
    /// names, and the operator has not shared the two namespaces (`None`:
    /// it can).
    fn static_principal(&self, access: &Access, principal: &str, what: &str) -> Option<String> {
        if self.settings.shared_principals || !access.names_principal(principal) {
            return None;
        }
        // The principal is a name (see `principal_fault`); `escape_debug`
        // quotes it as written.
        Some(format!(
            "the token's {} claim names \"{}\", a principal of a static bearer token ([[http.tokens]]); {what} \
             cannot act as one unless the operator sets [http.jwt] shared_principals = true",
            self.settings.principal_claim,
            principal.escape_debug()
        ))
    }

    /// The principal `token` names and its `attribute_claims`, once it is
    /// verified.
    async fn principal(&self, token: &str) -> Result<(String, TokenAttributes), Rejection> {
        let invalid = Rejection::Invalid;
        let caps = &self.settings.caps;
        // Before anything is decoded: the size is the first thing checked.
        if token.len() > caps.max_token_bytes {
            return Err(invalid(format!(
                "the token is {} bytes, over the {}-byte cap ([http.jwt] max_token_bytes)",
                token.len(),
                caps.max_token_bytes
            )));
        }
        let header = jsonwebtoken::decode_header(token).map_err(|_| {
            invalid(format!(
                "the token is not a JWT signed with an accepted algorithm (accepted: {})",
                self.settings.algorithms.join(", ")
            ))
        })?;
        if let Some(crit) = critical_extensions(token) {
            return Err(invalid(format!(
                "the token's header has crit ({crit}): it names extensions this server must understand, and it \
                 understands none (RFC 7515 section 4.1.11)"
            )));
        }
        if !self.algorithms.contains(&header.alg) {
            return Err(invalid(format!(
                "the token is signed with {:?}; accepted: {}",
                header.alg,
                self.settings.algorithms.join(", ")
            )));
        }
        let key = self.key_for(header.kid.as_deref(), header.alg).await?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = caps.leeway.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[&self.settings.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|err| invalid(self.describe(&err)))?;
        let claim = &self.settings.principal_claim;
        let Some(principal) = data.claims.get(claim).and_then(Value::as_str) else {
            return Err(invalid(format!("the token has no string {claim} claim to name the principal")));
        };
        if let Some(fault) = principal_fault(principal, caps.max_principal_bytes, MAX_PRINCIPAL_BYTES_KEY) {
            return Err(invalid(format!("the token's {claim} claim {fault}")));
        }
        let attributes =
            claim_attributes(&data.claims, &self.settings.attribute_claims, principal, caps.max_claim_list_items);
        Ok((principal.to_owned(), attributes))
    }

    /// The principal an OpenID Connect ID token names, once verified as
    /// the approval page's sign-in needs: signed by a key of the issuer's
    /// key set with an accepted algorithm, `iss` the issuer of
    /// `[http.jwt]`, `aud` the page's `client_id`, not expired, its `nonce`
    /// the one the sign-in sent; the principal read from the same claim,
    /// with the same checks, as an access token's, and kept apart from the
    /// principals of `access`'s static tokens as an access token's is.
    ///
    /// # Errors
    ///
    /// Why the token is not accepted, in words for the person signing in.
    pub(crate) async fn verify_id_token(
        &self,
        token: &str,
        client_id: &str,
        nonce: &str,
        access: &Access,
    ) -> Result<String, String> {
        let caps = &self.settings.caps;
        if token.len() > caps.max_token_bytes {
            return Err(format!("the ID token is over {} bytes ([http.jwt] max_token_bytes)", caps.max_token_bytes));
        }
        let header = jsonwebtoken::decode_header(token).map_err(|_| "the ID token is not a JWT".to_owned())?;
        if !self.algorithms.contains(&header.alg) {
            return Err(format!("the ID token is signed with {:?}, not an accepted algorithm", header.alg));
        }
        let key = self.key_for(header.kid.as_deref(), header.alg).await.map_err(|rejection| match rejection {
            Rejection::Invalid(why) => why,
            _ => "the issuer's key set cannot be read now".to_owned(),
        })?;
        let mut validation = Validation::new(header.alg);
        validation.leeway = caps.leeway.as_secs();
        validation.set_issuer(&[&self.settings.issuer]);
        validation.set_audience(&[client_id]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|err| format!("the ID token is not accepted: {}", self.describe(&err)))?;
        if data.claims.get("nonce").and_then(Value::as_str) != Some(nonce) {
            return Err("the ID token's nonce is not the one this sign-in sent".into());
        }
        let claim = &self.settings.principal_claim;
        let Some(principal) = data.claims.get(claim).and_then(Value::as_str) else {
            return Err(format!("the ID token has no string {claim} claim to name you"));
        };
        if let Some(fault) = principal_fault(principal, caps.max_principal_bytes, MAX_PRINCIPAL_BYTES_KEY) {
            return Err(format!("the ID token's {claim} claim {fault}"));
        }
        if let Some(why) = self.static_principal(access, principal, "a person signed in with an ID token") {
            return Err(why);
        }
        Ok(principal.to_owned())
    }

    /// The issuer of `[http.jwt]`.
    pub(crate) fn issuer(&self) -> &str {
        &self.settings.issuer
    }

    /// The key for a token's `kid` and `alg`. An unknown `kid` asks for a
    /// fetch of the key set (or joins the one running) and waits for it at
    /// most [`UNKNOWN_KID_WAIT`].
    async fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, Rejection> {
        if let Some(key) = self.store.find(kid, alg) {
            return Ok(key);
        }
        if let Some(mut ended) = self.store.fetch() {
            let wait = UNKNOWN_KID_WAIT.min(self.settings.caps.jwks_fetch_timeout);
            let _ = tokio::time::timeout(wait, ended.wait_for(|ended| *ended)).await;
            if let Some(key) = self.store.find(kid, alg) {
                return Ok(key);
            }
        }
        if let Some(retry_after) = self.store.unavailable() {
            return Err(Rejection::Unavailable(retry_after));
        }
        let kid = kid.map_or_else(|| "no kid".to_owned(), |kid| format!("kid {}", kid.escape_debug()));
        Err(Rejection::Invalid(format!(
            "unknown key: no {alg:?} key in the issuer's key set matches the token's {kid}"
        )))
    }

    fn describe(&self, err: &jsonwebtoken::errors::Error) -> String {
        use jsonwebtoken::errors::ErrorKind;
        match err.kind() {
            ErrorKind::ExpiredSignature => {
                format!(
                    "the token has expired (exp is past, allowing {} s of clock skew, [http.jwt] leeway_secs)",
                    self.settings.caps.leeway.as_secs()
                )
            }
            ErrorKind::ImmatureSignature => "the token is not valid yet (nbf is in the future)".to_owned(),
            ErrorKind::InvalidAudience => format!("wrong audience: aud must include {}", self.settings.audience),
            ErrorKind::InvalidIssuer => format!("wrong issuer: iss must be {}", self.settings.issuer),
            ErrorKind::InvalidSignature => "bad signature: the token does not verify with the issuer's key".to_owned(),
            ErrorKind::MissingRequiredClaim(claim) => format!("the token has no {claim} claim"),
            ErrorKind::InvalidAlgorithm => "the token's alg does not fit its key".to_owned(),
            _ => "the token is malformed".to_owned(),
        }
    }

    /// Where the metadata document is: the resource URL with
    /// [`METADATA_PATH`] put between its host and its path (RFC 9728 §3.1).
    pub(super) fn metadata_url(&self) -> String {
        let resource = self.settings.resource.as_str();
        let (scheme, rest) = resource.split_once("://").unwrap_or(("https", resource));
        let (authority, path) = match rest.find('/') {
            Some(at) => rest.split_at(at),
            None => (rest, ""),
        };
        let path = path.trim_end_matches('/');
        format!("{scheme}://{authority}{METADATA_PATH}{path}")
    }

    /// The protected-resource metadata document (RFC 9728 §2).
    pub(super) fn metadata(&self) -> Value {
        json!({
            "resource": self.settings.resource,
            "authorization_servers": self.settings.authorization_servers,
            "bearer_methods_supported": ["header"],
        })
    }

    /// The `401` for `rejection`, with the challenge the MCP authorization
    /// spec asks for: the metadata URL and, when a token was sent, why it
    /// was refused; or, when the key set could not be read, a `503` with
    /// `Retry-After`.
    pub(super) fn unauthorized(&self, rejection: &Rejection) -> Response {
        let mut challenge = format!("Bearer resource_metadata=\"{}\"", header_safe(&self.metadata_url()));
        let body = match rejection {
            Rejection::Missing => "Unauthorized: send Authorization: Bearer <access token>\n".to_owned(),
            Rejection::Unavailable(retry_after) => {
                let mut response = (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                    "Service Unavailable: the token's key is not among the keys held and the issuer's key set \
                     ([http.jwt] jwks_url) cannot be read now; retry later with the same token\n",
                )
                    .into_response();
                response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(*retry_after));
                return response;
            }
            Rejection::Invalid(why) => {
                challenge.push_str(&format!(", error=\"invalid_token\", error_description=\"{}\"", header_safe(why)));
                format!("Unauthorized: {why}\n")
            }
        };
        let mut response =
            (StatusCode::UNAUTHORIZED, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response();
        let value = HeaderValue::from_str(&challenge).unwrap_or_else(|_| HeaderValue::from_static("Bearer"));
        response.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        response
    }
}

/// The attributes `mapping` (`(attribute, claim)`) takes from a verified
/// token's `claims`. A claim that is absent, or is not a string, boolean,
/// integer or flat list of at most `max_items` of those, within
/// [`MAX_CALLER_ATTRIBUTE_BYTES`] with the attribute's name (the cap the
/// tool's view applies, so policy and tool see the same), gives no attribute (a policy reads it
/// with `principal has NAME`); the token is still accepted.
fn claim_attributes(
    claims: &Map<String, Value>,
    mapping: &[(String, String)],
    principal: &str,
    max_items: usize,
) -> TokenAttributes {
    let scalar = |value: &Value| match value {
        Value::String(_) | Value::Bool(_) => true,
        Value::Number(n) => n.is_i64(),
        _ => false,
    };
    let mut attributes = Vec::new();
    for (attribute, claim) in mapping {
        let Some(value) = claims.get(claim) else { continue };
        let usable = match value {
            Value::Array(items) => items.len() <= max_items && items.iter().all(scalar),
            other => scalar(other),
        };
        if usable && attribute.len().saturating_add(value.to_string().len()) <= MAX_CALLER_ATTRIBUTE_BYTES {
            attributes.push((attribute.clone(), value.clone()));
        } else {
            tracing::debug!(
                principal,
                claim = claim.as_str(),
                max_items,
                "the token's claim is not a string, boolean, integer or list of those within \
                 {MAX_CALLER_ATTRIBUTE_BYTES} bytes and max_items items ([http.jwt] max_claim_list_items): no \
                 attribute"
            );
        }
    }
    attributes.into()
}

/// `text` with only the characters a quoted `error_description` may hold
/// (RFC 6750 §3: printable ASCII but `"` and `\`).
fn header_safe(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            '"' => '\'',
            '\\' => '/',
            c if (' '..='~').contains(&c) => c,
            _ => '?',
        })
        .collect()
}

/// The algorithm a configured name stands for.
fn algorithm(name: &str) -> Option<Algorithm> {
    match name {
        "RS256" => Some(Algorithm::RS256),
        "ES256" => Some(Algorithm::ES256),
        "EdDSA" => Some(Algorithm::EdDSA),
        _ => None,
    }
}

/// The `crit` member of a token's header, shown for the refusal, or
/// `None` when it has none. The header was decoded once already, so it is
/// base64url JSON within the token's size cap.
fn critical_extensions(token: &str) -> Option<String> {
    use base64::Engine as _;
    let encoded = token.split('.').next()?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(encoded.trim_end_matches('=')).ok()?;
    let header: Map<String, Value> = serde_json::from_slice(&bytes).ok()?;
    let crit = header.get("crit")?;
    Some(airlock_core::text::cap(&crit.to_string(), 64).into_owned())
}

impl KeyStore {
    /// The key held for `kid` and `alg`.
    fn find(&self, kid: Option<&str>, alg: Algorithm) -> Option<DecodingKey> {
        let keys = self.keys.lock().unwrap_or_else(|e| e.into_inner()).keys.clone();
        find(&keys, kid, alg).cloned()
    }

    /// Start a fetch of the key set, or join the one running: what sees it
    /// end. `None` when the key set is a file, or the last fetch started
    /// less than `jwks_min_refresh_seconds` ago.
    fn fetch(self: &Arc<Self>) -> Option<watch::Receiver<bool>> {
        let url = self.url.clone()?;
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(running) = &keys.fetching {
            return Some(running.clone());
        }
        if keys.tried.is_some_and(|at| at.elapsed() < self.min_refresh) {
            return None;
        }
        let (ended, running) = watch::channel(false);
        keys.tried = Some(Instant::now());
        keys.fetching = Some(running.clone());
        drop(keys);
        let store = self.clone();
        tokio::spawn(async move {
            let fetched = fetch_jwks(&url, &store.caps).await;
            let mut keys = store.keys.lock().unwrap_or_else(|e| e.into_inner());
            match fetched {
                Ok(fresh) => {
                    tracing::info!(url, keys = fresh.len(), "fetched the JWKS");
                    keys.keys = fresh.into();
                    keys.loaded = Some(Instant::now());
                    keys.failing = false;
                }
                Err(err) => {
                    tracing::warn!(url, "cannot fetch the JWKS ([http.jwt] jwks_url): {err}; keeping the keys held");
                    keys.failing = true;
                }
            }
            keys.fetching = None;
            drop(keys);
            let _ = ended.send(true);
        });
        Some(running)
    }

    /// When the key set could not be read (its last fetch failed, none has
    /// succeeded, or one is still running): in how many seconds a client
    /// should retry, at least 1.
    fn unavailable(&self) -> Option<u64> {
        self.url.as_ref()?;
        let keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if !(keys.failing || keys.loaded.is_none() || keys.fetching.is_some()) {
            return None;
        }
        let next = keys.tried.map_or(Duration::ZERO, |at| self.min_refresh.saturating_sub(at.elapsed()));
        Some(next.as_secs().saturating_add(u64::from(next.subsec_nanos() > 0)).max(1))
    }

    /// How long the background task sleeps before its next fetch.
    fn next_refresh(&self) -> Duration {
        let keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let since_tried = keys.tried.map_or(Duration::MAX, |at| at.elapsed());
        let allowed = self.min_refresh.saturating_sub(since_tried);
        let due = match keys.loaded {
            Some(at) if !keys.failing => self.refresh.saturating_sub(at.elapsed()),
            _ => self.min_refresh,
        };
        due.max(allowed).max(MIN_REFRESH_PAUSE)
    }
}

/// The background refresh of a key set: fetch at once, then whenever
/// [`KeyStore::next_refresh`] says, until the store is dropped.
async fn refresh(store: Weak<KeyStore>) {
    loop {
        let Some(running) = store.upgrade().map(|store| store.fetch()) else { return };
        if let Some(mut ended) = running {
            let _ = ended.wait_for(|ended| *ended).await;
        }
        let Some(pause) = store.upgrade().map(|store| store.next_refresh()) else { return };
        tokio::time::sleep(pause).await;
    }
}

/// Fetch and parse the key set at `url` within `jwks_fetch_timeout_secs`.
async fn fetch_jwks(url: &str, caps: &JwtCaps) -> Result<Vec<Key>, String> {
    let fetched = match tokio::time::timeout(caps.jwks_fetch_timeout, fetch(url, caps.max_jwks_bytes)).await {
        Ok(result) => result,
        Err(_) => Err(format!(
            "it took longer than {} s ([http.jwt] jwks_fetch_timeout_secs)",
            caps.jwks_fetch_timeout.as_secs()
        )),
    };
    fetched.and_then(|bytes| parse_jwks(&bytes, caps))
}

/// The key for `kid` and `alg`: the one with that `kid`, or, for a token
/// without one, the only key of that algorithm.
fn find<'a>(keys: &'a [Key], kid: Option<&str>, alg: Algorithm) -> Option<&'a DecodingKey> {
    let mut fitting = keys.iter().filter(|key| key.algorithm == alg);
    match kid {
        Some(kid) => fitting.find(|key| key.kid.as_deref() == Some(kid)).map(|key| &key.key),
        None => match (fitting.next(), fitting.next()) {
            (Some(only), None) => Some(&only.key),
            _ => None,
        },
    }
}

/// The usable signing keys of a JWKS document of at most
/// `caps.max_jwks_bytes` and `caps.max_jwks_keys`; keys of other types, for
/// encryption, or that do not parse are skipped.
fn parse_jwks(bytes: &[u8], caps: &JwtCaps) -> Result<Vec<Key>, String> {
    #[derive(serde::Deserialize)]
    struct Document {
        keys: Vec<Value>,
    }
    if bytes.len() > caps.max_jwks_bytes {
        return Err(format!(
            "the JWKS is {} bytes, over the {}-byte cap ([http.jwt] max_jwks_bytes)",
            bytes.len(),
            caps.max_jwks_bytes
        ));
    }
    let document: Document = serde_json::from_slice(bytes)
        .map_err(|err| format!("the JWKS is not a {{\"keys\": [...]}} document: {err}"))?;
    if document.keys.len() > caps.max_jwks_keys {
        return Err(format!(
            "the JWKS has {} keys; at most {} are accepted ([http.jwt] max_jwks_keys)",
            document.keys.len(),
            caps.max_jwks_keys
        ));
    }
    let mut keys = Vec::new();
    for value in document.keys {
        let Ok(jwk) = serde_json::from_value::<Jwk>(value) else { continue };
        if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
            continue;
        }
        let algorithm = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => Algorithm::RS256,
            AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => Algorithm::ES256,
            AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => Algorithm::EdDSA,
            _ => continue,
        };
        // A key that names its algorithm is used for that one only.
        if let Some(named) = &jwk.common.key_algorithm
            && format!("{named:?}") != format!("{algorithm:?}")
        {
            continue;
        }
        let Ok(key) = DecodingKey::from_jwk(&jwk) else { continue };
        keys.push(Key { kid: jwk.common.key_id.clone(), algorithm, key });
    }
    Ok(keys)
}

/// GET `url` through the host's outbound client (HTTPS, or plain HTTP to a
/// loopback address), the body capped at `max_bytes`.
async fn fetch(url: &str, max_bytes: usize) -> Result<Vec<u8>, String> {
    // The caller bounds the whole fetch with `jwks_fetch_timeout_secs`.
    let response = Outbound::get(url, max_bytes, Duration::MAX).send().await.map_err(|err| {
        if err.starts_with("cannot read the answer") {
            format!("cannot read the JWKS (at most {max_bytes} bytes, [http.jwt] max_jwks_bytes): {err}")
        } else {
            err
        }
    })?;
    if response.status != http::StatusCode::OK {
        return Err(format!("the server answered {}", response.status));
    }
    Ok(response.body)
}

#[cfg(test)]
mod tests;
