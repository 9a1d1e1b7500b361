//! `corral tasks` against the real binary, beside a real host running on the same store: a
//! SQLite file (`sqlite::NAME`) and a throwaway PostgreSQL database (`postgres::NAME`; skipped
//! without a server unless `CORRAL_REQUIRE_POSTGRES` is set, as in CI).
//!
//! The host serves one test plugin, `work`, built from WAT: `quick` (answers at once), `spin`
//! (loops until stopped) and `gen` (a 300 kB text, kept by reference past the host's
//! `--inline-result-limit`). Its clients are stdio clients, so every task is the local user's.

mod common;
#[path = "../src/tasks/postgres/testing.rs"]
mod pg_cluster;

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::generated::{expected, generator};
use common::{write_plugin, Fixture, McpProcess, TaskSupport, ToolDef, TIMEOUT};
use serde_json::{json, Value};

const SPIN: &str = "(loop $l (br $l)) unreachable";
/// The size of `gen`'s text: two pages of 256 KiB when kept.
const GEN: u32 = 300_000;

/// A task store with the `work` plugin beside it.
struct Store {
    /// `--db`: the SQLite file or the PostgreSQL URL.
    db: String,
    plugins: tempfile::TempDir,
    _dir: tempfile::TempDir,
}

impl Store {
    fn new(db: Option<String>) -> Store {
        let dir = tempfile::tempdir().unwrap();
        let plugins = tempfile::tempdir().unwrap();
        let work = Fixture::new()
            .tool(ToolDef::new("quick").task_support(TaskSupport::Optional))
            .tool(ToolDef::new("spin").task_support(TaskSupport::Optional).body(SPIN))
            .tool(ToolDef::new("gen").task_support(TaskSupport::Optional).body(&generator(GEN)));
        write_plugin(plugins.path(), "work", &work.build());
        let db = db.unwrap_or_else(|| dir.path().join("tasks.db").to_str().unwrap().to_owned());
        Store { db, plugins, _dir: dir }
    }

    fn sqlite() -> Option<Store> {
        Some(Store::new(None))
    }

    fn postgres() -> Option<Store> {
        pg_cluster::database_or_skip().map(|url| Store::new(Some(url)))
    }

    /// A host on this store over stdio, initialized.
    fn host(&self, extra: &[&str]) -> McpProcess {
        let mut args = vec!["serve", "--plugins", self.plugins.path().to_str().unwrap(), "--db", &self.db, "--task-timeout", "10m"];
        args.extend_from_slice(extra);
        let mut mcp = McpProcess::spawn(&args);
        mcp.initialize();
        mcp
    }

    /// `corral tasks ARGS --db DB`, run to its end.
    fn run(&self, args: &[&str]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_corral"));
        command.arg("tasks").args(args).args(["--db", &self.db]).env_remove("CORRAL_DB").env_remove("RUST_LOG").env("NO_COLOR", "1");
        command.stdin(Stdio::null()).output().unwrap()
    }

    /// `corral tasks ARGS --db DB`, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "corral tasks {args:?} failed ({}):\n{}", out.status, String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    /// `corral tasks ARGS --json --db DB`, parsed.
    fn json(&self, args: &[&str]) -> Value {
        let mut args = args.to_vec();
        args.push("--json");
        let out = self.ok(&args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("corral tasks {args:?} printed no JSON ({e}):\n{out}"))
    }

    /// The ids `list ARGS --json` prints, in its order.
    fn listed(&self, args: &[&str]) -> Vec<String> {
        let mut all = vec!["list"];
        all.extend_from_slice(args);
        let page = self.json(&all);
        page["tasks"].as_array().unwrap().iter().map(|t| t["task_id"].as_str().unwrap().to_owned()).collect()
    }

    /// Waits until `show ID` says a worker took the task.
    fn wait_started(&self, id: &str) -> Value {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let task = self.json(&["show", id]);
            if !task["started_at"].is_null() {
                return task;
            }
            assert!(Instant::now() < deadline, "task {id} never started: {task}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `corral tasks` failed with exit code `code`; its stderr.
fn failed(out: &Output, code: i32) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(code), "stdout: {}\nstderr: {stderr}", String::from_utf8_lossy(&out.stdout));
    stderr
}

/// Creates a task of `tool`; returns its id.
fn create(mcp: &mut McpProcess, tool: &str, arguments: Value) -> String {
    let created = mcp.result("tools/call", json!({ "name": tool, "arguments": arguments, "task": {} }));
    created["task"]["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_owned()
}

/// Creates a task of `tool` and waits until it ended.
fn run_task(mcp: &mut McpProcess, tool: &str, arguments: Value) -> String {
    let id = create(mcp, tool, arguments);
    mcp.result("tasks/result", json!({ "taskId": id }));
    id
}

fn list_filters_and_pages_newest_first(store: &Store) {
    let mut host = store.host(&["--max-running", "2"]);
    let quick: Vec<String> = (0..3).map(|i| run_task(&mut host, "quick", json!({ "n": i }))).collect();
    let spin = create(&mut host, "spin", json!({}));
    let newest_first = vec![spin.clone(), quick[2].clone(), quick[1].clone(), quick[0].clone()];
    assert_eq!(store.listed(&[]), newest_first);

    assert_eq!(store.listed(&["--status", "completed"]), &newest_first[1..]);
    assert_eq!(store.listed(&["--status", "working,input_required"]), [spin.as_str()]);
    assert_eq!(store.listed(&["--status", "failed", "--status", "working"]), [spin.as_str()]);
    assert_eq!(store.listed(&["--tool", "spin"]), [spin.as_str()]);
    assert_eq!(store.listed(&["--plugin", "work"]), newest_first);
    assert!(store.listed(&["--plugin", "other"]).is_empty());
    assert_eq!(store.listed(&["--owner", "local"]), newest_first);
    assert!(store.listed(&["--owner", "token:someone"]).is_empty());
    assert_eq!(store.listed(&["--newer-than", "1h"]), newest_first);
    assert!(store.listed(&["--older-than", "1h"]).is_empty());

    let first = store.json(&["list", "--limit", "3"]);
    assert_eq!(first["tasks"].as_array().unwrap().len(), 3);
    let next = first["next"].as_str().expect("a next cursor").to_owned();
    let rest = store.json(&["list", "--limit", "3", "--cursor", &next]);
    assert_eq!(rest["tasks"][0]["task_id"], quick[0].as_str());
    assert!(rest["next"].is_null(), "the last page: {rest}");

    let row = &first["tasks"][0];
    for field in ["task_id", "status", "message", "owner", "tool", "plugin", "created_at", "updated_at", "expires_at", "attempt", "checkpoint", "replica"] {
        assert!(row.get(field).is_some(), "a listed task has {field}: {row}");
    }
    assert_eq!((row["tool"].as_str(), row["plugin"].as_str(), row["owner"].as_str()), (Some("spin"), Some("work"), Some("local")));

    let table = store.ok(&["list"]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("TASK") && lines[0].contains("STATUS") && lines[0].contains("PLUGIN"), "{table}");
    assert_eq!(lines.len(), 5, "a header and a row per task:\n{table}");
    assert!(lines[1].starts_with(&spin) && lines[1].contains("working"), "{table}");
    assert_eq!(store.ok(&["list", "--tool", "nothing"]).trim(), "no tasks match");
}

fn show_tells_everything_and_the_arguments_only_when_asked(store: &Store) {
    let mut host = store.host(&[]);
    let id = run_task(&mut host, "quick", json!({ "note": "only-with-arguments" }));
    let shown = store.json(&["show", &id]);
    assert_eq!(shown["task_id"], id.as_str());
    assert_eq!((shown["status"].as_str(), shown["outcome"].as_str()), (Some("completed"), Some("result")), "{shown}");
    assert_eq!((shown["tool"].as_str(), shown["plugin"].as_str(), shown["attempt"].as_u64()), (Some("quick"), Some("work"), Some(1)));
    for field in ["started_at", "ended_at", "duration_ms", "queue_wait_ms", "replica"] {
        assert!(!shown[field].is_null(), "a finished task shows {field}: {shown}");
    }
    assert!(shown.get("arguments").is_none() && !shown.to_string().contains("only-with-arguments"), "arguments only when asked: {shown}");
    let with = store.json(&["show", &id, "--arguments"]);
    assert_eq!(with["arguments"], json!({ "note": "only-with-arguments" }));

    let text = store.ok(&["show", &id]);
    assert!(text.contains("quick") && text.contains("completed") && text.contains("outcome"), "{text}");
    assert!(!text.contains("only-with-arguments"), "{text}");
    assert!(store.ok(&["show", &id, "--arguments"]).contains("only-with-arguments"));
}

fn result_prints_inline_results_and_reads_kept_ones_whole(store: &Store) {
    let mut host = store.host(&["--inline-result-limit", "64KiB"]);
    let quick = run_task(&mut host, "quick", json!({}));
    assert_eq!(store.ok(&["result", &quick]), "quick ok\n");
    let inline = store.json(&["result", &quick]);
    assert_eq!((inline["outcome"].as_str(), inline["result"]["content"][0]["text"].as_str()), (Some("result"), Some("quick ok")), "{inline}");
    assert_eq!(inline["kept"], json!([]));

    let big = run_task(&mut host, "gen", json!({}));
    let whole = expected(GEN);
    assert_eq!(store.ok(&["result", &big]), format!("{whole}\n"), "the kept text, read page by page, stands where its link was");
    let kept = store.json(&["result", &big]);
    assert_eq!(kept["kept"][0]["uri"], format!("corral://results/{big}/0"));
    assert_eq!(kept["kept"][0]["size"], GEN);
    assert!(kept["kept"][0]["data"] == whole.as_str(), "the kept piece whole");
    assert_eq!(kept["result"]["content"][1]["type"], "resource_link", "the result as stored");

    let spin = create(&mut host, "spin", json!({}));
    let out = store.run(&["result", &spin]);
    assert!(failed(&out, 1).contains("is still working"), "{out:?}");
}

fn cancel_stops_a_spinning_guest_on_its_host(store: &Store) {
    // One worker: the queued task runs only once the spinning guest has really stopped.
    let mut host = store.host(&["--max-running", "1"]);
    let spin = create(&mut host, "spin", json!({}));
    store.wait_started(&spin);
    let queued = create(&mut host, "quick", json!({}));
    let waiting = store.json(&["show", &queued]);
    assert!(waiting["started_at"].is_null() && waiting["status"] == "working", "it waits behind the spinning task: {waiting}");

    let trail = tempfile::NamedTempFile::new().unwrap();
    let trail_path = trail.path().to_str().unwrap();
    let said = store.ok(&["cancel", &spin, "--operator", "alice", "--reason", "spinning for ever", "--audit-log", trail_path]);
    assert!(said.contains(&format!("cancelled {spin}")), "{said}");
    // The command leaves its record in the trail before it exits: who, why, which task.
    let record: Value = serde_json::from_str(std::fs::read_to_string(trail.path()).unwrap().trim()).unwrap();
    assert_eq!((record["kind"].as_str(), record["action"].as_str(), record["outcome"].as_str()), (Some("operator"), Some("cancel"), Some("done")));
    assert_eq!(
        (record["operator"].as_str(), record["reason"].as_str(), record["task_id"].as_str()),
        (Some("alice"), Some("spinning for ever"), Some(spin.as_str()))
    );
    let after = host.result("tasks/result", json!({ "taskId": queued }));
    assert_eq!(after["content"][0]["text"], "quick ok", "the worker was freed: the guest stopped");
    let cancelled = host.result("tasks/get", json!({ "taskId": spin }));
    assert_eq!(cancelled["status"], "cancelled");
    assert_eq!(cancelled["statusMessage"], "cancelled by operator alice from corral tasks cancel: spinning for ever", "{cancelled}");
    assert_eq!(store.json(&["show", &spin])["outcome"], "cancelled");
    assert_eq!(run_task(&mut host, "quick", json!({})).len(), 36, "the host keeps serving");

    let again = store.run(&["cancel", &spin, "--audit-log", trail_path]);
    assert!(failed(&again, 1).contains("has already ended (cancelled)"), "{again:?}");
    let text = std::fs::read_to_string(trail.path()).unwrap();
    let refused: Value = serde_json::from_str(text.lines().nth(1).expect("a second record")).unwrap();
    assert_eq!((refused["outcome"].as_str(), refused["detail"].as_str()), (Some("refused"), Some("already cancelled")), "{text}");
    // A reason is one line.
    assert!(failed(&store.run(&["cancel", &spin, "--reason", "two\nlines"]), 2).contains("one line"));
}

fn purge_deletes_ended_tasks_and_refuses_running_ones(store: &Store) {
    let mut host = store.host(&[]);
    let done = run_task(&mut host, "quick", json!({}));
    let spin = create(&mut host, "spin", json!({}));
    let refused = store.run(&["purge", &spin]);
    assert!(failed(&refused, 1).contains(&format!("task {spin} is working: not deleted (cancel it first)")), "{refused:?}");
    assert_eq!(store.json(&["show", &spin])["status"], "working", "a running task stays");

    let out = store.run(&["purge", &done, "no-such-task", "--json"]);
    failed(&out, 1);
    let purged: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(purged["tasks"][0], json!({ "task_id": done, "deleted": true, "status": null, "known": true }));
    assert_eq!(purged["tasks"][1]["known"], false);
    assert!(failed(&store.run(&["show", &done]), 2).contains("no task"), "gone");
    assert!(store.ok(&["purge", "--expired"]).contains("deleted 0 expired task(s)"));
    assert!(failed(&store.run(&["purge"]), 2).contains("--expired"), "nothing named");
    let _ = host.result("tasks/cancel", json!({ "taskId": spin }));
}

fn watch_shows_a_transition_live(store: &Store) {
    let mut host = store.host(&[]);
    let spin = create(&mut host, "spin", json!({}));
    let mut watch = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["tasks", "watch", "--json", "--interval", "100ms", "--db", &store.db])
        .env_remove("CORRAL_DB")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, lines) = mpsc::channel::<Value>();
    let stdout = watch.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(serde_json::from_str(&line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}")));
        }
    });
    let next_about = |id: &str, what: &dyn Fn(&Value) -> bool| loop {
        let line = lines.recv_timeout(TIMEOUT).expect("watch printed nothing more");
        if line["task_id"] == id && what(&line) {
            return line;
        }
    };
    let listed = next_about(&spin, &|l| l["event"] == "listed");
    assert_eq!(listed["status"], "working");
    host.result("tasks/cancel", json!({ "taskId": spin }));
    let changed = next_about(&spin, &|l| l["event"] == "changed");
    assert_eq!((changed["previous_status"].as_str(), changed["status"].as_str()), (Some("working"), Some("cancelled")), "{changed}");
    let quick = create(&mut host, "quick", json!({}));
    next_about(&quick, &|l| l["event"] == "added");

    let interrupted = Command::new("kill").args(["-INT", &watch.id().to_string()]).status().unwrap();
    assert!(interrupted.success());
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = watch.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "watch did not stop on Ctrl-C");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "Ctrl-C ends watch cleanly: {status}");
}

fn errors_name_the_problem(store: &Store) {
    let mut host = store.host(&[]);
    run_task(&mut host, "quick", json!({}));
    let unknown = store.run(&["show", "no-such-task"]);
    assert!(failed(&unknown, 2).contains("no task \"no-such-task\" in this store"), "{unknown:?}");
    assert!(failed(&store.run(&["cancel", "no-such-task"]), 2).contains("no task"));
    let status = store.run(&["list", "--status", "finished"]);
    assert!(failed(&status, 2).contains("no task status is called \"finished\""), "{status:?}");
    assert!(failed(&store.run(&["list", "--limit", "0"]), 2).contains("not a page size"));
    assert!(failed(&store.run(&["list", "--cursor", "page-2"]), 2).contains("not a cursor"));
    assert!(failed(&store.run(&["list", "--older-than", "soon"]), 2).contains("not a duration"));
    assert_eq!(store.listed(&[]).len(), 1, "the store is as it was");
}

/// Errors that need no store: a missing file, a URL of no known store, a server that is not
/// there (its password never shown).
#[test]
fn a_missing_database_and_bad_urls_are_named() {
    let tasks = |db: &str| Command::new(env!("CARGO_BIN_EXE_corral")).args(["tasks", "list", "--db", db]).env_remove("CORRAL_DB").output().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent.db");
    let out = tasks(missing.to_str().unwrap());
    assert!(failed(&out, 2).contains("absent.db: no such file"), "{out:?}");
    assert!(!missing.exists(), "a missing store is never created");
    assert!(failed(&tasks("mysql://db.example/tasks"), 2).contains("no task store corral knows"));
    assert!(failed(&tasks(":memory:"), 2).contains("lives inside the host"));
    let unreachable = failed(&tasks("postgres://corral:hunter2@127.0.0.1:1/tasks"), 2);
    assert!(unreachable.contains("cannot connect") && !unreachable.contains("hunter2"), "{unreachable}");
    let junk = dir.path().join("notes.txt");
    std::fs::write(&junk, "not a database").unwrap();
    assert!(failed(&tasks(junk.to_str().unwrap()), 2).contains("is it a corral task database?"));
}

/// Another program's SQLite database given as `--db`: every command refuses it, naming the
/// problem, and the file is left byte for byte as it was (no corral table, no journal).
#[test]
fn another_programs_database_is_refused_and_left_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let foreign = dir.path().join("notes.db");
    {
        let conn = rusqlite::Connection::open(&foreign).unwrap();
        conn.execute_batch("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('keep me');").unwrap();
    }
    let before = std::fs::read(&foreign).unwrap();
    let db = foreign.to_str().unwrap();
    for args in [&["list"][..], &["show", "t1"], &["cancel", "t1"], &["purge", "--expired"], &["watch"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_corral")).arg("tasks").args(args).args(["--db", db]).env_remove("CORRAL_DB").output().unwrap();
        let stderr = failed(&out, 2);
        assert!(
            stderr.contains("notes.db") && stderr.contains("without corral's schema") && stderr.contains("is it a corral task database?"),
            "{args:?}: {stderr}"
        );
    }
    assert!(std::fs::read(&foreign).unwrap() == before, "the foreign database is unchanged");
    let conn = rusqlite::Connection::open_with_flags(&foreign, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let tables: Vec<String> =
        conn.prepare("SELECT name FROM sqlite_master ORDER BY name").unwrap().query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
    assert_eq!(tables, ["notes"], "no corral table or index was created");
    let entries: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(entries, ["notes.db"], "no journal or WAL file beside it");
}

/// Each scenario on a SQLite file and on PostgreSQL.
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $( #[test] fn $name() { if let Some(store) = super::Store::sqlite() { super::$name(&store) } } )*
        }
        mod postgres {
            $( #[test] fn $name() { if let Some(store) = super::Store::postgres() { super::$name(&store) } } )*
        }
    };
}

on_both_stores!(
    list_filters_and_pages_newest_first,
    show_tells_everything_and_the_arguments_only_when_asked,
    result_prints_inline_results_and_reads_kept_ones_whole,
    cancel_stops_a_spinning_guest_on_its_host,
    purge_deletes_ended_tasks_and_refuses_running_ones,
    watch_shows_a_transition_live,
    errors_name_the_problem,
);
