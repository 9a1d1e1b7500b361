//! The PostgreSQL table of caller secrets, apart from the code that reads and writes it
//! ([`super::secrets`]), so that the migrations and that code each import it one way.

/// The table, a migration of `schema`.
pub(super) const MIGRATION: &str = "
-- Caller secrets, sealed with the operator's key (src/secrets): no value is ever in the clear here.
CREATE TABLE corral_secrets (
    holder TEXT NOT NULL,
    plugin TEXT NOT NULL,
    name TEXT NOT NULL,
    key_id TEXT NOT NULL,
    nonce BYTEA NOT NULL,
    sealed BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (holder, plugin, name)
);
";
