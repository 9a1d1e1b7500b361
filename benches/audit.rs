//! What the audit trail costs per call (see BENCHMARKS.md): the release `corral serve --http`
//! with and without `--audit-log FILE`, in one run, alternating.
//!
//! ```text
//! cargo bench --bench audit                  # 32 clients, 5 rounds of each
//! AUDIT_ROUNDS=3 AUDIT_CALLS=1000 cargo bench --bench audit
//! ```
//!
//! Each round starts a fresh host over `plugins/dist/text.wasm` (tasks in memory), warms it up,
//! then runs [`CLIENTS`] clients that each POST `AUDIT_CALLS` 2026-07-28 `tools/call`s of `echo`
//! on a keep-alive connection of their own. Server CPU is the run time of its threads
//! (`/proc/PID/task/*/schedstat`, the audit writer's included) over the measured phase, divided
//! by the calls: what a busy machine skews least. Rounds alternate plain, audited, audited,
//! plain, … so a change of load hits both alike; the figures are medians.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use serde_json::json;

const CLIENTS: usize = 32;
const WARMUP_PER_CLIENT: usize = 50;

fn main() {
    let rounds: usize = std::env::var("AUDIT_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let calls: usize = std::env::var("AUDIT_CALLS").ok().and_then(|v| v.parse().ok()).unwrap_or(2_000);
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = root.join("plugins/dist/text.wasm");
    assert!(text.exists(), "{} is missing: run scripts/build-plugins.sh", text.display());
    let work = tempfile::tempdir().unwrap();
    let plugins = work.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::copy(&text, plugins.join("text.wasm")).unwrap();

    println!("audit trail: {CLIENTS} clients × {calls} calls, {rounds} rounds of each; load average {}", load_average());
    let (mut plain, mut audited) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        // plain, audited, audited, plain, …
        let order = if round % 2 == 0 { [false, true] } else { [true, false] };
        for audit in order {
            let log = work.path().join(format!("audit-{round}.log"));
            let figures = run(env!("CARGO_BIN_EXE_corral").as_ref(), &plugins, audit.then_some(log.as_path()), calls, work.path());
            if audit {
                let lines = std::fs::read_to_string(&log).map(|t| t.lines().count()).unwrap_or(0);
                assert!(lines >= CLIENTS * calls, "the trail holds {lines} records for {} calls", CLIENTS * calls);
            }
            println!(
                "round {round} {:<8} {:>8.0} calls/s  {:>6.1} µs server CPU per call   [load {}]",
                if audit { "audited" } else { "plain" },
                figures.0,
                figures.1 * 1e6,
                load_average()
            );
            if audit {
                audited.push(figures)
            } else {
                plain.push(figures)
            }
        }
    }
    let (p_rate, p_cpu) = medians(&plain);
    let (a_rate, a_cpu) = medians(&audited);
    println!();
    println!("| {CLIENTS} clients, 2026-07-28 echo | plain | --audit-log FILE | audited / plain |");
    println!("|---|---|---|---|");
    println!("| server CPU per call (median) | {:.1} µs | {:.1} µs | {:+.1} % |", p_cpu * 1e6, a_cpu * 1e6, (a_cpu / p_cpu - 1.0) * 100.0);
    println!("| calls/s (median) | {p_rate:.0} | {a_rate:.0} | {:+.1} % |", (a_rate / p_rate - 1.0) * 100.0);
    println!("load average at end: {}", load_average());
}

/// One host's round: (calls/s, server CPU seconds per call).
fn run(corral: &Path, plugins: &Path, audit_log: Option<&Path>, calls: usize, work: &Path) -> (f64, f64) {
    let mut command = Command::new(corral);
    command.args(["serve", "--plugins"]).arg(plugins).args(["--http", "127.0.0.1:0", "--db", ":memory:", "--log-level", "info", "--cache-dir"]);
    command.arg(work.join("cache"));
    if let Some(log) = audit_log {
        command.arg("--audit-log").arg(log);
    }
    let mut child = command.env_remove("RUST_LOG").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("starting corral");
    let url = listening_url(&mut child);
    // Every client warms up (its connection, the host's compile cache and pools) first.
    clients(&url, WARMUP_PER_CLIENT);
    let (cpu0, t0) = (cpu_seconds(child.id()), Instant::now());
    clients(&url, calls);
    let (cpu, elapsed) = (cpu_seconds(child.id()) - cpu0, t0.elapsed().as_secs_f64());
    let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
    let status = child.wait().expect("waiting for corral");
    assert!(status.success(), "corral exited with {status}");
    let total = (CLIENTS * calls) as f64;
    (total / elapsed, cpu / total)
}

/// [`CLIENTS`] threads, each POSTing `calls` calls on a connection of its own.
fn clients(url: &str, calls: usize) {
    let threads: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let url = url.to_owned();
            std::thread::spawn(move || {
                let agent = ureq::Agent::config_builder().http_status_as_error(false).build().new_agent();
                for i in 0..calls {
                    let body = json!({ "jsonrpc": "2.0", "id": c * 1_000_000 + i, "method": "tools/call", "params": {
                        "name": "echo", "arguments": { "text": "hello" },
                        "_meta": {
                            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                            "io.modelcontextprotocol/clientInfo": { "name": "audit-bench", "version": "0" },
                            "io.modelcontextprotocol/clientCapabilities": {},
                        }
                    }});
                    let response = agent
                        .post(&url)
                        .header("accept", "application/json, text/event-stream")
                        .header("content-type", "application/json")
                        .header("mcp-protocol-version", "2026-07-28")
                        .header("mcp-method", "tools/call")
                        .header("mcp-name", "echo")
                        .send(body.to_string())
                        .expect("POST");
                    assert_eq!(response.status().as_u16(), 200);
                    let text = response.into_body().read_to_string().expect("reading the answer");
                    assert!(text.contains("hello"), "{text}");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("a client failed");
    }
}

/// Reads the host's stderr until it says where it listens; the rest is drained on a thread.
fn listening_url(child: &mut Child) -> String {
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = loop {
        let line = lines.next().expect("corral exited before listening").expect("reading stderr");
        if let Some((_, url)) = line.split_once("serving MCP over HTTP at ") {
            break url.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    url
}

fn medians(figures: &[(f64, f64)]) -> (f64, f64) {
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (median(figures.iter().map(|f| f.0).collect()), median(figures.iter().map(|f| f.1).collect()))
}

/// CPU time of a process's threads, in seconds (`/proc/PID/task/*/schedstat`, nanoseconds).
fn cpu_seconds(pid: u32) -> f64 {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("reading /proc/PID/task");
    let ns: u64 = tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    ns as f64 / 1e9
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" ")).unwrap_or_default()
}
