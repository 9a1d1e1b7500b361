//! What checkpoints cost, against the real binary over HTTP:
//!
//! * `checkpoint`: the `resumable` test guest checkpoints `STEPS` times in one task, with a 1 KiB
//!   and a 64 KiB state, on SQLite (a file, `--db-sync` default) and on PostgreSQL; each
//!   `checkpoint` call is timed inside the guest (from the call to the host's answer: the state
//!   stored, with the progress message, in one fenced statement), p50 / p99. The baseline, in
//!   the same run, is the same loop as a plain call, where a checkpoint is kept for the call
//!   only: the ratio is what durability adds.
//! * `indexer`: `plugins/indexer` over `FILES` files on SQLite: a clean run checkpointing every
//!   100 files against one that never checkpoints (the checkpoints' share of a clean run), and
//!   a run SIGKILLed halfway and resumed by a new host on the same database (its total: both
//!   runs plus the restart) against the clean run.
//!
//! ```text
//! cargo build --release --target wasm32-wasip2 --manifest-path tests/guests/Cargo.toml --target-dir tests/guests/target
//! scripts/build-plugins.sh
//! CORRAL_BIN=target/release/corral cargo bench --bench checkpoint
//! ```
//!
//! PostgreSQL comes from `CORRAL_BENCH_DB` (a database of its own), or a throwaway cluster
//! started with `scripts/pg-cluster.sh` when its server binaries are installed; without either
//! the PostgreSQL rows are skipped.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

#[path = "common/http.rs"]
mod http;
use http::{Client, HttpHost};

const STEPS: u64 = 300;
const FILES: usize = 2000;
const TOKEN: &str = "bench-checkpoint-token";

fn main() {
    let bin = http::corral_bin();
    assert!(bin.exists(), "no corral binary at {} (cargo build --release, or set CORRAL_BIN)", bin.display());
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let guest = root.join("tests/guests/target/wasm32-wasip2/release/resumable.wasm");
    assert!(guest.exists(), "build the test guests first (see the header of benches/checkpoint.rs)");
    let scratch = tempfile::tempdir().unwrap();
    let tokens = scratch.path().join("tokens");
    std::fs::write(&tokens, format!("bench {TOKEN}\n")).unwrap();
    let plugins = scratch.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    std::fs::copy(&guest, plugins.join("resumable.wasm")).unwrap();
    std::fs::write(plugins.join("resumable.toml"), "resumable = true\n[limits]\ncheckpoint = \"1MiB\"\n").unwrap();
    let cluster = scratch.path().join("pg");
    let postgres = std::env::var("CORRAL_BENCH_DB").ok().or_else(|| start_cluster(&root, &cluster));

    println!("load average at start: {}", load_average());
    println!("\n== checkpoint: {STEPS} checkpoints per task, each timed in the guest (µs)");
    println!("{:<44} {:>8} {:>8} {:>8} {:>10}", "store, state", "p50", "p99", "max", "p50 ratio");
    let mut stores = vec![("SQLite file", scratch.path().join("tasks.db").to_str().unwrap().to_owned())];
    if let Some(url) = &postgres {
        stores.push(("PostgreSQL", url.clone()));
    } else {
        println!("(PostgreSQL skipped: set CORRAL_BENCH_DB or install postgresql)");
    }
    for (store, db) in &stores {
        let host = serve(&bin, &plugins, db, &tokens);
        let mut client = Client::connect_as(&host.url, Some(TOKEN));
        for bytes in [1024, 64 * 1024] {
            let baseline = timings(&client.request("tools/call", json!({ "name": "steps", "arguments": { "steps": STEPS, "bytes": bytes } }))["result"]);
            let created = client.request("tools/call", json!({ "name": "steps", "arguments": { "steps": STEPS, "bytes": bytes }, "task": {} }));
            let id = created["result"]["task"]["taskId"].as_str().unwrap().to_owned();
            let durable = timings(&client.request("tasks/result", json!({ "taskId": id }))["result"]);
            let (b, d) = (percentiles(baseline), percentiles(durable));
            let size = bytes / 1024;
            println!("{:<44} {:>8.1} {:>8.1} {:>8.1} {:>10}", format!("plain call (kept for the call), {size} KiB"), b.0, b.1, b.2, "1.0×");
            println!("{:<44} {:>8.1} {:>8.1} {:>8.1} {:>9.0}×", format!("{store} task (durable), {size} KiB"), d.0, d.1, d.2, d.0 / b.0);
        }
    }
    if postgres.is_some() && std::env::var("CORRAL_BENCH_DB").is_err() {
        let _ = Command::new("bash").arg(root.join("scripts/pg-cluster.sh")).arg("stop").arg(&cluster).status();
    }

    indexer(&bin, &http::example_dist(), scratch.path(), &tokens);
    println!("\nload average at end: {}", load_average());
}

/// The guest's `checkpoint_us` of a call result.
fn timings(result: &Value) -> Vec<f64> {
    assert_ne!(result["isError"], true, "{result}");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    text["checkpoint_us"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
}

/// p50, p99 and max.
fn percentiles(mut samples: Vec<f64>) -> (f64, f64, f64) {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((q * samples.len() as f64).ceil() as usize).clamp(1, samples.len()) - 1];
    (at(0.5), at(0.99), samples[samples.len() - 1])
}

fn serve(bin: &Path, plugins: &Path, db: &str, tokens: &Path) -> HttpHost {
    let mut command = Command::new(bin);
    command
        .args(["serve", "--http", "127.0.0.1:0", "--host-expiry", "1s", "--task-poll-interval", "20ms", "--plugins"])
        .arg(plugins)
        .args(["--db", db, "--auth-tokens-file"])
        .arg(tokens);
    let host = HttpHost::spawn(command, None);
    http::wait_for_tool(&host.url, Some(TOKEN), if plugins.join("indexer.wasm").exists() { "index" } else { "steps" });
    host
}

/// The indexer: clean with and without checkpoints, and killed halfway then resumed.
fn indexer(bin: &Path, dist: &Path, scratch: &Path, tokens: &Path) {
    let (plugins, data, out) = (scratch.join("ix-plugins"), scratch.join("ix-data"), scratch.join("ix-out"));
    for dir in [&plugins, &data, &out] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::copy(dist.join("indexer.wasm"), plugins.join("indexer.wasm")).unwrap();
    let manifest = format!(
        "resumable = true\nretries = 2\n[limits]\ncheckpoint = \"8MiB\"\n[permissions]\ndirs = [{{ host = {:?}, guest = \"/data\" }}, {{ host = {:?}, guest = \"/out\", mode = \"rw\" }}]\n",
        data.to_str().unwrap(),
        out.to_str().unwrap()
    );
    std::fs::write(plugins.join("indexer.toml"), manifest).unwrap();
    for i in 0..FILES {
        let dir = data.join(format!("d{}", i % 10));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i:05}.txt")), format!("file {i} words alpha{} beta{}\nsecond line gamma{}\n", i % 13, i % 17, i % 5)).unwrap();
    }
    let db = scratch.join("indexer.db").to_str().unwrap().to_owned();
    let run = |client: &mut Client, name: &str, every: usize| -> String {
        std::fs::create_dir_all(out.join(name)).unwrap();
        let created = client.request("tools/call", json!({ "name": "index", "arguments": { "out": format!("/out/{name}"), "every": every }, "task": {} }));
        created["result"]["task"]["taskId"].as_str().unwrap().to_owned()
    };
    let wait = |client: &mut Client, id: &str, until: &dyn Fn(&Value) -> bool| -> Value {
        loop {
            let task = client.request("tasks/get", json!({ "taskId": id }))["result"].clone();
            if until(&task) {
                return task;
            }
            thread::sleep(Duration::from_millis(5));
        }
    };
    let ended = |t: &Value| ["completed", "failed", "cancelled"].contains(&t["status"].as_str().unwrap_or(""));
    let indexed = |t: &Value| -> usize {
        let m = t["statusMessage"].as_str().unwrap_or("");
        m.strip_prefix("indexed ").and_then(|m| m.split(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0)
    };

    println!("\n== indexer: {FILES} files, SQLite file, wall time of the task (ms)   [load average {}]", load_average());
    println!("{:<60} {:>10}", "run", "ms");
    let host = serve(bin, &plugins, &db, tokens);
    let mut client = Client::connect_as(&host.url, Some(TOKEN));
    let (mut with, mut without) = (Vec::new(), Vec::new());
    for round in 0..3 {
        for (every, into) in [(100, &mut with), (FILES * 10, &mut without)] {
            let started = Instant::now();
            let id = run(&mut client, &format!("clean-{every}-{round}"), every);
            let done = wait(&mut client, &id, &ended);
            assert_eq!(done["status"], "completed", "{done}");
            into.push(started.elapsed().as_secs_f64() * 1e3);
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (with, without) = (median(with), median(without));
    println!("{:<60} {:>10.0}", "clean, no checkpoint (median of 3)", without);
    println!("{:<60} {:>10.0}", "clean, a checkpoint every 100 files (median of 3)", with);
    println!("{:<60} {:>9.1}%", "checkpoints' share of the clean run", (with - without) / with * 100.0);

    // Killed halfway: the first run until the kill, the restart, and the resumed run to its end.
    let started = Instant::now();
    let id = run(&mut client, "crash", 100);
    let before = wait(&mut client, &id, &|t| indexed(t) >= FILES / 2 || ended(t));
    assert!(!ended(&before), "the kill must come before the end: {before}");
    drop(client);
    drop(host); // SIGKILL
    let host = serve(bin, &plugins, &db, tokens);
    let mut client = Client::connect_as(&host.url, Some(TOKEN));
    let done = wait(&mut client, &id, &ended);
    let total = started.elapsed().as_secs_f64() * 1e3;
    assert_eq!(done["status"], "completed", "{done}");
    println!("{:<60} {:>10.0}", format!("killed at {} files, resumed by a new host: total", indexed(&before)), total);
    println!("{:<60} {:>9.2}×", "killed-and-resumed total / clean run", total / with);
}

/// A throwaway cluster's URL, when PostgreSQL's server binaries are installed.
fn start_cluster(root: &Path, dir: &Path) -> Option<String> {
    if !std::fs::read_dir("/usr/lib/postgresql").is_ok_and(|mut d| d.next().is_some()) {
        return None;
    }
    let out = Command::new("bash").arg(root.join("scripts/pg-cluster.sh")).arg("start").arg(dir).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg").unwrap_or_default().split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}
