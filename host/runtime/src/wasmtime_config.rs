//! `[engine]` as wasmtime's configuration, for the engine that runs tools
//! (`engine.rs`) and for the engine of the compiler process
//! (`compiler.rs`): the same, so the compiler's artifacts load into the
//! host's engine.

use airlock_settings::engine::EngineSettings;
use airlock_settings::limits::{MAX_MEMORY_BYTES, MAX_TABLE_ELEMENTS};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Strategy};

/// Which of wasmtime's compilers built a component.
///
/// A component not yet in the compile cache is compiled first by the
/// baseline compiler (Winch: one pass, several times faster, slower code)
/// so that its tool serves within a second or two, then by the optimizing
/// one (Cranelift) in the background (`upgrade.rs`); the optimized build
/// replaces the baseline one in place, under the same revision. An
/// artifact loads only into an engine of its own tier (wasmtime checks
/// the calling convention), so the runtime has one engine per tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tier {
    /// Winch's build.
    Baseline,
    /// Cranelift's build.
    Optimized,
}

impl Tier {
    /// The tier as the compiler process's argument names it.
    pub(crate) fn arg(self) -> &'static str {
        match self {
            Tier::Baseline => "baseline",
            Tier::Optimized => "optimized",
        }
    }

    /// The tier the compiler process's argument names.
    pub(crate) fn from_arg(arg: &str) -> Option<Tier> {
        [Tier::Baseline, Tier::Optimized].into_iter().find(|tier| tier.arg() == arg)
    }
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Tier::Baseline => "baseline (Winch)",
            Tier::Optimized => "optimized (Cranelift)",
        })
    }
}

/// The engine of the compiler process: configured like the host's, so
/// that its artifacts load there, but without the pooling allocator (it
/// instantiates nothing, and the pool would reserve far more address space
/// than `compile_memory_mib` allows).
///
/// # Errors
///
/// wasmtime refuses the configuration.
pub fn compile_only_engine(settings: &EngineSettings, tier: Tier) -> anyhow::Result<Engine> {
    Engine::new(&wasmtime_config(settings, false, tier)).map_err(anyhow::Error::from)
}

/// The engine configuration of `tier`; `pooling` only for the engine that
/// runs tools. The allocation strategy is not part of an artifact's
/// compatibility, so the compiler's artifacts load into the host's engine.
/// Winch supports what the sandbox needs (the component model, fuel,
/// epoch interruption, SIMD on x86-64); a component using a proposal it
/// does not (exceptions, GC, tail calls) is refused by it and compiled by
/// Cranelift alone.
pub fn wasmtime_config(settings: &EngineSettings, pooling: bool, tier: Tier) -> Config {
    let mut config = Config::new();
    if tier == Tier::Baseline {
        config.strategy(Strategy::Winch);
    }
    config.wasm_component_model(true);
    config.consume_fuel(true);
    config.epoch_interruption(true);
    config.max_wasm_stack(settings.wasm_stack_bytes);
    // The async stack must hold the wasm stack plus host frames.
    config.async_stack_size(settings.wasm_stack_bytes + (1 << 20));
    config.parallel_compilation(true);
    if !pooling {
        return config;
    }

    let instances = settings.max_live_instances;
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(instances)
        .total_stacks(instances)
        .total_core_instances(instances * 16)
        .total_memories(instances * 2)
        .total_tables(instances * 16)
        .max_core_instances_per_component(64)
        .max_memories_per_component(8)
        .max_tables_per_component(32)
        .max_core_instance_size(4 << 20)
        .max_component_instance_size(4 << 20)
        .max_memory_size(MAX_MEMORY_BYTES)
        .table_elements(MAX_TABLE_ELEMENTS)
        // Keeping pages resident and resetting them with pagemap_scan makes
        // a fresh instance per call several times cheaper (WASMTIME-48.md).
        .linear_memory_keep_resident(1 << 20)
        .table_keep_resident(64 << 10)
        .async_stack_keep_resident(64 << 10)
        .pagemap_scan(Enabled::Auto);
    config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    config
}
