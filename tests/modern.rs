//! The 2026-07-28 era beside 2025-11-25, against the real binary and the conformance fixture
//! (`tests/guests/conformance`): the stdio probe-then-initialize path, the HTTP error ladder with
//! its statuses, result shapes, the tasks extension (required, adaptive optional both ways,
//! cancel, unknown ids) and a closed response stream cancelling its call.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::client::{McpProcess, TIMEOUT};
use common::reply::Reply;
use common::serve::{serve_command, HttpServe};
use serde_json::{json, Value};
use tempfile::TempDir;

const VERSION: &str = "2026-07-28";
const TASKS: &str = "io.modelcontextprotocol/tasks";

fn plugins() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(common::test_guests().join("conformance.wasm"), dir.path().join("fixture.wasm")).unwrap();
    dir
}

/// A `_meta` envelope declaring `capabilities`.
fn envelope(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientInfo": { "name": "modern-test", "version": "1" },
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

fn with_meta(mut params: Value, capabilities: Value) -> Value {
    params["_meta"] = envelope(capabilities);
    params
}

// ---------------------------------------------------------------------------------------------
// stdio

#[test]
fn stdio_discover_does_not_lock_and_initialize_then_locks_legacy() {
    let dir = plugins();
    let mut mcp = McpProcess::spawn(&["serve", "--plugins", dir.path().to_str().unwrap()]);
    let discovered = mcp.result("server/discover", json!({ "_meta": envelope(json!({})) }));
    assert_eq!(discovered["resultType"], "complete", "{discovered}");
    assert_eq!(discovered["supportedVersions"][0], VERSION, "{discovered}");
    assert!(discovered["supportedVersions"].as_array().unwrap().contains(&json!("2025-11-25")), "{discovered}");
    assert_eq!(discovered["capabilities"]["extensions"][TASKS], json!({}), "advertised exactly as {{}}: {discovered}");
    assert_eq!(discovered["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "corral", "{discovered}");
    assert!(discovered["ttlMs"].is_u64() && discovered["cacheScope"] == "public", "{discovered}");

    // A stateless call on the same pipe, before any initialize.
    let called = mcp.result("tools/call", with_meta(json!({ "name": "greet", "arguments": { "name": "stdio" } }), json!({})));
    assert_eq!((called["resultType"].as_str(), called["content"][0]["text"].as_str()), (Some("complete"), Some("Hello, stdio!")), "{called}");

    // The probe locked nothing: initialize works, and the connection is 2025-11-25 from now on.
    let init = mcp.initialize();
    assert_eq!(init["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(mcp.call_tool("greet", json!({ "name": "legacy" }))["content"][0]["text"], "Hello, legacy!");
    let refused = mcp.request("tools/list", json!({ "_meta": envelope(json!({})) }));
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("initialized for 2025-11-25"), "{refused}");
}

#[test]
fn stdio_stateless_requests_get_the_eras_errors() {
    let dir = plugins();
    let mut mcp = McpProcess::spawn(&["serve", "--plugins", dir.path().to_str().unwrap()]);
    let no_caps = mcp.request("tools/list", json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": VERSION } }));
    assert_eq!(no_caps["error"]["code"], -32602, "{no_caps}");
    let old = mcp.request(
        "tools/list",
        json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": "1999-01-01", "io.modelcontextprotocol/clientCapabilities": {} } }),
    );
    assert_eq!((old["error"]["code"].as_i64(), old["error"]["data"]["requested"].as_str()), (Some(-32022), Some("1999-01-01")), "{old}");
    let gone = mcp.request("ping", json!({ "_meta": envelope(json!({})) }));
    assert_eq!(gone["error"]["code"], -32601, "{gone}");
    let sampling = mcp.request("tools/call", with_meta(json!({ "name": "test_missing_capability", "arguments": {} }), json!({})));
    assert_eq!(sampling["error"]["code"], -32021, "{sampling}");
    assert_eq!(sampling["error"]["data"]["requiredCapabilities"], json!({ "sampling": {} }), "{sampling}");
    let unknown = mcp.request("resources/read", with_meta(json!({ "uri": "test://nope" }), json!({})));
    assert_eq!((unknown["error"]["code"].as_i64(), unknown["error"]["data"]["uri"].as_str()), (Some(-32602), Some("test://nope")), "{unknown}");
    // A plain stdio client is unaffected: without the envelope, initialize comes first.
    let early = mcp.request("tools/list", json!({}));
    assert_eq!(early["error"]["code"], -32600, "{early}");
}

// ---------------------------------------------------------------------------------------------
// HTTP

struct Server {
    host: HttpServe,
    base: String,
    stderr: Arc<Mutex<String>>,
    agent: ureq::Agent,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.host.child.kill();
        let _ = self.host.child.wait();
    }
}

impl Server {
    fn start(plugins: &Path) -> Server {
        Server::start_with(plugins, &[])
    }

    fn start_with(plugins: &Path, extra: &[&str]) -> Server {
        let host = HttpServe::spawn(serve_command(plugins, ":memory:", extra), TIMEOUT);
        let (url, stderr) = (host.url.clone(), host.stderr.clone());
        let base = url.strip_suffix("/mcp").unwrap().to_owned();
        let agent = ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(TIMEOUT)).build().new_agent();
        Server { host, base, stderr, agent }
    }

    fn post(&self, headers: &[(&str, &str)], body: &Value) -> Reply {
        let mut request = ureq::http::Request::builder()
            .method("POST")
            .uri(format!("{}/mcp", self.base))
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = self.agent.run(request.body(body.to_string()).unwrap()).unwrap_or_else(|e| panic!("POST failed: {e}\n{}", self.stderr.lock().unwrap()));
        Reply::read(response).unwrap_or_else(|e| panic!("reading the answer: {e}\n{}", self.stderr.lock().unwrap()))
    }

    /// A modern request with the headers that repeat its body.
    fn modern(&self, id: u64, method: &str, params: Value) -> Reply {
        let name = params.get("name").or_else(|| params.get("uri")).or_else(|| params.get("taskId")).and_then(Value::as_str).map(str::to_owned);
        let mut headers = vec![("mcp-protocol-version", VERSION), ("mcp-method", method)];
        if let Some(name) = &name {
            headers.push(("mcp-name", name.as_str()));
        }
        self.post(&headers, &json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
    }

    fn metrics(&self) -> String {
        let response = self.agent.get(format!("{}/metrics", self.base)).call().unwrap();
        response.into_body().read_to_string().unwrap()
    }
}

#[test]
fn http_error_ladder_answers_each_rung_with_its_status_and_code() {
    let dir = plugins();
    let server = Server::start(dir.path());
    let request = |id: u64, method: &str, params: Value| json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
    let list = with_meta(json!({}), json!({}));

    // -32020: a header missing, or disagreeing with the body.
    let no_version = server.post(&[("mcp-method", "tools/list")], &request(1, "tools/list", list.clone()));
    assert_eq!((no_version.status, no_version.answer()["error"]["code"].as_i64()), (400, Some(-32020)), "{no_version:?}");
    let wrong_method = server.post(&[("mcp-protocol-version", VERSION), ("mcp-method", "prompts/list")], &request(2, "tools/list", list.clone()));
    assert_eq!((wrong_method.status, wrong_method.answer()["error"]["code"].as_i64()), (400, Some(-32020)), "{wrong_method:?}");
    let call = with_meta(json!({ "name": "greet", "arguments": {} }), json!({}));
    let wrong_name =
        server.post(&[("mcp-protocol-version", VERSION), ("mcp-method", "tools/call"), ("mcp-name", "other")], &request(3, "tools/call", call.clone()));
    assert_eq!((wrong_name.status, wrong_name.answer()["error"]["code"].as_i64()), (400, Some(-32020)), "{wrong_name:?}");
    let encoded =
        server.post(&[("mcp-protocol-version", VERSION), ("mcp-method", "tools/call"), ("mcp-name", "=?base64?Z3JlZXQ=?=")], &request(4, "tools/call", call));
    assert_eq!(encoded.status, 200, "a base64 Mcp-Name that decodes to the body's name: {encoded:?}");

    // -32602: the envelope missing or incomplete, with the request's id.
    let bare = server.post(&[("mcp-protocol-version", VERSION), ("mcp-method", "tools/list")], &request(5, "tools/list", json!({})));
    assert_eq!((bare.status, bare.answer()["error"]["code"].as_i64(), bare.answer()["id"].as_i64()), (400, Some(-32602), Some(5)), "{bare:?}");

    // -32022: a version corral does not serve, with what it does.
    let v999 = json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": "v999", "io.modelcontextprotocol/clientCapabilities": {} } });
    let unsupported = server.post(&[("mcp-protocol-version", "v999"), ("mcp-method", "tools/list")], &request(6, "tools/list", v999));
    let error = unsupported.answer()["error"].clone();
    assert_eq!((unsupported.status, error["code"].as_i64(), error["data"]["requested"].as_str()), (400, Some(-32022), Some("v999")), "{unsupported:?}");
    assert_eq!(error["data"]["supported"][0], VERSION, "{unsupported:?}");

    // -32021: a capability the request did not declare.
    let missing = server.modern(7, "tools/call", with_meta(json!({ "name": "test_missing_capability", "arguments": {} }), json!({})));
    assert_eq!((missing.status, missing.answer()["error"]["data"]["requiredCapabilities"].clone()), (400, json!({ "sampling": {} })), "{missing:?}");
    let no_ext = server.modern(8, "tasks/get", with_meta(json!({ "taskId": "x" }), json!({})));
    assert_eq!((no_ext.status, no_ext.answer()["error"]["code"].as_i64()), (400, Some(-32021)), "{no_ext:?}");

    // 404 + -32601: what the era does not have, even with a valid envelope.
    for method in ["initialize", "ping", "logging/setLevel", "resources/subscribe", "tasks/result", "tasks/list", "unknown/method"] {
        let gone = server.modern(9, method, with_meta(json!({}), json!({})));
        assert_eq!((gone.status, gone.answer()["error"]["code"].as_i64()), (404, Some(-32601)), "{method}: {gone:?}");
    }

    // 2025-11-25 on the same endpoint: initialize without an envelope still makes a session.
    let init = server.post(&[], &request(10, "initialize", json!({ "protocolVersion": "2025-11-25", "capabilities": {} })));
    assert_eq!(init.status, 200, "{init:?}");
    assert!(init.header("mcp-session-id").is_some(), "{init:?}");
}

#[test]
fn http_modern_results_carry_type_identity_caching_and_the_eras_not_found() {
    let dir = plugins();
    let server = Server::start(dir.path());
    let first = server.modern(1, "tools/list", with_meta(json!({}), json!({}))).answer();
    let result = &first["result"];
    assert_eq!((result["resultType"].as_str(), result["cacheScope"].as_str()), (Some("complete"), Some("public")), "{first}");
    assert!(result["ttlMs"].is_u64(), "{first}");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "corral", "{first}");
    let again = server.modern(2, "tools/list", with_meta(json!({}), json!({}))).answer();
    assert_eq!(first["result"]["tools"], again["result"]["tools"], "deterministic order");
    let unknown = server.modern(3, "resources/read", with_meta(json!({ "uri": "test://missing" }), json!({}))).answer();
    assert_eq!((unknown["error"]["code"].as_i64(), unknown["error"]["data"]["uri"].as_str()), (Some(-32602), Some("test://missing")), "{unknown}");
    let read = server.modern(4, "resources/read", with_meta(json!({ "uri": "test://static-text" }), json!({}))).answer();
    assert!(read["result"]["contents"].as_array().is_some_and(|c| !c.is_empty()) && read["result"]["ttlMs"].is_u64(), "{read}");
    // Logs only when the request names a level.
    let quiet = server.modern(5, "tools/call", with_meta(json!({ "name": "test_logging_tool", "arguments": {} }), json!({})));
    assert!(!quiet.body.contains("notifications/message"), "{quiet:?}");
    let mut params = with_meta(json!({ "name": "test_logging_tool", "arguments": {} }), json!({}));
    params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    let loud = server.modern(6, "tools/call", params);
    assert!(loud.body.contains("notifications/message"), "{loud:?}");
    assert_eq!(loud.header("x-accel-buffering"), Some("no"), "SSE asks proxies not to buffer: {loud:?}");
}

fn wait_status(server: &Server, task: &str, want: &str) -> Value {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let got = server.modern(100, "tasks/get", with_meta(json!({ "taskId": task }), json!({ "extensions": { TASKS: {} } }))).answer();
        if got["result"]["status"] == want {
            return got["result"].clone();
        }
        assert!(Instant::now() < deadline, "task {task} never became {want}: {got}");
        thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn http_tasks_extension_required_adaptive_cancel_and_unknown_ids() {
    let dir = plugins();
    let server = Server::start(dir.path());
    let ext = json!({ "extensions": { TASKS: {} } });
    let call = |id: u64, name: &str, arguments: Value, caps: &Value| {
        server.modern(id, "tools/call", with_meta(json!({ "name": name, "arguments": arguments }), caps.clone())).answer()
    };

    // Required: -32021 without the extension, a task with it.
    let refused = call(1, "failing_job", json!({}), &json!({}));
    assert_eq!(refused["error"]["data"]["requiredCapabilities"], json!({ "extensions": { TASKS: {} } }), "{refused}");
    let created = call(2, "failing_job", json!({}), &ext);
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let task = created["result"]["taskId"].as_str().unwrap().to_owned();
    assert!(created["result"]["ttlMs"].is_i64() || created["result"]["ttlMs"].is_null(), "{created}");
    let done = wait_status(&server, &task, "completed");
    assert_eq!(done["result"]["isError"], true, "a tool's own error ends completed: {done}");

    // Optional, quick: answered inline. Optional, slow: past --task-after it becomes a task.
    let quick = call(3, "slow_compute", json!({ "seconds": 0, "label": "quick" }), &ext);
    assert_eq!(quick["result"]["resultType"], "complete", "{quick}");
    let started = Instant::now();
    let slow = call(4, "slow_compute", json!({ "seconds": 3, "label": "slow" }), &ext);
    assert_eq!(slow["result"]["resultType"], "task", "{slow}");
    assert!(started.elapsed() < Duration::from_millis(2500), "the task is answered at --task-after, not at the end: {:?}", started.elapsed());
    let slow_task = slow["result"]["taskId"].as_str().unwrap().to_owned();
    let finished = wait_status(&server, &slow_task, "completed");
    assert_eq!(finished["result"]["content"][0]["text"], "Computed slow", "the adopted call's own result: {finished}");

    // Without the extension the same optional tool runs inline to its end.
    let inline = call(5, "slow_compute", json!({ "seconds": 1.2, "label": "inline" }), &json!({}));
    assert_eq!(inline["result"]["content"][0]["text"], "Computed inline", "{inline}");

    // Cancel: an empty ack, again for a task that has ended; the task ends cancelled.
    let long = call(6, "slow_compute", json!({ "seconds": 30, "label": "long" }), &ext);
    let long_task = long["result"]["taskId"].as_str().unwrap().to_owned();
    for id in [7, 8] {
        let ack = server.modern(id, "tasks/cancel", with_meta(json!({ "taskId": long_task }), ext.clone())).answer();
        assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    }
    wait_status(&server, &long_task, "cancelled");

    // Unknown ids are -32602, for get and update.
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let unknown = server.modern(9, method, with_meta(json!({ "taskId": "no-such-task", "inputResponses": {} }), ext.clone())).answer();
        assert_eq!(unknown["error"]["code"], -32602, "{method}: {unknown}");
    }
}

#[test]
fn http_a_closed_response_stream_cancels_its_call() {
    let dir = plugins();
    let server = Server::start(dir.path());
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": with_meta(json!({ "name": "slow_compute", "arguments": { "seconds": 30, "label": "abandoned" } }), json!({})) })
    .to_string();
    let address = server.base.strip_prefix("http://").unwrap().to_owned();
    let mut stream = TcpStream::connect(&address).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {VERSION}\r\nMcp-Method: tools/call\r\nMcp-Name: slow_compute\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    // Counting the request is not enough (the call is wired to the stream's close later, and
    // a close before that cancels nothing); the host shows nothing closer to the guest's start
    // yet, so this waits a while, the one fixed wait left in the Rust suites.
    thread::sleep(Duration::from_millis(500));
    drop(stream);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let metrics = server.metrics();
        if metrics.lines().any(|l| l.contains("slow_compute") && l.contains("cancelled")) {
            break;
        }
        assert!(Instant::now() < deadline, "the call was not cancelled when its stream closed:\n{metrics}\n{}", server.stderr.lock().unwrap());
        thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn http_listen_acknowledges_then_delivers_only_the_asked_list_changes_of_a_hot_reload() {
    let dir = plugins();
    let server = Server::start_with(dir.path(), &["--watch"]);
    let params = with_meta(json!({ "notifications": { "toolsListChanged": true, "taskIds": ["t"] } }), json!({}));
    let refused = server.modern(1, "subscriptions/listen", params).answer();
    assert_eq!(refused["error"]["code"], -32021, "taskIds need the tasks extension: {refused}");

    let stream = listen_for_tool_changes(&server, "listen-1");
    let mut events = BufReader::new(stream.try_clone().unwrap())
        .lines()
        .map_while(Result::ok)
        .filter_map(|l| l.strip_prefix("data:").map(|d| serde_json::from_str::<Value>(d.trim()).unwrap()));
    let ack = events.next().expect("an acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(ack["params"]["notifications"], json!({ "toolsListChanged": true }), "{ack}");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1", "{ack}");

    // A second plugin appears: tools, prompts and resources change; only tools were asked for.
    std::fs::copy(common::test_guests().join("probe.wasm"), dir.path().join("probe.wasm")).unwrap();
    let changed = events.next().expect("a list change");
    assert_eq!(changed["method"], "notifications/tools/list_changed", "{changed}");
    assert_eq!(changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], "listen-1", "{changed}");
    drop(events);
    drop(stream);
}

#[test]
fn http_shutdown_ends_open_listen_streams_at_once() {
    let dir = plugins();
    let mut server = Server::start(dir.path());
    let stream = listen_for_tool_changes(&server, "listen-2");
    let mut lines = BufReader::new(stream.try_clone().unwrap()).lines().map_while(Result::ok);
    assert!(lines.any(|l| l.contains("notifications/subscriptions/acknowledged")), "no acknowledgement");
    let stopped = Instant::now();
    let pid = server.host.child.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.host.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "corral did not exit after SIGTERM with a listen stream open");
        thread::sleep(Duration::from_millis(20));
    }
    // The graceful-shutdown grace is 5 s: an open listen stream must not hold the host that long.
    assert!(stopped.elapsed() < Duration::from_secs(3), "exit took {:?}", stopped.elapsed());
}

#[test]
fn http_listen_streams_are_bounded_per_client_and_in_all_and_health_checks_stay_served() {
    let dir = plugins();
    // Without authentication every local client is one address: two streams each, and with 8
    // connections at most 6 streams in all.
    let server = Server::start_with(dir.path(), &["--max-streams-per-client", "2"]);
    let held: Vec<TcpStream> = (0..2).map(|i| acknowledged(listen_for_tool_changes(&server, &format!("held-{i}")))).collect();
    let params = || with_meta(json!({ "notifications": { "toolsListChanged": true } }), json!({}));
    let refused = server.modern(7, "subscriptions/listen", params());
    assert_eq!(refused.status, 429, "{refused:?}");
    assert!(refused.header("retry-after").is_some(), "{refused:?}");
    let answer = refused.answer();
    assert_eq!(answer["id"], 7, "{answer}");
    assert!(answer["error"]["message"].as_str().unwrap().contains("--max-streams-per-client"), "{answer}");
    // Plain requests and probes are not streams: still served.
    assert_eq!(server.modern(8, "tools/list", with_meta(json!({}), json!({}))).status, 200);
    assert_eq!(server.agent.get(format!("{}/healthz", server.base)).call().unwrap().status().as_u16(), 200);
    drop(held);
    drop(server);

    let server = Server::start_with(dir.path(), &["--max-connections", "8"]);
    let held: Vec<TcpStream> = (0..6).map(|i| acknowledged(listen_for_tool_changes(&server, &format!("all-{i}")))).collect();
    let refused = server.modern(9, "subscriptions/listen", params());
    assert_eq!(refused.status, 503, "{refused:?}");
    assert!(refused.answer()["error"]["message"].as_str().unwrap().contains("--max-connections"), "{refused:?}");
    assert_eq!(server.agent.get(format!("{}/healthz", server.base)).call().unwrap().status().as_u16(), 200, "a quarter of the slots is kept");
    drop(held);
}

#[test]
fn http_a_listen_stream_ends_after_its_lifetime_and_gives_its_place_back() {
    let dir = plugins();
    let server = Server::start_with(dir.path(), &["--max-streams-per-client", "1", "--max-stream-lifetime", "1s"]);
    for round in 0..2 {
        // With `Connection: close` the end of the stream is the end of the connection.
        let stream = acknowledged(listen_with(&server, &format!("round-{round}"), "connection: close\r\n"));
        let rest: Vec<String> = BufReader::new(stream).lines().map_while(Result::ok).collect();
        assert!(!rest.iter().any(|l| l.contains("\"error\"")), "the stream ended gracefully, without an error: {rest:?}");
    }
}

/// `stream` once the listen's acknowledgement has arrived on it.
fn acknowledged(stream: TcpStream) -> TcpStream {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    while !line.contains("notifications/subscriptions/acknowledged") {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "the listen ended before its acknowledgement");
        assert!(!line.starts_with("HTTP/1.1 4") && !line.starts_with("HTTP/1.1 5"), "the listen was refused: {line}");
    }
    stream
}

/// Opens a `subscriptions/listen` for `toolsListChanged` on a raw connection, so a test can read
/// the SSE stream as it arrives (and see when it ends).
fn listen_for_tool_changes(server: &Server, id: &str) -> TcpStream {
    listen_with(server, id, "")
}

/// Like [`listen_for_tool_changes`], with `extra` header lines (each ending in CRLF).
fn listen_with(server: &Server, id: &str, extra: &str) -> TcpStream {
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": "subscriptions/listen",
        "params": with_meta(json!({ "notifications": { "toolsListChanged": true } }), json!({})) })
    .to_string();
    let address = server.base.strip_prefix("http://").unwrap().to_owned();
    let mut stream = TcpStream::connect(&address).unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: {VERSION}\r\nMcp-Method: subscriptions/listen\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    stream
}
