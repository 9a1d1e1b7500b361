//! The compare bench's `http` group: `tools/call` of `echo` over Streamable HTTP, corral against
//! the TypeScript SDK's server (`ts-http-server.mjs`), with one load generator for both.
//!
//! Both servers run **with sessions** (each client initializes its own, then sends every call
//! with its `Mcp-Session-Id`) and answer **JSON** (not SSE): corral does that for a call that
//! sends nothing before its answer, and the TS server is started with `enableJsonResponse`.
//!
//! The load generator is this process: one thread per client, each with its own keep-alive
//! connection (`ureq`), sending its next call when the last one is answered (a closed loop).
//! For each of [`CLIENTS`] the clients warm up for a while, then call for the phase's length;
//! every call is timed from its request to its parsed answer. Each run is one fresh server
//! process that goes through the three client counts; runs interleave the servers as the stdio
//! group does.

use std::process::Command;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::http::{self as common, Client, HttpHost};

/// The client counts, in the order each run goes through them.
pub const CLIENTS: [usize; 3] = [1, 8, 32];

/// Calls made before the measured phase of a client count, per client.
const WARMUP: Duration = Duration::from_millis(300);

/// One server of the group: what to start, and its label.
pub struct Server {
    /// Printed in every line and column.
    pub label: String,
    /// `corral serve --http 127.0.0.1:0 …` or `node ts-http-server.mjs`.
    pub command: Command,
}

/// What one client count gave in one run.
#[derive(Clone)]
pub struct Phase {
    calls_per_second: f64,
    p50: Duration,
    p99: Duration,
    /// Seconds of server CPU per call.
    cpu_per_call: f64,
}

/// Runs every server `rounds` × `runs` times, interleaved, and prints the table.
pub fn run(servers: &[Server], rounds: usize, runs: usize, phase: Duration) {
    println!();
    println!(
        "http group: tools/call echo over Streamable HTTP (sessions, JSON answers), {rounds} rounds × {runs} runs, {} s per client count after {} ms of warm-up, clients {CLIENTS:?}   [load average {}]",
        phase.as_secs_f64(),
        WARMUP.as_millis(),
        super::load_average()
    );
    let mut results: Vec<Vec<Vec<Phase>>> = servers.iter().map(|_| Vec::new()).collect();
    for round in 1..=rounds {
        for (server, all) in servers.iter().zip(results.iter_mut()) {
            for _ in 0..runs {
                let phases = run_once(&server.command, phase);
                for (clients, p) in CLIENTS.iter().zip(&phases) {
                    println!(
                        "round {round} {:<12} {clients:>2} clients {:>7.0} calls/s  p50 {:>7.1} µs  p99 {:>8.1} µs  cpu/call {:>6.1} µs  [load {}]",
                        server.label,
                        p.calls_per_second,
                        p.p50.as_secs_f64() * 1e6,
                        p.p99.as_secs_f64() * 1e6,
                        p.cpu_per_call * 1e6,
                        super::load_average()
                    );
                }
                all.push(phases);
            }
        }
    }
    print_table(servers, &results);
}

/// One server process through every client count.
fn run_once(command: &Command, phase: Duration) -> Vec<Phase> {
    let host = HttpHost::spawn(super::clone_command(command), None);
    common::wait_for_tool(&host.url, None, "echo");
    CLIENTS.iter().map(|&clients| measure(&host, clients, phase)).collect()
}

/// `clients` sessions calling `echo` in a closed loop: warm-up, then `phase` measured.
fn measure(host: &HttpHost, clients: usize, phase: Duration) -> Phase {
    let start = Arc::new(Barrier::new(clients + 1));
    let workers: Vec<_> = (0..clients)
        .map(|_| {
            let mut client = Client::connect(&host.url);
            let start = start.clone();
            thread::spawn(move || {
                let warm = Instant::now() + WARMUP;
                while Instant::now() < warm {
                    echo(&mut client);
                }
                start.wait();
                let end = Instant::now() + phase;
                let mut times = Vec::with_capacity(4096);
                while Instant::now() < end {
                    let sent = Instant::now();
                    echo(&mut client);
                    times.push(sent.elapsed());
                }
                times
            })
        })
        .collect();
    start.wait();
    let cpu = super::cpu_seconds(host.pid());
    let began = Instant::now();
    let mut times: Vec<Duration> = workers.into_iter().flat_map(|w| w.join().expect("a client thread")).collect();
    let elapsed = began.elapsed();
    let cpu_per_call = (super::cpu_seconds(host.pid()) - cpu) / times.len() as f64;
    times.sort_unstable();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    Phase { calls_per_second: times.len() as f64 / elapsed.as_secs_f64(), p50: at(0.50), p99: at(0.99), cpu_per_call }
}

/// One `tools/call` of `echo`, checked.
fn echo(client: &mut Client) {
    let answer: Value = client.call("tools/call", json!({"name": "echo", "arguments": {"text": super::ECHO}}));
    assert!(answer["result"]["content"][0]["text"] == super::ECHO && answer["result"]["isError"] != true, "unexpected echo answer: {answer}");
}

/// A table per figure: one row per client count, one column per server, each with its ratio
/// to the TS SDK's (or, without it, the first server's) median in the same run.
fn print_table(servers: &[Server], results: &[Vec<Vec<Phase>>]) {
    let base = servers.iter().position(|s| s.label == "ts-sdk").unwrap_or(0);
    println!();
    println!("http medians over {} runs each; (×) is the ratio to {} in the same run", results[0].len(), servers[base].label);
    type Figure = (&'static str, fn(&Phase) -> f64, fn(f64) -> String);
    let figures: [Figure; 4] = [
        ("calls/s", |p| p.calls_per_second, |v| format!("{v:.0}")),
        ("p50", |p| p.p50.as_secs_f64(), |v| format!("{:.0} µs", v * 1e6)),
        ("p99", |p| p.p99.as_secs_f64(), |v| format!("{:.0} µs", v * 1e6)),
        ("server CPU per call", |p| p.cpu_per_call, |v| format!("{:.1} µs", v * 1e6)),
    ];
    print!("| clients | figure |");
    for s in servers {
        print!(" {} |", s.label);
    }
    println!();
    println!("|---|---|{}", "---|".repeat(servers.len()));
    for (i, clients) in CLIENTS.iter().enumerate() {
        for (name, get, show) in figures {
            let med = |runs: &[Vec<Phase>]| super::median(runs.iter().map(|r| get(&r[i])).collect());
            let reference = med(&results[base]);
            print!("| {clients} | {name} |");
            for runs in results {
                let v = med(runs);
                print!(" {} ({:.2}×) |", show(v), v / reference);
            }
            println!();
        }
    }
}
