//! The SQLite side of the operator's queries ([`super::operator`]): every owner's tasks, one
//! task in full, named purges, and the cancel notices that stand in for PostgreSQL's `NOTIFY`.

use rusqlite::{params, Connection, OptionalExtension};

use super::model::{OutcomeKind, TaskStatus};
use super::operator::{Purged, TaskCursor, TaskDetail, TaskFilter, TaskPage, MAX_PAGE};
use super::sqlite_rows::{read_task, AFTER_COLUMNS, COLUMNS};

/// A page of the tasks that pass `filter`, newest first, older than `after`.
pub(super) fn list_all(c: &Connection, filter: &TaskFilter, after: Option<TaskCursor>, limit: usize) -> rusqlite::Result<TaskPage> {
    let limit = limit.clamp(1, MAX_PAGE);
    let statuses = serde_json::to_string(&filter.status_names()).expect("strings serialize");
    let mut select = c.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM tasks
         WHERE seq < ?1 AND status IN (SELECT value FROM json_each(?2))
           AND (?3 IS NULL OR owner = ?3) AND (?4 IS NULL OR tool = ?4) AND (?5 IS NULL OR plugin = ?5)
           AND (?6 IS NULL OR created_at >= ?6) AND (?7 IS NULL OR created_at < ?7)
         ORDER BY seq DESC LIMIT ?8"
    ))?;
    let rows = select.query_map(
        params![
            after.map_or(i64::MAX, |cursor| cursor.0),
            statuses,
            filter.owner,
            filter.tool,
            filter.plugin,
            filter.created_from,
            filter.created_before,
            limit as i64 + 1
        ],
        read_task,
    )?;
    Ok(TaskPage::cut(rows.collect::<rusqlite::Result<Vec<_>>>()?, limit))
}

/// Everything stored of task `id`.
pub(super) fn inspect(c: &Connection, id: &str) -> rusqlite::Result<Option<TaskDetail>> {
    let row = c
        .prepare_cached(&format!(
            "SELECT {COLUMNS}, started_at, checkpointed_at, o.kind, o.failure FROM tasks LEFT JOIN outcomes o ON o.task_id = tasks.id WHERE tasks.id = ?1"
        ))?
        .query_row(params![id], |r| {
            let kind: Option<String> = r.get(AFTER_COLUMNS + 2)?;
            Ok(TaskDetail {
                task: read_task(r)?,
                started_at: r.get(AFTER_COLUMNS)?,
                checkpointed_at: r.get(AFTER_COLUMNS + 1)?,
                outcome: kind.as_deref().and_then(OutcomeKind::parse),
                failure: r.get(AFTER_COLUMNS + 3)?,
                questions: Vec::new(),
                replica_heartbeat_at: None,
            })
        })
        .optional()?;
    let Some(mut detail) = row else { return Ok(None) };
    detail.questions = super::sqlite_inputs::questions(c, id)?.into_iter().filter(|q| q.answer.is_none()).collect();
    Ok(Some(detail))
}

/// Deletes each named task that has ended; see [`super::TaskStore::purge_tasks`].
pub(super) fn purge(c: &Connection, ids: &[String]) -> rusqlite::Result<Vec<(String, Purged)>> {
    let mut delete = c.prepare_cached("DELETE FROM tasks WHERE id = ?1 AND status IN ('completed', 'failed', 'cancelled') RETURNING status")?;
    let mut pages = c.prepare_cached("DELETE FROM result_pages WHERE id = ?1")?;
    let mut status = c.prepare_cached("SELECT status FROM tasks WHERE id = ?1")?;
    let mut done = Vec::with_capacity(ids.len());
    for id in ids {
        // Outcomes and questions go with the task (ON DELETE CASCADE); its kept result here.
        let verdict = if delete.query_row(params![id], |_| Ok(())).optional()?.is_some() {
            pages.execute(params![id])?;
            Purged::Deleted
        } else {
            match status.query_row(params![id], |r| r.get::<_, String>(0)).optional()? {
                Some(s) => Purged::NotEnded(TaskStatus::parse(&s).unwrap_or(TaskStatus::Working)),
                None => Purged::Unknown,
            }
        };
        done.push((id.clone(), verdict));
    }
    Ok(done)
}

/// The cancel notices after `after` and the newest notice's number.
pub(super) fn cancels_after(c: &Connection, after: Option<i64>) -> rusqlite::Result<(i64, Vec<String>)> {
    let Some(after) = after else {
        let newest = c.prepare_cached("SELECT coalesce(max(seq), 0) FROM task_notices")?.query_row([], |r| r.get(0))?;
        return Ok((newest, Vec::new()));
    };
    let mut select = c.prepare_cached("SELECT seq, task_id FROM task_notices WHERE seq > ?1 ORDER BY seq")?;
    let rows = select.query_map(params![after], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?;
    let mut newest = after;
    let mut ids = Vec::new();
    for row in rows {
        let (seq, id) = row?;
        newest = newest.max(seq);
        ids.push(id);
    }
    Ok((newest, ids))
}
