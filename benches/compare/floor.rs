//! The floor of a call in corral: the same component's `echo`, called in a fresh instance per
//! call under the host's own engine (`corral::runtime::build_engine`, the same pool and limits)
//! and loaded through its compile cache, with no MCP, no JSON-RPC and no WASI context.
//!
//! Each call gets what corral gives each call and nothing else: a fresh store, fuel, an epoch
//! deadline, a memory cap, a fresh instance of the pre-linked component, and the typed
//! `call-tool` that lifts the result into Rust values (type-checked on the first call only, as
//! in corral). Every import is a trap (the `echo` tool
//! calls none), so the instance has as many imports as in corral. What corral spends beyond
//! this is its protocol, its transport and its per-call host state.
//!
//! `compare --floor TEXT_WASM CACHE_DIR CALLS TEXT_BYTES`: loads, then makes `CALLS` calls of
//! `echo` with a text of `TEXT_BYTES`, checking each answer, and exits. Run under callgrind by
//! the `instructions` group; two call counts differenced give the cost of one call.

use std::path::Path;

use corral::config::Limits;
use corral::runtime::{build_engine, CallResult, CompileCache, Content, EngineSettings};
use wasmtime::component::{Linker, TypedFunc};
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
    let tools = component.get_export_index(None, "corral:plugin/tools@0.3.0").expect("a corral:plugin/tools@0.3.0 export");
    let call_tool = component.get_export_index(Some(&tools), "call-tool").expect("a call-tool export");
    // The arguments as the host hands them to the guest: one JSON string, made once here.
    let arguments = serde_json::json!({ "text": text }).to_string();
    let limits = Limits::default();
    let tokio = tokio::runtime::Builder::new_current_thread().build().expect("starting tokio");
    tokio.block_on(async {
        // As corral calls `call-tool`: its type checked in the first instance only.
        let mut checked = false;
        for _ in 0..calls {
            let mut store = Store::new(&engine, Floor { limits: StoreLimitsBuilder::new().memory_size(limits.memory as usize).build() });
            store.limiter(|floor| &mut floor.limits);
            store.set_fuel(limits.fuel).expect("fuel is on");
            store.set_epoch_deadline(1);
            let instance = pre.instantiate_async(&mut store).await.expect("instantiating");
            let func = instance.get_func(&mut store, call_tool).expect("the call-tool export");
            let typed: TypedFunc<(&str, &str), (CallResult,)> = if checked {
                // SAFETY: the same export of the same component, whose type the first call checked.
                unsafe { TypedFunc::new_unchecked(func) }
            } else {
                checked = true;
                func.typed(&store).expect("call-tool's type")
            };
            let (result,) = typed.call_async(&mut store, ("echo", &arguments)).await.expect("calling echo");
            assert!(matches!(result.content.as_slice(), [Content::Text(t)] if *t == text), "echo answered something else");
        }
    });
}
