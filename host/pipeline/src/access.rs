//! [`Access`]: who may use the MCP HTTP transport, built once per host
//! state from `[http]`: the bearer tokens (kept as SHA-256 digests, each
//! mapped to its principal) and the extra `Origin` values accepted.
//!
//! Trusts the operator's `[http]` settings. Does not trust a presented
//! token: it is compared by digest, in constant time, against every
//! configured token without stopping at a match. A reload builds a new
//! `Access` with the new state, so a token added to the config is accepted
//! and a removed one refused from the next request on.
//!
//! The principals the tokens name are a namespace of their own: the
//! transport refuses a JWT access token whose principal claim names one of
//! them unless the operator shares the two (`[http.jwt]
//! shared_principals`), which [`Access::names_principal`] answers.

use crate::config::{BearerToken, HttpSettings};
use sha2::{Digest, Sha256};

/// A configured token, kept as its digest.
struct Token {
    digest: [u8; 32],
    principal: String,
}

/// The bearer tokens and allowed origins of one host state.
#[derive(Default)]
pub struct Access {
    tokens: Vec<Token>,
    allowed_origins: Vec<String>,
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The digests stay out of logs too.
        f.debug_struct("Access")
            .field("tokens", &self.tokens.len())
            .field("allowed_origins", &self.allowed_origins)
            .finish()
    }
}

impl Access {
    /// The access rules of `[http]`.
    pub fn new(settings: &HttpSettings) -> Self {
        Self {
            tokens: settings
                .tokens
                .iter()
                .map(|BearerToken { token, principal, .. }| Token {
                    digest: digest(token),
                    principal: principal.clone(),
                })
                .collect(),
            allowed_origins: settings.allowed_origins.iter().map(|o| normalize_origin(o)).collect(),
        }
    }

    /// Whether any bearer token is configured (without one, requests need
    /// none and act as the server's default principal).
    pub fn has_tokens(&self) -> bool {
        !self.tokens.is_empty()
    }

    /// The principal of a presented bearer token, or `None` for a token
    /// that is not configured.
    pub fn principal_of(&self, presented: &str) -> Option<String> {
        let presented = digest(presented);
        // Compare against every token, without stopping at the first match.
        let mut principal = None;
        for configured in &self.tokens {
            if digests_equal(&configured.digest, &presented) {
                principal.get_or_insert_with(|| configured.principal.clone());
            }
        }
        principal
    }

    /// Whether a configured token acts as `principal`: a JWT naming it
    /// would otherwise act as that token's holder.
    pub fn names_principal(&self, principal: &str) -> bool {
        self.tokens.iter().any(|token| token.principal == principal)
    }

    /// Whether `origin` (normalized with [`normalize_origin`]) is listed in
    /// `allowed_origins`.
    pub fn origin_listed(&self, origin: &str) -> bool {
        self.allowed_origins.iter().any(|listed| listed == origin)
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Constant-time equality of two digests (no early exit on a difference).
fn digests_equal(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// `scheme://host[:port]`, lower-cased, without a trailing slash.
pub fn normalize_origin(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn access(tokens: &[(&str, &str)]) -> Access {
        let tokens = tokens
            .iter()
            .map(|(token, principal)| BearerToken {
                token: (*token).into(),
                principal: (*principal).into(),
                file: None,
            })
            .collect();
        Access::new(&HttpSettings {
            tokens,
            allowed_origins: vec!["https://App.example.com/".into()],
            ..HttpSettings::default()
        })
    }

    #[test]
    fn tokens_map_to_their_principals() {
        let access = access(&[("0123456789abcdef-alice", "alice"), ("0123456789abcdef-bob", "bob")]);
        assert!(access.has_tokens());
        assert_eq!(access.principal_of("0123456789abcdef-alice").as_deref(), Some("alice"));
        assert_eq!(access.principal_of("0123456789abcdef-bob").as_deref(), Some("bob"));
        assert_eq!(access.principal_of("0123456789abcdef-carol"), None);
        assert!(!Access::default().has_tokens());
        assert!(access.names_principal("alice") && access.names_principal("bob"));
        assert!(!access.names_principal("carol") && !access.names_principal("Alice"));
        assert!(!Access::default().names_principal("alice"));
    }

    #[test]
    fn listed_origins_are_normalized() {
        let access = access(&[]);
        assert!(access.origin_listed(&normalize_origin("https://app.example.com")));
        assert!(!access.origin_listed(&normalize_origin("https://evil.example.com")));
    }

    #[test]
    fn digest_comparison() {
        assert!(digests_equal(&digest("a"), &digest("a")));
        assert!(!digests_equal(&digest("a"), &digest("b")));
    }
}
