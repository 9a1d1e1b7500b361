//! A policy's resource rules hold however a client spells a URI and whichever template serves
//! it, on the real binary serving the SDK's notes guest (`tests/guests/notes`: `notes://index`
//! and the template `notes://{id}`), over stdio and HTTP in the 2025-11-25 era and over stdio
//! in the 2026-07-28 era: a URI is made canonical (RFC 3986 §6.2.2) before the policy decides
//! and the plugin is handed that same URI; a rule on a template covers every URI it expands to.

#[macro_use]
mod common;

use common::{McpProcess, Transport};
use serde_json::{json, Value};
use tempfile::TempDir;

/// `FORBIDDEN` of `mcp::jsonrpc`.
const DENIED: i64 = -32003;

/// The notes guest and a policy that allows everything but what `denied` names.
fn files(denied: &str) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(common::test_guests().join("notes.wasm"), dir.path().join("notes.wasm")).unwrap();
    let policy =
        format!("[[allow]]\nwho = {{ anyone = true }}\nplugins = \"*\"\n\n[[deny]]\nname = \"private\"\nwho = {{ anyone = true }}\nresources = {denied}\n");
    std::fs::write(dir.path().join("policy.toml"), policy).unwrap();
    dir
}

fn host(t: Transport, dir: &TempDir) -> McpProcess {
    let (plugins, policy) = (dir.path().to_str().unwrap(), dir.path().join("policy.toml"));
    McpProcess::spawn_with(t, &["serve", "--plugins", plugins, "--policy", policy.to_str().unwrap()])
}

fn modern(uri: &str) -> Value {
    json!({ "uri": uri, "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} } })
}

/// The refusal `answer` is, naming the canonical URI.
fn assert_denied(answer: &Value, uri: &str) {
    assert_eq!(answer["error"]["code"], json!(DENIED), "{answer}");
    assert_eq!(answer["error"]["data"], json!({ "kind": "denied", "rule": "deny", "name": "private", "resource": uri }), "{answer}");
}

scenarios! {
    fn a_denied_uri_spelled_another_way_is_still_denied(t: Transport) {
        let dir = files(r#"["notes://alpha"]"#);
        let mut mcp = host(t, &dir);
        mcp.initialize();
        for spelling in ["notes://alpha", "notes://%61lpha", "notes://%61%6C%70%68%61", "NOTES://alpha", "notes://ALPHA"] {
            assert_denied(&mcp.request("resources/read", json!({ "uri": spelling })), "notes://alpha");
            assert_denied(&mcp.request("resources/subscribe", json!({ "uri": spelling })), "notes://alpha");
        }
        // The plugin is handed the canonical URI, the one the policy allowed.
        let note = mcp.result("resources/read", json!({ "uri": "notes://%62eta" }));
        assert_eq!(note["contents"], json!([{ "uri": "notes://beta", "mimeType": "text/plain", "text": "The second note." }]), "{note}");
        let (code, message) = common::error_of(&mcp.request("resources/read", json!({ "uri": "notes://%zz" })));
        assert_eq!((code, message.contains("`uri`") && message.contains("not an absolute URI")), (-32602, true), "{message}");
    }

    fn a_rule_on_a_template_covers_the_uris_it_expands_to(t: Transport) {
        let dir = files(r#"["notes://{id}"]"#);
        let mut mcp = host(t, &dir);
        mcp.initialize();
        assert_eq!(mcp.result("resources/templates/list", json!({}))["resourceTemplates"], json!([]));
        for uri in ["notes://beta", "notes://alpha", "notes://index"] {
            assert_denied(&mcp.request("resources/read", json!({ "uri": uri })), uri);
            assert_denied(&mcp.request("resources/subscribe", json!({ "uri": uri })), uri);
        }
        assert_denied(&mcp.request("resources/read", json!({ "uri": "notes://%62eta" })), "notes://beta");
    }
}

#[test]
fn both_hold_for_a_2026_07_28_client() {
    let dir = files(r#"["notes://alpha"]"#);
    let mut mcp = host(Transport::Stdio, &dir);
    assert_denied(&mcp.request("resources/read", modern("notes://%61lpha")), "notes://alpha");
    assert_eq!(mcp.result("resources/read", modern("notes://%62eta"))["contents"][0]["uri"], "notes://beta");

    let dir = files(r#"["notes://{id}"]"#);
    let mut mcp = host(Transport::Stdio, &dir);
    assert_denied(&mcp.request("resources/read", modern("notes://beta")), "notes://beta");
}
