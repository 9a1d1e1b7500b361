//! The per-request envelope: `params._meta` of a 2026-07-28 request.
//!
//! Read once per request, before the method runs. A modern server keeps nothing between
//! requests, so everything the server may rely on about the client (its version, its
//! capabilities, the log level it wants) is here, and capabilities are never inferred from an
//! earlier request.

use serde_json::{json, Map, Value};

use super::names::{
    supported_versions, CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, MODERN_PROTOCOL_VERSION, PROTOCOL_VERSION_KEY, TASKS_EXTENSION,
    UNSUPPORTED_VERSION,
};
use crate::mcp::types::LogLevel;
use crate::mcp::RpcError;

/// What one request declares it can do for the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientCapabilities {
    /// `elicitation` with form mode (`{}` or `{"form": {}}`).
    pub elicitation: bool,
    /// `sampling`.
    pub sampling: bool,
    /// `roots`.
    pub roots: bool,
    /// `extensions["io.modelcontextprotocol/tasks"]`.
    pub tasks: bool,
    /// `elicitation` with URL mode (`{"url": {}}`).
    pub elicitation_url: bool,
}

impl ClientCapabilities {
    /// Reads a `clientCapabilities` object.
    pub fn read(capabilities: &Map<String, Value>) -> ClientCapabilities {
        let elicitation = match capabilities.get("elicitation") {
            // An empty object is form mode.
            Some(Value::Object(modes)) => modes.is_empty() || modes.contains_key("form"),
            _ => false,
        };
        let is_object = |key: &str| capabilities.get(key).is_some_and(Value::is_object);
        let tasks = capabilities.get("extensions").and_then(|e| e.get(TASKS_EXTENSION)).is_some_and(Value::is_object);
        let elicitation_url = capabilities.get("elicitation").and_then(Value::as_object).is_some_and(|modes| modes.contains_key("url"));
        ClientCapabilities { elicitation, sampling: is_object("sampling"), roots: is_object("roots"), tasks, elicitation_url }
    }
}

/// A request's envelope, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Envelope {
    /// What the request declares the client can do.
    pub capabilities: ClientCapabilities,
    /// The client's `name`, for the logs.
    pub client: Option<String>,
    /// The lowest log level the client wants; `None`: no log notifications at all.
    pub log_level: Option<LogLevel>,
}

impl Envelope {
    /// Checks `params._meta`: -32602 when it, its protocol version or its client capabilities
    /// are missing or of the wrong type, -32022 when the version is not one corral serves
    /// statelessly.
    pub fn read(params: &Map<String, Value>) -> Result<Envelope, RpcError> {
        let meta = match params.get("_meta") {
            Some(Value::Object(meta)) => meta,
            Some(_) => return Err(RpcError::invalid_params("`_meta` must be an object")),
            None => {
                return Err(RpcError::invalid_params(format!(
                    "missing `_meta`: a {MODERN_PROTOCOL_VERSION} request carries `{PROTOCOL_VERSION_KEY}` and `{CLIENT_CAPABILITIES_KEY}` there"
                )))
            }
        };
        let version = match meta.get(PROTOCOL_VERSION_KEY) {
            Some(Value::String(v)) => v.as_str(),
            Some(_) => return Err(RpcError::invalid_params(format!("`_meta[\"{PROTOCOL_VERSION_KEY}\"]` must be a string"))),
            None => return Err(RpcError::invalid_params(format!("missing `_meta[\"{PROTOCOL_VERSION_KEY}\"]`: the protocol version this request speaks"))),
        };
        let capabilities = match meta.get(CLIENT_CAPABILITIES_KEY) {
            Some(Value::Object(caps)) => ClientCapabilities::read(caps),
            Some(_) => return Err(RpcError::invalid_params(format!("`_meta[\"{CLIENT_CAPABILITIES_KEY}\"]` must be an object"))),
            None => {
                return Err(RpcError::invalid_params(format!(
                    "missing `_meta[\"{CLIENT_CAPABILITIES_KEY}\"]`: what the client can do for this request (`{{}}` for nothing)"
                )))
            }
        };
        if version != MODERN_PROTOCOL_VERSION {
            return Err(unsupported_version(version));
        }
        let log_level = match meta.get(LOG_LEVEL_KEY) {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => Some(LogLevel::parse(name).ok_or_else(|| {
                let known: Vec<&str> = LogLevel::ALL.iter().map(|l| l.as_str()).collect();
                RpcError::invalid_params(format!("unknown log level `{name}` in `_meta[\"{LOG_LEVEL_KEY}\"]`: use one of {}", known.join(", ")))
            })?),
            Some(_) => return Err(RpcError::invalid_params(format!("`_meta[\"{LOG_LEVEL_KEY}\"]` must be a string"))),
        };
        let client = meta.get(CLIENT_INFO_KEY).and_then(|c| c.get("name")).and_then(Value::as_str).map(str::to_owned);
        Ok(Envelope { capabilities, client, log_level })
    }
}

/// -32022 for a request speaking `requested`, naming what corral serves.
pub fn unsupported_version(requested: &str) -> RpcError {
    let supported = supported_versions();
    RpcError::new(
        UNSUPPORTED_VERSION,
        format!(
            "unsupported protocol version `{requested}`: this server speaks {MODERN_PROTOCOL_VERSION} per request, and {} after `initialize`",
            supported[1..].join(", ")
        ),
    )
    .with_data(json!({ "supported": supported, "requested": requested }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(value: Value) -> Result<Envelope, RpcError> {
        Envelope::read(value.as_object().unwrap())
    }

    #[test]
    fn each_missing_part_is_invalid_params_and_names_the_key() {
        let missing = read(json!({})).unwrap_err();
        assert_eq!(missing.code, -32602);
        assert!(missing.message.starts_with("missing `_meta`"), "{}", missing.message);
        let no_version = read(json!({"_meta": {CLIENT_CAPABILITIES_KEY: {}}})).unwrap_err();
        assert_eq!((no_version.code, no_version.message.contains(PROTOCOL_VERSION_KEY)), (-32602, true));
        let no_caps = read(json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}})).unwrap_err();
        assert_eq!((no_caps.code, no_caps.message.contains(CLIENT_CAPABILITIES_KEY)), (-32602, true));
    }

    #[test]
    fn an_unknown_version_is_unsupported_with_what_is_supported() {
        let e = read(json!({"_meta": {PROTOCOL_VERSION_KEY: "v999.0.0", CLIENT_CAPABILITIES_KEY: {}}})).unwrap_err();
        assert_eq!(e.code, UNSUPPORTED_VERSION);
        let data = e.data.unwrap();
        assert_eq!(data["requested"], "v999.0.0");
        assert_eq!(data["supported"][0], MODERN_PROTOCOL_VERSION);
    }

    #[test]
    fn capabilities_and_log_level_are_read_per_request() {
        let caps = json!({"sampling": {}, "elicitation": {"form": {}}, "extensions": {TASKS_EXTENSION: {}}});
        let e = read(json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: caps, LOG_LEVEL_KEY: "warning"}})).unwrap();
        assert_eq!(e.capabilities, ClientCapabilities { elicitation: true, sampling: true, roots: false, tasks: true, elicitation_url: false });
        assert_eq!(e.log_level, Some(LogLevel::Warning));
        let plain = read(json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28", CLIENT_CAPABILITIES_KEY: {}}})).unwrap();
        assert_eq!((plain.capabilities, plain.log_level), (ClientCapabilities::default(), None));
    }
}
