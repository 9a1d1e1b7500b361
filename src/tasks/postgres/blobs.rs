//! The PostgreSQL side of results kept by reference ([`crate::tasks::blobs`]): one row per page,
//! written in one transaction, read one row at a time.

use deadpool_postgres::Pool;

use super::pool::get;
use crate::tasks::blobs::{pages, PartKind, ResultPage, ResultPart, RESULT_PAGE_BYTES};
use crate::tasks::store::{StoreError, StoreResult};

/// Writes every page of `parts`, replacing what the result had, in one transaction.
pub(super) async fn keep(pool: StoreResult<Pool>, owner: String, id: String, expires_at: Option<i64>, parts: Vec<ResultPart>) -> StoreResult<()> {
    let mut client = get(&pool?).await?;
    let txn = client.transaction().await?;
    txn.execute("DELETE FROM corral_result_pages WHERE id = $1", &[&id]).await?;
    let insert = txn
        .prepare_cached(
            "INSERT INTO corral_result_pages (id, part, page, owner, expires_at, kind, mime_type, size, pages, data)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .await?;
    for part in &parts {
        let cut = pages(part.kind, &part.data, RESULT_PAGE_BYTES);
        let (number, size, count) = (part.part as i32, part.data.len() as i64, cut.len() as i32);
        for (n, page) in cut.iter().enumerate() {
            let n = n as i32;
            txn.execute(&insert, &[&id, &number, &n, &owner, &expires_at, &part.kind.as_str(), &part.mime_type, &size, &count, page]).await?;
        }
    }
    txn.commit().await?;
    Ok(())
}

/// One page, if `owner` owns it and it has not expired at `now_ms`.
pub(super) async fn page(pool: StoreResult<Pool>, owner: String, id: String, part: u32, page: u32, now_ms: i64) -> StoreResult<Option<ResultPage>> {
    let client = get(&pool?).await?;
    let statement = client
        .prepare_cached(
            "SELECT kind, mime_type, size, pages, data FROM corral_result_pages
             WHERE id = $1 AND part = $2 AND page = $3 AND owner = $4 AND (expires_at IS NULL OR expires_at > $5)",
        )
        .await?;
    let Some(row) = client.query_opt(&statement, &[&id, &(part as i32), &(page as i32), &owner, &now_ms]).await? else { return Ok(None) };
    let kind: String = row.try_get(0)?;
    Ok(Some(ResultPage {
        kind: PartKind::parse(&kind).ok_or_else(|| StoreError::Postgres(format!("a result page has an unknown kind {kind:?}")))?,
        mime_type: row.try_get(1)?,
        size: row.try_get::<_, i64>(2)? as u64,
        page,
        pages: row.try_get::<_, i32>(3)? as u32,
        data: row.try_get(4)?,
    }))
}

/// Deletes the pages that expired at `now_ms`.
pub(super) async fn purge(client: &tokio_postgres::Client, now_ms: i64) -> StoreResult<()> {
    client.execute("DELETE FROM corral_result_pages WHERE expires_at <= $1", &[&now_ms]).await?;
    Ok(())
}
