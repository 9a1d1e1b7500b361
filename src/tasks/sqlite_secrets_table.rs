//! The SQLite table of caller secrets, apart from the code that reads and writes it
//! (`sqlite_secrets`), so that the store's schema and that code each import it one way.

/// The table, created with the rest of the schema (version 12 added it).
pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS secrets (
    holder TEXT NOT NULL,
    plugin TEXT NOT NULL,
    name TEXT NOT NULL,
    key_id TEXT NOT NULL,
    nonce BLOB NOT NULL,
    sealed BLOB NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (holder, plugin, name)
) WITHOUT ROWID;
";
