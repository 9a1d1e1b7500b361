//! The PostgreSQL side of the operator's queries ([`crate::tasks::operator`]): every owner's
//! tasks, one task in full (with the heartbeat of the replica holding it), and named purges.

use deadpool_postgres::Pool;

use super::pool::get;
use super::rows::{read_task, AFTER_COLUMNS, COLUMNS};
use crate::tasks::model::{OutcomeKind, TaskStatus};
use crate::tasks::operator::{Purged, TaskCursor, TaskDetail, TaskFilter, TaskPage, MAX_PAGE};
use crate::tasks::store::{StoreResult, TaskQuestion};

pub(super) async fn list_all(pool: StoreResult<Pool>, filter: TaskFilter, after: Option<TaskCursor>, limit: usize) -> StoreResult<TaskPage> {
    let limit = limit.clamp(1, MAX_PAGE);
    let client = get(&pool?).await?;
    let statement = client
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM corral_tasks
             WHERE seq < $1 AND status = ANY($2)
               AND ($3::text IS NULL OR owner = $3) AND ($4::text IS NULL OR tool = $4) AND ($5::text IS NULL OR plugin = $5)
               AND ($6::bigint IS NULL OR created_at >= $6) AND ($7::bigint IS NULL OR created_at < $7)
             ORDER BY seq DESC LIMIT $8"
        ))
        .await?;
    let rows = client
        .query(
            &statement,
            &[
                &after.map_or(i64::MAX, |cursor| cursor.0),
                &filter.status_names(),
                &filter.owner,
                &filter.tool,
                &filter.plugin,
                &filter.created_from,
                &filter.created_before,
                &(limit as i64 + 1),
            ],
        )
        .await?;
    let tasks = rows.iter().map(read_task).collect::<StoreResult<Vec<_>>>()?;
    Ok(TaskPage::cut(tasks, limit))
}

pub(super) async fn inspect(pool: StoreResult<Pool>, id: String) -> StoreResult<Option<TaskDetail>> {
    let client = get(&pool?).await?;
    // `corral_hosts` has columns named like the task's: every task column is qualified.
    let columns = COLUMNS.split(", ").map(|c| format!("t.{c}")).collect::<Vec<_>>().join(", ");
    let statement = client
        .prepare_cached(&format!(
            "SELECT {columns}, t.started_at, t.checkpointed_at, o.kind, o.failure, (extract(epoch FROM h.heartbeat_at) * 1000)::bigint
             FROM corral_tasks t LEFT JOIN corral_outcomes o ON o.task_id = t.id LEFT JOIN corral_hosts h ON h.id = t.runner
             WHERE t.id = $1"
        ))
        .await?;
    let Some(row) = client.query_opt(&statement, &[&id]).await? else { return Ok(None) };
    let kind: Option<String> = row.try_get(AFTER_COLUMNS + 2)?;
    let questions = client.prepare_cached("SELECT key, request FROM corral_task_inputs WHERE task_id = $1 AND answer IS NULL ORDER BY seq").await?;
    let questions = client.query(&questions, &[&id]).await?;
    Ok(Some(TaskDetail {
        task: read_task(&row)?,
        started_at: row.try_get(AFTER_COLUMNS)?,
        checkpointed_at: row.try_get(AFTER_COLUMNS + 1)?,
        outcome: kind.as_deref().and_then(OutcomeKind::parse),
        failure: row.try_get(AFTER_COLUMNS + 3)?,
        questions: questions.iter().map(|r| Ok(TaskQuestion { key: r.try_get(0)?, request: r.try_get(1)?, answer: None })).collect::<StoreResult<_>>()?,
        replica_heartbeat_at: row.try_get(AFTER_COLUMNS + 4)?,
    }))
}

pub(super) async fn purge(pool: StoreResult<Pool>, ids: Vec<String>) -> StoreResult<Vec<(String, Purged)>> {
    let mut client = get(&pool?).await?;
    let txn = client.transaction().await?;
    // Outcomes and questions go with the task (ON DELETE CASCADE); its kept result here. The
    // trigger on `corral_tasks` moves the admission counters in the same transaction.
    let delete = txn.prepare_cached("DELETE FROM corral_tasks WHERE id = $1 AND status IN ('completed', 'failed', 'cancelled') RETURNING seq").await?;
    let pages = txn.prepare_cached("DELETE FROM corral_result_pages WHERE id = $1").await?;
    let status = txn.prepare_cached("SELECT status FROM corral_tasks WHERE id = $1").await?;
    let mut done = Vec::with_capacity(ids.len());
    for id in ids {
        let verdict = if txn.query_opt(&delete, &[&id]).await?.is_some() {
            txn.execute(&pages, &[&id]).await?;
            Purged::Deleted
        } else {
            match txn.query_opt(&status, &[&id]).await? {
                Some(row) => Purged::NotEnded(TaskStatus::parse(row.try_get(0)?).unwrap_or(TaskStatus::Working)),
                None => Purged::Unknown,
            }
        };
        done.push((id, verdict));
    }
    txn.commit().await?;
    Ok(done)
}
