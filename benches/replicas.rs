//! Two replicas of the real binary on one PostgreSQL database, with bearer auth so a
//! client is one owner on both:
//!
//! * `cancel B → stopped on A`: a `tick` task runs on replica A; its `tasks/cancel` is sent to
//!   replica B; the time until A's worker is free again (A's `/metrics` shows no task running:
//!   the guest has stopped and the worker returned), p50 / p99 over `CANCELS` rounds.
//! * `kill → claimed`: a `tick` task runs on a fresh replica A, which is SIGKILLed; the time until
//!   the idle replica B runs it (B's `/metrics` shows it running: claimed, and — `tick` is
//!   idempotent — started again), p50 / max over `KILLS` rounds, against `--host-expiry`.
//!
//! ```text
//! URL=$(scripts/pg-cluster.sh start /tmp/pg-bench); psql "$URL" -c 'CREATE DATABASE bench_replicas'
//! CORRAL_BIN=target/release/corral CORRAL_BENCH_DB=${URL%/postgres}/bench_replicas cargo bench --bench replicas
//! ```
//!
//! The figures include the `/metrics` polling (every 2 ms; each scrape reads the store).

use std::path::Path;
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::json;

#[path = "common/http.rs"]
mod http;
use http::{Client, HttpHost};

const CANCELS: usize = 30;
const KILLS: usize = 5;
/// `--host-expiry` of every replica.
const EXPIRY: Duration = Duration::from_secs(3);
const TOKEN: &str = "bench-replicas-token";

fn main() {
    let db = std::env::var("CORRAL_BENCH_DB").expect("CORRAL_BENCH_DB=postgres://… (a database of its own; scripts/pg-cluster.sh starts a server)");
    let (bin, dist) = (http::corral_bin(), http::example_dist());
    assert!(bin.exists(), "no corral binary at {} (cargo build --release, or set CORRAL_BIN)", bin.display());
    let scratch = tempfile::tempdir().unwrap();
    let tokens = scratch.path().join("tokens");
    std::fs::write(&tokens, format!("bench {TOKEN}\n")).unwrap();
    println!("load average at start: {}", load_average());

    let b = serve(&bin, &dist, &db, &tokens);
    let cancels = {
        let a = serve(&bin, &dist, &db, &tokens);
        let (mut on_a, mut on_b) = (Client::connect_as(&a.url, Some(TOKEN)), Client::connect_as(&b.url, Some(TOKEN)));
        let mut samples = Vec::new();
        for _ in 0..CANCELS {
            let id = start_tick(&mut on_a);
            wait_running(&a, 1);
            thread::sleep(Duration::from_millis(20));
            let sent = Instant::now();
            on_b.request("tasks/cancel", json!({ "taskId": id }));
            wait_running(&a, 0);
            samples.push(sent.elapsed());
        }
        samples
    };
    let kills = {
        let mut on_b = Client::connect_as(&b.url, Some(TOKEN));
        let mut samples = Vec::new();
        for _ in 0..KILLS {
            let mut a = serve(&bin, &dist, &db, &tokens);
            let id = start_tick(&mut Client::connect_as(&a.url, Some(TOKEN)));
            wait_running(&a, 1);
            // A beat just before the kill: the expiry runs from the last one.
            thread::sleep(EXPIRY / 3);
            a.kill();
            let killed = Instant::now();
            wait_running(&b, 1);
            samples.push(killed.elapsed());
            on_b.request("tasks/cancel", json!({ "taskId": id }));
            wait_running(&b, 0);
        }
        samples
    };
    println!("load average at end: {}", load_average());
    println!();
    let (c, k) = (Stats::of(cancels), Stats::of(kills));
    println!("| figure | p50 | p99 (cancel) / max (kill) | rounds |");
    println!("|---|---|---|---|");
    println!("| cancel sent to B → guest stopped on A | {} | {} | {CANCELS} |", ms(c.p50), ms(c.p99));
    println!("| A SIGKILLed → its task claimed and running on B (--host-expiry {}s) | {} | {} | {KILLS} |", EXPIRY.as_secs(), ms(k.p50), ms(k.max));
}

fn serve(bin: &Path, dist: &Path, db: &str, tokens: &Path) -> HttpHost {
    let mut command = Command::new(bin);
    command
        .args(["serve", "--plugins"])
        .arg(dist)
        .args(["--http", "127.0.0.1:0", "--log-level", "info", "--max-running", "1", "--db", db, "--auth-tokens-file"])
        .arg(tokens)
        .args(["--host-expiry", &format!("{}s", EXPIRY.as_secs())]);
    let host = HttpHost::spawn(command, None);
    http::wait_for_tool(&host.url, Some(TOKEN), "tick");
    host
}

/// A `tick` task that would run for a quarter of an hour; its id.
fn start_tick(client: &mut Client) -> String {
    let answer = client.request("tools/call", json!({ "name": "tick", "arguments": { "count": 9000, "interval_ms": 100 }, "task": {} }));
    answer["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("not a CreateTaskResult: {answer}")).to_owned()
}

/// Polls `host`'s `/metrics` every 2 ms until it runs `n` tasks (for at most a minute).
fn wait_running(host: &HttpHost, n: i64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = host.metrics(Some(TOKEN));
        let running = text.lines().find(|l| !l.starts_with('#') && l.split_whitespace().next().is_some_and(|name| name.ends_with("tasks_running")));
        if running.and_then(|l| l.split_whitespace().nth(1)).and_then(|v| v.parse::<i64>().ok()) == Some(n) {
            return;
        }
        assert!(Instant::now() < deadline, "the host never ran {n} tasks; /metrics:\n{text}");
        thread::sleep(Duration::from_millis(2));
    }
}

struct Stats {
    p50: Duration,
    p99: Duration,
    max: Duration,
}

impl Stats {
    fn of(mut samples: Vec<Duration>) -> Stats {
        samples.sort();
        let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
        Stats { p50: at(0.5), p99: at(0.99), max: *samples.last().unwrap() }
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" ")).unwrap_or_default()
}
