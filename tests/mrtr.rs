//! Input the 2026-07-28 way (MRTR) against the real binary: a plain request whose plugin asks
//! ends with an `InputRequiredResult` under the plugin's keys and a signed `requestState`; the
//! retry with `inputResponses` completes, on the same process or on another one that shares the
//! secret and has none of the first one's memory. Missing answers ask again, extra keys are
//! ignored, malformed answers and tampered, foreign or mismatched state are -32602. The plugins:
//! `tests/guests/mrtr` (0.3.0, plugin-chosen keys) and the conformance fixture (0.2.0, whose
//! `elicit`/`sample` get keys the host chooses).

mod common;

use common::client::{error_of, McpProcess};
use serde_json::{json, Value};
use tempfile::TempDir;

const VERSION: &str = "2026-07-28";
const SECRET: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const ALL: &str = r#"{"elicitation":{},"sampling":{},"roots":{}}"#;

fn plugins() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(common::test_guests().join("mrtr.wasm"), dir.path().join("mrtr.wasm")).unwrap();
    std::fs::copy(common::test_guests().join("conformance.wasm"), dir.path().join("fixture.wasm")).unwrap();
    dir
}

fn spawn(dir: &TempDir, secret: &str) -> McpProcess {
    McpProcess::spawn(&["serve", "--plugins", dir.path().to_str().unwrap(), "--state-secret", secret])
}

/// `params` with an envelope declaring `capabilities` (JSON text).
fn modern(mut params: Value, capabilities: &str) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": serde_json::from_str::<Value>(capabilities).unwrap(),
    });
    params
}

fn call(name: &str) -> Value {
    json!({ "name": name, "arguments": {} })
}

fn retry(mut params: Value, responses: Value, state: &Value) -> Value {
    params["inputResponses"] = responses;
    if !state.is_null() {
        params["requestState"] = state.clone();
    }
    params
}

fn accept(content: Value) -> Value {
    json!({ "action": "accept", "content": content })
}

#[test]
fn a_question_becomes_an_input_required_result_and_the_retry_completes() {
    let dir = plugins();
    let mut mcp = spawn(&dir, SECRET);
    let params = modern(call("test_input_required_result_elicitation"), ALL);
    let first = mcp.result("tools/call", params.clone());
    assert_eq!(first["resultType"], "input_required", "{first}");
    assert_eq!(
        first["inputRequests"],
        json!({ "user_name": { "method": "elicitation/create", "params": {
            "mode": "form", "message": "What is your name?",
            "requestedSchema": { "type": "object", "properties": { "name": { "type": "string" } }, "required": ["name"] } } } }),
        "{first}"
    );
    assert!(first["requestState"].as_str().is_some_and(|s| !s.is_empty()), "{first}");
    assert_eq!(first["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "corral", "{first}");

    let done = mcp.result("tools/call", retry(params.clone(), json!({ "user_name": accept(json!({ "name": "Ada" })) }), &first["requestState"]));
    assert_eq!((done["resultType"].as_str(), done["content"][0]["text"].as_str()), (Some("complete"), Some("Hello, Ada!")), "{done}");

    // No state at all: the answers alone complete it; extra keys are ignored.
    let extra = json!({ "user_name": accept(json!({ "name": "Bo" })), "unknown": accept(json!({ "x": 1 })) });
    let done = mcp.result("tools/call", retry(params, extra, &Value::Null));
    assert_eq!(done["content"][0]["text"], "Hello, Bo!", "{done}");
}

#[test]
fn the_retry_may_reach_another_replica_that_shares_the_secret_and_no_other() {
    let dir = plugins();
    let mut first = spawn(&dir, SECRET);
    let mut second = spawn(&dir, SECRET);
    let mut stranger = spawn(&dir, &"ff".repeat(32));
    let params = modern(call("test_input_required_result_multi_round"), ALL);
    let round1 = first.result("tools/call", params.clone());
    assert_eq!(round1["inputRequests"]["step1"]["method"], "elicitation/create", "{round1}");
    // Round 2 on another process: step 1's answer goes into the new state.
    let round2 = second.result("tools/call", retry(params.clone(), json!({ "step1": accept(json!({ "name": "Ada" })) }), &round1["requestState"]));
    assert_eq!(round2["resultType"], "input_required", "{round2}");
    assert_eq!(round2["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["step2"], "{round2}");
    assert_ne!(round2["requestState"], round1["requestState"]);
    // Round 3 back on the first: only step 2's answer is sent, step 1's comes from the state.
    let done = first.result("tools/call", retry(params.clone(), json!({ "step2": accept(json!({ "color": "blue" })) }), &round2["requestState"]));
    assert_eq!(done["content"][0]["text"], "Ada likes blue", "{done}");

    // A process with another secret cannot verify the state.
    let refused = stranger.request("tools/call", retry(params, json!({ "step2": accept(json!({ "color": "red" })) }), &round2["requestState"]));
    assert_eq!(error_of(&refused), (-32602, "requestState was not issued by this server or was modified (its signature does not verify)".into()));
}

#[test]
fn tampered_or_mismatched_state_and_malformed_answers_are_invalid_params() {
    let dir = plugins();
    let mut mcp = spawn(&dir, SECRET);
    let params = modern(call("test_input_required_result_tampered_state"), ALL);
    let first = mcp.result("tools/call", params.clone());
    let state = first["requestState"].as_str().unwrap().to_owned();
    let answer = json!({ "confirm": accept(json!({ "ok": true })) });

    let tampered = mcp.request("tools/call", retry(params.clone(), answer.clone(), &json!(format!("{state}-TAMPERED"))));
    assert_eq!(error_of(&tampered).0, -32602, "{tampered}");
    assert!(error_of(&tampered).1.contains("signature does not verify"), "{tampered}");

    // The state of one tool does not carry over to another request.
    let other = modern(call("test_input_required_result_request_state"), ALL);
    let foreign = mcp.request("tools/call", retry(other, answer.clone(), &json!(state)));
    assert_eq!(error_of(&foreign), (-32602, "requestState was issued for another request (a different method, name, URI or arguments)".into()));

    // Not an object, not what the form asked for, not a string state.
    let number = mcp.request("tools/call", retry(params.clone(), json!({ "confirm": 12345 }), &Value::Null));
    assert_eq!(error_of(&number), (-32602, "inputResponses.confirm must be an object (the result of the request under that key), not 12345".into()));
    let wrong = mcp.request("tools/call", retry(params.clone(), json!({ "confirm": accept(json!({ "ok": "yes" })) }), &Value::Null));
    let (code, message) = error_of(&wrong);
    assert_eq!(code, -32602);
    assert!(message.starts_with("inputResponses.confirm does not answer its request: the client's answer does not match the requested schema"), "{message}");
    let mut null = params.clone();
    null["inputResponses"] = Value::Null;
    assert_eq!(error_of(&mcp.request("tools/call", null)), (-32602, "inputResponses must be an object of answers under their keys, not null".into()));
    let numeric_state = mcp.request("tools/call", retry(params, answer, &json!(7)));
    assert_eq!(error_of(&numeric_state), (-32602, "requestState must be a string, as the server sent it".into()));
}

#[test]
fn missing_answers_ask_again_for_what_is_still_missing() {
    let dir = plugins();
    let mut mcp = spawn(&dir, SECRET);
    let params = modern(call("test_input_required_result_multiple_inputs"), ALL);
    let first = mcp.result("tools/call", params.clone());
    let mut keys: Vec<&String> = first["inputRequests"].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["client_roots", "greeting", "user_name"], "{first}");
    assert_eq!(first["inputRequests"]["client_roots"], json!({ "method": "roots/list", "params": {} }));
    assert_eq!(first["inputRequests"]["greeting"]["params"]["maxTokens"], 50);

    // One answer: the other two are asked again, the answered one is recorded.
    let partial = mcp.result("tools/call", retry(params.clone(), json!({ "user_name": accept(json!({ "name": "Ada" })) }), &first["requestState"]));
    let mut keys: Vec<&String> = partial["inputRequests"].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["client_roots", "greeting"], "{partial}");
    let rest = json!({
        "greeting": { "role": "assistant", "content": { "type": "text", "text": "Hello there!" }, "model": "m" },
        "client_roots": { "roots": [{ "uri": "file:///test/root", "name": "Test Root" }] },
    });
    let done = mcp.result("tools/call", retry(params.clone(), rest, &partial["requestState"]));
    let text = done["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("All inputs: "), "{done}");
    let answers: Value = serde_json::from_str(&text["All inputs: ".len()..]).unwrap();
    assert_eq!(answers["user_name"]["content"]["name"], "Ada", "{answers}");
    assert_eq!(answers["client_roots"][0]["uri"], "file:///test/root", "{answers}");

    // Wrong keys only: asked again, not an error.
    let wrong =
        mcp.result("tools/call", retry(modern(call("test_input_required_result_elicitation"), ALL), json!({ "wrong_key": accept(json!({})) }), &Value::Null));
    assert_eq!(wrong["resultType"], "input_required", "{wrong}");
}

#[test]
fn only_declared_capabilities_are_asked_for() {
    let dir = plugins();
    let mut mcp = spawn(&dir, SECRET);
    // 0.3.0: the plugin hears `unsupported` and asks the model alone.
    let first = mcp.result("tools/call", modern(call("test_input_required_result_capabilities"), r#"{"sampling":{}}"#));
    assert_eq!(first["resultType"], "input_required", "{first}");
    assert_eq!(first["inputRequests"].as_object().unwrap().keys().collect::<Vec<_>>(), ["summary"], "{first}");
    // Roots not declared: the plugin's `roots()` fails, and it says so.
    let roots = mcp.result("tools/call", modern(call("list_roots"), r#"{"elicitation":{}}"#));
    assert_eq!(roots["isError"], true, "{roots}");
    assert!(roots["content"][0]["text"].as_str().unwrap().contains("the request did not declare the `roots` capability"), "{roots}");
    // 0.2.0's `sample` without `sampling`: -32021 as before.
    let missing = mcp.request("tools/call", modern(call("test_missing_capability"), "{}"));
    assert_eq!(missing["error"]["code"], -32021, "{missing}");
}

#[test]
fn a_0_2_0_plugins_questions_get_keys_the_host_chooses_in_call_order() {
    let dir = plugins();
    let mut mcp = spawn(&dir, SECRET);
    let params = modern(json!({ "name": "ask_user", "arguments": { "message": "Favourite number?" } }), ALL);
    let first = mcp.result("tools/call", params.clone());
    assert_eq!(first["resultType"], "input_required", "{first}");
    let request = &first["inputRequests"]["elicitation-1"];
    assert_eq!(request["method"], "elicitation/create", "{first}");
    assert_eq!(request["params"]["message"], "Favourite number?", "{first}");
    let done = mcp.result("tools/call", retry(params, json!({ "elicitation-1": accept(json!({ "answer": "7" })) }), &first["requestState"]));
    assert_eq!(done["resultType"], "complete", "{done}");
    let answer: Value = serde_json::from_str(done["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(answer, json!({ "action": "accept", "content": { "answer": "7" } }));
}

#[test]
fn prompts_and_resource_reads_ask_the_same_way_and_list_requests_never_do() {
    let dir = plugins();
    let mut mcp = spawn(&dir, SECRET);
    let params = modern(json!({ "name": "test_input_required_result_prompt" }), ALL);
    let first = mcp.result("prompts/get", params.clone());
    assert_eq!(first["inputRequests"]["user_context"]["method"], "elicitation/create", "{first}");
    let done = mcp.result("prompts/get", retry(params, json!({ "user_context": accept(json!({ "context": "tests" })) }), &first["requestState"]));
    assert_eq!((done["resultType"].as_str(), done["messages"][0]["content"]["text"].as_str()), (Some("complete"), Some("Context: tests")), "{done}");

    let params = modern(json!({ "uri": "mrtr://ask/motd" }), ALL);
    let first = mcp.result("resources/read", params.clone());
    assert_eq!(first["resultType"], "input_required", "{first}");
    assert!(first.get("ttlMs").is_none(), "an input-required result is not cacheable: {first}");
    let done = mcp.result("resources/read", retry(params.clone(), json!({ "text": accept(json!({ "text": "hello" })) }), &first["requestState"]));
    assert_eq!((done["resultType"].as_str(), done["contents"][0]["text"].as_str()), (Some("complete"), Some("hello")), "{done}");
    // The state of one URI is not good for another.
    let other = mcp.request("resources/read", retry(modern(json!({ "uri": "mrtr://ask/other" }), ALL), json!({}), &first["requestState"]));
    assert_eq!(error_of(&other).0, -32602, "{other}");

    for list in ["tools/list", "prompts/list"] {
        assert_eq!(mcp.result(list, modern(json!({}), ALL))["resultType"], "complete");
    }
}

#[test]
fn a_retried_call_runs_again_from_the_start() {
    let dir = plugins();
    let mut mcp = spawn(&dir, SECRET);
    let mut params = modern(call("side_effect_after_ask"), ALL);
    params["_meta"]["io.modelcontextprotocol/logLevel"] = json!("info");
    let first = mcp.result("tools/call", params.clone());
    assert_eq!(first["resultType"], "input_required", "{first}");
    let done = mcp.result("tools/call", retry(params, json!({ "who": accept(json!({ "name": "Ada" })) }), &first["requestState"]));
    assert_eq!(done["content"][0]["text"], "Hello, Ada!", "{done}");
    // Both runs logged the line written before the question.
    let logs: Vec<Value> = mcp.notifications().into_iter().filter(|n| n["method"] == "notifications/message").collect();
    assert_eq!(logs.iter().filter(|n| n["params"]["data"] == "before ask").count(), 2, "{logs:?}");
}
