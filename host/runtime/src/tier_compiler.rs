//! The compiler of one tier's builds ([`Tier`]: Winch's baseline or
//! Cranelift's optimized) for one engine: the compile cache looked up
//! first, a component compiled in the metered compiler process
//! (`compiler.rs`) otherwise, and a refusal for what its bytes are
//! remembered. The runtime hands one to a blocking task (`engine.rs`), the
//! background upgrades hold two (`upgrade.rs`).

use crate::compile_cache::{
    Lookup, artifact_path, cached_artifact, refusal_path, remember_refusal, remembered_refusal, tier_name,
};
use crate::compiler::{Artifact, CompileFailure, Meter};
use crate::memory_budget::MemoryBudget;
use crate::wasmtime_config::Tier;
use std::path::PathBuf;
use wasmtime::Engine;
use wasmtime::component::Component;

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
    /// The engine of optimized builds, whose compatibility hash keys the
    /// refusals remembered for either tier: what the bytes are (not a
    /// component, not of the tool world, over a cap or a compile limit) is
    /// the same to both compilers (Winch never takes more CPU or memory
    /// than Cranelift), and a refusal by Winch of what it does not support
    /// is not remembered ([`CompileFailure::Refused`]).
    optimized_engine: Engine,
    /// Which compiler builds (and which engine loads) its artifacts.
    pub(crate) tier: Tier,
    /// Compiling in the background (an optimized build replacing a
    /// baseline one): the compiler process runs at a lower CPU priority.
    pub(crate) background: bool,
    cache_dir: Option<PathBuf>,
    meter: Meter,
    /// The host memory budget each compiler process reserves its address
    /// space from while it runs.
    memory: MemoryBudget,
}

impl Compiler {
    /// The compiler of `tier`'s builds for `engine`; `optimized_engine`
    /// keys the refusals remembered for either tier.
    pub(crate) fn new(
        engine: Engine,
        optimized_engine: Engine,
        tier: Tier,
        cache_dir: Option<PathBuf>,
        meter: Meter,
        memory: MemoryBudget,
    ) -> Self {
        Compiler { engine, optimized_engine, tier, background: false, cache_dir, meter, memory }
    }

    /// This compiler, compiling behind calls (at a lower CPU priority).
    pub(crate) fn in_background(self) -> Self {
        Compiler { background: true, ..self }
    }

    /// The cached artifact of the component with this digest, if there is a
    /// usable one, else the refusal the cache remembers for it under these
    /// limits, if any. Fast (files are mapped or read, nothing compiled).
    pub(crate) fn lookup(&self, digest: &str) -> Lookup {
        if let Some(component) = self.lookup_artifact(digest) {
            return Lookup::Artifact(component);
        }
        match self.refusal_path(digest).and_then(|path| remembered_refusal(&path)) {
            Some(failure) => Lookup::Refused(failure),
            None => Lookup::Miss,
        }
    }

    /// The cached artifact of this tier's build of the component with this
    /// digest, if there is a usable one.
    pub(crate) fn lookup_artifact(&self, digest: &str) -> Option<Component> {
        self.cache_path(digest).and_then(|path| cached_artifact(&self.engine, &path))
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
        let how = crate::compiler::How { tier: self.tier, background: self.background };
        let artifact = crate::compiler::compile(&self.meter, &self.memory, bytes, self.cache_path(digest), how)?;
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

    /// Where the cache keeps this tier's build of the component with this
    /// digest.
    pub(crate) fn cache_path(&self, digest: &str) -> Option<PathBuf> {
        Some(artifact_path(&self.engine, self.cache_dir.as_ref()?, &tier_name(digest, self.tier)))
    }

    fn refusal_path(&self, digest: &str) -> Option<PathBuf> {
        Some(refusal_path(&self.optimized_engine, self.cache_dir.as_ref()?, digest, &self.meter))
    }
}
