//! The port through which a task's requestor hears of it: its status changes and, for a task that
//! runs on another replica, its progress.

use super::model::{Progress, Task};

/// Receives a task's status changes (`notifications/tasks/status`).
pub trait TaskEvents: Send + Sync {
    /// `task` as the store wrote it.
    fn status_changed(&self, task: &Task);

    /// `progress` of a task that runs on another replica, for the request's `progressToken`
    /// (`token`): a task that runs here reports to its requestor directly, through the runner.
    fn progress(&self, token: &serde_json::Value, progress: &Progress) {
        let _ = (token, progress);
    }
}
