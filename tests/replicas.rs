//! Three replicas of the real binary on one throwaway PostgreSQL, behind a real load balancer
//! (nginx from Debian), with bearer auth: a real MCP client (PyPI `mcp` 2.x, both eras) through
//! the balancer; a batch of 300 tasks through round robin with one replica SIGKILLed mid-batch,
//! every returned task accounted for and no non-idempotent task run twice; and a replica paused
//! past `--host-expiry` that, resumed, writes nothing over its successor.
//!
//! Runs are counted by the guest itself: `tests/guests/runlog` leaves one file per run in a
//! directory every replica grants it. nginx and PostgreSQL are found on the machine; without
//! them the test says so and skips, unless `CORRAL_REQUIRE_NGINX` / `CORRAL_REQUIRE_POSTGRES` is
//! set (as `.ci/run` does), when it fails.

mod common;
#[path = "../src/tasks/postgres/testing.rs"]
mod pg_cluster;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::client::TIMEOUT;
use common::modern_http::{agent, try_post_modern, MODERN_VERSION as VERSION};
use common::serve::{serve_command, HttpServe};
use serde_json::{json, Value};

/// The bearer token every client presents; its name (`replicas`) owns the tasks on every replica.
const TOKEN: &str = "replicas-test-token";
/// `--host-expiry`: short, so a dead replica's tasks move within seconds.
const EXPIRY: Duration = Duration::from_secs(3);
const TASKS: &str = "io.modelcontextprotocol/tasks";
/// Tasks in the batch, and how many are created before one replica is killed.
const BATCH: usize = 300;
const KILL_AFTER: usize = 100;
/// Client threads creating the batch (so at most this many creations are in flight at the kill).
const CLIENTS: usize = 6;
/// The batch's task durations, in milliseconds.
const DURATIONS: [u64; 4] = [0, 50, 200, 800];

/// One `corral serve --http` replica.
struct Replica {
    host: HttpServe,
    /// `http://127.0.0.1:PORT/mcp`.
    url: String,
    port: u16,
}

impl Replica {
    fn start(plugins: &Path, db: &str, tokens: &Path) -> Replica {
        let expiry = format!("{}s", EXPIRY.as_secs());
        let extra = ["--auth-tokens-file", tokens.to_str().unwrap(), "--host-expiry", &expiry, "--max-running", "8", "--max-tasks-per-client", "1000"];
        let host = HttpServe::spawn(serve_command(plugins, db, &extra), TIMEOUT);
        let url = host.url.clone();
        let port = url.trim_end_matches("/mcp").rsplit(':').next().unwrap().parse().unwrap();
        Replica { host, url, port }
    }

    fn stderr(&self) -> String {
        self.host.stderr.lock().unwrap().clone()
    }

    fn signal(&self, signal: &str) {
        let ok = Command::new("kill").args([&format!("-{signal}"), &self.host.child.id().to_string()]).status().unwrap();
        assert!(ok.success(), "kill -{signal}");
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        // A stopped replica is woken first; `HttpServe`'s drop then kills it.
        let _ = Command::new("kill").args(["-CONT", &self.host.child.id().to_string()]).stderr(Stdio::null()).status();
    }
}

/// nginx in front of the replicas: `round_robin` (plain, for 2026-07-28) and `by_token` (hashed
/// on the bearer token, for 2025-11-25 sessions), as `docs/deploy.md` configures them.
struct Balancer {
    child: Child,
    round_robin: String,
    by_token: String,
    _dir: tempfile::TempDir,
}

impl Balancer {
    fn start(nginx: &Path, ports: &[u16]) -> Balancer {
        let dir = tempfile::tempdir().unwrap();
        let (rr, hashed) = (free_port(), free_port());
        let servers: String = ports.iter().map(|p| format!("        server 127.0.0.1:{p} max_fails=1 fail_timeout=10s;\n")).collect();
        let location = |upstream: &str| {
            format!(
                "location /mcp {{
            proxy_pass http://{upstream};
            proxy_http_version 1.1;
            proxy_set_header Host localhost;
            proxy_set_header Connection \"\";
            proxy_buffering off;
            proxy_read_timeout 60s;
            proxy_next_upstream error timeout;
        }}"
            )
        };
        let d = dir.path().display();
        let config = format!(
            "daemon off;
master_process off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 1024; }}
http {{
    access_log off;
    client_body_temp_path {d}/body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    upstream round_robin {{
{servers}        keepalive 16;
    }}
    upstream by_token {{
        hash $http_authorization consistent;
{servers}    }}
    server {{
        listen 127.0.0.1:{rr};
        {}
    }}
    server {{
        listen 127.0.0.1:{hashed};
        {}
    }}
}}
",
            location("round_robin"),
            location("by_token")
        );
        let conf = dir.path().join("nginx.conf");
        std::fs::write(&conf, config).unwrap();
        let child = Command::new(nginx)
            .args(["-p", dir.path().to_str().unwrap(), "-e", &format!("{d}/error.log"), "-c", conf.to_str().unwrap()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + TIMEOUT;
        while std::net::TcpStream::connect(("127.0.0.1", rr)).is_err() || std::net::TcpStream::connect(("127.0.0.1", hashed)).is_err() {
            let log = std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default();
            assert!(Instant::now() < deadline, "nginx never listened:\n{log}");
            thread::sleep(Duration::from_millis(20));
        }
        Balancer { child, round_robin: format!("http://127.0.0.1:{rr}/mcp"), by_token: format!("http://127.0.0.1:{hashed}/mcp"), _dir: dir }
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// nginx on this machine, or why the test cannot run (a failure under `CORRAL_REQUIRE_NGINX`).
fn nginx() -> Option<PathBuf> {
    let found = ["/usr/sbin/nginx", "/usr/bin/nginx"].into_iter().map(PathBuf::from).find(|p| p.exists());
    if found.is_none() {
        let why = "\n*** SKIPPED: no nginx for the replica test\n*** install nginx-light (apt-get install nginx-light)\n";
        assert!(std::env::var_os("CORRAL_REQUIRE_NGINX").is_none(), "{why}");
        eprintln!("{why}");
    }
    found
}

/// A 2026-07-28 request with the headers that repeat its body and the bearer token; the
/// JSON-RPC answer (the body, or the last `data:` event of an SSE answer), or why there is none.
fn modern(agent: &ureq::Agent, url: &str, id: u64, method: &str, mut params: Value) -> Result<Value, String> {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": { "name": "replicas-test", "version": "1" },
        "io.modelcontextprotocol/clientCapabilities": { "extensions": { TASKS: {} } },
    });
    try_post_modern(agent, url, TOKEN, id, method, params)
}

/// Creates a `runlog` task; its id.
fn create(agent: &ureq::Agent, url: &str, tool: &str, label: &str, ms: u64) -> Result<String, String> {
    let answer = modern(agent, url, 1, "tools/call", json!({ "name": tool, "arguments": { "label": label, "ms": ms } }))?;
    answer["result"]["taskId"].as_str().map(str::to_owned).ok_or_else(|| format!("no task: {answer}"))
}

/// `tasks/get`: the task, with its outcome once it has ended.
fn get(agent: &ureq::Agent, url: &str, id: &str) -> Value {
    let answer = modern(agent, url, 2, "tasks/get", json!({ "taskId": id })).unwrap_or_else(|e| panic!("{e}"));
    answer.get("result").cloned().unwrap_or_else(|| panic!("tasks/get {id}: {answer}"))
}

fn is_terminal(task: &Value) -> bool {
    ["completed", "failed", "cancelled"].contains(&task["status"].as_str().unwrap_or(""))
}

/// How many times each label's task really ran (the runlog guest's files, `LABEL.N`).
fn runs(dir: &Path) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let label = name.rsplit_once('.').unwrap().0.to_owned();
        *counts.entry(label).or_default() += 1;
    }
    counts
}

/// The replicas' plugins: the Rust examples and the runlog guest, granted `runs` read-write.
fn plugins(runs: &Path) -> tempfile::TempDir {
    let dir = common::example_plugins(&["text", "ticker", "hash"]);
    std::fs::copy(common::test_guests().join("runlog.wasm"), dir.path().join("runlog.wasm")).unwrap();
    common::write_manifest(dir.path(), "runlog", &format!("[permissions]\ndirs = [{{ host = \"{}\", guest = \"/runs\", mode = \"rw\" }}]\n", runs.display()));
    dir
}

/// The interop suite's Python `mcp` 2.x, installed by `tests/interop/run.sh install`.
fn python_client() -> PathBuf {
    let interop = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop");
    let out = Command::new("bash")
        .arg(interop.join("run.sh"))
        .arg("install")
        .env("CORRAL_BIN", env!("CARGO_BIN_EXE_corral"))
        .stdin(Stdio::null())
        .output()
        .expect("running tests/interop/run.sh install");
    assert!(out.status.success(), "tests/interop/run.sh install failed:\n{}", String::from_utf8_lossy(&out.stderr));
    interop.join(".venv-mcp2/bin/python")
}

#[test]
fn three_replicas_behind_nginx_lose_no_task_and_run_none_twice_when_one_is_killed() {
    let (Some(nginx), Some(db)) = (nginx(), pg_cluster::database_or_skip()) else { return };
    let scratch = tempfile::tempdir().unwrap();
    let runs_dir = scratch.path().join("runs");
    std::fs::create_dir(&runs_dir).unwrap();
    let tokens = scratch.path().join("tokens");
    std::fs::write(&tokens, format!("replicas {TOKEN}\n")).unwrap();
    let plugins = plugins(&runs_dir);
    let mut replicas: Vec<Replica> = (0..3).map(|_| Replica::start(plugins.path(), &db, &tokens)).collect();
    let balancer = Balancer::start(&nginx, &replicas.iter().map(|r| r.port).collect::<Vec<_>>());

    // A real MCP client through the balancer, in both eras, with the bearer token.
    let python = python_client();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/python/replicas_client.py");
    let out = Command::new(&python).arg(&script).args([&balancer.round_robin, &balancer.by_token, TOKEN]).stdin(Stdio::null()).output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && report.contains(" 0 failed"), "the Python client through nginx:\n{report}{}", String::from_utf8_lossy(&out.stderr));
    eprintln!("python client: {}", report.lines().last().unwrap_or(""));

    // The batch: idempotent and not, mixed durations, through round robin; replica 0 is killed
    // once KILL_AFTER tasks exist.
    let url = balancer.round_robin.clone();
    let next = Arc::new(AtomicUsize::new(0));
    let created = Arc::new(Mutex::new(Vec::<(usize, Result<String, String>)>::new()));
    let spec = |i: usize| (if i.is_multiple_of(2) { "record" } else { "record_once" }, format!("t{i}"), DURATIONS[(i / 2) % DURATIONS.len()]);
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| {
            let (next, created, url) = (next.clone(), created.clone(), url.clone());
            thread::spawn(move || {
                let agent = agent();
                loop {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    if i >= BATCH {
                        return;
                    }
                    let (tool, label, ms) = spec(i);
                    let id = create(&agent, &url, tool, &label, ms);
                    created.lock().unwrap().push((i, id));
                }
            })
        })
        .collect();
    let deadline = Instant::now() + TIMEOUT;
    while created.lock().unwrap().len() < KILL_AFTER {
        assert!(Instant::now() < deadline, "the batch stalled before the kill");
        thread::sleep(Duration::from_millis(5));
    }
    let mut killed = replicas.remove(0);
    killed.host.child.kill().unwrap(); // SIGKILL
    let killed_at = Instant::now();
    killed.host.child.wait().unwrap();
    for client in clients {
        client.join().unwrap();
    }
    let created = std::mem::take(&mut *created.lock().unwrap());
    let refused: Vec<_> = created.iter().filter_map(|(i, r)| r.as_ref().err().map(|e| format!("t{i}: {e}"))).collect();
    assert!(refused.len() <= CLIENTS, "only creations in flight at the kill may fail ({} did): {refused:#?}", refused.len());
    let ids: Vec<(usize, String)> = created.into_iter().filter_map(|(i, r)| r.ok().map(|id| (i, id))).collect();
    assert!(ids.len() >= BATCH - CLIENTS);

    // Every returned id ends, through the balancer, within the host expiry plus the task's own
    // time of when it could (the batch's last creation, or the kill for the dead replica's).
    let agent = agent();
    let mut ended: HashMap<usize, (Value, Duration)> = HashMap::new();
    let longest = Duration::from_millis(*DURATIONS.iter().max().unwrap());
    let give_up = Instant::now() + EXPIRY + longest + Duration::from_secs(30);
    while ended.len() < ids.len() {
        for (i, id) in &ids {
            if ended.contains_key(i) {
                continue;
            }
            let task = get(&agent, &url, id);
            if is_terminal(&task) {
                ended.insert(*i, (task, killed_at.elapsed()));
            }
        }
        let open: Vec<_> = ids.iter().filter(|(i, _)| !ended.contains_key(i)).map(|(i, id)| format!("t{i} {id}")).collect();
        assert!(Instant::now() < give_up, "{} tasks never ended: {open:?}", open.len());
        thread::sleep(Duration::from_millis(100));
    }

    // None lost, none run twice where not idempotent, each outcome what its runs say.
    let counted = runs(&runs_dir);
    // The dead replica's interrupted tasks end when they are claimed: no queue, no run.
    let (mut interrupted, mut reran, mut recovered_after) = (0, 0, Duration::ZERO);
    for (i, _) in &ids {
        let (tool, label, _) = spec(*i);
        let (task, after) = &ended[i];
        let n = counted.get(&label).copied().unwrap_or(0);
        match (task["status"].as_str().unwrap(), tool) {
            ("completed", _) => {
                let text = task["result"]["content"][0]["text"].as_str().unwrap_or("");
                assert!(text.starts_with(&format!("ran /runs/{label}.")), "t{i}'s result: {task}");
                assert!(n >= 1, "t{i} completed without running");
                if tool == "record_once" {
                    assert_eq!(n, 1, "t{i} ({tool}, not idempotent) ran {n} times");
                } else if n > 1 {
                    reran += 1;
                }
            }
            ("failed", "record_once") => {
                assert_eq!(task["error"]["data"]["kind"], "interrupted", "t{i}: {task}");
                assert!(n <= 1, "t{i} (not idempotent) ran {n} times");
                interrupted += 1;
                recovered_after = recovered_after.max(*after);
            }
            (status, _) => panic!("t{i} ({tool}) ended {status}: {task}"),
        }
    }
    for (label, n) in &counted {
        let i: usize = label.strip_prefix('t').and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("an unexpected run: {label}"));
        assert!(spec(i).0 == "record" || *n <= 1, "{label} (not idempotent) ran {n} times");
    }
    eprintln!(
        "batch: {} tasks returned, {} creations cut by the kill, {interrupted} interrupted, {reran} idempotent ones run again; the last interrupted one ended {recovered_after:?} after the kill",
        ids.len(),
        refused.len()
    );
    assert!(interrupted + reran > 0, "the kill hit no running task: the test proves nothing");
    assert!(
        recovered_after <= EXPIRY + Duration::from_secs(3),
        "the dead replica's interrupted tasks ended {recovered_after:?} after the kill (host expiry {EXPIRY:?})"
    );

    // A replica paused past the host expiry (a stopped VM, a partition) has its tasks claimed;
    // resumed, with its fencing counter out of date, it writes nothing over its successor.
    let (live, late) = (&replicas[0], &replicas[1]);
    let once = create(&agent, &late.url, "record_once", "late_once", 3000).unwrap();
    let again = create(&agent, &late.url, "record", "late_again", 3000).unwrap();
    wait_for("the late replica's runs to start", || ["late_once", "late_again"].iter().all(|l| runs(&runs_dir).contains_key(*l)));
    late.signal("STOP");
    let paused_at = Instant::now();
    wait_for("the successor to claim both tasks", || {
        let once = get(&agent, &live.url, &once);
        once["status"] == "failed" && runs(&runs_dir).get("late_again") == Some(&2)
    });
    assert_eq!(get(&agent, &live.url, &once)["error"]["data"]["kind"], "interrupted");
    eprintln!("late replica: its tasks claimed {:?} after it stopped", paused_at.elapsed());
    // Resumed, its guests return at once (their time has passed) while the successor's run of
    // `late_again` still has seconds to go: the late replica's finish comes first, and is refused.
    late.signal("CONT");
    let mut task = Value::Null;
    wait_for("late_again to end", || {
        task = get(&agent, &live.url, &again);
        is_terminal(&task)
    });
    assert_eq!(task["status"], "completed", "{task}");
    let text = &task["result"]["content"][0]["text"];
    assert_eq!(text, "ran /runs/late_again.1", "the successor's run, not the late replica's: {task}\nthe late replica's log:\n{}", late.stderr());
    let once = get(&agent, &late.url, &once);
    assert_eq!((once["status"].as_str(), once["error"]["data"]["kind"].as_str()), (Some("failed"), Some("interrupted")), "{once}");
    assert_eq!(runs(&runs_dir).get("late_once"), Some(&1), "not run again");
    // It found out at its first heartbeat, stopped what it still ran of those tasks, and said so.
    wait_for("the late replica to log that it was taken for dead", || {
        late.stderr().contains("this replica was taken for dead (its heartbeat lapsed past the host expiry): stopped")
    });
    // The late replica registered again and serves.
    let after = create(&agent, &late.url, "record", "late_after", 0).unwrap();
    wait_for("a task on the resumed replica", || get(&agent, &late.url, &after)["status"] == "completed");
}

/// Polls `done` every 50 ms until it holds; panics after the test timeout naming `what`.
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(50));
    }
}
