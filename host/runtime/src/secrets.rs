//! Secrets withheld from what a tool hands back: its result, its error,
//! its captured output, its content blocks' text and the log lines a
//! client receives (`client_log`), all through one function,
//! [`Scrubber::scrub`].
//!
//! Trusts nothing the guest writes. Three kinds of secret are replaced by
//! [`WITHHELD`] wherever they appear:
//! - the values of the tool's secret headers ([`crate::network::scrub`]),
//!   which a server may echo back;
//! - text shaped like a well-known credential ([`WELL_KNOWN`]: private key
//!   blocks, cloud, GitHub, Slack, Stripe, OpenAI and Anthropic keys,
//!   JSON Web Tokens, `Bearer` tokens), whatever the tool was granted:
//!   an environment variable or a file can hold one too;
//! - what matches the operator's own `secret_patterns` of `[tools.NAME]`
//!   ([`SecretPatterns`]), regular expressions in the `regex` crate's
//!   syntax (linear time whatever the text), checked when the
//!   configuration is loaded: at most [`MAX_SECRET_PATTERNS`] of at most
//!   [`MAX_SECRET_PATTERN_BYTES`] each, compiled within
//!   [`MAX_COMPILED_PATTERN_BYTES`].

use crate::network::NetworkGrant;
use regex::{Regex, RegexBuilder};
use std::sync::{Arc, LazyLock};

/// What replaces a secret.
pub const WITHHELD: &str = "[secret withheld]";

/// Most patterns a tool's `secret_patterns` may list.
pub const MAX_SECRET_PATTERNS: usize = 64;

/// Longest pattern of `secret_patterns`, in bytes.
pub const MAX_SECRET_PATTERN_BYTES: usize = 1024;

/// Most memory a tool's patterns may take once compiled, in bytes.
pub const MAX_COMPILED_PATTERN_BYTES: usize = 4 << 20;

/// Text shaped like a well-known credential: specific enough that text
/// which is not one rarely matches. Word boundaries are ASCII ones
/// (`(?-u:\b)`), which keep the search in the regex crate's fast engines
/// whatever the text holds.
pub const WELL_KNOWN: [&str; 9] = [
    // A PEM private key, whole (a log line's breaks are spaces by now).
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----(?s:.*?)-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
    // AWS access key ids.
    r"(?-u:\b)(?:AKIA|ASIA)[0-9A-Z]{16}(?-u:\b)",
    // GitHub tokens.
    r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    // Slack tokens.
    r"(?-u:\b)xox[abposr]-[A-Za-z0-9-]{10,}",
    // Stripe keys.
    r"(?-u:\b)[rs]k_(?:live|test)_[A-Za-z0-9]{16,}",
    // OpenAI and Anthropic keys.
    r"(?-u:\b)sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}",
    // Google API keys.
    r"(?-u:\b)AIza[0-9A-Za-z_-]{35}",
    // JSON Web Tokens (a header and claims that are JSON objects).
    r"(?-u:\b)eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
    // A bearer token after its scheme, as in an Authorization header.
    r"(?i:(?-u:\b)bearer)\s+[A-Za-z0-9._~+/-]{16,}=*",
];

/// [`WELL_KNOWN`] as one expression; `None` only if it did not compile,
/// which a unit test rules out.
static WELL_KNOWN_REGEX: LazyLock<Option<Regex>> = LazyLock::new(|| one_of(WELL_KNOWN.iter().copied()).ok());

/// A tool's `secret_patterns`, compiled.
#[derive(Debug, Clone)]
pub struct SecretPatterns {
    /// As the operator wrote them: what settings compare on reload.
    written: Vec<String>,
    regex: Regex,
}

impl PartialEq for SecretPatterns {
    fn eq(&self, other: &Self) -> bool {
        self.written == other.written
    }
}

impl Eq for SecretPatterns {}

impl SecretPatterns {
    /// Compile the operator's `patterns`.
    ///
    /// # Errors
    ///
    /// Too many patterns, one too long, or one that is not a regular
    /// expression (or too large once compiled), named by its position.
    pub fn new(patterns: Vec<String>) -> Result<Self, String> {
        if patterns.len() > MAX_SECRET_PATTERNS {
            return Err(format!(
                "secret_patterns lists {} patterns; at most {MAX_SECRET_PATTERNS} are accepted (join alternatives \
                 with `|`)",
                patterns.len()
            ));
        }
        for (index, pattern) in patterns.iter().enumerate() {
            let number = index + 1;
            if pattern.len() > MAX_SECRET_PATTERN_BYTES {
                return Err(format!(
                    "secret_patterns: pattern {number} is {} bytes; at most {MAX_SECRET_PATTERN_BYTES} are accepted",
                    pattern.len()
                ));
            }
            let regex = compile(pattern).map_err(|err| {
                format!(
                    "secret_patterns: pattern {number} ({pattern:?}) is not accepted: {err}; patterns are regular \
                     expressions in the syntax of Rust's regex crate, e.g. \"acme_[a-z0-9]{{32}}\""
                )
            })?;
            if regex.is_match("") {
                return Err(format!(
                    "secret_patterns: pattern {number} ({pattern:?}) matches empty text; give a pattern that matches \
                     only the secret, e.g. \"acme_[a-z0-9]{{32}}\""
                ));
            }
        }
        let regex = one_of(patterns.iter().map(String::as_str)).map_err(|err| {
            format!("secret_patterns: the patterns together are not accepted: {err}; list fewer or smaller patterns")
        })?;
        Ok(Self { written: patterns, regex })
    }

    /// The patterns as the operator wrote them.
    pub fn written(&self) -> &[String] {
        &self.written
    }
}

/// What a call's texts lose before they leave the host: its tool's secret
/// header values, well-known credentials and the operator's patterns.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    network: Option<Arc<NetworkGrant>>,
    own: Option<Arc<SecretPatterns>>,
}

impl Scrubber {
    /// The scrubber of a tool with `network` (its secret headers) and the
    /// operator's `own` patterns.
    pub fn new(network: Option<Arc<NetworkGrant>>, own: Option<Arc<SecretPatterns>>) -> Self {
        Self { network, own }
    }

    /// Replace every secret in `text` with [`WITHHELD`].
    pub fn scrub(&self, text: &mut String) {
        if let Some(network) = &self.network {
            crate::network::scrub(network, text);
        }
        let own = self.own.as_deref().map(|own| &own.regex);
        for regex in WELL_KNOWN_REGEX.iter().chain(own) {
            if regex.is_match(text) {
                *text = regex.replace_all(text, WITHHELD).into_owned();
            }
        }
    }
}

/// One pattern, compiled within the cap.
fn compile(pattern: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern).size_limit(MAX_COMPILED_PATTERN_BYTES).build()
}

/// `patterns` as one alternation, compiled within the cap.
fn one_of<'a>(patterns: impl Iterator<Item = &'a str>) -> Result<Regex, regex::Error> {
    let joined: Vec<String> = patterns.map(|pattern| format!("(?:{pattern})")).collect();
    compile(&joined.join("|"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrubbed(scrubber: &Scrubber, text: &str) -> String {
        let mut text = text.to_owned();
        scrubber.scrub(&mut text);
        text
    }

    #[test]
    fn well_known_credentials_are_withheld() {
        assert!(WELL_KNOWN_REGEX.is_some(), "the well-known patterns compile");
        let scrubber = Scrubber::default();
        for (text, expected) in [
            ("key AKIAIOSFODNN7EXAMPLE here", "key [secret withheld] here"),
            ("token=ghp_0123456789abcdefghijABCDEFGHIJ012345", "token=[secret withheld]"),
            ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "[secret withheld]"),
            ("slack xoxb-1234567890-abcdefghij", "slack [secret withheld]"),
            ("sk_live_0123456789abcdefXYZ", "[secret withheld]"),
            ("OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz012", "OPENAI_API_KEY=[secret withheld]"),
            ("sk-ant-api03-abcdefghijklmnopqrstuv", "[secret withheld]"),
            ("AIzaSyA-0123456789abcdefghijklmnopqrstu", "[secret withheld]"),
            ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJl", "jwt [secret withheld]"),
            ("Authorization: Bearer abcdefghijklmnop0123", "Authorization: [secret withheld]"),
            (
                "-----BEGIN RSA PRIVATE KEY----- MIIEow AAAA -----END RSA PRIVATE KEY----- after",
                "[secret withheld] after",
            ),
        ] {
            assert_eq!(scrubbed(&scrubber, text), expected, "{text}");
        }
        for ordinary in [
            "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "ask-me-anything-about-this-please",
            "Bearer short",
            "Basic AuthenticationMiddleware",
            "-----BEGIN PUBLIC KEY----- MIIB -----END PUBLIC KEY-----",
        ] {
            assert_eq!(scrubbed(&scrubber, ordinary), ordinary, "not a secret");
        }
    }

    #[test]
    fn the_operators_patterns_are_withheld_and_checked_at_load() {
        let own = SecretPatterns::new(vec!["acme_[a-z0-9]{8}".into(), r"internal-\d{4}".into()]).unwrap();
        let scrubber = Scrubber::new(None, Some(Arc::new(own)));
        assert_eq!(
            scrubbed(&scrubber, "a acme_abcd1234 and internal-2024, not acme_XY"),
            "a [secret withheld] and [secret withheld], not acme_XY"
        );

        let err =
            |patterns: Vec<&str>| SecretPatterns::new(patterns.into_iter().map(str::to_owned).collect()).unwrap_err();
        let bad = err(vec!["ok_[a-z]+", "(unclosed"]);
        assert!(bad.contains("pattern 2 (\"(unclosed\") is not accepted"), "{bad}");
        assert!(bad.contains("syntax of Rust's regex crate"), "{bad}");
        let empty = err(vec!["x*"]);
        assert!(empty.contains("pattern 1 (\"x*\") matches empty text"), "{empty}");
        assert!(err(vec![""]).contains("matches empty text"));
        let long = "a".repeat(MAX_SECRET_PATTERN_BYTES + 1);
        assert!(err(vec![&long]).contains("at most 1024 are accepted"));
        let many = vec!["a"; MAX_SECRET_PATTERNS + 1];
        assert!(err(many).contains("at most 64 are accepted"));
        let huge = err(vec![r"(?:\w{1000}){100}"]);
        assert!(huge.contains("is not accepted"), "{huge}");
    }
}
