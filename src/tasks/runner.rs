//! The engine's one port to whoever knows what a task does ([`TaskRunner`]), and what a running
//! task may do to its own record ([`TaskControl`]).
//!
//! Data flows one way: the server implements [`TaskRunner`] and calls down into the engine
//! through [`TaskControl`]; the engine never knows what a tool call, a guest or MCP is.

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use tokio::sync::watch;

use super::model::{Outcome, Progress, Task, TaskStatus};
use super::store::TaskStore;
use crate::cancel::CancelHandle;

/// Runs tasks; provided by the layer that knows what a tool call is.
pub trait TaskRunner: Send + Sync + 'static {
    /// Runs `task` until it ends or `control.cancel()` fires. What it returns is stored as it
    /// is, unless the task was cancelled meanwhile (then `cancelled` stays).
    fn run(&self, task: &Task, control: TaskControl) -> BoxFuture<'static, Finished>;

    /// Whether running `tool` again after a host restart is safe. Asynchronous because the
    /// answer may have to wait: recovery runs as the host starts, maybe before its tools are
    /// known.
    fn may_rerun(&self, tool: &str) -> BoxFuture<'static, bool>;

    /// Whether `owner` can still reach its tasks once the host that held them is gone. An
    /// owner that lived only in that host's memory (an HTTP session without auth) cannot, so
    /// recovery cancels its unfinished tasks instead of running them for nobody.
    fn outlives_host(&self, owner: &str) -> bool;

    /// What `tool`'s plugin says about running its tasks again (`resumable`, `retries`); by
    /// default nothing.
    fn recovery(&self, tool: &str) -> BoxFuture<'static, super::Recovery> {
        let _ = tool;
        super::resume::no_recovery()
    }
}

/// How a task runs for the requestor that admitted it on this host, made by the layer that knows
/// what a requestor is (and so typed there, not here): the engine only calls it, once, with the
/// task as the store started it. A task without one (recovered after a restart, or claimed from
/// another replica) runs through [`TaskRunner::run`].
pub type LocalRun = Box<dyn FnOnce(&Task, TaskControl) -> BoxFuture<'static, Finished> + Send>;

/// How an admitted task gets going on this host.
pub enum Launch {
    /// Queued for a worker, which runs it through [`TaskRunner::run`].
    Queue,
    /// Queued for a worker, which runs it with this [`LocalRun`] while its requestor is here.
    QueueFor(LocalRun),
    /// The call already runs (a 2026-07-28 call adopted past `task_after`): stored started, it
    /// takes no worker and waits in no queue (its guest is mid-run), and from this moment the
    /// engine holds its `cancel` handle, so `tasks/cancel`, shutdown and a cancelled request
    /// stop the guest at once. `run` awaits the call and says how it ended.
    Running {
        /// The handle the running guest watches.
        cancel: CancelHandle,
        /// Awaits the running call.
        run: LocalRun,
    },
}

/// How a task's run ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Finished {
    /// `completed` or `failed`.
    pub status: TaskStatus,
    /// Shown as the task's `statusMessage`.
    pub message: Option<String>,
    /// What `tasks/result` answers, opaque to the engine.
    pub outcome: Outcome,
}

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
    pub(super) result_quota: super::blobs::ResultQuota,
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

/// A task this process has queued or is running.
pub(super) struct Live {
    pub(super) id: String,
    pub(super) owner: String,
    pub(super) cancel: CancelHandle,
    /// How a worker runs the task for its requestor here (taken by the worker that starts it).
    pub(super) local_run: Mutex<Option<LocalRun>>,
    pub(super) events: Option<Arc<dyn TaskEvents>>,
    /// Set when the engine itself stopped the task (`tasks/cancel`, or another replica ended or
    /// claimed it), which has stored its end already: the run then writes nothing.
    pub(super) stopped: std::sync::atomic::AtomicBool,
    /// The newest progress message, shown as `statusMessage` while working.
    pub(super) message: Mutex<Option<String>>,
    /// Becomes true once the task ended in this process; `tasks/result` waits on it.
    pub(super) done: watch::Sender<bool>,
}

impl Live {
    /// Stops the run for a reason the store has recorded (see `stopped`).
    pub(super) fn stop(&self) {
        self.stopped.store(true, std::sync::atomic::Ordering::Release);
        self.cancel.cancel();
    }

    /// Whether the engine stopped the run itself (see `stopped`).
    pub(super) fn stopped_by_engine(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::Acquire)
    }

    pub(super) fn has_ended(&self) -> bool {
        *self.done.borrow()
    }

    /// Tells the requestor about `task`, the row a write returned.
    pub(super) fn announce(&self, task: &Task) {
        if let Some(events) = &self.events {
            events.status_changed(task);
        }
    }
}
