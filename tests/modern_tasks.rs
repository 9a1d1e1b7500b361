//! The tasks extension beyond create and poll, against the real binary and the conformance
//! fixture, over stdio and HTTP: `notifications/tasks` pushed on a `subscriptions/listen` that
//! names `taskIds` (only this owner's tasks; another owner's is refused like an unknown one),
//! an `optional` call adopted as a task running on under the task's limits, the bounds on what
//! listens watch, and a task creation (or an adopted `optional` call) retried with its
//! idempotency key.

mod common;

use std::time::Duration;

use common::client::{McpProcess, Transport, TIMEOUT};
use serde_json::{json, Value};
use tempfile::TempDir;

const TASKS: &str = "io.modelcontextprotocol/tasks";
const SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";

/// The fixture, with `manifest` beside it when given.
fn plugins(manifest: Option<&str>) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(common::test_guests().join("conformance.wasm"), dir.path().join("fixture.wasm")).unwrap();
    if let Some(toml) = manifest {
        common::write_manifest(dir.path(), "fixture", toml);
    }
    dir
}

/// `params` with a 2026-07-28 envelope declaring `capabilities`.
fn modern(mut params: Value, capabilities: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { "name": "modern-tasks-test", "version": "1" },
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    params
}

fn tasks_ext() -> Value {
    json!({ "extensions": { TASKS: {} } })
}

fn serve(transport: Transport, dir: &TempDir, extra: &[&str]) -> McpProcess {
    let mut args = vec!["serve", "--plugins", dir.path().to_str().unwrap(), "--task-poll-interval", "50ms"];
    args.extend_from_slice(extra);
    McpProcess::spawn_with(transport, &args)
}

/// A `slow_compute` of `seconds` that outgrows `--task-after`: its task id.
fn slow_task(mcp: &mut McpProcess, seconds: f64, label: &str) -> String {
    let created = mcp.result("tools/call", modern(json!({ "name": "slow_compute", "arguments": { "seconds": seconds, "label": label } }), tasks_ext()));
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().unwrap().to_owned()
}

/// The next `notifications/tasks` for `task`.
fn next_status(mcp: &mut McpProcess, task: &str) -> Value {
    let pushed = mcp.wait_notification("notifications/tasks", TIMEOUT);
    assert_eq!(pushed["params"]["taskId"], task, "{pushed}");
    pushed["params"].clone()
}

fn listen_pushes_the_listed_tasks_status_tagged_with_the_subscription(transport: Transport) {
    let dir = plugins(None);
    let mut mcp = serve(transport, &dir, &["--task-after", "100ms"]);
    let task = slow_task(&mut mcp, 1.5, "watched");

    // Without the extension declared, taskIds are refused.
    let refused = mcp.request("subscriptions/listen", modern(json!({ "notifications": { "taskIds": [task] } }), json!({})));
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert_eq!(refused["error"]["data"]["requiredCapabilities"], tasks_ext(), "{refused}");

    let listen = mcp.send_request("subscriptions/listen", modern(json!({ "notifications": { "taskIds": [task] } }), tasks_ext()));
    let ack = mcp.wait_notification("notifications/subscriptions/acknowledged", TIMEOUT);
    assert_eq!(ack["params"]["notifications"], json!({ "taskIds": [task] }), "{ack}");
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION], listen, "{ack}");

    // The state now, then its end, each a DetailedTask as tasks/get reads it.
    let first = next_status(&mut mcp, &task);
    assert_eq!((first["status"].as_str(), first["_meta"][SUBSCRIPTION].as_u64()), (Some("working"), Some(listen)), "{first}");
    assert!(first.get("resultType").is_none(), "a notification is no result: {first}");
    let last = next_status(&mut mcp, &task);
    assert_eq!(last["status"], "completed", "{last}");
    assert_eq!(last["result"]["content"][0]["text"], "Computed watched", "the outcome is inlined: {last}");
    assert_eq!(last["_meta"][SUBSCRIPTION], listen, "{last}");
    let got = mcp.result("tasks/get", modern(json!({ "taskId": task }), tasks_ext()));
    assert_eq!((got["status"].clone(), got["result"].clone()), (last["status"].clone(), last["result"].clone()), "the same as tasks/get");

    // An id that is no task of this owner: -32602 naming it, before any acknowledgement.
    let unknown = mcp.request("subscriptions/listen", modern(json!({ "notifications": { "taskIds": [task, "no-such-task"] } }), tasks_ext()));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert!(unknown["error"]["message"].as_str().unwrap().contains("`no-such-task`"), "{unknown}");
}

#[test]
fn stdio_listen_pushes_the_listed_tasks_status_tagged_with_the_subscription() {
    listen_pushes_the_listed_tasks_status_tagged_with_the_subscription(Transport::Stdio);
}

#[test]
fn http_listen_pushes_the_listed_tasks_status_tagged_with_the_subscription() {
    listen_pushes_the_listed_tasks_status_tagged_with_the_subscription(Transport::Http);
}

#[test]
fn http_modern_requests_are_counted_by_era_and_method_beside_legacy_ones() {
    let dir = plugins(None);
    let mut mcp = serve(Transport::Http, &dir, &[]);
    for _ in 0..2 {
        mcp.result("tools/call", modern(json!({ "name": "greet", "arguments": { "name": "metrics" } }), json!({})));
    }
    mcp.result("server/discover", modern(json!({}), json!({})));
    mcp.initialize();
    mcp.call_tool("greet", json!({ "name": "legacy" }));
    let metrics_url = mcp.http_url().unwrap().replace("/mcp", "/metrics");
    let metrics = ureq::get(&metrics_url).call().unwrap().into_body().read_to_string().unwrap();
    for line in [
        r#"corral_requests_total{era="2026-07-28",method="tools/call"} 2"#,
        r#"corral_requests_total{era="2026-07-28",method="server/discover"} 1"#,
        r#"corral_requests_total{era="2025-11-25",method="tools/call"} 1"#,
    ] {
        assert!(metrics.lines().any(|l| l == line), "no `{line}` in\n{metrics}");
    }
}

#[test]
fn http_a_listen_naming_another_owners_task_is_refused_like_an_unknown_one() {
    let dir = plugins(None);
    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tokens.path(), "alice tokenA\nbob tokenB\n").unwrap();
    let args = ["--task-after", "100ms", "--auth-tokens-file", tokens.path().to_str().unwrap()];
    // One client of the host, speaking as alice or as bob by the token it sends: requests of
    // this era are stateless, so nothing else tells them apart.
    let mut mcp = serve(Transport::Http, &dir, &args);
    mcp.set_bearer_token("tokenA");
    let task = slow_task(&mut mcp, 5.0, "alice's");

    mcp.set_bearer_token("tokenB");
    let foreign = mcp.request("subscriptions/listen", modern(json!({ "notifications": { "taskIds": [task] } }), tasks_ext()));
    let unknown = mcp.request("subscriptions/listen", modern(json!({ "notifications": { "taskIds": ["no-such-task"] } }), tasks_ext()));
    assert_eq!(foreign["error"]["code"], -32602, "{foreign}");
    let message = |m: &Value| m["error"]["message"].as_str().unwrap().replace(&task, "ID").replace("no-such-task", "ID");
    assert_eq!(message(&foreign), message(&unknown), "nothing tells a foreign task from an unknown one");
    let got = mcp.request("tasks/get", modern(json!({ "taskId": task }), tasks_ext()));
    assert_eq!(got["error"]["code"], -32602, "tasks/get says the same: {got}");

    // Alice may listen to it.
    mcp.set_bearer_token("tokenA");
    mcp.send_request("subscriptions/listen", modern(json!({ "notifications": { "taskIds": [task] } }), tasks_ext()));
    mcp.wait_notification("notifications/subscriptions/acknowledged", TIMEOUT);
    assert_eq!(next_status(&mut mcp, &task)["status"], "working");
}

#[test]
fn stdio_a_listen_naming_a_task_of_the_other_era_is_refused() {
    let dir = plugins(None);
    let db = tempfile::tempdir().unwrap();
    let db = db.path().join("tasks.db");
    // A 2025-11-25 task, on the same store, created by a legacy client.
    let mut legacy = serve(Transport::Stdio, &dir, &["--db", db.to_str().unwrap()]);
    legacy.initialize();
    let created = legacy.result("tools/call", json!({ "name": "slow_compute", "arguments": { "seconds": 5, "label": "legacy" }, "task": {} }));
    let task = created["task"]["taskId"].as_str().unwrap().to_owned();

    let mut other = serve(Transport::Stdio, &dir, &["--db", db.to_str().unwrap()]);
    let refused = other.request("subscriptions/listen", modern(json!({ "notifications": { "taskIds": [task] } }), tasks_ext()));
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains(&format!("`{task}`")), "{refused}");
}

fn an_adopted_call_runs_on_under_the_tasks_timeout(transport: Transport) {
    // A plain call may run 1 s; a task 30 s; an optional call becomes a task after 200 ms.
    let dir = plugins(Some("[limits]\ntimeout = \"1s\"\ntask-timeout = \"30s\"\ntask-after = \"200ms\"\n"));
    let mut mcp = serve(transport, &dir, &[]);
    // Longer than the plain timeout, shorter than the task's.
    let task = slow_task(&mut mcp, 2.0, "adopted");
    let deadline = std::time::Instant::now() + TIMEOUT;
    let done = loop {
        let got = mcp.result("tasks/get", modern(json!({ "taskId": task }), tasks_ext()));
        if got["status"] != "working" {
            break got;
        }
        assert!(std::time::Instant::now() < deadline, "the task never ended: {got}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(done["status"], "completed", "the plain call's 1 s no longer applies once adopted: {done}");
    assert_eq!(done["result"]["content"][0]["text"], "Computed adopted", "{done}");

    // Without the extension the same call is a plain call, and the plain limit stops it.
    let plain = mcp.result("tools/call", modern(json!({ "name": "slow_compute", "arguments": { "seconds": 2.0, "label": "plain" } }), json!({})));
    assert_eq!(plain["isError"], true, "{plain}");
    assert_eq!(plain["_meta"]["corral/error"]["kind"], "timeout", "{plain}");
}

#[test]
fn stdio_an_adopted_call_runs_on_under_the_tasks_timeout() {
    an_adopted_call_runs_on_under_the_tasks_timeout(Transport::Stdio);
}

#[test]
fn http_an_adopted_call_runs_on_under_the_tasks_timeout() {
    an_adopted_call_runs_on_under_the_tasks_timeout(Transport::Http);
}

/// A guest that computes forever without calling the host: only its cancel handle (or a limit)
/// stops it.
const SPIN: &str = "(loop $l (br $l)) unreachable";
/// Fuel no spinning guest uses up within the tests' time.
const HUGE_FUEL: &str = "1000000000000000";

/// Beside the fixture, two spinning tools: `hold` (always a task) and `spin` (optional: a task
/// once it outgrows `--task-after`).
fn spinners() -> TempDir {
    let dir = plugins(None);
    let spinners = common::Fixture::new()
        .tool(common::ToolDef::new("hold").task_support(common::TaskSupport::Required).body(SPIN))
        .tool(common::ToolDef::new("spin").task_support(common::TaskSupport::Optional).body(SPIN));
    common::write_plugin(dir.path(), "spinners", &spinners.build());
    dir
}

/// The CPU time (user + system) the process has used, in seconds.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    let ticks: f64 = fields[11].parse::<f64>().unwrap() + fields[12].parse::<f64>().unwrap();
    ticks / 100.0
}

/// Waits until the host stops computing: its CPU time over a window of a quarter second is
/// under a fifth of that window. Fails after `within`, which a test keeps well short of any
/// limit that would stop a spinning guest on its own.
fn wait_idle(mcp: &McpProcess, within: Duration) {
    let window = Duration::from_millis(250);
    let deadline = std::time::Instant::now() + within;
    loop {
        let (before, started) = (cpu_seconds(mcp.pid()), std::time::Instant::now());
        std::thread::sleep(window);
        let share = (cpu_seconds(mcp.pid()) - before) / started.elapsed().as_secs_f64();
        if share < 0.2 {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "the host still computes {within:?} after both tasks were cancelled ({:.0} % of a core)", share * 100.0);
    }
}

/// A `required` task holding the only worker (`--max-running 1`): its task id.
fn busy_worker(mcp: &mut McpProcess) -> String {
    let held = mcp.result("tools/call", modern(json!({ "name": "hold", "arguments": {} }), tasks_ext()));
    assert_eq!(held["resultType"], "task", "{held}");
    held["taskId"].as_str().unwrap().to_owned()
}

/// Polls `tasks/get` until `task` is no longer `working`.
fn ended(mcp: &mut McpProcess, task: &str) -> Value {
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        let got = mcp.result("tasks/get", modern(json!({ "taskId": task }), tasks_ext()));
        if got["status"] != "working" {
            return got;
        }
        assert!(std::time::Instant::now() < deadline, "the task never ended: {got}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn a_cancelled_adopted_call_stops_its_guest_while_the_workers_are_busy(transport: Transport) {
    let dir = spinners();
    let mut mcp = serve(transport, &dir, &["--max-running", "1", "--task-after", "200ms", "--fuel", HUGE_FUEL]);
    let held = busy_worker(&mut mcp);
    let created = mcp.result("tools/call", modern(json!({ "name": "spin", "arguments": {} }), tasks_ext()));
    assert_eq!(created["resultType"], "task", "a spinning optional call becomes a task: {created}");
    let spinning = created["taskId"].as_str().unwrap().to_owned();

    mcp.result("tasks/cancel", modern(json!({ "taskId": spinning }), tasks_ext()));
    assert_eq!(mcp.result("tasks/get", modern(json!({ "taskId": spinning }), tasks_ext()))["status"], "cancelled");
    // The worker's task too: then nothing may compute any more.
    mcp.result("tasks/cancel", modern(json!({ "taskId": held }), tasks_ext()));
    assert_eq!(ended(&mut mcp, &held)["status"], "cancelled");
    // A guest still spinning keeps a core busy until the plain call's 30 s timeout.
    wait_idle(&mcp, Duration::from_secs(10));
}

#[test]
fn stdio_a_cancelled_adopted_call_stops_its_guest_while_the_workers_are_busy() {
    a_cancelled_adopted_call_stops_its_guest_while_the_workers_are_busy(Transport::Stdio);
}

#[test]
fn http_a_cancelled_adopted_call_stops_its_guest_while_the_workers_are_busy() {
    a_cancelled_adopted_call_stops_its_guest_while_the_workers_are_busy(Transport::Http);
}

fn an_adopted_call_ends_at_once_beside_a_busy_worker(transport: Transport) {
    let dir = spinners();
    let mut mcp = serve(transport, &dir, &["--max-running", "1", "--task-after", "200ms", "--fuel", HUGE_FUEL]);
    let held = busy_worker(&mut mcp);
    // Adopted past 200 ms, done after 1 s: not held back by `--max-running` (README, "Tasks").
    let adopted = slow_task(&mut mcp, 1.0, "beside");
    let done = ended(&mut mcp, &adopted);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "Computed beside", "{done}");
    let still = mcp.result("tasks/get", modern(json!({ "taskId": held }), tasks_ext()));
    assert_eq!(still["status"], "working", "the worker's task still holds the worker: {still}");
    mcp.result("tasks/cancel", modern(json!({ "taskId": held }), tasks_ext()));
}

#[test]
fn stdio_an_adopted_call_ends_at_once_beside_a_busy_worker() {
    an_adopted_call_ends_at_once_beside_a_busy_worker(Transport::Stdio);
}

#[test]
fn http_an_adopted_call_ends_at_once_beside_a_busy_worker() {
    an_adopted_call_ends_at_once_beside_a_busy_worker(Transport::Http);
}

fn shutdown_stops_an_adopted_call(transport: Transport) {
    let dir = spinners();
    let mut mcp = serve(transport, &dir, &["--max-running", "1", "--task-after", "200ms", "--fuel", HUGE_FUEL, "--shutdown-grace", "1s"]);
    busy_worker(&mut mcp);
    let created = mcp.result("tools/call", modern(json!({ "name": "spin", "arguments": {} }), tasks_ext()));
    assert_eq!(created["resultType"], "task", "{created}");
    mcp.close_stdin();
    // Well inside the plain call's 30 s timeout, which would stop a guest nobody holds.
    let status = mcp.wait_exit(Duration::from_secs(20));
    assert!(status.success(), "{status:?}: {}", mcp.stderr_text());
}

#[test]
fn stdio_shutdown_stops_an_adopted_call() {
    shutdown_stops_an_adopted_call(Transport::Stdio);
}

#[test]
fn http_shutdown_stops_an_adopted_call() {
    shutdown_stops_an_adopted_call(Transport::Http);
}

/// A listen's error message, for a listen that must be refused.
fn refused_listen(mcp: &mut McpProcess, task_ids: Value) -> String {
    let answer = mcp.request("subscriptions/listen", modern(json!({ "notifications": { "taskIds": task_ids } }), tasks_ext()));
    assert_eq!(answer["error"]["code"], -32602, "{answer}");
    answer["error"]["message"].as_str().unwrap().to_owned()
}

/// Opens a listen naming `task_ids` and waits for its acknowledgement: (listen id, the ack).
fn open_listen(mcp: &mut McpProcess, task_ids: Value) -> (u64, Value) {
    let listen = mcp.send_request("subscriptions/listen", modern(json!({ "notifications": { "taskIds": task_ids } }), tasks_ext()));
    let ack = mcp.wait_notification("notifications/subscriptions/acknowledged", TIMEOUT);
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION], listen, "{ack}");
    (listen, ack)
}

#[test]
fn stdio_listens_watch_a_task_once_and_are_bounded_per_listen_and_per_owner() {
    let dir = plugins(None);
    let mut mcp = serve(Transport::Stdio, &dir, &["--task-after", "100ms"]);
    let task = slow_task(&mut mcp, 60.0, "watched");

    // A task named a thousand times is one watch, acknowledged once.
    let (first, ack) = open_listen(&mut mcp, json!(vec![task.clone(); 1000]));
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([task]), "{ack}");
    // More distinct tasks than one listen may watch: refused naming the bound, nothing opened.
    let ids: Vec<String> = (0..101).map(|n| format!("task-{n}")).collect();
    let message = refused_listen(&mut mcp, json!(ids));
    assert!(message.contains("names 101 tasks, over the 100 one listen may watch"), "{message}");

    // Sixteen open listens watching tasks per owner; the seventeenth is refused naming the bound.
    for _ in 1..16 {
        open_listen(&mut mcp, json!([task]));
    }
    let message = refused_listen(&mut mcp, json!([task]));
    assert!(message.contains("too many open listens watching tasks (16 at most per client)"), "{message}");
    // A listen that watches no task costs no watcher and is not counted.
    mcp.send_request("subscriptions/listen", modern(json!({ "notifications": { "toolsListChanged": true } }), json!({})));
    mcp.wait_notification("notifications/subscriptions/acknowledged", TIMEOUT);

    // Closing one gives its place back. A listen naming an unknown task shows which way it went:
    // with no place it is refused for the bound, with one for the unknown task.
    mcp.notify("notifications/cancelled", json!({ "requestId": first, "reason": "done watching" }));
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        let message = refused_listen(&mut mcp, json!(["no-such-task"]));
        if message.contains("`no-such-task`") {
            break;
        }
        assert!(message.contains("too many open listens"), "{message}");
        assert!(std::time::Instant::now() < deadline, "the closed listen never gave its place back");
        std::thread::sleep(Duration::from_millis(50));
    }
    // And the host serves the owner (and everyone) as before.
    let got = mcp.result("tasks/get", modern(json!({ "taskId": task }), tasks_ext()));
    assert_eq!(got["status"], "working", "{got}");
}

/// The runlog guest (`required` task tools that leave one file per run in `runs`).
fn runlog(runs: &std::path::Path) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(common::test_guests().join("runlog.wasm"), dir.path().join("runlog.wasm")).unwrap();
    common::write_manifest(dir.path(), "runlog", &format!("[permissions]\ndirs = [{{ host = \"{}\", guest = \"/runs\", mode = \"rw\" }}]\n", runs.display()));
    dir
}

/// A `record_once` task creation for `label`, with the idempotency key `key`: its task id.
fn create_with_key(mcp: &mut McpProcess, label: &str, key: &str) -> String {
    let mut params = modern(json!({ "name": "record_once", "arguments": { "label": label, "ms": 0 } }), tasks_ext());
    params["_meta"]["corral/idempotency-key"] = json!(key);
    let created = mcp.result("tools/call", params);
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().unwrap().to_owned()
}

fn a_retried_task_creation_with_the_same_key_answers_the_first_task(transport: Transport) {
    let runs = tempfile::tempdir().unwrap();
    let dir = runlog(runs.path());
    let mut mcp = serve(transport, &dir, &[]);
    let first = create_with_key(&mut mcp, "retried", "key-1");
    assert_eq!(ended(&mut mcp, &first)["status"], "completed");
    // The client lost the answer and sends the creation again: the same task, not a second run.
    let again = create_with_key(&mut mcp, "retried", "key-1");
    assert_eq!(again, first, "the same key names the same task");
    // Another key is another task.
    let other = create_with_key(&mut mcp, "other", "key-2");
    assert_ne!(other, first);
    assert_eq!(ended(&mut mcp, &other)["status"], "completed");
    let mut files: Vec<String> = std::fs::read_dir(runs.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    files.sort();
    assert_eq!(files, ["other.0", "retried.0"], "the tool ran once per key");
    // A key that is no string is refused naming it.
    let mut params = modern(json!({ "name": "record_once", "arguments": { "label": "bad" } }), tasks_ext());
    params["_meta"]["corral/idempotency-key"] = json!(7);
    let refused = mcp.request("tools/call", params);
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("corral/idempotency-key"), "{refused}");
}

/// A `record_adaptive` call of `ms` for `label` with the idempotency key `key`: its answer.
fn adaptive_with_key(mcp: &mut McpProcess, label: &str, ms: u64, key: &str) -> Value {
    let mut params = modern(json!({ "name": "record_adaptive", "arguments": { "label": label, "ms": ms } }), tasks_ext());
    params["_meta"]["corral/idempotency-key"] = json!(key);
    mcp.result("tools/call", params)
}

fn a_retried_optional_call_with_the_same_key_answers_the_adopted_task(transport: Transport) {
    let runs = tempfile::tempdir().unwrap();
    let dir = runlog(runs.path());
    let mut mcp = serve(transport, &dir, &["--task-after", "100ms"]);
    // Outgrows --task-after: adopted as a task, its key stored with it.
    let first = adaptive_with_key(&mut mcp, "adopted", 1500, "key-1");
    assert_eq!(first["resultType"], "task", "{first}");
    let first = first["taskId"].as_str().unwrap().to_owned();
    // The client's request broke and it retries while the task runs, then after it ended: the
    // same task each time, and no second run.
    let running = adaptive_with_key(&mut mcp, "adopted", 1500, "key-1");
    assert_eq!(running["taskId"], first.as_str(), "{running}");
    assert_eq!(ended(&mut mcp, &first)["status"], "completed");
    let after = adaptive_with_key(&mut mcp, "adopted", 1500, "key-1");
    assert_eq!(after["taskId"], first.as_str(), "{after}");
    // Without a key, or with another, the call runs (inline when it is quick).
    let quick = adaptive_with_key(&mut mcp, "quick", 0, "key-2");
    assert_eq!(quick["resultType"], "complete", "{quick}");
    let mut files: Vec<String> = std::fs::read_dir(runs.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    files.sort();
    assert_eq!(files, ["adopted.0", "quick.0"], "the adopted call ran once for its key");
}

#[test]
fn stdio_a_retried_optional_call_with_the_same_key_answers_the_adopted_task() {
    a_retried_optional_call_with_the_same_key_answers_the_adopted_task(Transport::Stdio);
}

#[test]
fn http_a_retried_optional_call_with_the_same_key_answers_the_adopted_task() {
    a_retried_optional_call_with_the_same_key_answers_the_adopted_task(Transport::Http);
}

#[test]
fn stdio_a_retried_task_creation_with_the_same_key_answers_the_first_task() {
    a_retried_task_creation_with_the_same_key_answers_the_first_task(Transport::Stdio);
}

#[test]
fn http_a_retried_task_creation_with_the_same_key_answers_the_first_task() {
    a_retried_task_creation_with_the_same_key_answers_the_first_task(Transport::Http);
}
