//! The wasmtime engine shared by every tool: configuration (pooling
//! allocator, fuel, epochs), the epoch ticker, the WASI linker and the
//! on-disk cache of compiled components.
//!
//! `[engine]` is read by [`airlock_settings::engine`]; `wasmtime_config.rs`
//! turns it into wasmtime's configuration (for this engine and for the
//! compiler process's).
//!
//! Components are compiled in a metered child process (`compiler.rs`); an
//! artifact enters the cache only once its component was accepted.

use crate::compiler::{Artifact, CompileFailure, Meter};
use crate::memory_budget::MemoryBudget;
use crate::sandbox::CallCtx;
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

/// The engine, its WASI linker and the compiled-artifact cache.
pub struct Runtime {
    engine: Engine,
    linker: Linker<CallCtx>,
    cache_dir: Option<PathBuf>,
    meter: Meter,
    memory: MemoryBudget,
    ticker_stop: Arc<AtomicBool>,
}

impl Drop for Runtime {
    fn drop(&mut self) {
        self.ticker_stop.store(true, Ordering::Relaxed);
    }
}

impl Runtime {
    /// Configure the engine and start its epoch ticker thread.
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
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(anyhow::Error::from).context("linking WASI")?;
        // `wasi:http` is there for components that import it; every request
        // is refused unless the tool has a network grant (see network.rs).
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)
            .map_err(anyhow::Error::from)
            .context("linking wasi:http")?;
        // `airlock:tool/caller` (contract 0.2.0) answers with the caller of
        // the call being served.
        crate::caller::add_to_linker(&mut linker, |ctx: &mut CallCtx| crate::caller::CallerView(ctx.caller()))
            .map_err(anyhow::Error::from)
            .context("linking airlock:tool/caller")?;
        // Open files and outgoing HTTP bodies are counted per call.
        crate::budget::add_to_linker(&mut linker).context("linking the host budget")?;
        if let Some(dir) = &settings.cache_dir {
            std::fs::create_dir_all(dir).with_context(|| format!("creating cache directory {}", dir.display()))?;
        }
        let ticker_stop = Arc::new(AtomicBool::new(false));
        spawn_ticker(engine.clone(), ticker_stop.clone())?;
        Ok(Self {
            engine,
            linker,
            cache_dir: settings.cache_dir.clone(),
            meter: Meter::new(settings),
            memory: MemoryBudget::new(settings),
            ticker_stop,
        })
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

    /// The WASI linker every tool is instantiated against.
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
    /// The bytes are not a valid component, compiling them went over
    /// `[engine] compile_timeout_secs` or `compile_memory_mib`, or no
    /// compiler is set ([`EngineSettings::compiler`]).
    pub fn compile(&self, bytes: &[u8], digest: &str) -> anyhow::Result<(Component, bool)> {
        let compiler = self.compiler();
        if let Some(component) = compiler.cached(digest) {
            return Ok((component, true));
        }
        match compiler.compile(bytes, digest) {
            Ok(fresh) => {
                fresh.artifact.keep();
                Ok((fresh.component, false))
            }
            Err(CompileFailure::Invalid(why)) => Err(anyhow::anyhow!("invalid component: {why}")),
            Err(CompileFailure::WrongWorld(why)) => Err(anyhow::anyhow!("not an airlock:tool component: {why}")),
            Err(CompileFailure::Refused(why)) => Err(anyhow::anyhow!(why)),
        }
    }

    /// The part of the runtime that compiles, to hand to a blocking task.
    pub(crate) fn compiler(&self) -> Compiler {
        Compiler { engine: self.engine.clone(), cache_dir: self.cache_dir.clone(), meter: self.meter.clone() }
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
}

impl Compiler {
    /// The cached artifact of the component with this digest, if there is a
    /// usable one. Fast (the file is mapped, not compiled).
    pub(crate) fn cached(&self, digest: &str) -> Option<Component> {
        cached_artifact(&self.engine, &self.cache_path(digest)?)
    }

    /// Compile a component in a metered child process (slow: seconds for a
    /// large one; call it from a blocking task). The artifact goes into the
    /// cache only when the caller keeps it ([`Artifact::keep`]).
    ///
    /// # Errors
    ///
    /// The bytes are not a valid component, or compiling them went over
    /// `[engine] compile_timeout_secs` or `compile_memory_mib`.
    pub(crate) fn compile(&self, bytes: &[u8], digest: &str) -> Result<Fresh, CompileFailure> {
        let artifact = crate::compiler::compile(&self.meter, bytes, self.cache_path(digest))?;
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
    fn digest_is_sha256_hex() {
        assert_eq!(digest(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
