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
//! [`secrets`] (sealed caller secrets, for `crate::secrets`, in the table of [`secrets_table`]).

mod blobs;
mod buckets;
mod channel;
mod counts;
mod errors;
mod hosts;
mod inputs;
mod listen;
mod notify;
mod operator;
mod options;
mod pool;
mod rows;
mod schema;
mod secrets;
mod secrets_table;
mod store;
#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

pub(crate) use errors::describe;
pub use options::{is_postgres_url, redacted, PgOptions};
pub use store::PgStore;
