//! The audit trail (`--audit-log`), the host's JSON log (`--log-format json`) and `/readyz`,
//! against the real binary: calls in both eras over both transports, a task's transitions, a
//! call that ran out of fuel, a sandbox denial, arguments only when asked, a reopen after a
//! rename (SIGHUP), and a writer that cannot keep up (a FIFO nobody reads), which must not
//! stall a single call.

mod common;

#[path = "../src/tasks/postgres/testing.rs"]
mod pg_testing;

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::modern_http::{agent, post_modern, try_post_modern};
use common::{example_plugins, test_guests, HttpServe, McpProcess, Transport, TIMEOUT};
use serde_json::{json, Value};

const MODERN: &str = "2026-07-28";
const TOKEN: &str = "audit-test-token-0123456789";

/// A `_meta` envelope of the 2026-07-28 era, declaring `capabilities`.
fn envelope(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": { "name": "audit-test", "version": "1" },
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// Every line of the audit file, parsed (a line that is not JSON fails the test).
fn records(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect()
}

fn calls_of<'a>(records: &'a [Value], tool: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["kind"] == "call" && r["tool"] == tool).collect()
}

/// Waits (polling, bounded) until `done` holds.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + TIMEOUT;
    while !done() {
        assert!(Instant::now() < deadline, "never {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn tokens_file() -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), format!("ci {TOKEN}\n")).unwrap();
    file
}

fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill").args([&format!("-{signal}"), &pid.to_string()]).status().unwrap();
    assert!(status.success(), "kill -{signal} {pid}");
}

#[test]
fn stdio_calls_of_both_eras_a_tasks_transitions_and_a_fuel_failure_are_audited_without_arguments() {
    let plugins = example_plugins(&["hash", "ticker"]);
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("audit.log");
    let mut mcp = McpProcess::spawn(&["serve", "--plugins", plugins.path().to_str().unwrap(), "--audit-log", log.to_str().unwrap()]);

    // 2026-07-28 on the pipe first (initialize locks it to 2025-11-25).
    let params = json!({ "name": "hash_chain", "arguments": { "input": "modern", "rounds": 3 }, "_meta": envelope(json!({})) });
    let modern = mcp.result("tools/call", params);
    assert_eq!(modern["resultType"], "complete", "{modern}");
    mcp.initialize();
    let plain = mcp.call_tool("hash_chain", json!({ "input": "legacy", "rounds": 3 }));
    assert!(plain["structuredContent"]["digest"].is_string(), "{plain}");
    let starved = mcp.call_tool("hash_chain", json!({ "input": "legacy", "rounds": 1_000_000 }));
    assert_eq!(starved["_meta"]["corral/error"]["kind"], "fuel-exhausted", "{starved}");
    let created = mcp.result("tools/call", json!({ "name": "countdown", "arguments": { "from": 2, "interval_ms": 1 }, "task": {} }));
    let task = created["task"]["taskId"].as_str().unwrap().to_owned();
    let done = mcp.result("tasks/result", json!({ "taskId": task }));
    assert_eq!(done["content"][0]["text"], "counted down from 2", "{done}");
    mcp.close_stdin();
    assert!(mcp.wait_exit(TIMEOUT).success());

    let records = records(&log);
    for record in &records {
        assert!(humantime::parse_rfc3339(record["time"].as_str().unwrap()).is_ok(), "{record}");
        assert_eq!((record["principal"].as_str(), record["transport"].as_str()), (Some("local"), Some("stdio")), "{record}");
        assert!(record.get("arguments").is_none() && record.get("result").is_none(), "no arguments unless asked: {record}");
    }
    let hashes = calls_of(&records, "hash_chain");
    assert_eq!(hashes.len(), 3, "{records:#?}");
    let (modern, plain, starved) = (hashes[0], hashes[1], hashes[2]);
    assert_eq!((modern["era"].as_str(), modern["outcome"].as_str()), (Some(MODERN), Some("result")), "{modern}");
    assert_eq!((plain["era"].as_str(), plain["outcome"].as_str()), (Some("2025-11-25"), Some("result")), "{plain}");
    for call in [modern, plain] {
        assert_eq!((call["plugin"].as_str(), call["contract"].is_string()), (Some("hash"), true), "{call}");
        assert!(call["digest"].as_str().unwrap().starts_with("sha256:"), "{call}");
        assert!(call["duration_ms"].as_f64().unwrap() > 0.0, "{call}");
        assert!(call["fuel_consumed"].as_u64().unwrap() > 0 && call["peak_memory"].as_u64().unwrap() > 0, "{call}");
    }
    assert_eq!((starved["outcome"].as_str(), starved["failure"].as_str()), (Some("failed"), Some("fuel-exhausted")), "{starved}");
    assert!(starved["fuel_consumed"].as_u64().unwrap() >= 2_000_000_000 - 10_000, "the whole budget went: {starved}");
    assert!(starved["peak_memory"].as_u64().unwrap() > 0, "{starved}");

    let transitions: Vec<&str> =
        records.iter().filter(|r| r["kind"] == "task" && r["task_id"] == task.as_str()).map(|r| r["transition"].as_str().unwrap()).collect();
    assert_eq!(transitions, ["created", "started", "completed"], "{records:#?}");
    let started = records.iter().find(|r| r["transition"] == "started").unwrap();
    assert!(started["queue_wait_ms"].is_i64() && started["attempt"] == 1 && started["replica"].is_string(), "{started}");
    let ended = records.iter().find(|r| r["transition"] == "completed").unwrap();
    assert_eq!(ended["outcome"], "result", "{ended}");
    let countdown = calls_of(&records, "countdown");
    assert_eq!(countdown.len(), 1, "{records:#?}");
    assert_eq!((countdown[0]["task_id"].as_str(), countdown[0]["attempt"].as_u64()), (Some(task.as_str()), Some(1)), "{}", countdown[0]);
}

#[test]
fn http_calls_of_both_eras_carry_the_token_holder_and_with_audit_arguments_the_arguments_and_result() {
    let plugins = example_plugins(&["hash"]);
    let tokens = tokens_file();
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("audit.log");
    let args = [
        "serve",
        "--plugins",
        plugins.path().to_str().unwrap(),
        "--auth-tokens-file",
        tokens.path().to_str().unwrap(),
        "--audit-log",
        log.to_str().unwrap(),
        "--audit-arguments",
    ];
    let mut mcp = McpProcess::spawn_with(Transport::Http, &args);
    mcp.set_bearer_token(TOKEN);
    mcp.initialize();
    mcp.call_tool("hash_chain", json!({ "input": "session", "rounds": 2 }));
    let base = mcp.http_url().unwrap().trim_end_matches("/mcp").to_owned();
    let params = json!({ "name": "hash_chain", "arguments": { "input": "stateless", "rounds": 2 }, "_meta": envelope(json!({})) });
    let modern = post_modern(&base, TOKEN, 7, "tools/call", params);
    assert_eq!(modern["result"]["resultType"], "complete", "{modern}");
    mcp.close_stdin();
    mcp.wait_exit(TIMEOUT);

    let records = records(&log);
    let calls = calls_of(&records, "hash_chain");
    assert_eq!(calls.len(), 2, "{records:#?}");
    for (call, era, input) in [(calls[0], "2025-11-25", "session"), (calls[1], MODERN, "stateless")] {
        assert_eq!((call["principal"].as_str(), call["transport"].as_str(), call["era"].as_str()), (Some("token:ci"), Some("http"), Some(era)), "{call}");
        assert_eq!(call["arguments"], json!({ "input": input, "rounds": 2 }), "{call}");
        assert!(call["result"]["structuredContent"]["digest"].is_string(), "{call}");
    }
    assert!(!std::fs::read_to_string(&log).unwrap().contains(TOKEN), "a token never reaches the trail");
}

#[test]
fn a_sandbox_denial_is_named_in_the_call_record() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(test_guests().join("probe.wasm"), dir.path().join("probe.wasm")).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let log = dir.path().join("audit.log");
    let mut mcp = McpProcess::spawn(&["serve", "--plugins", dir.path().to_str().unwrap(), "--audit-log", log.to_str().unwrap()]);
    mcp.initialize();
    let result = mcp.call_tool("probe", json!({ "connect": addr }));
    assert!(!result["_meta"]["corral/denied"].as_array().unwrap().is_empty(), "the result still names it: {result}");
    mcp.close_stdin();
    mcp.wait_exit(TIMEOUT);
    let records = records(&log);
    let probe = calls_of(&records, "probe");
    let denials = probe[0]["denials"].as_array().unwrap_or_else(|| panic!("no denials: {}", probe[0]));
    assert!(denials.iter().any(|d| d.as_str().unwrap().contains(&format!("a TCP connection to {addr} was denied"))), "{}", probe[0]);
}

#[test]
fn a_call_the_policy_refuses_is_audited_as_denied_and_runs_nothing() {
    let plugins = example_plugins(&["text"]);
    let dir = tempfile::tempdir().unwrap();
    let (log, policy) = (dir.path().join("audit.log"), dir.path().join("policy.toml"));
    std::fs::write(&policy, "[[allow]]\nwho = { local = true }\ntools = \"echo\"\n").unwrap();
    let mut mcp = McpProcess::spawn(&[
        "serve",
        "--plugins",
        plugins.path().to_str().unwrap(),
        "--policy",
        policy.to_str().unwrap(),
        "--audit-log",
        log.to_str().unwrap(),
    ]);
    mcp.initialize();
    let refused = mcp.request("tools/call", json!({ "name": "word_count", "arguments": { "text": "a b" } }));
    assert_eq!(refused["error"]["data"]["kind"], "denied", "{refused}");
    let allowed = mcp.call_tool("echo", json!({ "text": "hi" }));
    assert_ne!(allowed["isError"], json!(true), "{allowed}");
    mcp.close_stdin();
    mcp.wait_exit(TIMEOUT);
    let records = records(&log);
    let denied = calls_of(&records, "word_count");
    assert_eq!(denied.len(), 1, "{records:#?}");
    assert_eq!((denied[0]["outcome"].as_str(), denied[0]["principal"].as_str()), (Some("denied"), Some("local")), "{}", denied[0]);
    assert!(denied[0].get("fuel_consumed").is_none_or(|f| f == 0), "nothing ran: {}", denied[0]);
    assert_eq!(calls_of(&records, "echo")[0]["outcome"], "result", "{records:#?}");
}

#[test]
fn sighup_reopens_the_log_after_a_rename() {
    let plugins = example_plugins(&["hash"]);
    let log_dir = tempfile::tempdir().unwrap();
    let (log, rotated) = (log_dir.path().join("audit.log"), log_dir.path().join("audit.log.1"));
    let mut mcp = McpProcess::spawn(&["serve", "--plugins", plugins.path().to_str().unwrap(), "--audit-log", log.to_str().unwrap()]);
    mcp.initialize();
    mcp.call_tool("hash_chain", json!({ "input": "before", "rounds": 1 }));
    wait_until("the first record written", || std::fs::read_to_string(&log).is_ok_and(|t| t.contains("hash_chain")));
    std::fs::rename(&log, &rotated).unwrap();
    signal(mcp.pid(), "HUP");
    // The writer creates the file anew when it reopens.
    wait_until("the log reopened", || log.exists());
    mcp.call_tool("hash_chain", json!({ "input": "after", "rounds": 1 }));
    assert_eq!(mcp.result("ping", json!({})), json!({}), "SIGHUP does not stop the host");
    mcp.close_stdin();
    assert!(mcp.wait_exit(TIMEOUT).success());
    assert_eq!(calls_of(&records(&rotated), "hash_chain").len(), 1);
    assert_eq!(calls_of(&records(&log), "hash_chain").len(), 1);
}

/// A FIFO held open for reading and never read: the writer blocks once its pipe is full.
#[test]
fn a_writer_that_cannot_keep_up_drops_and_counts_and_never_stalls_a_call() {
    let plugins = example_plugins(&["hash"]);
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("audit.fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let _reader = std::fs::OpenOptions::new().read(true).custom_flags(libc_o_nonblock()).open(&fifo).unwrap();
    let tokens = tokens_file();
    let command = common::serve_command(
        plugins.path(),
        ":memory:",
        &["--auth-tokens-file", tokens.path().to_str().unwrap(), "--audit-log", fifo.to_str().unwrap(), "--audit-arguments"],
    );
    let mut host = HttpServe::spawn(command, TIMEOUT);
    let base = host.url.trim_end_matches("/mcp").to_owned();
    // Records of about a kilobyte: the pipe holds some tens, the channel some thousands.
    let input = "x".repeat(1000);
    let clients: Vec<_> = (0..4)
        .map(|c| {
            let (base, input) = (base.clone(), input.clone());
            std::thread::spawn(move || {
                let agent = agent();
                for i in 0..1300 {
                    let params = json!({ "name": "hash_chain", "arguments": { "input": input, "rounds": 1 }, "_meta": envelope(json!({})) });
                    let answer = try_post_modern(&agent, &format!("{base}/mcp"), TOKEN, c * 10_000 + i, "tools/call", params).unwrap();
                    assert_eq!(answer["result"]["resultType"], "complete", "{answer}");
                }
            })
        })
        .collect();
    for client in clients {
        client.join().expect("every call was answered");
    }
    let metrics = ureq::get(format!("{base}/metrics")).header("authorization", format!("Bearer {TOKEN}")).call().unwrap().into_body().read_to_string().unwrap();
    let dropped = metrics.lines().find_map(|l| l.strip_prefix("corral_audit_records_dropped_total ")).unwrap_or_else(|| panic!("no counter:\n{metrics}"));
    assert!(dropped.trim().parse::<u64>().unwrap() > 0, "{metrics}");
    let stderr = host.stderr.lock().unwrap().clone();
    let warnings = stderr.matches("audit records dropped").count() as u64;
    assert!(warnings >= 1 && warnings < dropped.trim().parse::<u64>().unwrap(), "warned, at most every few seconds, not per record:\n{stderr}");
    signal(host.child.id(), "TERM");
    let deadline = Instant::now() + TIMEOUT;
    while host.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "a blocked audit writer must not hold up the exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn libc_o_nonblock() -> i32 {
    // O_NONBLOCK on Linux: the open of a FIFO's read end does not wait for a writer.
    0o4000
}

#[test]
fn log_format_json_writes_one_object_per_line() {
    let plugins = example_plugins(&["hash"]);
    let mut mcp = McpProcess::spawn(&["serve", "--plugins", plugins.path().to_str().unwrap(), "--log-format", "json", "--log-level", "debug"]);
    mcp.initialize();
    mcp.call_tool("hash_chain", json!({ "input": "x", "rounds": 1 }));
    mcp.close_stdin();
    mcp.wait_exit(TIMEOUT);
    let stderr = mcp.stderr_text();
    assert!(stderr.lines().count() > 2, "{stderr}");
    let mut starting = None;
    for line in stderr.lines() {
        let event: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(event["timestamp"].is_string() && event["level"].is_string() && event["fields"].is_object(), "{line}");
        if event["fields"]["message"].as_str().is_some_and(|m| m.contains(" starting: ")) {
            starting = Some(event);
        }
    }
    // One line says what started: the build, the authentication, the policy, the traces.
    let starting = starting.unwrap_or_else(|| panic!("no start-up line in:\n{stderr}"));
    let fields = &starting["fields"];
    assert_eq!((fields["version"].as_str(), fields["auth"].as_str()), (Some(env!("CARGO_PKG_VERSION")), Some("the local user (stdio)")), "{starting}");
    assert_eq!((fields["policy"].as_str(), fields["traces"].as_str()), (Some("none"), Some("off")), "{starting}");
    assert!(fields["commit"].is_string(), "{starting}");
}

#[test]
fn a_fatal_error_follows_log_format_json() {
    let out = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["serve", "--log-format", "json", "--plugins", "/nonexistent/plugins", "--http", "127.0.0.1:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stderr.lines().last().unwrap_or_else(|| panic!("nothing on stderr"));
    let event: Value = serde_json::from_str(last).unwrap_or_else(|e| panic!("the fatal error is not JSON ({e}): {stderr}"));
    assert_eq!(event["level"], "ERROR", "{last}");
    assert!(event["fields"]["message"].as_str().unwrap().contains("cannot read plugin directory /nonexistent/plugins"), "{last}");
    // Every line before it is JSON too.
    for line in stderr.lines() {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    }
}

fn readyz(base: &str) -> (u16, Value) {
    let response = agent().get(format!("{base}/readyz")).call().unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().read_to_string().unwrap();
    (status, serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}")))
}

#[test]
fn readyz_is_503_while_the_plugins_load_then_200() {
    // A plugin whose manifest is a FIFO cannot load until the test writes it.
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(common::example_dist().join("hash.wasm"), dir.path().join("hash.wasm")).unwrap();
    let fifo = dir.path().join("hash.toml");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let host = HttpServe::spawn(common::serve_command(dir.path(), ":memory:", &["--no-cache"]), TIMEOUT);
    let base = host.url.trim_end_matches("/mcp").to_owned();
    let (status, body) = readyz(&base);
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["checks"]["plugins_loaded"]["ok"], false, "{body}");
    assert_eq!(body["checks"]["store_reachable"]["ok"], true, "{body}");
    std::fs::write(&fifo, "").unwrap();
    wait_until("ready once loaded", || readyz(&base).0 == 200);
    let (_, body) = readyz(&base);
    assert_eq!(
        body,
        json!({ "status": "ready", "checks": { "plugins_loaded": { "ok": true }, "store_reachable": { "ok": true }, "not_draining": { "ok": true } } })
    );
    let mut host = host;
    let _ = host.child.kill();
    let _ = host.child.wait();
}

#[test]
fn readyz_is_503_while_postgresql_is_down_and_200_once_it_is_back() {
    let server = match pg_testing::private_server() {
        Ok(server) => server,
        Err(why) => {
            assert!(std::env::var_os("CORRAL_REQUIRE_POSTGRES").is_none(), "{}", pg_testing::skip_notice(&why));
            eprintln!("{}", pg_testing::skip_notice(&why));
            return;
        }
    };
    let db = server.database().unwrap();
    let plugins = example_plugins(&["hash"]);
    let mut host = HttpServe::spawn(common::serve_command(plugins.path(), &db, &[]), TIMEOUT);
    let base = host.url.trim_end_matches("/mcp").to_owned();
    wait_until("ready", || readyz(&base).0 == 200);
    server.stop();
    wait_until("not ready while the store is down", || readyz(&base).0 == 503);
    let (_, body) = readyz(&base);
    assert_eq!(body["checks"]["store_reachable"]["ok"], false, "{body}");
    assert!(body["checks"]["store_reachable"]["problem"].as_str().unwrap().contains("task store"), "{body}");
    assert!(!body.to_string().contains(pg_testing::PASSWORD), "no credentials in a probe's answer: {body}");
    server.restart();
    wait_until("ready again", || readyz(&base).0 == 200);
    let _ = host.child.kill();
    let _ = host.child.wait();
}
