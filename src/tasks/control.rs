//! What a running task may do to its own record ([`TaskControl`]): notice cancellation, say
//! what it is doing, wait for its client, checkpoint, keep its result. Every write is fenced on
//! this host, so a host whose task was claimed by another (it was taken for dead) writes nothing.

use std::sync::Arc;

use super::blobs::{ResultPart, ResultQuota};
use super::error::EngineError;
use super::live::Live;
use super::model::{Progress, TaskStatus};
use super::store::TaskStore;
use crate::cancel::CancelHandle;

/// What a running task may do to its own record: notice cancellation, wait for its client, and
/// say what it is doing. Clones share the task.
#[derive(Clone)]
pub struct TaskControl {
    pub(super) live: Arc<Live>,
    pub(super) store: Arc<dyn TaskStore>,
    /// This host's runner id: every write is fenced on it, so a host whose task was claimed
    /// by another (it was taken for dead) writes nothing.
    pub(super) runner: Arc<str>,
    /// The bounds a kept result of this task counts against (the engine's settings).
    pub(super) result_quota: ResultQuota,
    /// Where the transitions it stores are recorded.
    pub(super) audit: crate::audit::Audit,
}

impl TaskControl {
    /// The task's id.
    pub fn id(&self) -> &str {
        &self.live.id
    }

    /// The task's stop button: fired by `tasks/cancel`, it also wakes the work.
    pub fn cancel(&self) -> &CancelHandle {
        &self.live.cancel
    }

    /// Marks the task `input_required` with `message` (stored, then announced). False when the
    /// task has ended or been cancelled meanwhile.
    pub async fn set_input_required(&self, message: String) -> bool {
        self.set_status(TaskStatus::InputRequired, Some(message)).await
    }

    /// Marks the task `working` again once its client answered (stored, then announced). False
    /// when the task has ended meanwhile.
    pub async fn set_working(&self) -> bool {
        self.set_status(TaskStatus::Working, None).await
    }

    /// Shows `message` as the task's `statusMessage` while it works (a progress report).
    ///
    /// Kept in memory, not stored nor announced: progress comes as often as a guest likes, and
    /// a commit and a `notifications/tasks/status` for each would cost more than the call. The
    /// progress itself reaches the client as `notifications/progress`.
    pub fn set_message(&self, message: String) {
        if !self.live.has_ended() {
            *self.live.message.lock().unwrap() = Some(message);
        }
    }

    /// Passes `progress` on to the other replicas sharing the store, for a task whose
    /// requestor is not here (another replica admitted it); see
    /// [`TaskStore::publish_progress`]. Nothing after the task ended.
    pub fn publish_progress(&self, progress: Progress) {
        if !self.live.has_ended() && !self.live.cancel.is_cancelled() {
            self.store.publish_progress(&self.live.id, &self.runner, progress);
        }
    }

    async fn set_status(&self, status: TaskStatus, message: Option<String>) -> bool {
        if self.live.has_ended() || self.live.cancel.is_cancelled() {
            return false;
        }
        *self.live.message.lock().unwrap() = message.clone();
        match self.store.set_status_as(&self.live.id, &self.runner, status, message.as_deref()).await {
            Ok(Some(task)) => {
                let transition = match status {
                    TaskStatus::InputRequired => crate::audit::Transition::InputRequired,
                    _ => crate::audit::Transition::Resumed,
                };
                super::audit::record(&self.audit, &task, transition);
                self.live.announce(&task);
                true
            }
            Ok(None) => false,
            Err(e) => {
                tracing::error!(task = %self.live.id, "storing the task's status failed: {e}");
                false
            }
        }
    }
}

impl TaskControl {
    /// Stores `state` as the task's checkpoint with its current progress message, replacing
    /// the previous one. Returns the checkpoint's number (1 for the first), or `None` when the
    /// task has ended (or another host took it): nothing was stored.
    pub async fn checkpoint(&self, state: Vec<u8>) -> Result<Option<u64>, EngineError> {
        let message = self.live.message.lock().unwrap().clone();
        Ok(self.store.checkpoint(&self.live.id, &self.runner, state, message.as_deref()).await?)
    }

    /// The task's last checkpoint and its number, if it has one: what a resumed run starts from.
    pub async fn last_checkpoint(&self) -> Result<Option<(u64, Vec<u8>)>, EngineError> {
        Ok(self.store.checkpoint_state(&self.live.id).await?)
    }

    /// Keeps `parts` of this task's result with the task: owned by its owner and deleted with it
    /// (`expires_at` is the task's expiry). Written before the task ends, so a client that sees
    /// the task ended can read them.
    pub async fn keep_result(&self, expires_at: Option<i64>, parts: Vec<ResultPart>) -> Result<(), EngineError> {
        Ok(self.store.keep_result(&self.live.owner, &self.live.id, expires_at, parts, self.result_quota).await?)
    }
}
