//! A task as SQLite keeps it: the columns every query selects, and the task read from them.

use rusqlite::Row;
use serde_json::Value;

use super::model::{Task, TaskStatus};

/// The columns every query returns, in the order [`read_task`] reads them.
pub(super) const COLUMNS: &str = "seq, id, owner, tool, arguments, status, status_message, created_at, updated_at, ttl_ms, poll_interval_ms, progress_token, idempotency_key, runner, attempts, checkpoint_seq, resumed_from, client_capabilities, started_at IS NOT NULL, plugin, trace_context";

/// How many columns [`COLUMNS`] reads: what a query selects after them starts here.
pub(super) const AFTER_COLUMNS: usize = 21;

/// A task from a row whose first columns are [`COLUMNS`].
pub(super) fn read_task(row: &Row) -> rusqlite::Result<Task> {
    let json = |text: Option<String>| text.and_then(|t| serde_json::from_str::<Value>(&t).ok());
    let status: String = row.get(5)?;
    Ok(Task {
        seq: row.get(0)?,
        id: row.get(1)?,
        owner: row.get(2)?,
        tool: row.get(3)?,
        arguments: json(row.get(4)?).unwrap_or(Value::Null),
        status: TaskStatus::parse(&status).ok_or_else(|| rusqlite::Error::InvalidColumnType(5, status.clone(), rusqlite::types::Type::Text))?,
        status_message: row.get(6)?,
        created_at: row.get(7)?,
        updated_at: row.get(8)?,
        ttl_ms: row.get(9)?,
        poll_interval_ms: row.get(10)?,
        progress_token: json(row.get(11)?),
        idempotency_key: row.get(12)?,
        runner: row.get(13)?,
        attempts: row.get(14)?,
        checkpoint: row.get::<_, i64>(15)? as u64,
        resumed_from: row.get::<_, i64>(16)? as u64,
        client_capabilities: json(row.get(17)?),
        started: row.get(18)?,
        plugin: row.get(19)?,
        trace_context: row.get(20)?,
    })
}
