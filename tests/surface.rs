//! The full MCP surface for plugins (contract `corral:plugin@0.2.0`), over both transports:
//! resources, templates, subscriptions, prompts, completion, and elicitation and sampling in
//! plain calls and inside tasks; a 0.1.0 plugin served beside a 0.2.0 one; a client without the
//! capabilities; namespacing and hot reload of resources and prompts.
//!
//! The 0.2.0 plugin is the conformance fixture (`tests/guests/conformance`), the 0.1.0 plugin the
//! sandbox probe (`tests/guests/probe`), both built from source once per test binary.

#[macro_use]
mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{error_of, McpProcess, Transport, TIMEOUT};
use serde_json::{json, Value};
use tempfile::TempDir;

const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
const BOTH: [&str; 2] = ["elicitation", "sampling"];

/// The directory holding `conformance.wasm` and `probe.wasm`, built from source.
fn guests() -> &'static Path {
    common::test_guests()
}

/// A plugin directory with `fixture.wasm` (0.2.0) and, when `with_probe`, `probe.wasm` (0.1.0).
fn plugin_dir(with_probe: bool) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(guests().join("conformance.wasm"), dir.path().join("fixture.wasm")).unwrap();
    if with_probe {
        std::fs::copy(guests().join("probe.wasm"), dir.path().join("probe.wasm")).unwrap();
    }
    dir
}

fn spawn(t: Transport, dir: &Path, extra: &[&str]) -> McpProcess {
    let mut args = vec!["serve", "--plugins", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    McpProcess::spawn_with(t, &args)
}

/// A host serving the fixture to a client that declared `capabilities` (names of `elicitation`,
/// `sampling`).
fn host(t: Transport, capabilities: &[&str]) -> (TempDir, McpProcess) {
    let dir = plugin_dir(false);
    let mut mcp = spawn(t, dir.path(), &[]);
    mcp.initialize_declaring(capabilities);
    (dir, mcp)
}

/// The JSON a fixture tool (`ask_user`, `ask_model`) answered with.
fn answer_of(result: &Value) -> Value {
    assert_ne!(result["isError"], true, "{result}");
    serde_json::from_str(result["content"][0]["text"].as_str().unwrap_or_else(|| panic!("no text: {result}"))).unwrap()
}

fn names(list: &Value, field: &str, key: &str) -> Vec<String> {
    list[field].as_array().unwrap_or_else(|| panic!("no {field}: {list}")).iter().map(|e| e[key].as_str().unwrap().to_owned()).collect()
}

fn wait_status(mcp: &mut McpProcess, task: &str, status: &str) -> Value {
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let got = mcp.result("tasks/get", json!({ "taskId": task }));
        if got["status"] == status {
            return got;
        }
        assert!(Instant::now() < deadline, "task {task} never became {status}: {got}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn ask_user_params(message: &str) -> Value {
    json!({ "name": "ask_user", "arguments": { "message": message } })
}

scenarios! {
    // -----------------------------------------------------------------------------------------
    // capabilities, listing and the 0.1.0 plugin beside the 0.2.0 one

    fn a_0_1_plugin_and_a_0_2_plugin_serve_side_by_side(t: Transport) {
        let dir = plugin_dir(true);
        let mut mcp = spawn(t, dir.path(), &[]);
        let init = mcp.initialize();
        let caps = &init["capabilities"];
        assert_eq!(caps["resources"], json!({ "subscribe": true, "listChanged": false }), "{init}");
        assert_eq!(caps["prompts"], json!({ "listChanged": false }), "{init}");
        assert_eq!(caps["completions"], json!({}), "{init}");

        let tools = names(&mcp.result("tools/list", json!({})), "tools", "name");
        assert!(tools.contains(&"probe".to_owned()) && tools.contains(&"ask_user".to_owned()), "{tools:?}");
        let probed = mcp.call_tool("probe", json!({}));
        assert_ne!(probed["isError"], true, "the 0.1.0 plugin works: {probed}");
        let simple = mcp.call_tool("test_simple_text", json!({}));
        assert_eq!(simple["content"][0]["text"], "This is a simple text response for testing.");
        // The load logs each plugin once the whole catalog is in, which may come after the first
        // plugins already answer calls: wait for it rather than race it.
        let names = |log: &str, contract: &str| log.contains(&format!("contract=\"{contract}\"")) || log.contains(&format!("contract={contract}"));
        mcp.wait_stderr("the log names each contract", TIMEOUT, |log| names(log, "0.1.0") && names(log, "0.2.0"));
    }

    // -----------------------------------------------------------------------------------------
    // resources

    fn resources_and_templates_are_listed_and_read(t: Transport) {
        let (_dir, mut mcp) = host(t, &[]);
        let listed = mcp.result("resources/list", json!({}));
        assert_eq!(names(&listed, "resources", "uri"), ["test://static-binary", "test://static-text", "test://watched-resource"]);
        let text_resource = &listed["resources"][1];
        assert_eq!(text_resource["name"], "static-text");
        assert_eq!(text_resource["mimeType"], "text/plain");
        let templates = mcp.result("resources/templates/list", json!({}));
        assert_eq!(names(&templates, "resourceTemplates", "uriTemplate"), ["fixture://{+path}", "test://template/{id}/data"]);

        let text = mcp.result("resources/read", json!({ "uri": "test://static-text" }));
        assert_eq!(text["contents"], json!([{ "uri": "test://static-text", "mimeType": "text/plain", "text": "This is the content of the static text resource." }]));
        let binary = mcp.result("resources/read", json!({ "uri": "test://static-binary" }));
        assert_eq!(binary["contents"][0]["mimeType"], "image/png");
        assert!(binary["contents"][0]["blob"].as_str().unwrap().starts_with("iVBORw0KGgo"), "base64 of a PNG: {binary}");
        let templated = mcp.result("resources/read", json!({ "uri": "test://template/42/data" }));
        assert_eq!(templated["contents"][0]["text"], r#"{"id":"42","templateTest":true,"data":"Data for ID: 42"}"#);
        let deep = mcp.result("resources/read", json!({ "uri": "fixture://a/b/c" }));
        assert_eq!(deep["contents"][0]["text"], "path: a/b/c");
    }

    fn reading_what_is_not_there_is_resource_not_found(t: Transport) {
        let (_dir, mut mcp) = host(t, &[]);
        // No plugin owns the URI: refused before any plugin runs.
        let (code, message) = error_of(&mcp.request("resources/read", json!({ "uri": "nothing://here" })));
        assert_eq!(code, -32002, "{message}");
        // The owner says there is nothing there.
        let (code, _) = error_of(&mcp.request("resources/read", json!({ "uri": "fixture://missing" })));
        assert_eq!(code, -32002);
        // The owner fails: its words reach the client.
        let (code, message) = error_of(&mcp.request("resources/read", json!({ "uri": "fixture://fail" })));
        assert_eq!(code, -32603);
        assert!(message.contains("fails on purpose"), "{message}");
        let (code, message) = error_of(&mcp.request("resources/read", json!({})));
        assert_eq!(code, -32602);
        assert!(message.contains("uri"), "{message}");
    }

    fn subscribers_hear_of_updates_until_they_unsubscribe(t: Transport) {
        let (_dir, mut mcp) = host(t, &[]);
        assert_eq!(mcp.result("resources/subscribe", json!({ "uri": "test://watched-resource" })), json!({}));
        mcp.call_tool("touch", json!({ "uri": "test://watched-resource" }));
        let updated = mcp.wait_notification("notifications/resources/updated", TIMEOUT);
        assert_eq!(updated["params"], json!({ "uri": "test://watched-resource" }));

        // Not subscribed, or not the plugin's own URI: nothing.
        mcp.call_tool("touch", json!({ "uri": "test://static-text" }));
        mcp.call_tool("touch", json!({ "uri": "elsewhere://x" }));
        assert_eq!(mcp.result("resources/unsubscribe", json!({ "uri": "test://watched-resource" })), json!({}));
        mcp.call_tool("touch", json!({ "uri": "test://watched-resource" }));
        // A barrier: an update that must come, announced after any the touches above caused.
        assert_eq!(mcp.result("resources/subscribe", json!({ "uri": "test://static-text" })), json!({}));
        mcp.call_tool("touch", json!({ "uri": "test://static-text" }));
        let updates = |mcp: &mut McpProcess| -> Vec<Value> {
            mcp.notifications().into_iter().filter(|n| n["method"] == "notifications/resources/updated").map(|n| n["params"]["uri"].clone()).collect()
        };
        let late = common::wait_on("the barrier's update", TIMEOUT, || updates(&mut mcp), |seen| seen.contains(&json!("test://static-text")));
        assert_eq!(late, [json!("test://static-text")], "no update after unsubscribing, none for others' URIs");
        mcp.wait_stderr("the ignored update in the log", TIMEOUT, |log| log.contains("ignored resource-updated") && log.contains("elsewhere://x"));

        let (code, _) = error_of(&mcp.request("resources/subscribe", json!({ "uri": "nothing://here" })));
        assert_eq!(code, -32002, "subscribing needs a resource that exists");
    }

    // -----------------------------------------------------------------------------------------
    // prompts and completion

    fn prompts_are_listed_and_rendered(t: Transport) {
        let (_dir, mut mcp) = host(t, &[]);
        let listed = mcp.result("prompts/list", json!({}));
        assert_eq!(names(&listed, "prompts", "name"), ["test_prompt_with_arguments", "test_prompt_with_embedded_resource", "test_prompt_with_image", "test_simple_prompt"]);
        let with_args = &listed["prompts"][0];
        assert_eq!(with_args["arguments"][0], json!({ "name": "arg1", "description": "First test argument", "required": true }));

        let simple = mcp.result("prompts/get", json!({ "name": "test_simple_prompt" }));
        assert_eq!(simple["messages"], json!([{ "role": "user", "content": { "type": "text", "text": "This is a simple prompt for testing." } }]));
        assert_eq!(simple["description"], "A simple prompt without arguments", "the listed description when the plugin gives none");
        let filled = mcp.result("prompts/get", json!({ "name": "test_prompt_with_arguments", "arguments": { "arg1": "hello", "arg2": "world" } }));
        assert_eq!(filled["messages"][0]["content"]["text"], "Prompt with arguments: arg1='hello', arg2='world'");
        let embedded = mcp.result("prompts/get", json!({ "name": "test_prompt_with_embedded_resource", "arguments": { "resourceUri": "test://x" } }));
        assert_eq!(embedded["messages"][0]["content"]["type"], "resource");
        assert_eq!(embedded["messages"][0]["content"]["resource"]["uri"], "test://x");
        let image = mcp.result("prompts/get", json!({ "name": "test_prompt_with_image" }));
        assert_eq!(image["messages"][0]["content"]["type"], "image");
    }

    fn prompts_get_refuses_unknown_prompts_and_missing_or_bad_arguments(t: Transport) {
        let (_dir, mut mcp) = host(t, &[]);
        let (code, message) = error_of(&mcp.request("prompts/get", json!({ "name": "nope" })));
        assert_eq!(code, -32602);
        assert!(message.contains("unknown prompt `nope`"), "{message}");
        let (code, message) = error_of(&mcp.request("prompts/get", json!({ "name": "test_prompt_with_arguments", "arguments": { "arg1": "x" } })));
        assert_eq!(code, -32602);
        assert!(message.contains("`arg2`"), "names the missing argument: {message}");
        let (code, _) = error_of(&mcp.request("prompts/get", json!({ "name": "test_prompt_with_arguments", "arguments": { "arg1": 1, "arg2": "y" } })));
        assert_eq!(code, -32602, "arguments are strings");
        // The plugin's own refusal.
        let (code, message) = error_of(&mcp.request("prompts/get", json!({ "name": "test_prompt_with_embedded_resource", "arguments": { "resourceUri": "nope" } })));
        assert_eq!(code, -32602);
        assert!(message.contains("not a URI"), "{message}");
    }

    fn completion_completes_prompt_arguments_and_template_variables(t: Transport) {
        let (_dir, mut mcp) = host(t, &[]);
        let prompt = mcp.result("completion/complete", json!({ "ref": { "type": "ref/prompt", "name": "test_prompt_with_arguments" }, "argument": { "name": "arg1", "value": "te" } }));
        assert_eq!(prompt["completion"], json!({ "values": ["test", "testing", "tested"], "total": 3, "hasMore": false }));
        let template = mcp.result("completion/complete", json!({
            "ref": { "type": "ref/resource", "uri": "test://template/{id}/data" },
            "argument": { "name": "id", "value": "" },
            "context": { "arguments": {} },
        }));
        assert_eq!(template["completion"]["values"].as_array().unwrap().len(), 100, "at most 100 values: {template}");
        assert_eq!(template["completion"]["hasMore"], true);
        assert_eq!(template["completion"]["total"], 150);
        let (code, _) = error_of(&mcp.request("completion/complete", json!({ "ref": { "type": "ref/prompt", "name": "nope" }, "argument": { "name": "a", "value": "" } })));
        assert_eq!(code, -32602);
        let (code, _) = error_of(&mcp.request("completion/complete", json!({ "ref": { "type": "ref/prompt", "name": "test_simple_prompt" }, "argument": { "name": "a", "value": "" } })));
        assert_eq!(code, -32602, "the prompt has no such argument");
    }

    // -----------------------------------------------------------------------------------------
    // elicitation and sampling in plain calls

    fn a_plain_call_elicits_in_the_middle_of_the_call(t: Transport) {
        let (_dir, mut mcp) = host(t, &BOTH);
        let id = mcp.send_request("tools/call", ask_user_params("What is the answer?"));
        let request = mcp.wait_request("elicitation/create", TIMEOUT);
        assert_eq!(request["params"]["message"], "What is the answer?");
        assert_eq!(request["params"]["requestedSchema"]["properties"]["answer"]["type"], "string");
        assert!(request["params"]["_meta"][RELATED_TASK].is_null(), "no task, no related-task: {request}");
        mcp.respond(&request, json!({ "action": "accept", "content": { "answer": "42" } }));
        let result = mcp.wait_response(id, TIMEOUT)["result"].clone();
        assert_eq!(answer_of(&result), json!({ "action": "accept", "content": { "answer": "42" } }));

        // Declining carries no content.
        let id = mcp.send_request("tools/call", ask_user_params("Again?"));
        let request = mcp.wait_request("elicitation/create", TIMEOUT);
        mcp.respond(&request, json!({ "action": "decline" }));
        assert_eq!(answer_of(&mcp.wait_response(id, TIMEOUT)["result"]), json!({ "action": "decline", "content": null }));
    }

    fn an_answer_that_breaks_the_schema_or_an_error_reaches_the_plugin_as_refused(t: Transport) {
        let (_dir, mut mcp) = host(t, &BOTH);
        let id = mcp.send_request("tools/call", ask_user_params("A number?"));
        let request = mcp.wait_request("elicitation/create", TIMEOUT);
        mcp.respond(&request, json!({ "action": "accept", "content": { "answer": 5 } }));
        let answer = answer_of(&mcp.wait_response(id, TIMEOUT)["result"]);
        assert_eq!(answer["error"], "refused", "{answer}");
        assert!(answer["message"].as_str().unwrap().contains("requested schema"), "{answer}");

        let id = mcp.send_request("tools/call", json!({ "name": "ask_model", "arguments": { "message": "hi" } }));
        let request = mcp.wait_request("sampling/createMessage", TIMEOUT);
        mcp.respond_error(&request, -1, "User rejected sampling request");
        let answer = answer_of(&mcp.wait_response(id, TIMEOUT)["result"]);
        assert_eq!(answer["error"], "refused", "{answer}");
        assert!(answer["message"].as_str().unwrap().contains("User rejected"), "{answer}");
    }

    fn a_plain_call_samples_the_clients_model(t: Transport) {
        let (_dir, mut mcp) = host(t, &BOTH);
        let id = mcp.send_request("tools/call", json!({ "name": "ask_model", "arguments": { "message": "Say hi" } }));
        let request = mcp.wait_request("sampling/createMessage", TIMEOUT);
        assert_eq!(request["params"]["messages"], json!([{ "role": "user", "content": { "type": "text", "text": "Say hi" } }]));
        assert_eq!(request["params"]["maxTokens"], 100);
        assert_eq!(request["params"]["modelPreferences"], json!({ "intelligencePriority": 0.5 }));
        mcp.respond(&request, json!({ "role": "assistant", "content": { "type": "text", "text": "Hi!" }, "model": "test-model", "stopReason": "endTurn" }));
        assert_eq!(answer_of(&mcp.wait_response(id, TIMEOUT)["result"]), json!({ "text": "Hi!", "model": "test-model", "stopReason": "endTurn" }));
    }

    fn a_client_without_the_capabilities_is_not_asked(t: Transport) {
        let (_dir, mut mcp) = host(t, &[]);
        let answer = answer_of(&mcp.call_tool("ask_user", json!({ "message": "Anyone?" })));
        assert_eq!(answer["error"], "unsupported", "{answer}");
        assert!(answer["message"].as_str().unwrap().contains("elicitation"), "{answer}");
        let answer = answer_of(&mcp.call_tool("ask_model", json!({ "message": "Anyone?" })));
        assert_eq!(answer["error"], "unsupported", "{answer}");
        assert!(answer["message"].as_str().unwrap().contains("sampling"), "{answer}");
        // The suite's tools report it as a tool error.
        let failed = mcp.call_tool("test_elicitation", json!({ "message": "x" }));
        assert_eq!(failed["isError"], true, "{failed}");
        mcp.assert_no_request("elicitation/create", Duration::from_millis(200));
        mcp.assert_no_request("sampling/createMessage", Duration::from_millis(10));
    }

    fn only_sampling_declared_means_no_elicitation(t: Transport) {
        let (_dir, mut mcp) = host(t, &["sampling"]);
        assert_eq!(answer_of(&mcp.call_tool("ask_user", json!({ "message": "?" })))["error"], "unsupported");
    }

    fn cancelling_a_call_withdraws_its_request_to_the_client(t: Transport) {
        let (_dir, mut mcp) = host(t, &BOTH);
        let id = mcp.send_request("tools/call", ask_user_params("Wait for me"));
        let request = mcp.wait_request("elicitation/create", TIMEOUT);
        mcp.notify("notifications/cancelled", json!({ "requestId": id, "reason": "changed my mind" }));
        let withdrawn = mcp.wait_notification("notifications/cancelled", TIMEOUT);
        assert_eq!(withdrawn["params"]["requestId"], request["id"], "{withdrawn}");
        mcp.assert_no_response(id, Duration::from_millis(300));
        // A late answer is ignored; the host still serves.
        mcp.respond(&request, json!({ "action": "cancel" }));
        assert_eq!(mcp.result("ping", json!({})), json!({}));
    }

    fn the_time_limit_runs_while_the_call_waits_for_the_client(t: Transport) {
        let dir = plugin_dir(false);
        std::fs::write(dir.path().join("fixture.toml"), "[limits]\ntimeout = \"500ms\"\n").unwrap();
        let mut mcp = spawn(t, dir.path(), &[]);
        mcp.initialize_with(json!({ "elicitation": {} }));
        let id = mcp.send_request("tools/call", ask_user_params("Too slow"));
        let request = mcp.wait_request("elicitation/create", TIMEOUT);
        let result = mcp.wait_response(id, TIMEOUT)["result"].clone();
        assert_eq!(result["isError"], true, "{result}");
        assert_eq!(result["_meta"]["corral/error"]["kind"], "timeout", "{result}");
        let withdrawn = mcp.wait_notification("notifications/cancelled", TIMEOUT);
        assert_eq!(withdrawn["params"]["requestId"], request["id"]);
    }

    // -----------------------------------------------------------------------------------------
    // elicitation and sampling inside tasks

    fn a_task_turns_input_required_while_the_client_answers(t: Transport) {
        let (_dir, mut mcp) = host(t, &BOTH);
        let created = mcp.result("tools/call", json!({ "name": "ask_user", "arguments": { "message": "Name?" }, "task": {} }));
        let task = created["task"]["taskId"].as_str().unwrap().to_owned();
        let request = mcp.wait_request("elicitation/create", TIMEOUT);
        assert_eq!(request["params"]["_meta"][RELATED_TASK], json!({ "taskId": task }), "{request}");
        let waiting = wait_status(&mut mcp, &task, "input_required");
        assert!(waiting["statusMessage"].as_str().unwrap().contains("Name?"), "{waiting}");
        let status = mcp.wait_notification("notifications/tasks/status", TIMEOUT);
        assert_eq!(status["params"]["status"], "input_required", "{status}");

        mcp.respond(&request, json!({ "action": "accept", "content": { "answer": "Ada" } }));
        let result = mcp.result("tasks/result", json!({ "taskId": task }));
        assert_eq!(answer_of(&result), json!({ "action": "accept", "content": { "answer": "Ada" } }));
        assert_eq!(result["_meta"][RELATED_TASK]["taskId"], task.as_str());
        assert_eq!(mcp.result("tasks/get", json!({ "taskId": task }))["status"], "completed");
        let statuses: Vec<String> = std::iter::from_fn(|| Some(mcp.wait_notification("notifications/tasks/status", TIMEOUT)))
            .map(|n| n["params"]["status"].as_str().unwrap().to_owned())
            .take_while(|s| s != "completed")
            .collect();
        assert_eq!(statuses, ["working"], "back to working, then completed");
    }

    fn a_task_request_is_sent_on_a_waiting_tasks_result(t: Transport) {
        let (_dir, mut mcp) = host(t, &BOTH);
        let created = mcp.result("tools/call", json!({ "name": "ask_model", "arguments": { "message": "Poem?" }, "task": {} }));
        let task = created["task"]["taskId"].as_str().unwrap().to_owned();
        // tasks/result is in flight (over HTTP its SSE stream carries the request too).
        let waiting = mcp.send_request("tasks/result", json!({ "taskId": task }));
        let request = mcp.wait_request("sampling/createMessage", TIMEOUT);
        assert_eq!(request["params"]["_meta"][RELATED_TASK]["taskId"], task.as_str());
        wait_status(&mut mcp, &task, "input_required");
        mcp.respond(&request, json!({ "role": "assistant", "content": [{ "type": "text", "text": "Roses" }], "model": "m" }));
        let result = mcp.wait_response(waiting, TIMEOUT)["result"].clone();
        assert_eq!(answer_of(&result), json!({ "text": "Roses", "model": "m", "stopReason": null }));
    }

    fn a_task_request_the_client_saw_is_not_sent_again_on_tasks_result(t: Transport) {
        let (_dir, mut mcp) = host(t, &BOTH);
        let created = mcp.result("tools/call", json!({ "name": "ask_user", "arguments": { "message": "Once?" }, "task": {} }));
        let task = created["task"]["taskId"].as_str().unwrap().to_owned();
        // Delivered on the session's stream (stdout, the GET stream this client keeps open)...
        let request = mcp.wait_request("elicitation/create", TIMEOUT);
        wait_status(&mut mcp, &task, "input_required");
        // ...so the tasks/result the client sends on seeing `input_required` does not repeat it.
        let waiting = mcp.send_request("tasks/result", json!({ "taskId": task }));
        mcp.assert_no_request("elicitation/create", Duration::from_millis(300));
        mcp.respond(&request, json!({ "action": "cancel" }));
        let result = mcp.wait_response(waiting, TIMEOUT)["result"].clone();
        assert_eq!(answer_of(&result), json!({ "action": "cancel", "content": null }));
    }

    fn cancelling_an_input_required_task_withdraws_the_request(t: Transport) {
        let (_dir, mut mcp) = host(t, &BOTH);
        let created = mcp.result("tools/call", json!({ "name": "ask_user", "arguments": { "message": "Stay?" }, "task": {} }));
        let task = created["task"]["taskId"].as_str().unwrap().to_owned();
        let request = mcp.wait_request("elicitation/create", TIMEOUT);
        wait_status(&mut mcp, &task, "input_required");
        let cancelled = mcp.result("tasks/cancel", json!({ "taskId": task }));
        assert_eq!(cancelled["status"], "cancelled");
        let withdrawn = mcp.wait_notification("notifications/cancelled", TIMEOUT);
        assert_eq!(withdrawn["params"]["requestId"], request["id"]);
        assert_eq!(withdrawn["params"]["_meta"][RELATED_TASK]["taskId"], task.as_str(), "{withdrawn}");
        let result = mcp.result("tasks/result", json!({ "taskId": task }));
        assert_eq!(result["_meta"]["corral/error"]["kind"], "cancelled", "{result}");
    }

    fn a_task_of_a_client_without_elicitation_gets_unsupported_and_never_waits(t: Transport) {
        let (_dir, mut mcp) = host(t, &[]);
        let created = mcp.result("tools/call", json!({ "name": "ask_user", "arguments": { "message": "?" }, "task": {} }));
        let task = created["task"]["taskId"].as_str().unwrap().to_owned();
        let result = mcp.result("tasks/result", json!({ "taskId": task }));
        assert_eq!(answer_of(&result)["error"], "unsupported");
        mcp.assert_no_request("elicitation/create", Duration::from_millis(100));
    }
}

// ---------------------------------------------------------------------------------------------
// namespacing and hot reload (the CLI and --watch)

fn tools_json(dir: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_corral")).args(["tools", "--json", "--plugins", dir.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn resource_uris_and_prompt_names_belong_to_one_plugin() {
    let dir = plugin_dir(true);
    // A second copy whose tools have other names still claims the same resources...
    std::fs::copy(guests().join("conformance.wasm"), dir.path().join("g-copy.wasm")).unwrap();
    std::fs::write(dir.path().join("g-copy.toml"), "[permissions.env]\nset = { FIXTURE_TOOL_PREFIX = \"g_\" }\n").unwrap();
    // ...and one without resources, the same prompts.
    std::fs::copy(guests().join("conformance.wasm"), dir.path().join("h-copy.wasm")).unwrap();
    std::fs::write(dir.path().join("h-copy.toml"), "[permissions.env]\nset = { FIXTURE_TOOL_PREFIX = \"h_\", FIXTURE_NO_RESOURCES = \"1\" }\n").unwrap();
    let report = tools_json(dir.path());
    let refused = report["refused"].as_array().unwrap();
    let kind_of = |plugin: &str| {
        refused.iter().find(|r| r["plugin"] == plugin).map(|r| (r["kind"].as_str().unwrap().to_owned(), r["message"].as_str().unwrap().to_owned()))
    };
    let (kind, message) = kind_of("g-copy").expect("g-copy refused");
    assert_eq!(kind, "duplicate-resource", "{message}");
    assert!(message.contains("plugin `fixture`"), "names the owner: {message}");
    let (kind, message) = kind_of("h-copy").expect("h-copy refused");
    assert_eq!(kind, "duplicate-prompt", "{message}");
    let plugins = report["plugins"].as_array().unwrap();
    let fixture = plugins.iter().find(|p| p["name"] == "fixture").unwrap();
    assert_eq!(fixture["contract"], "0.2.0");
    assert_eq!(fixture["resources"].as_array().unwrap().len(), 3, "{fixture}");
    assert_eq!(fixture["resourceTemplates"].as_array().unwrap().len(), 2, "{fixture}");
    assert_eq!(fixture["prompts"].as_array().unwrap().len(), 4, "{fixture}");
    assert_eq!(plugins.iter().find(|p| p["name"] == "probe").unwrap()["contract"], "0.1.0");
}

mod reload {
    use super::*;

    fn changes(mcp: &mut McpProcess) -> Vec<String> {
        let mut kinds: Vec<String> =
            mcp.notifications().iter().filter_map(|n| n["method"].as_str()).filter(|m| m.ends_with("/list_changed")).map(str::to_owned).collect();
        kinds.sort();
        kinds
    }

    fn wait_changes(mcp: &mut McpProcess, expected: &[&str]) {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let got = changes(mcp);
            if got.len() >= expected.len() {
                assert_eq!(got, expected);
                return;
            }
            assert!(Instant::now() < deadline, "expected {expected:?}, got {got:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Takes the list changes announced so far, once each wait of `wait_changes` has seen
    /// exactly the expected ones (a later reload's come after them).
    fn drain(mcp: &mut McpProcess) {
        for method in ["notifications/tools/list_changed", "notifications/resources/list_changed", "notifications/prompts/list_changed"] {
            while mcp.notifications().iter().any(|n| n["method"] == method) {
                mcp.wait_notification(method, TIMEOUT);
            }
        }
    }

    fn run(t: Transport) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(guests().join("probe.wasm"), dir.path().join("probe.wasm")).unwrap();
        let mut mcp = spawn(t, dir.path(), &["--watch"]);
        let init = mcp.initialize();
        assert_eq!(init["capabilities"]["resources"]["listChanged"], true);
        assert_eq!(init["capabilities"]["prompts"]["listChanged"], true);

        // A 0.2.0 plugin arrives: tools, resources and prompts all changed.
        std::fs::copy(guests().join("conformance.wasm"), dir.path().join("fixture.wasm")).unwrap();
        wait_changes(&mut mcp, &["notifications/prompts/list_changed", "notifications/resources/list_changed", "notifications/tools/list_changed"]);
        assert_eq!(mcp.result("prompts/list", json!({}))["prompts"].as_array().unwrap().len(), 4);
        assert_eq!(mcp.result("resources/read", json!({ "uri": "test://static-text" }))["contents"][0]["mimeType"], "text/plain");
        drain(&mut mcp);

        // The 0.1.0 plugin changes: only tools.
        std::fs::write(dir.path().join("probe.toml"), "[limits]\ntimeout = \"20s\"\n").unwrap();
        wait_changes(&mut mcp, &["notifications/tools/list_changed"]);
        // A barrier: the same change again, reloaded and announced after all of the first's.
        std::fs::write(dir.path().join("probe.toml"), "[limits]\ntimeout = \"21s\"\n").unwrap();
        wait_changes(&mut mcp, &["notifications/tools/list_changed", "notifications/tools/list_changed"]);
        drain(&mut mcp);

        // The 0.2.0 plugin goes: everything it served goes with it.
        std::fs::remove_file(dir.path().join("fixture.wasm")).unwrap();
        wait_changes(&mut mcp, &["notifications/prompts/list_changed", "notifications/resources/list_changed", "notifications/tools/list_changed"]);
        assert_eq!(mcp.result("prompts/list", json!({}))["prompts"], json!([]));
        let (code, _) = error_of(&mcp.request("resources/read", json!({ "uri": "test://static-text" })));
        assert_eq!(code, -32002);
    }

    #[test]
    fn stdio() {
        run(Transport::Stdio)
    }

    #[test]
    fn http() {
        run(Transport::Http)
    }
}
