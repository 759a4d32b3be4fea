//! A tool's build, and its optimized build compiled in the background.
//!
//! A component the compile cache does not hold is compiled first by the
//! baseline compiler (Winch), so that its tool serves within a second or
//! two of a first start; the loader then hands it here ([`Upgrades::submit`]).
//! One thread compiles the optimized builds (Cranelift), one at a time,
//! each in a metered compiler process like any other (the same CPU and
//! address-space limits, its address space reserved from the host memory
//! budget, where a compilation never makes a call `busy`), at a lower CPU
//! priority than the host. Once a build is compiled and binds to the tool
//! world, it replaces the baseline one in the tool's [`Build`]: calls that
//! start afterwards run it, calls and sessions already running keep the
//! instance they have. The tool's name, schemas and revision are those
//! read from the component at load and do not change: the two builds are
//! of the same bytes. The optimized artifact is then kept in the cache and
//! the baseline one removed, so the next start loads the optimized build
//! directly.
//!
//! An optimized compilation that is refused (over a compile limit Winch was
//! within) leaves the tool on its baseline build, and the refusal is
//! remembered like any other: the next start serves the cached baseline
//! build without trying again, until the limits change.

use crate::compile_cache::Lookup;
use crate::compiler::CompileFailure;
use crate::sandbox::{CallCtx, ToolPre};
use crate::tier_compiler::Compiler;
use crate::wasmtime_config::Tier;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use wasmtime::component::Linker;

/// How many times an optimized compilation that found no room in the host
/// memory budget is tried again before the tool stays on its baseline
/// build until the next start.
const BUSY_ATTEMPTS: u32 = 3;

/// The build a tool's calls run: its baseline build until the optimized one
/// replaces it. Cheap to clone (shared).
#[derive(Clone)]
pub struct Build {
    current: Arc<RwLock<(ToolPre, Tier)>>,
}

impl Build {
    /// A build of `tier`.
    pub(crate) fn new(pre: ToolPre, tier: Tier) -> Self {
        Build { current: Arc::new(RwLock::new((pre, tier))) }
    }

    /// The pre-instantiated component a call instantiates now.
    pub fn pre(&self) -> ToolPre {
        self.current.read().unwrap_or_else(PoisonError::into_inner).0.clone()
    }

    /// Which compiler built what calls run now.
    pub fn tier(&self) -> Tier {
        self.current.read().unwrap_or_else(PoisonError::into_inner).1
    }

    fn replace(&self, pre: ToolPre, tier: Tier) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = (pre, tier);
    }
}

/// One tool served by its baseline build, waiting for its optimized one.
pub(crate) struct Job {
    /// The component's bytes, as hashed at load.
    pub(crate) bytes: Arc<Vec<u8>>,
    /// Their digest.
    pub(crate) digest: String,
    /// The tool's name, for the log.
    pub(crate) name: String,
    /// Where the optimized build goes.
    pub(crate) build: Build,
}

/// The queue of optimized compilations of one runtime, and its thread
/// (started with the first job; it ends when the runtime is dropped).
#[derive(Default)]
pub(crate) struct Upgrades {
    queue: Mutex<Option<std::sync::mpsc::Sender<Job>>>,
    pending: Arc<AtomicUsize>,
    started: AtomicUsize,
}

impl Upgrades {
    /// Compile `job`'s optimized build in the background; `compilers`
    /// gives the optimized and the baseline compilers and the linker, when
    /// the first job starts the worker.
    pub(crate) fn submit(&self, compilers: impl FnOnce() -> (Compiler, Compiler, Linker<CallCtx>), job: Job) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if queue.is_none() {
            let (tx, rx) = std::sync::mpsc::channel();
            let (optimized, baseline, linker) = compilers();
            let worker =
                Worker { optimized: optimized.in_background(), baseline, linker, pending: self.pending.clone() };
            let spawned = std::thread::Builder::new().name("airlock-upgrade".into()).spawn(move || {
                for job in rx {
                    worker.upgrade(&job);
                    worker.pending.fetch_sub(1, Ordering::AcqRel);
                }
            });
            if let Err(err) = spawned {
                tracing::warn!(tool = %job.name, "cannot start compiling optimized builds: {err}; it keeps its baseline build");
                return;
            }
            *queue = Some(tx);
        }
        self.pending.fetch_add(1, Ordering::AcqRel);
        self.started.fetch_add(1, Ordering::AcqRel);
        if let Some(Err(err)) = queue.as_ref().map(|tx| tx.send(job)) {
            self.pending.fetch_sub(1, Ordering::AcqRel);
            tracing::warn!(tool = %err.0.name, "the compiler of optimized builds stopped; the tool keeps its baseline build");
        }
    }

    /// Tools handed over for their optimized build so far.
    pub(crate) fn started(&self) -> usize {
        self.started.load(Ordering::Acquire)
    }

    /// Tools waiting for their optimized build (queued or compiling).
    pub(crate) fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }
}

struct Worker {
    optimized: Compiler,
    baseline: Compiler,
    linker: Linker<CallCtx>,
    pending: Arc<AtomicUsize>,
}

impl Worker {
    fn upgrade(&self, job: &Job) {
        let name = &job.name;
        let mut attempts = 0;
        let (component, artifact) = loop {
            attempts += 1;
            match self.optimized.lookup(&job.digest) {
                Lookup::Artifact(component) => break (component, None),
                Lookup::Refused(failure) => {
                    tracing::warn!(tool = %name, "keeps its baseline build: {}", failure.reason());
                    return;
                }
                Lookup::Miss => {}
            }
            match self.optimized.compile(&job.bytes, &job.digest) {
                Ok(fresh) => break (fresh.component, Some(fresh.artifact)),
                Err(CompileFailure::Busy(_)) if attempts < BUSY_ATTEMPTS => {}
                Err(failure) => {
                    tracing::warn!(
                        tool = %name,
                        "keeps its baseline build: compiling its optimized build failed: {}",
                        failure.reason()
                    );
                    return;
                }
            }
        };
        let pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(anyhow::Error::from)
            .and_then(|instance_pre| ToolPre::new(instance_pre).map_err(anyhow::Error::from));
        let pre = match pre {
            Ok(pre) => pre,
            Err(err) => {
                tracing::warn!(tool = %name, "keeps its baseline build: its optimized build does not bind: {err:#}");
                return;
            }
        };
        job.build.replace(pre, Tier::Optimized);
        if let Some(artifact) = artifact {
            artifact.keep();
        }
        // The next start loads the optimized build; the baseline one is
        // not needed again.
        if let (Some(optimized), Some(baseline)) =
            (self.optimized.cache_path(&job.digest), self.baseline.cache_path(&job.digest))
            && optimized.is_file()
        {
            let _ = std::fs::remove_file(baseline);
        }
        tracing::info!(tool = %name, "now runs its optimized (Cranelift) build; its revision is unchanged");
    }
}
