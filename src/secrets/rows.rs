//! What a store keeps of a caller secret, and the trait each task store implements to keep it.
//!
//! A store sees sealed rows only: holder, plugin and name in the clear (they are what the
//! operator lists), the key id, the nonce and the ciphertext. The trait is small so each store
//! implements it beside its task tables, in the same database every replica shares.

use futures_util::future::BoxFuture;

/// One stored caller secret, as a store keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SealedSecret {
    /// Whose it is ([`super::Holder::as_str`]).
    pub holder: String,
    /// The plugin that declared it.
    pub plugin: String,
    /// Its name (the variable the plugin reads).
    pub name: String,
    /// The id of the key that sealed it.
    pub key_id: String,
    /// The nonce it was sealed with.
    pub nonce: Vec<u8>,
    /// The ciphertext with its tag.
    pub sealed: Vec<u8>,
    /// When it was first set (Unix milliseconds); kept when the value is replaced.
    pub created_at: i64,
    /// When its value was last set.
    pub updated_at: i64,
}

/// What may be shown of a stored secret: whose, which, when. Never the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretListing {
    /// Whose it is.
    pub holder: String,
    /// The plugin that declared it.
    pub plugin: String,
    /// Its name.
    pub name: String,
    /// When it was first set (Unix milliseconds).
    pub created_at: i64,
    /// When its value was last set (Unix milliseconds).
    pub updated_at: i64,
}

/// A store's failure, in its own words (which never hold a value: stores see sealed rows only).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("secret store: {0}")]
pub struct RowsError(pub String);

/// What a store's operations return.
pub type RowsFuture<T> = BoxFuture<'static, Result<T, RowsError>>;

/// A store of sealed caller secrets.
pub trait SecretRows: Send + Sync {
    /// Stores `row`, replacing the value of the same holder, plugin and name (and keeping its
    /// `created_at`).
    fn put_secret(&self, row: SealedSecret) -> RowsFuture<()>;

    /// The row of `holder`'s `plugin`/`name`, if set.
    fn get_secret(&self, holder: &str, plugin: &str, name: &str) -> RowsFuture<Option<SealedSecret>>;

    /// Every row (of `holder` only, when given), ordered by holder, plugin and name.
    fn list_secrets(&self, holder: Option<&str>) -> RowsFuture<Vec<SecretListing>>;

    /// Deletes a row; whether there was one.
    fn delete_secret(&self, holder: &str, plugin: &str, name: &str) -> RowsFuture<bool>;

    /// Every key id rows are sealed under, with how many rows each seals.
    fn secret_key_ids(&self) -> RowsFuture<Vec<(String, u64)>>;

    /// Every row sealed under `key_id`, for a rotation.
    fn secrets_sealed_under(&self, key_id: &str) -> RowsFuture<Vec<SealedSecret>>;

    /// Replaces each row's key id, nonce and ciphertext in one transaction, each only if the
    /// row still has the nonce it was read with (`old_nonce`): a value set meanwhile is not
    /// overwritten, and then nothing is (an error saying so). Returns the rows rewritten.
    fn reseal_secrets(&self, rows: Vec<(Vec<u8>, SealedSecret)>) -> RowsFuture<usize>;
}
