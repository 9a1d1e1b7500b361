//! Tasks: calls that outlive their request. The model and its transitions, the store (SQLite
//! behind a trait) and the engine that admits, queues, runs, cancels and expires them.

mod engine;
mod model;
mod runners;
mod sqlite;
mod store;

pub use engine::{Admission, Counts, Engine, EngineError, EngineSettings, Executor, Finished, TaskEvents};
pub use model::{now_ms, Outcome, Task, TaskStatus};
pub use runners::Runners;
pub use sqlite::{Durability, SqliteStore};
pub use store::{StoreError, StoreResult, TaskStore};
