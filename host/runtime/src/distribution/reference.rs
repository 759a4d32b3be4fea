//! `oci://REGISTRY/REPOSITORY[:TAG][@sha256:HEX]`: the reference an operator
//! writes in `airlock.toml` or on the command line, parsed and checked.
//!
//! The text comes from the operator (trusted to mean what it says), but it is
//! still checked against the grammar of the OCI distribution specification so
//! that it can only ever become a path on the registry and a key in the lock
//! file, never anything else.

use super::error::{DistributionError, InvalidDigest, InvalidReference, ReferenceProblem};
use std::fmt;

/// Longest reference accepted, in bytes.
pub const MAX_REFERENCE_LEN: usize = 512;
/// Longest tag the distribution specification allows.
pub(super) const MAX_TAG_LEN: usize = 128;
/// The scheme every reference starts with.
pub const SCHEME: &str = "oci://";

/// A parsed `oci://` reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OciRef {
    /// `host` or `host:port`.
    pub registry: String,
    /// The repository path, e.g. `tools/echo`.
    pub repository: String,
    /// The tag, if the reference names one.
    pub tag: Option<String>,
    /// The manifest digest (`sha256:` and 64 lowercase hex digits), if the
    /// reference pins one.
    pub digest: Option<String>,
}

impl OciRef {
    /// Parse `oci://REGISTRY/REPOSITORY[:TAG][@sha256:HEX]` (the `oci://`
    /// may be left out on the command line, `with_scheme = false`).
    ///
    /// # Errors
    ///
    /// [`DistributionError::InvalidReference`]: what part is wrong and the
    /// form that is accepted.
    pub fn parse(text: &str, with_scheme: bool) -> Result<OciRef, DistributionError> {
        Ok(OciRef::read(text, with_scheme)?)
    }

    /// [`OciRef::parse`] with the refusal as it is (the lock file nests it
    /// in its own).
    pub(super) fn read(text: &str, with_scheme: bool) -> Result<OciRef, InvalidReference> {
        let bad = |problem: ReferenceProblem| InvalidReference { text: text.chars().take(80).collect(), problem };
        if text.len() > MAX_REFERENCE_LEN {
            return Err(bad(ReferenceProblem::TooLong { len: text.len() }));
        }
        let rest = match text.strip_prefix(SCHEME) {
            Some(rest) => rest,
            None if !with_scheme && !text.contains("://") => text,
            None => return Err(bad(ReferenceProblem::NoScheme)),
        };
        let (rest, digest) = match rest.split_once('@') {
            Some((rest, digest)) => {
                check_digest(digest).map_err(|d| bad(ReferenceProblem::Digest(d)))?;
                (rest, Some(digest.to_owned()))
            }
            None => (rest, None),
        };
        let (registry, path) = rest.split_once('/').ok_or_else(|| bad(ReferenceProblem::NoRepository))?;
        check_registry(registry).map_err(bad)?;
        // A `:` after the last `/` starts the tag.
        let (repository, tag) = match path.rsplit_once(':') {
            Some((repository, tag)) if !tag.contains('/') => (repository, Some(tag.to_owned())),
            _ => (path, None),
        };
        check_repository(repository).map_err(bad)?;
        if let Some(tag) = &tag {
            check_tag(tag).map_err(bad)?;
        }
        if tag.is_none() && digest.is_none() {
            return Err(bad(ReferenceProblem::Unnamed));
        }
        Ok(OciRef { registry: registry.to_owned(), repository: repository.to_owned(), tag, digest })
    }

    /// The reference without its digest (`oci://REGISTRY/REPOSITORY:TAG`):
    /// the key of a tag's pin in the lock file.
    pub fn tag_key(&self) -> Option<String> {
        self.tag.as_ref().map(|tag| format!("{SCHEME}{}/{}:{tag}", self.registry, self.repository))
    }

    /// The reference pinned to `digest`: `oci://REGISTRY/REPOSITORY@DIGEST`.
    pub fn pinned(&self, digest: &str) -> String {
        format!("{SCHEME}{}/{}@{digest}", self.registry, self.repository)
    }

    /// The repository as `REGISTRY/REPOSITORY`, as a cosign signature's
    /// `docker-reference` names it.
    pub fn docker_reference(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// The host part of the registry, without a port.
    pub fn host(&self) -> &str {
        host_of(&self.registry)
    }
}

impl fmt::Display for OciRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

/// The host part of `host[:port]` (an IPv6 literal keeps its brackets).
pub(crate) fn host_of(registry: &str) -> &str {
    if registry.starts_with('[') {
        return registry.split_once(']').map_or(registry, |(h, _)| h.get(1..).unwrap_or(h));
    }
    registry.split_once(':').map_or(registry, |(h, _)| h)
}

/// `sha256:` and 64 lowercase hex digits; returns the hex.
///
/// # Errors
///
/// What is wrong with it.
pub fn check_digest(digest: &str) -> Result<&str, InvalidDigest> {
    let Some(hex) = digest.strip_prefix("sha256:") else {
        return Err(InvalidDigest::NotSha256(digest.to_owned()));
    };
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return Err(InvalidDigest::NotHex(digest.to_owned()));
    }
    Ok(hex)
}

fn check_registry(registry: &str) -> Result<(), ReferenceProblem> {
    let ok = !registry.is_empty()
        && registry.bytes().all(|b| b.is_ascii_alphanumeric() || b".-:[]".contains(&b))
        && !registry.starts_with(['.', '-', ':']);
    if !ok {
        return Err(ReferenceProblem::Registry(registry.to_owned()));
    }
    if let Some((_, port)) = registry.rsplit_once(':')
        && !registry.ends_with(']')
        && port.parse::<u16>().is_err()
    {
        return Err(ReferenceProblem::Port(registry.to_owned()));
    }
    Ok(())
}

/// Path components: `[a-z0-9]+([._-][a-z0-9]+)*`, separated by `/`.
fn check_repository(repository: &str) -> Result<(), ReferenceProblem> {
    let component_ok = |c: &str| {
        let bytes = c.as_bytes();
        !c.is_empty()
            && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
            && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
            && c.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
    };
    if repository.is_empty() || !repository.split('/').all(component_ok) {
        return Err(ReferenceProblem::Repository(repository.to_owned()));
    }
    Ok(())
}

/// `[A-Za-z0-9_][A-Za-z0-9._-]{0,127}`.
fn check_tag(tag: &str) -> Result<(), ReferenceProblem> {
    let ok = !tag.is_empty()
        && tag.len() <= MAX_TAG_LEN
        && !tag.starts_with(['.', '-'])
        && tag.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if !ok {
        return Err(ReferenceProblem::Tag(tag.to_owned()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn references_parse_into_their_parts() {
        let r = OciRef::parse("oci://127.0.0.1:5000/tools/echo:v1", true).unwrap();
        assert_eq!(
            (r.registry.as_str(), r.repository.as_str(), r.tag.as_deref()),
            ("127.0.0.1:5000", "tools/echo", Some("v1"))
        );
        assert_eq!(r.tag_key().as_deref(), Some("oci://127.0.0.1:5000/tools/echo:v1"));
        assert_eq!(r.host(), "127.0.0.1");
        let r = OciRef::parse(&format!("oci://ghcr.io/acme/echo@{D}"), true).unwrap();
        assert_eq!((r.tag, r.digest.as_deref()), (None, Some(D)));
        let r = OciRef::parse(&format!("localhost:5000/a/b:1.0@{D}"), false).unwrap();
        assert_eq!(r.to_string(), format!("oci://localhost:5000/a/b:1.0@{D}"));
        assert_eq!(r.pinned(D), format!("oci://localhost:5000/a/b@{D}"));
    }

    #[test]
    fn bad_references_say_what_is_wrong_and_what_is_accepted() {
        for (text, needle) in [
            ("https://ghcr.io/a:1", "oci://"),
            ("oci://ghcr.io/a", "neither a tag nor a digest"),
            ("oci://ghcr.io", "no repository"),
            ("oci://ghcr.io/A:1", "lowercase"),
            ("oci://ghcr.io/a:-x", "tag"),
            ("oci://ghcr.io/a@sha256:12", "64"),
            ("oci://ghcr.io/a@md5:12", "only sha256"),
            ("oci://gh cr.io/a:1", "host name"),
            ("oci://ghcr.io:99999/a:1", "port"),
        ] {
            let err = OciRef::parse(text, true).unwrap_err().to_string();
            assert!(err.contains(needle) && err.contains("expected oci://"), "{text}: {err}");
        }
        assert!(
            OciRef::parse(&format!("oci://r/{}:1", "a".repeat(600)), true).unwrap_err().to_string().contains("512")
        );
    }

    #[test]
    fn references_and_tags_are_accepted_exactly_up_to_their_caps() {
        // `oci://r/` and `:1` around a repository that fills the rest.
        let of_len = |len: usize| format!("oci://r/{}:1", "a".repeat(len - "oci://r/:1".len()));
        assert_eq!(OciRef::parse(&of_len(MAX_REFERENCE_LEN), true).unwrap().tag.as_deref(), Some("1"));
        let err = OciRef::parse(&of_len(MAX_REFERENCE_LEN + 1), true).unwrap_err().to_string();
        assert!(err.contains("513 bytes long, and at most 512 are accepted"), "{err}");
        let tag = "t".repeat(MAX_TAG_LEN);
        assert_eq!(OciRef::parse(&format!("oci://r/a:{tag}"), true).unwrap().tag, Some(tag.clone()));
        let err = OciRef::parse(&format!("oci://r/a:{tag}t"), true).unwrap_err().to_string();
        assert!(err.contains("must be 1 to 128"), "{err}");
    }
}
