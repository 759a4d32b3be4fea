//! `airlock.lock`: the digest each tag in the config resolved to when it was
//! first pulled. A tag is resolved once (`airlock pull`) and then only the
//! pinned digest is loaded; a tag that later names another digest is
//! refused by `airlock pull` until the operator accepts it with
//! `airlock pull --update`.
//!
//! The file is the operator's (written by `airlock pull`, reviewed like any
//! other config); it is still read under a size cap (`[distribution]
//! max_lock_bytes`) and every entry is checked.

use super::error::{Capped, DistributionError, LockProblem};
use super::reference::{OciRef, check_digest};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The lock file format this host writes and reads.
pub(super) const LOCK_VERSION: u32 = 1;

/// Tag → digest pins.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Lock {
    /// `oci://REGISTRY/REPOSITORY:TAG` → `sha256:HEX`.
    pub pins: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLock {
    version: u32,
    #[serde(default)]
    pins: BTreeMap<String, String>,
}

impl Lock {
    /// Read the lock file at `path`, at most `max` bytes; a missing file
    /// pins nothing.
    ///
    /// # Errors
    ///
    /// It cannot be read, is larger than `max` (naming the key that raises
    /// it), or has a bad entry (named).
    pub fn read(path: &Path, max: u64) -> Result<Lock, DistributionError> {
        let text = super::store::read_capped_text(path, max)
            .map_err(|failure| failure.into_error(path.to_owned(), |path, size| too_large(&path, size, max, false)))?;
        let Some(text) = text else { return Ok(Lock::default()) };
        let bad = |problem| DistributionError::LockFile { path: path.to_owned(), problem };
        let raw: RawLock =
            toml::from_str(&text).map_err(|err| bad(LockProblem::Syntax(err.to_string().trim_end().to_owned())))?;
        if raw.version != LOCK_VERSION {
            return Err(bad(LockProblem::Version(raw.version)));
        }
        for (reference, digest) in &raw.pins {
            let parsed = OciRef::read(reference, true).map_err(|r| bad(LockProblem::Reference(r)))?;
            if parsed.tag_key().as_deref() != Some(reference.as_str()) {
                return Err(bad(LockProblem::NotATag(reference.clone())));
            }
            check_digest(digest).map_err(|digest| bad(LockProblem::Digest { reference: reference.clone(), digest }))?;
        }
        Ok(Lock { pins: raw.pins })
    }

    /// Write the lock file to `path` (atomically), if it fits in `max`
    /// bytes (else the next read would refuse it).
    ///
    /// # Errors
    ///
    /// It would be larger than `max`, or cannot be written.
    pub fn write(&self, path: &Path, max: u64) -> Result<(), DistributionError> {
        let mut text = String::from(
            "# airlock.lock: the digest each tag in airlock.toml was pinned to by `airlock pull`.\n\
             # A tag that later names another digest is refused until `airlock pull --update`.\n",
        );
        text.push_str(&format!("version = {LOCK_VERSION}\n\n[pins]\n"));
        for (reference, digest) in &self.pins {
            // References and digests are checked ASCII without quotes or
            // backslashes, so a JSON string is a TOML basic string here.
            let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
            text.push_str(&format!("{} = {}\n", quote(reference), quote(digest)));
        }
        if text.len() as u64 > max {
            return Err(too_large(path, text.len() as u64, max, true));
        }
        super::store::write_atomic(path, text.as_bytes())
    }
}

/// The lock file at `path` is `size` bytes, over `max`, as read or (when
/// `writing`) as it would be written.
fn too_large(path: &Path, size: u64, max: u64, writing: bool) -> DistributionError {
    DistributionError::OverCap {
        subject: path.display().to_string(),
        what: Capped::LockFile { writing },
        size,
        cap: max,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_round_trip_and_bad_entries_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("airlock.lock");
        let max = crate::distribution::settings::DEFAULT_MAX_LOCK_BYTES;
        assert_eq!(Lock::read(&path, max).unwrap(), Lock::default());
        let digest = format!("sha256:{}", "ab".repeat(32));
        let mut lock = Lock::default();
        lock.pins.insert("oci://127.0.0.1:5000/tools/echo:v1".into(), digest.clone());
        lock.write(&path, max).unwrap();
        assert_eq!(Lock::read(&path, max).unwrap(), lock);
        std::fs::write(&path, "version = 1\n[pins]\n\"oci://r/a:1\" = \"sha256:12\"\n").unwrap();
        assert!(Lock::read(&path, max).unwrap_err().to_string().contains("64"));
        std::fs::write(&path, format!("version = 1\n[pins]\n\"oci://r/a@{digest}\" = \"{digest}\"\n")).unwrap();
        assert!(Lock::read(&path, max).unwrap_err().to_string().contains("not a tag reference"));
        std::fs::write(&path, "version = 2\n").unwrap();
        assert!(matches!(
            Lock::read(&path, max).unwrap_err(),
            DistributionError::LockFile { problem: LockProblem::Version(2), .. }
        ));
    }

    #[test]
    fn a_lock_file_of_exactly_max_lock_bytes_is_read_and_one_byte_more_is_refused_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("airlock.lock");
        let max = 4096;
        let mut lock = Lock::default();
        lock.pins.insert("oci://127.0.0.1:5000/tools/echo:v1".into(), format!("sha256:{}", "ab".repeat(32)));
        lock.write(&path, max).unwrap();
        // Padded with a comment to exactly the cap.
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push('#');
        text.push_str(&"x".repeat(usize::try_from(max).unwrap() - text.len() - 1));
        text.push('\n');
        assert_eq!(text.len() as u64, max);
        std::fs::write(&path, &text).unwrap();
        assert_eq!(Lock::read(&path, max).unwrap(), lock);
        text.insert(text.len() - 1, 'x');
        std::fs::write(&path, &text).unwrap();
        let err = Lock::read(&path, max).unwrap_err().to_string();
        assert!(err.contains("4096-byte cap") && err.contains("[distribution] max_lock_bytes"), "{err}");
        // A lock that would not fit is not written (the next read would
        // refuse it).
        for i in 0..100 {
            lock.pins.insert(format!("oci://127.0.0.1:5000/tools/echo:v{i}"), format!("sha256:{}", "cd".repeat(32)));
        }
        let err = lock.write(&path, max).unwrap_err().to_string();
        assert!(err.contains("would grow to more than") && err.contains("max_lock_bytes"), "{err}");
    }
}
