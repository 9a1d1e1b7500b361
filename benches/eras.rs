//! The two protocol eras over HTTP, in one run against one `corral serve --http` (see
//! BENCHMARKS.md):
//!
//! ```text
//! cargo bench --bench eras
//! ```
//!
//! * `calls`: `tools/call` of the conformance fixture's `greet` at 1 and 32 concurrent clients,
//!   2025-11-25 (one session per client, `Mcp-Session-Id`) against 2026-07-28 (no session, the
//!   `_meta` envelope and its headers on every POST): calls/s, p50, p99.
//! * `switch-over`: an `optional` tool (`slow_compute`, 2 s) called by a client that declares
//!   the tasks extension, with `--task-after 200ms`: time from sending the call to reading the
//!   `CreateTaskResult`, p50 and p99 (the floor is the 200 ms threshold itself).
//! * `finished tasks/get`: a 2026-07-28 `tasks/get` of a task that has ended (its outcome inlined),
//!   one client: calls/s, p50, p99.
//! * `ERAS_BASELINE=/path/to/corral` runs the HTTP groups for that binary too (say, main's
//!   release build), alternating with this one for `ERAS_ROUNDS` rounds (default 2), so both
//!   see the same machine.
//! * `cold discover` (stdio): `corral serve` over every example plugin (`plugins/dist`) with an
//!   empty compile cache, spawn → first answer, for a `server/discover` first line against an
//!   `initialize` one, interleaved (the issue's bar: discover within 50 ms of spawn while the
//!   plugins still compile). `ERAS_COLD=0` skips it.
//!
//! The fixture is `tests/guests/target/wasm32-wasip2/release/conformance.wasm` (built by the test
//! suites, or `cargo build --release --target wasm32-wasip2 --manifest-path tests/guests/Cargo.toml
//! --target-dir tests/guests/target -p conformance`).

#[path = "common/plugin_dir.rs"]
mod plugin_dir;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const WARMUP: usize = 200;
const CALLS_PER_CLIENT_1: usize = 3_000;
const CALLS_TOTAL_32: usize = 9_600;
const SWITCH_N: usize = 40;
const VERSION: &str = "2026-07-28";

struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(bin: &Path, plugins: &Path, extra: &[&str]) -> Server {
    let mut child = Command::new(bin)
        .args(["serve", "--plugins", plugins.to_str().unwrap(), "--http", "127.0.0.1:0", "--db", ":memory:"])
        .args(extra)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting corral");
    let (tx, rx) = mpsc::channel();
    let pipe = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if let Some((_, url)) = line.split_once("serving MCP over HTTP at ") {
                let _ = tx.send(url.trim().to_owned());
            }
        }
    });
    let url = rx.recv_timeout(Duration::from_secs(60)).expect("corral listens");
    Server { child, url }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(Duration::from_secs(60))).build().new_agent()
}

fn post(agent: &ureq::Agent, url: &str, headers: &[(&str, &str)], body: &Value) -> (Option<String>, Value) {
    let mut request = ureq::http::Request::builder()
        .method("POST")
        .uri(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = agent.run(request.body(body.to_string()).unwrap()).expect("POST /mcp");
    let session = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
    let text = response.into_body().read_to_string().unwrap();
    let json = text.lines().filter_map(|l| l.strip_prefix("data:")).next_back().map(str::to_owned).unwrap_or(text);
    (session, serde_json::from_str(json.trim()).expect("a JSON answer"))
}

fn envelope(capabilities: Value) -> Value {
    json!({ "io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": capabilities })
}

/// One client's way of calling `greet`.
#[derive(Clone, Copy, PartialEq)]
enum Era {
    Legacy,
    Modern,
}

/// A client of `era`, ready to call: over 2025-11-25 it has initialized its session.
fn client(url: &str, era: Era) -> impl FnMut() -> Duration {
    let agent = agent();
    let url = url.to_owned();
    let session = match era {
        Era::Modern => None,
        Era::Legacy => {
            let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": "2025-11-25", "capabilities": {} } });
            let (session, _) = post(&agent, &url, &[], &init);
            let session = session.expect("a session");
            let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
            let _ = agent.post(&url).header("mcp-session-id", &session).header("content-type", "application/json").send(initialized.to_string());
            Some(session)
        }
    };
    let mut id = 1u64;
    move || {
        id += 1;
        let mut params = json!({ "name": "greet", "arguments": { "name": "bench" } });
        let started = Instant::now();
        let (_, answer) = match &session {
            Some(session) => {
                post(&agent, &url, &[("mcp-session-id", session)], &json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }))
            }
            None => {
                params["_meta"] = envelope(json!({}));
                let headers = [("mcp-protocol-version", VERSION), ("mcp-method", "tools/call"), ("mcp-name", "greet")];
                post(&agent, &url, &headers, &json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }))
            }
        };
        let took = started.elapsed();
        assert_eq!(answer["result"]["content"][0]["text"], "Hello, bench!", "{answer}");
        took
    }
}

fn summary(name: &str, wall: Duration, mut samples: Vec<Duration>) {
    samples.sort_unstable();
    let n = samples.len();
    let pct = |q: f64| samples[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
    let ms = |d: Duration| format!("{:.3} ms", d.as_secs_f64() * 1e3);
    println!("{name:<44} {n:>6} {:>10.0} {:>12} {:>12}", n as f64 / wall.as_secs_f64(), ms(pct(0.5)), ms(pct(0.99)));
}

fn calls(url: &str) {
    for (era, label) in [(Era::Legacy, "2025-11-25"), (Era::Modern, "2026-07-28")] {
        let mut one = client(url, era);
        (0..WARMUP).for_each(|_| {
            one();
        });
        let started = Instant::now();
        let samples: Vec<Duration> = (0..CALLS_PER_CLIENT_1).map(|_| one()).collect();
        summary(&format!("tools/call {label}, 1 client"), started.elapsed(), samples);
    }
    for (era, label) in [(Era::Legacy, "2025-11-25"), (Era::Modern, "2026-07-28")] {
        let clients = 32;
        let per = CALLS_TOTAL_32 / clients;
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(clients + 1));
        let handles: Vec<_> = (0..clients)
            .map(|_| {
                let (url, barrier) = (url.to_owned(), barrier.clone());
                std::thread::spawn(move || {
                    let mut call = client(&url, era);
                    (0..WARMUP / 10).for_each(|_| {
                        call();
                    });
                    barrier.wait();
                    (0..per).map(|_| call()).collect::<Vec<_>>()
                })
            })
            .collect();
        barrier.wait();
        let started = Instant::now();
        let samples: Vec<Duration> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
        summary(&format!("tools/call {label}, 32 clients"), started.elapsed(), samples);
    }
}

fn switch_over(url: &str) {
    let agent = agent();
    let ext = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    let mut samples = Vec::new();
    let started_all = Instant::now();
    for id in 0..SWITCH_N {
        let params = json!({ "name": "slow_compute", "arguments": { "seconds": 2, "label": "bench" }, "_meta": envelope(ext.clone()) });
        let headers = [("mcp-protocol-version", VERSION), ("mcp-method", "tools/call"), ("mcp-name", "slow_compute")];
        let started = Instant::now();
        let (_, answer) = post(&agent, url, &headers, &json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }));
        samples.push(started.elapsed());
        assert_eq!(answer["result"]["resultType"], "task", "{answer}");
    }
    summary("call start -> CreateTaskResult (--task-after 200ms)", started_all.elapsed(), samples);
}

const GETS: usize = 2_000;

fn finished_get(url: &str) {
    let agent = agent();
    let ext = json!({ "extensions": { "io.modelcontextprotocol/tasks": {} } });
    // Adopted past 200 ms, done at 300 ms.
    let params = json!({ "name": "slow_compute", "arguments": { "seconds": 0.3, "label": "bench" }, "_meta": envelope(ext.clone()) });
    let headers = [("mcp-protocol-version", VERSION), ("mcp-method", "tools/call"), ("mcp-name", "slow_compute")];
    let (_, created) = post(&agent, url, &headers, &json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params }));
    let task = created["result"]["taskId"].as_str().expect("a task").to_owned();
    let headers = [("mcp-protocol-version", VERSION), ("mcp-method", "tasks/get"), ("mcp-name", task.as_str())];
    let get = |id: usize| {
        let params = json!({ "taskId": task, "_meta": envelope(ext.clone()) });
        let (_, answer) = post(&agent, url, &headers, &json!({ "jsonrpc": "2.0", "id": id, "method": "tasks/get", "params": params }));
        answer
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = get(0);
        if got["result"]["status"] == "completed" {
            break;
        }
        assert!(Instant::now() < deadline, "the task never completed: {got}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let started_all = Instant::now();
    let samples: Vec<Duration> = (0..GETS)
        .map(|id| {
            let started = Instant::now();
            let answer = get(id);
            let took = started.elapsed();
            assert_eq!(answer["result"]["result"]["content"][0]["text"], "Computed bench", "{answer}");
            took
        })
        .collect();
    summary("tasks/get 2026-07-28 of an ended task, 1 client", started_all.elapsed(), samples);
}

const COLD_RUNS: usize = 7;

/// Spawn → the answer to `first`, one cold start over copies of `plugins` (and their manifests).
fn cold_answer(plugins: &[PathBuf], first: &Value) -> Duration {
    let dir = tempfile::tempdir().unwrap();
    let plugin_dir = plugin_dir::copy_plugins(dir.path(), plugins);
    let spawned = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_corral"))
        .arg("serve")
        .arg("--plugins")
        .arg(&plugin_dir)
        .arg("--cache-dir")
        .arg(dir.path().join("cache"))
        .args(["--db", ":memory:", "--log-level", "error"])
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting corral");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{first}").unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let took = spawned.elapsed();
    assert!(line.contains("\"result\""), "no answer to {first}: {line}");
    let _ = child.kill();
    let _ = child.wait();
    took
}

/// `server/discover` and `initialize` as a cold process's first line, interleaved: medians and maxima.
fn cold_discover(root: &Path) {
    let mut plugins: Vec<PathBuf> = std::fs::read_dir(root.join("plugins/dist"))
        .expect("plugins/dist: run scripts/build-plugins.sh")
        .filter_map(|e| Some(e.ok()?.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
        .collect();
    plugins.sort();
    let discover = json!({ "jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": { "_meta": envelope(json!({})) } });
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "eras-bench", "version": "0" } } });
    let (mut d, mut i) = (Vec::new(), Vec::new());
    for _ in 0..COLD_RUNS {
        d.push(cold_answer(&plugins, &discover));
        i.push(cold_answer(&plugins, &initialize));
    }
    let stats = |mut v: Vec<Duration>| {
        v.sort_unstable();
        (v[v.len() / 2].as_secs_f64() * 1e3, v[v.len() - 1].as_secs_f64() * 1e3)
    };
    let ((dm, dx), (im, ix)) = (stats(d), stats(i));
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!();
    println!(
        "== cold start over stdio, {} plugins, empty compile cache, {COLD_RUNS} runs interleaved   [load average {}]",
        plugins.len(),
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    println!("spawn -> server/discover answered   median {dm:.1} ms, max {dx:.1} ms");
    println!("spawn -> initialize answered        median {im:.1} ms, max {ix:.1} ms   (discover / initialize {:.2}x)", dm / im);
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let fixture = root.join("tests/guests/target/wasm32-wasip2/release/conformance.wasm");
    assert!(fixture.exists(), "no {}: build the test guests first (see the module doc)", fixture.display());
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&fixture, dir.path().join("fixture.wasm")).unwrap();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("== eras over HTTP   [load average {}]", load.split_whitespace().take(3).collect::<Vec<_>>().join(" "));
    let this = PathBuf::from(env!("CARGO_BIN_EXE_corral"));
    let baseline = std::env::var_os("ERAS_BASELINE").map(PathBuf::from);
    let rounds = std::env::var("ERAS_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(2);
    let mut binaries = vec![("this build", this)];
    if let Some(baseline) = baseline {
        binaries.insert(0, ("baseline", baseline));
    }
    for round in 1..=(if binaries.len() > 1 { rounds } else { 1 }) {
        for (label, bin) in &binaries {
            println!("-- {label} ({}), round {round}", bin.display());
            println!("{:<44} {:>6} {:>10} {:>12} {:>12}", "measurement", "n", "calls/s", "p50", "p99");
            let server = start(bin, dir.path(), &["--task-after", "200ms", "--max-sessions", "64"]);
            calls(&server.url);
            switch_over(&server.url);
            finished_get(&server.url);
        }
    }
    if std::env::var("ERAS_COLD").as_deref() != Ok("0") {
        cold_discover(root);
    }
}
