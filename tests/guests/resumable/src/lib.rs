//! A `corral:plugin@0.3.0` fixture (world `plugin`) for checkpoints.
//!
//! - `steps` (task support `optional`): `steps` steps; before each it waits `pause_ms`, then
//!   reports progress `step K of N` and checkpoints `{"next": K}` padded to `bytes` bytes. A run
//!   that resumes starts at the checkpoint's `next`. The result is `{"resumed_at", "ran"}`: where
//!   this run started and how many steps it did, and `checkpoint_us`: how long each
//!   `checkpoint` call took, as the guest saw it. With `pause_ms` 0 it is what
//!   `benches/checkpoint.rs` times: N checkpoints of a given size in one task.

wit_bindgen::generate!({ path: "../../../wit/v0.3", world: "plugin" });

use corral::plugin::checkpoints;
use corral::plugin::host;
use corral::plugin::types::{Annotations, Content, TaskSupport};
use exports::corral::plugin::tools::{CallResult, Guest, Tool};
use serde_json::{json, Value};

const STEPS_SCHEMA: &str = r#"{"type":"object","properties":{"steps":{"type":"integer","minimum":0},"pause_ms":{"type":"integer","minimum":0},"bytes":{"type":"integer","minimum":0}},"required":["steps"]}"#;

struct Fixture;

fn result(text: String, is_error: bool) -> CallResult {
    CallResult { content: vec![Content::Text(text)], structured: None, is_error }
}

/// The state of step `next`, padded with spaces to about `bytes` bytes.
fn state(next: u64, bytes: usize) -> Vec<u8> {
    let mut text = json!({ "next": next }).to_string();
    if text.len() < bytes {
        text.insert_str(text.len() - 1, &format!(",\"pad\":\"{}\"", " ".repeat(bytes.saturating_sub(text.len() + 9))));
    }
    text.into_bytes()
}

fn steps(args: &Value) -> Result<Value, String> {
    let total = args["steps"].as_u64().unwrap_or(0);
    let pause = std::time::Duration::from_millis(args["pause_ms"].as_u64().unwrap_or(0));
    let bytes = args["bytes"].as_u64().unwrap_or(0) as usize;
    let resumed_at = checkpoints::resume().and_then(|s| serde_json::from_slice::<Value>(&s).ok()).and_then(|s| s["next"].as_u64()).unwrap_or(0);
    let mut took_us = Vec::new();
    for k in resumed_at..total {
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
        if host::cancelled() {
            return Err("cancelled".into());
        }
        host::progress((k + 1) as f64, Some(total as f64), Some(&format!("step {} of {total}", k + 1)));
        let state = state(k + 1, bytes);
        let started = std::time::Instant::now();
        checkpoints::checkpoint(&state)?;
        took_us.push(started.elapsed().as_secs_f64() * 1e6);
    }
    Ok(json!({ "resumed_at": resumed_at, "ran": total - resumed_at.min(total), "checkpoint_us": took_us }))
}

impl Guest for Fixture {
    fn list_tools() -> Vec<Tool> {
        vec![Tool {
            name: "steps".into(),
            title: None,
            description: "Checkpoints after each of `steps` steps and resumes from the last checkpoint.".into(),
            input_schema: STEPS_SCHEMA.into(),
            output_schema: None,
            annotations: Annotations { title: None, read_only: None, destructive: None, idempotent: None, open_world: None },
            task_support: TaskSupport::Optional,
        }]
    }

    fn call_tool(name: String, arguments: String) -> CallResult {
        let args: Value = serde_json::from_str(&arguments).unwrap_or(Value::Null);
        match name.as_str() {
            "steps" => match steps(&args) {
                Ok(v) => result(v.to_string(), false),
                Err(e) => result(e, true),
            },
            other => result(format!("unknown tool `{other}`"), true),
        }
    }
}

export!(Fixture);
