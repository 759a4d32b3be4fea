//! The compile cache: where compiled components are kept on disk, and the
//! refusals remembered beside them.
//!
//! A component is known by its digest ([`digest`]); its artifact is named
//! by that digest and the engine's compatibility hash ([`artifact_path`]),
//! so that an artifact is never loaded into an engine it was not compiled
//! for, and read back mapped, not compiled ([`cached_artifact`]). A
//! component refused for what its bytes are (invalid, not of the tool
//! world, over a cap or a compile limit) is remembered in the same
//! directory, keyed by what decided the refusal ([`refusal_path`]), so that
//! a restart or a reload does not pay for it again. The engine's compiler
//! (`engine.rs`) and the schema validator, which compiles its own component
//! (`validator.rs`), both keep their artifacts here.

use crate::compiler::{CompileFailure, MAX_CHILD_STDERR_BYTES, Meter};
use crate::wasmtime_config::Tier;
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use wasmtime::Engine;
use wasmtime::component::Component;

/// What the compile cache holds for one component.
pub(crate) enum Lookup {
    /// Its compiled artifact (mapped, not compiled).
    Artifact(Component),
    /// Why an earlier compilation under the same limits refused it
    /// ([`CompileFailure::Remembered`]).
    Refused(CompileFailure),
    /// Nothing: it is to be compiled.
    Miss,
}

/// Largest remembered refusal read back: its message is at most what is
/// read of the compiler's stderr, and a line for its kind.
const MAX_REFUSAL_FILE_BYTES: u64 = MAX_CHILD_STDERR_BYTES + 64;

/// Where the compile cache in `dir` remembers why the component named
/// `name` (its digest) was refused: the name binds it to the component, to
/// the engine's compatibility hash and to what decided the refusal (the
/// compile limits, the checks made before compiling, this build:
/// [`Meter::fingerprint`]), so that a change of any of them tries again.
pub(crate) fn refusal_path(engine: &Engine, dir: &Path, name: &str, meter: &Meter) -> PathBuf {
    let mut hasher = std::hash::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    meter.fingerprint(&mut hasher);
    dir.join(format!("{name}-{:016x}.refused", hasher.finish()))
}

/// The refusal remembered at `path`, if there is one that reads back; a
/// torn or foreign file is logged and ignored (the component is compiled
/// again, and a refusal written anew).
pub(crate) fn remembered_refusal(path: &Path) -> Option<CompileFailure> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return None,
        Err(err) => {
            tracing::warn!(path = %path.display(), "cannot read a remembered refusal: {err}");
            return None;
        }
    };
    let mut text = String::new();
    if let Err(err) = std::io::Read::read_to_string(&mut std::io::Read::take(file, MAX_REFUSAL_FILE_BYTES), &mut text) {
        tracing::warn!(path = %path.display(), "cannot read a remembered refusal: {err}");
        return None;
    }
    let failure = CompileFailure::from_remembered(&text);
    if failure.is_none() {
        tracing::warn!(path = %path.display(), "ignoring a remembered refusal that does not read back");
    }
    failure
}

/// Remember `failure` at `path` if it is a refusal for what the bytes are
/// (never one that may not hold next time): written whole to a temporary
/// file beside it (mode 0600, like the artifacts) and renamed onto it, so
/// that a reader sees all of it or nothing. A failure to write is logged:
/// the refusal is then paid again next time, nothing worse.
pub(crate) fn remember_refusal(path: &Path, failure: &CompileFailure) {
    let Some(text) = failure.to_remembered() else { return };
    let temp = crate::compiler::temp_beside(path);
    let write = || -> std::io::Result<()> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&temp)?;
        std::io::Write::write_all(&mut file, text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    };
    if let Err(err) = write() {
        let _ = std::fs::remove_file(&temp);
        tracing::warn!(path = %path.display(), "cannot remember the refusal in the compile cache: {err}");
    }
}

/// Where the compile cache in `dir` keeps the artifact of the component
/// named `name` (its digest) for `engine`: the name binds it to the
/// component and to the engine's compatibility hash.
pub(crate) fn artifact_path(engine: &Engine, dir: &Path, name: &str) -> PathBuf {
    let mut hasher = std::hash::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    dir.join(format!("{name}-{:016x}.cwasm", hasher.finish()))
}

/// The name the compile cache keeps the `tier` build of the component
/// with this digest under: the optimized build under the digest itself
/// (as before builds had tiers), the baseline one under a name of its own,
/// so that the two are never taken for each other (their engines'
/// compatibility hashes differ too).
pub(crate) fn tier_name(digest: &str, tier: Tier) -> String {
    match tier {
        Tier::Optimized => digest.to_owned(),
        Tier::Baseline => format!("{digest}-baseline"),
    }
}

/// The artifact at `path` of the compile cache, if there is a usable one
/// (mapped, not compiled); an unusable one is logged and ignored.
pub(crate) fn cached_artifact(engine: &Engine, path: &Path) -> Option<Component> {
    if !path.is_file() {
        return None;
    }
    // SAFETY: the cache directory is operator-owned (see
    // `EngineSettings::cache_dir`) and the file name binds the artifact to
    // the component digest and this engine's compatibility hash
    // ([`artifact_path`]). wasmtime still checks the artifact header.
    match unsafe { Component::deserialize_file(engine, path) } {
        Ok(component) => Some(component),
        Err(err) => {
            tracing::warn!(path = %path.display(), "ignoring unusable cached artifact: {err:#}");
            None
        }
    }
}

/// The sha256 of a component's bytes, lowercase hex: its identity in the
/// cache, in pins and in audit records.
pub fn digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_settings::engine::EngineSettings;

    #[test]
    fn only_refusals_for_what_the_bytes_are_are_remembered() {
        for failure in [
            CompileFailure::Invalid("bad".into()),
            CompileFailure::WrongWorld("it exports nothing".into()),
            CompileFailure::OverLimit("over the cap".into()),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("x.refused");
            remember_refusal(&path, &failure);
            let Some(CompileFailure::Remembered(why)) = remembered_refusal(&path) else { panic!("{failure:?}") };
            assert_eq!(why, failure.reason());
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt as _;
                assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
            }
            let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
            assert_eq!(left.len(), 1, "no temporary file is left");
        }
        for failure in
            [CompileFailure::Refused("no compiler".into()), CompileFailure::Remembered("refused earlier".into())]
        {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("x.refused");
            remember_refusal(&path, &failure);
            assert!(!path.exists(), "{failure:?} is not remembered");
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.refused");
        std::fs::write(&path, "torn").unwrap();
        assert_eq!(remembered_refusal(&path), None, "a file that does not read back is ignored");
        std::fs::write(&path, "other\nwhy").unwrap();
        assert_eq!(remembered_refusal(&path), None);
    }

    #[test]
    fn a_refusal_is_keyed_by_the_compile_limits() {
        let settings = EngineSettings::default();
        let engine = crate::wasmtime_config::compile_only_engine(&settings, Tier::Optimized).unwrap();
        let path =
            |settings: &EngineSettings| refusal_path(&engine, Path::new("/c"), "d", &Meter::new(settings, 16 << 30));
        let base = path(&settings);
        assert!(base.to_string_lossy().ends_with(".refused") && base != artifact_path(&engine, Path::new("/c"), "d"));
        assert_eq!(path(&settings), base, "the same limits find the same refusal");
        for changed in [
            EngineSettings { compile_timeout_secs: 299, ..settings.clone() },
            EngineSettings { compile_secs_per_mib: 5, ..settings.clone() },
            EngineSettings { compile_memory_mib: 4095, ..settings.clone() },
        ] {
            assert_ne!(path(&changed), base, "{changed:?}");
        }
        // A budget below compile_memory_mib lowers the compiler's address
        // space, so a refusal under the old one is not this one's.
        let clamped = refusal_path(&engine, Path::new("/c"), "d", &Meter::new(&settings, 2 << 30));
        assert_ne!(clamped, base);
        // Where the compiler is does not decide a refusal.
        assert_eq!(path(&EngineSettings { compiler: Some("/elsewhere".into()), ..settings.clone() }), base);
    }

    #[test]
    fn the_two_builds_of_a_component_are_kept_apart() {
        let settings = EngineSettings::default();
        let dir = Path::new("/c");
        let optimized = crate::wasmtime_config::compile_only_engine(&settings, Tier::Optimized).unwrap();
        let baseline = crate::wasmtime_config::compile_only_engine(&settings, Tier::Baseline).unwrap();
        let hash = |engine: &Engine| {
            let mut hasher = std::hash::DefaultHasher::new();
            engine.precompile_compatibility_hash().hash(&mut hasher);
            hasher.finish()
        };
        assert_ne!(hash(&optimized), hash(&baseline), "an artifact of one tier never loads into the other's engine");
        let paths = [
            artifact_path(&optimized, dir, &tier_name("d", Tier::Optimized)),
            artifact_path(&baseline, dir, &tier_name("d", Tier::Baseline)),
        ];
        assert_ne!(paths[0], paths[1]);
        assert!(paths[1].to_string_lossy().contains("d-baseline-"), "{paths:?}");
    }

    #[test]
    fn digest_is_sha256_hex() {
        assert_eq!(digest(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
