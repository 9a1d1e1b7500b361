//! One 2026-07-28 request over Streamable HTTP, as a client of several replicas sends it: a POST
//! with a bearer token and the headers that repeat its body (`Mcp-Method`, `Mcp-Name`).

use serde_json::{json, Value};

use super::client::TIMEOUT;

/// The protocol version of these requests.
pub const MODERN_VERSION: &str = "2026-07-28";

/// An agent that hands back every status as a response, within [`TIMEOUT`].
pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(TIMEOUT)).build().new_agent()
}

/// POSTs request `id` (`method` with `params`, whose `_meta` the caller sets) to `url` as the
/// holder of `token`. The answer, from a JSON body or the last event of a stream, or what failed.
pub fn try_post_modern(agent: &ureq::Agent, url: &str, token: &str, id: u64, method: &str, params: Value) -> Result<Value, String> {
    let name = params.get("name").or_else(|| params.get("taskId")).and_then(Value::as_str).map(str::to_owned);
    let mut request = ureq::http::Request::builder()
        .method("POST")
        .uri(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("authorization", format!("Bearer {token}"))
        .header("mcp-protocol-version", MODERN_VERSION)
        .header("mcp-method", method);
    if let Some(name) = &name {
        request = request.header("mcp-name", name.as_str());
    }
    let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string();
    let response = agent.run(request.body(body).unwrap()).map_err(|e| format!("{method}: {e}"))?;
    let status = response.status().as_u16();
    let sse = response.headers().get("content-type").is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
    let text = response.into_body().read_to_string().map_err(|e| format!("{method}: reading the body: {e}"))?;
    let text = if sse { text.lines().filter_map(|l| l.strip_prefix("data:")).next_back().unwrap_or("").trim().to_owned() } else { text };
    serde_json::from_str(&text).map_err(|e| format!("{method}: HTTP {status}, not JSON ({e}): {text}"))
}

/// [`try_post_modern`] to `{base}/mcp` with an agent of its own; panics on any failure.
pub fn post_modern(base: &str, token: &str, id: u64, method: &str, params: Value) -> Value {
    try_post_modern(&agent(), &format!("{base}/mcp"), token, id, method, params).unwrap_or_else(|e| panic!("{e}"))
}
