//! The SQLite side of results kept by reference ([`super::blobs`]): one row per page.

use rusqlite::{params, Connection, OptionalExtension};

use super::blobs::{pages, parts_size, PartKind, ResultPage, ResultPart, ResultQuota, RESULT_PAGE_BYTES};
use super::store::StoreResult;

/// The table, created with the rest of the schema (version 4 added it).
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS result_pages (
    id TEXT NOT NULL,
    part INTEGER NOT NULL,
    page INTEGER NOT NULL,
    owner TEXT NOT NULL,
    expires_at INTEGER,
    kind TEXT NOT NULL,
    mime_type TEXT,
    size INTEGER NOT NULL,
    pages INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (id, part, page)
);
CREATE INDEX IF NOT EXISTS result_pages_by_expiry ON result_pages(expires_at) WHERE expires_at IS NOT NULL;
-- One row per kept part with its size, so the quota's sums read this index and no page's data.
CREATE INDEX IF NOT EXISTS result_pages_by_owner ON result_pages(owner, size) WHERE page = 0;
";

/// The bytes kept for `owner` and for everyone, the result `id` left out (a keep replaces it):
/// one scan of the part index. Each part counts once, by its first page's `size`.
const KEPT: &str = "SELECT COALESCE(SUM(CASE WHEN owner = ?1 THEN size END), 0), COALESCE(SUM(size), 0)
                    FROM result_pages WHERE page = 0 AND id <> ?2";

/// Writes every page of `parts` (replacing what the result had), inside the caller's transaction,
/// when they fit within `quota`; the refusal otherwise, having written nothing. The one writer
/// thread serializes keeps, so the count cannot change between the check and the write.
pub(super) fn keep(
    c: &Connection,
    owner: &str,
    id: &str,
    expires_at: Option<i64>,
    parts: &[ResultPart],
    quota: ResultQuota,
) -> rusqlite::Result<StoreResult<()>> {
    let (mine, all) = c.prepare_cached(KEPT)?.query_row(params![owner, id], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))?;
    if let Err(refused) = quota.admit(parts_size(parts), mine as u64, all as u64) {
        return Ok(Err(refused.into()));
    }
    c.execute("DELETE FROM result_pages WHERE id = ?1", params![id])?;
    let mut insert = c.prepare_cached(
        "INSERT INTO result_pages (id, part, page, owner, expires_at, kind, mime_type, size, pages, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?;
    for part in parts {
        let cut = pages(part.kind, &part.data, RESULT_PAGE_BYTES);
        for (n, page) in cut.iter().enumerate() {
            insert.execute(params![
                id,
                part.part,
                n as i64,
                owner,
                expires_at,
                part.kind.as_str(),
                part.mime_type,
                part.data.len() as i64,
                cut.len() as i64,
                page
            ])?;
        }
    }
    Ok(Ok(()))
}

/// The bytes of every kept part stored now.
pub(super) fn kept(c: &Connection) -> rusqlite::Result<u64> {
    c.prepare_cached("SELECT COALESCE(SUM(size), 0) FROM result_pages WHERE page = 0")?.query_row([], |r| r.get::<_, i64>(0)).map(|n| n as u64)
}

/// One page, if `owner` owns it and it has not expired at `now_ms`.
pub(super) fn page(c: &Connection, owner: &str, id: &str, part: u32, page: u32, now_ms: i64) -> rusqlite::Result<Option<ResultPage>> {
    c.prepare_cached(
        "SELECT kind, mime_type, size, pages, data FROM result_pages
         WHERE id = ?1 AND part = ?2 AND page = ?3 AND owner = ?4 AND (expires_at IS NULL OR expires_at > ?5)",
    )?
    .query_row(params![id, part, page, owner, now_ms], |r| {
        let kind: String = r.get(0)?;
        Ok(ResultPage {
            kind: PartKind::parse(&kind).ok_or_else(|| rusqlite::Error::InvalidColumnType(0, kind.clone(), rusqlite::types::Type::Text))?,
            mime_type: r.get(1)?,
            size: r.get::<_, i64>(2)? as u64,
            page,
            pages: r.get::<_, i64>(3)? as u32,
            data: r.get(4)?,
        })
    })
    .optional()
}

/// Deletes the pages that expired at `now_ms`.
pub(super) fn purge(c: &Connection, now_ms: i64) -> rusqlite::Result<usize> {
    c.execute("DELETE FROM result_pages WHERE expires_at IS NOT NULL AND expires_at <= ?1", params![now_ms])
}
