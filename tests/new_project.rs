//! `corral new`: each language's project builds on the first try, passes its own test, and the
//! host serves the component it builds. JavaScript and Python projects are on contract 0.3.0
//! with the helper layer: their tally runs as a task, and the JavaScript one resumes from its
//! checkpoint after the host is killed.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{McpProcess, PROTOCOL_VERSION};
use serde_json::{json, Value};
use std::time::Duration;

fn corral(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_corral")).args(["--log-level", "error"]).args(args).env("CORRAL_DB", ":memory:").output().expect("running corral")
}

/// Runs `program args` in `dir`, panicking with its output when it fails.
fn run(dir: &Path, program: &str, args: &[&str], envs: &[(&str, &Path)]) -> String {
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(dir).stdin(std::process::Stdio::null());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "`{program} {}` in {} failed ({}):\n{text}", args.join(" "), dir.display(), out.status);
    text
}

/// Creates project `name` in a temp dir with `corral new` (and `extra` flags), returning the dir
/// and the project.
fn new_project(name: &str, lang: &str, extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let mut args = vec!["new", name, "--lang", lang, "--dir", dir.path().to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = corral(&args);
    assert!(out.status.success(), "corral new: {}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("./build.sh"), "it says how to build");
    let project = dir.path().join(name);
    (dir, project)
}

/// The result of the first `tools/call` of a host just started, which waits for its plugin to
/// load (`--load-wait`): compiling a component may take long on a loaded machine.
fn after_load(mcp: &mut McpProcess, params: Value) -> Value {
    let id = mcp.send_request("tools/call", params);
    let response = mcp.wait_response(id, Duration::from_secs(300));
    response.get("result").cloned().unwrap_or_else(|| panic!("tools/call: {response}"))
}

/// Serves the project's `dist/` (with `extra` flags of `serve`) and calls its starter tool: a
/// greeting, and an `isError` result for an empty name.
fn assert_serves_greeting(project: &Path, name: &str, extra: &[&str]) {
    let dist = project.join("dist");
    assert!(dist.join(format!("{name}.wasm")).is_file() && dist.join(format!("{name}.toml")).is_file(), "build.sh fills dist/");
    let tool = name.replace('-', "_");
    let mut args = vec!["serve", "--plugins", dist.to_str().unwrap(), "--log-level", "warn", "--load-wait", "300s"];
    args.extend_from_slice(extra);
    let mut mcp = McpProcess::spawn(&args);
    let id = mcp.send_request("initialize", json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "new", "version": "0"}}));
    let response = mcp.wait_response(id, Duration::from_secs(300));
    assert!(response.get("result").is_some(), "initialize: {response}");
    mcp.notify("notifications/initialized", json!({}));
    // The first call waits for its plugin to load (`--load-wait`), which compiling a JS or
    // Python component may take long for on a loaded machine.
    let result = after_load(&mut mcp, json!({"name": tool, "arguments": {"name": "Ada"}}));
    assert_eq!(result["content"][0]["text"], "Hello, Ada!", "{result:#}");
    assert!(result.get("isError").is_none_or(|e| e == false), "{result:#}");
    let result = mcp.call_tool(&tool, json!({"name": " "}));
    assert_eq!(result["isError"], true, "{result:#}");
    assert!(result["content"][0]["text"].as_str().unwrap().contains("say who to greet"), "{result:#}");
}

/// Calls the project's `TOOL_tally` as a task through the host: it adds up, reports progress,
/// checkpoints, and says it started from the beginning.
fn assert_tally_runs_as_a_task(project: &Path, name: &str) {
    let dist = project.join("dist");
    let tally = format!("{}_tally", name.replace('-', "_"));
    let mut mcp = McpProcess::spawn(&["serve", "--plugins", dist.to_str().unwrap(), "--log-level", "warn", "--load-wait", "300s"]);
    mcp.initialize();
    let created = after_load(&mut mcp, json!({ "name": tally, "arguments": { "to": 1000, "every": 100 }, "task": {} }));
    let id = created["task"]["taskId"].as_str().expect("a task").to_owned();
    let result = mcp.result("tasks/result", json!({ "taskId": id }));
    assert_eq!(result["structuredContent"], json!({ "sum": 500500, "resumedAt": 1 }), "{result:#}");
    let task = mcp.result("tasks/get", json!({ "taskId": id }));
    assert_eq!(task["status"], "completed", "{task:#}");
    // A wrong argument is refused naming the field (the host checks the schema the kit made).
    let wrong = mcp.call_tool(&tally, json!({ "to": 0 }));
    assert_eq!(wrong["isError"], true, "{wrong:#}");
    assert!(wrong["content"][0]["text"].as_str().unwrap().contains("/to"), "{wrong:#}");
    let out = corral(&["inspect", dist.join(format!("{name}.wasm")).to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("corral:plugin@0.3.0"), "on the newest contract: {}", String::from_utf8_lossy(&out.stdout));
}

/// The tally of a big `to` run as a task on a database file, the host SIGKILLed a quarter of
/// the way, a new host on the same database: the task resumes from its last checkpoint (not
/// from 1) and still adds every number once.
fn assert_tally_resumes_after_a_kill(project: &Path, name: &str) {
    const TO: u64 = 30_000_000;
    let dist = project.join("dist");
    // Room for the long run: the starter manifest's 10 s and default fuel are for calls.
    let manifest = std::fs::read_to_string(dist.join(format!("{name}.toml"))).unwrap();
    // Under `[limits]`, which is no longer the manifest's last table (`[build]` follows it).
    assert!(manifest.contains("\n[limits]\n"), "{manifest}");
    let manifest = manifest.replacen("\n[limits]\n", "\n[limits]\ntask-timeout = \"5m\"\nfuel = 1000000000000\n", 1);
    std::fs::write(dist.join(format!("{name}.toml")), manifest).unwrap();
    let db = tempfile::tempdir().unwrap();
    let db_file = db.path().join("tasks.db");
    let start = || {
        let mut mcp =
            McpProcess::spawn(&["serve", "--plugins", dist.to_str().unwrap(), "--db", db_file.to_str().unwrap(), "--log-level", "warn", "--load-wait", "300s"]);
        mcp.initialize();
        mcp
    };
    let added = |task: &Value| -> u64 {
        let message = task["statusMessage"].as_str().unwrap_or("");
        message.strip_prefix("added up to ").and_then(|m| m.split(' ').next()).and_then(|n| n.parse().ok()).unwrap_or(0)
    };
    let wait_for = |mcp: &mut McpProcess, id: &str, what: &str, done: &dyn Fn(&Value) -> bool| -> Value {
        let deadline = std::time::Instant::now() + Duration::from_secs(300);
        loop {
            let task = mcp.result("tasks/get", json!({ "taskId": id }));
            if done(&task) {
                return task;
            }
            assert!(std::time::Instant::now() < deadline, "{what} never happened: {task:#}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let tally = format!("{}_tally", name.replace('-', "_"));
    let mut mcp = start();
    let created = mcp.result("tools/call", json!({ "name": tally, "arguments": { "to": TO, "every": TO / 200 }, "task": {} }));
    let id = created["task"]["taskId"].as_str().expect("a task").to_owned();
    let before = wait_for(&mut mcp, &id, "a quarter of the tally", &|t| added(t) >= TO / 4);
    assert!(added(&before) < TO, "the kill must come before the end: {before:#}");
    drop(mcp); // SIGKILL: no shutdown code runs.

    let mut mcp = start();
    let done = wait_for(&mut mcp, &id, "the resumed run's end", &|t| ["completed", "failed", "cancelled"].contains(&t["status"].as_str().unwrap()));
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["_meta"]["corral/resumed"]["attempt"], 2, "{done:#}");
    let result = mcp.result("tasks/result", json!({ "taskId": id }));
    let resumed_at = result["structuredContent"]["resumedAt"].as_u64().unwrap();
    // The progress seen before the kill may run ahead of the last checkpoint stored, so the
    // resumed run starts somewhere after 1, not necessarily past that progress.
    assert!(resumed_at > 1, "it resumed from its checkpoint, not from 1: {result:#}");
    assert_eq!(result["structuredContent"]["sum"], TO * (TO + 1) / 2, "every number once: {result:#}");
}

#[test]
fn a_new_rust_project_tests_builds_and_serves() {
    // It declares a caller secret, which its starter tool reads from its environment.
    let (dir, project) = new_project("hello-rust", "rust", &["--secret", "API_TOKEN"]);
    // A target dir that outlives the test, so reruns build only what changed.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("new-rust-project");
    run(&project, "cargo", &["test"], &[("CARGO_TARGET_DIR", &target)]);
    run(&project, "./build.sh", &[], &[("CARGO_TARGET_DIR", &target)]);
    let out = corral(&["inspect", project.join("dist/hello-rust.wasm").to_str().unwrap()]);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "inspect: {shown}");
    assert!(shown.contains("API_TOKEN from the caller: Your API_TOKEN for the service hello-rust calls"), "inspect shows the secret: {shown}");

    // The local user on stdio gives theirs; a store where nobody has is refused before the tool runs.
    let key = dir.path().join("secrets.key");
    std::fs::write(&key, "6b1f3c2a9d8e7f60514233241506f7e8d9cabbac0d1e2f30415263748596a7b8\n").unwrap();
    let (given, empty) = (dir.path().join("given.db"), dir.path().join("empty.db"));
    let mut set = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["secrets", "set", "hello-rust", "API_TOKEN", "--principal", "local", "--db"])
        .arg(&given)
        .arg("--secrets-key-file")
        .arg(&key)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut set.stdin.take().unwrap(), b"tok-ada-0123456789").unwrap();
    assert!(set.wait().unwrap().success(), "corral secrets set");
    let (key, given, empty) = (key.to_str().unwrap(), given.to_str().unwrap(), empty.to_str().unwrap());
    let dist = project.join("dist");
    let mut mcp = McpProcess::spawn(&[
        "serve",
        "--plugins",
        dist.to_str().unwrap(),
        "--log-level",
        "warn",
        "--load-wait",
        "300s",
        "--db",
        empty,
        "--secrets-key-file",
        key,
    ]);
    mcp.initialize();
    let refused = after_load(&mut mcp, json!({"name": "hello_rust", "arguments": {"name": "Ada"}}));
    assert_eq!(refused["_meta"]["corral/error"]["secret"], "API_TOKEN", "{refused:#}");
    assert!(refused["content"][0]["text"].as_str().unwrap().contains("secret API_TOKEN of plugin hello-rust is not set for local"), "{refused:#}");
    drop(mcp);
    assert_serves_greeting(&project, "hello-rust", &["--db", given, "--secrets-key-file", key]);
    assert_serves_checkpointing_task(&project, &["--db", given, "--secrets-key-file", key]);
}

/// The Rust project's second tool, `hello_rust_primes`, run as a task: it checkpoints after each
/// chunk (contract 0.3.0), and its result comes from `tasks/result`.
fn assert_serves_checkpointing_task(project: &Path, extra: &[&str]) {
    let dist = project.join("dist");
    let mut args = vec!["serve", "--plugins", dist.to_str().unwrap(), "--log-level", "warn", "--load-wait", "300s"];
    args.extend_from_slice(extra);
    let mut mcp = McpProcess::spawn(&args);
    mcp.initialize();
    let created = after_load(&mut mcp, json!({"name": "hello_rust_primes", "arguments": {"below": 250000}, "task": {}}));
    let id = created["task"]["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created:#}")).to_owned();
    let result = mcp.result("tasks/result", json!({"taskId": id}));
    assert_eq!(result["content"][0]["text"], "22044 primes below 250000", "{result:#}");
    let task = mcp.result("tasks/get", json!({"taskId": id}));
    assert_eq!(task["status"], "completed", "{task:#}");
}

#[test]
fn a_new_c_project_builds_and_serves() {
    // build-plugins.sh installs the C toolchain (clang, wasm-ld, the WASI libc) when it is missing.
    common::example_dist();
    let (_dir, project) = new_project("hello-c", "c", &[]);
    run(&project, "./build.sh", &[], &[]);
    assert_serves_greeting(&project, "hello-c", &[]);
    assert!(std::fs::read_to_string(project.join("wit/plugin.wit")).unwrap().contains("package corral:plugin@0.3.0;"), "the newest contract");
    let out = corral(&["inspect", project.join("dist/hello-c.wasm").to_str().unwrap()]);
    assert!(out.status.success(), "inspect: {}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_new_js_project_tests_builds_and_serves() {
    let (_dir, project) = new_project("hello-js", "js", &[]);
    run(&project, "./build.sh", &[], &[]);
    run(&project, "npm", &["test"], &[]);
    assert_serves_greeting(&project, "hello-js", &[]);
    assert_tally_runs_as_a_task(&project, "hello-js");
    assert_tally_resumes_after_a_kill(&project, "hello-js");
}

#[test]
fn a_new_python_project_tests_builds_and_serves() {
    let (_dir, project) = new_project("hello-python", "python", &[]);
    run(&project, "python3", &["-m", "unittest"], &[]);
    run(&project, "./build.sh", &[], &[]);
    // A debug build takes over a minute to compile the 18 MB component the first time, longer
    // than a request waits: inspect compiles it into the cache the hosts below load it from.
    let out = corral(&["inspect", project.join("dist/hello-python.wasm").to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("corral:plugin@0.3.0"), "inspect: {}", String::from_utf8_lossy(&out.stdout));
    assert_serves_greeting(&project, "hello-python", &[]);
    assert_tally_runs_as_a_task(&project, "hello-python");
}
