//! `ticker`: a slow tool that talks to the host while it runs.
//!
//! Shows how to
//! - report progress with `host::progress` (sent to clients as `notifications/progress`),
//! - log through `host::log` (sent as `notifications/message` and to the host's log),
//! - check `host::cancelled` in a loop and stop early with an error result,
//! - mark tools as usable as MCP tasks: `tick` is `optional`, `countdown` is `required`,
//! - sleep: `std::thread::sleep` works on wasm32-wasip2 (it waits on a wasi:clocks pollable).
//!
//! The manifest next to this crate (`ticker.toml`) sets the call timeout to 120 s
//! and lets at most 4 calls run at once.

wit_bindgen::generate!({ path: "../../wit", world: "plugin" });

use corral::plugin::host::{cancelled, log, progress, LogLevel};
use corral::plugin::types::{Annotations, Content, TaskSupport};
use exports::corral::plugin::tools::{CallResult, Guest, Tool};
use serde_json::{json, Value};
use std::time::Duration;

struct Ticker;

impl Guest for Ticker {
    fn list_tools() -> Vec<Tool> {
        vec![
            Tool {
                name: "tick".into(),
                title: Some("Tick".into()),
                description: "Ticks `count` times, `interval_ms` apart, reporting progress.".into(),
                input_schema: input_schema("count", "How many times to tick."),
                output_schema: None,
                annotations: annotations(),
                task_support: TaskSupport::Optional,
            },
            Tool {
                name: "countdown".into(),
                title: Some("Countdown".into()),
                description: "Counts down from `from`, one tick at a time. Task-only.".into(),
                input_schema: input_schema("from", "The number to count down from."),
                output_schema: None,
                annotations: annotations(),
                task_support: TaskSupport::Required,
            },
        ]
    }

    fn call_tool(name: String, arguments: String) -> CallResult {
        let (key, counting_down) = match name.as_str() {
            "tick" => ("count", false),
            "countdown" => ("from", true),
            _ => return error(format!("unknown tool `{name}`; try `tick` or `countdown`")),
        };
        // The host has already checked `arguments` against the input schema.
        let args: Value = serde_json::from_str(&arguments).unwrap_or_default();
        let Some(count) = args[key].as_u64().filter(|n| (1..=10_000).contains(n)) else {
            return error(format!("`{key}` must be an integer from 1 to 10000"));
        };
        let interval_ms = args["interval_ms"].as_u64().unwrap_or(100);

        log(
            LogLevel::Info,
            &format!("{name}: {count} ticks, {interval_ms} ms apart"),
        );
        for i in 1..=count {
            std::thread::sleep(Duration::from_millis(interval_ms));
            // The host sets `cancelled` when the client cancels or the deadline passes.
            if cancelled() {
                log(
                    LogLevel::Info,
                    &format!("{name}: cancelled after {} ticks", i - 1),
                );
                return error(format!("cancelled after {} ticks", i - 1));
            }
            let message = match counting_down {
                false => format!("tick {i}/{count}"),
                true => format!("{} to go", count - i),
            };
            // `progress` must grow with every report, also when counting down.
            progress(i as f64, Some(count as f64), Some(&message));
            log(LogLevel::Debug, &message);
        }

        let done = match counting_down {
            false => format!("ticked {count} times"),
            true => format!("counted down from {count}"),
        };
        log(LogLevel::Info, &format!("{name}: {done}"));
        CallResult {
            content: vec![Content::Text(done)],
            structured: None,
            is_error: false,
        }
    }
}

fn input_schema(count: &str, description: &str) -> String {
    json!({
        "type": "object",
        "properties": {
            count: {
                "type": "integer", "minimum": 1, "maximum": 10000,
                "description": description
            },
            "interval_ms": {
                "type": "integer", "minimum": 0, "maximum": 60000, "default": 100,
                "description": "Milliseconds to wait before each tick (default 100)."
            }
        },
        "required": [count],
        "additionalProperties": false
    })
    .to_string()
}

/// Hints for clients: ticking changes nothing outside the call.
fn annotations() -> Annotations {
    Annotations {
        title: None,
        read_only: Some(true),
        destructive: Some(false),
        idempotent: Some(true),
        open_world: Some(false),
    }
}

fn error(message: String) -> CallResult {
    CallResult {
        content: vec![Content::Text(message)],
        structured: None,
        is_error: true,
    }
}

export!(Ticker);
