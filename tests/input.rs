//! Contract 0.3.0's `input` and `checkpoints` in a 2025-11-25 session, over both transports:
//! `ask` sends each request to the client in turn and returns the answers under the plugin's
//! keys, `roots` sends `roots/list` only to a client that declared `roots`, bad keys are refused
//! before anything is asked, and checkpoints outside a task are kept for the call only.
//!
//! The plugin is `tests/guests/mrtr` (0.3.0), served beside the 0.2.0 conformance fixture.

#[macro_use]
mod common;

use std::path::Path;
use std::time::Duration;

use common::{McpProcess, Transport, TIMEOUT};
use serde_json::{json, Value};
use tempfile::TempDir;

/// A host serving the 0.3.0 fixture (and the 0.2.0 one) to a client that declared `capabilities`.
fn host(t: Transport, capabilities: &[&str]) -> (TempDir, McpProcess) {
    let dir = tempfile::tempdir().unwrap();
    let guests: &Path = common::test_guests();
    std::fs::copy(guests.join("mrtr.wasm"), dir.path().join("mrtr.wasm")).unwrap();
    std::fs::copy(guests.join("conformance.wasm"), dir.path().join("fixture.wasm")).unwrap();
    let mut mcp = McpProcess::spawn_with(t, &["serve", "--plugins", dir.path().to_str().unwrap()]);
    mcp.initialize_declaring(capabilities);
    (dir, mcp)
}

/// The JSON text of a tool's first content block, and whether it was an error.
fn json_of(result: &Value) -> (Value, bool) {
    let text = result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {result}"));
    (serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}")), result["isError"] == true)
}

scenarios! {
    fn ask_sends_each_request_in_turn_and_answers_under_the_plugins_keys(t: Transport) {
        let (_dir, mut mcp) = host(t, &["elicitation", "sampling"]);
        let id = mcp.send_request("tools/call", json!({ "name": "ask_two", "arguments": {} }));
        let form = mcp.wait_request("elicitation/create", TIMEOUT);
        assert_eq!(form["params"]["message"], "Who are you?");
        assert_eq!(form["params"]["requestedSchema"]["required"], json!(["name"]));
        // The second request waits for the first answer.
        mcp.assert_no_request("sampling/createMessage", Duration::from_millis(100));
        mcp.respond(&form, json!({ "action": "accept", "content": { "name": "Ada" } }));
        let model = mcp.wait_request("sampling/createMessage", TIMEOUT);
        assert_eq!(model["params"]["maxTokens"], 20);
        mcp.respond(&model, json!({ "role": "assistant", "content": { "type": "text", "text": "hi" }, "model": "m1" }));
        let (answers, is_error) = json_of(&mcp.wait_response(id, TIMEOUT)["result"]);
        assert!(!is_error, "{answers}");
        assert_eq!(answers, json!({ "who": { "action": "accept", "content": { "name": "Ada" } }, "model": { "model": "m1", "text": "hi" } }));
    }

    fn one_undeclared_capability_fails_the_whole_ask_before_anything_is_sent(t: Transport) {
        let (_dir, mut mcp) = host(t, &["elicitation"]);
        let id = mcp.send_request("tools/call", json!({ "name": "ask_two", "arguments": {} }));
        // The form goes out first; the model request then fails the ask.
        let form = mcp.wait_request("elicitation/create", TIMEOUT);
        mcp.respond(&form, json!({ "action": "decline" }));
        let (answer, is_error) = json_of(&mcp.wait_response(id, TIMEOUT)["result"]);
        assert!(is_error);
        assert_eq!(answer["error"]["kind"], "unsupported", "{answer}");
        assert_eq!(answer["error"]["message"], "the client did not declare the `sampling` capability, so it was not asked");
        mcp.assert_no_request("sampling/createMessage", Duration::from_millis(50));
    }

    fn roots_go_to_a_client_that_declared_them(t: Transport) {
        let (_dir, mut mcp) = host(t, &["roots"]);
        let id = mcp.send_request("tools/call", json!({ "name": "list_roots", "arguments": {} }));
        let request = mcp.wait_request("roots/list", TIMEOUT);
        mcp.respond(&request, json!({ "roots": [{ "uri": "file:///work", "name": "Work" }, { "uri": "file:///tmp" }] }));
        let (roots, is_error) = json_of(&mcp.wait_response(id, TIMEOUT)["result"]);
        assert!(!is_error, "{roots}");
        assert_eq!(roots, json!([{ "uri": "file:///work", "name": "Work" }, { "uri": "file:///tmp", "name": null }]));

        // A malformed answer reaches the plugin as refused.
        let id = mcp.send_request("tools/call", json!({ "name": "list_roots", "arguments": {} }));
        let request = mcp.wait_request("roots/list", TIMEOUT);
        mcp.respond(&request, json!({ "roots": [{ "name": "no uri" }] }));
        let (answer, _) = json_of(&mcp.wait_response(id, TIMEOUT)["result"]);
        assert_eq!(answer["error"]["kind"], "refused", "{answer}");
        assert!(answer["error"]["message"].as_str().unwrap().starts_with("the client's answer is not a roots/list result: a root lacks its `uri`"), "{answer}");
    }

    fn a_client_without_roots_is_not_asked_and_the_plugin_is_told_why(t: Transport) {
        let (_dir, mut mcp) = host(t, &["elicitation", "sampling"]);
        let (answer, is_error) = json_of(&mcp.call_tool("list_roots", json!({})));
        assert!(is_error);
        assert_eq!(answer["error"], json!({ "kind": "unsupported", "message": "the client did not declare the `roots` capability, so it was not asked" }));
        mcp.assert_no_request("roots/list", Duration::from_millis(100));
    }

    fn keys_used_twice_are_refused_before_the_client_is_asked(t: Transport) {
        let (_dir, mut mcp) = host(t, &["roots"]);
        let (answer, is_error) = json_of(&mcp.call_tool("ask_bad_keys", json!({})));
        assert!(is_error);
        assert_eq!(answer["error"], json!({ "kind": "invalid", "message": "input key \"same\" is used twice in one `ask`" }));
        mcp.assert_no_request("roots/list", Duration::from_millis(100));
    }

    fn checkpoints_outside_a_task_are_kept_for_the_call_and_never_resumed(t: Transport) {
        let (_dir, mut mcp) = host(t, &[]);
        let (answer, is_error) = json_of(&mcp.call_tool("keep_checkpoint", json!({})));
        assert!(!is_error, "{answer}");
        assert_eq!(answer, json!({ "kept": true, "resume": null, "too_big": "a checkpoint holds at most 1048576 bytes; this one has 1048577" }));
    }

    fn a_0_3_0_plugin_is_served_beside_a_0_2_0_one(t: Transport) {
        let (_dir, mut mcp) = host(t, &[]);
        let tools = mcp.result("tools/list", json!({}));
        let names: Vec<&str> = tools["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
        assert!(names.contains(&"ask_two") && names.contains(&"test_simple_text"), "{names:?}");
        let prompts = mcp.result("prompts/list", json!({}));
        assert!(prompts["prompts"].as_array().unwrap().iter().any(|p| p["name"] == "test_input_required_result_prompt"), "{prompts}");
        let templates = mcp.result("resources/templates/list", json!({}));
        assert!(templates["resourceTemplates"].as_array().unwrap().iter().any(|r| r["uriTemplate"] == "mrtr://ask/{topic}"), "{templates}");
    }

    fn a_resource_read_and_a_prompt_may_ask_too(t: Transport) {
        let (_dir, mut mcp) = host(t, &["elicitation"]);
        let id = mcp.send_request("resources/read", json!({ "uri": "mrtr://ask/motd" }));
        let form = mcp.wait_request("elicitation/create", TIMEOUT);
        assert_eq!(form["params"]["message"], "What should motd say?");
        mcp.respond(&form, json!({ "action": "accept", "content": { "text": "hello" } }));
        let read = mcp.wait_response(id, TIMEOUT);
        assert_eq!(read["result"]["contents"][0]["text"], "hello", "{read}");

        let id = mcp.send_request("prompts/get", json!({ "name": "test_input_required_result_prompt" }));
        let form = mcp.wait_request("elicitation/create", TIMEOUT);
        mcp.respond(&form, json!({ "action": "accept", "content": { "context": "tests" } }));
        let prompt = mcp.wait_response(id, TIMEOUT);
        assert_eq!(prompt["result"]["messages"][0]["content"]["text"], "Context: tests", "{prompt}");
    }
}
