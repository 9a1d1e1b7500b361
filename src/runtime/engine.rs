//! The one wasmtime `Engine` every plugin runs in.

use crate::config::defaults;
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Strategy};

/// Engine settings the host exposes.
#[derive(Clone, Debug)]
pub struct EngineSettings {
    /// Largest linear memory any instance may have; manifests may ask for less, never more.
    pub memory_ceiling: u64,
    /// Component instances the pool keeps room for; bounds calls running at once.
    pub max_instances: u32,
    /// What turns wasm into machine code.
    pub compiler: Compiler,
}

impl Default for EngineSettings {
    fn default() -> EngineSettings {
        EngineSettings { memory_ceiling: defaults::size(defaults::MEMORY_CEILING), max_instances: 256, compiler: Compiler::Cranelift }
    }
}

/// wasmtime's two compilers. Cranelift optimises: slower to compile, faster code, what a
/// server wants. Winch is a baseline compiler (one pass, no optimisation): it compiles several
/// times faster and runs code several times slower, which fits a plugin being rebuilt on every
/// save (`corral dev`). Both honour fuel and epoch interruption in wasmtime 48.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Compiler {
    /// The optimising compiler.
    #[default]
    Cranelift,
    /// The baseline compiler.
    Winch,
}

impl Compiler {
    /// Its name, as the flag spells it.
    pub fn name(self) -> &'static str {
        match self {
            Compiler::Cranelift => "cranelift",
            Compiler::Winch => "winch",
        }
    }

    /// The compiler named `name` (`cranelift` or `winch`).
    pub fn parse(name: &str) -> Result<Compiler, String> {
        match name {
            "cranelift" => Ok(Compiler::Cranelift),
            "winch" => Ok(Compiler::Winch),
            other => Err(format!("{other:?} is not a compiler: cranelift or winch")),
        }
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
    config.strategy(match settings.compiler {
        Compiler::Cranelift => Strategy::Cranelift,
        Compiler::Winch => Strategy::Winch,
    });
    config.consume_fuel(true).epoch_interruption(true).wasm_component_model(true).allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A core module that spins until stopped.
    const SPIN: &str = r#"(module (func (export "spin") (loop $l (br $l))))"#;

    fn spin_in(engine: &Engine, arm: impl FnOnce(&mut wasmtime::Store<()>)) -> wasmtime::Trap {
        let module = wasmtime::Module::new(engine, wat::parse_str(SPIN).unwrap()).unwrap();
        let mut store = wasmtime::Store::new(engine, ());
        arm(&mut store);
        let instance = wasmtime::Instance::new(&mut store, &module, &[]).unwrap();
        let spin = instance.get_typed_func::<(), ()>(&mut store, "spin").unwrap();
        let error = spin.call(&mut store, ()).unwrap_err();
        *error.downcast_ref::<wasmtime::Trap>().unwrap_or_else(|| panic!("not a trap: {error:?}"))
    }

    /// The limits every call runs under hold with Winch too: a guest that never returns is
    /// stopped by its fuel and by the epoch deadline.
    #[test]
    fn winch_stops_a_spinning_guest_by_fuel_and_by_epoch() {
        let settings = EngineSettings { max_instances: 4, compiler: Compiler::Winch, ..EngineSettings::default() };
        let engine = build(&settings).unwrap();
        let out_of_fuel = spin_in(&engine, |store| {
            store.set_fuel(1_000_000).unwrap();
            store.set_epoch_deadline(u64::MAX / 2);
        });
        assert_eq!(out_of_fuel, wasmtime::Trap::OutOfFuel);
        let interrupted = spin_in(&engine, |store| {
            store.set_fuel(u64::MAX).unwrap();
            store.set_epoch_deadline(1);
            store.epoch_deadline_trap();
            // Past the deadline before the call starts: the first check in the loop traps.
            engine.increment_epoch();
        });
        assert_eq!(interrupted, wasmtime::Trap::Interrupt);
    }

    #[test]
    fn compilers_are_named_as_the_flag_spells_them() {
        for compiler in [Compiler::Cranelift, Compiler::Winch] {
            assert_eq!(Compiler::parse(compiler.name()), Ok(compiler));
        }
        assert!(Compiler::parse("llvm").unwrap_err().contains("cranelift or winch"));
    }
}
