//! `--policy FILE` end to end, on the real binary: what each principal's lists show and what its
//! calls get, in both eras over HTTP with two tokens and over stdio for the local user; who may
//! steer a task; call rates (429 with `Retry-After` over HTTP, in both eras, and held across two
//! replicas on one PostgreSQL) and task caps; and a policy edited while the host serves.
//!
//! Buckets never race the clock here: every rate refills once an hour, so what a test takes in
//! a burst is all there is while it runs.

mod common;
#[path = "../src/tasks/postgres/testing.rs"]
mod pg_cluster;

use std::path::Path;

use common::client::TIMEOUT;
use common::serve::{serve_command, HttpServe};
use common::{example_plugins, McpProcess, Transport};
use serde_json::{json, Value};

const LEGACY: &str = "2025-11-25";
const MODERN: &str = "2026-07-28";
const TASKS: &str = "io.modelcontextprotocol/tasks";
/// `FORBIDDEN` and `RATE_LIMITED` of `mcp::jsonrpc`.
const DENIED: i64 = -32003;
const RATE_LIMITED: i64 = -32029;

/// A host serving HTTP with tokens `alice`, `bob` and `ops` (the token is the name twice), a
/// policy file, and the example plugins named.
struct Host {
    serve: HttpServe,
    _plugins: tempfile::TempDir,
    _files: tempfile::TempDir,
    agent: ureq::Agent,
}

/// One HTTP answer.
#[derive(Debug)]
struct Reply {
    status: u16,
    retry_after: Option<String>,
    session: Option<String>,
    body: Value,
}

impl Reply {
    fn error_code(&self) -> Option<i64> {
        self.body["error"]["code"].as_i64()
    }
}

fn files(policy: &str) -> tempfile::TempDir {
    let files = tempfile::tempdir().unwrap();
    std::fs::write(files.path().join("tokens"), "alice alice\nbob bob\nops ops\n").unwrap();
    std::fs::write(files.path().join("policy.toml"), policy).unwrap();
    files
}

fn serve_args(files: &Path) -> Vec<String> {
    let path = |name: &str| files.join(name).to_str().unwrap().to_owned();
    vec!["--auth-tokens-file".into(), path("tokens"), "--policy".into(), path("policy.toml")]
}

impl Host {
    fn start(plugins: &[&str], policy: &str, db: &str, extra: &[&str]) -> Host {
        let plugins = example_plugins(plugins);
        let files = files(policy);
        let mut args = serve_args(files.path());
        args.extend(extra.iter().map(|a| a.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let serve = HttpServe::spawn(serve_command(plugins.path(), db, &args), TIMEOUT);
        Host { serve, _plugins: plugins, _files: files, agent: common::modern_http::agent() }
    }

    fn post(&self, token: &str, headers: &[(&str, &str)], body: Value) -> Reply {
        post(&self.agent, &self.serve.url, token, headers, body)
    }

    /// A 2025-11-25 session of `token`'s holder.
    fn session(&self, token: &str) -> Session<'_> {
        let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": { "name": "policy-test", "version": "1" } } });
        let reply = self.post(token, &[], init);
        assert_eq!(reply.status, 200, "{reply:?}");
        Session { host: self, token: token.to_owned(), id: reply.session.expect("a session id") }
    }

    /// A 2026-07-28 request of `token`'s holder, declaring the tasks extension.
    fn modern(&self, token: &str, method: &str, mut params: Value) -> Reply {
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": { "name": "policy-test", "version": "1" },
            "io.modelcontextprotocol/clientCapabilities": { "extensions": { TASKS: {} } },
        });
        let name = params.get("name").or_else(|| params.get("taskId")).and_then(Value::as_str).map(str::to_owned);
        let mut headers = vec![("mcp-protocol-version", MODERN), ("mcp-method", method)];
        if let Some(name) = &name {
            headers.push(("mcp-name", name));
        }
        self.post(token, &headers, json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }))
    }
}

fn post(agent: &ureq::Agent, url: &str, token: &str, headers: &[(&str, &str)], body: Value) -> Reply {
    let mut request = ureq::http::Request::builder()
        .method("POST")
        .uri(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {token}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = agent.run(request.body(body.to_string()).unwrap()).unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let status = response.status().as_u16();
    let header = |name: &str| response.headers().get(name).map(|v| v.to_str().unwrap().to_owned());
    let (retry_after, session) = (header("retry-after"), header("mcp-session-id"));
    let sse = header("content-type").is_some_and(|t| t.starts_with("text/event-stream"));
    let text = response.into_body().read_to_string().unwrap();
    let text = if sse { text.lines().filter_map(|l| l.strip_prefix("data:")).next_back().unwrap_or("").trim().to_owned() } else { text };
    let body = serde_json::from_str(&text).unwrap_or_else(|e| panic!("HTTP {status}, not JSON ({e}): {text}"));
    Reply { status, retry_after, session, body }
}

struct Session<'a> {
    host: &'a Host,
    token: String,
    id: String,
}

impl Session<'_> {
    fn request(&self, method: &str, params: Value) -> Reply {
        let headers = [("mcp-session-id", self.id.as_str()), ("mcp-protocol-version", LEGACY)];
        self.host.post(&self.token, &headers, json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }))
    }

    fn result(&self, method: &str, params: Value) -> Value {
        let reply = self.request(method, params);
        assert_eq!(reply.status, 200, "{method}: {reply:?}");
        reply.body.get("result").cloned().unwrap_or_else(|| panic!("{method}: {reply:?}"))
    }
}

fn names(list: &Value, field: &str, key: &str) -> Vec<String> {
    list[field].as_array().unwrap_or_else(|| panic!("no {field}: {list}")).iter().map(|e| e[key].as_str().unwrap().to_owned()).collect()
}

fn echo(text: &str) -> Value {
    json!({ "name": "echo", "arguments": { "text": text } })
}

/// alice may use everything; bob only `echo` (`word_count` is denied by name, `countdown` hidden);
/// ops steers every task.
const TWO_TOKENS: &str = r#"
[[allow]]
who = { token = "alice" }
plugins = "*"

[[allow]]
who = { token = "bob" }
tools = ["echo", "word_count"]

[[deny]]
name = "no counting"
who = { token = "bob" }
tools = "word_count"

[[deny]]
who = { token = "bob" }
tools = "countdown"
hide = true

[[allow]]
who = { token = "ops" }
tools = "echo"
tasks = "any"
"#;

#[test]
fn each_token_lists_and_calls_what_the_policy_allows_in_both_eras() {
    let host = Host::start(&["text", "ticker"], TWO_TOKENS, ":memory:", &[]);
    let (alice, bob) = (host.session("alice"), host.session("bob"));
    assert_eq!(names(&alice.result("tools/list", json!({})), "tools", "name"), ["countdown", "echo", "tick", "word_count"]);
    assert_eq!(names(&bob.result("tools/list", json!({})), "tools", "name"), ["echo"]);
    assert_eq!(bob.result("tools/call", echo("hi"))["content"][0]["text"], "hi");

    let denied = bob.request("tools/call", json!({ "name": "word_count", "arguments": { "text": "a b" } }));
    assert_eq!(denied.status, 200, "{denied:?}");
    assert_eq!(denied.error_code(), Some(DENIED), "{denied:?}");
    assert_eq!(denied.body["error"]["data"], json!({ "kind": "denied", "rule": "deny", "name": "no counting", "tool": "word_count" }));
    assert_eq!(denied.body["error"]["message"], "the policy does not let you use tool `word_count`: the [[deny]] rule `no counting` refuses it");
    let unlisted = bob.request("tools/call", json!({ "name": "tick", "arguments": { "count": 1, "interval_ms": 1 } }));
    assert_eq!(unlisted.body["error"]["data"], json!({ "kind": "denied", "rule": "no-allow", "tool": "tick" }), "{unlisted:?}");
    // A hidden tool answers exactly as one that does not exist, whatever else the call lacks.
    let hidden = bob.request("tools/call", json!({ "name": "countdown", "arguments": { "from": 3 } }));
    let unknown = bob.request("tools/call", json!({ "name": "nope", "arguments": {} }));
    assert_eq!(hidden.body["error"]["code"], unknown.body["error"]["code"], "{hidden:?} vs {unknown:?}");
    assert_eq!(hidden.body["error"]["message"], "unknown tool `countdown`", "{hidden:?}");
    assert_ne!(alice.result("tools/call", json!({ "name": "word_count", "arguments": { "text": "a b" } }))["isError"], json!(true));

    // The same principals, statelessly.
    let listed = host.modern("bob", "tools/list", json!({}));
    assert_eq!(names(&listed.body["result"], "tools", "name"), ["echo"]);
    assert_eq!(listed.body["result"]["cacheScope"], json!("private"), "per-principal lists are not shared: {listed:?}");
    assert_eq!(names(&host.modern("alice", "tools/list", json!({})).body["result"], "tools", "name"), ["countdown", "echo", "tick", "word_count"]);
    let denied = host.modern("bob", "tools/call", json!({ "name": "word_count", "arguments": { "text": "a b" } }));
    assert_eq!((denied.status, denied.error_code()), (200, Some(DENIED)), "{denied:?}");
    assert_eq!(denied.body["error"]["data"]["rule"], "deny");
    let hidden = host.modern("bob", "tools/call", json!({ "name": "countdown", "arguments": { "from": 3 } }));
    assert_eq!(hidden.body["error"]["message"], "unknown tool `countdown`", "{hidden:?}");
    assert_eq!(host.modern("bob", "tools/call", echo("there")).body["result"]["content"][0]["text"], "there");
}

#[test]
fn only_the_owner_or_an_operator_the_policy_names_reaches_a_task() {
    let host = Host::start(&["text", "ticker"], TWO_TOKENS, ":memory:", &[]);
    let (alice, bob, ops) = (host.session("alice"), host.session("bob"), host.session("ops"));
    let long = json!({ "name": "tick", "arguments": { "count": 10000, "interval_ms": 1000 }, "task": {} });
    let id = alice.result("tools/call", long)["task"]["taskId"].as_str().unwrap().to_owned();
    for method in ["tasks/get", "tasks/cancel"] {
        let refused = bob.request(method, json!({ "taskId": id }));
        assert_eq!(refused.body["error"]["message"], "Failed to retrieve task: Task not found", "{method}: {refused:?}");
    }
    assert!(bob.result("tasks/list", json!({}))["tasks"].as_array().unwrap().is_empty());
    assert_eq!(ops.result("tasks/get", json!({ "taskId": id }))["status"], "working");
    assert_eq!(ops.result("tasks/cancel", json!({ "taskId": id }))["status"], "cancelled");
    assert_eq!(alice.result("tasks/get", json!({ "taskId": id }))["status"], "cancelled", "the owner sees the operator's cancel");
    let result = ops.result("tasks/result", json!({ "taskId": id }));
    assert_eq!(result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], json!(id), "{result}");

    // A 2026-07-28 task: the same rule on that wire.
    let created = host.modern("alice", "tools/call", json!({ "name": "countdown", "arguments": { "from": 10000, "interval_ms": 1000 } }));
    let id = created.body["result"]["taskId"].as_str().unwrap_or_else(|| panic!("{created:?}")).to_owned();
    let refused = host.modern("bob", "tasks/get", json!({ "taskId": id }));
    assert_eq!(refused.error_code(), Some(-32602), "{refused:?}");
    assert_eq!(host.modern("ops", "tasks/get", json!({ "taskId": id })).body["result"]["status"], "working");
    assert_eq!(host.modern("ops", "tasks/cancel", json!({ "taskId": id })).body["result"]["resultType"], "complete");
    assert_eq!(host.modern("alice", "tasks/get", json!({ "taskId": id })).body["result"]["status"], "cancelled");
}

const LIMITED: &str = r#"
[[allow]]
who = { token = ["alice", "bob"] }
plugins = "*"

[[limit]]
who = { token = "alice" }
rate = "1/h"
burst = 2
max-active-tasks = 1
"#;

#[test]
fn a_spent_rate_is_a_429_with_retry_after_in_both_eras_and_a_task_cap_refuses_the_next_task() {
    let host = Host::start(&["text", "ticker"], LIMITED, ":memory:", &[]);
    let (alice, bob) = (host.session("alice"), host.session("bob"));
    alice.result("tools/call", echo("1"));
    assert!(alice.request("tools/list", json!({})).status == 200, "lists spend no call token");
    alice.result("tools/call", echo("2"));
    let refused = alice.request("tools/call", echo("3"));
    assert_eq!((refused.status, refused.error_code()), (429, Some(RATE_LIMITED)), "{refused:?}");
    let retry_after: u64 = refused.retry_after.as_deref().expect("Retry-After").parse().unwrap();
    assert!((1..=3600).contains(&retry_after), "{refused:?}");
    assert_eq!(refused.body["error"]["data"]["retryAfterSeconds"], json!(retry_after));
    assert_eq!(refused.body["error"]["data"]["kind"], "rate-limited");
    // The bucket is the principal's, whichever era it calls in.
    let modern = host.modern("alice", "tools/call", echo("4"));
    assert_eq!((modern.status, modern.error_code()), (429, Some(RATE_LIMITED)), "{modern:?}");
    assert!(modern.retry_after.is_some(), "{modern:?}");
    assert_eq!(bob.result("tools/call", echo("5"))["content"][0]["text"], "5", "bob has no limit");
    assert_eq!(host.modern("bob", "tools/call", echo("6")).status, 200);
}

#[test]
fn a_principals_task_cap_refuses_its_next_task_and_not_anyone_elses() {
    let policy = LIMITED.replace("rate = \"1/h\"\nburst = 2\n", "");
    let host = Host::start(&["text", "ticker"], &policy, ":memory:", &[]);
    let (alice, bob) = (host.session("alice"), host.session("bob"));
    let long = json!({ "name": "tick", "arguments": { "count": 10000, "interval_ms": 1000 }, "task": {} });
    let id = alice.result("tools/call", long.clone())["task"]["taskId"].as_str().unwrap().to_owned();
    let refused = alice.request("tools/call", long.clone());
    assert_eq!(refused.body["error"]["data"], json!({ "kind": "overloaded", "scope": "owner", "active": 1, "limit": 1 }), "{refused:?}");
    bob.result("tools/call", long.clone());
    bob.result("tools/call", long.clone());
    alice.result("tasks/cancel", json!({ "taskId": id }));
    alice.result("tools/call", long);
}

#[test]
fn replicas_on_one_postgresql_draw_from_one_bucket() {
    let Some(db) = pg_cluster::database_or_skip() else { return };
    let a = Host::start(&["text"], LIMITED, &db, &[]);
    let b = Host::start(&["text"], LIMITED, &db, &[]);
    assert_eq!(a.session("alice").result("tools/call", echo("on a"))["content"][0]["text"], "on a");
    assert_eq!(b.modern("alice", "tools/call", echo("on b")).status, 200);
    for host in [&a, &b] {
        let refused = host.session("alice").request("tools/call", echo("again"));
        assert_eq!((refused.status, refused.error_code()), (429, Some(RATE_LIMITED)), "the burst was spent across both: {refused:?}");
    }
    assert_eq!(b.session("bob").request("tools/call", echo("bob")).status, 200);
}

#[test]
fn the_local_user_over_stdio_is_held_to_the_same_policy_and_a_policy_edit_applies_while_serving() {
    let plugins = example_plugins(&["text"]);
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    let allow_echo = "[[allow]]\nwho = { local = true }\ntools = \"echo\"\n\n[[limit]]\nwho = { local = true }\nrate = \"1/h\"\nburst = 3\n";
    std::fs::write(&policy, allow_echo).unwrap();
    let mut mcp = McpProcess::spawn_with(Transport::Stdio, &["serve", "--plugins", plugins.path().to_str().unwrap(), "--policy", policy.to_str().unwrap()]);
    mcp.initialize();
    assert_eq!(names(&mcp.result("tools/list", json!({})), "tools", "name"), ["echo"]);
    let denied = mcp.request("tools/call", json!({ "name": "word_count", "arguments": { "text": "a" } }));
    assert_eq!(denied["error"]["code"], json!(DENIED), "{denied}");
    assert_eq!(denied["error"]["data"]["rule"], "no-allow");
    assert_eq!(mcp.call_tool("echo", json!({ "text": "one" }))["content"][0]["text"], "one");

    // A broken edit: logged with the file, line and key; the last good policy stays.
    std::fs::write(&policy, format!("{allow_echo}\n[[allow]]\nwho = {{ local = true }}\ntools = \"word_count\"\nhdie = true\n")).unwrap();
    let log = mcp.wait_stderr("the refused reload", TIMEOUT, |log| log.contains("policy not reloaded"));
    assert!(log.contains("policy.toml:13: unknown field `hdie`"), "{log}");
    assert_eq!(names(&mcp.result("tools/list", json!({})), "tools", "name"), ["echo"]);

    // Fixed: it applies, to the session already open.
    std::fs::write(&policy, format!("{allow_echo}\n[[allow]]\nwho = {{ local = true }}\ntools = \"word_count\"\n")).unwrap();
    mcp.wait_stderr("the reload", TIMEOUT, |log| log.contains("policy reloaded"));
    // The watcher may have seen the write half done (a reload of the first part) before the
    // whole file: the listing follows once the last reload is in.
    let deadline = std::time::Instant::now() + TIMEOUT;
    loop {
        let listed = names(&mcp.result("tools/list", json!({})), "tools", "name");
        if listed == ["echo", "word_count"] {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the fixed policy never applied: {listed:?}\n{}", mcp.stderr_text());
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // The bucket outlived the reload, and the rate counts every call, refused ones too: the
    // denied call and `one` took two of the three tokens, this takes the last.
    mcp.call_tool("word_count", json!({ "text": "a b" }));
    let refused = mcp.request("tools/call", json!({ "name": "echo", "arguments": { "text": "four" } }));
    assert_eq!(refused["error"]["code"], json!(RATE_LIMITED), "{refused}");
    assert!(refused["error"]["data"]["retryAfterSeconds"].as_u64().is_some_and(|s| s >= 1), "{refused}");
}

#[test]
fn resources_templates_and_prompts_are_listed_and_used_as_the_policy_says() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(common::test_guests().join("conformance.wasm"), dir.path().join("fixture.wasm")).unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(
        &policy,
        r#"
        [[allow]]
        who = { local = true }
        resources = ["test://static-*", "test://template/*"]
        prompts = ["test_simple_prompt", "test_prompt_with_arguments"]
        [[deny]]
        who = { local = true }
        resources = "test://static-binary"
        hide = true
        "#,
    )
    .unwrap();
    let mut mcp = McpProcess::spawn_with(Transport::Stdio, &["serve", "--plugins", dir.path().to_str().unwrap(), "--policy", policy.to_str().unwrap()]);
    mcp.initialize();
    assert_eq!(names(&mcp.result("resources/list", json!({})), "resources", "uri"), ["test://static-text"]);
    assert_eq!(names(&mcp.result("resources/templates/list", json!({})), "resourceTemplates", "uriTemplate"), ["test://template/{id}/data"]);
    assert_eq!(names(&mcp.result("prompts/list", json!({})), "prompts", "name"), ["test_prompt_with_arguments", "test_simple_prompt"]);
    assert!(mcp.result("tools/list", json!({}))["tools"].as_array().unwrap().is_empty(), "no rule allows a tool");

    assert_eq!(mcp.result("resources/read", json!({ "uri": "test://static-text" }))["contents"][0]["uri"], "test://static-text");
    assert_eq!(mcp.result("resources/read", json!({ "uri": "test://template/7/data" }))["contents"][0]["uri"], "test://template/7/data");
    let denied = mcp.request("resources/read", json!({ "uri": "test://watched-resource" }));
    assert_eq!(denied["error"]["data"], json!({ "kind": "denied", "rule": "no-allow", "resource": "test://watched-resource" }), "{denied}");
    let hidden = mcp.request("resources/read", json!({ "uri": "test://static-binary" }));
    let missing = mcp.request("resources/read", json!({ "uri": "test://not-there" }));
    assert_eq!(hidden["error"]["code"], missing["error"]["code"], "{hidden} vs {missing}");
    assert_eq!(hidden["error"]["message"], "Resource not found: test://static-binary");

    assert_eq!(mcp.result("prompts/get", json!({ "name": "test_simple_prompt" }))["messages"][0]["role"], "user");
    let denied = mcp.request("prompts/get", json!({ "name": "test_prompt_with_image" }));
    assert_eq!(denied["error"]["data"]["prompt"], "test_prompt_with_image", "{denied}");
    let completion =
        json!({ "ref": { "type": "ref/prompt", "name": "test_prompt_with_embedded_resource" }, "argument": { "name": "resourceUri", "value": "" } });
    let denied = mcp.request("completion/complete", completion);
    assert_eq!(denied["error"]["data"]["rule"], "no-allow", "{denied}");
}

/// The audit trail's records, one JSON object a line.
fn audit_records(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

#[test]
fn a_subscription_is_authorized_like_a_read_and_updates_reach_only_who_may_read_now() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(common::test_guests().join("conformance.wasm"), dir.path().join("fixture.wasm")).unwrap();
    let (policy, audit) = (dir.path().join("policy.toml"), dir.path().join("audit.log"));
    let rules = |watched: &str| {
        format!(
            r#"
            hide = false
            [[allow]]
            who = {{ local = true }}
            tools = "touch"
            resources = ["test://static-text", "{watched}"]
            prompts = "test_simple_prompt"
            [[deny]]
            who = {{ local = true }}
            resources = "test://static-binary"
            prompts = "test_prompt_with_arguments"
            hide = true
            "#
        )
    };
    std::fs::write(&policy, rules("test://watched-resource")).unwrap();
    let plugins = dir.path().to_str().unwrap();
    let mut mcp = McpProcess::spawn_with(
        Transport::Stdio,
        &["serve", "--plugins", plugins, "--policy", policy.to_str().unwrap(), "--audit-log", audit.to_str().unwrap()],
    );
    mcp.initialize();
    assert_eq!(mcp.result("resources/subscribe", json!({ "uri": "test://watched-resource" })), json!({}));
    assert_eq!(mcp.result("resources/subscribe", json!({ "uri": "test://static-text" })), json!({}));
    // Not readable, not watchable: named as a read's refusal is, a hidden one as if absent.
    let denied = mcp.request("resources/subscribe", json!({ "uri": "test://template/7/data" }));
    let missing = mcp.request("resources/subscribe", json!({ "uri": "test://not-there" }));
    let hidden = mcp.request("resources/subscribe", json!({ "uri": "test://static-binary" }));
    assert_eq!(denied["error"]["code"], json!(DENIED), "{denied}");
    assert_eq!(denied["error"]["data"], json!({ "kind": "denied", "rule": "no-allow", "resource": "test://template/7/data" }), "{denied}");
    assert_eq!(hidden["error"]["code"], missing["error"]["code"], "{hidden} vs {missing}");
    assert_eq!(hidden["error"]["message"], "Resource not found: test://static-binary");

    // A hidden prompt answers as an unknown one, whatever else the request lacks.
    let hidden = mcp.request("prompts/get", json!({ "name": "test_prompt_with_arguments" }));
    let unknown = mcp.request("prompts/get", json!({ "name": "no_such_prompt" }));
    assert_eq!(hidden["error"]["code"], unknown["error"]["code"], "{hidden} vs {unknown}");
    assert_eq!(hidden["error"]["message"], "unknown prompt `test_prompt_with_arguments`", "{hidden}");
    let completion = json!({ "ref": { "type": "ref/prompt", "name": "test_prompt_with_arguments" }, "argument": { "name": "nope", "value": "" } });
    assert_eq!(mcp.request("completion/complete", completion)["error"]["message"], "unknown prompt `test_prompt_with_arguments`");
    // An allowed prompt still says what it lacks.
    let (code, message) = common::error_of(&mcp.request("prompts/get", json!({ "name": "test_simple_prompt", "arguments": { "x": 1 } })));
    assert_eq!((code, message.as_str()), (-32602, "argument `x` must be a string"));

    mcp.call_tool("touch", json!({ "uri": "test://watched-resource" }));
    assert_eq!(mcp.wait_notification("notifications/resources/updated", TIMEOUT)["params"]["uri"], "test://watched-resource");

    // The policy no longer lets the local user read the watched resource: its updates stop,
    // though the subscription was made when it could. The update of the resource it may still
    // read, sent after, marks when the other would have arrived.
    std::fs::write(&policy, rules("test://nothing-watched")).unwrap();
    mcp.wait_stderr("the reload", TIMEOUT, |log| log.contains("policy reloaded"));
    mcp.call_tool("touch", json!({ "uri": "test://watched-resource" }));
    mcp.call_tool("touch", json!({ "uri": "test://static-text" }));
    assert_eq!(mcp.wait_notification("notifications/resources/updated", TIMEOUT)["params"]["uri"], "test://static-text");
    let late: Vec<Value> = mcp.notifications().into_iter().filter(|n| n["method"] == "notifications/resources/updated").collect();
    assert!(late.is_empty(), "no update of a resource the principal may no longer read: {late:?}");

    // Every denied request is in the audit trail once, whichever method asked.
    mcp.close_stdin();
    mcp.wait_exit(TIMEOUT);
    let records = audit_records(&audit);
    let denied: Vec<&Value> = records.iter().filter(|r| r["outcome"] == "denied").collect();
    let named = |field: &str, name: &str| denied.iter().filter(|r| r[field] == name).count();
    assert_eq!(named("resource", "test://template/7/data"), 1, "{denied:#?}");
    assert_eq!(named("resource", "test://static-binary"), 1, "{denied:#?}");
    assert_eq!(named("prompt", "test_prompt_with_arguments"), 2, "prompts/get and completion/complete: {denied:#?}");
    assert_eq!(denied.len(), 4, "{denied:#?}");
}
