//! Why the engine refused or failed a request: the errors every part of the engine and its
//! callers share.

use super::store::StoreError;

/// Why the engine refused or failed a request. The messages are what clients read.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// No such task for this owner.
    #[error("task not found")]
    NotFound,
    /// The task's TTL has passed.
    #[error("task has expired")]
    Expired,
    /// The task already ended (`tasks/cancel` of an ended task).
    #[error("task is already {0}")]
    Terminal(&'static str),
    /// `max_queued` tasks are waiting already.
    #[error("the host is overloaded: {queued} tasks are waiting (limit {limit}); try again later")]
    Overloaded {
        /// Tasks waiting now.
        queued: usize,
        /// `max_queued`.
        limit: usize,
    },
    /// The owner has `max_per_owner` unfinished tasks already.
    #[error("too many unfinished tasks: you have {active} (limit {limit}); wait for some to end or cancel them")]
    OwnerLimit {
        /// The owner's unfinished tasks in this host.
        active: usize,
        /// `max_per_owner`.
        limit: usize,
    },
    /// The engine is shutting down and takes no new tasks.
    #[error("the host is shutting down; try again later")]
    ShuttingDown,
    /// The store failed.
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for EngineError {
    /// A store that counts the caps across replicas (PostgreSQL) refuses an insert beyond them
    /// with the same errors as this host's own count.
    fn from(e: StoreError) -> EngineError {
        match e {
            StoreError::Full { queued, limit } => EngineError::Overloaded { queued, limit },
            StoreError::OwnerFull { active, limit } => EngineError::OwnerLimit { active, limit },
            e => EngineError::Store(e),
        }
    }
}
