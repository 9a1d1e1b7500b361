//! Two replicas of the real binary on one throwaway PostgreSQL, over real HTTP: what a task
//! reports reaches the session that created it even when another replica runs it (issue 14).
//!
//! The session is on replica A, whose only worker is kept busy, so the task it creates waits
//! there and replica B (idle) takes it over (load spreading). B has no session for it: the
//! progress B's guest reports goes through the store (`NOTIFY`) to A, which sends it on the
//! session's GET stream as `notifications/progress` with the request's `progressToken`, and so
//! does every status change. A's `tasks/result` wakes when B finishes, by notification: A's
//! poll interval is a minute.
//!
//! The server is found on the machine; without one the test says so and skips, unless
//! `CORRAL_REQUIRE_POSTGRES` is set (as in CI).

mod common;
#[path = "../src/tasks/postgres/testing.rs"]
mod pg_cluster;

use std::time::{Duration, Instant};

use common::{example_plugins, McpProcess, Transport, TIMEOUT};
use serde_json::{json, Value};

/// The bearer token both sessions present: its holder owns the tasks on every replica.
const TOKEN: &str = "relay-test-token";

/// A fresh database, or `None` when the test skips.
fn database() -> Option<String> {
    match pg_cluster::fresh_database() {
        Ok(url) => Some(url),
        Err(why) => {
            assert!(std::env::var_os("CORRAL_REQUIRE_POSTGRES").is_none(), "{}", pg_cluster::skip_notice(&why));
            eprintln!("{}", pg_cluster::skip_notice(&why));
            None
        }
    }
}

/// A replica serving the ticker plugin over HTTP on database `db`, with a session open.
fn replica(plugins: &str, db: &str, tokens: &str, extra: &[&str]) -> McpProcess {
    let mut args = vec!["serve", "--plugins", plugins, "--db", db, "--auth-tokens-file", tokens, "--host-expiry", "5s"];
    args.extend_from_slice(extra);
    let mut mcp = McpProcess::spawn_with(Transport::Http, &args);
    mcp.set_bearer_token(TOKEN);
    mcp.initialize();
    mcp
}

fn create(mcp: &mut McpProcess, arguments: Value, meta: Value) -> String {
    let result = mcp.result("tools/call", json!({ "name": "tick", "arguments": arguments, "task": {}, "_meta": meta }));
    result["task"]["taskId"].as_str().unwrap_or_else(|| panic!("no task: {result}")).to_owned()
}

/// The task's row: its runner and whether a worker started it.
fn stored(db: &str, id: &str) -> (String, bool) {
    let row = pg_cluster::psql(db, &format!("SELECT runner || '|' || (started_at IS NOT NULL) FROM corral_tasks WHERE id = '{id}'")).unwrap();
    let (runner, started) = row.split_once('|').unwrap_or_else(|| panic!("no row for {id}: {row:?}"));
    (runner.to_owned(), started == "true")
}

#[test]
fn a_task_run_by_another_replica_reports_progress_and_status_to_its_session_and_wakes_its_result() {
    let Some(db) = database() else { return };
    let plugins = example_plugins(&["ticker"]);
    let tokens = plugins.path().join("tokens");
    std::fs::write(&tokens, format!("relay {TOKEN}\n")).unwrap();
    let (dir, tokens) = (plugins.path().to_str().unwrap().to_owned(), tokens.to_str().unwrap().to_owned());
    let mut a = replica(&dir, &db, &tokens, &["--max-running", "1", "--task-poll-interval", "60s"]);
    let mut b = replica(&dir, &db, &tokens, &["--max-running", "2"]);

    // A's only worker ticks for a minute (cancelled at the end).
    let busy = create(&mut a, json!({ "count": 600, "interval_ms": 100 }), json!({}));
    let deadline = Instant::now() + TIMEOUT;
    while !stored(&db, &busy).1 {
        assert!(Instant::now() < deadline, "a never started its busy task");
        std::thread::sleep(Duration::from_millis(20));
    }
    let a_runner = stored(&db, &busy).0;

    // The session on A creates a task that asks for progress; it waits on A, so B takes it.
    let moved = create(&mut a, json!({ "count": 5, "interval_ms": 150 }), json!({ "progressToken": "relay-7" }));
    let waiting = a.send_request("tasks/result", json!({ "taskId": moved }));

    // A's session hears B's progress, with its own token, and the task's end.
    let mut reports: Vec<Value> = Vec::new();
    while !reports.last().is_some_and(|p| p["progress"] == json!(5.0)) {
        let note = a.wait_notification("notifications/progress", Duration::from_secs(10));
        reports.push(note["params"].clone());
    }
    let ended = loop {
        let note = a.wait_notification("notifications/tasks/status", Duration::from_secs(10));
        if note["params"]["taskId"] == json!(moved) && note["params"]["status"] != json!("working") {
            break note["params"].clone();
        }
    };
    assert_eq!(ended["status"], "completed", "{ended}");
    let (runner, _) = stored(&db, &moved);
    assert_ne!(runner, a_runner, "the task ran on b, not on a");
    assert!(reports.iter().all(|p| p["progressToken"] == json!("relay-7") && p["total"] == json!(5.0)), "{reports:#?}");
    let seen: Vec<f64> = reports.iter().map(|p| p["progress"].as_f64().unwrap()).collect();
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "progress increases: {seen:?}");
    assert_eq!(reports.last().unwrap()["message"], "tick 5/5");

    // A's tasks/result woke when B finished, long before A's minute-long poll interval.
    let result = a.wait_response(waiting, Duration::from_secs(10));
    assert_eq!(result["result"]["content"][0]["text"], "ticked 5 times", "{result}");
    // And B answers for the task too.
    assert_eq!(b.result("tasks/get", json!({ "taskId": moved }))["status"], "completed");

    assert_eq!(a.result("tasks/cancel", json!({ "taskId": busy }))["status"], "cancelled");
}
