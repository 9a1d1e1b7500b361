//! Call-rate buckets shared by replicas: one row per limited principal, refilled and taken
//! from in one statement, so every replica draws from the same bucket.
//!
//! The refill is computed from the database's clock (`clock_timestamp()`), so replicas whose
//! clocks disagree still agree on the bucket. The statement commits without waiting for the
//! disk (`synchronous_commit = off` for its own transaction): a bucket that loses its last
//! takes in a database crash gives a few calls too many, which is cheaper than a flush per call.
//! Only principals a `[[limit]] rate` holds come here; every other call never touches the store.

use super::pool::get;
use crate::tasks::store::StoreResult;

/// The table, a migration of `schema`.
pub(super) const MIGRATION: &str = "
-- Call-rate token buckets of principals a policy limits (`--policy`, `[[limit]] rate`).
CREATE TABLE corral_buckets (
    key TEXT PRIMARY KEY,
    tokens DOUBLE PRECISION NOT NULL,
    at_ms BIGINT NOT NULL,
    granted BOOLEAN NOT NULL
);
";

/// Takes a token from `key`'s bucket: whether one was there, and the tokens left.
pub(super) async fn take(pool: &deadpool_postgres::Pool, key: &str, per_second: f64, burst: u32) -> StoreResult<(bool, f64)> {
    let client = get(pool).await?;
    // `b.*` in the update is the row as it was; `refilled` is what it holds now, before the take.
    let statement = client
        .prepare_cached(
            "WITH now AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms, set_config('synchronous_commit', 'off', true))
             INSERT INTO corral_buckets AS b (key, tokens, at_ms, granted)
             SELECT $1, $3::float8 - 1, ms, true FROM now
             ON CONFLICT (key) DO UPDATE SET
                 tokens = least($3::float8, b.tokens + greatest(0, excluded.at_ms - b.at_ms) * $2::float8 / 1000)
                     - CASE WHEN least($3::float8, b.tokens + greatest(0, excluded.at_ms - b.at_ms) * $2::float8 / 1000) >= 1 THEN 1 ELSE 0 END,
                 at_ms = greatest(b.at_ms, excluded.at_ms),
                 granted = least($3::float8, b.tokens + greatest(0, excluded.at_ms - b.at_ms) * $2::float8 / 1000) >= 1
             RETURNING tokens, granted",
        )
        .await?;
    let row = client.query_one(&statement, &[&key, &per_second, &f64::from(burst)]).await?;
    let tokens: f64 = row.try_get(0)?;
    let granted: bool = row.try_get(1)?;
    Ok((granted, tokens))
}
