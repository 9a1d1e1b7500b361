//! Task-augmented tool calls (MCP 2025-11-25 tasks) end to end, on a real SQLite file and on a
//! real PostgreSQL database (a server the tests start themselves; see `pg_cluster`).
//!
//! Each scenario runs over both transports (`stdio::NAME`, `http::NAME`; see `scenarios!`), and
//! again on PostgreSQL (`postgres::stdio::NAME`, `postgres::http::NAME`; see `store_scenarios!`).
//! Over stdio every task belongs to the local user; over HTTP to the session, or to the bearer
//! token's holder when authentication is on, which the scenarios that restart the host use.

#[macro_use]
mod common;
#[path = "../src/tasks/postgres/testing.rs"]
mod pg_cluster;

use std::cell::RefCell;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{error_of, example_plugins, wait_for, wait_until, write_plugin, Fixture, McpProcess, TaskSupport, ToolDef, Transport, TIMEOUT};
use serde_json::{json, Value};

const SPIN: &str = "(loop $l (br $l)) unreachable";

/// The bearer token the HTTP clients of `Host::with_identity` present.
const TOKEN: &str = "task-tests-token";

struct Host {
    transport: Transport,
    plugins: tempfile::TempDir,
    db: tempfile::TempDir,
    /// Over HTTP: authentication is on, with one token.
    auth: bool,
    /// The PostgreSQL database the host keeps its tasks in, when the scenario runs there.
    postgres: Option<String>,
}

thread_local! {
    /// The database a scenario running on PostgreSQL gets (each test has a thread of its own).
    static POSTGRES: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `scenario` with its hosts on a fresh PostgreSQL database. Without a server it is
/// skipped, loudly (and fails when `CORRAL_REQUIRE_POSTGRES` is set, as in CI).
fn on_postgres(scenario: impl FnOnce()) {
    let Some(url) = pg_cluster::database_or_skip() else { return };
    POSTGRES.with(|pg| *pg.borrow_mut() = Some(url));
    scenario();
}

/// `scenarios!`, plus the same scenarios on PostgreSQL; `sqlite_only("why")` keeps one off it.
macro_rules! store_scenarios {
    ($($(sqlite_only($why:literal))? fn $name:ident($t:ident: Transport) $body:block)*) => {
        scenarios! { $(fn $name($t: Transport) $body)* }

        /// The scenarios with the tasks in PostgreSQL.
        mod postgres {
            mod stdio {
                $(
                    $(#[ignore = $why])?
                    #[test]
                    fn $name() {
                        crate::on_postgres(|| super::super::$name(crate::common::Transport::Stdio))
                    }
                )*
            }
            mod http {
                $(
                    $(#[ignore = $why])?
                    #[test]
                    fn $name() {
                        crate::on_postgres(|| super::super::$name(crate::common::Transport::Http))
                    }
                )*
            }
        }
    };
}

impl Host {
    /// The example plugins plus a non-idempotent spinning tool, and an empty database.
    fn new(transport: Transport) -> Host {
        let plugins = example_plugins(&["text", "ticker", "hash"]);
        let spin = Fixture::new().tool(ToolDef::new("spin").task_support(TaskSupport::Optional).body(SPIN));
        write_plugin(plugins.path(), "spin", &spin.build());
        let postgres = POSTGRES.with(|pg| pg.borrow().clone());
        Host { transport, plugins, db: tempfile::tempdir().unwrap(), auth: false, postgres }
    }

    /// Like `new`, for scenarios whose tasks must outlive a host process: its clients keep one
    /// identity across processes. Over stdio every client is the local user anyway; over HTTP
    /// a session's tasks are the session's (a new process means new sessions), so the clients
    /// authenticate with one bearer token and the tasks belong to its holder.
    fn with_identity(transport: Transport) -> Host {
        let host = Host { auth: transport == Transport::Http, ..Host::new(transport) };
        std::fs::write(host.tokens_path(), format!("tests {TOKEN}\n")).unwrap();
        host
    }

    fn db_path(&self) -> String {
        match &self.postgres {
            Some(url) => url.clone(),
            None => self.db.path().join("tasks.db").to_str().unwrap().to_owned(),
        }
    }

    fn tokens_path(&self) -> String {
        self.db.path().join("tokens").to_str().unwrap().to_owned()
    }

    /// Task `id` as stored: owner, status and status message (read beside the host, since a
    /// task whose session is gone is out of every client's reach).
    fn stored(&self, id: &str) -> (String, String, String) {
        let sql = format!("SELECT owner, status, status_message FROM {} WHERE id = '{id}'", if self.postgres.is_some() { "corral_tasks" } else { "tasks" });
        let row = match &self.postgres {
            Some(url) => pg_cluster::psql(url, &sql).unwrap(),
            None => {
                let db = rusqlite::Connection::open(self.db_path()).unwrap();
                db.query_row(&sql, [], |r| Ok(format!("{}|{}|{}", r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))).unwrap()
            }
        };
        let mut fields = row.splitn(3, '|').map(str::to_owned);
        (fields.next().unwrap(), fields.next().unwrap_or_default(), fields.next().unwrap_or_default())
    }

    /// Whether a worker has taken task `id`: its start is stored (read beside the host, as
    /// `stored` is).
    fn started(&self, id: &str) -> bool {
        let sql = format!("SELECT started_at IS NOT NULL FROM {} WHERE id = '{id}'", if self.postgres.is_some() { "corral_tasks" } else { "tasks" });
        match &self.postgres {
            Some(url) => pg_cluster::psql(url, &sql).unwrap() == "t",
            None => rusqlite::Connection::open(self.db_path()).unwrap().query_row(&sql, [], |r| r.get(0)).unwrap(),
        }
    }

    /// Waits until a worker has taken each of `ids`.
    fn wait_started(&self, ids: &[&str]) {
        for id in ids {
            wait_until(&format!("a worker to start task {id}"), TIMEOUT, || self.started(id));
        }
    }

    /// `corral serve` on this host's plugins and database, not yet initialized.
    fn spawn(&self, extra: &[&str]) -> McpProcess {
        let plugins = self.plugins.path().to_str().unwrap().to_owned();
        let (db, tokens) = (self.db_path(), self.tokens_path());
        let mut args = vec!["serve", "--plugins", &plugins, "--db", &db];
        if self.auth {
            args.extend(["--auth-tokens-file", &tokens]);
        }
        if self.postgres.is_some() {
            // A killed replica's tasks move after the host expiry; keep the scenarios quick.
            args.extend(["--host-expiry", "1s"]);
        }
        args.extend_from_slice(extra);
        let mut mcp = McpProcess::spawn_with(self.transport, &args);
        if self.auth {
            mcp.set_bearer_token(TOKEN);
        }
        mcp
    }

    /// `corral serve` on this host's plugins and database, initialized.
    fn start(&self, extra: &[&str]) -> McpProcess {
        let mut mcp = self.spawn(extra);
        mcp.initialize();
        mcp
    }
}

fn create(mcp: &mut McpProcess, tool: &str, arguments: Value, task: Value) -> Value {
    let result = mcp.result("tools/call", json!({ "name": tool, "arguments": arguments, "task": task }));
    result["task"].clone()
}

/// Polls `tasks/get` until the status is terminal.
fn wait_terminal(mcp: &mut McpProcess, id: &str) -> Value {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let task = mcp.result("tasks/get", json!({ "taskId": id }));
        if ["completed", "failed", "cancelled"].contains(&task["status"].as_str().unwrap()) {
            return task;
        }
        assert!(Instant::now() < deadline, "task {id} never ended: {task}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

store_scenarios! {
    fn initialize_advertises_tasks_for_tool_calls(t: Transport) {
        let host = Host::new(t);
        let mut mcp = host.spawn(&[]);
        let init = mcp.initialize();
        assert_eq!(init["capabilities"]["tasks"], json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } }));
    }

    fn a_task_call_answers_at_once_and_its_result_comes_from_tasks_result(t: Transport) {
        let host = Host::new(t);
        let mut mcp = host.start(&[]);
        let task = create(&mut mcp, "tick", json!({ "count": 3, "interval_ms": 20 }), json!({}));
        assert_eq!(task["status"], "working");
        for field in ["taskId", "createdAt", "lastUpdatedAt", "ttl", "pollInterval"] {
            assert!(!task[field].is_null(), "CreateTaskResult.task lacks {field}: {task}");
        }
        let id = task["taskId"].as_str().unwrap();
        assert_eq!(id.len(), 36, "a UUID: {id}");

        let result = mcp.result("tasks/result", json!({ "taskId": id }));
        assert_eq!(result["content"][0]["text"], "ticked 3 times");
        assert_eq!(result["_meta"]["io.modelcontextprotocol/related-task"], json!({ "taskId": id }));
        let done = mcp.result("tasks/get", json!({ "taskId": id }));
        assert_eq!(done["status"], "completed");
        let status = mcp.wait_notification("notifications/tasks/status", TIMEOUT);
        assert_eq!(status["params"]["taskId"], id);
    }

    fn tasks_result_blocks_until_the_task_ends(t: Transport) {
        let host = Host::new(t);
        let mut mcp = host.start(&[]);
        let task = create(&mut mcp, "tick", json!({ "count": 10, "interval_ms": 50 }), json!({}));
        let id = task["taskId"].as_str().unwrap();
        let waiting = mcp.send_request("tasks/result", json!({ "taskId": id }));
        assert_eq!(mcp.result("tasks/get", json!({ "taskId": id }))["status"], "working", "still running while tasks/result waits");
        let response = mcp.wait_response(waiting, TIMEOUT);
        assert_eq!(response["result"]["content"][0]["text"], "ticked 10 times");
    }

    fn task_policy_is_enforced_with_method_not_found(t: Transport) {
        let host = Host::new(t);
        let mut mcp = host.start(&[]);
        let forbidden = mcp.request("tools/call", json!({ "name": "echo", "arguments": { "text": "x" }, "task": {} }));
        assert_eq!(error_of(&forbidden).0, -32601);
        let required = mcp.request("tools/call", json!({ "name": "countdown", "arguments": { "from": 2 } }));
        assert_eq!(error_of(&required).0, -32601);
        let task = create(&mut mcp, "countdown", json!({ "from": 2, "interval_ms": 10 }), json!({}));
        assert_eq!(wait_terminal(&mut mcp, task["taskId"].as_str().unwrap())["status"], "completed");
    }

    fn ttl_is_defaulted_and_capped_and_reported(t: Transport) {
        let host = Host::new(t);
        let mut mcp = host.start(&["--task-ttl", "10m", "--task-max-ttl", "1h"]);
        let defaulted = create(&mut mcp, "tick", json!({ "count": 1, "interval_ms": 0 }), json!({}));
        assert_eq!(defaulted["ttl"], 600_000);
        let capped = create(&mut mcp, "tick", json!({ "count": 1, "interval_ms": 0 }), json!({ "ttl": 999_999_999_999i64 }));
        assert_eq!(capped["ttl"], 3_600_000);
        let asked = create(&mut mcp, "tick", json!({ "count": 1, "interval_ms": 0 }), json!({ "ttl": 60_000 }));
        assert_eq!(asked["ttl"], 60_000);
        assert_eq!(mcp.result("tasks/get", json!({ "taskId": asked["taskId"] }))["ttl"], 60_000);
    }

    fn a_tool_error_fails_the_task_and_keeps_the_error_kind(t: Transport) {
        let host = Host::new(t);
        let mut mcp = host.start(&[]);
        let task = create(&mut mcp, "hash_chain", json!({ "input": "a", "rounds": 10_000_000 }), json!({}));
        let id = task["taskId"].as_str().unwrap();
        let ended = wait_terminal(&mut mcp, id);
        assert_eq!(ended["status"], "failed");
        assert!(ended["statusMessage"].as_str().unwrap().contains("fuel"), "{ended}");
        let result = mcp.result("tasks/result", json!({ "taskId": id }));
        assert_eq!(result["isError"], true);
        assert_eq!(result["_meta"]["corral/error"]["kind"], "fuel-exhausted");
    }

    fn cancelling_a_spinning_task_is_immediate_and_final(t: Transport) {
        let host = Host::new(t);
        let mut mcp = host.start(&["--task-timeout", "10m"]);
        let task = create(&mut mcp, "spin", json!({}), json!({}));
        let id = task["taskId"].as_str().unwrap();
        host.wait_started(&[id]);
        let cancelled = mcp.result("tasks/cancel", json!({ "taskId": id }));
        assert_eq!(cancelled["status"], "cancelled");
        assert_eq!(mcp.result("tasks/get", json!({ "taskId": id }))["status"], "cancelled");
        let result = mcp.result("tasks/result", json!({ "taskId": id }));
        assert_eq!(result["_meta"]["corral/error"]["kind"], "cancelled");
        let again = mcp.request("tasks/cancel", json!({ "taskId": id }));
        assert_eq!(error_of(&again).0, -32602);
        // The guest really stopped: the only running slot is free for the next task.
        let next = create(&mut mcp, "tick", json!({ "count": 1, "interval_ms": 0 }), json!({}));
        assert_eq!(wait_terminal(&mut mcp, next["taskId"].as_str().unwrap())["status"], "completed");
    }

    fn unknown_task_ids_are_invalid_params(t: Transport) {
        let host = Host::new(t);
        let mut mcp = host.start(&[]);
        for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
            let response = mcp.request(method, json!({ "taskId": "no-such-task" }));
            let (code, message) = error_of(&response);
            assert_eq!(code, -32602, "{method}");
            assert!(message.contains("not found"), "{method}: {message}");
        }
        assert_eq!(error_of(&mcp.request("tasks/get", json!({}))).0, -32602);
    }

    fn tasks_list_pages_through_hundreds_of_tasks_exactly_once(t: Transport) {
        let host = Host::new(t);
        let mut mcp = host.start(&[]);
        let mut created = Vec::new();
        for _ in 0..230 {
            created.push(create(&mut mcp, "tick", json!({ "count": 1, "interval_ms": 0 }), json!({}))["taskId"].as_str().unwrap().to_owned());
        }
        let mut seen = Vec::new();
        let mut cursor = Value::Null;
        loop {
            let page = mcp.result("tasks/list", json!({ "cursor": cursor }));
            seen.extend(page["tasks"].as_array().unwrap().iter().map(|t| t["taskId"].as_str().unwrap().to_owned()));
            // Tasks added between pages must not disturb the paging.
            create(&mut mcp, "tick", json!({ "count": 1, "interval_ms": 0 }), json!({}));
            match page.get("nextCursor") {
                Some(c) => cursor = c.clone(),
                None => break,
            }
        }
        let mut unique = seen.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), seen.len(), "no task listed twice");
        assert!(created.iter().all(|id| seen.contains(id)), "every created task listed");
        let bad = mcp.request("tasks/list", json!({ "cursor": "garbage" }));
        assert_eq!(error_of(&bad).0, -32602);
    }

    fn admission_over_capacity_is_refused_as_overloaded_and_creates_nothing(t: Transport) {
        let host = Host::new(t);
        let mut mcp = host.start(&["--max-running", "1", "--max-queued", "2"]);
        let slow = json!({ "name": "tick", "arguments": { "count": 100, "interval_ms": 100 }, "task": {} });
        // One task runs and two wait (or three wait, if no worker has picked one up yet).
        let mut accepted = 0;
        let refused = loop {
            let response = mcp.request("tools/call", slow.clone());
            if response.get("error").is_some() {
                break response;
            }
            accepted += 1;
            assert!(accepted <= 3, "admission never refused: {response}");
        };
        assert!(accepted >= 2, "refused too early: {refused}");
        let error = &refused["error"];
        assert_eq!(error["code"], -32000);
        assert!(error["message"].as_str().unwrap().contains("overloaded"), "{refused}");
        assert_eq!(error["data"], json!({ "kind": "overloaded", "queued": 2, "limit": 2 }));
        assert_eq!(mcp.result("tasks/list", json!({}))["tasks"].as_array().unwrap().len(), accepted, "nothing half-created");
    }

    fn expired_tasks_are_gone(t: Transport) {
        let host = Host::new(t);
        let mut mcp = host.start(&["--task-reap-every", "100ms"]);
        let task = create(&mut mcp, "tick", json!({ "count": 1, "interval_ms": 0 }), json!({ "ttl": 300 }));
        let id = task["taskId"].as_str().unwrap();
        // The reaper (every 100 ms) deletes it once its 300 ms are up.
        let gone = wait_for("the reaper to delete the expired task", TIMEOUT, || {
            let got = mcp.request("tasks/get", json!({ "taskId": id }));
            got.get("error").is_some().then_some(got)
        });
        assert_eq!(error_of(&gone).0, -32602, "{gone}");
        assert!(mcp.result("tasks/list", json!({}))["tasks"].as_array().unwrap().is_empty());
    }

    fn an_idempotency_key_returns_the_existing_task(t: Transport) {
        let host = Host::new(t);
        let mut mcp = host.start(&[]);
        let params = json!({ "name": "tick", "arguments": { "count": 2, "interval_ms": 10 }, "task": {}, "_meta": { "corral/idempotency-key": "build-42" } });
        let first = mcp.result("tools/call", params.clone())["task"]["taskId"].clone();
        let second = mcp.result("tools/call", params)["task"]["taskId"].clone();
        assert_eq!(first, second);
        assert_eq!(mcp.result("tasks/list", json!({}))["tasks"].as_array().unwrap().len(), 1);
    }

    fn progress_and_status_message_follow_the_task(t: Transport) {
        let host = Host::new(t);
        let mut mcp = host.start(&[]);
        let result = mcp.result("tools/call", json!({ "name": "tick", "arguments": { "count": 30, "interval_ms": 30 }, "task": {}, "_meta": { "progressToken": "p-1" } }));
        let id = result["task"]["taskId"].as_str().unwrap().to_owned();
        let progress = mcp.wait_notification("notifications/progress", TIMEOUT);
        assert_eq!(progress["params"]["progressToken"], "p-1");
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let task = mcp.result("tasks/get", json!({ "taskId": id }));
            if task["statusMessage"].as_str().is_some_and(|m| m.starts_with("tick")) {
                break;
            }
            assert_eq!(task["status"], "working", "statusMessage never showed the plugin's progress: {task}");
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(20));
        }
        wait_terminal(&mut mcp, &id);
    }

    fn tasks_survive_a_crash_and_every_accepted_task_is_accounted_for(t: Transport) {
        let host = Host::with_identity(t);
        let mut mcp = host.start(&[]);
        let completed = create(&mut mcp, "tick", json!({ "count": 1, "interval_ms": 0 }), json!({}))["taskId"].as_str().unwrap().to_owned();
        wait_terminal(&mut mcp, &completed);
        let failed = create(&mut mcp, "hash_chain", json!({ "input": "a", "rounds": 10_000_000 }), json!({}))["taskId"].as_str().unwrap().to_owned();
        wait_terminal(&mut mcp, &failed);
        let cancelled = create(&mut mcp, "tick", json!({ "count": 1000, "interval_ms": 50 }), json!({}))["taskId"].as_str().unwrap().to_owned();
        mcp.result("tasks/cancel", json!({ "taskId": cancelled }));
        let rerun = create(&mut mcp, "tick", json!({ "count": 20, "interval_ms": 50 }), json!({}))["taskId"].as_str().unwrap().to_owned();
        let interrupted = create(&mut mcp, "spin", json!({}), json!({}))["taskId"].as_str().unwrap().to_owned();
        // Let a worker take it: a task that was only admitted runs again after a crash,
        // whatever its tool, and this one must have started.
        host.wait_started(&[interrupted.as_str()]);
        let completed_result = mcp.result("tasks/result", json!({ "taskId": completed }));
        drop(mcp); // SIGKILL: no shutdown code runs.

        let mut mcp = host.start(&[]);
        assert_eq!(wait_terminal(&mut mcp, &completed)["status"], "completed");
        assert_eq!(mcp.result("tasks/result", json!({ "taskId": completed }))["content"], completed_result["content"]);
        assert_eq!(wait_terminal(&mut mcp, &failed)["status"], "failed");
        assert_eq!(wait_terminal(&mut mcp, &cancelled)["status"], "cancelled");
        let again = wait_terminal(&mut mcp, &rerun);
        assert_eq!(again["status"], "completed", "tick is idempotent, so it ran again: {again}");
        let lost = wait_terminal(&mut mcp, &interrupted);
        assert_eq!(lost["status"], "failed");
        assert!(lost["statusMessage"].as_str().unwrap().contains("restart"), "{lost}");
        let listed = mcp.result("tasks/list", json!({}))["tasks"].as_array().unwrap().len();
        assert_eq!(listed, 5, "every accepted task is still there");
    }

    fn after_a_crash_tasks_only_their_session_could_reach_are_cancelled_the_local_users_recovered(t: Transport) {
        // Issue 17, finding 8. Over HTTP without auth a task belongs to its session, which lives
        // in the host's memory: after kill -9 and a restart on the same database nothing can
        // reach it, so it is cancelled instead of run again for nobody. Over stdio it is the
        // local user's, who comes back: recovered as before.
        let host = Host::new(t);
        let mut mcp = host.start(&[]);
        let idempotent = create(&mut mcp, "tick", json!({ "count": 40, "interval_ms": 50 }), json!({}))["taskId"].as_str().unwrap().to_owned();
        let started = create(&mut mcp, "spin", json!({}), json!({}))["taskId"].as_str().unwrap().to_owned();
        host.wait_started(&[idempotent.as_str(), started.as_str()]);
        let session = mcp.session_id().map(str::to_owned);
        drop(mcp); // SIGKILL

        let mut mcp = host.start(&[]);
        let Some(session) = session else {
            assert_eq!(wait_terminal(&mut mcp, &idempotent)["status"], "completed", "tick ran again");
            assert_eq!(wait_terminal(&mut mcp, &started)["status"], "failed", "spin was interrupted");
            return;
        };
        let metrics = mcp.http_url().unwrap().replace("/mcp", "/metrics");
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let text = ureq::get(&metrics).call().unwrap().into_body().read_to_string().unwrap();
            if text.lines().any(|l| l == r#"corral_tasks{status="cancelled"} 2"#) {
                assert!(text.lines().any(|l| l == r#"corral_tasks{status="completed"} 0"#), "nothing ran again:\n{text}");
                assert!(text.lines().any(|l| l == r#"corral_tasks{status="working"} 0"#), "{text}");
                break;
            }
            assert!(Instant::now() < deadline, "the session's tasks were never cancelled:\n{text}");
            std::thread::sleep(Duration::from_millis(50));
        }
        for id in [&idempotent, &started] {
            let (owner, status, message) = host.stored(id);
            assert_eq!(owner, format!("session:{session}"));
            assert_eq!((status.as_str(), message.as_str()), ("cancelled", "cancelled: its session ended with the host that held it"), "{id}");
        }
    }

    sqlite_only("a file database; PostgreSQL's foreign schemas are refused in tasks::postgres::tests")
    fn a_corrupt_database_is_a_startup_error_naming_the_file(t: Transport) {
        let host = Host::new(t);
        std::fs::write(host.db_path(), b"this is not a database, but it is long enough to look like one to a careless reader..").unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_corral"))
            .args(["serve", "--plugins", host.plugins.path().to_str().unwrap(), "--db", &host.db_path()])
            .args(t.serve_args())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&host.db_path()), "{stderr}");
        assert!(Path::new(&host.db_path()).metadata().unwrap().len() > 0, "the file is left as it was");
    }

    fn hosts_sharing_a_database_leave_each_others_running_tasks_alone(t: Transport) {
        let host = Host::with_identity(t);
        // The first host never reaps, so the expired task below can only be the second's doing.
        let mut first = host.start(&["--task-reap-every", "1h"]);
        let running = create(&mut first, "spin", json!({}), json!({}))["taskId"].as_str().unwrap().to_owned();
        host.wait_started(&[running.as_str()]);
        let mut second = host.start(&["--task-reap-every", "100ms"]);
        // Each pass of the second host's reaper looks for orphans, then deletes expired tasks:
        // once it logs a deletion, it has looked at least once with the first host's task running.
        create(&mut second, "tick", json!({ "count": 1, "interval_ms": 0 }), json!({ "ttl": 1 }));
        second.wait_stderr("a pass of the second host's reaper", TIMEOUT, |log| log.contains("deleted 1 expired tasks"));
        let seen = second.result("tasks/get", json!({ "taskId": running }));
        assert_eq!(seen["status"], "working", "the second host must not recover a live host's task: {seen}");
        drop(first); // SIGKILL
        let orphan = wait_terminal(&mut second, &running);
        assert_eq!(orphan["status"], "failed", "once its host is gone the task is recovered: {orphan}");
    }

    fn an_expired_idempotency_key_starts_a_new_task(t: Transport) {
        let host = Host::new(t);
        let mut mcp = host.start(&["--task-reap-every", "1h"]);
        let params = json!({ "name": "tick", "arguments": { "count": 1, "interval_ms": 0 }, "task": { "ttl": 200 }, "_meta": { "corral/idempotency-key": "k" } });
        let first = mcp.result("tools/call", params.clone())["task"]["taskId"].clone();
        // The reaper never runs here: the key stops naming the first task once its 200 ms are up
        // (until then it returns the first task, and no new one is made).
        wait_until("the idempotency key to start a new task once its first task expired", TIMEOUT, || {
            mcp.result("tools/call", params.clone())["task"]["taskId"] != first
        });
    }

    fn one_client_cannot_hold_more_unfinished_tasks_than_its_cap(t: Transport) {
        let host = Host::new(t);
        let mut mcp = host.start(&["--max-tasks-per-client", "2"]);
        for _ in 0..2 {
            create(&mut mcp, "tick", json!({ "count": 100, "interval_ms": 100 }), json!({}));
        }
        let refused = mcp.request("tools/call", json!({ "name": "tick", "arguments": { "count": 1 }, "task": {} }));
        assert_eq!(refused["error"]["data"], json!({ "kind": "overloaded", "scope": "owner", "active": 2, "limit": 2 }), "{refused}");
        let first = mcp.result("tasks/list", json!({}))["tasks"][0]["taskId"].clone();
        mcp.result("tasks/cancel", json!({ "taskId": first }));
        create(&mut mcp, "tick", json!({ "count": 1, "interval_ms": 0 }), json!({}));
    }
}

/// `corral serve --db URL` on `host`'s plugins; what it printed and how it exited.
fn serve_once(host: &Host, db: &str) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["serve", "--plugins", host.plugins.path().to_str().unwrap(), "--db", db])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn a_postgres_database_that_is_down_at_start_is_a_clear_error_and_exit_2() {
    let host = Host::new(Transport::Stdio);
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("postgres://corral:secret-pw@127.0.0.1:{port}/tasks");
    let out = serve_once(&host, &url);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("task store postgres://corral:***@127.0.0.1:{port}/tasks: cannot connect")), "{stderr}");
    assert!(!stderr.contains("secret-pw"), "the password is not shown: {stderr}");
}

#[test]
fn a_postgres_database_of_something_else_or_a_wrong_password_stops_the_host() {
    on_postgres(|| {
        let host = Host::new(Transport::Stdio);
        let url = host.db_path();
        pg_cluster::psql(&url, "CREATE TABLE accounts (id int)").unwrap();
        let out = serve_once(&host, &url);
        assert_eq!(out.status.code(), Some(2));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("tables that are not corral's (accounts)"), "{stderr}");
        if url.contains(pg_cluster::PASSWORD) {
            let out = serve_once(&host, &url.replace(pg_cluster::PASSWORD, "wrong"));
            assert_eq!(out.status.code(), Some(2));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains("password authentication failed"), "{stderr}");
        }
    });
}

#[test]
fn when_postgres_goes_away_task_calls_name_the_store_plain_calls_work_and_the_host_comes_back() {
    let server = match pg_cluster::private_server() {
        Ok(server) => server,
        Err(why) => {
            assert!(std::env::var_os("CORRAL_REQUIRE_POSTGRES").is_none() || why.contains("CORRAL_TEST_POSTGRES"), "{}", pg_cluster::skip_notice(&why));
            return eprintln!("{}", pg_cluster::skip_notice(&why));
        }
    };
    POSTGRES.with(|pg| *pg.borrow_mut() = Some(server.database().unwrap()));
    let host = Host::new(Transport::Stdio);
    let mut mcp = host.start(&[]);
    let before = create(&mut mcp, "tick", json!({ "count": 1, "interval_ms": 0 }), json!({}))["taskId"].as_str().unwrap().to_owned();
    wait_terminal(&mut mcp, &before);

    server.stop();
    let refused = mcp.request("tools/call", json!({ "name": "tick", "arguments": { "count": 1 }, "task": {} }));
    let (code, message) = error_of(&refused);
    assert_eq!(code, -32603, "{refused}");
    assert!(message.contains("task store (PostgreSQL)"), "the error names the store: {message}");
    let (_, message) = error_of(&mcp.request("tasks/get", json!({ "taskId": before })));
    assert!(message.contains("task store (PostgreSQL)"), "{message}");
    let plain = mcp.call_tool("echo", json!({ "text": "still here" }));
    assert!(plain["isError"] != true && plain.to_string().contains("still here"), "a plain tool call needs no store: {plain}");

    server.restart();
    let deadline = Instant::now() + TIMEOUT;
    let after = loop {
        let response = mcp.request("tools/call", json!({ "name": "tick", "arguments": { "count": 1, "interval_ms": 0 }, "task": {} }));
        if let Some(task) = response.get("result") {
            break task["task"]["taskId"].as_str().unwrap().to_owned();
        }
        assert!(Instant::now() < deadline, "the host never reconnected: {response}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(wait_terminal(&mut mcp, &after)["status"], "completed");
    assert_eq!(mcp.result("tasks/get", json!({ "taskId": before }))["status"], "completed", "nothing was lost");
    server.stop();
}

#[test]
fn on_postgres_any_replica_answers_for_a_task_and_a_cancel_on_one_stops_the_guest_on_the_other() {
    on_postgres(|| {
        // Two replicas of one database; the client's token makes it the same owner on both.
        let host = Host::with_identity(Transport::Http);
        let mut a = host.start(&["--max-running", "1", "--task-timeout", "10m"]);
        let mut b = host.start(&[]);
        let spinning = create(&mut a, "spin", json!({}), json!({}))["taskId"].as_str().unwrap().to_owned();
        assert_eq!(b.result("tasks/get", json!({ "taskId": spinning }))["status"], "working", "b reads a's task");
        let listed = b.result("tasks/list", json!({}))["tasks"].as_array().unwrap().len();
        assert_eq!(listed, 1, "and lists it");
        host.wait_started(&[spinning.as_str()]);
        let cancelled_at = Instant::now();
        assert_eq!(b.result("tasks/cancel", json!({ "taskId": spinning }))["status"], "cancelled");
        // a's only worker is free again once its guest stopped: a's next task completes, long
        // before the spinning guest would have run out of fuel (seconds).
        let next = create(&mut a, "tick", json!({ "count": 1, "interval_ms": 0 }), json!({}))["taskId"].as_str().unwrap().to_owned();
        assert_eq!(wait_terminal(&mut a, &next)["status"], "completed");
        assert!(cancelled_at.elapsed() < Duration::from_secs(3), "the guest on a stopped when b cancelled: {:?}", cancelled_at.elapsed());
        // tasks/result on b waits for a task a runs, and answers when it ends.
        let ticking = create(&mut a, "tick", json!({ "count": 10, "interval_ms": 50 }), json!({}))["taskId"].as_str().unwrap().to_owned();
        let result = b.result("tasks/result", json!({ "taskId": ticking }));
        assert_eq!(result["content"][0]["text"], "ticked 10 times");
        assert_eq!(a.result("tasks/result", json!({ "taskId": spinning }))["_meta"]["corral/error"]["kind"], "cancelled");
    });
}
