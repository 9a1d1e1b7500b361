//! `hash`: a CPU-heavy tool, and how limits apply to it.
//!
//! Shows how to
//! - use an ordinary crate (`sha2`) inside a plugin,
//! - return `structured` output that matches a declared output schema,
//! - stay responsive in a long loop by checking `host::cancelled` now and then,
//! - give a plugin its own limits with a manifest: `hash.toml` next to `hash.wasm`
//!   sets its fuel budget and timeout, so a large `rounds` runs out of fuel
//!   (a deterministic compute budget) instead of hogging a CPU.

wit_bindgen::generate!({ path: "../../wit", world: "plugin" });

use corral::plugin::host::cancelled;
use corral::plugin::types::{Annotations, Content, TaskSupport};
use exports::corral::plugin::tools::{CallResult, Guest, Tool};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

struct Hash;

impl Guest for Hash {
    fn list_tools() -> Vec<Tool> {
        let input = json!({
            "type": "object",
            "properties": {
                "input": { "type": "string", "description": "The text to hash." },
                "rounds": {
                    "type": "integer", "minimum": 1, "maximum": 100_000_000,
                    "description": "How many times to apply SHA-256, each round hashing the previous digest."
                }
            },
            "required": ["input", "rounds"],
            "additionalProperties": false
        });
        let output = json!({
            "type": "object",
            "properties": {
                "digest": { "type": "string", "pattern": "^[0-9a-f]{64}$" },
                "rounds": { "type": "integer" }
            },
            "required": ["digest", "rounds"]
        });
        vec![Tool {
            name: "hash_chain".into(),
            title: Some("SHA-256 hash chain".into()),
            description: "Applies SHA-256 `rounds` times, starting from `input`, and returns \
                          the final digest in hex."
                .into(),
            input_schema: input.to_string(),
            output_schema: Some(output.to_string()),
            annotations: Annotations {
                title: None,
                read_only: Some(true),
                destructive: Some(false),
                idempotent: Some(true),
                open_world: Some(false),
            },
            task_support: TaskSupport::Optional,
        }]
    }

    fn call_tool(name: String, arguments: String) -> CallResult {
        if name != "hash_chain" {
            return error(format!("unknown tool `{name}`; try `hash_chain`"));
        }
        let args: Value = serde_json::from_str(&arguments).unwrap_or_default();
        let (Some(input), Some(rounds @ 1..=100_000_000)) =
            (args["input"].as_str(), args["rounds"].as_u64())
        else {
            return error(
                "needs `input` (a string) and `rounds` (an integer from 1 to 100000000)".into(),
            );
        };

        let mut digest = Sha256::digest(input.as_bytes());
        for round in 1..rounds {
            // A host call costs far more than one hash, so ask only every 64k rounds.
            if round % 65_536 == 0 && cancelled() {
                return error(format!("cancelled after {round} of {rounds} rounds"));
            }
            digest = Sha256::digest(digest);
        }

        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        CallResult {
            content: vec![Content::Text(hex.clone())],
            structured: Some(json!({ "digest": hex, "rounds": rounds }).to_string()),
            is_error: false,
        }
    }
}

fn error(message: String) -> CallResult {
    CallResult {
        content: vec![Content::Text(message)],
        structured: None,
        is_error: true,
    }
}

export!(Hash);
