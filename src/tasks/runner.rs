//! The engine's one port to whoever knows what a task does ([`TaskRunner`]), and how an admitted
//! task gets going ([`Launch`]).
//!
//! Data flows one way: the server implements [`TaskRunner`] and calls down into the engine
//! through [`TaskControl`](super::TaskControl); the engine never knows what a tool call, a guest
//! or MCP is.

use futures_util::future::BoxFuture;

use super::control::TaskControl;
use super::model::{Outcome, Task, TaskStatus};
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
    fn recovery(&self, tool: &str) -> BoxFuture<'static, Recovery> {
        let _ = tool;
        Box::pin(async { Recovery::default() })
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

/// How a tool's task may run again after its host died: its plugin's manifest says.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recovery {
    /// `resumable = true`: a task that has checkpointed runs again from its last checkpoint
    /// even if its tool is not idempotent.
    pub resumable: bool,
    /// `retries = N`: at most N runs after the first (attempts are counted in the store);
    /// `None`: no bound.
    pub retries: Option<u32>,
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
