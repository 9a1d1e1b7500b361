//! The SQLite side of caller secrets ([`SecretRows`]): sealed rows in `secrets`, beside the
//! tasks, written through the store's one writer like everything else.

use rusqlite::{params, Connection, OptionalExtension, Row};

use super::sqlite::SqliteStore;
use super::store::StoreError;
use crate::secrets::{RowsError, RowsFuture, SealedSecret, SecretListing, SecretRows};

const COLUMNS: &str = "holder, plugin, name, key_id, nonce, sealed, created_at, updated_at";

fn read_row(r: &Row) -> rusqlite::Result<SealedSecret> {
    Ok(SealedSecret {
        holder: r.get(0)?,
        plugin: r.get(1)?,
        name: r.get(2)?,
        key_id: r.get(3)?,
        nonce: r.get(4)?,
        sealed: r.get(5)?,
        created_at: r.get(6)?,
        updated_at: r.get(7)?,
    })
}

fn rows_error(e: StoreError) -> RowsError {
    RowsError(e.to_string())
}

/// A reseal that found a row changed since it was read: nothing of it is written.
const CHANGED: &str = "changed since the rotation read it";

impl SecretRows for SqliteStore {
    fn put_secret(&self, row: SealedSecret) -> RowsFuture<()> {
        let write = self.write(move |c| {
            c.prepare_cached(&format!(
                "INSERT INTO secrets ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT (holder, plugin, name) DO UPDATE SET
                     key_id = excluded.key_id, nonce = excluded.nonce, sealed = excluded.sealed, updated_at = excluded.updated_at"
            ))?
            .execute(params![row.holder, row.plugin, row.name, row.key_id, row.nonce, row.sealed, row.created_at, row.updated_at])?;
            Ok(())
        });
        Box::pin(async move { write.await.map_err(rows_error) })
    }

    fn get_secret(&self, holder: &str, plugin: &str, name: &str) -> RowsFuture<Option<SealedSecret>> {
        let (holder, plugin, name) = (holder.to_owned(), plugin.to_owned(), name.to_owned());
        let read = self.read(move |c| {
            c.prepare_cached(&format!("SELECT {COLUMNS} FROM secrets WHERE holder = ?1 AND plugin = ?2 AND name = ?3"))?
                .query_row(params![holder, plugin, name], read_row)
                .optional()
        });
        Box::pin(async move { read.await.map_err(rows_error) })
    }

    fn list_secrets(&self, holder: Option<&str>) -> RowsFuture<Vec<SecretListing>> {
        let holder = holder.map(str::to_owned);
        let read = self.read(move |c| {
            let mut select = c.prepare_cached(
                "SELECT holder, plugin, name, created_at, updated_at FROM secrets WHERE ?1 IS NULL OR holder = ?1 ORDER BY holder, plugin, name",
            )?;
            let rows = select.query_map(params![holder], |r| {
                Ok(SecretListing { holder: r.get(0)?, plugin: r.get(1)?, name: r.get(2)?, created_at: r.get(3)?, updated_at: r.get(4)? })
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        });
        Box::pin(async move { read.await.map_err(rows_error) })
    }

    fn delete_secret(&self, holder: &str, plugin: &str, name: &str) -> RowsFuture<bool> {
        let (holder, plugin, name) = (holder.to_owned(), plugin.to_owned(), name.to_owned());
        let write = self.write(move |c| {
            Ok(c.prepare_cached("DELETE FROM secrets WHERE holder = ?1 AND plugin = ?2 AND name = ?3")?.execute(params![holder, plugin, name])? == 1)
        });
        Box::pin(async move { write.await.map_err(rows_error) })
    }

    fn secret_key_ids(&self) -> RowsFuture<Vec<(String, u64)>> {
        let read = self.read(|c| {
            let mut select = c.prepare_cached("SELECT key_id, count(*) FROM secrets GROUP BY key_id ORDER BY key_id")?;
            let rows = select.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)? as u64)))?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        });
        Box::pin(async move { read.await.map_err(rows_error) })
    }

    fn secrets_sealed_under(&self, key_id: &str) -> RowsFuture<Vec<SealedSecret>> {
        let key_id = key_id.to_owned();
        let read = self.read(move |c| {
            let mut select = c.prepare_cached(&format!("SELECT {COLUMNS} FROM secrets WHERE key_id = ?1 ORDER BY holder, plugin, name"))?;
            let rows = select.query_map(params![key_id], read_row)?;
            rows.collect::<rusqlite::Result<Vec<_>>>()
        });
        Box::pin(async move { read.await.map_err(rows_error) })
    }

    fn reseal_secrets(&self, rows: Vec<(Vec<u8>, SealedSecret)>) -> RowsFuture<usize> {
        let count = rows.len();
        let write = self.write(move |c| reseal(c, &rows));
        Box::pin(async move {
            match write.await.map_err(rows_error)? {
                Some(changed) => Err(RowsError(format!("secret {changed} {CHANGED}; nothing was rewritten: run the rotation again"))),
                None => Ok(count),
            }
        })
    }
}

/// Checks every row first (the writer thread runs one operation at a time, so nothing comes
/// between the check and the writes), then rewrites them all; the first changed row otherwise.
fn reseal(c: &Connection, rows: &[(Vec<u8>, SealedSecret)]) -> rusqlite::Result<Option<String>> {
    let mut check = c.prepare_cached("SELECT nonce FROM secrets WHERE holder = ?1 AND plugin = ?2 AND name = ?3")?;
    for (old_nonce, row) in rows {
        let nonce: Option<Vec<u8>> = check.query_row(params![row.holder, row.plugin, row.name], |r| r.get(0)).optional()?;
        if nonce.as_ref() != Some(old_nonce) {
            return Ok(Some(format!("{} of plugin {} ({})", row.name, row.plugin, row.holder)));
        }
    }
    let mut update = c.prepare_cached("UPDATE secrets SET key_id = ?4, nonce = ?5, sealed = ?6 WHERE holder = ?1 AND plugin = ?2 AND name = ?3")?;
    for (_, row) in rows {
        update.execute(params![row.holder, row.plugin, row.name, row.key_id, row.nonce, row.sealed])?;
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::tasks::{Durability, TaskStore};

    #[tokio::test]
    async fn a_file_store_keeps_caller_secrets_sealed_and_rotates_them() {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(SqliteStore::open(&dir.path().join("tasks.db"), Durability::Process).unwrap());
        let base = dir.path().to_owned();
        // The database file and its WAL, whatever the checkpointer has copied yet.
        let raw = async || {
            let mut bytes = Vec::new();
            for entry in std::fs::read_dir(&base).unwrap() {
                bytes.extend(std::fs::read(entry.unwrap().path()).unwrap_or_default());
            }
            bytes
        };
        crate::secrets::suite::run(store.clone(), raw).await;
        store.close().await;
    }

    #[tokio::test]
    async fn a_version_11_database_gains_the_secrets_table() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.db");
        {
            let store = SqliteStore::open(&path, Durability::Process).unwrap();
            store.close().await;
        }
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("DROP TABLE secrets; PRAGMA user_version = 11;").unwrap();
        drop(conn);
        let store = SqliteStore::open(Path::new(&path), Durability::Process).unwrap();
        assert_eq!(store.secret_key_ids().await.unwrap(), vec![]);
        store.close().await;
        let version: i64 = Connection::open(&path).unwrap().query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap();
        assert_eq!(version, 12);
    }
}
