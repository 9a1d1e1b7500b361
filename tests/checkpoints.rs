//! Checkpoints beyond the indexer: a 2026-07-28 call that outgrew `--task-after` and
//! was adopted as a task keeps its checkpoints durably from then on — the last one it made
//! before, too — so a host SIGKILLed afterwards resumes it from there on the same database.

mod common;

use std::time::{Duration, Instant};

use common::client::{McpProcess, Transport, TIMEOUT};
use serde_json::{json, Value};

const TASKS: &str = "io.modelcontextprotocol/tasks";
const STEPS: u64 = 16;

/// `params` in a 2026-07-28 envelope that declares the tasks extension.
fn modern(mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "checkpoints-test", "version": "1" },
        "io.modelcontextprotocol/clientCapabilities": { "extensions": { TASKS: {} } },
    });
    params
}

/// A host serving the `resumable` fixture on the database in `db`.
fn start(plugins: &tempfile::TempDir, db: &tempfile::TempDir) -> McpProcess {
    let db = db.path().join("tasks.db");
    let args = ["serve", "--plugins", plugins.path().to_str().unwrap(), "--db", db.to_str().unwrap(), "--task-after", "500ms", "--host-expiry", "1s"];
    McpProcess::spawn_with(Transport::Stdio, &args)
}

/// The step a task's progress message names ("step K of N"), 0 before the first.
fn step(task: &Value) -> u64 {
    let message = task["statusMessage"].as_str().unwrap_or("");
    message.strip_prefix("step ").and_then(|m| m.split(' ').next()).and_then(|k| k.parse().ok()).unwrap_or(0)
}

fn wait_for(mcp: &mut McpProcess, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let task = mcp.result("tasks/get", modern(json!({ "taskId": id })));
        if done(&task) {
            return task;
        }
        assert!(Instant::now() < deadline, "task {id}: {what} never happened: {task}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

#[test]
fn an_adopted_calls_checkpoints_are_durable_and_it_resumes_after_a_kill() {
    let (plugins, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::copy(common::test_guests().join("resumable.wasm"), plugins.path().join("resumable.wasm")).unwrap();
    common::write_manifest(plugins.path(), "resumable", "resumable = true\nretries = 2\n");

    let mut mcp = start(&plugins, &db);
    // 200 ms a step: two checkpoints are made while it is a plain call, the rest as a task.
    let created = mcp.result("tools/call", modern(json!({ "name": "steps", "arguments": { "steps": STEPS, "pause_ms": 200 } })));
    assert_eq!(created["resultType"], "task", "it outgrew --task-after: {created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    // Step 6 is reported only after checkpoint 5 was stored (the guest waits for each).
    let before = wait_for(&mut mcp, &id, "step 6", |t| step(t) >= 6);
    assert!(step(&before) < STEPS, "the kill must come before the end: {before}");
    drop(mcp); // SIGKILL: no shutdown code runs.

    let mut mcp = start(&plugins, &db);
    let done = wait_for(&mut mcp, &id, "the resumed run's end", |t| ["completed", "failed", "cancelled"].contains(&t["status"].as_str().unwrap()));
    assert_eq!(done["status"], "completed", "the adopted call's checkpoints outlived its host: {done}");
    let resumed = &done["_meta"]["corral/resumed"];
    assert_eq!(resumed["attempt"], 2, "{done}");
    let text = done["result"]["content"][0]["text"].as_str().unwrap();
    let result: Value = serde_json::from_str(text).unwrap();
    let (at, ran) = (result["resumed_at"].as_u64().unwrap(), result["ran"].as_u64().unwrap());
    assert!(at >= 5 && at + ran == STEPS, "it resumed from a checkpoint made as a task, every step once: {result}");
    // Each step after adoption made a checkpoint (plus the last one before it), and the run went
    // on making more: `_meta` names the one it started from, not its last.
    let checkpoint = resumed["checkpoint"].as_u64().unwrap();
    assert!(checkpoint > 0 && checkpoint <= at, "resumed from checkpoint {checkpoint} at step {at}: {done}");
}
