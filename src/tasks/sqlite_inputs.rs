//! The SQLite side of the questions tasks wait on ([`TaskQuestion`]): one row per question,
//! deleted with its task.

use rusqlite::{params, Connection};
use serde_json::Value;

use super::store::TaskQuestion;

/// The table, created with the rest of the schema (version 6 added it).
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS task_inputs (
    task_id TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    request TEXT NOT NULL,
    answer TEXT,
    PRIMARY KEY (task_id, key)
);
";

pub(super) fn keep(c: &Connection, id: &str, questions: &[(String, Value)]) -> rusqlite::Result<()> {
    let mut insert = c.prepare_cached("INSERT OR REPLACE INTO task_inputs (task_id, key, request) VALUES (?1, ?2, ?3)")?;
    for (key, request) in questions {
        insert.execute(params![id, key, request.to_string()])?;
    }
    Ok(())
}

pub(super) fn questions(c: &Connection, id: &str) -> rusqlite::Result<Vec<TaskQuestion>> {
    let mut select = c.prepare_cached("SELECT key, request, answer FROM task_inputs WHERE task_id = ?1 ORDER BY rowid")?;
    let rows = select.query_map(params![id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, Option<String>>(2)?)))?;
    rows.map(|row| {
        let (key, request, answer) = row?;
        let json = |text: &str| {
            serde_json::from_str::<Value>(text).map_err(|e| rusqlite::Error::FromSqlConversionFailure(1, rusqlite::types::Type::Text, Box::new(e)))
        };
        Ok(TaskQuestion { key, request: json(&request)?, answer: answer.as_deref().map(json).transpose()? })
    })
    .collect()
}

pub(super) fn answer(c: &Connection, id: &str, answers: &[(String, Value)]) -> rusqlite::Result<Vec<String>> {
    let mut update = c.prepare_cached("UPDATE task_inputs SET answer = ?3 WHERE task_id = ?1 AND key = ?2 AND answer IS NULL")?;
    let mut recorded = Vec::new();
    for (key, answer) in answers {
        if update.execute(params![id, key, answer.to_string()])? == 1 {
            recorded.push(key.clone());
        }
    }
    Ok(recorded)
}

pub(super) fn forget(c: &Connection, id: &str, keys: &[String]) -> rusqlite::Result<()> {
    let mut delete = c.prepare_cached("DELETE FROM task_inputs WHERE task_id = ?1 AND key = ?2")?;
    for key in keys {
        delete.execute(params![id, key])?;
    }
    Ok(())
}
