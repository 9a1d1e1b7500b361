//! A record as one JSON line, in the field names the audit trail shares with trace spans
//! (`principal`, `era`, `transport`, `tool`, `outcome`, `duration_ms`, …).

use std::time::SystemTime;

use serde_json::{json, Map, Value};

use super::operator::OperatorRecord;
use super::record::{CallRecord, Reached, Subject, TaskRecord};
use crate::principal::{Owner, Principal, Wire};

/// `record` as one line of JSON, without the newline: written straight from the record's
/// fields (a record a call, on the writer's thread: no map of values built on the way).
pub(super) fn call_line(record: &CallRecord) -> String {
    let owner = Owner::parse(&record.owner);
    let (mut tool, mut resource, mut prompt, mut template) = (None, None, None, None);
    match &record.subject {
        Subject::Tool(name) => tool = Some(name.as_str()),
        Subject::Resource(uri) => resource = Some(uri.as_str()),
        Subject::Prompt(name) => prompt = Some(name.as_str()),
        Subject::Template(uri) => template = Some(uri.as_str()),
    }
    let line = CallLine {
        kind: "call",
        time: humantime::format_rfc3339_micros(record.time).to_string(),
        // A key an older or newer host wrote is shown as it is.
        principal: owner.as_ref().map_or(record.owner.as_str(), |o| o.principal_key()),
        era: owner.as_ref().map(|o| era(o.wire())),
        transport: owner.as_ref().map(|o| transport(o.principal())),
        tool,
        resource,
        prompt,
        template,
        plugin: record.plugin.as_deref(),
        digest: record.digest.as_deref(),
        contract: record.contract,
        outcome: record.outcome.as_str(),
        failure: record.failure.as_deref(),
        is_error: record.is_error,
        duration_ms: millis(record.duration),
        fuel_consumed: record.fuel_consumed,
        peak_memory: record.peak_memory,
        denials: &record.denials,
        task_id: record.task.as_ref().map(|t| t.id.as_str()),
        attempt: record.task.as_ref().map(|t| t.attempt),
        arguments: record.arguments.as_ref(),
        result: record.result.as_ref(),
        trace_id: record.trace_id.as_deref(),
        secrets: &record.secrets.given,
        secret_missing: record.secrets.missing.as_deref(),
        secret_asked: record.secrets.asked,
        connections: record.connections.iter().map(ReachedLine::of).collect(),
        connections_uncounted: record.connections_uncounted,
    };
    serde_json::to_string(&line).expect("an audit line serializes")
}

/// A call record's line, field by field.
#[derive(serde::Serialize)]
struct CallLine<'a> {
    kind: &'static str,
    time: String,
    principal: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    era: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    transport: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resource: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    template: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    plugin: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    digest: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    contract: Option<&'static str>,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    failure: Option<&'a str>,
    #[serde(skip_serializing_if = "is_false")]
    is_error: bool,
    duration_ms: f64,
    fuel_consumed: u64,
    peak_memory: u64,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    denials: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    task_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    attempt: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    arguments: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_id: Option<&'a str>,
    /// The names of the secrets the call was given.
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    secrets: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    secret_missing: Option<&'a str>,
    #[serde(skip_serializing_if = "is_false")]
    secret_asked: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    connections: Vec<ReachedLine<'a>>,
    #[serde(skip_serializing_if = "is_zero")]
    connections_uncounted: u64,
}

/// One destination of a call's line.
#[derive(serde::Serialize)]
struct ReachedLine<'a> {
    via: &'static str,
    host: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
    port: u16,
    allowed: bool,
    count: u32,
}

impl<'a> ReachedLine<'a> {
    fn of(r: &'a Reached) -> ReachedLine<'a> {
        ReachedLine { via: r.via, host: &r.host, name: r.name.as_deref(), port: r.port, allowed: r.allowed, count: r.count }
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
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
    put(&mut line, "message", record.message.as_ref().map(|m| json!(m)));
    Value::Object(line).to_string()
}

/// `record` as one line of JSON, without the newline.
pub(super) fn operator_line(record: &OperatorRecord) -> String {
    let line = OperatorLine {
        kind: "operator",
        time: humantime::format_rfc3339_micros(record.time).to_string(),
        operator: record.operator.as_deref(),
        action: record.action.as_str(),
        outcome: if record.done { "done" } else { "refused" },
        address: record.address.map(|a| a.to_string()),
        task_id: record.task_id.as_deref(),
        reason: record.reason.as_deref(),
        detail: record.detail.as_deref(),
        principal: record.secret.as_ref().map(|s| s.principal.as_str()),
        plugin: record.secret.as_ref().map(|s| s.plugin.as_str()),
        secret: record.secret.as_ref().map(|s| s.name.as_str()),
    };
    serde_json::to_string(&line).expect("an audit line serializes")
}

/// An operator record's line, field by field.
#[derive(serde::Serialize)]
struct OperatorLine<'a> {
    kind: &'static str,
    time: String,
    /// Always present: `null` for a sign-in whose token named no one.
    operator: Option<&'a str>,
    action: &'static str,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    task_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'a str>,
    /// Whose secret it acted on.
    #[serde(skip_serializing_if = "Option::is_none")]
    principal: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    plugin: Option<&'a str>,
    /// The secret's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    secret: Option<&'a str>,
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
        assert!(line.get("secrets").is_none() && line.get("secret_missing").is_none() && line.get("secret_asked").is_none());
        assert!(line.get("connections").is_none() && line.get("connections_uncounted").is_none());
        assert!(humantime::parse_rfc3339(line["time"].as_str().unwrap()).is_ok());
    }

    #[test]
    fn an_operator_line_names_who_did_what_and_why() {
        let mut record = OperatorRecord::new(Some("alice".into()), crate::audit::OperatorAction::Cancel);
        record.task_id = Some("t1".into());
        record.reason = Some("stuck on a dead API".into());
        let line: Value = serde_json::from_str(&operator_line(&record)).unwrap();
        assert_eq!((line["kind"].as_str(), line["operator"].as_str(), line["action"].as_str()), (Some("operator"), Some("alice"), Some("cancel")));
        assert_eq!((line["outcome"].as_str(), line["task_id"].as_str(), line["reason"].as_str()), (Some("done"), Some("t1"), Some("stuck on a dead API")));
        let mut failed = OperatorRecord::new(None, crate::audit::OperatorAction::SignIn);
        failed.done = false;
        failed.address = Some("127.0.0.1".parse().unwrap());
        let line: Value = serde_json::from_str(&operator_line(&failed)).unwrap();
        assert_eq!((line["operator"].is_null(), line["outcome"].as_str(), line["address"].as_str()), (true, Some("refused"), Some("127.0.0.1")));
    }

    #[test]
    fn a_call_line_names_the_secrets_it_was_given_or_refused_for() {
        let mut given = CallRecord::new("modern:token:ada".into(), Subject::Tool("issues".into()), CallOutcome::Result);
        given.secrets.given = vec!["TRACKER_TOKEN".into(), "CHAT_TOKEN".into()];
        let line: Value = serde_json::from_str(&call_line(&given)).unwrap();
        assert_eq!(line["secrets"], json!(["TRACKER_TOKEN", "CHAT_TOKEN"]));
        given.connections = vec![Reached { via: "tcp", host: "10.0.0.7".into(), name: Some("api.example".into()), port: 443, allowed: true, count: 2 }];
        given.connections_uncounted = 3;
        let line: Value = serde_json::from_str(&call_line(&given)).unwrap();
        assert_eq!(line["connections"], json!([{"via": "tcp", "host": "10.0.0.7", "name": "api.example", "port": 443, "allowed": true, "count": 2}]));
        assert_eq!(line["connections_uncounted"], 3);
        let mut refused = CallRecord::new("modern:token:bob".into(), Subject::Tool("issues".into()), CallOutcome::Failed);
        refused.failure = Some("secret-unavailable".into());
        refused.secrets.missing = Some("TRACKER_TOKEN".into());
        refused.secrets.asked = true;
        let line: Value = serde_json::from_str(&call_line(&refused)).unwrap();
        assert_eq!((line["secret_missing"].as_str(), line["secret_asked"].as_bool()), (Some("TRACKER_TOKEN"), Some(true)));
        assert!(line.get("secrets").is_none());
    }

    #[test]
    fn an_operator_line_names_the_secret_it_acted_on() {
        let mut record = OperatorRecord::new(Some("ops".into()), crate::audit::OperatorAction::SecretSet);
        record.secret = Some(crate::audit::SecretNamed { principal: "token:ada".into(), plugin: "tracker".into(), name: "TRACKER_TOKEN".into() });
        let line: Value = serde_json::from_str(&operator_line(&record)).unwrap();
        assert_eq!((line["action"].as_str(), line["principal"].as_str()), (Some("secret-set"), Some("token:ada")));
        assert_eq!((line["plugin"].as_str(), line["secret"].as_str()), (Some("tracker"), Some("TRACKER_TOKEN")));
    }

    #[test]
    fn a_task_line_names_its_transition() {
        let record = TaskRecord::new("local".into(), "t1".into(), "echo".into(), Transition::InputRequired, 1, "r1".into());
        let line: Value = serde_json::from_str(&task_line(&record)).unwrap();
        assert_eq!((line["kind"].as_str(), line["transition"].as_str(), line["transport"].as_str()), (Some("task"), Some("input_required"), Some("stdio")));
        assert_eq!(line["era"], "2025-11-25");
    }
}
