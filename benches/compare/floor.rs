//! The floor of a call in corral: the same component's `echo`, called in a fresh instance per
//! call under the host's own engine (`corral::runtime::build_engine`, the same pool and limits)
//! and loaded through its compile cache, with no MCP, no JSON-RPC and no WASI context.
//!
//! Each call gets what corral gives each call and nothing else: a fresh store, fuel, an epoch
//! deadline, a memory cap, a fresh instance of the pre-linked component, and the typed
//! `call-tool` that lifts the result into Rust values. Every import is a trap (the `echo` tool
//! calls none), so the instance has as many imports as in corral. What corral spends beyond
//! this is its protocol, its transport and its per-call host state.
//!
//! `compare --floor TEXT_WASM CACHE_DIR CALLS TEXT_BYTES`: loads, then makes `CALLS` calls of
//! `echo` with a text of `TEXT_BYTES`, checking each answer, and exits. Run under callgrind by
//! the `instructions` group; two call counts differenced give the cost of one call.

use std::path::Path;

use corral::config::Limits;
use corral::runtime::v3::exports::corral::plugin::tools::GuestIndices;
use corral::runtime::{build_engine, CompileCache, Content, EngineSettings};
use wasmtime::component::Linker;
use wasmtime::{Store, StoreLimits, StoreLimitsBuilder};

/// The store state: only the memory cap.
struct Floor {
    limits: StoreLimits,
}

/// Runs the floor process with its command-line arguments (after `--floor`).
pub fn main(args: &[String]) {
    let [wasm, cache, calls, bytes] = args else { panic!("usage: --floor TEXT_WASM CACHE_DIR CALLS TEXT_BYTES") };
    let calls: usize = calls.parse().expect("CALLS is a number");
    let text = super::instructions::echo_text(bytes.parse().expect("TEXT_BYTES is a number"));
    let max_instances = super::instructions::MAX_INSTANCES.parse().unwrap();
    let engine = build_engine(&EngineSettings { max_instances, ..EngineSettings::default() }).expect("building the engine");
    let bytes = std::fs::read(wasm).expect("reading the component");
    let cache = CompileCache::open(Path::new(cache), &engine).expect("opening the compile cache");
    let (component, _, _) = cache.load_keyed(&engine, &bytes).expect("loading the component");
    let mut linker = Linker::<Floor>::new(&engine);
    linker.define_unknown_imports_as_traps(&component).expect("stubbing the imports");
    let pre = linker.instantiate_pre(&component).expect("pre-instantiating");
    let tools = GuestIndices::new(&pre).expect("a corral:plugin/tools@0.3.0 export");
    // The arguments as the host hands them to the guest: one JSON string, made once here.
    let arguments = serde_json::json!({ "text": text }).to_string();
    let limits = Limits::default();
    let tokio = tokio::runtime::Builder::new_current_thread().build().expect("starting tokio");
    tokio.block_on(async {
        for _ in 0..calls {
            let mut store = Store::new(&engine, Floor { limits: StoreLimitsBuilder::new().memory_size(limits.memory as usize).build() });
            store.limiter(|floor| &mut floor.limits);
            store.set_fuel(limits.fuel).expect("fuel is on");
            store.set_epoch_deadline(1);
            let instance = pre.instantiate_async(&mut store).await.expect("instantiating");
            let result =
                tools.load(&mut store, &instance).expect("the tools export").call_call_tool(&mut store, "echo", &arguments).await.expect("calling echo");
            assert!(matches!(result.content.as_slice(), [Content::Text(t)] if *t == text), "echo answered something else");
        }
    });
}
