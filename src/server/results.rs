//! Turning what a plugin returned, or why it returned nothing, into an MCP `CallToolResult`.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::mcp::types::{CallToolResult, ContentBlock, ResourceContents};
use crate::mcp::RpcError;
use crate::registry::ToolEntry;
use crate::runtime::{CallResult, Content, Failure, ResourceBody};

pub(super) const ERROR_META_KEY: &str = "corral/error";
/// The failure kind of a call refused for arguments that break the tool's input schema.
pub const INVALID_ARGUMENTS: &str = "invalid-arguments";

/// JSON-RPC code for "resource not found" (MCP 2025-11-25).
pub const RESOURCE_NOT_FOUND: i32 = -32002;

/// The error for a URI no plugin serves (or that the policy hides), with the URI in `data` as
/// MCP asks.
pub fn resource_not_found(uri: &str) -> RpcError {
    RpcError::new(RESOURCE_NOT_FOUND, format!("Resource not found: {uri}")).with_data(json!({ "uri": uri }))
}

/// Maps a guest result, checking its structured output against the tool's output schema.
pub fn tool_result(entry: &ToolEntry, result: CallResult) -> Result<CallToolResult, Failure> {
    let invalid = |reason: String| Failure::InvalidOutput { reason };
    let structured = match &result.structured {
        None => None,
        Some(text) => {
            let value: Value = serde_json::from_str(text).map_err(|e| invalid(format!("structured output is not JSON: {e}")))?;
            if !value.is_object() {
                return Err(invalid("structured output must be a JSON object".into()));
            }
            Some(value)
        }
    };
    // The guest's own JSON text, kept for the text block: it is that JSON already, so it is not
    // serialised again.
    let structured_text = result.structured;
    if let (Some(validator), false) = (&entry.output_validator, result.is_error) {
        let Some(value) = &structured else {
            return Err(invalid("the tool declares an output schema but returned no structured output".into()));
        };
        let problems = crate::registry::violations(validator, value);
        if !problems.is_empty() {
            return Err(invalid(format!("structured output does not match the output schema ({})", violations_summary(&problems))));
        }
    }
    let mut content: Vec<ContentBlock> = result.content.into_iter().map(content_block).collect();
    if let (Some(text), true) = (structured_text, content.is_empty()) {
        // MCP asks for the JSON in a text block too, for clients that only read content.
        content.push(ContentBlock::Text { text });
    }
    Ok(CallToolResult { content, structured_content: structured, is_error: result.is_error, meta: Map::new() })
}

pub fn content_block(content: Content) -> ContentBlock {
    match content {
        Content::Text(text) => ContentBlock::Text { text },
        Content::Image(b) => ContentBlock::Image { data: BASE64.encode(&b.data), mime_type: b.mime_type },
        Content::Audio(b) => ContentBlock::Audio { data: BASE64.encode(&b.data), mime_type: b.mime_type },
        Content::Link(l) => ContentBlock::ResourceLink { uri: l.uri, name: l.name, description: l.description, mime_type: l.mime_type },
        Content::Embedded(r) => {
            let (text, blob) = match r.body {
                ResourceBody::Text(t) => (Some(t), None),
                ResourceBody::Bytes(b) => (None, Some(BASE64.encode(&b))),
            };
            ContentBlock::Resource { resource: ResourceContents { uri: r.uri, mime_type: r.mime_type, text, blob } }
        }
    }
}

/// Names what the sandbox refused during the call: always in `_meta["corral/denied"]`, and in
/// the content too when the call failed, since a refusal is the likely reason.
pub fn note_denials(result: &mut CallToolResult, denied: Vec<String>) {
    if denied.is_empty() {
        return;
    }
    if result.is_error {
        result.content.extend(denied.iter().map(|what| ContentBlock::Text { text: format!("corral: {what}") }));
    }
    result.meta.insert("corral/denied".into(), json!(denied));
}

/// An `isError` result for a call that failed, with the failure's kind in `_meta`.
pub fn failure_result(tool: &str, failure: &Failure) -> CallToolResult {
    let mut detail = Map::new();
    detail.insert("kind".into(), json!(failure.kind()));
    match failure {
        Failure::Timeout { limit } => {
            detail.insert("timeoutMs".into(), json!(limit.as_millis() as u64));
        }
        Failure::FuelExhausted { budget } => {
            detail.insert("fuel".into(), json!(budget));
        }
        Failure::MemoryLimit { limit } => {
            detail.insert("memoryBytes".into(), json!(limit));
        }
        Failure::Trap { message } => {
            detail.insert("trap".into(), json!(message));
        }
        Failure::InvalidOutput { reason } => {
            detail.insert("reason".into(), json!(reason));
        }
        Failure::OutputTooLarge { size, limit } => {
            if let Some(size) = size {
                detail.insert("size".into(), json!(size));
            }
            detail.insert("limit".into(), json!(limit));
        }
        Failure::Cancelled => {}
    }
    with_error_meta(CallToolResult::error_text(failure.describe(tool)), detail)
}

/// A failed run of a plugin export other than a tool call (reading a resource, getting a
/// prompt, completing) as a JSON-RPC error: those methods have no `isError` result.
pub fn failure_error(failure: &Failure, subject: &str) -> RpcError {
    RpcError::internal(failure.describe_as(subject)).with_data(json!({ "kind": failure.kind() }))
}

/// An `isError` result listing how the arguments break the input schema.
pub fn invalid_arguments_result(tool: &str, violations: &[(String, String)]) -> CallToolResult {
    let lines: Vec<String> = violations.iter().map(|(path, message)| format!("- {}: {message}", if path.is_empty() { "(arguments)" } else { path })).collect();
    let text = format!("invalid arguments for tool `{tool}`:\n{}", lines.join("\n"));
    let mut detail = Map::new();
    detail.insert("kind".into(), json!(INVALID_ARGUMENTS));
    detail.insert("violations".into(), violations_json(violations));
    with_error_meta(CallToolResult::error_text(text), detail)
}

/// Schema violations as `[{path, message}]`, the shape clients read from `corral/error`.
pub fn violations_json(violations: &[(String, String)]) -> Value {
    violations.iter().map(|(path, message)| json!({ "path": path, "message": message })).collect()
}

/// Schema violations on one line: `/path: message; ...`.
pub fn violations_summary(violations: &[(String, String)]) -> String {
    let lines: Vec<String> = violations.iter().map(|(p, m)| format!("{}: {m}", if p.is_empty() { "/" } else { p })).collect();
    lines.join("; ")
}

/// An `isError` result with `text` and a bare error kind.
pub fn error_result(text: String, kind: &str) -> CallToolResult {
    let mut detail = Map::new();
    detail.insert("kind".into(), json!(kind));
    with_error_meta(CallToolResult::error_text(text), detail)
}

pub(super) fn with_error_meta(mut result: CallToolResult, detail: Map<String, Value>) -> CallToolResult {
    result.meta.insert(ERROR_META_KEY.into(), Value::Object(detail));
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn failures_carry_their_kind_and_plain_words() {
        let r = serde_json::to_value(failure_result("spin", &Failure::Timeout { limit: Duration::from_secs(30) })).unwrap();
        assert_eq!(r["isError"], true);
        assert_eq!(r["_meta"]["corral/error"], json!({"kind": "timeout", "timeoutMs": 30000}));
        assert_eq!(r["content"][0]["text"], "tool `spin` exceeded its 30s time limit");
    }

    #[test]
    fn invalid_arguments_list_each_violation() {
        let r = serde_json::to_value(invalid_arguments_result("echo", &[("/text".into(), "1 is not of type \"string\"".into())])).unwrap();
        assert_eq!(r["_meta"]["corral/error"]["kind"], "invalid-arguments");
        assert_eq!(r["_meta"]["corral/error"]["violations"][0]["path"], "/text");
        assert!(r["content"][0]["text"].as_str().unwrap().contains("/text"));
    }

    #[test]
    fn content_maps_to_mcp_blocks() {
        let image = content_block(Content::Image(crate::runtime::Blob { data: vec![1, 2, 3], mime_type: "image/png".into() }));
        assert_eq!(serde_json::to_value(image).unwrap(), json!({"type":"image","data":"AQID","mimeType":"image/png"}));
    }
}
