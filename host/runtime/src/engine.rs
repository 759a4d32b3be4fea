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
//! artifact enters the cache (`compile_cache.rs`) only once its component
//! was accepted. A component refused for what its bytes are (invalid, not
//! of the tool world, over a cap or a compile limit) is remembered there
//! too, so that a restart or a reload does not pay for the refusal again;
//! a change of the compile limits or of the engine tries again.

use crate::compile_cache::Lookup;
use crate::compiler::{CompileFailure, Meter};
use crate::memory_budget::MemoryBudget;
use crate::sandbox::CallCtx;
use crate::tier_compiler::Compiler;
use crate::upgrade::Upgrades;
use crate::validator::Validator;
use crate::wasmtime_config::{Tier, wasmtime_config};
use airlock_settings::engine::EngineSettings;
use anyhow::Context as _;
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
    /// The engine of optimized (Cranelift) builds.
    engine: Engine,
    linker: Linker<CallCtx>,
    /// The engine and linker of baseline (Winch) builds; `None` with
    /// `[engine] baseline_compile = false`. Without the pooling allocator:
    /// a baseline build serves only until its optimized build replaces it,
    /// and a second pool would reserve as much address space again.
    baseline: Option<(Engine, Linker<CallCtx>)>,
    /// Optimized builds compiled in the background for tools served by
    /// their baseline builds.
    upgrades: Upgrades,
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
        let engine = Engine::new(&wasmtime_config(settings, true, Tier::Optimized))
            .map_err(anyhow::Error::from)
            .context("configuring the wasmtime engine")?;
        let linker = new_linker(&engine)?;
        let baseline = if settings.baseline_compile {
            let engine = Engine::new(&wasmtime_config(settings, false, Tier::Baseline))
                .map_err(anyhow::Error::from)
                .context("configuring the wasmtime engine of baseline builds")?;
            let linker = new_linker(&engine)?;
            Some((engine, linker))
        } else {
            None
        };
        if let Some(dir) = &settings.cache_dir {
            std::fs::create_dir_all(dir).with_context(|| format!("creating cache directory {}", dir.display()))?;
        }
        let ticker_stop = Arc::new(AtomicBool::new(false));
        let engines = std::iter::once(engine.clone()).chain(baseline.as_ref().map(|(e, _)| e.clone())).collect();
        spawn_ticker(engines, ticker_stop.clone())?;
        let memory = MemoryBudget::new(settings);
        let meter = Meter::new(settings, memory.total());
        tracing::info!(
            "host memory budget: {} MiB (from {}); one principal, or the host's compilations, holds at most \
             `[engine] memory_share_percent` = {} % of it beyond its first reservation; each compilation \
             reserves {}",
            memory.total() >> 20,
            memory.source(),
            memory.share_percent(),
            meter.memory_limit()
        );
        let upgrades = Upgrades::default();
        Ok(Self {
            engine,
            linker,
            baseline,
            upgrades,
            cache_dir: settings.cache_dir.clone(),
            meter,
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

    /// The engine of optimized builds.
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

    /// The linker every optimized build is instantiated against: every
    /// capability of the sandbox, linked once.
    pub fn linker(&self) -> &Linker<CallCtx> {
        &self.linker
    }

    /// The linker of the engine of `tier` (the same capabilities).
    pub(crate) fn linker_for(&self, tier: Tier) -> &Linker<CallCtx> {
        match (&self.baseline, tier) {
            (Some((_, linker)), Tier::Baseline) => linker,
            _ => &self.linker,
        }
    }

    /// Whether a component the cache does not hold is compiled first by
    /// the baseline compiler (`[engine] baseline_compile`).
    pub(crate) fn baseline_first(&self) -> bool {
        self.baseline.is_some()
    }

    /// The optimized builds compiled in the background.
    pub(crate) fn upgrades(&self) -> &Upgrades {
        &self.upgrades
    }

    /// How many tools are served by their baseline build while their
    /// optimized build is compiled or waits to be (0 once every tool runs
    /// its optimized build).
    pub fn upgrades_pending(&self) -> usize {
        self.upgrades.pending()
    }

    /// How many tools were served by their baseline build at load, and
    /// handed over for their optimized build.
    pub fn upgrades_started(&self) -> usize {
        self.upgrades.started()
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
        let compiler = self.compiler(Tier::Optimized);
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

    /// The part of the runtime that compiles builds of `tier`, to hand to a
    /// blocking task (the optimized tier's when there is no baseline
    /// engine).
    pub(crate) fn compiler(&self, tier: Tier) -> Compiler {
        let (engine, tier) = match (&self.baseline, tier) {
            (Some((engine, _)), Tier::Baseline) => (engine.clone(), Tier::Baseline),
            _ => (self.engine.clone(), Tier::Optimized),
        };
        Compiler::new(
            engine,
            self.engine.clone(),
            tier,
            self.cache_dir.clone(),
            self.meter.clone(),
            self.memory.clone(),
        )
    }
}

/// A linker of `engine` with every capability of the sandbox, each
/// linking its own interface in the order of the one list of them
/// (`sandbox/capability.rs`).
fn new_linker(engine: &Engine) -> anyhow::Result<Linker<CallCtx>> {
    let mut linker = Linker::new(engine);
    crate::sandbox::add_to_linker(&mut linker)?;
    Ok(linker)
}

fn spawn_ticker(engines: Vec<Engine>, stop: Arc<AtomicBool>) -> anyhow::Result<()> {
    std::thread::Builder::new()
        .name("airlock-epoch".into())
        .spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(EPOCH_TICK);
                for engine in &engines {
                    engine.increment_epoch();
                }
            }
        })
        .context("starting the epoch ticker thread")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
