//! The 2026-07-28 era of MCP: stateless requests, each carrying its protocol version and the
//! client's capabilities in `params._meta` (the envelope), and the shapes its results take.
//!
//! corral serves this era beside 2025-11-25. Which era a message belongs to is decided once per
//! message, by [`Era::of`]: the transports call it (HTTP per POST, stdio per line) and hand the
//! message to the path of its era. Nothing here does I/O.

pub mod envelope;
pub mod headers;
pub mod method;
mod names;
pub mod wire;

pub use envelope::{ClientCapabilities, Envelope};
pub use method::ModernMethod;
pub use names::{
    missing_capability, supported_versions, CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, HEADER_MISMATCH, LOG_LEVEL_KEY, MISSING_CAPABILITY,
    MODERN_PROTOCOL_VERSION, PROTOCOL_VERSION_KEY, SERVER_INFO_KEY, TASKS_EXTENSION, UNSUPPORTED_VERSION,
};

use serde_json::{Map, Value};

use super::types::SUPPORTED_PROTOCOL_VERSIONS;
use super::RpcError;

/// The protocol era of one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Era {
    /// 2025-11-25 and earlier: `initialize`, then a session.
    Legacy,
    /// 2026-07-28: stateless, every request enveloped.
    Modern,
}

impl Era {
    /// The era of a request, read from its body: a `_meta` protocol-version claim makes it
    /// modern. `header` is the HTTP `MCP-Protocol-Version` (stdio has none): a request without a
    /// claim is still modern when the header names a version that is not a legacy one, so that a
    /// modern request whose envelope is broken gets the modern error for it rather than a legacy
    /// answer. Without either, even `server/discover` is legacy (and "not found" there): a bare
    /// probe is not a 2026-07-28 request.
    pub fn of(params: &Map<String, Value>, header: Option<&str>) -> Era {
        let claims = params.get("_meta").and_then(|m| m.get(PROTOCOL_VERSION_KEY)).is_some();
        let modern_header = header.is_some_and(|v| !SUPPORTED_PROTOCOL_VERSIONS.contains(&v.trim()));
        if claims || modern_header {
            Era::Modern
        } else {
            Era::Legacy
        }
    }
}

/// Reads a modern request's envelope and method: -32602 or -32022 for the envelope (see
/// [`Envelope::read`]), then -32601 for a method this era does not have (`initialize`, `ping`,
/// ...). Both transports take their request through here, after HTTP's header checks.
pub fn admit(method: &str, params: &Map<String, Value>) -> Result<(ModernMethod, Envelope), RpcError> {
    let envelope = Envelope::read(params)?;
    let method = method.parse::<ModernMethod>().map_err(|unknown| RpcError::method_not_found(format!("{unknown} in the {MODERN_PROTOCOL_VERSION} era")))?;
    Ok((method, envelope))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn the_body_decides_the_era_and_a_modern_header_without_a_claim_is_modern() {
        let enveloped = params(json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}}));
        assert_eq!(Era::of(&enveloped, None), Era::Modern);
        assert_eq!(Era::of(&params(json!({"protocolVersion": "2025-11-25"})), None), Era::Legacy);
        assert_eq!(Era::of(&Map::new(), None), Era::Legacy, "a bare server/discover is not a modern request");
        assert_eq!(Era::of(&Map::new(), Some("2025-11-25")), Era::Legacy);
        assert_eq!(Era::of(&Map::new(), Some("2026-07-28")), Era::Modern);
    }

    #[test]
    fn a_missing_capability_names_it_as_a_capabilities_object() {
        assert_eq!(missing_capability("sampling").data.unwrap(), json!({"requiredCapabilities": {"sampling": {}}}));
        assert_eq!(missing_capability(TASKS_EXTENSION).data.unwrap(), json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}));
        assert_eq!(missing_capability("sampling").code, MISSING_CAPABILITY);
    }
}
