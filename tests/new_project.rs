//! `corral new`: each language's project builds on the first try, passes its own test, and the
//! host serves the component it builds.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{McpProcess, PROTOCOL_VERSION};
use serde_json::json;
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

/// Creates project `name` in a temp dir with `corral new`, returning the dir and the project.
fn new_project(name: &str, lang: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let out = corral(&["new", name, "--lang", lang, "--dir", dir.path().to_str().unwrap()]);
    assert!(out.status.success(), "corral new: {}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("./build.sh"), "it says how to build");
    let project = dir.path().join(name);
    (dir, project)
}

/// Serves the project's `dist/` and calls its starter tool: a greeting, and an `isError` result
/// for an empty name.
fn assert_serves_greeting(project: &Path, name: &str) {
    let dist = project.join("dist");
    assert!(dist.join(format!("{name}.wasm")).is_file() && dist.join(format!("{name}.toml")).is_file(), "build.sh fills dist/");
    let tool = name.replace('-', "_");
    let mut mcp = McpProcess::spawn(&["serve", "--plugins", dist.to_str().unwrap(), "--log-level", "warn"]);
    let id = mcp.send_request("initialize", json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "new", "version": "0"}}));
    let response = mcp.wait_response(id, Duration::from_secs(300));
    assert!(response.get("result").is_some(), "initialize: {response}");
    mcp.notify("notifications/initialized", json!({}));
    let result = mcp.call_tool(&tool, json!({"name": "Ada"}));
    assert_eq!(result["content"][0]["text"], "Hello, Ada!", "{result:#}");
    assert!(result.get("isError").is_none_or(|e| e == false), "{result:#}");
    let result = mcp.call_tool(&tool, json!({"name": " "}));
    assert_eq!(result["isError"], true, "{result:#}");
    assert!(result["content"][0]["text"].as_str().unwrap().contains("say who to greet"), "{result:#}");
}

#[test]
fn a_new_rust_project_tests_builds_and_serves() {
    let (_dir, project) = new_project("hello-rust", "rust");
    // A target dir that outlives the test, so reruns build only what changed.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("new-rust-project");
    run(&project, "cargo", &["test"], &[("CARGO_TARGET_DIR", &target)]);
    run(&project, "./build.sh", &[], &[("CARGO_TARGET_DIR", &target)]);
    assert_serves_greeting(&project, "hello-rust");
    assert_serves_checkpointing_task(&project);
    let out = corral(&["inspect", project.join("dist/hello-rust.wasm").to_str().unwrap()]);
    assert!(out.status.success(), "inspect: {}", String::from_utf8_lossy(&out.stdout));
}

/// The Rust project's second tool, `hello_rust_primes`, run as a task: it checkpoints after each
/// chunk (contract 0.3.0), and its result comes from `tasks/result`.
fn assert_serves_checkpointing_task(project: &Path) {
    let dist = project.join("dist");
    let mut mcp = McpProcess::spawn(&["serve", "--plugins", dist.to_str().unwrap(), "--log-level", "warn"]);
    mcp.initialize();
    let created = mcp.result("tools/call", json!({"name": "hello_rust_primes", "arguments": {"below": 250000}, "task": {}}));
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
    let (_dir, project) = new_project("hello-c", "c");
    run(&project, "./build.sh", &[], &[]);
    assert_serves_greeting(&project, "hello-c");
    let out = corral(&["inspect", project.join("dist/hello-c.wasm").to_str().unwrap()]);
    assert!(out.status.success(), "inspect: {}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_new_js_project_tests_builds_and_serves() {
    let (_dir, project) = new_project("hello-js", "js");
    run(&project, "./build.sh", &[], &[]);
    run(&project, "npm", &["test"], &[]);
    assert_serves_greeting(&project, "hello-js");
}

#[test]
fn a_new_python_project_tests_builds_and_serves() {
    let (_dir, project) = new_project("hello-python", "python");
    run(&project, "python3", &["-m", "unittest"], &[]);
    run(&project, "./build.sh", &[], &[]);
    assert_serves_greeting(&project, "hello-python");
}
