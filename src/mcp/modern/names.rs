//! The era's names: its protocol version, the `_meta` keys of the envelope, the tasks
//! extension, and its error codes (with the one error built from them alone).

use serde_json::json;

use crate::mcp::types::SUPPORTED_PROTOCOL_VERSIONS;
use crate::mcp::RpcError;

/// The stateless protocol version corral serves.
pub const MODERN_PROTOCOL_VERSION: &str = "2026-07-28";

/// `_meta` key of the protocol version a request speaks.
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the capabilities the client declares for this one request.
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the client's name and version (optional).
pub const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key of the lowest log level the client wants for this request (optional; without it
/// the request gets no log notifications).
pub const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta` key of the server's identity.
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";
/// The tasks extension (SEP-2663), as clients and servers name it under `extensions`.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// A header disagrees with the body (or is missing or malformed).
pub const HEADER_MISMATCH: i32 = -32020;
/// Serving the request needs a capability the request did not declare.
pub const MISSING_CAPABILITY: i32 = -32021;
/// The request speaks a protocol version corral does not serve.
pub const UNSUPPORTED_VERSION: i32 = -32022;

/// Every protocol version corral serves, the stateless one first: `server/discover`'s
/// `supportedVersions` and the `supported` of an unsupported-version error.
pub fn supported_versions() -> Vec<&'static str> {
    std::iter::once(MODERN_PROTOCOL_VERSION).chain(SUPPORTED_PROTOCOL_VERSIONS).collect()
}

/// -32021 for a request that needs `capability` (a `clientCapabilities` key, or the tasks
/// extension) which it did not declare.
pub fn missing_capability(capability: &str) -> RpcError {
    let (what, required) = if capability == TASKS_EXTENSION {
        ("the tasks extension (io.modelcontextprotocol/tasks)".to_owned(), json!({ "extensions": { TASKS_EXTENSION: {} } }))
    } else {
        (format!("the `{capability}` capability"), json!({ capability: {} }))
    };
    RpcError::new(MISSING_CAPABILITY, format!("this request needs {what}: declare it in `_meta[\"{CLIENT_CAPABILITIES_KEY}\"]`"))
        .with_data(json!({ "requiredCapabilities": required }))
}
