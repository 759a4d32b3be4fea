//! What is wrong with an `oci://` reference or a digest the host was given.

use super::REFERENCE_FORM;

/// Text that is not an `oci://` reference: the text (its first 80
/// characters) and what part is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{text:?} is not an OCI reference: {problem}; {REFERENCE_FORM}")]
pub struct InvalidReference {
    /// The text given, cut to its first 80 characters.
    pub text: String,
    /// What part is wrong.
    pub problem: ReferenceProblem,
}

/// What part of a reference is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReferenceProblem {
    /// Longer than [`crate::distribution::MAX_REFERENCE_LEN`].
    #[error("{len} bytes long, and at most {max} are accepted", max = crate::distribution::MAX_REFERENCE_LEN)]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// It does not start with `oci://` (or has another scheme).
    #[error("it does not start with oci://")]
    NoScheme,
    /// The digest after `@` is not a sha256 digest.
    #[error(transparent)]
    Digest(InvalidDigest),
    /// Nothing after the registry.
    #[error("no repository after the registry")]
    NoRepository,
    /// The registry is not a host name or `host:port`.
    #[error("registry {0:?} is not a host name or host:port")]
    Registry(String),
    /// The registry's port is not a number up to 65535.
    #[error("registry {0:?} has a port that is not a number up to 65535")]
    Port(String),
    /// The repository is not lowercase path components.
    #[error("repository {0:?} must be lowercase path components [a-z0-9] joined by . _ - and separated by /")]
    Repository(String),
    /// The tag is not 1 to 128 of the accepted characters.
    #[error(
        "tag {0:?} must be 1 to {max} of A-Z a-z 0-9 . _ - (not starting with . or -)",
        max = crate::distribution::reference::MAX_TAG_LEN
    )]
    Tag(String),
    /// It names neither a tag nor a digest.
    #[error("it names neither a tag nor a digest")]
    Unnamed,
}

/// A digest that is not `sha256:` and 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidDigest {
    /// Another algorithm, or no `sha256:` prefix.
    #[error("digest {0:?} is not sha256:<64 hex digits> (only sha256 is accepted)")]
    NotSha256(String),
    /// Not 64 lowercase hex digits after `sha256:`.
    #[error("digest {0:?} is not sha256:<64 lowercase hex digits>")]
    NotHex(String),
}
