//! Overload refusals under a burst: how long a `tools/call` with `task`
//! takes to be refused as overloaded while 10 000 such calls arrive at once, beside the same
//! refusal in isolation, in the same run on the same host.
//!
//! ```text
//! cargo build --release && cargo bench --bench overload
//! CORRAL_BIN=target/debug/corral cargo bench --bench overload
//! ```
//!
//! The host runs with `--max-queued 100 --max-running 2`; the queue is filled with long ticks
//! first, so every later task call is refused. `isolated`: one client, one refusal at a time.
//! `burst`: sixteen clients sending 10 000 task calls in all, as fast as they are answered.
//! The goal is a burst p99 within 2 ms: a refusal must not wait behind the store.

#[path = "common/http.rs"]
mod http;
#[path = "common/report.rs"]
mod report;

use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use http::{Client, HttpHost};

const QUEUED: usize = 100;
const ISOLATED: usize = 1_000;
const CLIENTS: usize = 16;
const BURST: usize = 10_000;

fn main() {
    let dist = http::example_dist();
    let bin = http::corral_bin();
    assert!(bin.exists(), "no corral binary at {} (cargo build --release, or set CORRAL_BIN)", bin.display());
    let host = serve_http(&bin, &dist);
    // Plugins load in the background: a call before `tick` is listed would be no task at all.
    http::wait_for_tool(&host.url, None, "tick");
    let mut filler = Client::connect(&host.url);
    for _ in 0..QUEUED + 2 {
        let created = filler.task_call();
        assert!(created["result"]["task"]["taskId"].is_string(), "filling the queue: {created}");
    }
    report::header(&format!("overload refusals, {}", bin.display()));
    let isolated: Vec<Duration> = (0..ISOLATED).map(|_| filler.refused()).collect();
    let barrier = Arc::new(Barrier::new(CLIENTS + 1));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (url, barrier) = (host.url.clone(), barrier.clone());
            thread::spawn(move || {
                let mut client = Client::connect(&url);
                barrier.wait();
                (0..BURST / CLIENTS).map(|_| client.refused()).collect::<Vec<_>>()
            })
        })
        .collect();
    barrier.wait();
    let started = Instant::now();
    let burst: Vec<Duration> = clients.into_iter().flat_map(|c| c.join().unwrap()).collect();
    let took = started.elapsed();
    let p99 = |samples: &[Duration]| {
        let mut sorted = samples.to_vec();
        sorted.sort_unstable();
        sorted[(sorted.len() * 99 / 100).min(sorted.len() - 1)]
    };
    let (p99_isolated, p99_burst) = (p99(&isolated), p99(&burst));
    report::report("refusal, isolated (1 client)", isolated);
    report::report(&format!("refusal, burst ({CLIENTS} clients, {BURST} calls)"), burst);
    println!(
        "burst: {:.0} refusals/s; p99 {:.2} ms, {:.1}× the isolated p99 ({:.2} ms)",
        BURST as f64 / took.as_secs_f64(),
        p99_burst.as_secs_f64() * 1e3,
        p99_burst.as_secs_f64() / p99_isolated.as_secs_f64(),
        p99_isolated.as_secs_f64() * 1e3
    );
}

/// `corral serve --http` on a fresh database, with a small queue; killed on drop.
fn serve_http(bin: &Path, dist: &Path) -> HttpHost {
    let db = tempfile::tempdir().unwrap();
    let mut command = Command::new(bin);
    command
        .args(["serve", "--plugins"])
        .arg(dist)
        .args(["--http", "127.0.0.1:0", "--log-level", "info", "--max-running", "2", "--max-tasks-per-client", "1000000"])
        .args(["--max-queued", &QUEUED.to_string(), "--db"])
        .arg(db.path().join("tasks.db"));
    HttpHost::spawn(command, Some(db))
}

impl Client {
    fn task_call(&mut self) -> Value {
        self.call("tools/call", json!({"name": "tick", "arguments": {"count": 10000, "interval_ms": 100}, "task": {}}))
    }

    /// One task call, which the full queue refuses; how long the answer took.
    fn refused(&mut self) -> Duration {
        let started = Instant::now();
        let answer = self.task_call();
        let took = started.elapsed();
        assert_eq!(answer["error"]["data"]["kind"], "overloaded", "the queue is full: {answer}");
        took
    }
}
