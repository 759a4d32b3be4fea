//! `[http]`: the settings of the MCP streamable-HTTP transport, bearer
//! tokens, JWT access tokens (`[http.jwt]`) and extra allowed origins.
//!
//! A token is a secret: it comes from the config file or, better, from an
//! environment variable (`token_env`) or a file (`token_file`, which
//! `serve --watch` watches) named there, and is refused when
//! shorter than [`MIN_TOKEN_LEN`]. The transport (`mcp/http`) compares
//! presented tokens against these; nothing else reads them, and
//! `airlock config` shows them redacted.

use serde::Deserialize;
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
    algorithms: Option<Vec<String>>,
    authorization_servers: Option<Vec<String>>,
    resource: Option<String>,
    jwks_refresh_seconds: Option<u64>,
    jwks_min_refresh_seconds: Option<u64>,
    #[serde(default)]
    attribute_claims: std::collections::BTreeMap<String, String>,
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
        Ok(HttpSettings { tokens, allowed_origins: raw.allowed_origins, jwt })
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
                if !(url.starts_with("https://") || url.starts_with("http://")) {
                    return Err(format!("{ctx} jwks_url = {url:?}: use an https:// URL"));
                }
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
            algorithms,
            resource,
            jwks_refresh: seconds(raw.jwks_refresh_seconds, DEFAULT_JWKS_REFRESH, "jwks_refresh_seconds")?,
            attribute_claims: raw.attribute_claims.into_iter().collect(),
            jwks_min_refresh: seconds(
                raw.jwks_min_refresh_seconds,
                DEFAULT_JWKS_MIN_REFRESH,
                "jwks_min_refresh_seconds",
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testing::{check_err, parse};

    #[test]
    fn config_errors_name_the_token_and_what_is_accepted() {
        check_err("[[http.tokens]]\ntoken = \"short\"\nprincipal = \"a\"", &["[[http.tokens]] #1", "at least 16"]);
        check_err("[[http.tokens]]\nprincipal = \"a\"", &["exactly one of"]);
        check_err(
            "[[http.tokens]]\ntoken_file = \"/no/such/token\"\nprincipal = \"a\"",
            &["token_file", "/no/such/token"],
        );
        check_err(
            "[[http.tokens]]\ntoken_env = \"AIRLOCK_SURELY_UNSET_VAR\"\nprincipal = \"a\"",
            &["AIRLOCK_SURELY_UNSET_VAR", "not set"],
        );
        check_err("[http]\nbogus = 1", &["bogus", "allowed_origins"]);
        let jwt = "[http.jwt]\nissuer = \"https://idp\"\naudience = \"https://a/mcp\"\n";
        check_err(jwt, &["[http.jwt]", "exactly one of `jwks_file` or `jwks_url`"]);
        check_err(&format!("{jwt}jwks_file = \"k.json\"\nalgorithms = [\"HS256\"]"), &["\"HS256\"", "RS256"]);
        check_err(&format!("{jwt}jwks_url = \"ftp://x\""), &["https://"]);
        check_err(&format!("{jwt}jwks_file = \"k.json\"\njwks_min_refresh_seconds = 0"), &["at least 1"]);
        check_err(
            &format!("{jwt}jwks_file = \"k.json\"\nattribute_claims = {{ \"has\" = \"x\" }}"),
            &["\"has\"", "letters"],
        );
        check_err(
            &format!("{jwt}jwks_file = \"k.json\"\nattribute_claims = {{ \"1a\" = \"x\" }}"),
            &["not an attribute name"],
        );
        check_err(
            &format!("{jwt}jwks_file = \"k.json\"\nattribute_claims = {{ a = \"\" }}"),
            &["attribute_claims.a", "1 to 64"],
        );
        let many: Vec<String> = (0..=MAX_ATTRIBUTE_CLAIMS).map(|i| format!("a{i} = \"c{i}\"")).collect();
        check_err(
            &format!("{jwt}jwks_file = \"k.json\"\nattribute_claims = {{ {} }}", many.join(", ")),
            &["names 33 claims", "at most 32"],
        );
    }

    #[test]
    fn jwt_defaults() {
        let config = parse(
            "[http.jwt]\nissuer = \"https://idp\"\naudience = \"https://a/mcp\"\njwks_url = \"https://idp/jwks\"",
        )
        .unwrap();
        let jwt = config.http.jwt.expect("jwt");
        assert_eq!(jwt.principal_claim, "sub");
        assert_eq!(jwt.authorization_servers, vec!["https://idp".to_owned()]);
        assert_eq!(jwt.resource, "https://a/mcp");
        assert_eq!(jwt.algorithms, JWT_ALGORITHMS.map(str::to_owned).to_vec());
        assert_eq!(jwt.jwks, JwksSource::Url("https://idp/jwks".into()));
        assert!(jwt.attribute_claims.is_empty());
        let mapped = parse(
            "[http.jwt]\nissuer = \"https://idp\"\naudience = \"https://a/mcp\"\njwks_url = \"https://idp/jwks\"\n\
             attribute_claims = { tenant = \"org_id\", accounts = \"accounts\" }",
        )
        .unwrap();
        let claims = mapped.http.jwt.expect("jwt").attribute_claims;
        assert_eq!(
            claims,
            [("accounts".to_owned(), "accounts".to_owned()), ("tenant".to_owned(), "org_id".to_owned())]
        );
    }

    #[test]
    fn tokens_map_to_principals() {
        let config = parse(
            "[http]\nallowed_origins = [\"https://app.example.com\"]\n[[http.tokens]]\ntoken = \"0123456789abcdef\"\nprincipal = \"alice\"",
        )
        .unwrap();
        let expected = BearerToken { token: "0123456789abcdef".into(), principal: "alice".into(), file: None };
        assert_eq!(config.http.tokens, vec![expected]);
        assert_eq!(config.http.allowed_origins, vec!["https://app.example.com".to_owned()]);
    }
}
