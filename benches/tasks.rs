//! Task engine figures: admission latency and throughput on the durable SQLite store, memory
//! with 10 000 finished tasks kept, and cancel latency of a spinning task.
//!
//!     cargo bench --bench tasks              # all groups
//!     cargo bench --bench tasks -- admission # one group: admission | throughput | memory | cancel

#[path = "../tests/common/fixture.rs"]
#[allow(dead_code)]
mod fixture;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use corral::config::Limits;
use corral::registry::{load_dir, LoadSettings, Registry};
use corral::runtime::{Runtime, RuntimeSettings};
use corral::server::ToolRunner;
use corral::tasks::{Admission, Durability, Engine, Runners, SqliteStore, TaskSettings};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn main() {
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wants = |name: &str| filter.as_deref().is_none_or(|f| name.contains(f));
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    rt.block_on(async {
        if wants("admission") {
            admission_latency().await;
        }
        if wants("throughput") {
            admission_throughput().await;
        }
        if wants("memory") {
            memory_with_finished_tasks().await;
        }
        if wants("cancel") {
            cancel_latency().await;
        }
    });
}

struct Setup {
    engine: Engine,
    runtime: Arc<Runtime>,
    _plugins: tempfile::TempDir,
    _db: tempfile::TempDir,
}

/// An engine on a fresh database file, serving `ticker` and a spinning fixture. The groups that
/// admit thousands of tasks raise the per-client cap with the queue's: they measure admission,
/// not the cap (which refuses whenever the workers fall behind one client).
async fn setup(settings: TaskSettings) -> Setup {
    let plugins = tempfile::tempdir().unwrap();
    let dist = example_dist();
    std::fs::copy(dist.join("ticker.wasm"), plugins.path().join("ticker.wasm")).unwrap();
    let spin = fixture::Fixture::new().tool(fixture::ToolDef::new("spin").task_support(fixture::TaskSupport::Optional).body("(loop $l (br $l)) unreachable"));
    std::fs::write(plugins.path().join("spin.wasm"), spin.build()).unwrap();
    let runtime = Arc::new(Runtime::new(RuntimeSettings::default()).unwrap());
    let load = LoadSettings { defaults: Limits::default(), memory_ceiling: 1 << 30, protected: Vec::new() };
    let catalog = load_dir(plugins.path(), &runtime, &load).await.unwrap();
    let registry = Arc::new(Registry::new(catalog));
    let db = tempfile::tempdir().unwrap();
    let path = db.path().join("tasks.db");
    let store = Arc::new(SqliteStore::open(&path, Durability::Process).unwrap());
    let runner = Arc::new(ToolRunner::new(registry, runtime.clone(), Default::default()));
    let engine = Engine::start(store, Runners::register(&path).unwrap(), settings, runner, runtime.waker(), CancellationToken::new()).await.unwrap();
    Setup { engine, runtime, _plugins: plugins, _db: db }
}

fn tick(owner: &str) -> Admission {
    Admission {
        owner: owner.into(),
        tool: "tick".into(),
        plugin: Some("ticker".into()),
        arguments: json!({ "count": 1, "interval_ms": 0 }),
        requested_ttl_ms: None,
        progress_token: None,
        idempotency_key: None,
        launch: corral::tasks::Launch::Queue,
        events: None,
        client_capabilities: None,
        owner_cap: None,
        trace_context: None,
    }
}

async fn wait_idle(engine: &Engine) {
    while engine.counts().queued + engine.counts().running > 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// One client admitting tasks back to back: each admission is a durable insert.
async fn admission_latency() {
    let s = setup(TaskSettings { max_queued: 100_000, max_per_owner: 100_000, ..TaskSettings::default() }).await;
    let n = 5_000;
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        s.engine.admit(tick("bench")).await.unwrap();
        samples.push(start.elapsed());
    }
    report("admission latency, one client (durable insert + enqueue)", &mut samples);
    wait_idle(&s.engine).await;
}

/// Several clients admitting at once; group commit lets them share commits.
async fn admission_throughput() {
    let s = Arc::new(setup(TaskSettings { max_queued: 1_000_000, max_per_owner: 1_000_000, ..TaskSettings::default() }).await);
    for clients in [1usize, 4, 16] {
        let duration = Duration::from_secs(3);
        let start = Instant::now();
        let mut clients_done = Vec::new();
        for c in 0..clients {
            let s = s.clone();
            clients_done.push(tokio::spawn(async move {
                let mut count = 0u64;
                let mut samples = Vec::new();
                while start.elapsed() < duration {
                    let t = Instant::now();
                    s.engine.admit(tick(&format!("client-{c}"))).await.unwrap();
                    samples.push(t.elapsed());
                    count += 1;
                }
                (count, samples)
            }));
        }
        let mut total = 0;
        let mut all = Vec::new();
        for client in clients_done {
            let (count, samples) = client.await.unwrap();
            total += count;
            all.extend(samples);
        }
        let secs = start.elapsed().as_secs_f64();
        println!("sustained admissions, {clients:>2} clients: {:>8.0} tasks/s ({total} in {secs:.1} s)", total as f64 / secs);
        report(&format!("  admission latency with {clients} clients"), &mut all);
        wait_idle(&s.engine).await;
    }
}

/// Resident memory after 10 000 tasks have finished and are kept for their TTL.
async fn memory_with_finished_tasks() {
    let before = rss_kib();
    let s = setup(TaskSettings { max_queued: 100_000, max_per_owner: 100_000, ..TaskSettings::default() }).await;
    let loaded = rss_kib();
    for _ in 0..10_000 {
        s.engine.admit(tick("bench")).await.unwrap();
    }
    wait_idle(&s.engine).await;
    let after = rss_kib();
    println!("RSS: process start {} MiB, engine + plugins loaded {} MiB, with 10 000 finished tasks {} MiB", before / 1024, loaded / 1024, after / 1024);
}

/// `tasks/cancel` of a spinning guest: from the call until the guest is no longer running
/// (watched from another thread), and until `cancel` returns (it also commits `cancelled`).
async fn cancel_latency() {
    let s = setup(TaskSettings { max_running: 1, ..TaskSettings::default() }).await;
    let (mut stopped, mut replied) = (Vec::new(), Vec::new());
    for _ in 0..300 {
        let mut spin = tick("bench");
        spin.tool = "spin".into();
        spin.arguments = json!({});
        let task = s.engine.admit(spin).await.unwrap();
        while s.runtime.active_calls() == 0 {
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
        let runtime = s.runtime.clone();
        let start = Instant::now();
        let watcher = std::thread::spawn(move || {
            // Sleep between looks: on two cores a spinning watcher would starve the host.
            while runtime.active_calls() > 0 {
                std::thread::sleep(Duration::from_micros(20));
            }
            start.elapsed()
        });
        s.engine.cancel("bench", &task.id).await.unwrap();
        replied.push(start.elapsed());
        stopped.push(watcher.join().unwrap());
        while s.engine.counts().running > 0 {
            tokio::time::sleep(Duration::from_micros(50)).await;
        }
    }
    report("tasks/cancel of a spinning task -> guest stopped (epoch tick 1 ms)", &mut stopped);
    report("tasks/cancel of a spinning task -> cancel answered (incl. durable commit)", &mut replied);
}

fn report(what: &str, samples: &mut [Duration]) {
    samples.sort();
    let pct = |p: f64| samples[((samples.len() as f64 * p) as usize).min(samples.len() - 1)];
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    println!("{what}: n={} p50={:?} p99={:?} max={:?} mean={:?}", samples.len(), pct(0.50), pct(0.99), samples[samples.len() - 1], mean);
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.split_whitespace().next()?.parse().ok()).unwrap_or(0)
}

fn example_dist() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dist = root.join("plugins/dist");
    if !dist.join("ticker.wasm").exists() {
        let ok = std::process::Command::new("bash").arg(root.join("scripts/build-plugins.sh")).status().map(|s| s.success()).unwrap_or(false);
        assert!(ok, "scripts/build-plugins.sh failed");
    }
    dist
}
