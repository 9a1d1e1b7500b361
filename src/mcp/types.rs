//! MCP message bodies corral produces (protocol 2025-11-25).

use serde::Serialize;
use serde_json::{Map, Value};

/// The newest protocol version corral speaks, answered to clients asking for one it does not know.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";
/// The protocol versions corral speaks, newest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// Picks the version to answer `initialize` with: the client's when supported, else the latest.
pub fn negotiate_version(requested: &str) -> &'static str {
    SUPPORTED_PROTOCOL_VERSIONS.iter().find(|v| **v == requested).copied().unwrap_or(LATEST_PROTOCOL_VERSION)
}

/// MCP log levels (RFC 5424 severities), least severe first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `notice`
    Notice,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
    /// `alert`
    Alert,
    /// `emergency`
    Emergency,
}

impl LogLevel {
    /// Every level, least severe first.
    pub const ALL: [LogLevel; 8] =
        [LogLevel::Debug, LogLevel::Info, LogLevel::Notice, LogLevel::Warning, LogLevel::Error, LogLevel::Critical, LogLevel::Alert, LogLevel::Emergency];

    /// The level named `name` on the wire.
    pub fn parse(name: &str) -> Option<LogLevel> {
        LogLevel::ALL.into_iter().find(|l| l.as_str() == name)
    }

    /// The level's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }
}

/// A tool's `execution.taskSupport`: whether it may, or must, be called as a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskSupport {
    /// Called directly only.
    Forbidden,
    /// Either way.
    Optional,
    /// As a task only.
    Required,
}

impl TaskSupport {
    /// The policy's name on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
        }
    }
}

/// What a tool says about itself (hints: clients must not rely on them for safety).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// A display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// It changes nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// It may destroy something.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling it twice with the same arguments does no more than once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// It reaches outside the host (the network).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl ToolAnnotations {
    /// No hint given: the field is left out of `tools/list`.
    pub fn is_empty(&self) -> bool {
        *self == ToolAnnotations::default()
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
/// A tool's `execution`.
pub struct ToolExecution {
    /// Whether it may, or must, be called as a task.
    pub task_support: TaskSupport,
}

/// A tool as `tools/list` shows it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// What `tools/call` names it by.
    pub name: String,
    /// A display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does, for the model.
    pub description: String,
    /// The JSON Schema its arguments must match.
    pub input_schema: Value,
    /// The JSON Schema its structured output matches, if it declares one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Its hints.
    #[serde(skip_serializing_if = "ToolAnnotations::is_empty")]
    pub annotations: ToolAnnotations,
    /// How it may be called.
    pub execution: ToolExecution,
}

/// One content block of a tool result.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image.
    Image {
        /// Base64 of the bytes.
        data: String,
        /// Its media type.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Audio.
    Audio {
        /// Base64 of the bytes.
        data: String,
        /// Its media type.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A link to a resource the client may read.
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// What it is.
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its media type.
        #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
    },
    /// A resource embedded in the result.
    Resource {
        /// Its contents.
        resource: ResourceContents,
    },
}

/// An embedded resource's contents: text or a blob.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// Its media type.
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The text, for a text resource.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Base64 of the bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

/// The answer to `tools/call`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// What the tool returned, as content blocks.
    pub content: Vec<ContentBlock>,
    /// Its structured output, checked against its output schema.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The call failed (a tool error, or a limit corral enforced); left out when false.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// corral's detail (`corral/error`, `corral/denied`).
    #[serde(rename = "_meta", skip_serializing_if = "Map::is_empty")]
    pub meta: Map<String, Value>,
}

impl CallToolResult {
    /// An `isError` result with one text block.
    pub fn error_text(text: impl Into<String>) -> CallToolResult {
        CallToolResult { content: vec![ContentBlock::Text { text: text.into() }], structured_content: None, is_error: true, meta: Map::new() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_versions_get_the_latest() {
        assert_eq!(negotiate_version("2025-06-18"), "2025-06-18");
        assert_eq!(negotiate_version("1999-01-01"), LATEST_PROTOCOL_VERSION);
    }

    #[test]
    fn content_blocks_use_mcp_names() {
        let link = ContentBlock::ResourceLink { uri: "file:///a".into(), name: "a".into(), description: None, mime_type: Some("text/plain".into()) };
        assert_eq!(serde_json::to_value(&link).unwrap(), json!({"type":"resource_link","uri":"file:///a","name":"a","mimeType":"text/plain"}));
        let ok = CallToolResult { content: vec![], structured_content: None, is_error: false, meta: Map::new() };
        assert_eq!(serde_json::to_value(&ok).unwrap(), json!({"content": []}));
    }
}
