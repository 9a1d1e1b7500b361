//! A task as PostgreSQL keeps it: the columns every query selects, and the task read from them.

use tokio_postgres::Row;

use crate::tasks::model::{Task, TaskStatus};
use crate::tasks::store::{StoreError, StoreResult};

/// The columns every query returns, in the order [`read_task`] reads them.
pub(super) const COLUMNS: &str = "seq, id, owner, tool, arguments, status, status_message, created_at, updated_at, ttl_ms, poll_interval_ms, progress_token, idempotency_key, runner, attempts, checkpoint_seq, resumed_from, client_capabilities, started_at IS NOT NULL, plugin, trace_context";

/// How many columns [`COLUMNS`] reads: what a query selects after them starts here.
pub(super) const AFTER_COLUMNS: usize = 21;

/// A task from a row whose first columns are [`COLUMNS`].
pub(super) fn read_task(row: &Row) -> StoreResult<Task> {
    let status: String = row.try_get(5)?;
    Ok(Task {
        seq: row.try_get(0)?,
        id: row.try_get(1)?,
        owner: row.try_get(2)?,
        tool: row.try_get(3)?,
        arguments: row.try_get(4)?,
        status: TaskStatus::parse(&status).ok_or_else(|| StoreError::Postgres(format!("a task row has an unknown status {status:?}")))?,
        status_message: row.try_get(6)?,
        created_at: row.try_get(7)?,
        updated_at: row.try_get(8)?,
        ttl_ms: row.try_get(9)?,
        poll_interval_ms: row.try_get(10)?,
        progress_token: row.try_get(11)?,
        idempotency_key: row.try_get(12)?,
        runner: row.try_get(13)?,
        attempts: row.try_get::<_, i32>(14)? as u32,
        checkpoint: row.try_get::<_, i64>(15)? as u64,
        resumed_from: row.try_get::<_, i64>(16)? as u64,
        client_capabilities: row.try_get(17)?,
        started: row.try_get(18)?,
        plugin: row.try_get(19)?,
        trace_context: row.try_get(20)?,
    })
}
