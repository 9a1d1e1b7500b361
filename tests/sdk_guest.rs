//! What the Rust SDK makes of contract 0.3.0, served for real: `tests/guests/notes` is written
//! with the SDK (world `full`, its `full` feature) and this host serves its resource, template,
//! prompt and completions, and carries its typed form and sampling request to a client and the
//! answers back, over both transports.

#[macro_use]
mod common;

use std::path::Path;

use common::{error_of, McpProcess, Transport, TIMEOUT};
use serde_json::{json, Value};
use tempfile::TempDir;

/// A host serving the SDK guest to a client that declared `capabilities`.
fn host(t: Transport, capabilities: &[&str]) -> (TempDir, McpProcess) {
    let dir = tempfile::tempdir().unwrap();
    let guests: &Path = common::test_guests();
    std::fs::copy(guests.join("notes.wasm"), dir.path().join("notes.wasm")).unwrap();
    let mut mcp = McpProcess::spawn_with(t, &["serve", "--plugins", dir.path().to_str().unwrap()]);
    mcp.initialize_declaring(capabilities);
    (dir, mcp)
}

scenarios! {
    fn the_sdks_resource_template_prompt_and_completions_are_served(t: Transport) {
        let (_dir, mut mcp) = host(t, &[]);
        let listed = mcp.result("resources/list", json!({}));
        assert_eq!(listed["resources"], json!([{ "uri": "notes://index", "name": "index", "mimeType": "text/plain" }]), "{listed}");
        let templates = mcp.result("resources/templates/list", json!({}));
        assert_eq!(templates["resourceTemplates"], json!([{ "uriTemplate": "notes://{id}", "name": "note", "title": "A note", "mimeType": "text/plain" }]), "{templates}");

        let index = mcp.result("resources/read", json!({ "uri": "notes://index" }));
        assert_eq!(index["contents"], json!([{ "uri": "notes://index", "mimeType": "text/plain", "text": "alpha\nalpine\nbeta" }]));
        let note = mcp.result("resources/read", json!({ "uri": "notes://beta" }));
        assert_eq!(note["contents"], json!([{ "uri": "notes://beta", "mimeType": "text/plain", "text": "The second note." }]));
        let (code, _) = error_of(&mcp.request("resources/read", json!({ "uri": "notes://gamma" })));
        assert_eq!(code, -32002, "the SDK's ReadError::NotFound is resource not found");

        let prompts = mcp.result("prompts/list", json!({}));
        assert_eq!(prompts["prompts"][0]["name"], "summarize");
        assert_eq!(prompts["prompts"][0]["title"], "Summarize a note");
        assert_eq!(
            prompts["prompts"][0]["arguments"],
            json!([{ "name": "id", "description": "The note to summarise.", "required": true }, { "name": "length", "description": "How many words, at most.", "required": false }]),
            "the arguments come from the struct: {prompts}"
        );
        let got = mcp.result("prompts/get", json!({ "name": "summarize", "arguments": { "id": "alpha", "length": "five" } }));
        assert_eq!(got["messages"], json!([
            { "role": "user", "content": { "type": "text", "text": "Summarise in five words: The first note." } },
            { "role": "assistant", "content": { "type": "text", "text": "Here is the summary:" } },
        ]));
        let (code, message) = error_of(&mcp.request("prompts/get", json!({ "name": "summarize", "arguments": { "id": "zeta" } })));
        assert_eq!((code, message.contains("there is no note `zeta`")), (-32602, true), "{message}");

        let prompt = mcp.result("completion/complete", json!({ "ref": { "type": "ref/prompt", "name": "summarize" }, "argument": { "name": "id", "value": "al" } }));
        assert_eq!(prompt["completion"], json!({ "values": ["alpha", "alpine"], "total": 2, "hasMore": false }));
        let template = mcp.result("completion/complete", json!({ "ref": { "type": "ref/resource", "uri": "notes://{id}" }, "argument": { "name": "id", "value": "b" } }));
        assert_eq!(template["completion"]["values"], json!(["beta"]));
    }

    fn a_typed_form_and_a_sampling_request_go_to_the_client_and_come_back(t: Transport) {
        let (_dir, mut mcp) = host(t, &["elicitation", "sampling"]);
        let id = mcp.send_request("tools/call", json!({ "name": "order", "arguments": {} }));
        let form = mcp.wait_request("elicitation/create", TIMEOUT);
        assert_eq!(form["params"]["message"], "What would you like?");
        let schema = &form["params"]["requestedSchema"];
        assert_eq!(schema["required"], json!(["item", "size"]), "{schema}");
        assert_eq!(schema["properties"]["size"], json!({ "description": "How big.", "type": "string", "enum": ["small", "large"] }), "{schema}");
        assert_eq!(schema["properties"]["note"]["type"], "string", "{schema}");
        mcp.respond(&form, json!({ "action": "accept", "content": { "item": "tea", "size": "large" } }));
        let model = mcp.wait_request("sampling/createMessage", TIMEOUT);
        assert_eq!(model["params"]["messages"][0]["content"]["text"], "Thank the user for a large tea");
        assert_eq!((model["params"]["systemPrompt"].as_str(), model["params"]["maxTokens"].as_u64()), (Some("Be brief."), Some(40)));
        mcp.respond(&model, json!({ "role": "assistant", "content": { "type": "text", "text": "Thanks!" }, "model": "m1" }));
        let result = &mcp.wait_response(id, TIMEOUT)["result"];
        assert_eq!(result["content"][0]["text"], "large tea (no note) — Thanks! [m1]", "{result}");

        // An answer that breaks the struct's schema never reaches the tool as a struct.
        let id = mcp.send_request("tools/call", json!({ "name": "order", "arguments": {} }));
        let form = mcp.wait_request("elicitation/create", TIMEOUT);
        mcp.respond(&form, json!({ "action": "accept", "content": { "item": "tea", "size": "huge" } }));
        let result = &mcp.wait_response(id, TIMEOUT)["result"];
        assert_eq!(result["isError"], true, "{result}");
        assert!(result["content"][0]["text"].as_str().unwrap().contains("(refused)"), "{result}");
    }

    fn roots_and_resource_updates_of_an_sdk_tool(t: Transport) {
        let (_dir, mut mcp) = host(t, &["roots"]);
        let id = mcp.send_request("tools/call", json!({ "name": "where", "arguments": {} }));
        let request = mcp.wait_request("roots/list", TIMEOUT);
        mcp.respond(&request, json!({ "roots": [{ "uri": "file:///work" }, { "uri": "file:///tmp" }] }));
        assert_eq!(mcp.wait_response(id, TIMEOUT)["result"]["content"][0]["text"], "file:///work file:///tmp");

        assert_eq!(mcp.result("resources/subscribe", json!({ "uri": "notes://alpha" })), json!({}));
        assert_eq!(mcp.call_tool("touch", json!({ "id": "alpha" }))["content"][0]["text"], "touched alpha");
        let updated = mcp.wait_notification("notifications/resources/updated", TIMEOUT);
        assert_eq!(updated["params"]["uri"], "notes://alpha");
    }
}

/// The same tool for a 2026-07-28 client (MRTR): each question ends the request with an
/// `InputRequiredResult`, the retry runs the SDK's tool again from the start, `elicit::<Order>`
/// and then `sample` return the recorded answers, and the call completes.
#[test]
fn the_typed_form_and_sampling_work_the_2026_07_28_way_too() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(common::test_guests().join("notes.wasm"), dir.path().join("notes.wasm")).unwrap();
    let mut mcp = McpProcess::spawn(&["serve", "--plugins", dir.path().to_str().unwrap()]);
    let mut params = json!({ "name": "order", "arguments": {}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {}, "sampling": {} },
    } });
    let mut answers = serde_json::Map::new();
    for (method, answer) in [
        ("elicitation/create", json!({ "action": "accept", "content": { "item": "tea", "size": "small", "note": "hot" } })),
        ("sampling/createMessage", json!({ "role": "assistant", "content": { "type": "text", "text": "Cheers!" }, "model": "m2" })),
    ] {
        let round = mcp.result("tools/call", params.clone());
        assert_eq!(round["resultType"], "input_required", "{round}");
        let requests = round["inputRequests"].as_object().unwrap();
        let (key, request) = requests.iter().find(|(k, _)| !answers.contains_key(*k)).unwrap_or_else(|| panic!("no new question: {round}"));
        assert_eq!(request["method"], method, "{round}");
        answers.insert(key.clone(), answer);
        params["inputResponses"] = Value::Object(answers.clone());
        params["requestState"] = round["requestState"].clone();
    }
    let done = mcp.result("tools/call", params);
    assert_eq!(done["resultType"], "complete", "{done}");
    assert_eq!(done["content"][0]["text"], "small tea (hot) — Cheers! [m2]", "{done}");
}
