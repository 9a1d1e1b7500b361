//! `plugins/indexer` killed halfway and resumed: a task over a few thousand files, the
//! host SIGKILLed once the task has checkpointed, a new host on the same database. The task runs
//! again from its last checkpoint (fewer files processed the second time than in all), ends with
//! the index a clean run writes, and counts no file twice — over stdio and HTTP, on SQLite and
//! on PostgreSQL (a throwaway server the tests start; see `pg_cluster`).

mod common;
#[path = "../src/tasks/postgres/testing.rs"]
mod pg_cluster;

use std::time::{Duration, Instant};

use common::{example_dist, write_manifest, McpProcess, Transport, TIMEOUT};
use serde_json::{json, Value};

/// Files to index: "a few thousand small files".
const FILES: usize = 2000;
const TOKEN: &str = "indexer-tests-token";

struct Setup {
    transport: Transport,
    plugins: tempfile::TempDir,
    /// The files indexed, kept while the hosts read them.
    _data: tempfile::TempDir,
    out: tempfile::TempDir,
    db: tempfile::TempDir,
    postgres: Option<String>,
}

impl Setup {
    fn new(transport: Transport, postgres: Option<String>) -> Setup {
        let (plugins, data, out, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::copy(example_dist().join("indexer.wasm"), plugins.path().join("indexer.wasm")).unwrap();
        let manifest = format!(
            "resumable = true\nretries = 2\n[limits]\ncheckpoint = \"8MiB\"\n[permissions]\ndirs = [{{ host = {:?}, guest = \"/data\" }}, {{ host = {:?}, guest = \"/out\", mode = \"rw\" }}]\n",
            data.path().to_str().unwrap(),
            out.path().to_str().unwrap()
        );
        write_manifest(plugins.path(), "indexer", &manifest);
        for i in 0..FILES {
            let dir = data.path().join(format!("d{}", i % 10));
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(format!("f{i:05}.txt")), format!("file {i} words alpha{} beta{}\nsecond line gamma{}\n", i % 13, i % 17, i % 5)).unwrap();
        }
        for sub in ["clean", "crash"] {
            std::fs::create_dir(out.path().join(sub)).unwrap();
        }
        std::fs::write(db.path().join("tokens"), format!("tests {TOKEN}\n")).unwrap();
        Setup { transport, plugins, _data: data, out, db, postgres }
    }

    /// A host on the plugins and the database; over HTTP its clients hold one identity across
    /// processes (a bearer token), so the task is still theirs after the restart.
    fn start(&self) -> McpProcess {
        let plugins = self.plugins.path().to_str().unwrap().to_owned();
        let db = match &self.postgres {
            Some(url) => url.clone(),
            None => self.db.path().join("tasks.db").to_str().unwrap().to_owned(),
        };
        let tokens = self.db.path().join("tokens").to_str().unwrap().to_owned();
        let mut args = vec!["serve", "--plugins", &plugins, "--db", &db, "--host-expiry", "1s"];
        let http = self.transport == Transport::Http;
        if http {
            args.extend(["--auth-tokens-file", &tokens]);
        }
        let mut mcp = McpProcess::spawn_with(self.transport, &args);
        if http {
            mcp.set_bearer_token(TOKEN);
        }
        mcp.initialize();
        mcp
    }
}

fn index(mcp: &mut McpProcess, out: &str, pause_ms: u64) -> String {
    let created = mcp.result("tools/call", json!({ "name": "index", "arguments": { "out": out, "every": 100, "pause_ms": pause_ms }, "task": {} }));
    created["task"]["taskId"].as_str().unwrap().to_owned()
}

/// Polls `tasks/get` until `done` holds for the task.
fn wait_for(mcp: &mut McpProcess, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let task = mcp.result("tasks/get", json!({ "taskId": id }));
        if done(&task) {
            return task;
        }
        assert!(Instant::now() < deadline, "task {id}: {what} never happened: {task}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Files indexed so far, from the task's progress message ("indexed N of M files").
fn indexed(task: &Value) -> usize {
    let message = task["statusMessage"].as_str().unwrap_or("");
    message.strip_prefix("indexed ").and_then(|m| m.split(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0)
}

fn structured(mcp: &mut McpProcess, id: &str) -> Value {
    let result = mcp.result("tasks/result", json!({ "taskId": id }));
    assert_ne!(result["isError"], true, "{result}");
    result["structuredContent"].clone()
}

fn killed_halfway_the_task_resumes_from_its_checkpoint(setup: Setup) {
    let mut mcp = setup.start();
    let clean = index(&mut mcp, "/out/clean", 0);
    wait_for(&mut mcp, &clean, "the clean run's end", |t| t["status"] == "completed");
    let clean = structured(&mut mcp, &clean);
    assert_eq!((clean["files"].as_u64(), clean["resumed_at"].as_u64()), (Some(FILES as u64), Some(0)), "{clean}");

    let id = index(&mut mcp, "/out/crash", 1);
    let before = wait_for(&mut mcp, &id, "a third of the files", |t| indexed(t) >= FILES / 3);
    assert!(indexed(&before) < FILES, "the kill must come before the end: {before}");
    drop(mcp); // SIGKILL: no shutdown code runs.
    assert!(!setup.out.path().join("crash/index.json").exists(), "nothing is written before the end");

    let mut mcp = setup.start();
    let done = wait_for(&mut mcp, &id, "the resumed run's end", |t| ["completed", "failed"].contains(&t["status"].as_str().unwrap()));
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["_meta"]["corral/resumed"]["attempt"], 2, "it says which attempt: {done}");
    let checkpoint = done["_meta"]["corral/resumed"]["checkpoint"].as_u64().unwrap();
    assert!(checkpoint >= (FILES / 3 / 100) as u64, "it had checkpointed before the kill: {done}");
    let resumed = structured(&mut mcp, &id);
    let (files, this_run, at) = (resumed["files"].as_u64().unwrap(), resumed["processed_this_run"].as_u64().unwrap(), resumed["resumed_at"].as_u64().unwrap());
    assert_eq!(files, FILES as u64, "every file once, none twice: {resumed}");
    assert!(at > 0 && this_run < FILES as u64 && at + this_run == FILES as u64, "it resumed from its checkpoint, not from the start: {resumed}");
    assert_eq!(resumed["digest"], clean["digest"], "the index a clean run writes");
    assert_eq!(checkpoint, at / 100, "`_meta` names the checkpoint the run resumed from (one per 100 files), not its last: {done}");
    let (a, b) = (std::fs::read(setup.out.path().join("clean/index.json")).unwrap(), std::fs::read(setup.out.path().join("crash/index.json")).unwrap());
    assert!(a == b, "index.json is byte for byte the clean run's");
}

fn on_sqlite(t: Transport) {
    killed_halfway_the_task_resumes_from_its_checkpoint(Setup::new(t, None));
}

fn on_postgres(t: Transport) {
    if let Some(url) = pg_cluster::database_or_skip() {
        killed_halfway_the_task_resumes_from_its_checkpoint(Setup::new(t, Some(url)));
    }
}

#[test]
fn stdio_sqlite_killed_halfway_the_task_resumes_from_its_checkpoint() {
    on_sqlite(Transport::Stdio);
}

#[test]
fn http_sqlite_killed_halfway_the_task_resumes_from_its_checkpoint() {
    on_sqlite(Transport::Http);
}

#[test]
fn stdio_postgres_killed_halfway_the_task_resumes_from_its_checkpoint() {
    on_postgres(Transport::Stdio);
}

#[test]
fn http_postgres_killed_halfway_the_task_resumes_from_its_checkpoint() {
    on_postgres(Transport::Http);
}
