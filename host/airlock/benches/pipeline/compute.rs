//! Items 4 (compile vs cache) and 6: compute overhead of fuel and epoch
//! interruption on a CPU-bound guest, against the same code natively.
//!
//! The four engines are built here with the wasmtime API, with the pooling
//! settings of `host/settings/src/engine.rs` and only fuel and epoch switched; calls
//! use the synchronous API (no host calls happen during the hash, so the
//! async machinery would only add a constant).

#[path = "../../../../tests/guests/compute/src/sha256.rs"]
mod sha256;

use crate::stats::{self, HEADER_MS, Stats, row_ms};
use crate::{Report, Setup};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

// The bindings of the 0.2.0 world declare a module `airlock` (its `caller`
// import), so the host crate is named `::airlock` in this file.
wasmtime::component::bindgen!({ path: "../../wit", world: "tool" });

struct Ctx {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for Ctx {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

fn engine(fuel: bool, epoch: bool) -> Engine {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.consume_fuel(fuel);
    config.epoch_interruption(epoch);
    config.parallel_compilation(true);
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(16)
        .total_stacks(16)
        .total_core_instances(16 * 16)
        .total_memories(32)
        .total_tables(16 * 16)
        .max_core_instances_per_component(64)
        .max_memories_per_component(8)
        .max_tables_per_component(32)
        .max_core_instance_size(4 << 20)
        .max_component_instance_size(4 << 20)
        .max_memory_size(4 << 30)
        .linear_memory_keep_resident(1 << 20)
        .table_keep_resident(64 << 10)
        .pagemap_scan(wasmtime::Enabled::Auto);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config).expect("engine")
}

/// One engine variant with its compiled guest.
struct Variant {
    name: &'static str,
    fuel: bool,
    epoch: bool,
    engine: Engine,
    pre: ToolPre<Ctx>,
}

impl Variant {
    fn new(name: &'static str, fuel: bool, epoch: bool, bytes: &[u8]) -> Self {
        let engine = engine(fuel, epoch);
        let component = Component::new(&engine, bytes).expect("compute compiles");
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker).expect("wasi");
        let pre = ToolPre::new(linker.instantiate_pre(&component).expect("links")).expect("tool world");
        Self { name, fuel, epoch, engine, pre }
    }

    /// Hash `mib` MiB in a fresh instance; the hex digest.
    fn run(&self, mib: u32) -> String {
        let ctx = Ctx { wasi: WasiCtx::builder().build(), table: ResourceTable::new() };
        let mut store = Store::new(&self.engine, ctx);
        if self.fuel {
            store.set_fuel(u64::MAX / 2).expect("fuel");
        }
        if self.epoch {
            // As the host does: check a deadline on every tick, keep going.
            let deadline = Instant::now() + Duration::from_secs(600);
            store.set_epoch_deadline(1);
            store.epoch_deadline_callback(move |_| {
                if Instant::now() >= deadline { Ok(UpdateDeadline::Interrupt) } else { Ok(UpdateDeadline::Continue(1)) }
            });
        }
        let tool = self.pre.instantiate(&mut store).expect("instantiate");
        let reply = tool.airlock_tool_handler().call_call(&mut store, &format!("{{\"mib\":{mib}}}")).expect("call");
        let text = reply.unwrap_or_else(|e| panic!("compute failed: {}", e.message));
        let value: serde_json::Value = serde_json::from_str(&text).expect("json");
        value["sha256"].as_str().unwrap_or_default().to_owned()
    }
}

/// Runs items 4 (compile/cache) and 6 and adds their sections to `report`.
pub fn run(setup: &Setup, report: &mut Report) {
    let bytes = std::fs::read(setup.test_guests.join("compute.wasm")).expect("compute.wasm (make guests)");
    let stop = Arc::new(AtomicBool::new(false));
    let variants = [
        Variant::new("no limits", false, false, &bytes),
        Variant::new("fuel", true, false, &bytes),
        Variant::new("epoch (1 ms ticker)", false, true, &bytes),
        Variant::new("fuel + epoch (as the host runs tools)", true, true, &bytes),
    ];
    // One ticker for both epoch engines, as the host has one for its engine.
    let engines: Vec<Engine> = variants.iter().filter(|v| v.epoch).map(|v| v.engine.clone()).collect();
    let ticker_stop = stop.clone();
    std::thread::spawn(move || {
        while !ticker_stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(1));
            for engine in &engines {
                engine.increment_epoch();
            }
        }
    });
    let mib = setup.compute_mib;
    let expected = sha256::hash_generated(mib);
    let mut native = Vec::new();
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); variants.len()];
    // Interleaved rounds, so that noise from other load hits every variant.
    for _ in 0..setup.compute_rounds {
        let started = Instant::now();
        assert_eq!(std::hint::black_box(sha256::hash_generated(std::hint::black_box(mib))), expected);
        native.push(started.elapsed());
        for (variant, samples) in variants.iter().zip(samples.iter_mut()) {
            let started = Instant::now();
            assert_eq!(variant.run(mib), expected, "{}", variant.name);
            samples.push(started.elapsed());
        }
    }
    stop.store(true, Ordering::Relaxed);
    let native = stats::stats(native);
    let mut rows = vec![row_ms("native (same sha256.rs, compiled for the host)", &native)];
    let mut ratios = vec![];
    for (variant, samples) in variants.iter().zip(samples) {
        let st = stats::stats(samples);
        let ratio = st.p50.as_secs_f64() / native.p50.as_secs_f64();
        rows.push(format!("{} {ratio:.2}× |", row_ms(variant.name, &st)));
        ratios.push(ratio);
    }
    rows[0].push_str(" 1.00× |");
    let fuel_epoch = ratios.last().copied().unwrap_or(0.0);
    report.figure("compute_ratio", fuel_epoch);
    report.section(format!(
        "## 6. Compute overhead: SHA-256 over {mib} MiB generated in the guest (fresh instance per run)\n\n\
         {}\n{}\n\n",
        HEADER_MS.replace("mean ms |\n|---|---|---|---|---|", "mean ms | p50 / native |\n|---|---|---|---|---|---|"),
        rows.join("\n")
    ));

    // Item 4, first half: compile vs load from the on-disk cache, through
    // the host's own `Runtime::compile`.
    let echo = std::fs::read(setup.guests.join("echo.wasm")).expect("echo.wasm");
    let digest = ::airlock::digest(&echo);
    let uncached = ::airlock::Runtime::new(&::airlock::EngineSettings {
        cache_dir: None,
        compiler: Some(env!("CARGO_BIN_EXE_airlock").into()),
        ..Default::default()
    })
    .expect("runtime");
    let compile: Stats = stats::stats(
        (0..setup.compile_iterations)
            .map(|_| {
                let started = Instant::now();
                let (_, cached) = uncached.compile(&echo, &digest).expect("compiles");
                assert!(!cached);
                started.elapsed()
            })
            .collect(),
    );
    let cache_dir = setup.scratch.join("compile-cache");
    let _ = std::fs::remove_dir_all(&cache_dir);
    let cached_runtime = ::airlock::Runtime::new(&::airlock::EngineSettings {
        cache_dir: Some(cache_dir),
        compiler: Some(env!("CARGO_BIN_EXE_airlock").into()),
        ..Default::default()
    })
    .expect("runtime");
    cached_runtime.compile(&echo, &digest).expect("compiles");
    let load: Stats = stats::stats(
        (0..setup.compile_iterations * 10)
            .map(|_| {
                let started = Instant::now();
                let (_, cached) = cached_runtime.compile(&echo, &digest).expect("loads");
                assert!(cached);
                started.elapsed()
            })
            .collect(),
    );
    report.compile = format!(
        "Compiling a component vs loading it from the on-disk cache (`Runtime::compile`, echo.wasm, {} KiB):\n\n{HEADER_MS}\n{}\n{}\n\n\
         Compile / cached load p50 ratio: {:.0}.\n\n",
        echo.len() / 1024,
        row_ms("compile (cache off)", &compile),
        row_ms("load from the cache (deserialize_file)", &load),
        compile.p50.as_secs_f64() / load.p50.as_secs_f64(),
    );
}
