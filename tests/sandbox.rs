//! The sandbox, checked from inside a real Rust guest built from source: by default no
//! environment, arguments, files or sockets (stdout and stderr go to the host log); with a
//! manifest's `[permissions]`, exactly the directories, variables and destinations granted.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::McpProcess;
use serde_json::{json, Value};

/// `tests/guests/probe`, built from source.
fn build_probe() -> PathBuf {
    common::test_guests().join("probe.wasm")
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

    assert_eq!(report["env_count"], 0, "no environment variables: {report}");
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

fn probe(host: &mut McpProcess, arguments: Value) -> (Value, Value) {
    let result = host.call_tool("probe", arguments);
    let report: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    (report, result)
}

fn denials(result: &Value) -> Vec<String> {
    result["_meta"]["corral/denied"].as_array().map(|a| a.iter().map(|d| d.as_str().unwrap().to_owned()).collect()).unwrap_or_default()
}

/// Answers every connection with a tiny HTTP 200, so both raw TCP and wasi:http can reach it.
fn serve_http_ok(listener: TcpListener) {
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut buf = [0u8; 1024];
            let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = stream.read(&mut buf);
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok");
        }
    });
}

#[test]
fn a_guest_gets_exactly_what_its_manifest_grants() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(build_probe(), dir.path().join("probe.wasm")).unwrap();
    let data = tempfile::tempdir().unwrap();
    let (input, output) = (data.path().join("in"), data.path().join("out"));
    std::fs::create_dir_all(&input).unwrap();
    std::fs::create_dir_all(&output).unwrap();
    std::fs::write(input.join("data.txt"), "granted data").unwrap();
    std::fs::write(data.path().join("secret.txt"), "outside every grant").unwrap();

    let allowed = TcpListener::bind("127.0.0.1:0").unwrap();
    let allowed_port = allowed.local_addr().unwrap().port();
    serve_http_ok(allowed);
    let other = TcpListener::bind("127.0.0.1:0").unwrap();
    other.set_nonblocking(true).unwrap();
    let other_port = other.local_addr().unwrap().port();

    common::write_manifest(
        dir.path(),
        "probe",
        &format!(
            r#"[permissions]
network = ["127.0.0.1:{allowed_port}", "localhost:{allowed_port}"]
dirs = [
    {{ host = "{input}", guest = "/in", mode = "ro" }},
    {{ host = "{output}", guest = "/out", mode = "rw" }},
]
[permissions.env]
pass = ["PATH", "CORRAL_SURELY_UNSET_VARIABLE"]
set = {{ PROBE_MODE = "test" }}
"#,
            input = input.display(),
            output = output.display()
        ),
    );

    // `corral tools` shows the grants (variable names, never values).
    let out = Command::new(env!("CARGO_BIN_EXE_corral")).args(["tools", "--plugins", dir.path().to_str().unwrap()]).output().unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    let grants = table.lines().find(|l| l.starts_with("plugin probe:")).unwrap_or_else(|| panic!("no grants line in:\n{table}"));
    for part in
        ["/in = ", "(ro)", "/out = ", "(rw)", "PATH (passed)", "PROBE_MODE (set)", &format!("network 127.0.0.1:{allowed_port}, localhost:{allowed_port}")]
    {
        assert!(grants.contains(part), "`{part}` missing from: {grants}");
    }
    assert!(!table.contains("\"test\"") && !table.contains("=test"), "a set value leaked: {table}");

    let mut host = McpProcess::spawn(&["serve", "--plugins", dir.path().to_str().unwrap()]);
    host.initialize();

    // Directories: the read-only grant reads but does not write; the read-write one writes;
    // nothing outside a grant is visible.
    let (r, _) = probe(&mut host, json!({ "read": "/in/data.txt" }));
    assert_eq!(r["read"], "granted data");
    let (r, result) = probe(&mut host, json!({ "write": "/in/new.txt", "text": "x" }));
    assert!(r["write"].as_str().unwrap().starts_with("denied"), "{r}");
    assert!(!input.join("new.txt").exists(), "a read-only grant was written to");
    let expected = "dirs: writing `new.txt` was denied: its directory is granted read-only; grant it with mode = \"rw\"";
    assert!(denials(&result).iter().any(|d| d.starts_with(expected)), "{result}");
    let (r, _) = probe(&mut host, json!({ "write": "/out/new.txt", "text": "written by the guest" }));
    assert_eq!(r["write"], "wrote");
    assert_eq!(std::fs::read_to_string(output.join("new.txt")).unwrap(), "written by the guest");
    let secret = data.path().join("secret.txt");
    let (r, _) = probe(&mut host, json!({ "read": secret.to_str().unwrap() }));
    assert!(r["read"].as_str().unwrap().starts_with("denied"), "{r}");
    assert!(r["etc_passwd"].as_str().unwrap().starts_with("denied"), "{r}");

    // Environment: the passed and the set variable, nothing else.
    let (r, _) = probe(&mut host, json!({ "env": "PATH" }));
    assert_eq!(r["env"], std::env::var("PATH").unwrap());
    assert_eq!(r["env_count"], 2, "PATH and PROBE_MODE only: {r}");
    let (r, _) = probe(&mut host, json!({ "env": "PROBE_MODE" }));
    assert_eq!(r["env"], "test");
    let (r, _) = probe(&mut host, json!({ "env": "HOME" }));
    assert_eq!(r["env"], Value::Null, "HOME was not passed");

    // Network: the allowed port by IP, by name and over wasi:http; any other port is refused,
    // and the result names the grant that would allow it.
    let (r, result) = probe(
        &mut host,
        json!({ "connect": format!("127.0.0.1:{allowed_port}"), "connect_name": format!("localhost:{allowed_port}"), "http": format!("127.0.0.1:{allowed_port}") }),
    );
    assert_eq!((r["connect"].as_str(), r["connect_name"].as_str(), r["http"].as_str()), (Some("connected"), Some("connected"), Some("status 200")), "{r}");
    assert!(denials(&result).is_empty(), "{result}");

    let (r, result) = probe(&mut host, json!({ "connect": format!("127.0.0.1:{other_port}"), "strict": true }));
    assert!(r["connect"].as_str().unwrap().starts_with("denied"), "{r}");
    assert!(other.accept().is_err(), "the refused port received a connection");
    assert_eq!(result["isError"], true);
    let expected =
        format!("network: a TCP connection to 127.0.0.1:{other_port} was denied; allow it with network = [\"127.0.0.1:{other_port}\"] under [permissions]");
    assert!(denials(&result).iter().any(|d| d.starts_with(&expected)), "{result}");
    let texts: Vec<&str> = result["content"].as_array().unwrap().iter().filter_map(|c| c["text"].as_str()).collect();
    assert!(texts.iter().any(|t| t.starts_with("corral: network: a TCP connection")), "the error names the permission: {result}");

    let (r, result) = probe(&mut host, json!({ "http": format!("127.0.0.1:{other_port}") }));
    assert!(r["http"].as_str().unwrap().contains("HttpRequestDenied"), "{r}");
    assert!(denials(&result).iter().any(|d| d.contains(&format!("an HTTP request to 127.0.0.1:{other_port} was denied"))), "{result}");

    // DNS answers only names the allow-list mentions.
    let (r, result) = probe(&mut host, json!({ "connect_name": "not-allowed.example:80" }));
    assert!(r["connect_name"].as_str().unwrap().starts_with("denied"), "{r}");
    assert!(denials(&result).iter().any(|d| d.contains("looking up the name not-allowed.example was denied")), "{result}");
    assert_eq!(host.result("ping", json!({})), json!({}));
}
