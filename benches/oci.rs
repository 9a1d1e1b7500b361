//! Plugins from OCI registries (see BENCHMARKS.md for results).
//!
//! ```text
//! cargo bench --bench oci              # both groups
//! cargo bench --bench oci -- pull      # one group: pull | lock
//! ```
//!
//! * `pull`: `corral pull` of four example plugins from a local registry (Debian's
//!   `docker-registry` on loopback), each published signed with `corral publish`; timed from
//!   spawning the process to its exit, with `--key` (digests + signature) and without (digests).
//! * `lock`: warm start (spawn → `tools/list` answered) of `corral serve` with 20 plugins, with
//!   and without a `corral.lock` pinning all 20, runs alternating so load drifts hit both alike.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
use serde_json::{json, Value};

#[path = "../tests/common/registry.rs"]
mod registry;

#[path = "common/report.rs"]
mod report;

use report::{header, report};

const PULL_N: usize = 10;
const START_N: usize = 20;
const PLUGINS: usize = 20;

fn main() {
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let wanted = |g: &str| filter.is_empty() || filter.iter().any(|f| g.contains(f.as_str()));
    if wanted("pull") {
        pull();
    }
    if wanted("lock") {
        lock();
    }
}

fn dist(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins/dist").join(name)
}

fn corral() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_corral"));
    cmd.env("CORRAL_DB", ":memory:").env_remove("RUST_LOG").args(["--log-level", "error"]);
    cmd
}

fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn pull() {
    let registry = registry::Registry::start();
    let keys = tempfile::tempdir().unwrap();
    let key = p256::ecdsa::SigningKey::from_slice(&[5; 32]).unwrap();
    let (private, public) = (keys.path().join("cosign.key"), keys.path().join("cosign.pub"));
    std::fs::write(&private, key.to_pkcs8_pem(LineEnding::LF).unwrap().as_bytes()).unwrap();
    std::fs::write(&public, key.verifying_key().to_public_key_pem(LineEnding::LF).unwrap()).unwrap();
    header("pull: spawn `corral pull` → exit, from a loopback docker-registry");
    for name in ["text", "hash", "ticker", "slug"] {
        let reference = registry.reference(&format!("corral/{name}:1"));
        let mut publish = corral();
        publish.arg("publish").arg(dist(&format!("{name}.wasm"))).arg(&reference).arg("--sign-key").arg(&private);
        if dist(&format!("{name}.toml")).exists() {
            publish.arg("--manifest").arg(dist(&format!("{name}.toml")));
        }
        run(&mut publish);
        let size = std::fs::metadata(dist(&format!("{name}.wasm"))).unwrap().len();
        for (label, with_key) in [("digests + signature (--key)", true), ("digests only", false)] {
            let samples: Vec<Duration> = (0..PULL_N)
                .map(|_| {
                    let dir = tempfile::tempdir().unwrap();
                    let mut cmd = corral();
                    cmd.arg("pull").arg(&reference).arg("--plugins").arg(dir.path());
                    if with_key {
                        cmd.arg("--key").arg(&public);
                    }
                    let started = Instant::now();
                    run(&mut cmd);
                    started.elapsed()
                })
                .collect();
            report(&format!("{name}.wasm ({} KiB), {label}", size / 1024), samples);
        }
    }
}

fn lock() {
    let dir = tempfile::tempdir().unwrap();
    let plugins = dir.path().join("plugins");
    std::fs::create_dir(&plugins).unwrap();
    let bytes = std::fs::read(dist("text.wasm")).unwrap();
    let mut lock = corral::registry::lock::Lock::default();
    for i in 0..PLUGINS {
        let name = format!("p{i:02}");
        std::fs::write(plugins.join(format!("{name}.wasm")), &bytes).unwrap();
        std::fs::write(plugins.join(format!("{name}.toml")), format!("namespace = \"{name}\"\n")).unwrap();
        lock.set(corral::registry::lock::LockEntry {
            name: name.clone(),
            reference: format!("oci://127.0.0.1:5000/corral/{name}:1"),
            digest: corral::oci::sha256_digest(name.as_bytes()),
            wasm: corral::oci::sha256_digest(&bytes),
            key: None,
            pulled: "2026-12-01T00:00:00Z".into(),
        });
    }
    let lock_text = lock.to_text();
    let lock_path = plugins.join("corral.lock");
    let cache = dir.path().join("cache");
    header(&format!("lock: {PLUGINS} plugins (text.wasm, {} KiB each), warm cache, spawn → tools/list answered", bytes.len() / 1024));
    start_once(&plugins, &cache); // fills the cache
    let (mut without, mut with) = (Vec::new(), Vec::new());
    for _ in 0..START_N {
        let _ = std::fs::remove_file(&lock_path);
        without.push(start_once(&plugins, &cache));
        std::fs::write(&lock_path, &lock_text).unwrap();
        with.push(start_once(&plugins, &cache));
    }
    // The same p50 as `report` prints.
    let p50 = |v: &mut Vec<Duration>| {
        v.sort_unstable();
        v[v.len().div_ceil(2).max(1) - 1]
    };
    let (a, b) = (p50(&mut without.clone()), p50(&mut with.clone()));
    report("warm, no corral.lock", without);
    report("warm, corral.lock pins all 20 (each .wasm hashed)", with);
    println!("p50 cost of the lock: {:+.1} ms ({:+.1}%)", (b.as_secs_f64() - a.as_secs_f64()) * 1e3, (b.as_secs_f64() / a.as_secs_f64() - 1.0) * 100.0);
}

fn start_once(plugins: &Path, cache: &Path) -> Duration {
    let started = Instant::now();
    let mut child = corral()
        .args(["serve", "--plugins", plugins.to_str().unwrap(), "--cache-dir", cache.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    let mut answer = |id: u64| -> Value {
        loop {
            let line = lines.next().expect("corral closed stdout").unwrap();
            let v: Value = serde_json::from_str(&line).unwrap();
            if v["id"] == id {
                return v;
            }
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}),
    );
    answer(1);
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}));
    let list = answer(2);
    let took = started.elapsed();
    let tools = list["result"]["tools"].as_array().map(Vec::len).unwrap_or(0);
    assert!(tools >= PLUGINS, "every plugin loaded: {list}");
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    took
}
