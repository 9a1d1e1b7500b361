//! The task store on PostgreSQL, for several corral replicas that share one database: any
//! replica answers for any task, and a dead replica's tasks are claimed by a live one.
//!
//! The rows are the SQLite store's, plus what replicas need: `corral_hosts` holds one row per
//! live replica with its heartbeat (replacing the lock files of `DB.hosts/`), and every task
//! row has an `epoch`, bumped each time a task changes hands, beside its `runner`. A worker's
//! writes are fenced on the runner (`… WHERE runner = $me`), so a replica that was taken for
//! dead and comes back writes nothing over what its successor wrote.
//!
//! Pieces: [`pool`] (connections, TLS), [`schema`] (versioned migrations under an advisory
//! lock), [`counts`] (the admission caps' counter rows), [`store`] (the [`TaskStore`](super::TaskStore) itself), [`hosts`] (heartbeats and
//! the claim of a dead replica's tasks), [`listen`] (`LISTEN/NOTIFY`, so a replica hears what
//! the others write), [`notify`] (which tells them, in batches after each write commits) and
//! [`secrets`] (sealed caller secrets, for `crate::secrets`).

mod blobs;
mod buckets;
mod counts;
mod hosts;
mod inputs;
mod listen;
mod notify;
mod operator;
mod pool;
mod schema;
mod secrets;
mod store;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

use std::time::Duration;

pub use store::PgStore;

/// Where and as whom a replica keeps its tasks in PostgreSQL.
#[derive(Clone, Debug)]
pub struct PgOptions {
    /// `postgres://user:password@host:port/db?sslmode=…`, as given to `--db`.
    pub url: String,
    /// This replica's runner id ([`Runners::id`](super::Runners::id)).
    pub host_id: String,
    /// A replica whose heartbeat is older than this is dead (`--host-expiry`).
    pub host_expiry: Duration,
    /// Connections in the pool at most.
    pub max_connections: usize,
    /// Tasks admitted and not yet started, across all replicas, at most (`--max-queued`): an
    /// insert beyond it is refused with [`StoreError::Full`](super::StoreError::Full).
    pub max_queued: Option<usize>,
    /// Unfinished tasks of one owner, across all replicas, at most (`--max-tasks-per-client`).
    pub max_per_owner: Option<usize>,
    /// Whether every commit waits until the server has flushed it to disk (`--db-sync power`).
    /// Without (`process`, the CLI's default) the pool's connections commit with
    /// `synchronous_commit = off`: the server acknowledges an admission, a `start`, a status or
    /// a checkpoint once it holds it in memory. That is a SQLite store's `process` durability:
    /// everything survives corral being killed, but a crash of the database server may lose the
    /// last fraction of a second of those writes (never half of one). The end of a task (its
    /// outcome and terminal status) always waits for the flush, which makes the task's earlier
    /// writes durable too: an end a client has seen stays.
    pub synchronous_commit: bool,
    /// Whether this store is a replica's: registered in `corral_hosts` with a heartbeat (and
    /// repairing the admission counters). An operator's store (`corral tasks`) runs no tasks,
    /// so it is not: no replica may take it for a host, nor claim tasks for it.
    pub replica: bool,
}

impl PgOptions {
    /// Options for `url` and host `host_id`, with a 15 s host expiry, 16 connections, no caps
    /// and synchronous commits.
    pub fn new(url: &str, host_id: &str) -> PgOptions {
        PgOptions {
            url: url.to_owned(),
            host_id: host_id.to_owned(),
            host_expiry: Duration::from_secs(15),
            max_connections: 16,
            max_queued: None,
            max_per_owner: None,
            synchronous_commit: true,
            replica: true,
        }
    }

    /// Options for an operator's store on `url`: not a replica (see [`PgOptions::replica`]),
    /// with a few connections.
    pub fn operator(url: &str) -> PgOptions {
        PgOptions { max_connections: 2, replica: false, ..PgOptions::new(url, "operator") }
    }
}

/// Whether `--db` names a PostgreSQL database rather than a SQLite file.
pub fn is_postgres_url(db: &str) -> bool {
    db.starts_with("postgres://") || db.starts_with("postgresql://")
}

/// `url` without its password, for messages and logs.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_owned() };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(at) => rest.split_at(at),
        None => (rest, ""),
    };
    match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _password)) => format!("{scheme}://{name}:***@{host}{tail}"),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

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

impl From<tokio_postgres::Error> for super::StoreError {
    fn from(e: tokio_postgres::Error) -> super::StoreError {
        super::StoreError::Postgres(describe(&e))
    }
}
