//! The HTTP headers a 2026-07-28 POST repeats from its body (`MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name`), checked against the body so that an intermediary routing by
//! header and the server reading the body agree on what the request is.
//!
//! Pure: the transport copies the header values in; this says whether they fit.

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;
use serde_json::{Map, Value};

use super::names::{HEADER_MISMATCH, PROTOCOL_VERSION_KEY};
use crate::mcp::RpcError;

/// The era's headers of one POST, as sent (`None`: absent).
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestHeaders<'a> {
    /// `MCP-Protocol-Version`.
    pub version: Option<&'a str>,
    /// `Mcp-Method`.
    pub method: Option<&'a str>,
    /// `Mcp-Name`.
    pub name: Option<&'a str>,
}

/// The body field `Mcp-Name` repeats for `method`, if it has one.
fn named_field(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

fn mismatch(message: String) -> RpcError {
    RpcError::new(HEADER_MISMATCH, message)
}

/// A header value with surrounding whitespace dropped and `=?base64?…?=` decoded; `None` when
/// the base64 does not decode to UTF-8.
fn decoded(value: &str) -> Option<String> {
    let value = value.trim();
    match value.strip_prefix("=?base64?").and_then(|rest| rest.strip_suffix("?=")) {
        Some(encoded) => String::from_utf8(BASE64.decode(encoded.trim()).ok()?).ok(),
        None => Some(value.to_owned()),
    }
}

/// Checks the headers against the body: -32020 (header mismatch) when `MCP-Protocol-Version` or
/// `Mcp-Method` is missing, or when a header says something other than the body. A body field
/// that is itself missing is left to the method, whose error names it.
pub fn check(headers: RequestHeaders<'_>, method: &str, params: &Map<String, Value>) -> Result<(), RpcError> {
    let Some(version) = headers.version.map(str::trim) else {
        return Err(mismatch("missing MCP-Protocol-Version header: it must repeat the request's `_meta` protocol version".into()));
    };
    if let Some(Value::String(claimed)) = params.get("_meta").and_then(|m| m.get(PROTOCOL_VERSION_KEY)) {
        if claimed != version {
            return Err(mismatch(format!("Header mismatch: MCP-Protocol-Version header value '{version}' does not match body value '{claimed}'")));
        }
    }
    match headers.method.map(str::trim) {
        None => return Err(mismatch(format!("missing Mcp-Method header: it must repeat the body's method `{method}`"))),
        Some(sent) if sent != method => {
            return Err(mismatch(format!("Header mismatch: Mcp-Method header value '{sent}' does not match body value '{method}'")))
        }
        Some(_) => {}
    }
    let Some(field) = named_field(method) else { return Ok(()) };
    let Some(Value::String(body)) = params.get(field) else { return Ok(()) };
    match headers.name {
        None => Err(mismatch(format!("missing Mcp-Name header: it must repeat the body's `{field}` for {method}"))),
        Some(raw) => match decoded(raw) {
            None => Err(mismatch(format!("Mcp-Name header value '{}' is not valid =?base64?…?= text", raw.trim()))),
            Some(sent) if sent != *body => Err(mismatch(format!("Header mismatch: Mcp-Name header value '{sent}' does not match body value '{body}'"))),
            Some(_) => Ok(()),
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(name: &str) -> Map<String, Value> {
        json!({"name": name, "_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}}).as_object().cloned().unwrap()
    }

    fn headers<'a>(version: Option<&'a str>, method: Option<&'a str>, name: Option<&'a str>) -> RequestHeaders<'a> {
        RequestHeaders { version, method, name }
    }

    #[test]
    fn headers_that_repeat_the_body_pass_with_whitespace_and_base64() {
        assert!(check(headers(Some("2026-07-28"), Some("tools/call"), Some("echo")), "tools/call", &call("echo")).is_ok());
        assert!(check(headers(Some(" 2026-07-28 "), Some(" tools/call"), Some("echo ")), "tools/call", &call("echo")).is_ok());
        let encoded = format!("=?base64?{}?=", BASE64.encode("héllo"));
        assert!(check(headers(Some("2026-07-28"), Some("tools/call"), Some(&encoded)), "tools/call", &call("héllo")).is_ok());
        assert!(check(headers(Some("2026-07-28"), Some("tools/list"), None), "tools/list", &call("x")).is_ok(), "tools/list has no name");
    }

    #[test]
    fn every_disagreement_is_a_header_mismatch() {
        let cases = [
            headers(None, Some("tools/call"), Some("echo")),
            headers(Some("2025-11-25"), Some("tools/call"), Some("echo")),
            headers(Some("2026-07-28"), None, Some("echo")),
            headers(Some("2026-07-28"), Some("tools/list"), Some("echo")),
            headers(Some("2026-07-28"), Some("TOOLS/CALL"), Some("echo")),
            headers(Some("2026-07-28"), Some("tools/call"), None),
            headers(Some("2026-07-28"), Some("tools/call"), Some("Echo")),
            headers(Some("2026-07-28"), Some("tools/call"), Some("=?base64?!!?=")),
        ];
        for h in cases {
            let e = check(h, "tools/call", &call("echo")).expect_err(&format!("{h:?}"));
            assert_eq!(e.code, HEADER_MISMATCH, "{h:?}");
        }
        let e = check(headers(Some("2026-07-28"), Some("tools/call"), Some("foo")), "tools/call", &call("bar")).unwrap_err();
        assert_eq!(e.message, "Header mismatch: Mcp-Name header value 'foo' does not match body value 'bar'");
    }
}
