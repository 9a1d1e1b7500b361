//! The admin listener (`corral serve --admin`) end to end: the real binary serving MCP over HTTP
//! and its console beside it, driven with raw HTTP requests. Hostile requests are refused with
//! the status and message that name what was wrong, and the host goes on serving both.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::client::{McpProcess, Transport, TIMEOUT};
use common::fixture::{Fixture, TaskSupport, ToolDef};
use common::{example_plugins, write_plugin};
use serde_json::{json, Value};

const ADMIN_TOKEN: &str = "admin-secret-0123456789";
const READY: &str = "serving the admin console at ";

/// A host with `--admin` on a free port, and the console's base URL.
struct Console {
    mcp: McpProcess,
    base: String,
    agent: ureq::Agent,
    _tokens: tempfile::NamedTempFile,
}

/// One answer: status, headers we look at, body.
#[derive(Debug)]
struct Reply {
    status: u16,
    set_cookie: Option<String>,
    body: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }

    /// The refusal's message, checking the status first.
    fn refused(&self, status: u16) -> String {
        assert_eq!(self.status, status, "{self:?}");
        let body = self.json();
        assert_eq!(body["error"]["status"], json!(status), "{self:?}");
        body["error"]["message"].as_str().unwrap().to_owned()
    }
}

impl Console {
    fn start(plugins: &Path, extra: &[&str]) -> Console {
        let tokens = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(tokens.path(), format!("# operators\nops {ADMIN_TOKEN}\n")).unwrap();
        let mut args = vec!["serve", "--plugins", plugins.to_str().unwrap(), "--admin", "127.0.0.1:0", "--admin-tokens-file", tokens.path().to_str().unwrap()];
        args.extend_from_slice(extra);
        let mut mcp = McpProcess::spawn_with(Transport::Http, &args);
        let stderr = mcp.wait_stderr("the admin console's address", TIMEOUT, |t| t.contains(READY));
        let base = stderr.split(READY).nth(1).unwrap().lines().next().unwrap().trim().trim_end_matches('/').to_owned();
        let agent = ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(TIMEOUT)).build().new_agent();
        Console { mcp, base, agent, _tokens: tokens }
    }

    fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&str>) -> Reply {
        let mut request = ureq::http::Request::builder().method(method).uri(format!("{}{path}", self.base));
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        let response = match body {
            Some(body) => self.agent.run(request.body(body.to_owned()).unwrap()),
            None => self.agent.run(request.body(()).unwrap()),
        }
        .unwrap_or_else(|e| panic!("{method} {path}: {e}\nstderr:\n{}", self.mcp.stderr_text()));
        let status = response.status().as_u16();
        let set_cookie = response.headers().get("set-cookie").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let body = response.into_body().read_to_string().unwrap_or_default();
        Reply { status, set_cookie, body }
    }

    /// The console's `host:port`.
    fn address(&self) -> &str {
        self.base.trim_start_matches("http://")
    }

    /// A connection of its own to the console, reads bounded by `TIMEOUT`.
    fn connect(&self) -> std::net::TcpStream {
        let stream = std::net::TcpStream::connect(self.address()).unwrap();
        stream.set_read_timeout(Some(TIMEOUT)).unwrap();
        stream
    }

    /// Sends `request` as it is on a connection of its own; the whole answer.
    fn raw(&self, request: &str) -> String {
        use std::io::{Read, Write};
        let mut stream = self.connect();
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    }

    fn get(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        self.send("GET", path, headers, None)
    }

    /// A GET with the admin bearer token, expecting 200.
    fn read(&self, path: &str) -> Value {
        let reply = self.get(path, &[("authorization", &format!("Bearer {ADMIN_TOKEN}"))]);
        assert_eq!(reply.status, 200, "{path}: {reply:?}");
        reply.json()
    }

    /// Signs in as a browser does: the cookie and the CSRF token.
    fn login(&self) -> (String, String) {
        let reply = self.send("POST", "/api/login", &[("content-type", "application/json")], Some(&json!({ "token": ADMIN_TOKEN }).to_string()));
        assert_eq!(reply.status, 200, "{reply:?}");
        let cookie = reply.set_cookie.clone().expect("a sign-in sets a cookie");
        for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
            assert!(cookie.contains(attribute), "{cookie}");
        }
        let pair = cookie.split(';').next().unwrap().to_owned();
        (pair, reply.json()["csrf"].as_str().unwrap().to_owned())
    }
}

#[test]
fn hostile_admin_requests_are_refused_precisely_and_the_host_keeps_serving() {
    let plugins = example_plugins(&["text"]);
    let mut console = Console::start(plugins.path(), &[]);

    // No token, a wrong one, another scheme, a forged cookie.
    let message = console.get("/api/tasks", &[]).refused(401);
    assert!(message.starts_with("not signed in"), "{message}");
    assert_eq!(console.get("/api/plugins", &[("authorization", "Bearer wrong")]).refused(401), "invalid bearer token");
    assert_eq!(console.get("/api/plugins", &[("authorization", &format!("Basic {ADMIN_TOKEN}"))]).refused(401).split(':').next(), Some("missing bearer token"));
    assert!(console.get("/api/plugins", &[("cookie", "corral_admin=forged")]).refused(401).starts_with("the sign-in is unknown"));
    assert_eq!(console.send("POST", "/api/login", &[("content-type", "application/json")], Some(r#"{"token":"wrong"}"#)).refused(401), "invalid admin token");
    // The page itself is refused (401) without a sign-in, and says nothing but how to sign in.
    let page = console.get("/", &[]);
    assert_eq!(page.status, 401);
    assert!(page.body.contains("Sign in") && !page.body.contains(ADMIN_TOKEN));

    // A forged Origin or Host (DNS rebinding), even with the right token; two Origins.
    let bearer = format!("Bearer {ADMIN_TOKEN}");
    let forged = console.get("/api/plugins", &[("authorization", &bearer), ("origin", "https://evil.example")]).refused(403);
    assert_eq!(forged, "Origin `https://evil.example` is not allowed; see --allowed-origin");
    let rebound = console.raw(&format!("GET /api/plugins HTTP/1.1\r\nhost: evil.example:80\r\nauthorization: {bearer}\r\nconnection: close\r\n\r\n"));
    assert!(rebound.starts_with("HTTP/1.1 403"), "{rebound}");
    assert!(rebound.contains("Host `evil.example:80` is not allowed (DNS rebinding protection)"), "{rebound}");
    let twice = console.get("/api/plugins", &[("authorization", &bearer), ("origin", "http://localhost"), ("origin", "https://evil.example")]).refused(400);
    assert_eq!(twice, "more than one Origin header");

    // A cross-site form post riding on a signed-in browser's cookie: no CSRF token, or a form
    // body type; a foreign Origin on top is refused before anything else.
    let (cookie, csrf) = console.login();
    let form = [("cookie", cookie.as_str()), ("content-type", "application/x-www-form-urlencoded")];
    let csrf_refusal = console.send("POST", "/api/plugins/reload", &form, Some("x=1")).refused(403);
    assert!(csrf_refusal.starts_with("missing X-Corral-CSRF header"), "{csrf_refusal}");
    let cross_site = [("cookie", cookie.as_str()), ("content-type", "application/x-www-form-urlencoded"), ("origin", "https://evil.example")];
    assert!(console.send("POST", "/api/plugins/reload", &cross_site, Some("x=1")).refused(403).starts_with("Origin `https://evil.example`"));
    let wrong_csrf = [("cookie", cookie.as_str()), ("content-type", "application/json"), ("x-corral-csrf", "guessed")];
    assert_eq!(
        console.send("POST", "/api/plugins/reload", &wrong_csrf, Some("{}")).refused(403),
        "the X-Corral-CSRF header does not match this sign-in's CSRF token"
    );
    let as_form = [("cookie", cookie.as_str()), ("content-type", "text/plain"), ("x-corral-csrf", csrf.as_str())];
    assert_eq!(
        console.send("POST", "/api/plugins/reload", &as_form, Some("{}")).refused(415),
        "Content-Type `text/plain`: an admin action takes `application/json`"
    );
    let right = [("cookie", cookie.as_str()), ("content-type", "application/json"), ("x-corral-csrf", csrf.as_str())];
    assert_eq!(console.send("POST", "/api/plugins/reload", &right, Some("{}")).status, 200);

    // A huge or malformed filter: 400 naming it, before any store is asked.
    let huge = format!("/api/tasks?tool={}", "a".repeat(5000));
    assert_eq!(console.get(&huge, &[("authorization", &bearer)]).refused(400), "the query is 5005 bytes, over the 4096 a task filter may have");
    let cases = [
        ("/api/tasks?colour=red", "unknown filter `colour`; the filters are status, owner, tool, plugin, older_than, newer_than, limit, before"),
        ("/api/tasks?status=finished", "filter `status`: unknown status `finished`; one of working, input_required, completed, failed, cancelled"),
        ("/api/tasks?limit=100000", "filter `limit`: 100000 is not from 1 to 500"),
        ("/api/tasks?older_than=soon", "filter `older_than`: `soon` is not a duration"),
        ("/api/tasks?tool=%E0%A4", "filter `tool`: the value is not UTF-8"),
        ("/api/tasks?tool=a&tool=b", "filter `tool` is given twice"),
    ];
    for (path, expected) in cases {
        let message = console.get(path, &[("authorization", &bearer)]).refused(400);
        assert!(message.starts_with(expected), "{path}: {message}");
    }
    assert!(console.get("/api/tasks/..%2Fetc", &[("authorization", &bearer)]).refused(400).contains("is not a task id"));
    let long_body = format!(r#"{{"token":"{}"}}"#, "x".repeat(64 * 1024));
    let too_long = console.send("POST", "/api/login", &[("content-type", "application/json")], Some(&long_body)).refused(413);
    assert_eq!(too_long, format!("the body is {} bytes, over the 16384 bytes an admin request may have", long_body.len()));
    // Refused unread, the body would be taken for the next request: the answer ends the
    // connection (a client reusing it failed under load); one announced too large is refused
    // before it is sent.
    let host = console.address();
    let unread = console.raw(&format!("POST /api/login HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\ncontent-length: 10000000\r\n\r\n"));
    assert!(unread.starts_with("HTTP/1.1 413") && unread.to_ascii_lowercase().contains("connection: close"), "{unread}");
    assert!(unread.contains("the body is 10000000 bytes, over the 16384 bytes an admin request may have"), "{unread}");

    // Both listeners go on serving.
    assert_eq!(console.read("/api/plugins")["plugins"][0]["name"], "text");
    console.mcp.initialize();
    assert_eq!(console.mcp.call_tool("echo", json!({ "text": "still here" }))["content"][0]["text"], "still here");
    let spec = console.get("/api/openapi.json", &[]);
    assert_eq!(spec.json()["openapi"], "3.1.0");
}

#[test]
fn a_socket_that_never_sends_a_request_is_closed_and_the_console_keeps_serving() {
    use std::io::Read;
    let plugins = example_plugins(&["text"]);
    let console = Console::start(plugins.path(), &[]);
    // A slowloris: connected, one byte of a request line, then nothing. The header timeout
    // (10 s) closes it; before, it stayed open for as long as its sender liked.
    let mut idle = console.connect();
    std::io::Write::write_all(&mut idle, b"G").unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut answer = Vec::new();
    let closed = idle.read_to_end(&mut answer);
    assert!(closed.is_ok(), "still open after 60 s: {closed:?}");
    // Meanwhile, and after, the console answers.
    assert_eq!(console.read("/api/plugins")["plugins"][0]["name"], "text");
}

#[test]
fn admin_needs_its_own_tokens_file() {
    let plugins = example_plugins(&["text"]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["serve", "--plugins", plugins.path().to_str().unwrap(), "--admin", "9"])
        .env("CORRAL_DB", ":memory:")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--admin-tokens-file"), "{stderr}");
    // OAuth for the console needs issuers to trust.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["serve", "--plugins", plugins.path().to_str().unwrap(), "--admin", "9", "--admin-public-url", "https://admin.example"])
        .env("CORRAL_DB", ":memory:")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--admin-public-url needs --oauth-issuer"), "{stderr}");
    // A token MCP clients also hold would let them run the console.
    let shared = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(shared.path(), "ops same-token\n").unwrap();
    let path = shared.path().to_str().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args([
            "serve",
            "--plugins",
            plugins.path().to_str().unwrap(),
            "--http",
            "127.0.0.1:0",
            "--auth-tokens-file",
            path,
            "--admin",
            "0",
            "--admin-tokens-file",
            path,
        ])
        .env("CORRAL_DB", ":memory:")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("shares a token with --auth-tokens-file"));
}

/// Every answer of the console's listener says `X-Content-Type-Options: nosniff`: the API's
/// JSON (which quotes tasks' arguments), its refusals and its 404 alike.
#[test]
fn every_answer_of_the_console_says_nosniff() {
    let plugins = example_plugins(&["text"]);
    let console = Console::start(plugins.path(), &[]);
    let host = console.address().to_owned();
    for (path, auth, status) in
        [("/api/plugins", true, "200"), ("/api/tasks", false, "401"), ("/api/no-such-thing", true, "404"), ("/console.css", false, "200")]
    {
        let authorization = if auth { format!("authorization: Bearer {ADMIN_TOKEN}\r\n") } else { String::new() };
        let answer = console.raw(&format!("GET {path} HTTP/1.1\r\nhost: {host}\r\n{authorization}connection: close\r\n\r\n"));
        let head = answer.split("\r\n\r\n").next().unwrap().to_ascii_lowercase();
        assert!(head.starts_with(&format!("http/1.1 {status}")), "{path}: {head}");
        assert!(head.contains("\r\nx-content-type-options: nosniff"), "{path}: {head}");
    }
}

#[test]
fn a_plugin_shows_its_digest_and_a_reload_serves_the_rebuilt_one() {
    let dir = tempfile::tempdir().unwrap();
    let first = Fixture::new().tool(ToolDef::new("greet").returns_text("v1")).build();
    write_plugin(dir.path(), "greeter", &first);
    let mut console = Console::start(dir.path(), &[]);
    // A list waits for the first load: the plugin is served from then on.
    console.mcp.initialize();
    console.mcp.result("tools/list", json!({}));
    let plugins = console.read("/api/plugins");
    assert_eq!(plugins["loaded"], true);
    let plugin = &plugins["plugins"][0];
    assert_eq!((plugin["name"].as_str(), plugin["state"].as_str(), plugin["contract"].as_str()), (Some("greeter"), Some("loaded"), Some("0.1.0")));
    assert_eq!(plugin["digest"], json!(sha256(&first)));
    assert_eq!(plugin["source"]["kind"], "directory");
    assert_eq!(plugin["tools"], json!(["greet"]));
    // Rebuilt on disk: the reload serves it, with its new digest.
    let second = Fixture::new().tool(ToolDef::new("greet").returns_text("v2, longer")).build();
    write_plugin(dir.path(), "greeter", &second);
    let (cookie, csrf) = console.login();
    let reply = console.send("POST", "/api/plugins/reload", &[("cookie", &cookie), ("content-type", "application/json"), ("x-corral-csrf", &csrf)], Some("{}"));
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.json()["changed"], true);
    assert_eq!(reply.json()["plugins"][0]["digest"], json!(sha256(&second)));
    assert_eq!(console.read("/api/plugins")["plugins"][0]["digest"], json!(sha256(&second)));
}

/// An action that takes no body still reads the one sent: the connection then carries the next
/// request. Left unread, hyper closes a keep-alive connection whose client may already be
/// sending down it (a pooling client saw "peer disconnected" on its next request).
#[test]
fn a_body_the_action_ignores_leaves_the_connection_usable() {
    use std::io::{Read, Write};
    let plugins = example_plugins(&["text"]);
    let console = Console::start(plugins.path(), &[]);
    let address = console.address();
    let mut stream = console.connect();
    let bearer = format!("Bearer {ADMIN_TOKEN}");
    // The headers first and the body in a write of its own, as clients that stream bodies do.
    let head = format!(
        "POST /api/plugins/reload HTTP/1.1\r\nhost: {address}\r\nauthorization: {bearer}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n"
    );
    // Each write in a segment of its own (the host reads the body after the head whenever it
    // arrives; the action answers once it is in, so there is nothing to wait for between them).
    stream.set_nodelay(true).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.flush().unwrap();
    stream.write_all(b"{}").unwrap();
    let next = format!("GET /api/plugins HTTP/1.1\r\nhost: {address}\r\nauthorization: {bearer}\r\nconnection: close\r\n\r\n");
    stream.write_all(next.as_bytes()).unwrap();
    let mut answers = String::new();
    stream.read_to_string(&mut answers).unwrap();
    assert_eq!(answers.matches("HTTP/1.1 200").count(), 2, "{answers}");
    assert!(answers.contains(r#""changed":"#) && answers.contains(r#""plugins":"#), "{answers}");
}

#[test]
fn a_task_is_seen_live_and_cancelled_from_the_console() {
    let dir = tempfile::tempdir().unwrap();
    let spin = Fixture::new().tool(ToolDef::new("spin").body("(loop $l (br $l)) unreachable").task_support(TaskSupport::Optional)).build();
    write_plugin(dir.path(), "spinner", &spin);
    let audit = dir.path().join("audit.jsonl");
    let mut console = Console::start(dir.path(), &["--fuel", "1000000000000000", "--task-timeout", "10m", "--audit-log", audit.to_str().unwrap()]);
    // The event stream first, so the task's arrival is an event, not a poll.
    let events = open_events(&console);
    assert_eq!(next_event(&events, |kind, _| kind == "hello").0, "hello");
    console.mcp.initialize();
    let created = console.mcp.request("tools/call", json!({ "name": "spin", "arguments": {}, "task": {} }));
    let id = created["result"]["task"]["taskId"].as_str().unwrap().to_owned();
    let (_, data) = next_event(&events, |kind, data| kind == "tasks" && data["data"]["changed"].as_array().unwrap().iter().any(|t| t["id"] == json!(id)));
    let row = data["data"]["changed"].as_array().unwrap().iter().find(|t| t["id"] == json!(id)).unwrap().clone();
    assert_eq!((row["status"].as_str(), row["tool"].as_str(), row["plugin"].as_str()), (Some("working"), Some("spin"), Some("spinner")));
    assert!(row["owner"].as_str().unwrap().starts_with("session:") && row["owner"].as_str().unwrap().ends_with('…'), "{row}");
    // Listed with a filter, shown alone.
    let listed = console.read("/api/tasks?status=working&plugin=spinner");
    assert_eq!(listed["tasks"][0]["id"], json!(id));
    assert_eq!(console.read(&format!("/api/tasks/{id}"))["task"]["status"], "working");
    assert_eq!(console.read("/api/tasks?plugin=nothing")["tasks"], json!([]));
    // Cancelled from the console: stored cancelled, announced, and a second cancel is a 409.
    let (cookie, csrf) = console.login();
    let headers = [("cookie", cookie.as_str()), ("content-type", "application/json"), ("x-corral-csrf", csrf.as_str())];
    let reason = json!({ "reason": "spinning for ever" }).to_string();
    let reply = console.send("POST", &format!("/api/tasks/{id}/cancel"), &headers, Some(&reason));
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.json()["status"], "cancelled");
    // Its message names the operator and the reason, not the client.
    assert_eq!(reply.json()["message"], "cancelled by operator ops from the console: spinning for ever");
    next_event(&events, |kind, data| {
        kind == "tasks" && data["data"]["changed"].as_array().unwrap().iter().any(|t| t["id"] == json!(id) && t["status"] == "cancelled")
    });
    let again = console.send("POST", &format!("/api/tasks/{id}/cancel"), &headers, Some("{}")).refused(409);
    assert!(again.contains("is already cancelled"), "{again}");
    assert_eq!(console.send("POST", "/api/tasks/no-such-task/cancel", &headers, Some("{}")).refused(404), "no task `no-such-task`");
    // The client sees it cancelled too, and by whom.
    let status = console.mcp.result("tasks/get", json!({ "taskId": id }));
    assert_eq!(status["status"], "cancelled");
    assert_eq!(status["statusMessage"], "cancelled by operator ops from the console: spinning for ever");
    // The trail has the operator's action (who, why, the task) beside the task's transition,
    // which carries the same message; and the refused second cancel.
    let lines = wait_for_lines(&audit, |lines| lines.iter().filter(|l| l["kind"] == "operator" && l["action"] == "cancel").count() == 3);
    let cancels: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "operator" && l["action"] == "cancel").collect();
    assert_eq!((cancels[0]["operator"].as_str(), cancels[0]["outcome"].as_str()), (Some("ops"), Some("done")), "{:?}", cancels[0]);
    assert_eq!((cancels[0]["task_id"].as_str(), cancels[0]["reason"].as_str()), (Some(id.as_str()), Some("spinning for ever")));
    assert_eq!(cancels[0]["address"], "127.0.0.1");
    assert_eq!((cancels[1]["outcome"].as_str(), cancels[1]["detail"].as_str()), (Some("refused"), Some("already cancelled")));
    let ended = lines.iter().find(|l| l["kind"] == "task" && l["transition"] == "cancelled").expect("the task's cancel is in the trail");
    assert_eq!(ended["message"], "cancelled by operator ops from the console: spinning for ever");
    assert!(lines.iter().any(|l| l["kind"] == "operator" && l["action"] == "sign-in" && l["operator"] == "ops"));
    // The sessions view shows the MCP session by its principal, never its whole id.
    let sessions = console.read("/api/sessions");
    let session = &sessions["sessions"][0];
    assert!(session["principal"].as_str().unwrap().ends_with('…'), "{session}");
    assert!(!sessions.to_string().contains(console.mcp.session_id().unwrap()), "{sessions}");
}

/// The audit trail's lines once `done` holds of them (the trail is written off the request path).
fn wait_for_lines(path: &Path, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        if done(&lines) {
            return lines;
        }
        assert!(Instant::now() < deadline, "the audit trail never got there:\n{text}");
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn an_admin_token_revoked_in_its_file_ends_its_sign_ins_and_a_new_one_works_at_once() {
    let plugins = example_plugins(&["text"]);
    let mut console = Console::start(plugins.path(), &[]);
    let (cookie, _) = console.login();
    assert_eq!(console.get("/api/session", &[("cookie", cookie.as_str())]).status, 200);
    // The operator replaces the file: `ops` revoked, `ops2` added.
    let path = console._tokens.path().to_owned();
    let next = path.with_extension("next");
    std::fs::write(&next, "ops2 second-admin-token-0123456789\n").unwrap();
    std::fs::rename(&next, &path).unwrap();
    // Waited for in the log: polling with the new token before it is taken would count as
    // refused tokens and pause this address.
    console.mcp.wait_stderr("the tokens file reloaded", TIMEOUT, |t| t.contains("--admin-tokens-file") && t.contains("reloaded, 1 token(s) in force"));
    assert_eq!(console.get("/api/plugins", &[("authorization", "Bearer second-admin-token-0123456789")]).status, 200);
    assert_eq!(console.get("/api/plugins", &[("authorization", &format!("Bearer {ADMIN_TOKEN}"))]).status, 401);
    let message = console.get("/api/session", &[("cookie", cookie.as_str())]).refused(401);
    assert_eq!(message, "the sign-in's admin token was revoked: sign in again");
}

#[test]
fn refused_admin_tokens_are_logged_counted_audited_and_slow_their_address_down() {
    let plugins = example_plugins(&["text"]);
    let audit = tempfile::NamedTempFile::new().unwrap();
    let mut console = Console::start(plugins.path(), &["--audit-log", audit.path().to_str().unwrap()]);
    fn login_with(console: &Console, token: &str) -> Reply {
        console.send("POST", "/api/login", &[("content-type", "application/json")], Some(&json!({ "token": token }).to_string()))
    }
    // Five wrong tokens, as a sign-in or a bearer token: each a plain 401.
    for n in 0..5 {
        let reply = match n % 2 {
            0 => login_with(&console, &format!("guess-{n}")),
            _ => console.get("/api/tasks", &[("authorization", &format!("Bearer guess-{n}"))]),
        };
        assert_eq!(reply.status, 401, "guess {n}: {reply:?}");
    }
    // Then the address is paused: 429 with Retry-After, even for the right token, which is
    // not looked at.
    let paused = console.send("POST", "/api/login", &[("content-type", "application/json")], Some(&json!({ "token": ADMIN_TOKEN }).to_string()));
    let message = paused.refused(429);
    assert!(message.starts_with("too many refused admin tokens from this address: try again in "), "{message}");
    let raw =
        console.raw(&format!("GET /api/plugins HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {ADMIN_TOKEN}\r\nconnection: close\r\n\r\n", console.address()));
    assert!(raw.starts_with("HTTP/1.1 429"), "{raw}");
    let retry_after = raw.lines().find_map(|l| l.to_ascii_lowercase().strip_prefix("retry-after: ").map(|v| v.trim().parse::<u64>().unwrap()));
    assert!(matches!(retry_after, Some(1..=10)), "{raw}");
    // Requests without a token are not held up (the page, its files).
    assert_eq!(console.get("/console.css", &[]).status, 200);
    // Each refusal was logged with its address (never the token), audited and counted.
    let stderr = console.mcp.wait_stderr("five refusals logged", TIMEOUT, |t| t.matches("refused an admin token").count() >= 5);
    assert!(stderr.contains("a console sign-in from 127.0.0.1") && stderr.contains("a bearer token on the admin API from 127.0.0.1"), "{stderr}");
    assert!(!stderr.contains("guess-"), "a refused token is never logged:\n{stderr}");
    let lines = wait_for_lines(audit.path(), |lines| lines.iter().filter(|l| l["kind"] == "operator").count() >= 5);
    let refused: Vec<&Value> = lines.iter().filter(|l| l["kind"] == "operator" && l["action"] == "sign-in").collect();
    assert_eq!(refused.len(), 5, "{lines:?}");
    assert!(refused.iter().all(|l| l["outcome"] == "refused" && l["operator"].is_null() && l["address"] == "127.0.0.1"), "{refused:?}");
    assert!(!std::fs::read_to_string(audit.path()).unwrap().contains("guess-"));
    let metrics_url = console.mcp.http_url().unwrap().replace("/mcp", "/metrics");
    let metrics = console.agent.get(metrics_url).call().unwrap().into_body().read_to_string().unwrap();
    assert!(metrics.lines().any(|l| l == "corral_admin_sign_ins_refused_total 5"), "{metrics}");
}

type Events = mpsc::Receiver<(String, Value)>;

/// `GET /api/events` with the bearer token, read on a thread: (event, data) pairs.
fn open_events(console: &Console) -> Events {
    let request =
        ureq::http::Request::builder().uri(format!("{}/api/events", console.base)).header("authorization", format!("Bearer {ADMIN_TOKEN}")).body(()).unwrap();
    let agent = ureq::Agent::config_builder().http_status_as_error(false).build().new_agent();
    let response = agent.run(request).expect("the event stream opens");
    assert_eq!(response.status().as_u16(), 200);
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut kind = String::new();
        for line in BufReader::new(response.into_body().into_reader()).lines().map_while(Result::ok) {
            if let Some(k) = line.strip_prefix("event:") {
                kind = k.trim().to_owned();
            } else if let Some(data) = line.strip_prefix("data:") {
                let value = serde_json::from_str(data.trim()).unwrap_or(Value::Null);
                if tx.send((kind.clone(), value)).is_err() {
                    return;
                }
            }
        }
    });
    rx
}

/// The first event that `wanted` accepts (others are skipped), within [`TIMEOUT`].
fn next_event(events: &Events, wanted: impl Fn(&str, &Value) -> bool) -> (String, Value) {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        let (kind, data) = events.recv_timeout(left).expect("the awaited event arrives");
        if wanted(&kind, &data) {
            return (kind, data);
        }
    }
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    let hash = sha2::Sha256::digest(bytes);
    format!("sha256:{}", hash.iter().map(|b| format!("{b:02x}")).collect::<String>())
}
