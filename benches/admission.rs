//! Task admission and the stdio round trip through the real binary, for two builds side by side.
//!
//! ```text
//! cargo build --release && cargo bench --bench admission
//! CORRAL_BASELINE=/path/to/old/corral cargo bench --bench admission   # before / after in one run
//! ```
//!
//! Each build is measured in turn, `ROUNDS` times interleaved, and each figure is the median of
//! its rounds, so a neighbour's load lands on both builds alike. Per build and round:
//!
//! * `admit ×1`: one HTTP session creating tasks (`ticker.tick`, one tick) back to back;
//!   latency of each `tools/call` with `task` (POST to answer), p50 / p99, and admissions/s.
//! * `admit ×16`: sixteen sessions doing the same at once: p50 / p99 and admissions/s in all.
//! * `ping under ×16`: a seventeenth session sending `ping` meanwhile: p50 / p99. A store call
//!   that blocks a tokio worker shows here, since the ping waits for a free worker.
//! * `stdio echo`: `tools/call` of `echo` over stdio, one at a time: p50 / p99.
//!
//! `CORRAL_BIN` names the build under test (default `target/release/corral`); the example
//! plugins must be built (`scripts/build-plugins.sh`).
//!
//! `CORRAL_BENCH_DB=postgres://…` keeps the tasks in that PostgreSQL database instead of a fresh
//! SQLite file, and `CORRAL_BENCH_REPLICAS=N` starts N hosts on it: the sixteen sessions of
//! `admit ×16` are spread over them round robin (`scripts/pg-cluster.sh` starts a server).
//! `CORRAL_BENCH_MAX_QUEUED=N` runs the hosts with `--max-queued N` instead of 100 000 (which
//! lets the waiting set grow all run): refusals are counted, not timed.
//! `CORRAL_BASELINE_DB` gives the baseline a database of its own: a newer build migrates the
//! schema past what an older one accepts, so the two cannot share one.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;

#[path = "common/http.rs"]
mod http;
use http::{Client, HttpHost};

const ROUNDS: usize = 3;
/// Admissions refused as overloaded, with `CORRAL_BENCH_MAX_QUEUED` set.
static REFUSED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
const ADMIT_ONE: usize = 1_000;
const ADMIT_EACH: usize = 300;
const CLIENTS: usize = 16;
const STDIO_WARMUP: usize = 500;
const STDIO_N: usize = 5_000;

fn main() {
    let dist = http::example_dist();
    let mut builds = vec![("after", http::corral_bin(), std::env::var_os("CORRAL_BENCH_DB"))];
    if let Ok(baseline) = std::env::var("CORRAL_BASELINE") {
        let db = std::env::var_os("CORRAL_BASELINE_DB").or_else(|| std::env::var_os("CORRAL_BENCH_DB"));
        builds.insert(0, ("before", PathBuf::from(baseline), db));
    }
    for (_, bin, _) in &builds {
        assert!(bin.exists(), "no corral binary at {} (cargo build --release, or set CORRAL_BIN)", bin.display());
    }
    println!("load average at start: {}", load_average());
    let mut results: Vec<Vec<Figures>> = vec![Vec::new(); builds.len()];
    for round in 0..ROUNDS {
        for (i, (label, bin, db)) in builds.iter().enumerate() {
            let figures = measure(bin, &dist, db.as_deref());
            println!("round {} {label}: {} (refused as overloaded so far: {})", round + 1, figures.line(), REFUSED.load(Ordering::Relaxed));
            results[i].push(figures);
        }
    }
    println!("load average at end: {}", load_average());
    println!();
    println!("| build | admit ×1 p50 / p99 | admit ×1 /s | admit ×16 p50 / p99 | admit ×16 /s | ping under ×16 p50 / p99 | stdio echo p50 / p99 |");
    println!("|---|---|---|---|---|---|---|");
    for (i, (label, _, _)) in builds.iter().enumerate() {
        println!("| {label} | {} |", Figures::median(&results[i]).cells());
    }
}

#[derive(Clone, Default)]
struct Figures {
    one: Stats,
    one_rate: f64,
    many: Stats,
    many_rate: f64,
    ping: Stats,
    echo: Stats,
}

#[derive(Clone, Copy, Default)]
struct Stats {
    p50: Duration,
    p99: Duration,
}

impl Stats {
    fn of(mut samples: Vec<Duration>) -> Stats {
        assert!(!samples.is_empty(), "no samples");
        samples.sort();
        let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
        Stats { p50: at(0.50), p99: at(0.99) }
    }

    fn show(&self) -> String {
        format!("{} / {}", micros(self.p50), micros(self.p99))
    }
}

impl Figures {
    fn median(all: &[Figures]) -> Figures {
        let mid = |mut v: Vec<f64>| {
            v.sort_by(|a, b| a.total_cmp(b));
            v[v.len() / 2]
        };
        let stat = |f: fn(&Figures) -> Stats| Stats {
            p50: Duration::from_secs_f64(mid(all.iter().map(|x| f(x).p50.as_secs_f64()).collect())),
            p99: Duration::from_secs_f64(mid(all.iter().map(|x| f(x).p99.as_secs_f64()).collect())),
        };
        Figures {
            one: stat(|f| f.one),
            one_rate: mid(all.iter().map(|f| f.one_rate).collect()),
            many: stat(|f| f.many),
            many_rate: mid(all.iter().map(|f| f.many_rate).collect()),
            ping: stat(|f| f.ping),
            echo: stat(|f| f.echo),
        }
    }

    fn cells(&self) -> String {
        format!("{} | {:.0} | {} | {:.0} | {} | {}", self.one.show(), self.one_rate, self.many.show(), self.many_rate, self.ping.show(), self.echo.show())
    }

    fn line(&self) -> String {
        format!(
            "admit×1 {} ({:.0}/s), admit×16 {} ({:.0}/s), ping {}, echo {}",
            self.one.show(),
            self.one_rate,
            self.many.show(),
            self.many_rate,
            self.ping.show(),
            self.echo.show()
        )
    }
}

fn micros(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")).unwrap_or_default()
}

fn measure(bin: &Path, dist: &Path, db: Option<&OsStr>) -> Figures {
    let replicas = std::env::var("CORRAL_BENCH_REPLICAS").ok().and_then(|n| n.parse().ok()).unwrap_or(1usize).max(1);
    let servers: Vec<HttpHost> = (0..replicas).map(|_| serve_http(bin, dist, db)).collect();
    let urls: Vec<String> = servers.iter().map(|s| s.url.clone()).collect();
    for url in &urls {
        http::wait_for_tool(url, None, "tick");
    }
    let (one, one_rate) = admit_sequentially(&urls[0]);
    let (many, many_rate, ping) = admit_concurrently(&urls);
    drop(servers);
    let echo = stdio_echo(bin, dist);
    Figures { one, one_rate, many, many_rate, ping, echo }
}

/// `corral serve --http` on a fresh database file (or `db`), stopped on drop.
fn serve_http(bin: &Path, dist: &Path, db_url: Option<&OsStr>) -> HttpHost {
    let db = tempfile::tempdir().unwrap();
    let mut command = Command::new(bin);
    command
        .args(["serve", "--plugins"])
        .arg(dist)
        .args(["--http", "127.0.0.1:0", "--log-level", "info", "--max-tasks-per-client", "100000", "--max-queued"])
        .arg(std::env::var_os("CORRAL_BENCH_MAX_QUEUED").unwrap_or_else(|| "100000".into()))
        .arg("--db")
        .arg(db_url.map_or_else(|| db.path().join("tasks.db").into_os_string(), OsStr::to_owned));
    HttpHost::spawn(command, Some(db))
}

impl Client {
    /// The time to a `CreateTaskResult`, or `None` when the host refused the task as
    /// overloaded (only with `CORRAL_BENCH_MAX_QUEUED`: counted in [`REFUSED`], not timed).
    fn admit(&mut self) -> Option<Duration> {
        let start = Instant::now();
        let answer = self.call("tools/call", json!({"name": "tick", "arguments": {"count": 1, "interval_ms": 0}, "task": {}}));
        let took = start.elapsed();
        if answer["error"]["message"].as_str().is_some_and(|m| m.contains("overloaded")) && std::env::var_os("CORRAL_BENCH_MAX_QUEUED").is_some() {
            REFUSED.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        assert!(answer["result"]["task"]["taskId"].is_string(), "not a CreateTaskResult: {answer}");
        Some(took)
    }
}

fn admit_sequentially(url: &str) -> (Stats, f64) {
    let mut client = Client::connect(url);
    let start = Instant::now();
    let samples: Vec<Duration> = (0..ADMIT_ONE).filter_map(|_| client.admit()).collect();
    let rate = samples.len() as f64 / start.elapsed().as_secs_f64();
    (Stats::of(samples), rate)
}

fn admit_concurrently(urls: &[String]) -> (Stats, f64, Stats) {
    let url = &urls[0];
    let barrier = Arc::new(Barrier::new(CLIENTS + 2));
    let done = Arc::new(AtomicBool::new(false));
    let admitters: Vec<_> = (0..CLIENTS)
        .map(|i| {
            let (url, barrier) = (urls[i % urls.len()].clone(), barrier.clone());
            thread::spawn(move || {
                let mut client = Client::connect(&url);
                barrier.wait();
                (0..ADMIT_EACH).filter_map(|_| client.admit()).collect::<Vec<_>>()
            })
        })
        .collect();
    let pinger = {
        let (url, barrier, done) = (url.to_owned(), barrier.clone(), done.clone());
        thread::spawn(move || {
            let mut client = Client::connect(&url);
            barrier.wait();
            let mut samples = Vec::new();
            while !done.load(Ordering::Relaxed) {
                let start = Instant::now();
                client.request("ping", json!({}));
                samples.push(start.elapsed());
                thread::sleep(Duration::from_millis(1));
            }
            samples
        })
    };
    barrier.wait();
    let start = Instant::now();
    let samples: Vec<Duration> = admitters.into_iter().flat_map(|t| t.join().unwrap()).collect();
    let rate = samples.len() as f64 / start.elapsed().as_secs_f64();
    done.store(true, Ordering::Relaxed);
    let pings = pinger.join().unwrap();
    (Stats::of(samples), rate, Stats::of(pings))
}

fn stdio_echo(bin: &Path, dist: &Path) -> Stats {
    let mut child = Command::new(bin)
        .args(["serve", "--plugins"])
        .arg(dist)
        .args(["--log-level", "warn", "--db", ":memory:"])
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let mut send = |text: &str| {
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}});
    send(&init.to_string());
    stdout.read_line(&mut line).unwrap();
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let text = "x".repeat(100);
    let mut samples = Vec::with_capacity(STDIO_N);
    for i in 0..STDIO_WARMUP + STDIO_N {
        let request = format!(r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{text}"}}}}}}"#, i + 1);
        let start = Instant::now();
        send(&request);
        line.clear();
        stdout.read_line(&mut line).unwrap();
        if i >= STDIO_WARMUP {
            samples.push(start.elapsed());
        }
        assert!(line.contains(&text), "echo did not answer: {line}");
    }
    let _ = child.kill();
    let _ = child.wait();
    Stats::of(samples)
}
