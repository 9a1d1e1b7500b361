//! What the admin console's live updates cost a host under load (see BENCHMARKS.md):
//!
//! ```text
//! cargo bench --bench console
//! ```
//!
//! Two `corral serve --http` hosts run side by side on the same plugins: one without `--admin`,
//! one with `--admin` and its console's event stream (`GET /api/events`) held open by
//! console clients: 1, then 32 in all (`CONSOLE_SSE=1,31`: the streams added before each set of
//! rounds). Each phase drives one host with
//! 32 clients calling `echo` over 2025-11-25 sessions (`CALLS` calls in all) and reads the
//! host's CPU time (`/proc/PID/stat` utime + stime) across the phase: server CPU per call. The
//! phases alternate between the hosts for `ROUNDS` rounds, so both see the same machine; the
//! figure is the median per configuration and the ratio of the medians.
//!
//! The plugin is `plugins/dist/text.wasm` (`scripts/build-plugins.sh`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const CLIENTS: usize = 32;
const ADMIN_TOKEN: &str = "bench-admin-token";

struct Server {
    child: Child,
    url: String,
    admin: Option<String>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(bin: &Path, plugins: &Path, admin_tokens: Option<&Path>) -> Server {
    let mut command = Command::new(bin);
    command.args(["serve", "--plugins", plugins.to_str().unwrap(), "--http", "127.0.0.1:0", "--db", ":memory:"]);
    if let Some(tokens) = admin_tokens {
        command.args(["--admin", "127.0.0.1:0", "--admin-tokens-file", tokens.to_str().unwrap()]);
    }
    let mut child = command.env_remove("RUST_LOG").stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("starting corral");
    let (tx, rx) = mpsc::channel();
    let pipe = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            for (marker, kind) in [("serving MCP over HTTP at ", "mcp"), ("serving the admin console at ", "admin")] {
                if let Some((_, url)) = line.split_once(marker) {
                    let _ = tx.send((kind, url.trim().trim_end_matches('/').to_owned()));
                }
            }
        }
    });
    let wanted = if admin_tokens.is_some() { 2 } else { 1 };
    let (mut url, mut admin) = (String::new(), None);
    for _ in 0..wanted {
        match rx.recv_timeout(Duration::from_secs(120)).expect("corral listens") {
            ("mcp", u) => url = u,
            (_, a) => admin = Some(a),
        }
    }
    Server { child, url, admin }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(Duration::from_secs(60))).build().new_agent()
}

fn post(agent: &ureq::Agent, url: &str, session: Option<&str>, body: &Value) -> (Option<String>, String) {
    let mut request = ureq::http::Request::builder()
        .method("POST")
        .uri(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    let response = agent.run(request.body(body.to_string()).unwrap()).expect("POST /mcp");
    let session = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
    (session, response.into_body().read_to_string().unwrap())
}

/// A client with its session, calling `echo` `n` times.
fn client(url: &str) -> impl FnMut(usize) {
    let agent = agent();
    let url = url.to_owned();
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": "2025-11-25", "capabilities": {} } });
    let session = post(&agent, &url, None, &init).0.expect("a session");
    post(&agent, &url, Some(&session), &json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    move |n| {
        for id in 0..n {
            let call = json!({ "jsonrpc": "2.0", "id": id + 1, "method": "tools/call", "params": { "name": "echo", "arguments": { "text": "bench" } } });
            let (_, text) = post(&agent, &url, Some(&session), &call);
            assert!(text.contains("\"bench\""), "{text}");
        }
    }
}

/// The host's CPU time so far, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Clock ticks per second of `/proc/PID/stat` (`CLK_TCK`: 100 on Linux).
fn ticks_per_second() -> f64 {
    100.0
}

/// One phase: 32 clients, `calls` calls in all; server CPU per call in µs, and calls/s.
fn phase(server: &Server, calls: usize) -> (f64, f64) {
    let per = calls / CLIENTS;
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(CLIENTS + 1));
    let handles: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (url, barrier) = (server.url.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut run = client(&url);
                run(20);
                barrier.wait();
                run(per);
            })
        })
        .collect();
    barrier.wait();
    let (cpu_before, started) = (cpu_ticks(server.child.id()), Instant::now());
    handles.into_iter().for_each(|h| h.join().unwrap());
    let (cpu, wall) = (cpu_ticks(server.child.id()) - cpu_before, started.elapsed());
    let n = (per * CLIENTS) as f64;
    (cpu as f64 / ticks_per_second() / n * 1e6, n / wall.as_secs_f64())
}

/// Holds `n` console event streams open on `admin` until the returned sender is dropped;
/// each reads and counts what arrives.
fn watch(admin: &str, n: usize) -> Vec<std::thread::JoinHandle<usize>> {
    (0..n)
        .map(|_| {
            let url = format!("{admin}/api/events");
            std::thread::spawn(move || {
                let request = ureq::http::Request::builder().uri(url).header("authorization", format!("Bearer {ADMIN_TOKEN}")).body(()).unwrap();
                let agent = ureq::Agent::config_builder().http_status_as_error(false).build().new_agent();
                let response = agent.run(request).expect("the event stream");
                assert_eq!(response.status().as_u16(), 200);
                BufReader::new(response.into_body().into_reader()).lines().map_while(Result::ok).filter(|l| l.starts_with("event:")).count()
            })
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let bin = std::env::var_os("CORRAL_BIN").map(PathBuf::from).unwrap_or_else(|| root.join("target/release/corral"));
    let text = root.join("plugins/dist/text.wasm");
    assert!(text.is_file(), "no {} (scripts/build-plugins.sh)", text.display());
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(5);
    let calls: usize = std::env::var("CALLS").ok().and_then(|r| r.parse().ok()).unwrap_or(12_800);
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::copy(&text, plugins.join("text.wasm")).unwrap();
    let tokens = dir.path().join("admin-tokens");
    std::fs::write(&tokens, format!("bench {ADMIN_TOKEN}\n")).unwrap();

    println!("load average: {}", std::fs::read_to_string("/proc/loadavg").unwrap().trim());
    println!("{} (32 clients, {calls} calls a phase, {rounds} rounds)", bin.display());
    let without = start(&bin, &plugins, None);
    let with = start(&bin, &plugins, Some(&tokens));
    let admin = with.admin.clone().unwrap();
    let sse: Vec<usize> = std::env::var("CONSOLE_SSE").ok().map(|v| v.split(',').map(|n| n.parse().unwrap()).collect()).unwrap_or(vec![1, 31]);
    let mut open = Vec::new();
    for &more in &sse {
        open.extend(watch(&admin, more));
        let watchers = open.len();
        // The streams are open once the host counts them; a phase's first call follows.
        std::thread::sleep(Duration::from_millis(500));
        let (mut base, mut live, mut base_rate, mut live_rate) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            let (cpu, rate) = phase(&without, calls);
            base.push(cpu);
            base_rate.push(rate);
            let (cpu, rate) = phase(&with, calls);
            live.push(cpu);
            live_rate.push(rate);
        }
        let (b, l) = (median(base.clone()), median(live.clone()));
        println!("-- {watchers} console event stream(s) open on the --admin host");
        println!("without --admin: CPU per call {b:.1} µs (runs {base:.1?}), {:.0} calls/s", median(base_rate));
        println!("with --admin:    CPU per call {l:.1} µs (runs {live:.1?}), {:.0} calls/s", median(live_rate));
        println!("ratio: {:.3}", l / b);
        // What the live updates cost with no calls at all: each host's CPU over the same idle
        // window (the producer ticks, reads the unfinished tasks, fans events out).
        let idle = Duration::from_secs(10);
        let (a0, b0) = (cpu_ticks(without.child.id()), cpu_ticks(with.child.id()));
        std::thread::sleep(idle);
        let (a1, b1) = (cpu_ticks(without.child.id()), cpu_ticks(with.child.id()));
        let per_s = |t: u64| t as f64 / ticks_per_second() / idle.as_secs_f64() * 1e3;
        println!("idle CPU: without --admin {:.2} ms/s, with --admin and the streams {:.2} ms/s", per_s(a1 - a0), per_s(b1 - b0));
    }
}
