//! The example plugins in C (`checksum`), JavaScript (`slug`) and Python (`stats`), built from
//! source by scripts/build-plugins.sh with their real toolchains, served over MCP and called.

mod common;

use std::time::Duration;

use common::*;
use serde_json::{json, Value};

/// Loading the 18 MB Python component compiles it: seconds in a debug build of the host.
const LOAD_TIMEOUT: Duration = Duration::from_secs(300);

/// `corral serve` on a temp dir holding the example plugin `name`, initialized.
fn serve(name: &str) -> (tempfile::TempDir, McpProcess) {
    let dir = example_plugins(&[name]);
    // A list waits for the load (`--load-wait`), which compiling this component may outlast on a
    // loaded machine: both are given the generous bound.
    let mut mcp = McpProcess::spawn(&["serve", "--plugins", dir.path().to_str().unwrap(), "--log-level", "warn", "--load-wait", "300s"]);
    let id =
        mcp.send_request("initialize", json!({"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "languages", "version": "0"}}));
    let response = mcp.wait_response(id, LOAD_TIMEOUT);
    assert!(response.get("result").is_some(), "initialize: {response}");
    mcp.notify("notifications/initialized", json!({}));
    (dir, mcp)
}

/// The one tool the plugin lists, checked for its name and task policy.
fn only_tool(mcp: &mut McpProcess, name: &str) -> Value {
    let id = mcp.send_request("tools/list", json!({}));
    let tools = mcp.wait_response(id, LOAD_TIMEOUT)["result"]["tools"].clone();
    assert_eq!(tools.as_array().map(Vec::len), Some(1), "{tools:#}");
    let tool = tools[0].clone();
    assert_eq!(tool["name"], name, "{tool:#}");
    assert_eq!(tool["execution"]["taskSupport"], "forbidden", "{tool:#}");
    assert_eq!(tool["annotations"]["readOnlyHint"], true, "{tool:#}");
    tool
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

fn is_error(result: &Value) -> bool {
    result["isError"] == true
}

#[test]
fn c_checksum_computes_crc32_of_utf8_text() {
    let (_dir, mut mcp) = serve("checksum");
    let tool = only_tool(&mut mcp, "crc32");
    assert_eq!(tool["outputSchema"]["required"], json!(["crc32", "bytes"]));

    let result = mcp.call_tool("crc32", json!({"text": "123456789"}));
    assert!(!is_error(&result), "{result:#}");
    assert_eq!(result["structuredContent"], json!({"crc32": "cbf43926", "bytes": 9}), "the standard check value");
    // JSON escapes, a surrogate pair and a quote, unescaped to UTF-8 by the plugin's parser.
    let result = mcp.call_tool("crc32", json!({"text": "h\u{e9}\u{1F600} \"q\""}));
    assert_eq!(result["structuredContent"]["bytes"], 11, "{result:#}");
    assert_eq!(result["structuredContent"]["crc32"], format!("{:08x}", crc32("h\u{e9}\u{1F600} \"q\"".as_bytes())));

    let result = mcp.call_tool("crc32", json!({"text": 5}));
    assert!(is_error(&result) && result["_meta"]["corral/error"]["kind"] == "invalid-arguments", "{result:#}");
}

#[test]
fn js_slug_makes_url_slugs_and_reports_what_it_cannot() {
    let (_dir, mut mcp) = serve("slug");
    let tool = only_tool(&mut mcp, "slugify");
    assert_eq!(tool["inputSchema"]["properties"]["separator"]["enum"], json!(["-", "_", "."]));

    let result = mcp.call_tool("slugify", json!({"text": "Crème brûlée, for 2!"}));
    assert!(!is_error(&result), "{result:#}");
    assert_eq!(text(&result), "creme-brulee-for-2");
    assert_eq!(result["structuredContent"], json!({"slug": "creme-brulee-for-2", "words": 4}));
    let result = mcp.call_tool("slugify", json!({"text": "Hello World", "separator": "_"}));
    assert_eq!(text(&result), "hello_world");

    let result = mcp.call_tool("slugify", json!({"text": "¡¿!?"}));
    assert!(is_error(&result), "{result:#}");
    assert_eq!(text(&result), "`text` has no letters or digits to make a slug from");
    let result = mcp.call_tool("slugify", json!({"text": "x", "separator": "/"}));
    assert_eq!(result["_meta"]["corral/error"]["kind"], "invalid-arguments", "{result:#}");
}

#[test]
fn python_stats_describes_numbers() {
    let (_dir, mut mcp) = serve("stats");
    let tool = only_tool(&mut mcp, "describe_numbers");
    assert_eq!(tool["inputSchema"]["properties"]["numbers"]["minItems"], 1);

    let result = mcp.call_tool("describe_numbers", json!({"numbers": [2, 4, 4, 4, 5, 5, 7, 9]}));
    assert!(!is_error(&result), "{result:#}");
    let s = &result["structuredContent"];
    assert_eq!(
        (s["count"].as_f64(), s["mean"].as_f64(), s["median"].as_f64(), s["min"].as_f64(), s["max"].as_f64()),
        (Some(8.0), Some(5.0), Some(4.5), Some(2.0), Some(9.0)),
        "{result:#}"
    );
    assert!((s["stdev"].as_f64().unwrap() - 2.138_089_935).abs() < 1e-6, "{result:#}");
    let mirrored: Value = serde_json::from_str(text(&result)).unwrap();
    assert_eq!(&mirrored, s, "the text block holds the same JSON");

    let result = mcp.call_tool("describe_numbers", json!({"numbers": [3.5]}));
    assert_eq!(result["structuredContent"]["stdev"], 0.0, "{result:#}");
    let result = mcp.call_tool("describe_numbers", json!({"numbers": []}));
    assert_eq!(result["_meta"]["corral/error"]["kind"], "invalid-arguments", "{result:#}");
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for &b in data {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}
