//! `[http]`: the settings of the MCP streamable-HTTP transport, bearer
//! tokens and extra allowed origins.
//!
//! A token is a secret: it comes from the config file or, better, from an
//! environment variable (`token_env`) or a file (`token_file`, which
//! `serve --watch` watches) named there, and is refused when
//! shorter than [`MIN_TOKEN_LEN`]. The transport (`mcp/http`) compares
//! presented tokens against these; nothing else reads them, and
//! `airlock config` shows them redacted.

use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Fewest characters a bearer token may have.
pub const MIN_TOKEN_LEN: usize = 16;

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
}

/// `[http]` as written.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct RawHttp {
    #[serde(default)]
    tokens: Vec<RawToken>,
    #[serde(default)]
    allowed_origins: Vec<String>,
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
        Ok(HttpSettings { tokens, allowed_origins: raw.allowed_origins })
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
