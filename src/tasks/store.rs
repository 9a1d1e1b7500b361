//! Where tasks live. SQLite today; a shared PostgreSQL store for several hosts can implement
//! the same trait.

use super::model::{Outcome, Task, TaskStatus};

pub type StoreResult<T> = Result<T, StoreError>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("task store {path}: {message}")]
    Open { path: String, message: String },
    #[error("task store: {0}")]
    Io(String),
}

/// Every write is durable when the call returns: a record before its `CreateTaskResult`
/// is sent, an outcome before its terminal status can be seen.
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task.
    fn insert(&self, task: &Task) -> StoreResult<()>;

    /// The task `id` if `owner` owns it.
    fn get(&self, owner: &str, id: &str) -> StoreResult<Option<Task>>;

    /// Up to `limit` of `owner`'s tasks with `seq` above `after`, in `seq` order.
    fn list(&self, owner: &str, after: i64, limit: usize) -> StoreResult<Vec<Task>>;

    /// Moves a task to a non-terminal status. False when the move is not allowed (e.g. the
    /// task already ended).
    fn set_status(&self, id: &str, status: TaskStatus, message: Option<&str>) -> StoreResult<bool>;

    /// Ends a task: its outcome and terminal status in one transaction. False when the task
    /// had already ended (a cancelled task stays cancelled).
    fn finish(&self, id: &str, status: TaskStatus, message: Option<&str>, outcome: &Outcome) -> StoreResult<bool>;

    /// The outcome of an ended task.
    fn outcome(&self, id: &str) -> StoreResult<Option<Outcome>>;

    /// The task `owner` created with this idempotency key, if it is still kept.
    fn find_by_key(&self, owner: &str, key: &str) -> StoreResult<Option<Task>>;

    /// Tasks that were running or waiting when the host stopped.
    fn unfinished(&self) -> StoreResult<Vec<Task>>;

    /// Moves an unfinished task from the dead host `from` to `to`. False when another host
    /// claimed it first or it has ended.
    fn claim(&self, id: &str, from: &str, to: &str) -> StoreResult<bool>;

    /// Deletes tasks (and outcomes) whose TTL has passed; returns how many.
    fn purge_expired(&self, now_ms: i64) -> StoreResult<usize>;

    /// Tasks per status, for metrics and tests.
    fn count_by_status(&self) -> StoreResult<Vec<(TaskStatus, u64)>>;
}
