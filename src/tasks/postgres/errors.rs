//! PostgreSQL's errors as the store reports them: with the server's own message.

use crate::tasks::store::StoreError;

/// What went wrong in a PostgreSQL call, with the server's own message when it sent one
/// (`tokio_postgres::Error`'s `Display` alone says only "db error").
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{}: {} (SQLSTATE {})", db.severity(), db.message(), db.code().code());
    }
    match std::error::Error::source(e) {
        Some(source) => format!("{e}: {source}"),
        None => e.to_string(),
    }
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> StoreError {
        StoreError::Postgres(describe(&e))
    }
}
