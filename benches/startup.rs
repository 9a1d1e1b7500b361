//! Start-up and hot-reload benchmarks (see BENCHMARKS.md for results).
//!
//! ```text
//! cargo bench --bench startup              # both groups
//! cargo bench --bench startup -- start     # one group: start | reload
//! ```
//!
//! * `start`: the real `corral serve` binary over stdio with 20 plugins, timed from spawning the
//!   process to reading the answer of `tools/list` (listing all 20 tools): with an empty compile
//!   cache, with a warm one, and with `--no-cache`. The plugins are WAT components of about the
//!   code size of the example Rust plugins, each with its own tool, so that no two share a
//!   cache entry.
//! * `reload`: `corral serve --watch` with a session open; `text.wasm` (the example Rust plugin)
//!   is replaced by a new build of itself (a different custom section each time, so the bytes
//!   and the cache key change as after a rebuild), timed from the rename that saves it to
//!   reading `notifications/tools/list_changed` on stdout.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[allow(dead_code)]
#[path = "../tests/common/fixture.rs"]
mod fixture;

use fixture::{Fixture, ToolDef};

#[path = "common/report.rs"]
mod report;

use report::{header, report};

const PLUGINS: usize = 20;
const COLD_N: usize = 5;
const WARM_N: usize = 20;
const RELOAD_N: usize = 20;

fn main() {
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let wanted = |g: &str| filter.is_empty() || filter.iter().any(|f| g.contains(f.as_str()));
    if wanted("start") {
        start();
    }
    if wanted("reload") {
        reload();
    }
}

fn corral() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_corral"));
    cmd.env("CORRAL_DB", ":memory:").env_remove("RUST_LOG").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    cmd
}

/// A plugin with one tool `tool_I` and about `kb` KiB of code in 100 functions.
fn bulky_plugin(i: usize, kb: usize) -> Vec<u8> {
    let per_func = kb * 1024 / 100 / 6;
    let mut funcs = String::new();
    for f in 0..100 {
        funcs.push_str(&format!("(func $bulk{f} (param $x i32) (result i32) local.get $x\n"));
        for k in 0..per_func {
            funcs.push_str(&format!("i32.const {} i32.add i32.const {} i32.xor\n", (i * 7919 + f * 31 + k) % 100_000, k % 977));
        }
        funcs.push_str(")\n");
    }
    Fixture::new().tool(ToolDef::new(&format!("tool_{i}")).returns_text("ok")).funcs(&funcs).build()
}

struct Session {
    child: Child,
    lines: BufReader<ChildStdout>,
}

impl Session {
    fn spawn(args: &[&str]) -> Session {
        let mut child = corral().args(args).spawn().expect("starting corral");
        let lines = BufReader::new(child.stdout.take().unwrap());
        Session { child, lines }
    }

    fn send(&mut self, message: Value) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    fn until(&mut self, pred: impl Fn(&Value) -> bool) -> Value {
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.lines.read_line(&mut line).unwrap() > 0, "corral closed stdout");
            let v: Value = serde_json::from_str(&line).unwrap();
            if pred(&v) {
                return v;
            }
        }
    }

    fn initialize(&mut self) {
        self.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}));
        self.until(|v| v["id"] == 1);
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    fn list_tools(&mut self) -> usize {
        self.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}));
        self.until(|v| v["id"] == 2)["result"]["tools"].as_array().unwrap().len()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_once(plugins: &Path, extra: &[&str]) -> Duration {
    let started = Instant::now();
    let mut args = vec!["serve", "--plugins", plugins.to_str().unwrap()];
    args.extend_from_slice(extra);
    let mut session = Session::spawn(&args);
    session.initialize();
    let tools = session.list_tools();
    let took = started.elapsed();
    assert_eq!(tools, PLUGINS, "every plugin loaded");
    took
}

fn start() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let mut total = 0;
    for i in 0..PLUGINS {
        let bytes = bulky_plugin(i, 100);
        total += bytes.len();
        std::fs::write(plugins.join(format!("p{i:02}.wasm")), bytes).unwrap();
    }
    let cache = dir.path().join("cache");
    let cache_args = ["--cache-dir", cache.to_str().unwrap()];
    header(&format!("start: {PLUGINS} plugins, {} KiB of components, spawn → tools/list answered", total / 1024));
    let cold: Vec<Duration> = (0..COLD_N)
        .map(|_| {
            let _ = std::fs::remove_dir_all(&cache);
            start_once(&plugins, &cache_args)
        })
        .collect();
    report("cold: empty compile cache", cold);
    let warm: Vec<Duration> = (0..WARM_N).map(|_| start_once(&plugins, &cache_args)).collect();
    report("warm: every plugin in the cache", warm);
    let none: Vec<Duration> = (0..COLD_N).map(|_| start_once(&plugins, &["--no-cache"])).collect();
    report("--no-cache", none);
}

/// `bytes` with a custom section appended: a valid component with a new hash.
fn with_custom_section(bytes: &[u8], payload: &str) -> Vec<u8> {
    let name = "corral-bench";
    let mut body = leb(name.len());
    body.extend_from_slice(name.as_bytes());
    body.extend_from_slice(payload.as_bytes());
    let mut out = bytes.to_vec();
    out.push(0);
    out.extend(leb(body.len()));
    out.extend(body);
    out
}

fn leb(mut n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return out;
        }
        out.push(byte | 0x80);
    }
}

fn reload() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text: PathBuf = root.join("plugins/dist/text.wasm");
    let original = std::fs::read(&text).unwrap_or_else(|e| panic!("{}: {e} (run scripts/build-plugins.sh first)", text.display()));
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let target = plugins.join("text.wasm");
    std::fs::write(&target, &original).unwrap();
    let cache = dir.path().join("cache");
    let mut session = Session::spawn(&["serve", "--watch", "--plugins", plugins.to_str().unwrap(), "--cache-dir", cache.to_str().unwrap()]);
    session.initialize();
    assert_eq!(session.list_tools(), 2);

    header(&format!("reload: text.wasm ({} KiB) saved → notifications/tools/list_changed", original.len() / 1024));
    let mut samples = Vec::new();
    for i in 0..RELOAD_N {
        let bytes = with_custom_section(&original, &format!("build {i}"));
        let tmp = plugins.join(".text.wasm.tmp");
        std::fs::write(&tmp, &bytes).unwrap();
        let saved = Instant::now();
        std::fs::rename(&tmp, &target).unwrap();
        session.until(|v| v["method"] == "notifications/tools/list_changed");
        samples.push(saved.elapsed());
        // Let the watcher settle so that each save is measured alone.
        std::thread::sleep(Duration::from_millis(300));
    }
    report("save → list_changed (debounce 100 ms + compile + list-tools)", samples);
}
