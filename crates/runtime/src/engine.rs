//! The wasmtime engine shared by every tool: configuration (pooling
//! allocator, fuel, epochs), the epoch ticker, the linker of the sandbox's
//! capabilities, the on-disk cache of compiled components and the metered
//! schema validator.
//!
//! `[engine]` is read by [`airlock_settings::engine`]; `wasmtime_config.rs`
//! turns it into wasmtime's configuration (for this engine and for the
//! compiler process's).
//!
//! Components are compiled in a metered child process (`compiler.rs`); an
//! artifact enters the cache only once its component was accepted. A
//! component refused for what its bytes are (invalid, not of the tool
//! world, over a cap or a compile limit) is remembered in the same
//! directory, so that a restart or a reload does not pay for the refusal
//! again; a change of the compile limits or of the engine tries again.

use crate::compiler::{Artifact, CompileFailure, MAX_CHILD_STDERR_BYTES, Meter};
use crate::memory_budget::MemoryBudget;
use crate::sandbox::CallCtx;
use crate::validator::Validator;
use crate::wasmtime_config::wasmtime_config;
use airlock_settings::engine::EngineSettings;
use anyhow::Context as _;
use sha2::{Digest, Sha256};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

/// How often the epoch advances. Deadlines are checked on each tick, so a
/// runaway guest overshoots its deadline by at most about one tick.
pub const EPOCH_TICK: Duration = Duration::from_millis(1);

/// The engine, the linker of the sandbox's capabilities, the
/// compiled-artifact cache and the metered schema validator.
pub struct Runtime {
    engine: Engine,
    linker: Linker<CallCtx>,
    cache_dir: Option<PathBuf>,
    meter: Meter,
    memory: MemoryBudget,
    /// The schema validator of this runtime, caching its component in
    /// `cache_dir`; its own ticker stops when it is dropped with the
    /// runtime (and the schemas compiled in it).
    validator: Validator,
    ticker_stop: Arc<AtomicBool>,
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}

impl Runtime {
    /// Configure the engine and start its epoch ticker thread. The schema
    /// validator is made with it and compiled when a schema first needs
    /// it ([`Validator::ready`]).
    ///
    /// # Errors
    ///
    /// The pooling allocator cannot reserve its address space, or the cache
    /// directory cannot be created.
    pub fn new(settings: &EngineSettings) -> anyhow::Result<Self> {
        let engine = Engine::new(&wasmtime_config(settings, true))
            .map_err(anyhow::Error::from)
            .context("configuring the wasmtime engine")?;
        let mut linker = Linker::new(&engine);
        // Every capability of the sandbox links its own interface, in the
        // order of the one list of them (`sandbox/capability.rs`).
        crate::sandbox::add_to_linker(&mut linker)?;
        if let Some(dir) = &settings.cache_dir {
            std::fs::create_dir_all(dir).with_context(|| format!("creating cache directory {}", dir.display()))?;
        }
        let ticker_stop = Arc::new(AtomicBool::new(false));
        spawn_ticker(engine.clone(), ticker_stop.clone())?;
        let memory = MemoryBudget::new(settings);
        Ok(Self {
            engine,
            linker,
            cache_dir: settings.cache_dir.clone(),
            meter: Meter::new(settings, memory.total()),
            memory,
            validator: Validator::new(settings.cache_dir.clone()),
            ticker_stop,
        })
    }

    /// The metered validator every schema of this runtime's tools is
    /// compiled and checked in.
    pub fn validator(&self) -> &Validator {
        &self.validator
    }

    /// The engine.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The host memory budget every call, session and compilation of this
    /// engine reserves from (`[engine] memory_budget_mib`).
    pub fn memory(&self) -> &MemoryBudget {
        &self.memory
    }

    /// Where compiled components are cached, if anywhere.
    pub fn cache_dir(&self) -> Option<&Path> {
        self.cache_dir.as_deref()
    }

    /// The linker every tool is instantiated against: every capability of
    /// the sandbox, linked once.
    pub fn linker(&self) -> &Linker<CallCtx> {
        &self.linker
    }

    /// Compile a component in a metered child process, or load it from the
    /// cache when an artifact for the same bytes and the same engine
    /// configuration exists. Returns the component and whether it came
    /// from the cache. The artifact is cached at once: a load that checks
    /// the component further caches it only once accepted.
    ///
    /// # Errors
    ///
    /// The bytes are not a valid component or not of the tool world, are
    /// over a cap of their shape, compiling them went over the CPU allowed
    /// (`[engine] compile_secs_per_mib`, `compile_timeout_secs`) or
    /// `compile_memory_mib`, the cache remembers such a refusal of the same
    /// bytes under the same limits, or no compiler is set
    /// ([`EngineSettings::compiler`]).
    pub fn compile(&self, bytes: &[u8], digest: &str) -> anyhow::Result<(Component, bool)> {
        let compiler = self.compiler();
        let failure = match compiler.lookup(digest) {
            Lookup::Artifact(component) => return Ok((component, true)),
            Lookup::Refused(failure) => failure,
            Lookup::Miss => match compiler.compile(bytes, digest) {
                Ok(fresh) => {
                    fresh.artifact.keep();
                    return Ok((fresh.component, false));
                }
                Err(failure) => failure,
            },
        };
        match failure {
            CompileFailure::Remembered(why) => Err(anyhow::anyhow!("refused earlier (cached): {why}")),
            failure => Err(anyhow::anyhow!(failure.reason())),
        }
    }

    /// The part of the runtime that compiles, to hand to a blocking task.
    pub(crate) fn compiler(&self) -> Compiler {
        Compiler {
            engine: self.engine.clone(),
            cache_dir: self.cache_dir.clone(),
            meter: self.meter.clone(),
            memory: self.memory.clone(),
        }
    }
}

/// A component compiled just now: its artifact waits in a temporary file
/// until the load accepts the component ([`Artifact::keep`]).
pub(crate) struct Fresh {
    pub(crate) component: Component,
    pub(crate) artifact: Artifact,
}

/// Compiles components for one engine, in metered child processes, and
/// keeps the artifacts in its cache. Cheap to clone (the engine is shared).
#[derive(Clone)]
pub(crate) struct Compiler {
    engine: Engine,
    cache_dir: Option<PathBuf>,
    meter: Meter,
    /// The host memory budget each compiler process reserves its address
    /// space from while it runs.
    memory: MemoryBudget,
}

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

impl Compiler {
    /// The cached artifact of the component with this digest, if there is a
    /// usable one, else the refusal the cache remembers for it under these
    /// limits, if any. Fast (files are mapped or read, nothing compiled).
    pub(crate) fn lookup(&self, digest: &str) -> Lookup {
        if let Some(component) = self.cache_path(digest).and_then(|path| cached_artifact(&self.engine, &path)) {
            return Lookup::Artifact(component);
        }
        match self.refusal_path(digest).and_then(|path| remembered_refusal(&path)) {
            Some(failure) => Lookup::Refused(failure),
            None => Lookup::Miss,
        }
    }

    /// Compile a component in a metered child process (slow: seconds for a
    /// large one; call it from a blocking task). The artifact goes into the
    /// cache only when the caller keeps it ([`Artifact::keep`]); a refusal
    /// for what the bytes are goes into it at once
    /// ([`CompileFailure::to_remembered`]).
    ///
    /// # Errors
    ///
    /// See [`crate::compiler::compile`]; and the compiler's artifact cannot
    /// be loaded.
    pub(crate) fn compile(&self, bytes: &[u8], digest: &str) -> Result<Fresh, CompileFailure> {
        let compiled = self.compile_unremembered(bytes, digest);
        if let (Err(failure), Some(path)) = (&compiled, self.refusal_path(digest)) {
            remember_refusal(&path, failure);
        }
        compiled
    }

    fn compile_unremembered(&self, bytes: &[u8], digest: &str) -> Result<Fresh, CompileFailure> {
        let artifact = crate::compiler::compile(&self.meter, &self.memory, bytes, self.cache_path(digest))?;
        let Some(path) = artifact.temp_path() else {
            return Err(CompileFailure::Refused("the compiled artifact is gone".into()));
        };
        // SAFETY: the file was written by our own compiler process, in the
        // operator-owned cache directory or in a directory only this user
        // can enter, and not yet used by anyone; wasmtime checks that it was
        // compiled for an engine compatible with this one.
        let component = unsafe { Component::deserialize_file(&self.engine, &path) }.map_err(|err| {
            CompileFailure::Refused(format!("the compiler's artifact cannot be loaded: {:#}", anyhow::Error::from(err)))
        })?;
        Ok(Fresh { component, artifact })
    }

    fn cache_path(&self, digest: &str) -> Option<PathBuf> {
        Some(artifact_path(&self.engine, self.cache_dir.as_ref()?, digest))
    }

    fn refusal_path(&self, digest: &str) -> Option<PathBuf> {
        Some(refusal_path(&self.engine, self.cache_dir.as_ref()?, digest, &self.meter))
    }
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
fn remembered_refusal(path: &Path) -> Option<CompileFailure> {
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
fn remember_refusal(path: &Path, failure: &CompileFailure) {
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

fn spawn_ticker(engine: Engine, stop: Arc<AtomicBool>) -> anyhow::Result<()> {
    std::thread::Builder::new()
        .name("airlock-epoch".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(EPOCH_TICK);
                engine.increment_epoch();
            }
        })
        .context("starting the epoch ticker thread")?;
    Ok(())
}

/// The sha256 of a component's bytes, lowercase hex: its identity in the
/// cache, in pins and in audit records.
pub fn digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let engine = crate::wasmtime_config::compile_only_engine(&settings).unwrap();
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

    #[tokio::test]
    async fn each_runtime_has_its_own_validator() {
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let runtime = |dir: &tempfile::TempDir| {
            let settings = EngineSettings { cache_dir: Some(dir.path().to_owned()), ..EngineSettings::default() };
            Runtime::new(&settings).unwrap()
        };
        let (first, second) = (runtime(&dirs[0]), runtime(&dirs[1]));
        first.validator().ready().await.unwrap();
        second.validator().ready().await.unwrap();
        for dir in &dirs {
            let names: Vec<String> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into())
                .collect();
            assert!(
                names.iter().any(|name| name.starts_with("validator-") && name.ends_with(".cwasm")),
                "the validator's artifact is in its runtime's cache: {names:?}"
            );
        }
        let (stopping, staying) = (first.validator().ticker().unwrap(), second.validator().ticker().unwrap());
        drop(first);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while stopping.upgrade().is_some() {
            assert!(std::time::Instant::now() < deadline, "the dropped runtime's validator ticker still runs");
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(staying.upgrade().is_some(), "the other runtime's validator ticker runs on");
    }

    #[test]
    fn digest_is_sha256_hex() {
        assert_eq!(digest(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
