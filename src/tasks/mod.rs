//! Tasks: calls that outlive their request. The model and its transitions, the store (SQLite
//! or PostgreSQL behind an async trait) and the engine that admits, queues, runs, cancels and expires them.
//!
//! A leaf: it knows nothing of MCP, the runtime or the server. Whoever runs tasks implements
//! [`TaskRunner`] and gets a [`TaskControl`] for each run; outcomes are opaque values.

mod audit;
mod blobs;
mod canceller;
mod capacity;
mod control;
mod engine;
mod error;
mod events;
mod finish;
mod follow;
mod health;
mod input;
mod live;
mod model;
mod operator;
mod pending;
mod postgres;
mod recovering;
mod recovery;
mod relay;
mod resume;
mod retry;
mod runner;
mod runners;
mod settings;
mod sqlite;
mod sqlite_blobs;
mod sqlite_inputs;
mod sqlite_operator;
mod sqlite_rows;
mod sqlite_secrets;
mod sqlite_secrets_table;
mod state;
mod store;
#[cfg(test)]
pub(crate) mod store_suite;
mod work;

#[cfg(test)]
mod clock_tests;
#[cfg(test)]
mod engine_tests;
#[cfg(test)]
mod outage_tests;

pub use blobs::{pages as result_pages, PartKind, QuotaBound, ResultPage, ResultPart, ResultQuota, RESULT_PAGE_BYTES};
pub use canceller::Canceller;
pub use capacity::Counts;
pub use control::TaskControl;
pub use engine::{Admission, Engine};
pub use error::EngineError;
pub use events::TaskEvents;
pub use input::Inputs;
pub use model::{now_ms, Outcome, OutcomeKind, Progress, Task, TaskStatus};
pub use operator::{Purged, TaskCursor, TaskDetail, TaskFilter, TaskPage, MAX_PAGE};
pub use postgres::{is_postgres_url, redacted, PgOptions, PgStore};
pub use runner::{Finished, Launch, LocalRun, Recovery, TaskRunner};
pub use runners::Runners;
pub use settings::{TaskSettings, DEFAULT_HOST_EXPIRY};
pub use sqlite::{Durability, SqliteStore};
pub use store::{Replica, StoreError, StoreEvent, StoreFuture, StoreResult, TaskQuestion, TaskStore};
