//! What each plugin language costs: build time, component size, load time and per-call time
//! (see BENCHMARKS.md, "Plugin languages").
//!
//! ```text
//! cargo bench --bench languages              # every language
//! cargo bench --bench languages -- python    # one or more of: rust c js python
//! ```
//!
//! For each example plugin (`text` in Rust, `checksum` in C, `slug` in JavaScript, `stats` in
//! Python):
//! * `build`: rebuilding it after its source changed (the toolchain already installed), timed
//!   around `plugins/NAME/build.sh` (Rust: `cargo build --release` of the crate).
//! * `size`: the component's bytes.
//! * `compile`: `Runtime::compile`, what the host does to every plugin at load when nothing is
//!   cached (cranelift compiles the whole component, then imports are linked).
//! * `cached`: what loading from an AOT cache costs instead: `Component::deserialize_file` of the
//!   `.cwasm` that `Engine::precompile_component` wrote, on an engine with the host's codegen
//!   settings (fuel, epochs). The size of that `.cwasm` is printed too.
//! * `call`: `Runtime::call_tool` of one small call, as the host runs every call: fresh store
//!   and instance from the pool, limits armed, arguments in, result out.
//!
//! Each timing is printed as n / p50 / mean, with the load average: the machine is shared.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use corral::config::Limits;
use corral::runtime::{CallContext, Runtime, RuntimeSettings, Silent};
use serde_json::{json, Value};
use wasmtime::component::Component;
use wasmtime::{Config, Engine};

struct Example {
    lang: &'static str,
    plugin: &'static str,
    /// The file whose change triggers the rebuild that `build` times.
    source: &'static str,
    tool: &'static str,
    arguments: Value,
    compiles: usize,
    calls: usize,
}

fn examples() -> Vec<Example> {
    vec![
        Example {
            lang: "rust",
            plugin: "text",
            source: "text/src/lib.rs",
            tool: "word_count",
            arguments: json!({"text": "one two three"}),
            compiles: 10,
            calls: 5_000,
        },
        Example {
            lang: "c",
            plugin: "checksum",
            source: "checksum/checksum.c",
            tool: "crc32",
            arguments: json!({"text": "one two three"}),
            compiles: 10,
            calls: 5_000,
        },
        Example { lang: "js", plugin: "slug", source: "slug/app.js", tool: "slugify", arguments: json!({"text": "one two three"}), compiles: 5, calls: 2_000 },
        Example {
            lang: "python",
            plugin: "stats",
            source: "stats/app.py",
            tool: "describe_numbers",
            arguments: json!({"numbers": [1, 2, 3]}),
            compiles: 3,
            calls: 500,
        },
    ]
}

fn main() {
    let wanted: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    build_all(root);
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let runtime = Runtime::new(RuntimeSettings::default()).unwrap();
    let engine = codegen_engine();
    for example in examples().into_iter().filter(|e| wanted.is_empty() || wanted.iter().any(|w| w == e.lang)) {
        println!("== {} ({})", example.lang, example.plugin);
        let build = time_build(root, &example);
        println!("  build (after an edit)  {:>10.2} s", build.as_secs_f64());
        let file = root.join("plugins/dist").join(format!("{}.wasm", example.plugin));
        let bytes = std::fs::read(&file).unwrap();
        println!("  size                   {:>10} bytes", bytes.len());

        let compile = sample(example.compiles, || {
            let started = Instant::now();
            runtime.compile(example.plugin, &bytes).unwrap_or_else(|_| panic!("{} does not compile", file.display()));
            started.elapsed()
        });
        report("compile (no cache)", &compile);

        let cwasm = std::env::temp_dir().join(format!("corral-bench-{}.cwasm", example.plugin));
        std::fs::write(&cwasm, engine.precompile_component(&bytes).unwrap()).unwrap();
        let cached = sample(example.compiles.max(20), || {
            let started = Instant::now();
            // SAFETY: the file was just written by `precompile_component` on this engine.
            let component = unsafe { Component::deserialize_file(&engine, &cwasm) }.unwrap();
            let elapsed = started.elapsed();
            drop(component);
            elapsed
        });
        report("load from .cwasm", &cached);
        println!("  .cwasm size            {:>10} bytes", std::fs::metadata(&cwasm).unwrap().len());
        let _ = std::fs::remove_file(&cwasm);

        let code = runtime.compile(example.plugin, &bytes).unwrap();
        let arguments = example.arguments.to_string();
        let call = |runtime: &Runtime| {
            let ctx = CallContext::new(Limits::default(), Arc::new(Silent));
            let started = Instant::now();
            let result = tokio.block_on(runtime.call_tool(&code, example.tool, &arguments, ctx)).unwrap_or_else(|f| panic!("{}: {f:?}", example.tool));
            assert!(!result.is_error, "{}: {result:?}", example.tool);
            started.elapsed()
        };
        for _ in 0..example.calls / 10 {
            call(&runtime);
        }
        report("call (fresh instance)", &sample(example.calls, || call(&runtime)));
        println!("  load average           {}", load_average());
    }
}

/// `scripts/build-plugins.sh` once, so that every plugin and toolchain is there.
fn build_all(root: &Path) {
    let status = Command::new(root.join("scripts/build-plugins.sh")).stdout(std::process::Stdio::null()).status().expect("running scripts/build-plugins.sh");
    assert!(status.success(), "scripts/build-plugins.sh failed: {status}");
}

/// Touches the example's source and times its rebuild.
fn time_build(root: &Path, example: &Example) -> Duration {
    let plugins = root.join("plugins");
    let source = plugins.join(example.source);
    let text = std::fs::read(&source).unwrap();
    std::fs::write(&source, &text).unwrap(); // a new mtime, same contents
    let mut cmd = match example.lang {
        "rust" => {
            let mut cmd = Command::new("cargo");
            cmd.args(["build", "--locked", "--release", "--target", "wasm32-wasip2", "-p", example.plugin]).current_dir(&plugins);
            cmd.env("CARGO_TARGET_DIR", std::env::var_os("PLUGINS_TARGET_DIR").map(PathBuf::from).unwrap_or(plugins.join("target")));
            cmd
        }
        _ => Command::new(plugins.join(example.plugin).join("build.sh")),
    };
    let started = Instant::now();
    let out = cmd.output().expect("running the build");
    assert!(out.status.success(), "building {} failed:\n{}", example.plugin, String::from_utf8_lossy(&out.stderr));
    let elapsed = started.elapsed();
    build_all(root); // copy the fresh component into plugins/dist
    elapsed
}

/// An engine that generates the same code as the host's (fuel and epoch checks compiled in).
fn codegen_engine() -> Engine {
    let mut config = Config::new();
    config.consume_fuel(true).epoch_interruption(true).wasm_component_model(true);
    Engine::new(&config).unwrap()
}

fn sample(n: usize, mut f: impl FnMut() -> Duration) -> Vec<Duration> {
    let mut times: Vec<Duration> = (0..n).map(|_| f()).collect();
    times.sort();
    times
}

fn report(what: &str, sorted: &[Duration]) {
    let p50 = sorted[sorted.len() / 2];
    let mean = sorted.iter().sum::<Duration>() / sorted.len() as u32;
    println!("  {what:<22} n={:<5} p50 {:>12}  mean {:>12}", sorted.len(), show(p50), show(mean));
}

fn show(d: Duration) -> String {
    match d.as_nanos() {
        n if n < 10_000 => format!("{:.2} µs", n as f64 / 1e3),
        n if n < 10_000_000 => format!("{:.1} µs", n as f64 / 1e3),
        n if n < 10_000_000_000 => format!("{:.1} ms", n as f64 / 1e6),
        n => format!("{:.2} s", n as f64 / 1e9),
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")).unwrap_or_default()
}
