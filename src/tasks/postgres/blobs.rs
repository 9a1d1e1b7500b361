//! The PostgreSQL side of results kept by reference ([`crate::tasks::blobs`]): one row per page,
//! written in one transaction, read one row at a time.

use deadpool_postgres::Pool;

use super::pool::get;
use crate::tasks::blobs::{pages, parts_size, PartKind, ResultPage, ResultPart, ResultQuota, RESULT_PAGE_BYTES};
use crate::tasks::store::{StoreError, StoreResult};

/// Keys the transaction lock every keep takes, so that two replicas cannot both see room for
/// their result and both write it (`corralRQ` in ASCII).
const QUOTA_LOCK: i64 = 0x636f_7272_616c_5251;

/// The migration that indexes kept parts by owner with their sizes, so the quota's sums read
/// the index and no page's data.
pub(super) const MIGRATION: &str = "
-- One entry per kept part with its size: the bounds on kept result bytes sum it.
CREATE INDEX corral_result_pages_by_owner ON corral_result_pages (owner, size) WHERE page = 0;
";

/// Writes every page of `parts`, replacing what the result had, in one transaction, when they fit
/// within `quota` counted over every replica's kept results; [`StoreError::OverQuota`] otherwise.
pub(super) async fn keep(
    pool: StoreResult<Pool>,
    owner: String,
    id: String,
    expires_at: Option<i64>,
    parts: Vec<ResultPart>,
    quota: ResultQuota,
) -> StoreResult<()> {
    let mut client = get(&pool?).await?;
    let txn = client.transaction().await?;
    // Keeps wait for one another only between this lock and their commit, one short transaction.
    txn.execute("SELECT pg_advisory_xact_lock($1)", &[&QUOTA_LOCK]).await?;
    let kept = txn
        .prepare_cached(
            "SELECT COALESCE(SUM(size) FILTER (WHERE owner = $1), 0)::BIGINT, COALESCE(SUM(size), 0)::BIGINT
             FROM corral_result_pages WHERE page = 0 AND id <> $2",
        )
        .await?;
    let row = txn.query_one(&kept, &[&owner, &id]).await?;
    let (mine, all): (i64, i64) = (row.try_get(0)?, row.try_get(1)?);
    quota.admit(parts_size(&parts), mine as u64, all as u64)?;
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

/// The bytes of every kept part stored now, on every replica.
pub(super) async fn kept(pool: StoreResult<Pool>) -> StoreResult<u64> {
    let client = get(&pool?).await?;
    let statement = client.prepare_cached("SELECT COALESCE(SUM(size), 0)::BIGINT FROM corral_result_pages WHERE page = 0").await?;
    Ok(client.query_one(&statement, &[]).await?.try_get::<_, i64>(0)? as u64)
}

/// Deletes the pages that expired at `now_ms`.
pub(super) async fn purge(client: &tokio_postgres::Client, now_ms: i64) -> StoreResult<()> {
    client.execute("DELETE FROM corral_result_pages WHERE expires_at <= $1", &[&now_ms]).await?;
    Ok(())
}
