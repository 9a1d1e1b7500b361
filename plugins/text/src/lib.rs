//! `text`: the smallest useful corral plugin. Start here.
//!
//! Shows how to
//! - write a tool as a plain function whose argument struct gives the input schema
//!   (the doc comments become the descriptions the model reads),
//! - return text (`echo`) or structured output with an output schema (`word_count`),
//! - state hints for clients (annotations),
//! - test the tools with `cargo test`, no wasm needed.
//!
//! Every call runs in a fresh instance, so there is no state to keep between calls.

use corral_plugin::{export, Json, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TextArgs {
    /// The text to work on.
    text: String,
}

#[derive(Serialize, JsonSchema)]
struct Counts {
    words: usize,
    lines: usize,
    chars: usize,
}

fn echo(args: TextArgs) -> Result<String, String> {
    Ok(args.text)
}

fn word_count(TextArgs { text }: TextArgs) -> Result<Json<Counts>, String> {
    Ok(Json(Counts { words: text.split_whitespace().count(), lines: text.lines().count(), chars: text.chars().count() }))
}

fn tools() -> Vec<Tool> {
    vec![
        Tool::new("echo", "Returns `text` unchanged.", echo).title("Echo"),
        Tool::new("word_count", "Counts the words, lines and characters of `text`.", word_count).title("Word count"),
    ]
    .into_iter()
    // Hints for clients: these tools only read their input and touch nothing else.
    .map(|tool| tool.read_only(true).destructive(false).idempotent(true).open_world(false))
    .collect()
}

export!(tools);

#[cfg(test)]
mod tests {
    use corral_plugin::testing;
    use serde_json::json;

    #[test]
    fn tools_pass_the_hosts_checks() {
        testing::check(&super::tools());
    }

    #[test]
    fn echo_returns_its_text() {
        let result = testing::call(&super::tools(), "echo", json!({"text": "hi there"}));
        assert_eq!(result.text_content(), "hi there");
    }

    #[test]
    fn word_count_counts_words_lines_and_chars() {
        let result = testing::call(&super::tools(), "word_count", json!({"text": "one two\nthree é"}));
        assert_eq!(result.structured_value(), Some(json!({"words": 4, "lines": 2, "chars": 15})));
    }
}
