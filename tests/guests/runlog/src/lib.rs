//! A guest that leaves one file per run in the directory granted at `/runs`, so a test can count
//! how many times each task really ran, across replicas and restarts: `record` (idempotent) and
//! `record_once` (not), both `required` task tools, and `record_adaptive` (not idempotent, an
//! `optional` task tool: a call that outgrows `--task-after` is adopted as a task). Arguments: `label` (names the run's file,
//! `/runs/LABEL.N`), `ms` (how long the run then takes, sleeping).
//!
//! A file per run rather than a line appended to one file: the replicas are separate processes,
//! and an append through WASI is a seek and a write, not one atomic `O_APPEND` write.

wit_bindgen::generate!({ path: "../../../wit", world: "plugin" });

use std::time::Duration;

use corral::plugin::types::{Annotations, Content, TaskSupport};
use exports::corral::plugin::tools::{CallResult, Guest, Tool};
use serde_json::{json, Value};

struct Runlog;

fn tool(name: &str, idempotent: bool, task_support: TaskSupport) -> Tool {
    let schema = json!({"type": "object", "properties": {"label": {"type": "string"}, "ms": {"type": "integer", "minimum": 0}}, "required": ["label"]});
    Tool {
        name: name.into(),
        title: None,
        description: "Leaves one file per run under /runs, then sleeps `ms`.".into(),
        input_schema: schema.to_string(),
        output_schema: None,
        annotations: Annotations { title: None, read_only: Some(false), destructive: Some(false), idempotent: Some(idempotent), open_world: Some(false) },
        task_support,
    }
}

/// Creates `/runs/LABEL.N` for the first `N` not taken.
fn leave_mark(label: &str) -> Result<String, String> {
    for n in 0.. {
        let path = format!("/runs/{label}.{n}");
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(_) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("{path}: {e}")),
        }
    }
    unreachable!()
}

impl Guest for Runlog {
    fn list_tools() -> Vec<Tool> {
        vec![
            tool("record", true, TaskSupport::Required),
            tool("record_once", false, TaskSupport::Required),
            tool("record_adaptive", false, TaskSupport::Optional),
        ]
    }

    fn call_tool(_name: String, arguments: String) -> CallResult {
        let args: Value = serde_json::from_str(&arguments).unwrap_or_default();
        let label = args["label"].as_str().unwrap_or("unlabelled");
        let (text, is_error) = match leave_mark(label) {
            Ok(path) => {
                std::thread::sleep(Duration::from_millis(args["ms"].as_u64().unwrap_or(0)));
                (format!("ran {path}"), false)
            }
            Err(e) => (e, true),
        };
        CallResult { content: vec![Content::Text(text)], structured: None, is_error }
    }
}

export!(Runlog);
