//! `[engine]` as wasmtime's configuration, for the engine that runs tools
//! (`engine.rs`) and for the engine of the compiler process
//! (`compiler.rs`): the same, so the compiler's artifacts load into the
//! host's engine.

use airlock_settings::engine::EngineSettings;
use airlock_settings::limits::{MAX_MEMORY_BYTES, MAX_TABLE_ELEMENTS};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// The engine of the compiler process: configured like the host's, so
/// that its artifacts load there, but without the pooling allocator (it
/// instantiates nothing, and the pool would reserve far more address space
/// than `compile_memory_mib` allows).
///
/// # Errors
///
/// wasmtime refuses the configuration.
pub fn compile_only_engine(settings: &EngineSettings) -> anyhow::Result<Engine> {
    Engine::new(&wasmtime_config(settings, false)).map_err(anyhow::Error::from)
}

/// The engine configuration; `pooling` only for the engine that runs
/// tools. The allocation strategy is not part of an artifact's
/// compatibility, so the compiler's artifacts load into the host's engine.
pub fn wasmtime_config(settings: &EngineSettings, pooling: bool) -> Config {
    let mut config = Config::new();
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
