//! `corral new`: each language's project builds on the first try, passes its own test, and the
//! host serves the component it builds.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

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

/// Calls the starter tool of the project's `dist/` through `corral call` and checks its greeting.
fn assert_serves_greeting(project: &Path, name: &str) {
    let dist = project.join("dist");
    assert!(dist.join(format!("{name}.wasm")).is_file() && dist.join(format!("{name}.toml")).is_file(), "build.sh fills dist/");
    let tool = name.replace('-', "_");
    let out = corral(&["call", "--plugins", dist.to_str().unwrap(), &tool, r#"{"name": "Ada"}"#]);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert!(out.status.success(), "{result:#}");
    assert_eq!(result["content"][0]["text"], "Hello, Ada!", "{result:#}");
    let out = corral(&["call", "--plugins", dist.to_str().unwrap(), &tool, r#"{"name": ""}"#]);
    assert_eq!(out.status.code(), Some(1), "an empty name is a tool error: {}", String::from_utf8_lossy(&out.stdout));
    let out = corral(&["inspect", dist.join(format!("{name}.wasm")).to_str().unwrap()]);
    assert!(out.status.success(), "inspect: {}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_new_rust_project_tests_builds_and_serves() {
    let (_dir, project) = new_project("hello-rust", "rust");
    // A target dir that outlives the test, so reruns build only what changed.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("new-rust-project");
    run(&project, "cargo", &["test"], &[("CARGO_TARGET_DIR", &target)]);
    run(&project, "./build.sh", &[], &[("CARGO_TARGET_DIR", &target)]);
    assert_serves_greeting(&project, "hello-rust");
}
