//! The meter for schemas: every JSON Schema a tool declared is compiled and
//! evaluated inside Airlock's own engine, by a validator compiled to a
//! WebAssembly component (`host/validator`), never natively by the host.
//!
//! Trusts nothing it evaluates: the schema is the tool author's, and the
//! instance is a model's arguments or a guest's result. A schema's shape
//! decides how much CPU and memory a check takes (regexes, `uniqueItems`,
//! combinators whose errors copy subschemas), and no estimate bounds that
//! well; a meter does. Each check runs under an epoch deadline (the call's
//! own), yields to the async runtime every tick so it never holds a worker
//! thread, stops at once when the call is cancelled, and grows its linear
//! memory only up to the tool's `validation_memory_mib`. A check that hits
//! a limit traps the validator's instance, which is then dropped: the host
//! itself neither allocates nor spins for a schema.
//!
//! The validator belongs to the [`Runtime`](crate::engine::Runtime) that
//! made it ([`Validator`]): its compiled component is cached in that
//! runtime's cache directory, and its epoch ticker stops when it and the
//! schemas compiled in it are dropped, so two hosts in one process share
//! nothing of it but the bytes of its compiled artifact ([`COMPILED`]),
//! which spare a second runtime with a cold cache the compilation.
//!
//! One instance holds one compiled schema. Each schema keeps a few idle
//! instances warm ([`MAX_IDLE`], small ones only: [`KEEP_WARM_BYTES`]), so
//! a call pays for a check, not for compiling the schema again.

use crate::wasmtime_config::Tier;
use airlock_core::outcome::{ErrorKind, Failure};
use anyhow::Context as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, ResourceLimiter, Store, Trap, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit/validator",
        world: "validator",
        exports: { default: async },
    });
}

use bindings::exports::airlock::validator::schema::Violations;
use bindings::{Validator as Instance, ValidatorPre};

/// The validator component, built by `build.rs` from `host/validator`.
const COMPONENT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/validator.wasm"));
/// The SHA-256 of [`COMPONENT`] (hex), computed by the build script.
const COMPONENT_DIGEST: &str = include_str!(concat!(env!("OUT_DIR"), "/validator.sha256"));

/// How often the validator engine's epoch advances: a check yields to the
/// async runtime, and notices its deadline, once per tick.
const TICK: Duration = Duration::from_millis(1);
/// Idle instances kept per schema.
pub const MAX_IDLE: usize = 2;
/// An instance whose linear memory grew past this is dropped after its
/// check instead of being kept warm, so idle instances stay small.
pub const KEEP_WARM_BYTES: usize = 8 << 20;
/// Most bytes of one violation's message the validator hands back.
const MAX_MESSAGE_BYTES: u32 = 1024;
/// Largest compiled size of one `pattern` / `patternProperties` regex
/// (regexes run on the linear-time `regex` engine).
pub const MAX_REGEX_BYTES: usize = 256 << 10;
/// Largest lazy-DFA cache of one regex.
pub const MAX_REGEX_DFA_BYTES: usize = 1 << 20;
/// Violations listed in an error.
pub const MAX_LISTED_ERRORS: usize = 10;
/// Violations past this many are not even counted ("at least N more").
pub const MAX_COUNTED_ERRORS: usize = 10_000;

/// What one store of the validator holds: an empty WASI context (no
/// directories, no environment, no network: the validator needs none) and
/// the memory meter.
struct Ctx {
    wasi: WasiCtx,
    table: ResourceTable,
    meter: MemoryMeter,
    /// When the check running in this store must stop.
    deadline: Instant,
}

impl WasiView for Ctx {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// Caps the linear memory of one validator instance and remembers whether
/// the cap was hit (a trap then means "out of memory", not a fault).
struct MemoryMeter {
    cap: usize,
    size: usize,
    refused: bool,
}

impl ResourceLimiter for MemoryMeter {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.cap {
            self.refused = true;
            // An error traps at once: the validator cannot go on without
            // the memory, and its own allocation-failure path would spend
            // more time than the host wants to give it.
            return Err(wasmtime::Error::msg("the validator's memory cap was reached"));
        }
        self.size = self.size.max(desired);
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }

    fn instances(&self) -> usize {
        16
    }

    fn tables(&self) -> usize {
        16
    }

    fn memories(&self) -> usize {
        4
    }
}

/// The metered validator of one [`Runtime`](crate::engine::Runtime):
/// made with it, reached through [`Runtime::validator`], and caching its
/// compiled component in that runtime's cache directory. The component is
/// compiled (or loaded from the cache) the first time a schema needs it
/// ([`Validator::ready`]), on a blocking thread. Cheap to clone: clones
/// share the one meter.
///
/// The meter's engine has an epoch ticker thread of its own, which stops
/// once the validator and every [`Schema`] compiled in it are dropped
/// (a schema's warm instances live in that engine, and a check needs its
/// ticks).
///
/// [`Runtime::validator`]: crate::engine::Runtime::validator
#[derive(Clone)]
pub struct Validator {
    shared: Arc<Lazy>,
}

/// The meter, made on first use.
struct Lazy {
    cache_dir: Option<PathBuf>,
    meter: OnceLock<Result<Arc<Meter>, String>>,
}

/// The validator's engine and component, and the ticker that drives its
/// epoch.
struct Meter {
    engine: Engine,
    pre: ValidatorPre<Ctx>,
    /// Held only to be dropped with the meter, which stops the thread.
    _ticker: Ticker,
}

/// The epoch ticker thread of a meter's engine, stopped when the meter is
/// dropped (as `engine.rs` stops the runtime's own ticker).
struct Ticker {
    stop: Arc<AtomicBool>,
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

impl Validator {
    /// A validator whose compiled component is cached in `cache_dir`
    /// (none: compiled anew each time it is made). Nothing is compiled
    /// until a schema needs it.
    pub fn new(cache_dir: Option<PathBuf>) -> Self {
        Self { shared: Arc::new(Lazy { cache_dir, meter: OnceLock::new() }) }
    }

    /// The meter, compiled (or loaded from the cache) on first use; this
    /// blocks for as long as that takes.
    fn meter(&self) -> Result<Arc<Meter>, Failure> {
        let shared = &self.shared;
        shared
            .meter
            .get_or_init(|| Meter::new(shared.cache_dir.as_deref()).map(Arc::new).map_err(|err| format!("{err:#}")))
            .clone()
            .map_err(|err| {
                Failure::new(ErrorKind::Internal, format!("the host's schema validator is unavailable: {err}"))
            })
    }

    /// Make the validator ready (compiled, or loaded from the cache) off
    /// the async worker threads: compiling it takes seconds, once per
    /// validator (or once per cache). Call it before taking the time a
    /// schema's compilation may use.
    ///
    /// # Errors
    ///
    /// The validator does not compile in this engine (a build fault).
    pub async fn ready(&self) -> Result<(), String> {
        if self.shared.meter.get().is_some() {
            return Ok(());
        }
        let this = self.clone();
        let prepared = tokio::task::spawn_blocking(move || this.meter().map(drop)).await;
        prepared.map_err(|err| err.to_string())?.map_err(|failure| failure.message)
    }

    /// Compile `schema` in this validator under `bounds`, keeping the
    /// instance warm for the first check.
    ///
    /// # Errors
    ///
    /// `Ok(Err(why))` when the schema does not compile (why, in the
    /// validator's words); `Err` when a limit stopped the compilation.
    pub async fn compile(
        &self,
        schema: &serde_json::Value,
        bounds: Bounds<'_>,
    ) -> Result<Result<Schema, String>, Stopped> {
        let meter = self.meter().map_err(|failure| Stopped::Fault(failure.message))?;
        let text = schema.to_string();
        match instantiate(&meter, &text, bounds).await? {
            Ok(warm) => Ok(Ok(Schema {
                json: schema.clone(),
                text,
                meter,
                idle: Mutex::new(vec![(bounds.memory_bytes, warm)]),
            })),
            Err(why) => Ok(Err(why)),
        }
    }

    /// Whether the meter's ticker thread still runs, through a reference
    /// that the thread itself holds: `None` before the meter is made.
    #[cfg(test)]
    pub(crate) fn ticker(&self) -> Option<std::sync::Weak<AtomicBool>> {
        match self.shared.meter.get() {
            Some(Ok(meter)) => Some(Arc::downgrade(&meter._ticker.stop)),
            _ => None,
        }
    }
}

impl Meter {
    fn new(cache_dir: Option<&Path>) -> anyhow::Result<Meter> {
        let optimized = validator_engine(Tier::Optimized)?;
        // On an empty cache the validator is compiled by Winch (well under
        // a second, where Cranelift takes seconds and every tool's schemas
        // wait for it), and Cranelift's build is compiled in the background
        // for the next start (once per process).
        let (engine, component) = match cache_dir {
            Some(dir) if !compiled_before(&optimized, dir) => {
                let baseline = validator_engine(Tier::Baseline)?;
                let component = compile(&baseline, Some(dir))?;
                let dir = dir.to_owned();
                let spawned = std::thread::Builder::new().name("airlock-validator-compile".into()).spawn(move || {
                    if let Err(err) = compile(&optimized, Some(&dir)) {
                        tracing::warn!("cannot compile the schema validator's optimized build: {err:#}");
                    }
                });
                if let Err(err) = spawned {
                    tracing::warn!("cannot compile the schema validator's optimized build: {err}");
                }
                (baseline, component)
            }
            _ => {
                let component = compile(&optimized, cache_dir)?;
                (optimized, component)
            }
        };
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(anyhow::Error::from)
            .context("linking WASI for the validator")?;
        let pre = ValidatorPre::new(linker.instantiate_pre(&component).map_err(anyhow::Error::from)?)
            .map_err(anyhow::Error::from)
            .context("binding the validator component")?;
        let stop = Arc::new(AtomicBool::new(false));
        let ticker = engine.clone();
        let running = stop.clone();
        std::thread::Builder::new()
            .name("airlock-validator-epoch".into())
            .spawn(move || {
                while !running.load(Ordering::Relaxed) {
                    std::thread::sleep(TICK);
                    ticker.increment_epoch();
                }
            })
            .context("starting the validator's epoch ticker")?;
        Ok(Meter { engine, pre, _ticker: Ticker { stop } })
    }
}

/// The engine of the validator's builds of `tier`.
fn validator_engine(tier: Tier) -> anyhow::Result<Engine> {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    config.parallel_compilation(true);
    if tier == Tier::Baseline {
        config.strategy(wasmtime::Strategy::Winch);
    }
    Engine::new(&config).map_err(anyhow::Error::from).context("configuring the validator engine")
}

/// Whether the validator's build for `engine` is in the cache in `dir` or
/// was compiled by this process before (loading it is then fast).
fn compiled_before(engine: &Engine, dir: &Path) -> bool {
    let path = crate::compile_cache::artifact_path(engine, dir, &format!("validator-{COMPONENT_DIGEST}"));
    path.is_file() || memo(engine).is_some()
}

/// What this process compiled before for `engine`'s compatibility hash.
fn memo(engine: &Engine) -> Option<Vec<u8>> {
    let hash = compatibility(engine);
    COMPILED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .find(|(h, _)| *h == hash)
        .map(|(_, b)| b.clone())
}

fn compatibility(engine: &Engine) -> u64 {
    let mut hasher = std::hash::DefaultHasher::new();
    std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut hasher);
    std::hash::Hasher::finish(&hasher)
}

/// The validator's artifacts as this process compiled them, serialized, with
/// the compatibility hash of the engine it was compiled for. Compiling is
/// a pure function of the component (a constant of the build) and of the
/// validator engine's configuration (the same for every validator), and
/// takes seconds of CPU; a second runtime in the process whose cache does
/// not hold the artifact yet (a program that builds several hosts, the
/// test suite) loads these bytes instead. It is data only: each validator
/// still has its own engine, ticker and cache directory, and the artifact
/// is written into that directory as if it had been compiled there.
static COMPILED: Mutex<Vec<(u64, Vec<u8>)>> = Mutex::new(Vec::new());

/// The validator compiled for `engine`: from the cache when an artifact of
/// these bytes for this engine is there, else from what this process
/// compiled before ([`COMPILED`]) or compiled now; either way written into
/// the cache.
fn compile(engine: &Engine, cache_dir: Option<&Path>) -> anyhow::Result<Component> {
    let name = format!("validator-{COMPONENT_DIGEST}");
    let path = cache_dir.map(|dir| crate::compile_cache::artifact_path(engine, dir, &name));
    if let Some(component) = path.as_deref().and_then(|path| crate::compile_cache::cached_artifact(engine, path)) {
        return Ok(component);
    }
    let compatible = compatibility(engine);
    let earlier = memo(engine).and_then(|bytes| {
        // SAFETY: the bytes were serialized by this process from the
        // validator compiled for an engine with the same compatibility
        // hash, and never left its memory; wasmtime checks their header.
        unsafe { Component::deserialize(engine, &bytes) }
            .map_err(|err| tracing::warn!("cannot load the validator compiled earlier: {err:#}"))
            .ok()
            .map(|component| (component, bytes))
    });
    let (component, serialized) = match earlier {
        Some((component, bytes)) => (component, Some(bytes)),
        None => {
            let component = Component::new(engine, COMPONENT)
                .map_err(anyhow::Error::from)
                .context("compiling the schema validator")?;
            let bytes = component.serialize().map_err(anyhow::Error::from);
            if let Ok(bytes) = &bytes {
                COMPILED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((compatible, bytes.clone()));
            }
            (component, bytes.ok())
        }
    };
    if let Some(path) = &path {
        let written = match &serialized {
            Some(bytes) => write_artifact(path, bytes),
            None => Err(anyhow::anyhow!("the compiled validator cannot be serialized")),
        };
        if let Err(err) = written {
            tracing::warn!(path = %path.display(), "cannot cache the compiled validator: {err:#}");
        }
    }
    Ok(component)
}

/// Write the validator's artifact at `path`, whole or not at all: into a
/// temporary file beside it (unique to this write, so two runtimes of one
/// process sharing a cache do not write into the same one), renamed onto
/// it.
fn write_artifact(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")))?;
    let temp = crate::compiler::temp_beside(path);
    let written = std::fs::write(&temp, bytes).and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    Ok(written?)
}

/// An instance of the validator holding one compiled schema.
struct Warm {
    store: Store<Ctx>,
    validator: Instance,
}

/// When a check must give up, and what its caps are.
#[derive(Clone, Copy)]
pub struct Bounds<'a> {
    /// The call's deadline.
    pub at: tokio::time::Instant,
    /// The call's cancellation.
    pub cancel: &'a CancellationToken,
    /// The tool's `validation_memory_mib`, in bytes.
    pub memory_bytes: usize,
}

/// Why a check gave no answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Stopped {
    /// The deadline passed.
    Deadline,
    /// The call was cancelled.
    Cancelled,
    /// The validator needed more memory than the cap.
    Memory,
    /// The validator trapped for another reason (a stack overflow on a
    /// deeply nested schema, say), or the host could not run it.
    Fault(String),
}

/// The violations of an instance, as the validator listed them.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    /// `(pointer, message)` of the first violations, at most
    /// [`MAX_LISTED_ERRORS`].
    pub listed: Vec<(String, String)>,
    /// Violations counted, at most [`MAX_COUNTED_ERRORS`].
    pub counted: usize,
}

/// A schema compiled in the validator, with its idle instances and the
/// schema it was compiled from.
pub struct Schema {
    /// The schema as declared.
    json: serde_json::Value,
    /// The schema as JSON text (to compile it into new instances).
    text: String,
    /// The meter it was compiled in: its instances live in that engine.
    meter: Arc<Meter>,
    /// Idle instances and the memory cap each was created under.
    idle: Mutex<Vec<(usize, Warm)>>,
}

impl Schema {
    /// The schema as declared.
    pub fn json(&self) -> &serde_json::Value {
        &self.json
    }

    /// Check `instance` (JSON text) against the schema within `bounds`:
    /// `Ok(None)` when it matches.
    ///
    /// # Errors
    ///
    /// What stopped the check.
    pub async fn check(&self, instance: &str, bounds: Bounds<'_>) -> Result<Option<Listed>, Stopped> {
        let idle = {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            // An instance made under another cap (the operator changed it
            // on reload) is dropped: grown memory cannot be given back.
            idle.retain(|(cap, _)| *cap == bounds.memory_bytes);
            idle.pop()
        };
        let mut warm = match idle {
            Some((_, warm)) => warm,
            None => match instantiate(&self.meter, &self.text, bounds).await? {
                Ok(warm) => warm,
                Err(why) => return Err(Stopped::Fault(format!("the schema no longer compiles: {why}"))),
            },
        };
        let listed = run(&mut warm, bounds, |validator, store| {
            let instance = instance.to_owned();
            Box::pin(async move {
                validator
                    .airlock_validator_schema()
                    .call_validate(
                        store,
                        &instance,
                        MAX_LISTED_ERRORS as u32,
                        MAX_COUNTED_ERRORS as u32,
                        MAX_MESSAGE_BYTES,
                    )
                    .await
            })
        })
        .await?;
        let listed = listed.map_err(|why| Stopped::Fault(format!("the validator refused the instance: {why}")))?;
        if warm.store.data().meter.size <= KEEP_WARM_BYTES {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            if idle.len() < MAX_IDLE {
                idle.push((bounds.memory_bytes, warm));
            }
        }
        Ok(listed.map(|Violations { listed, counted }| Listed {
            listed: listed.into_iter().map(|v| (v.pointer, v.message)).collect(),
            counted: counted as usize,
        }))
    }
}

/// A new instance of the validator with `schema` compiled in it.
async fn instantiate(meter: &Meter, schema: &str, bounds: Bounds<'_>) -> Result<Result<Warm, String>, Stopped> {
    let ctx = Ctx {
        // Deny by default: no directories, environment, network or stdio.
        wasi: WasiCtx::builder().build(),
        table: ResourceTable::new(),
        meter: MemoryMeter { cap: bounds.memory_bytes, size: 0, refused: false },
        deadline: Instant::now(),
    };
    let mut store = Store::new(&meter.engine, ctx);
    store.limiter(|ctx| &mut ctx.meter);
    arm(&mut store, bounds);
    let pre = meter.pre.clone();
    let instantiated = stop_at(bounds, async { pre.instantiate_async(&mut store).await }).await;
    let validator = match instantiated {
        Ok(Ok(validator)) => validator,
        Ok(Err(err)) => return Err(stopped(&err, &store)),
        Err(stop) => return Err(stop),
    };
    let mut warm = Warm { store, validator };
    let schema = schema.to_owned();
    let compiled = run(&mut warm, bounds, |validator, store| {
        Box::pin(async move {
            validator
                .airlock_validator_schema()
                .call_compile(store, &schema, MAX_REGEX_BYTES as u32, MAX_REGEX_DFA_BYTES as u32)
                .await
        })
    })
    .await?;
    Ok(compiled.map(|()| warm))
}

/// Set the store's deadline from `bounds`: the validator yields every tick
/// and traps once the deadline has passed.
fn arm(store: &mut Store<Ctx>, bounds: Bounds<'_>) {
    store.data_mut().deadline = bounds.at.into_std();
    store.set_epoch_deadline(1);
    store.epoch_deadline_callback(|ctx| {
        if Instant::now() >= ctx.data().deadline { Ok(UpdateDeadline::Interrupt) } else { Ok(UpdateDeadline::Yield(1)) }
    });
}

/// Run one export of `warm` within `bounds`.
async fn run<R, F>(warm: &mut Warm, bounds: Bounds<'_>, work: F) -> Result<R, Stopped>
where
    F: for<'a> FnOnce(
        &'a Instance,
        &'a mut Store<Ctx>,
    ) -> std::pin::Pin<Box<dyn Future<Output = wasmtime::Result<R>> + Send + 'a>>,
{
    arm(&mut warm.store, bounds);
    let Warm { store, validator } = warm;
    match stop_at(bounds, work(validator, store)).await {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => Err(stopped(&err, store)),
        Err(stop) => Err(stop),
    }
}

/// Race `work` against the deadline and the cancellation of `bounds`.
async fn stop_at<T>(bounds: Bounds<'_>, work: impl Future<Output = T>) -> Result<T, Stopped> {
    tokio::select! {
        biased;
        () = bounds.cancel.cancelled() => Err(Stopped::Cancelled),
        () = tokio::time::sleep_until(bounds.at) => Err(Stopped::Deadline),
        done = work => Ok(done),
    }
}

/// What a trap of the validator means.
fn stopped(err: &wasmtime::Error, store: &Store<Ctx>) -> Stopped {
    if store.data().meter.refused {
        return Stopped::Memory;
    }
    match err.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => Stopped::Deadline,
        // The trap alone: wasmtime's backtrace of the validator's own
        // frames says nothing to a model or an operator, and runs to
        // kilobytes.
        Some(trap) => Stopped::Fault(trap.to_string()),
        None => Stopped::Fault(format!("{err:#}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bounds(cancel: &CancellationToken, ms: u64, memory_bytes: usize) -> Bounds<'_> {
        Bounds { at: tokio::time::Instant::now() + Duration::from_millis(ms), cancel, memory_bytes }
    }

    /// One validator for the tests of this module, compiled once.
    fn validator() -> &'static Validator {
        static VALIDATOR: OnceLock<Validator> = OnceLock::new();
        VALIDATOR.get_or_init(|| Validator::new(None))
    }

    async fn schema(value: serde_json::Value) -> Schema {
        validator().ready().await.unwrap();
        let cancel = CancellationToken::new();
        validator().compile(&value, bounds(&cancel, 60_000, 64 << 20)).await.unwrap().unwrap()
    }

    #[test]
    fn the_build_scripts_digest_is_the_embedded_components() {
        assert_eq!(COMPONENT_DIGEST, crate::compile_cache::digest(COMPONENT));
    }

    #[tokio::test]
    async fn lists_violations_with_pointers() {
        let schema = schema(json!({"type":"object","properties":{"n":{"type":"integer","minimum":1}}})).await;
        let cancel = CancellationToken::new();
        assert_eq!(schema.check(r#"{"n":3}"#, bounds(&cancel, 60_000, 64 << 20)).await, Ok(None));
        let listed = schema.check(r#"{"n":0}"#, bounds(&cancel, 60_000, 64 << 20)).await.unwrap().unwrap();
        assert_eq!(listed.counted, 1);
        assert_eq!(listed.listed, vec![("/n".to_owned(), "0 is less than the minimum of 1".to_owned())]);
    }

    #[tokio::test]
    async fn a_schema_that_does_not_compile_says_why() {
        validator().ready().await.unwrap();
        let cancel = CancellationToken::new();
        let bad = json!({"type":"string","pattern":"(?=a)"});
        let why = validator().compile(&bad, bounds(&cancel, 60_000, 64 << 20)).await.unwrap().err().unwrap();
        assert!(why.contains("(?=a)") || why.to_lowercase().contains("look"), "{why}");
    }

    #[tokio::test]
    async fn memory_past_the_cap_stops_the_check_not_the_host() {
        // Every error of `anyOf` copies its subschemas; a long array of
        // failing items needs far more than 8 MiB to report.
        let branches: Vec<_> = (0..60).map(|i| json!({"const": format!("{i}{}", "x".repeat(2000))})).collect();
        let schema =
            schema(json!({"type":"object","properties":{"a":{"type":"array","items":{"anyOf": branches}}}})).await;
        let cancel = CancellationToken::new();
        let instance = format!(r#"{{"a":[{}]}}"#, vec!["0"; 100_000].join(","));
        let got = schema.check(&instance, bounds(&cancel, 600_000, 8 << 20)).await;
        assert_eq!(got, Err(Stopped::Memory));
    }

    #[tokio::test]
    async fn the_deadline_and_cancellation_stop_a_check() {
        // 40 levels of `$defs`, each evaluating the next twice: 2^40
        // evaluations of one value, far past the 50 ms allowed on any
        // machine.
        let mut defs = serde_json::Map::new();
        for level in 0..40 {
            let next = json!({"$ref": format!("#/$defs/a{}", level + 1)});
            defs.insert(format!("a{level}"), json!({"allOf": [next.clone(), next]}));
        }
        defs.insert("a40".to_owned(), json!({"type": "integer"}));
        let schema = schema(json!({"$ref": "#/$defs/a0", "$defs": defs})).await;
        let cancel = CancellationToken::new();
        assert_eq!(schema.check("1", bounds(&cancel, 50, 64 << 20)).await, Err(Stopped::Deadline));
        cancel.cancel();
        assert_eq!(schema.check("1", bounds(&cancel, 60_000, 64 << 20)).await, Err(Stopped::Cancelled));
    }

    #[tokio::test]
    async fn a_schema_deeper_than_the_validators_stack_faults_the_check_not_the_host() {
        // 6 000 definitions, each a `$ref` to the next: it compiles, and
        // every check follows the whole chain.
        let mut defs = serde_json::Map::new();
        for level in 0..6000 {
            defs.insert(format!("{level}"), json!({"$ref": format!("#/$defs/{}", level + 1)}));
        }
        defs.insert("6000".to_owned(), json!({}));
        let schema = schema(json!({"type": "object", "$ref": "#/$defs/0", "$defs": defs})).await;
        let cancel = CancellationToken::new();
        for _ in 0..2 {
            // The trap, not wasmtime's backtrace of the validator's frames.
            let got = schema.check("{}", bounds(&cancel, 60_000, 64 << 20)).await;
            assert!(matches!(&got, Err(Stopped::Fault(why)) if why.len() < 100 && why.contains("stack")), "{got:?}");
        }
    }
}
