//! How `corral tasks` shows a task: a table (and a detail view) for people, JSON for scripts.
//!
//! The JSON field names are a contract (the README lists them) and use the names the audit trail
//! and the traces share: `task_id`, `tool`, `plugin`, `outcome`, `failure`, `attempt`, `replica`.
//! Times are RFC 3339 in UTC; durations and ages are milliseconds (`*_ms`). Nothing secret is
//! shown: an unauthenticated HTTP session's id (which is that session's only credential) is
//! replaced by a fingerprint, and the call's arguments appear only when asked for.

use std::io::Write;
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::principal::{Owner, Principal};
use crate::tasks::{Purged, Task, TaskDetail, TaskStatus};

/// A time as the JSON shows it: RFC 3339, UTC, to the millisecond.
pub fn time(ms: i64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)).to_string()
}

/// An owner as shown: the stored key, except that a session's id becomes a fingerprint.
pub fn owner(key: &str) -> String {
    match Owner::parse(key) {
        Some(owner) => match owner.principal() {
            Principal::Session(id) => {
                let digest = Sha256::digest(id.as_bytes());
                let short: String = digest.iter().take(6).map(|b| format!("{b:02x}")).collect();
                let stateless = if key.starts_with("modern:") { "modern:" } else { "" };
                format!("{stateless}session:#{short}")
            }
            _ => key.to_owned(),
        },
        None => key.to_owned(),
    }
}

/// A task as `list` (and `cancel`, and `watch`) print it with `--json`.
pub fn summary_json(task: &Task) -> Value {
    json!({
        "task_id": task.id,
        "status": task.status.as_str(),
        "message": task.status_message,
        "owner": owner(&task.owner),
        "tool": task.tool,
        "plugin": task.plugin,
        "created_at": time(task.created_at),
        "updated_at": time(task.updated_at),
        "expires_at": task.expires_at().map(time),
        "attempt": task.attempts,
        "checkpoint": task.checkpoint,
        "replica": task.runner,
    })
}

/// A task as `show --json` prints it: the summary and everything else stored of it.
pub fn detail_json(detail: &TaskDetail, arguments: bool, now: i64) -> Value {
    let task = &detail.task;
    let mut value = summary_json(task);
    let ended_at = task.status.is_terminal().then_some(task.updated_at);
    let more = json!({
        "started_at": detail.started_at.map(time),
        "ended_at": ended_at.map(time),
        "age_ms": now.saturating_sub(task.created_at).max(0),
        "queue_wait_ms": detail.started_at.map(|at| at.saturating_sub(task.created_at).max(0)),
        "duration_ms": detail.started_at.map(|at| ended_at.unwrap_or(now).saturating_sub(at).max(0)),
        "ttl_ms": task.ttl_ms,
        "poll_interval_ms": task.poll_interval_ms,
        "checkpoint_at": detail.checkpointed_at.map(time),
        "resumed_from": task.resumed_from,
        "outcome": detail.outcome.map(|k| k.as_str()),
        "failure": detail.failure,
        "questions": detail.questions.iter().map(|q| json!({ "key": q.key, "request": q.request })).collect::<Vec<_>>(),
        "replica_heartbeat_at": detail.replica_heartbeat_at.map(time),
        "idempotency_key": task.idempotency_key,
    });
    let object = value.as_object_mut().expect("an object");
    object.extend(more.as_object().expect("an object").clone());
    if arguments {
        object.insert("arguments".into(), task.arguments.clone());
    }
    value
}

/// What `purge --json` says of one named task.
pub fn purged_json(id: &str, done: &Purged) -> Value {
    let (deleted, status) = match done {
        Purged::Deleted => (true, None),
        Purged::NotEnded(status) => (false, Some(status.as_str())),
        Purged::Unknown => (false, None),
    };
    json!({ "task_id": id, "deleted": deleted, "status": status, "known": *done != Purged::Unknown })
}

/// A duration in the largest two units, e.g. `3m12s`, `2h05m`, `4d01h`.
pub fn age(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        3600..86400 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{:02}h", s / 86400, s % 86400 / 3600),
    }
}

/// `text` cut to `max` characters, with `…` when cut; line breaks become spaces.
fn clip(text: &str, max: usize) -> String {
    let flat: String = text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    match flat.chars().count() > max {
        true => format!("{}…", flat.chars().take(max.saturating_sub(1)).collect::<String>()),
        false => flat,
    }
}

/// The columns of the table, one row per task.
fn row(task: &Task, now: i64) -> [String; 8] {
    [
        task.id.clone(),
        task.status.as_str().to_owned(),
        task.tool.clone(),
        task.plugin.clone().unwrap_or_else(|| "-".into()),
        clip(&owner(&task.owner), 32),
        age(now - task.created_at),
        task.attempts.to_string(),
        clip(task.status_message.as_deref().unwrap_or(""), 60),
    ]
}

const HEADER: [&str; 8] = ["TASK", "STATUS", "TOOL", "PLUGIN", "OWNER", "AGE", "ATTEMPT", "MESSAGE"];

/// The tasks as a table with a header; a line saying so when there are none.
pub fn print_table(out: &mut impl Write, tasks: &[Task], now: i64) -> std::io::Result<()> {
    if tasks.is_empty() {
        return writeln!(out, "no tasks match");
    }
    let rows: Vec<[String; 8]> = tasks.iter().map(|t| row(t, now)).collect();
    let mut widths = HEADER.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            match i + 1 == cells.len() {
                true => text.push_str(cell),
                false => text.push_str(&format!("{cell:<w$}  ")),
            }
        }
        text.trim_end().to_owned()
    };
    writeln!(out, "{}", line(HEADER.to_vec()))?;
    for row in &rows {
        writeln!(out, "{}", line(row.iter().map(String::as_str).collect()))?;
    }
    Ok(())
}

/// One task, a field per line.
pub fn print_detail(out: &mut impl Write, detail: &TaskDetail, arguments: bool, now: i64) -> std::io::Result<()> {
    let task = &detail.task;
    let mut field = |name: &str, value: String| writeln!(out, "{name:<16}{value}");
    field("task", task.id.clone())?;
    field("status", task.status.as_str().to_owned())?;
    if let Some(message) = &task.status_message {
        field("message", clip(message, 200))?;
    }
    field("tool", task.tool.clone())?;
    field("plugin", task.plugin.clone().unwrap_or_else(|| "- (not recorded)".into()))?;
    field("owner", owner(&task.owner))?;
    field("created", format!("{} ({} ago)", time(task.created_at), age(now - task.created_at)))?;
    match detail.started_at {
        Some(at) => field("started", format!("{} (waited {})", time(at), age(at - task.created_at)))?,
        None => field("started", "not yet (waiting for a worker)".into())?,
    }
    if task.status.is_terminal() {
        let ran = detail.started_at.map(|at| format!(" (ran {})", age(task.updated_at - at))).unwrap_or_default();
        field("ended", format!("{}{ran}", time(task.updated_at)))?;
    } else {
        field("updated", format!("{} ({} ago)", time(task.updated_at), age(now - task.updated_at)))?;
    }
    if let Some(at) = task.expires_at() {
        field("expires", time(at))?;
    }
    field("attempt", task.attempts.to_string())?;
    match (task.checkpoint, detail.checkpointed_at) {
        (0, _) => field("checkpoint", "none".into())?,
        (n, Some(at)) => field("checkpoint", format!("#{n} at {} ({} ago)", time(at), age(now - at)))?,
        (n, None) => field("checkpoint", format!("#{n}"))?,
    }
    if task.resumed_from > 0 {
        field("resumed from", format!("checkpoint #{}", task.resumed_from))?;
    }
    let heartbeat = match detail.replica_heartbeat_at {
        Some(at) => format!(" (heartbeat {} ago)", age(now - at)),
        None => String::new(),
    };
    field("replica", format!("{}{heartbeat}", task.runner))?;
    if let Some(kind) = detail.outcome {
        let failure = detail.failure.as_ref().map(|f| format!(" ({f})")).unwrap_or_default();
        field("outcome", format!("{}{failure}", kind.as_str()))?;
    }
    if task.status == TaskStatus::InputRequired || !detail.questions.is_empty() {
        field("questions", detail.questions.len().to_string())?;
        for q in &detail.questions {
            let message = q.request.pointer("/params/message").and_then(Value::as_str).unwrap_or("");
            let method = q.request.get("method").and_then(Value::as_str).unwrap_or("?");
            field("", format!("{} {method}: {}", q.key, clip(message, 100)))?;
        }
    }
    if arguments {
        field("arguments", serde_json::to_string_pretty(&task.arguments).unwrap_or_default())?;
    }
    Ok(())
}
