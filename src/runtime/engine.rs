//! The one wasmtime `Engine` every plugin runs in.

use crate::config::defaults;
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// Engine settings the host exposes.
#[derive(Clone, Debug)]
pub struct EngineSettings {
    /// Largest linear memory any instance may have; manifests may ask for less, never more.
    pub memory_ceiling: u64,
    /// Component instances the pool keeps room for; bounds calls running at once.
    pub max_instances: u32,
}

impl Default for EngineSettings {
    fn default() -> EngineSettings {
        EngineSettings { memory_ceiling: defaults::size(defaults::MEMORY_CEILING), max_instances: 256 }
    }
}

/// Builds the engine: fuel and epochs for limits, the pooling allocator so that a fresh
/// instance per call costs microseconds rather than a round of mmap calls.
pub fn build(settings: &EngineSettings) -> wasmtime::Result<Engine> {
    let mut pool = PoolingAllocationConfig::default();
    let instances = settings.max_instances;
    pool.total_component_instances(instances)
        .total_core_instances(instances * 4)
        .total_memories(instances * 2)
        .total_tables(instances * 4)
        .total_stacks(instances)
        .max_memory_size(settings.memory_ceiling as usize)
        .max_core_instances_per_component(64)
        .max_memories_per_component(8)
        .max_tables_per_component(16)
        .table_elements(100_000)
        .max_core_instance_size(4 << 20)
        .max_component_instance_size(4 << 20)
        // Reusing a slot means resetting its memory. Keeping the first pages resident and
        // resetting only the dirty ones (PAGEMAP_SCAN, Linux 6.7+) makes that a few
        // microseconds instead of a madvise and a round of page faults per call.
        .pagemap_scan(Enabled::Auto)
        .linear_memory_keep_resident(2 << 20)
        .table_keep_resident(1 << 20);

    let mut config = Config::new();
    config.consume_fuel(true).epoch_interruption(true).wasm_component_model(true).allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config)
}
