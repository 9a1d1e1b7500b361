//! Input for tasks of the 2026-07-28 tasks extension, against the real binary: a task whose
//! guest asks turns `input_required` with its outstanding `inputRequests` in `tasks/get`,
//! `tasks/update` delivers answers (partial ones acknowledged, the task staying `input_required`
//! until all are in, answered keys leaving the next `tasks/get`), keys stay unique over the
//! task's life, and an unknown or another owner's task, or an answer that does not fit, is
//! -32602. Over stdio (one owner), and over HTTP with bearer tokens (two owners).

mod common;

use std::io::Write;
use std::time::Duration;

use common::client::McpProcess;
use common::modern_http::{post_modern, MODERN_VERSION as VERSION};
use common::serve::{serve_command, HttpServe};
use common::task_wait::{input_keys, poll_task};
use serde_json::{json, Value};
use tempfile::TempDir;

fn plugins() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(common::test_guests().join("mrtr.wasm"), dir.path().join("mrtr.wasm")).unwrap();
    std::fs::copy(common::test_guests().join("conformance.wasm"), dir.path().join("fixture.wasm")).unwrap();
    dir
}

fn envelope() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {}, "extensions": { "io.modelcontextprotocol/tasks": {} } },
    })
}

fn modern(mut params: Value) -> Value {
    params["_meta"] = envelope();
    params
}

fn accept(content: Value) -> Value {
    json!({ "action": "accept", "content": content })
}

#[test]
fn a_task_asks_through_tasks_get_and_resumes_on_tasks_update_partial_answers_included() {
    let dir = plugins();
    let mut mcp = McpProcess::spawn(&["serve", "--plugins", dir.path().to_str().unwrap(), "--db", ":memory:"]);
    let created = mcp.result("tools/call", modern(json!({ "name": "multi_input", "arguments": {} })));
    assert_eq!(created["resultType"], "task", "{created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let waiting = poll_task(|| mcp_get(&mut mcp, &id), "two questions", |t| input_keys(t).len() == 2);
    assert_eq!(waiting["status"], "input_required", "{waiting}");
    assert_eq!(input_keys(&waiting), ["first", "second"]);
    assert_eq!(waiting["inputRequests"]["first"]["method"], "elicitation/create", "{waiting}");
    assert_eq!(waiting["inputRequests"]["first"]["params"]["message"], "First question", "{waiting}");

    // An answer that does not fit its form delivers nothing.
    let bad = mcp.request("tasks/update", modern(json!({ "taskId": id, "inputResponses": { "first": accept(json!({ "name": 5 })) } })));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
    assert!(bad["error"]["message"].as_str().unwrap().starts_with("inputResponses.first does not answer its request"), "{bad}");

    // One of two (and a key nobody asked for): acknowledged, still waiting for the other.
    let ack = mcp.result("tasks/update", modern(json!({ "taskId": id, "inputResponses": { "first": accept(json!({ "name": "Ada" })), "extra": {} } })));
    assert_eq!(ack.as_object().unwrap().keys().filter(|k| *k != "_meta").collect::<Vec<_>>(), ["resultType"], "an empty ack: {ack}");
    let still = mcp_get(&mut mcp, &id);
    assert_eq!((still["status"].as_str(), input_keys(&still)), (Some("input_required"), vec!["second".to_owned()]), "{still}");

    mcp.result("tasks/update", modern(json!({ "taskId": id, "inputResponses": { "second": accept(json!({ "name": "Bo" })) } })));
    let done = poll_task(|| mcp_get(&mut mcp, &id), "completed", |t| t["status"] == "completed");
    assert_eq!(done["result"]["content"][0]["text"], "Answers: Ada and Bo", "{done}");
    assert!(done.get("inputRequests").is_none(), "{done}");
}

#[test]
fn keys_stay_unique_over_a_tasks_life_and_unknown_tasks_are_invalid_params() {
    let dir = plugins();
    let mut mcp = McpProcess::spawn(&["serve", "--plugins", dir.path().to_str().unwrap(), "--db", ":memory:"]);
    let created = mcp.result("tools/call", modern(json!({ "name": "confirm_twice", "arguments": {} })));
    let id = created["taskId"].as_str().unwrap().to_owned();
    assert_eq!(input_keys(&poll_task(|| mcp_get(&mut mcp, &id), "asking", |t| !input_keys(t).is_empty())), ["confirm"]);
    mcp.result("tasks/update", modern(json!({ "taskId": id, "inputResponses": { "confirm": accept(json!({ "ok": true })) } })));
    // The second question under the plugin's same key gets a new one on the wire.
    let second = poll_task(|| mcp_get(&mut mcp, &id), "asking again", |t| input_keys(t) == ["confirm-2"]);
    assert_eq!(second["inputRequests"]["confirm-2"]["params"]["message"], "Really sure?", "{second}");
    // The old key is answered already: ignored.
    mcp.result("tasks/update", modern(json!({ "taskId": id, "inputResponses": { "confirm": accept(json!({ "ok": false })) } })));
    assert_eq!(input_keys(&mcp_get(&mut mcp, &id)), ["confirm-2"]);
    mcp.result("tasks/update", modern(json!({ "taskId": id, "inputResponses": { "confirm-2": accept(json!({ "ok": false })) } })));
    let done = poll_task(|| mcp_get(&mut mcp, &id), "completed", |t| t["status"] == "completed");
    assert_eq!(done["result"]["content"][0]["text"], "confirmed true then false", "{done}");

    let unknown = mcp.request("tasks/update", modern(json!({ "taskId": "no-such-task", "inputResponses": {} })));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let missing = mcp.request("tasks/update", modern(json!({ "taskId": id })));
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
}

#[test]
fn an_optional_call_that_became_a_task_asks_through_the_task() {
    let dir = plugins();
    let mut mcp = McpProcess::spawn(&["serve", "--plugins", dir.path().to_str().unwrap(), "--db", ":memory:", "--task-after", "200ms"]);
    let created = mcp.result("tools/call", modern(json!({ "name": "work_then_ask", "arguments": {} })));
    assert_eq!(created["resultType"], "task", "past --task-after: {created}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    let waiting = poll_task(|| mcp_get(&mut mcp, &id), "asking", |t| !input_keys(t).is_empty());
    assert_eq!((waiting["status"].as_str(), input_keys(&waiting)), (Some("input_required"), vec!["confirm".to_owned()]), "{waiting}");
    mcp.result("tasks/update", modern(json!({ "taskId": id, "inputResponses": { "confirm": accept(json!({ "ok": true })) } })));
    let done = poll_task(|| mcp_get(&mut mcp, &id), "completed", |t| t["status"] == "completed");
    assert_eq!(done["result"]["content"][0]["text"], "kept: true", "{done}");
}

fn mcp_get(mcp: &mut McpProcess, id: &str) -> Value {
    mcp.result("tasks/get", modern(json!({ "taskId": id })))
}

/// A modern HTTP POST with the headers that repeat its body and a bearer token.
fn post(base: &str, token: &str, id: u64, method: &str, params: Value) -> Value {
    post_modern(base, token, id, method, modern(params))
}

#[test]
fn another_owners_task_cannot_be_answered_or_read() {
    let dir = plugins();
    let mut tokens = tempfile::NamedTempFile::new().unwrap();
    writeln!(tokens, "alice token-alice-0123456789\nbob token-bob-0123456789").unwrap();
    let mut host = HttpServe::spawn(serve_command(dir.path(), ":memory:", &["--auth-tokens-file", tokens.path().to_str().unwrap()]), Duration::from_secs(60));
    let url = host.url.clone();
    let base = url.strip_suffix("/mcp").unwrap().to_owned();
    let (alice, bob) = ("token-alice-0123456789", "token-bob-0123456789");
    let created = post(&base, alice, 1, "tools/call", json!({ "name": "multi_input", "arguments": {} }));
    let id = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
    poll_task(|| post(&base, alice, 2, "tasks/get", json!({ "taskId": id }))["result"].clone(), "asking", |t| input_keys(t).len() == 2);

    let foreign = post(&base, bob, 3, "tasks/update", json!({ "taskId": id, "inputResponses": { "first": accept(json!({ "name": "Eve" })) } }));
    assert_eq!(foreign["error"]["code"], -32602, "{foreign}");
    assert_eq!(post(&base, bob, 4, "tasks/get", json!({ "taskId": id }))["error"]["code"], -32602);
    // Nothing was delivered: Alice still sees both questions.
    assert_eq!(input_keys(&post(&base, alice, 5, "tasks/get", json!({ "taskId": id }))["result"]), ["first", "second"]);
    let _ = host.child.kill();
    let _ = host.child.wait();
}
