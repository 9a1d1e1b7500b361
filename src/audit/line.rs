//! A record as one JSON line, in the field names the audit trail shares with trace spans
//! (`principal`, `era`, `transport`, `tool`, `outcome`, `duration_ms`, …).

use std::time::SystemTime;

use serde_json::{json, Map, Value};

use super::record::{CallRecord, Subject, TaskRecord};
use crate::principal::{Owner, Principal, Wire};

/// `record` as one line of JSON, without the newline.
pub(super) fn call_line(record: &CallRecord) -> String {
    let mut line = head("call", record.time, &record.owner);
    let (field, name) = match &record.subject {
        Subject::Tool(name) => ("tool", name),
        Subject::Resource(uri) => ("resource", uri),
        Subject::Prompt(name) => ("prompt", name),
        Subject::Template(uri) => ("template", uri),
    };
    line.insert(field.into(), json!(name));
    put(&mut line, "plugin", record.plugin.as_ref().map(|p| json!(p)));
    put(&mut line, "digest", record.digest.as_deref().map(|d| json!(d)));
    put(&mut line, "contract", record.contract.map(|c| json!(c)));
    line.insert("outcome".into(), json!(record.outcome.as_str()));
    put(&mut line, "failure", record.failure.as_ref().map(|f| json!(f)));
    if record.is_error {
        line.insert("is_error".into(), json!(true));
    }
    line.insert("duration_ms".into(), json!(millis(record.duration)));
    line.insert("fuel_consumed".into(), json!(record.fuel_consumed));
    line.insert("peak_memory".into(), json!(record.peak_memory));
    if !record.denials.is_empty() {
        line.insert("denials".into(), json!(record.denials));
    }
    if let Some(task) = &record.task {
        line.insert("task_id".into(), json!(task.id));
        line.insert("attempt".into(), json!(task.attempt));
    }
    put(&mut line, "arguments", record.arguments.clone());
    put(&mut line, "result", record.result.clone());
    put(&mut line, "trace_id", record.trace_id.as_ref().map(|t| json!(t)));
    Value::Object(line).to_string()
}

/// `record` as one line of JSON, without the newline.
pub(super) fn task_line(record: &TaskRecord) -> String {
    let mut line = head("task", record.time, &record.owner);
    line.insert("task_id".into(), json!(record.task_id));
    line.insert("tool".into(), json!(record.tool));
    line.insert("transition".into(), json!(record.transition.as_str()));
    line.insert("attempt".into(), json!(record.attempt));
    line.insert("replica".into(), json!(record.replica));
    put(&mut line, "outcome", record.outcome.map(|o| json!(o)));
    put(&mut line, "failure", record.failure.as_ref().map(|f| json!(f)));
    put(&mut line, "queue_wait_ms", record.queue_wait_ms.map(|w| json!(w)));
    put(&mut line, "trace_id", record.trace_id.as_ref().map(|t| json!(t)));
    Value::Object(line).to_string()
}

/// `kind`, `time` and who: the principal, era and transport the owner key says.
fn head(kind: &str, time: SystemTime, owner: &str) -> Map<String, Value> {
    let mut line = Map::new();
    line.insert("kind".into(), json!(kind));
    line.insert("time".into(), json!(humantime::format_rfc3339_micros(time).to_string()));
    match Owner::parse(owner) {
        Some(owner) => {
            line.insert("principal".into(), json!(owner.principal_key()));
            line.insert("era".into(), json!(era(owner.wire())));
            line.insert("transport".into(), json!(transport(owner.principal())));
        }
        // A key an older or newer host wrote: shown as it is.
        None => {
            line.insert("principal".into(), json!(owner));
        }
    }
    line
}

/// The protocol era a wire belongs to.
fn era(wire: Wire) -> &'static str {
    match wire {
        Wire::Sessions => "2025-11-25",
        Wire::Stateless => "2026-07-28",
    }
}

/// The transport a principal reaches the host on: the local user is the other end of stdio;
/// everyone else came over HTTP.
fn transport(principal: &Principal) -> &'static str {
    match principal {
        Principal::Local => "stdio",
        _ => "http",
    }
}

/// Milliseconds with microseconds kept: most calls take less than one.
fn millis(d: std::time::Duration) -> f64 {
    (d.as_micros() as f64) / 1000.0
}

fn put(line: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(value) = value {
        line.insert(key.into(), value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::record::{CallOutcome, TaskRun, Transition};

    #[test]
    fn a_call_line_names_who_what_and_how_it_went() {
        let mut record = CallRecord::new("modern:token:ci".into(), Subject::Tool("echo".into()), CallOutcome::Failed);
        record.failure = Some("fuel-exhausted".into());
        record.fuel_consumed = 1000;
        record.task = Some(TaskRun { id: "t1".into(), attempt: 2 });
        let line: Value = serde_json::from_str(&call_line(&record)).unwrap();
        assert_eq!(line["kind"], "call");
        assert_eq!(line["principal"], "token:ci");
        assert_eq!(line["era"], "2026-07-28");
        assert_eq!(line["transport"], "http");
        assert_eq!(line["tool"], "echo");
        assert_eq!(line["outcome"], "failed");
        assert_eq!(line["failure"], "fuel-exhausted");
        assert_eq!(line["attempt"], 2);
        assert!(line.get("arguments").is_none() && line.get("trace_id").is_none());
        assert!(humantime::parse_rfc3339(line["time"].as_str().unwrap()).is_ok());
    }

    #[test]
    fn a_task_line_names_its_transition() {
        let record = TaskRecord::new("local".into(), "t1".into(), "echo".into(), Transition::InputRequired, 1, "r1".into());
        let line: Value = serde_json::from_str(&task_line(&record)).unwrap();
        assert_eq!((line["kind"].as_str(), line["transition"].as_str(), line["transport"].as_str()), (Some("task"), Some("input_required"), Some("stdio")));
        assert_eq!(line["era"], "2025-11-25");
    }
}
