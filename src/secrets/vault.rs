//! Caller secrets as the host uses them: sealed on the way into a store, opened on the way out.

use std::sync::Arc;

use super::holder::Holder;
use super::key::SecretsKey;
use super::rows::{RowsError, SealedSecret, SecretListing, SecretRows};
use super::value::Secret;

/// The operator's key over a store's rows.
#[derive(Clone)]
pub struct Vault {
    key: Arc<SecretsKey>,
    rows: Arc<dyn SecretRows>,
}

/// Why a secret could not be stored or read. Names and key ids only, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VaultError {
    /// The store holds rows another key sealed: this is not the key they were stored with.
    #[error(
        "the secrets in this store were sealed under key id {}, but the key file given has id {ours}: it is not their key \
         (after `corral secrets rotate-key`, give every host the new key file)",
        describe(.found)
    )]
    WrongKey {
        /// This host's key id.
        ours: String,
        /// The other key ids found, with how many rows each sealed.
        found: Vec<(String, u64)>,
    },
    /// One row was sealed under another key (rotated since this host started).
    #[error("secret {name} of plugin {plugin} is sealed under key id {row_key}, this host has key id {ours}: restart it with the current key file")]
    OtherKey {
        /// The plugin.
        plugin: String,
        /// The secret's name.
        name: String,
        /// The key id of the row.
        row_key: String,
        /// This host's.
        ours: String,
    },
    /// A row under this key that does not open: altered, or copied from another row.
    #[error("secret {name} of plugin {plugin} does not decrypt under this key: the row was altered or moved; set it again")]
    Unopenable {
        /// The plugin.
        plugin: String,
        /// The secret's name.
        name: String,
    },
    /// The store failed.
    #[error("{0}")]
    Store(#[from] RowsError),
}

fn describe(found: &[(String, u64)]) -> String {
    found.iter().map(|(id, n)| format!("{id} ({n} secret{})", if *n == 1 { "" } else { "s" })).collect::<Vec<_>>().join(", ")
}

/// What a rotation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rotated {
    /// Rows sealed again under the new key.
    pub rows: usize,
    /// The key id they were under.
    pub from: String,
    /// The key id they are under now.
    pub to: String,
}

impl Vault {
    /// `key` over `rows`, refused when the store holds rows another key sealed (a wrong key file
    /// stops the start rather than failing each call that needs a secret).
    pub async fn open(key: Arc<SecretsKey>, rows: Arc<dyn SecretRows>) -> Result<Vault, VaultError> {
        let found: Vec<(String, u64)> = rows.secret_key_ids().await?.into_iter().filter(|(id, _)| id != key.id()).collect();
        if !found.is_empty() {
            return Err(VaultError::WrongKey { ours: key.id().to_owned(), found });
        }
        Ok(Vault { key, rows })
    }

    /// The id of the key in use.
    pub fn key_id(&self) -> &str {
        self.key.id()
    }

    /// Stores `holder`'s `plugin`/`name`, replacing its value if set.
    pub async fn set(&self, holder: &Holder, plugin: &str, name: &str, value: &Secret) -> Result<(), VaultError> {
        let (nonce, sealed) = self.key.seal(holder, plugin, name, value);
        let now = now_ms();
        let row = SealedSecret {
            holder: holder.as_str().to_owned(),
            plugin: plugin.to_owned(),
            name: name.to_owned(),
            key_id: self.key.id().to_owned(),
            nonce: nonce.to_vec(),
            sealed,
            created_at: now,
            updated_at: now,
        };
        Ok(self.rows.put_secret(row).await?)
    }

    /// `holder`'s `plugin`/`name`, if set.
    pub async fn get(&self, holder: &Holder, plugin: &str, name: &str) -> Result<Option<Secret>, VaultError> {
        let Some(row) = self.rows.get_secret(holder.as_str(), plugin, name).await? else { return Ok(None) };
        if row.key_id != self.key.id() {
            return Err(VaultError::OtherKey { plugin: row.plugin, name: row.name, row_key: row.key_id, ours: self.key.id().to_owned() });
        }
        match self.key.open(&row.holder, &row.plugin, &row.name, &row.nonce, &row.sealed) {
            Some(value) => Ok(Some(value)),
            None => Err(VaultError::Unopenable { plugin: row.plugin, name: row.name }),
        }
    }

    /// What is stored (of `holder` only, when given): names and dates.
    pub async fn list(&self, holder: Option<&Holder>) -> Result<Vec<SecretListing>, VaultError> {
        Ok(self.rows.list_secrets(holder.map(Holder::as_str)).await?)
    }

    /// Deletes `holder`'s `plugin`/`name`; whether it was set.
    pub async fn delete(&self, holder: &Holder, plugin: &str, name: &str) -> Result<bool, VaultError> {
        Ok(self.rows.delete_secret(holder.as_str(), plugin, name).await?)
    }

    /// Seals every row again under `new`, in one transaction: afterwards only `new` opens them.
    /// A row that does not open under the current key stops it before anything is written.
    pub async fn rotate(&self, new: &SecretsKey) -> Result<Rotated, VaultError> {
        let rows = self.rows.secrets_sealed_under(self.key.id()).await?;
        let mut resealed = Vec::with_capacity(rows.len());
        for row in rows {
            let value = self
                .key
                .open(&row.holder, &row.plugin, &row.name, &row.nonce, &row.sealed)
                .ok_or_else(|| VaultError::Unopenable { plugin: row.plugin.clone(), name: row.name.clone() })?;
            let holder = Holder::from_stored(&row.holder);
            let (nonce, sealed) = new.seal(&holder, &row.plugin, &row.name, &value);
            let old_nonce = row.nonce.clone();
            resealed.push((old_nonce, SealedSecret { key_id: new.id().to_owned(), nonce: nonce.to_vec(), sealed, ..row }));
        }
        let rows = self.rows.reseal_secrets(resealed).await?;
        Ok(Rotated { rows, from: self.key.id().to_owned(), to: new.id().to_owned() })
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}
