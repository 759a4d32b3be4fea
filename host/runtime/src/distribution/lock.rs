//! `airlock.lock`: the digest each tag in the config resolved to when it was
//! first pulled. A tag is resolved once (`airlock pull`) and then only the
//! pinned digest is loaded; a tag that later names another digest is
//! refused by `airlock pull` until the operator accepts it with
//! `airlock pull --update`.
//!
//! The same file keeps the tools' revisions `airlock lock` pinned
//! (`[tools.NAME]`): each loaded tool's revision, the component and
//! definition digests it is made of, and the definition itself (the
//! description and the schemas as compact JSON), so that a later change can
//! be shown as a diff. A tool whose revision differs from its pin is not
//! served (`loader::check_revision`).
//!
//! The file is the operator's (written by `airlock pull` and `airlock
//! lock`, reviewed like any other config); it is still read under a size
//! cap (`[distribution] max_lock_bytes`) and every entry is checked.

use super::error::{Capped, DistributionError, LockProblem};
use super::reference::{OciRef, check_digest};
use crate::revision::{Definition, PinnedTool, is_revision};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// The lock file format this host writes and reads.
pub(super) const LOCK_VERSION: u32 = 1;

/// Tag → digest pins, and tool → revision pins.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Lock {
    /// `oci://REGISTRY/REPOSITORY:TAG` → `sha256:HEX`.
    pub pins: BTreeMap<String, String>,
    /// Tool name → its pinned revision and definition (`airlock lock`).
    pub tools: BTreeMap<String, PinnedTool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLock {
    version: u32,
    #[serde(default)]
    pins: BTreeMap<String, String>,
    #[serde(default)]
    tools: BTreeMap<String, RawPinnedTool>,
}

/// `[tools.NAME]` of the lock file as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPinnedTool {
    revision: String,
    component_digest: String,
    definition_digest: String,
    description: String,
    /// The parameters schema as JSON text.
    parameters: String,
    /// The output schema as JSON text, if the tool declares one.
    output: Option<String>,
}

impl RawPinnedTool {
    /// Check the entry of the tool `name`: the digests' forms, the schemas
    /// as JSON, and the definition digest against the definition (so that
    /// a diff shown later is a diff against what was pinned).
    fn check(self, name: &str) -> Result<PinnedTool, String> {
        if !is_revision(&self.revision) {
            return Err(format!("revision = {:?} is not `sha256:` and 64 lowercase hex digits", self.revision));
        }
        if !is_revision(&format!("sha256:{}", self.component_digest)) {
            return Err(format!("component_digest = {:?} is not 64 lowercase hex digits", self.component_digest));
        }
        let schema = |key: &str, text: &str| {
            serde_json::from_str::<Value>(text).map_err(|err| format!("{key} is not JSON ({err})"))
        };
        let definition = Definition {
            name: name.to_owned(),
            description: self.description,
            parameters: schema("parameters", &self.parameters)?,
            output: self.output.as_deref().map(|text| schema("output", text)).transpose()?,
        };
        if definition.digest() != self.definition_digest {
            return Err(format!(
                "definition_digest = {:?} is not the digest of the definition beside it",
                self.definition_digest
            ));
        }
        if crate::revision::revision(&self.component_digest, &self.definition_digest) != self.revision {
            return Err("the revision is not made of the component and definition digests beside it".to_owned());
        }
        Ok(PinnedTool {
            revision: self.revision,
            component_digest: self.component_digest,
            definition_digest: self.definition_digest,
            definition,
        })
    }
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
        let mut tools = BTreeMap::new();
        for (name, entry) in raw.tools {
            let pinned =
                entry.check(&name).map_err(|problem| bad(LockProblem::Tool { tool: name.clone(), problem }))?;
            tools.insert(name, pinned);
        }
        Ok(Lock { pins: raw.pins, tools })
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
        if !self.tools.is_empty() {
            text.push_str(
                "# [tools.NAME]: each tool's revision as `airlock lock` pinned it, with its definition.\n\
                 # A tool whose revision changed is not served until `airlock lock` pins it again.\n",
            );
        }
        text.push_str(&format!("version = {LOCK_VERSION}\n\n[pins]\n"));
        for (reference, digest) in &self.pins {
            // References and digests are checked ASCII without quotes or
            // backslashes, so a JSON string is a TOML basic string here.
            text.push_str(&format!("{} = {}\n", toml_string(reference), toml_string(digest)));
        }
        for (name, pinned) in &self.tools {
            let PinnedTool { revision, component_digest, definition_digest, definition } = pinned;
            let json = |value: &Value| serde_json::to_string(value).unwrap_or_default();
            text.push_str(&format!("\n[tools.{}]\n", toml_string(name)));
            text.push_str(&format!("revision = {}\n", toml_string(revision)));
            text.push_str(&format!("component_digest = {}\n", toml_string(component_digest)));
            text.push_str(&format!("definition_digest = {}\n", toml_string(definition_digest)));
            text.push_str(&format!("description = {}\n", toml_string(&definition.description)));
            text.push_str(&format!("parameters = {}\n", toml_string(&json(&definition.parameters))));
            if let Some(output) = &definition.output {
                text.push_str(&format!("output = {}\n", toml_string(&json(output))));
            }
        }
        if text.len() as u64 > max {
            return Err(too_large(path, text.len() as u64, max, true));
        }
        super::store::write_atomic(path, text.as_bytes())
    }
}

/// `s` as a TOML basic string: its JSON string with DEL escaped too (JSON
/// leaves it raw, TOML does not accept it raw). A description is the
/// component's text, so anything can be in it.
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default().replace('\u{7f}', "\\u007F")
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

    fn pinned(description: &str) -> PinnedTool {
        let definition = Definition {
            name: "echo".into(),
            description: description.into(),
            parameters: serde_json::json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            output: Some(serde_json::json!({"type": "object"})),
        };
        let component_digest = "ab".repeat(32);
        let definition_digest = definition.digest();
        PinnedTool {
            revision: crate::revision::revision(&component_digest, &definition_digest),
            component_digest,
            definition_digest,
            definition,
        }
    }

    #[test]
    fn tool_revisions_round_trip_beside_the_tag_pins_and_bad_entries_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("airlock.lock");
        let max = crate::distribution::settings::DEFAULT_MAX_LOCK_BYTES;
        let mut lock = Lock::default();
        lock.pins.insert("oci://127.0.0.1:5000/tools/echo:v1".into(), format!("sha256:{}", "ab".repeat(32)));
        // Anything a component may declare survives: quotes, line ends,
        // control characters, DEL, non-ASCII.
        lock.tools.insert("echo".into(), pinned("Echo \"text\".\nSecond line \u{1b}[0m \u{7f} é ✓"));
        lock.write(&path, max).unwrap();
        assert_eq!(Lock::read(&path, max).unwrap(), lock);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("[tools.\"echo\"]\nrevision = \"sha256:"), "{text}");
        // An entry edited by hand is refused, naming the tool.
        let edited = text.replace("Second line", "Third line");
        std::fs::write(&path, edited).unwrap();
        let err = Lock::read(&path, max).unwrap_err().to_string();
        assert!(err.contains("tools.echo: definition_digest") && err.contains("airlock lock"), "{err}");
        let edited = text.replace("revision = \"sha256:", "revision = \"sha512:");
        std::fs::write(&path, edited).unwrap();
        assert!(Lock::read(&path, max).unwrap_err().to_string().contains("revision = \"sha512:"));
        let edited = text.replace("parameters = \"{", "parameters = \"{{");
        std::fs::write(&path, edited).unwrap();
        assert!(Lock::read(&path, max).unwrap_err().to_string().contains("parameters is not JSON"));
        // A lock file from before tool revisions reads as one without them.
        std::fs::write(&path, "version = 1\n[pins]\n").unwrap();
        assert!(Lock::read(&path, max).unwrap().tools.is_empty());
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
