//! The questions tasks wait on ([`TaskQuestion`]) in `corral_task_inputs`, one row per question,
//! deleted with its task. Recording answers is announced (`'<id> answered'`) by the caller,
//! through the [`Notifier`](super::notify::Notifier), once it has committed.

use deadpool_postgres::Pool;
use serde_json::Value;

use super::pool::get;
use crate::tasks::store::{StoreResult, TaskQuestion};

pub(super) async fn keep(pool: StoreResult<Pool>, id: String, questions: Vec<(String, Value)>) -> StoreResult<()> {
    let client = get(&pool?).await?;
    let (keys, requests): (Vec<String>, Vec<Value>) = questions.into_iter().unzip();
    let statement = client
        .prepare_cached(
            "INSERT INTO corral_task_inputs (task_id, key, request) SELECT $1, k, r FROM unnest($2::text[], $3::jsonb[]) AS q(k, r)
             ON CONFLICT (task_id, key) DO UPDATE SET request = EXCLUDED.request, answer = NULL",
        )
        .await?;
    client.execute(&statement, &[&id, &keys, &requests]).await?;
    Ok(())
}

pub(super) async fn questions(pool: StoreResult<Pool>, id: String) -> StoreResult<Vec<TaskQuestion>> {
    let client = get(&pool?).await?;
    let statement = client.prepare_cached("SELECT key, request, answer FROM corral_task_inputs WHERE task_id = $1 ORDER BY seq").await?;
    let rows = client.query(&statement, &[&id]).await?;
    rows.iter().map(|r| Ok(TaskQuestion { key: r.try_get(0)?, request: r.try_get(1)?, answer: r.try_get(2)? })).collect()
}

pub(super) async fn answer(pool: StoreResult<Pool>, id: String, answers: Vec<(String, Value)>) -> StoreResult<Vec<String>> {
    let client = get(&pool?).await?;
    let (keys, values): (Vec<String>, Vec<Value>) = answers.into_iter().unzip();
    let statement = client
        .prepare_cached(
            "UPDATE corral_task_inputs i SET answer = a.v FROM unnest($2::text[], $3::jsonb[]) AS a(k, v)
             WHERE i.task_id = $1 AND i.key = a.k AND i.answer IS NULL RETURNING i.key",
        )
        .await?;
    let rows = client.query(&statement, &[&id, &keys, &values]).await?;
    rows.iter().map(|r| Ok(r.try_get(0)?)).collect()
}

pub(super) async fn forget(pool: StoreResult<Pool>, id: String, keys: Vec<String>) -> StoreResult<()> {
    let client = get(&pool?).await?;
    let statement = client.prepare_cached("DELETE FROM corral_task_inputs WHERE task_id = $1 AND key = ANY($2)").await?;
    client.execute(&statement, &[&id, &keys]).await?;
    Ok(())
}
