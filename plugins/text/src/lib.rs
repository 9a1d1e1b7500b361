//! `text`: the smallest useful corral plugin. Start here.
//!
//! Shows how to
//! - declare tools with a JSON Schema for their arguments and with annotations,
//! - return plain text content (`echo`),
//! - declare an output schema and return matching `structured` output (`word_count`),
//! - report a tool-level error the model can read (`is-error: true`).
//!
//! Every call runs in a fresh instance, so there is no state to keep between calls.

wit_bindgen::generate!({ path: "../../wit", world: "plugin" });

use corral::plugin::types::{Annotations, Content, TaskSupport};
use exports::corral::plugin::tools::{CallResult, Guest, Tool};
use serde_json::{json, Value};

struct Text;

impl Guest for Text {
    fn list_tools() -> Vec<Tool> {
        // Hints for clients: these tools only read their input and touch nothing else.
        let pure = Annotations {
            title: None,
            read_only: Some(true),
            destructive: Some(false),
            idempotent: Some(true),
            open_world: Some(false),
        };
        let text_only = json!({
            "type": "object",
            "properties": {
                "text": { "type": "string", "description": "The text to work on." }
            },
            "required": ["text"],
            "additionalProperties": false
        });
        vec![
            Tool {
                name: "echo".into(),
                title: Some("Echo".into()),
                description: "Returns `text` unchanged.".into(),
                input_schema: text_only.to_string(),
                output_schema: None,
                annotations: pure.clone(),
                task_support: TaskSupport::Forbidden,
            },
            Tool {
                name: "word_count".into(),
                title: Some("Word count".into()),
                description: "Counts the words, lines and characters of `text`.".into(),
                input_schema: text_only.to_string(),
                output_schema: Some(
                    json!({
                        "type": "object",
                        "properties": {
                            "words": { "type": "integer" },
                            "lines": { "type": "integer" },
                            "chars": { "type": "integer" }
                        },
                        "required": ["words", "lines", "chars"]
                    })
                    .to_string(),
                ),
                annotations: pure,
                task_support: TaskSupport::Forbidden,
            },
        ]
    }

    fn call_tool(name: String, arguments: String) -> CallResult {
        let tool: fn(&str) -> CallResult = match name.as_str() {
            "echo" => echo,
            "word_count" => word_count,
            _ => return error(format!("unknown tool `{name}`; try `echo` or `word_count`")),
        };
        // The host has already checked `arguments` against the input schema,
        // but a plugin should still fail politely rather than panic.
        let args: Value = serde_json::from_str(&arguments).unwrap_or_default();
        match args["text"].as_str() {
            Some(text) => tool(text),
            None => error("argument `text` must be a string".into()),
        }
    }
}

fn echo(text: &str) -> CallResult {
    CallResult {
        content: vec![Content::Text(text.to_string())],
        structured: None,
        is_error: false,
    }
}

fn word_count(text: &str) -> CallResult {
    let counts = json!({
        "words": text.split_whitespace().count(),
        "lines": text.lines().count(),
        "chars": text.chars().count(),
    })
    .to_string();
    // Structured output for programs, and the same JSON as text for models.
    CallResult {
        content: vec![Content::Text(counts.clone())],
        structured: Some(counts),
        is_error: false,
    }
}

/// A failure the model should see and may correct.
fn error(message: String) -> CallResult {
    CallResult {
        content: vec![Content::Text(message)],
        structured: None,
        is_error: true,
    }
}

export!(Text);
