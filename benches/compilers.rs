//! Cranelift against Winch: how long each takes to compile the example plugins, and how long a
//! call then runs, as ratios measured in one run (see BENCHMARKS.md, "Compilers").
//!
//! ```text
//! cargo bench --bench compilers              # every example in plugins/dist
//! cargo bench --bench compilers -- python    # one or more of: rust c js python
//! ```
//!
//! Both runtimes are the host's own (`Runtime::new`, no compile cache), one per compiler; the
//! compiles alternate between them, so a change in the machine's load touches both alike. The
//! `stats` example (Python, about 30 MB) is the one `corral dev` waits longest for.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use corral::config::Limits;
use corral::runtime::{CallContext, Compiler, EngineSettings, Runtime, RuntimeSettings, Silent};
use serde_json::json;

fn main() {
    let wanted: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let status = Command::new(root.join("scripts/build-plugins.sh")).stdout(std::process::Stdio::null()).status().expect("running scripts/build-plugins.sh");
    assert!(status.success(), "scripts/build-plugins.sh failed: {status}");
    let tokio = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    let runtime =
        |compiler| Runtime::new(RuntimeSettings { engine: EngineSettings { compiler, ..EngineSettings::default() }, ..RuntimeSettings::default() }).unwrap();
    let (cranelift, winch) = (runtime(Compiler::Cranelift), runtime(Compiler::Winch));
    let examples = [
        ("python", "stats", "describe_numbers", json!({ "numbers": [1.5, 2.5, 3.0, 10.0] }), 3),
        ("js", "slug", "slugify", json!({ "text": "Hello, World!" }), 5),
        ("rust", "text", "word_count", json!({ "text": "one two three" }), 9),
        ("c", "checksum", "crc32", json!({ "text": "hello" }), 9),
    ];
    for (lang, plugin, tool, arguments, n) in examples.into_iter().filter(|e| wanted.is_empty() || wanted.iter().any(|w| w == e.0)) {
        let bytes = std::fs::read(root.join("plugins/dist").join(format!("{plugin}.wasm"))).unwrap();
        println!("== {lang} ({plugin}, {} bytes)", bytes.len());
        let (mut c_times, mut w_times) = (Vec::new(), Vec::new());
        for _ in 0..n {
            for (runtime, times) in [(&cranelift, &mut c_times), (&winch, &mut w_times)] {
                let started = Instant::now();
                runtime.compile(plugin, &bytes).unwrap_or_else(|e| panic!("{plugin} does not compile: {e:?}"));
                times.push(started.elapsed());
            }
        }
        let (c, w) = (median(c_times), median(w_times));
        println!("  compile  cranelift p50 {:>10}  winch p50 {:>10}  cranelift/winch {:.1}x", show(c), show(w), c.as_secs_f64() / w.as_secs_f64());

        let arguments = arguments.to_string();
        let call = |runtime: &Runtime| {
            let code = runtime.compile(plugin, &bytes).unwrap();
            let run = |_| {
                let ctx = CallContext::new(Limits::default(), Arc::new(Silent));
                let started = Instant::now();
                let result = tokio.block_on(runtime.call_tool(&code, tool, &arguments, ctx)).unwrap_or_else(|f| panic!("{tool}: {f:?}"));
                assert!(!result.is_error, "{tool}: {result:?}");
                started.elapsed()
            };
            (0..20).for_each(|i| {
                run(i);
            });
            median((0..200).map(run).collect())
        };
        let (c, w) = (call(&cranelift), call(&winch));
        println!("  call     cranelift p50 {:>10}  winch p50 {:>10}  winch/cranelift {:.1}x", show(c), show(w), w.as_secs_f64() / c.as_secs_f64());
        println!("  load average {}", std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    }
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn show(d: Duration) -> String {
    match d.as_micros() {
        n if n < 10_000 => format!("{:.1} µs", d.as_nanos() as f64 / 1e3),
        n if n < 10_000_000 => format!("{:.1} ms", n as f64 / 1e3),
        _ => format!("{:.2} s", d.as_secs_f64()),
    }
}
