//! The default-deny sandbox, checked from inside a real Rust guest built from source:
//! no environment, arguments, files or sockets; stdout and stderr go to the host log.

mod common;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::McpProcess;
use serde_json::{json, Value};

/// Builds `tests/guests/probe` for wasm32-wasip2 and returns the component's path.
fn build_probe() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let guests = root.join("tests/guests");
    let target = guests.join("target");
    let out = Command::new(env!("CARGO"))
        .args(["build", "--locked", "--release", "--target", "wasm32-wasip2", "--manifest-path"])
        .arg(guests.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target)
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("running cargo for the probe guest");
    assert!(out.status.success(), "building the probe guest failed:\n{}", String::from_utf8_lossy(&out.stderr));
    target.join("wasm32-wasip2/release/probe.wasm")
}

#[test]
fn a_guest_sees_no_environment_files_or_network_and_its_output_goes_to_the_log() {
    let probe = build_probe();
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&probe, dir.path().join("probe.wasm")).unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();

    let mut host = McpProcess::spawn(&["serve", "--plugins", dir.path().to_str().unwrap()]);
    host.initialize();
    let result = host.call_tool("probe", json!({ "connect": addr }));
    assert_ne!(result["isError"], json!(true), "{result}");
    let report: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();

    assert_eq!(report["env"], 0, "no environment variables: {report}");
    assert_eq!(report["args"], 0, "no arguments: {report}");
    for key in ["root_dir", "cwd_file", "etc_passwd"] {
        assert!(report[key].as_str().unwrap().starts_with("denied"), "{key} must be denied: {report}");
    }
    assert!(report["connect"].as_str().unwrap().starts_with("denied"), "TCP must be denied: {report}");
    assert!(listener.accept().is_err(), "the listener must not have received a connection");
    assert!(report["now"].as_u64().unwrap() > 1_600_000_000, "clocks are allowed: {report}");

    let log = host.wait_stderr("the probe's output in the host log", Duration::from_secs(10), |s| {
        s.contains("probe says hello on stdout") && s.contains("probe says hello on stderr")
    });
    let line = log.lines().find(|l| l.contains("probe says hello on stdout")).unwrap();
    assert!(line.contains("plugin=probe"), "the log line names the plugin: {line}");
    assert_eq!(host.result("ping", json!({})), json!({}));
}
