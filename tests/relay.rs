//! Two replicas of the real binary on one throwaway PostgreSQL, over real HTTP: what a task
//! reports reaches the session that created it even when another replica runs it.
//!
//! The session is on replica A, whose only worker is kept busy, so the task it creates waits
//! there and replica B (idle) takes it over (load spreading). B has no session for it: the
//! progress B's guest reports goes through the store (`NOTIFY`) to A, which sends it on the
//! session's GET stream as `notifications/progress` with the request's `progressToken`, and so
//! does every status change. A's `tasks/result` wakes when B finishes, by notification: A's
//! poll interval is a minute.
//!
//! And input for a 2026-07-28 task (the tasks extension, which needs no affinity): the guest asks
//! on A, the client reads the questions on B and answers there, and A's guest goes on, woken by
//! the store's notification (again with a minute-long poll interval). Bad answers and another
//! owner's answers are refused on B exactly as on the replica that runs the guest.
//!
//! The server is found on the machine; without one the test says so and skips, unless
//! `CORRAL_REQUIRE_POSTGRES` is set (as in CI).

mod common;
#[path = "../src/tasks/postgres/testing.rs"]
mod pg_cluster;

use std::time::{Duration, Instant};

use common::modern_http::{post_modern, MODERN_VERSION as VERSION};
use common::serve::{serve_command, HttpServe};
use common::{example_plugins, input_keys, poll_task, McpProcess, Transport, TIMEOUT};
use serde_json::{json, Value};

/// The bearer token both sessions present: its holder owns the tasks on every replica.
const TOKEN: &str = "relay-test-token";

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
    let Some(db) = pg_cluster::database_or_skip() else { return };
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

const ALICE: &str = "token-alice-0123456789";
const BOB: &str = "token-bob-0123456789";

/// A 2026-07-28 POST to `base` as the holder of `token`, with the headers that repeat its body.
fn post(base: &str, token: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {}, "extensions": { "io.modelcontextprotocol/tasks": {} } },
    });
    post_modern(base, token, 1, method, params)
}

/// `tasks/get` of `id` on `base` until `done` holds.
fn poll(base: &str, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    poll_task(|| post(base, ALICE, "tasks/get", json!({ "taskId": id }))["result"].clone(), what, done)
}

fn accept(name: Value) -> Value {
    json!({ "action": "accept", "content": { "name": name } })
}

/// Two replicas A (with `a_args`) and B on `db` serving the `mrtr` guest, with tokens for alice and
/// bob; the directory holds the plugin and the tokens for as long as the replicas run.
fn mrtr_replicas(db: &str, a_args: &[&str]) -> (tempfile::TempDir, HttpServe, HttpServe) {
    let plugins = tempfile::tempdir().unwrap();
    std::fs::copy(common::test_guests().join("mrtr.wasm"), plugins.path().join("mrtr.wasm")).unwrap();
    let tokens = plugins.path().join("tokens");
    std::fs::write(&tokens, format!("alice {ALICE}\nbob {BOB}\n")).unwrap();
    let tokens = tokens.to_str().unwrap();
    let start = |extra: &[&str]| {
        let mut args = vec!["--auth-tokens-file", tokens, "--host-expiry", "5s"];
        args.extend_from_slice(extra);
        HttpServe::spawn(serve_command(plugins.path(), db, &args), Duration::from_secs(60))
    };
    let (a, b) = (start(a_args), start(&[]));
    (plugins, a, b)
}

#[test]
fn a_task_asks_on_one_replica_and_is_answered_on_another() {
    let Some(db) = pg_cluster::database_or_skip() else { return };
    // A runs the guest and polls only once a minute: only a notification wakes it within the test.
    let (_plugins, mut a, mut b) = mrtr_replicas(&db, &["--task-poll-interval", "60s"]);
    let (on_a, on_b) = (a.url.strip_suffix("/mcp").unwrap().to_owned(), b.url.strip_suffix("/mcp").unwrap().to_owned());

    let created = post(&on_a, ALICE, "tools/call", json!({ "name": "multi_input", "arguments": {} }));
    let id = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
    // B shows the questions A's guest waits for.
    let waiting = poll(&on_b, &id, "asking on b", |t| input_keys(t).len() == 2);
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    assert_eq!(waiting["inputRequests"]["first"]["params"]["message"], "First question", "{waiting}");

    // On B: an answer that does not fit its form, and another owner's answer, deliver nothing.
    let bad = post(&on_b, ALICE, "tasks/update", json!({ "taskId": id, "inputResponses": { "first": accept(json!(5)) } }));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(bad["error"]["message"].as_str().unwrap().starts_with("inputResponses.first does not answer its request"), "{bad}");
    let foreign = post(&on_b, BOB, "tasks/update", json!({ "taskId": id, "inputResponses": { "first": accept(json!("Eve")) } }));
    assert_eq!(foreign["error"]["code"], -32602, "{foreign}");
    assert_eq!(post(&on_b, BOB, "tasks/get", json!({ "taskId": id }))["error"]["code"], -32602);
    assert_eq!(input_keys(&poll(&on_a, &id, "asking on a", |t| t["status"] == "input_required")), ["first", "second"], "nothing was delivered");

    // One of two (and a key nobody asked for) on B: both replicas then wait for the other only.
    let ack = post(&on_b, ALICE, "tasks/update", json!({ "taskId": id, "inputResponses": { "first": accept(json!("Ada")), "extra": {} } }));
    assert!(ack.get("result").is_some(), "{ack}");
    assert_eq!(input_keys(&poll(&on_b, &id, "first answered, on b", |_| true)), ["second"]);
    poll(&on_a, &id, "first answered, on a", |t| input_keys(t) == ["second"]);

    let answered_at = Instant::now();
    post(&on_b, ALICE, "tasks/update", json!({ "taskId": id, "inputResponses": { "second": accept(json!("Bo")) } }));
    let done = poll(&on_a, &id, "completed", |t| t["status"] == "completed");
    assert_eq!(done["result"]["content"][0]["text"], "Answers: Ada and Bo", "{done}");
    assert!(answered_at.elapsed() < Duration::from_secs(10), "a's guest woke by notification, not its poll: {:?}", answered_at.elapsed());
    // An answer to a question no longer outstanding is ignored.
    let late = post(&on_b, ALICE, "tasks/update", json!({ "taskId": id, "inputResponses": { "second": accept(json!("Cy")) } }));
    assert!(late.get("result").is_some(), "{late}");
    assert_eq!(poll(&on_b, &id, "completed on b", |t| t["status"] == "completed")["result"]["content"][0]["text"], "Answers: Ada and Bo");

    for host in [&mut a, &mut b] {
        let _ = host.child.kill();
        let _ = host.child.wait();
    }
}

/// Load spreading moves a 2026-07-28 task to the replica that did not admit it, which has no
/// requestor for it: the guest still asks there, for what the creating request declared (kept
/// with the task), and the answer given to the admitting replica reaches it.
#[test]
fn a_task_moved_to_another_replica_asks_there_and_is_answered_on_the_first() {
    let Some(db) = pg_cluster::database_or_skip() else { return };
    // A has one worker, kept busy by a task that waits for its answers.
    let (_plugins, mut a, mut b) = mrtr_replicas(&db, &["--max-running", "1"]);
    let (on_a, on_b) = (a.url.strip_suffix("/mcp").unwrap().to_owned(), b.url.strip_suffix("/mcp").unwrap().to_owned());
    let call = |base: &str| {
        let created = post(base, ALICE, "tools/call", json!({ "name": "multi_input", "arguments": {} }));
        created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned()
    };
    let busy = call(&on_a);
    poll(&on_a, &busy, "busy asking on a", |t| input_keys(t).len() == 2);
    let a_runner = stored(&db, &busy).0;

    let moved = call(&on_a);
    let waiting = poll(&on_a, &moved, "the moved task asking, seen on a", |t| input_keys(t).len() == 2);
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    let (runner, started) = stored(&db, &moved);
    assert!(started && runner != a_runner, "the task runs on b, not on a: {runner} vs {a_runner}");

    let ack =
        post(&on_a, ALICE, "tasks/update", json!({ "taskId": moved, "inputResponses": { "first": accept(json!("Ada")), "second": accept(json!("Bo")) } }));
    assert!(ack.get("result").is_some(), "{ack}");
    let done = poll(&on_b, &moved, "completed", |t| t["status"] == "completed");
    assert_eq!(done["result"]["content"][0]["text"], "Answers: Ada and Bo", "{done}");

    post(&on_a, ALICE, "tasks/cancel", json!({ "taskId": busy }));
    for host in [&mut a, &mut b] {
        let _ = host.child.kill();
        let _ = host.child.wait();
    }
}
