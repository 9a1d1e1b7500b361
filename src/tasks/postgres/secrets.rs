//! Caller secrets ([`SecretRows`]) in `corral_secrets`, shared by every replica: any replica
//! resolves any principal's secrets, and a rotation run anywhere is seen by all.

use deadpool_postgres::Pool;
use tokio_postgres::Row;

use super::pool::get;
use super::store::PgStore;
use crate::secrets::{RowsError, RowsFuture, SealedSecret, SecretListing, SecretRows};
use crate::tasks::store::{StoreError, StoreResult};

const COLUMNS: &str = "holder, plugin, name, key_id, nonce, sealed, created_at, updated_at";

fn read_row(r: &Row) -> Result<SealedSecret, tokio_postgres::Error> {
    Ok(SealedSecret {
        holder: r.try_get(0)?,
        plugin: r.try_get(1)?,
        name: r.try_get(2)?,
        key_id: r.try_get(3)?,
        nonce: r.try_get(4)?,
        sealed: r.try_get(5)?,
        created_at: r.try_get(6)?,
        updated_at: r.try_get(7)?,
    })
}

fn boxed<T: Send + 'static>(work: impl std::future::Future<Output = StoreResult<T>> + Send + 'static) -> RowsFuture<T> {
    Box::pin(async move { work.await.map_err(|e: StoreError| RowsError(e.to_string())) })
}

async fn put(pool: StoreResult<Pool>, row: SealedSecret) -> StoreResult<()> {
    let client = get(&pool?).await?;
    let statement = client
        .prepare_cached(&format!(
            "INSERT INTO corral_secrets ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (holder, plugin, name) DO UPDATE SET
                 key_id = EXCLUDED.key_id, nonce = EXCLUDED.nonce, sealed = EXCLUDED.sealed, updated_at = EXCLUDED.updated_at"
        ))
        .await?;
    client.execute(&statement, &[&row.holder, &row.plugin, &row.name, &row.key_id, &row.nonce, &row.sealed, &row.created_at, &row.updated_at]).await?;
    Ok(())
}

async fn one(pool: StoreResult<Pool>, holder: String, plugin: String, name: String) -> StoreResult<Option<SealedSecret>> {
    let client = get(&pool?).await?;
    let statement = client.prepare_cached(&format!("SELECT {COLUMNS} FROM corral_secrets WHERE holder = $1 AND plugin = $2 AND name = $3")).await?;
    let row = client.query_opt(&statement, &[&holder, &plugin, &name]).await?;
    Ok(row.as_ref().map(read_row).transpose()?)
}

async fn list(pool: StoreResult<Pool>, holder: Option<String>) -> StoreResult<Vec<SecretListing>> {
    let client = get(&pool?).await?;
    let statement = client
        .prepare_cached(
            "SELECT holder, plugin, name, created_at, updated_at FROM corral_secrets WHERE $1::text IS NULL OR holder = $1 ORDER BY holder, plugin, name",
        )
        .await?;
    let rows = client.query(&statement, &[&holder]).await?;
    rows.iter()
        .map(|r| Ok(SecretListing { holder: r.try_get(0)?, plugin: r.try_get(1)?, name: r.try_get(2)?, created_at: r.try_get(3)?, updated_at: r.try_get(4)? }))
        .collect()
}

async fn delete(pool: StoreResult<Pool>, holder: String, plugin: String, name: String) -> StoreResult<bool> {
    let client = get(&pool?).await?;
    let statement = client.prepare_cached("DELETE FROM corral_secrets WHERE holder = $1 AND plugin = $2 AND name = $3").await?;
    Ok(client.execute(&statement, &[&holder, &plugin, &name]).await? == 1)
}

async fn key_ids(pool: StoreResult<Pool>) -> StoreResult<Vec<(String, u64)>> {
    let client = get(&pool?).await?;
    let rows = client.query("SELECT key_id, count(*) FROM corral_secrets GROUP BY key_id ORDER BY key_id", &[]).await?;
    rows.iter().map(|r| Ok((r.try_get(0)?, r.try_get::<_, i64>(1)? as u64))).collect()
}

async fn under(pool: StoreResult<Pool>, key_id: String) -> StoreResult<Vec<SealedSecret>> {
    let client = get(&pool?).await?;
    let rows = client.query(&format!("SELECT {COLUMNS} FROM corral_secrets WHERE key_id = $1 ORDER BY holder, plugin, name"), &[&key_id]).await?;
    Ok(rows.iter().map(read_row).collect::<Result<_, _>>()?)
}

/// One transaction: each row rewritten only if it still has the nonce the rotation read; the
/// first that does not rolls everything back.
async fn reseal(pool: StoreResult<Pool>, rows: Vec<(Vec<u8>, SealedSecret)>) -> Result<usize, RowsError> {
    let failed = |e: StoreError| RowsError(e.to_string());
    let mut client = get(&pool.map_err(failed)?).await.map_err(failed)?;
    let txn = client.transaction().await.map_err(|e| failed(e.into()))?;
    let statement = txn
        .prepare("UPDATE corral_secrets SET key_id = $4, nonce = $5, sealed = $6 WHERE holder = $1 AND plugin = $2 AND name = $3 AND nonce = $7")
        .await
        .map_err(|e| failed(e.into()))?;
    for (old_nonce, row) in &rows {
        let updated = txn
            .execute(&statement, &[&row.holder, &row.plugin, &row.name, &row.key_id, &row.nonce, &row.sealed, old_nonce])
            .await
            .map_err(|e| failed(e.into()))?;
        if updated != 1 {
            // Dropping the transaction rolls it back.
            return Err(RowsError(format!(
                "secret {} of plugin {} ({}) changed since the rotation read it; nothing was rewritten: run the rotation again",
                row.name, row.plugin, row.holder
            )));
        }
    }
    txn.commit().await.map_err(|e| failed(e.into()))?;
    Ok(rows.len())
}

impl SecretRows for PgStore {
    fn put_secret(&self, row: SealedSecret) -> RowsFuture<()> {
        boxed(put(self.pool(), row))
    }

    fn get_secret(&self, holder: &str, plugin: &str, name: &str) -> RowsFuture<Option<SealedSecret>> {
        boxed(one(self.pool(), holder.to_owned(), plugin.to_owned(), name.to_owned()))
    }

    fn list_secrets(&self, holder: Option<&str>) -> RowsFuture<Vec<SecretListing>> {
        boxed(list(self.pool(), holder.map(str::to_owned)))
    }

    fn delete_secret(&self, holder: &str, plugin: &str, name: &str) -> RowsFuture<bool> {
        boxed(delete(self.pool(), holder.to_owned(), plugin.to_owned(), name.to_owned()))
    }

    fn secret_key_ids(&self) -> RowsFuture<Vec<(String, u64)>> {
        boxed(key_ids(self.pool()))
    }

    fn secrets_sealed_under(&self, key_id: &str) -> RowsFuture<Vec<SealedSecret>> {
        boxed(under(self.pool(), key_id.to_owned()))
    }

    fn reseal_secrets(&self, rows: Vec<(Vec<u8>, SealedSecret)>) -> RowsFuture<usize> {
        Box::pin(reseal(self.pool(), rows))
    }
}
