//! `airlock.lock`: the digest each tag in the config resolved to when it was
//! first pulled. A tag is resolved once (`airlock pull`) and then only the
//! pinned digest is loaded; a tag that later names another digest is
//! refused by `airlock pull` until the operator accepts it with
//! `airlock pull --update`.
//!
//! The file is the operator's (written by `airlock pull`, reviewed like any
//! other config); it is still read under a size cap and every entry is
//! checked.

use super::reference::{OciRef, check_digest};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::Path;

/// Largest lock file read.
pub const MAX_LOCK_BYTES: u64 = 1 << 20;
/// The lock file format this host writes and reads.
const LOCK_VERSION: u32 = 1;

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
    /// Read the lock file at `path`; a missing file pins nothing.
    ///
    /// # Errors
    ///
    /// It cannot be read, is too large, or has a bad entry (named).
    pub fn read(path: &Path) -> Result<Lock, String> {
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Lock::default()),
            Err(err) => return Err(format!("{}: cannot read: {err}", path.display())),
        };
        let mut text = String::new();
        file.take(MAX_LOCK_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|err| format!("{}: cannot read: {err}", path.display()))?;
        if text.len() as u64 > MAX_LOCK_BYTES {
            return Err(format!("{}: larger than the {MAX_LOCK_BYTES}-byte cap for a lock file", path.display()));
        }
        let raw: RawLock =
            toml::from_str(&text).map_err(|err| format!("{}: {}", path.display(), err.to_string().trim_end()))?;
        if raw.version != LOCK_VERSION {
            return Err(format!("{}: version = {} is not known: accepted {LOCK_VERSION}", path.display(), raw.version));
        }
        for (reference, digest) in &raw.pins {
            let parsed = OciRef::parse(reference, true).map_err(|m| format!("{}: pins: {m}", path.display()))?;
            if parsed.tag_key().as_deref() != Some(reference.as_str()) {
                return Err(format!(
                    "{}: pins: {reference:?} is not a tag reference oci://REGISTRY/REPOSITORY:TAG",
                    path.display()
                ));
            }
            check_digest(digest).map_err(|m| format!("{}: pins.{reference:?}: {m}", path.display()))?;
        }
        Ok(Lock { pins: raw.pins })
    }

    /// Write the lock file to `path` (atomically).
    ///
    /// # Errors
    ///
    /// It cannot be written.
    pub fn write(&self, path: &Path) -> Result<(), String> {
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
        super::store::write_atomic(path, text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_round_trip_and_bad_entries_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("airlock.lock");
        assert_eq!(Lock::read(&path).unwrap(), Lock::default());
        let digest = format!("sha256:{}", "ab".repeat(32));
        let mut lock = Lock::default();
        lock.pins.insert("oci://127.0.0.1:5000/tools/echo:v1".into(), digest.clone());
        lock.write(&path).unwrap();
        assert_eq!(Lock::read(&path).unwrap(), lock);
        std::fs::write(&path, "version = 1\n[pins]\n\"oci://r/a:1\" = \"sha256:12\"\n").unwrap();
        assert!(Lock::read(&path).unwrap_err().contains("64"));
        std::fs::write(&path, format!("version = 1\n[pins]\n\"oci://r/a@{digest}\" = \"{digest}\"\n")).unwrap();
        assert!(Lock::read(&path).unwrap_err().contains("not a tag reference"));
        std::fs::write(&path, "version = 2\n").unwrap();
        assert!(Lock::read(&path).unwrap_err().contains("accepted 1"));
    }
}
