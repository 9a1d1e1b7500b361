//! What a tool returns, and how each kind of output becomes a `call-result`.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::schema;

/// One block of a result's content (the WIT `content` variant).
#[derive(Clone, Debug, PartialEq)]
pub enum Content {
    /// Text, which the model reads.
    Text(String),
    /// An image.
    Image {
        /// The encoded image (PNG, JPEG, ...); the host sends it base64.
        data: Vec<u8>,
        /// Its MIME type, e.g. `image/png`.
        mime_type: String,
    },
    /// Audio.
    Audio {
        /// The encoded audio; the host sends it base64.
        data: Vec<u8>,
        /// Its MIME type, e.g. `audio/wav`.
        mime_type: String,
    },
    /// A link to a resource the client may fetch.
    Link {
        /// The resource's URI.
        uri: String,
        /// A short name for it.
        name: String,
        /// What it holds.
        description: Option<String>,
        /// Its MIME type, when known.
        mime_type: Option<String>,
    },
    /// A resource carried inline, as text.
    EmbeddedText {
        /// The resource's URI.
        uri: String,
        /// Its MIME type, when known.
        mime_type: Option<String>,
        /// Its contents.
        text: String,
    },
    /// A resource carried inline, as bytes.
    EmbeddedBytes {
        /// The resource's URI.
        uri: String,
        /// Its MIME type, when known.
        mime_type: Option<String>,
        /// Its contents; the host sends them base64.
        bytes: Vec<u8>,
    },
}

/// A tool's result, as the host receives it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallResult {
    /// The content blocks, in order.
    pub content: Vec<Content>,
    /// Structured output as JSON text; present whenever the tool has an output schema.
    pub structured: Option<String>,
    /// A failure the model should see.
    pub is_error: bool,
}

impl CallResult {
    /// One text block.
    pub fn text(text: impl Into<String>) -> CallResult {
        CallResult { content: vec![Content::Text(text.into())], structured: None, is_error: false }
    }

    /// An `isError` result whose one text block says what went wrong.
    pub fn error(message: impl Into<String>) -> CallResult {
        CallResult { is_error: true, ..CallResult::text(message) }
    }

    /// The text of every text block, joined by newlines.
    pub fn text_content(&self) -> String {
        let texts: Vec<&str> = self.content.iter().filter_map(|c| if let Content::Text(t) = c { Some(t.as_str()) } else { None }).collect();
        texts.join("\n")
    }

    /// The structured output, parsed.
    pub fn structured_value(&self) -> Option<Value> {
        self.structured.as_deref().and_then(|s| serde_json::from_str(s).ok())
    }
}

/// Structured output: `T` is serialised as the result's `structured` JSON (and as its text block,
/// for clients that read only text), and its [`JsonSchema`] is the tool's output schema.
/// `T` must serialise to a JSON object.
///
/// To show the model a different text than the JSON, return `(String, Json<T>)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Json<T>(pub T);

/// What a tool function may return inside its `Ok`.
pub trait Output {
    /// The output schema this kind of output declares, if any.
    fn output_schema() -> Option<Value>;
    /// The result the host receives.
    fn into_result(self) -> CallResult;
}

/// One text block.
impl Output for String {
    fn output_schema() -> Option<Value> {
        None
    }
    fn into_result(self) -> CallResult {
        CallResult::text(self)
    }
}

/// Content blocks of any kind (images, links, several texts), no structured output.
impl Output for Vec<Content> {
    fn output_schema() -> Option<Value> {
        None
    }
    fn into_result(self) -> CallResult {
        CallResult { content: self, structured: None, is_error: false }
    }
}

/// Structured output whose text block is the same JSON.
impl<T: Serialize + JsonSchema> Output for Json<T> {
    fn output_schema() -> Option<Value> {
        Some(schema::output::<T>())
    }
    fn into_result(self) -> CallResult {
        match serde_json::to_string(&self.0) {
            Ok(json) => CallResult { content: vec![Content::Text(json.clone())], structured: Some(json), is_error: false },
            Err(e) => CallResult::error(format!("the tool's output cannot be serialised as JSON: {e}")),
        }
    }
}

/// Structured output with a text block of its own for the model.
impl<T: Serialize + JsonSchema> Output for (String, Json<T>) {
    fn output_schema() -> Option<Value> {
        Some(schema::output::<T>())
    }
    fn into_result(self) -> CallResult {
        let (text, json) = self;
        let mut result = json.into_result();
        if !result.is_error {
            result.content = vec![Content::Text(text)];
        }
        result
    }
}
