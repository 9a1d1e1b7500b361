//! Results too large to send inline, answered by reference: `corral://results/{id}/{n}`.
//!
//! A tool result whose size (its strings and bytes, counted as `--max-output` counts them) is
//! over the plugin's inline limit (`--inline-result-limit`, `[limits] inline-result`) is not put
//! into the client's (and so the model's) context whole. Each large content block is kept in the
//! task store and replaced by the first part of its text, its size and a `resource_link` to
//! `corral://results/{id}/{n}`; the structured output stays inline unless it is itself over the
//! limit (a client that asked for a tool's `outputSchema` needs `structuredContent`). `id` is the
//! task's id (kept with the task, deleted with it) or, for a plain call, a fresh id (kept for
//! `--task-ttl`), and `n` is the block's index in the original result (the structured output is
//! `n` = the number of blocks). Only the owner that made the call reads it back, with
//! `resources/read`, one page of at most [`RESULT_PAGE_BYTES`] at a time: the request's
//! `_meta["corral/cursor"]` names the page, the answer's `_meta["corral/nextCursor"]` the next.

use serde_json::{json, Value};

use super::results::error_result;
use crate::mcp::types::{CallToolResult, ContentBlock};
use crate::tasks::{PartKind, ResultPart, RESULT_PAGE_BYTES};

/// Where kept results live.
pub const RESULTS_SCHEME: &str = "corral://results/";
/// How much of a kept text the inline answer shows (characters).
const SUMMARY_CHARS: usize = 1024;
/// Pieces of a result at most this large (bytes) stay inline even when the whole is too large.
const SMALL_PIECE: usize = 4 * 1024;

/// Whether `uri` names a kept result (rather than a plugin's resource).
pub fn is_result_uri(uri: &str) -> bool {
    uri.starts_with(RESULTS_SCHEME)
}

/// The size of a result as `--max-output` counts it: its strings and its bytes.
pub fn payload_size(result: &CallToolResult) -> u64 {
    let blocks: usize = result.content.iter().map(|b| piece(b).map_or(0, |(_, _, data)| decoded_len(data, b))).sum();
    let structured = result.structured_content.as_ref().map_or(0, json_len);
    (blocks + structured) as u64
}

/// Bytes of `value` written as JSON, counted as they are written rather than kept: every call's
/// result is measured, and few are large.
fn json_len(value: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    serde_json::to_writer(&mut count, value).expect("a JSON value always serialises");
    count.0
}

/// The payload of a block that can be kept: its kind, media type and stored text.
fn piece(block: &ContentBlock) -> Option<(PartKind, Option<&str>, &str)> {
    match block {
        ContentBlock::Text { text } => Some((PartKind::Text, Some("text/plain"), text)),
        ContentBlock::Image { data, mime_type } | ContentBlock::Audio { data, mime_type } => Some((PartKind::Blob, Some(mime_type), data)),
        ContentBlock::Resource { resource } => match (&resource.text, &resource.blob) {
            (Some(text), _) => Some((PartKind::Text, resource.mime_type.as_deref(), text)),
            (None, Some(blob)) => Some((PartKind::Blob, resource.mime_type.as_deref(), blob)),
            (None, None) => None,
        },
        ContentBlock::ResourceLink { .. } => None,
    }
}

/// Bytes of a piece as the guest returned them (base64 counts as the bytes it encodes).
fn decoded_len(data: &str, block: &ContentBlock) -> usize {
    let binary = matches!(block, ContentBlock::Image { .. } | ContentBlock::Audio { .. })
        || matches!(block, ContentBlock::Resource { resource } if resource.text.is_none());
    if binary {
        data.len() / 4 * 3
    } else {
        data.len()
    }
}

/// `result` with its large pieces replaced by references to `corral://results/{id}/{n}`, and
/// the pieces to keep; `None` when the result fits within `limit` bytes and goes inline as it is.
pub fn by_reference(result: &CallToolResult, id: &str, limit: u64) -> Option<(CallToolResult, Vec<ResultPart>)> {
    let size = payload_size(result);
    if size <= limit {
        return None;
    }
    let mut content = Vec::new();
    let mut parts = Vec::new();
    let mut listed = Vec::new();
    let mut keep = |n: usize, kind: PartKind, mime_type: Option<String>, data: String, content: &mut Vec<ContentBlock>, label: &str| {
        let uri = format!("{RESULTS_SCHEME}{id}/{n}");
        let pages = crate::tasks::result_pages(kind, &data, RESULT_PAGE_BYTES).len();
        content.push(ContentBlock::Text { text: summary(kind, &data, &uri, label) });
        content.push(ContentBlock::ResourceLink {
            uri: uri.clone(),
            name: format!("result-{n}"),
            description: Some(format!("{label} of {} bytes, readable with resources/read in {pages} page(s)", data.len())),
            mime_type: mime_type.clone(),
        });
        listed.push(json!({ "uri": uri, "size": data.len(), "pages": pages }));
        parts.push(ResultPart { part: n as u32, kind, mime_type, data });
    };
    for (n, block) in result.content.iter().enumerate() {
        match piece(block) {
            Some((kind, mime_type, data)) if data.len() > SMALL_PIECE => {
                let label = match block {
                    ContentBlock::Resource { resource } => format!("resource {}", resource.uri),
                    ContentBlock::Text { .. } => "text".to_owned(),
                    _ => "binary content (base64)".to_owned(),
                };
                keep(n, kind, mime_type.map(str::to_owned), data.to_owned(), &mut content, &label);
            }
            _ => content.push(block.clone()),
        }
    }
    // The structured output stays inline while it fits within the limit on its own: a tool with
    // an output schema MUST return conforming `structuredContent`, and a client validates it.
    // Only past the limit does it go by reference too.
    let mut structured = result.structured_content.clone();
    if let Some(value) = structured.take_if(|v| json_len(v) as u64 > limit) {
        let n = result.content.len();
        keep(n, PartKind::Text, Some("application/json".into()), value.to_string(), &mut content, "structured output (JSON)");
    }
    let mut meta = result.meta.clone();
    meta.insert("corral/byReference".into(), json!({ "size": size, "limit": limit, "parts": listed }));
    Some((CallToolResult { content, structured_content: structured, is_error: result.is_error, meta }, parts))
}

/// The inline stand-in of a kept piece: the first part of a text, and where the rest is.
fn summary(kind: PartKind, data: &str, uri: &str, label: &str) -> String {
    let note = format!(
        "[corral: the whole {label} is {} bytes, too large to send inline; it is kept as {uri} — read it with resources/read, page by page]",
        data.len()
    );
    match kind {
        PartKind::Text => {
            let head: String = data.chars().take(SUMMARY_CHARS).collect();
            format!("{head}…\n\n{note}")
        }
        PartKind::Blob => note,
    }
}

/// The failure kind of a large result the store would not keep.
pub const NOT_KEPT: &str = "result-not-kept";

/// The error result for a large result the store would not keep.
pub fn not_kept(tool: &str, size: u64, limit: u64, why: &str) -> CallToolResult {
    error_result(
        format!(
            "tool `{tool}` returned {size} bytes, over the inline result limit of {limit} bytes, and the result could not be kept to read by reference: {why}"
        ),
        NOT_KEPT,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD as BASE64;
    use base64::Engine as _;
    use serde_json::Map;

    /// Base64 pages decode on their own, so a client may decode each as it comes.
    fn decodes(page: &str) -> bool {
        BASE64.decode(page).is_ok()
    }

    #[test]
    fn a_result_is_measured_as_its_text_and_its_json() {
        let structured = json!({ "name": "é\u{1F600}", "quote": "\"\\\n", "n": [1.5, -2, null, true] });
        assert_eq!(json_len(&structured), structured.to_string().len());
        let mut result = text_result(10);
        result.structured_content = Some(structured.clone());
        result.content.push(ContentBlock::Image { data: "AAAA".repeat(3), mime_type: "image/png".into() });
        assert_eq!(payload_size(&result), (10 + 9 + structured.to_string().len()) as u64);
    }

    fn text_result(len: usize) -> CallToolResult {
        CallToolResult { content: vec![ContentBlock::Text { text: "x".repeat(len) }], structured_content: None, is_error: false, meta: Map::new() }
    }

    #[test]
    fn a_result_within_the_limit_goes_inline() {
        assert!(by_reference(&text_result(1000), "t", 1000).is_none());
    }

    #[test]
    fn a_large_text_becomes_its_beginning_its_size_and_a_link() {
        let mut result = text_result(300_000);
        result.content.push(ContentBlock::Text { text: "small".into() });
        let (inline, parts) = by_reference(&result, "abc", 256 * 1024).expect("over the limit");
        let v = serde_json::to_value(&inline).unwrap();
        let summary = v["content"][0]["text"].as_str().unwrap();
        assert!(summary.starts_with(&"x".repeat(SUMMARY_CHARS)) && summary.contains("300000 bytes") && summary.contains("corral://results/abc/0"), "{summary}");
        assert_eq!(v["content"][1]["type"], "resource_link");
        assert_eq!(v["content"][1]["uri"], "corral://results/abc/0");
        assert_eq!(v["content"][2]["text"], "small", "small pieces stay inline");
        assert_eq!(v["_meta"]["corral/byReference"]["size"], 300_005);
        assert_eq!((parts.len(), parts[0].part, parts[0].data.len()), (1, 0, 300_000));
    }

    #[test]
    fn binary_and_structured_pieces_are_kept_too() {
        let data = BASE64.encode(vec![7u8; 9000]);
        let result = CallToolResult {
            content: vec![ContentBlock::Image { data: data.clone(), mime_type: "image/png".into() }],
            structured_content: Some(json!({ "rows": "y".repeat(9000) })),
            is_error: false,
            meta: Map::new(),
        };
        let (inline, parts) = by_reference(&result, "i", 1000).unwrap();
        assert_eq!(inline.structured_content, None);
        assert_eq!(parts.iter().map(|p| (p.part, p.kind)).collect::<Vec<_>>(), [(0, PartKind::Blob), (1, PartKind::Text)]);
        assert_eq!(parts[0].data, data);
        assert!(crate::tasks::result_pages(PartKind::Blob, &data, 4000).iter().all(|p| decodes(p)));
    }

    #[test]
    fn structured_output_within_the_limit_stays_inline_while_its_text_goes_by_reference() {
        let structured = json!({ "rows": "y".repeat(9000) });
        let result = CallToolResult {
            content: vec![ContentBlock::Text { text: structured.to_string() }],
            structured_content: Some(structured.clone()),
            is_error: false,
            meta: Map::new(),
        };
        let (inline, parts) = by_reference(&result, "s", 10_000).expect("18 KB is over a 10 KB limit");
        assert_eq!(inline.structured_content, Some(structured), "what the output schema promises is still there");
        assert_eq!(parts.iter().map(|p| (p.part, p.kind)).collect::<Vec<_>>(), [(0, PartKind::Text)], "only the text block is kept");
        let v = serde_json::to_value(&inline).unwrap();
        assert_eq!(v["content"][1]["uri"], "corral://results/s/0");
        assert_eq!(v["_meta"]["corral/byReference"]["parts"].as_array().unwrap().len(), 1);
    }
}
