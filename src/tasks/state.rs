//! What the engine's tasks share: the store, the runner, and the engine's parts, each owning its
//! own state ([`Capacity`], [`LiveTasks`], [`Relays`], [`PendingEnds`], [`StoreHealth`],
//! [`Recovering`], [`Inputs`]). The engine's own loops (`work`, `follow`, `recovery`) and the
//! [`Engine`](super::Engine) read them through an [`Inner`]; none of the parts knows the others
//! but what it was handed when made.

use std::sync::Arc;

use tokio::sync::{mpsc, Notify};

use super::capacity::Capacity;
use super::control::TaskControl;
use super::events::TaskEvents;
use super::health::StoreHealth;
use super::input::Inputs;
use super::live::{Live, LiveTasks};
use super::model::Task;
use super::pending::PendingEnds;
use super::recovering::Recovering;
use super::relay::Relays;
use super::runner::{LocalRun, TaskRunner};
use super::runners::Runners;
use super::settings::TaskSettings;
use super::store::TaskStore;
use crate::cancel::{CancelHandle, Wake};

/// The engine's shared state; see the module doc.
pub(super) struct Inner {
    pub(super) store: Arc<dyn TaskStore>,
    pub(super) runners: Runners,
    pub(super) settings: TaskSettings,
    pub(super) runner: Arc<dyn TaskRunner>,
    /// Wakes a running task's work when it is cancelled.
    pub(super) wake: Wake,
    /// The slots of queued and running tasks, and of each owner's.
    pub(super) capacity: Arc<Capacity>,
    /// The tasks queued or running here.
    pub(super) live: Arc<LiveTasks>,
    /// To the workers. Unbounded as a channel, bounded in fact: every send follows a reserved
    /// queue slot, and admission refuses beyond `max_queued` (recovery adds the orphans it
    /// claims, at most the tasks a dead host had).
    pub(super) queue: mpsc::UnboundedSender<Queued>,
    /// Wakes `follow::spread` (a shared store only): another host admitted a task, or a worker
    /// here went idle, so this host may take tasks that wait on a busy replica.
    pub(super) spread: Notify,
    /// Tasks admitted here that run on another replica, whose status changes this host relays
    /// to the session that created them.
    pub(super) relays: Relays,
    /// Ends of runs the store could not take yet, written once it answers.
    pub(super) pending: Arc<PendingEnds>,
    /// What this host has seen of the store: pings, failures, since when it answers.
    pub(super) health: Arc<StoreHealth>,
    /// Recovered tasks whose verdict waits for their plugin; reads of them wait for it.
    pub(super) recovering: Recovering,
    /// The questions tasks wait on, and their answers.
    pub(super) inputs: Inputs,
}

/// A queued task: its id and owner (every store read is scoped by owner), and how it runs for
/// its requestor here, when it has one here.
pub(super) struct Queued {
    pub(super) id: String,
    pub(super) owner: String,
    pub(super) local_run: Option<LocalRun>,
}

impl Inner {
    /// The parts made for `store` and `settings`; queued tasks go to `queue`.
    pub(super) fn new(
        store: Arc<dyn TaskStore>,
        runners: Runners,
        settings: TaskSettings,
        runner: Arc<dyn TaskRunner>,
        wake: Wake,
        queue: mpsc::UnboundedSender<Queued>,
    ) -> Inner {
        let me: Arc<str> = runners.id().into();
        let capacity = Capacity::new(settings.max_queued, settings.max_per_owner, settings.max_running);
        let live = Arc::new(LiveTasks::new(capacity.clone()));
        let health = Arc::new(StoreHealth::new(store.clone(), runners.is_shared(), settings.host_expiry));
        let pending = Arc::new(PendingEnds::new(store.clone(), me.clone(), settings.audit.clone(), live.clone(), health.clone()));
        Inner {
            relays: Relays::new(store.clone(), me),
            inputs: Inputs::new(store.clone(), settings.poll_interval),
            store,
            runners,
            settings,
            runner,
            wake,
            capacity,
            live,
            queue,
            spread: Notify::new(),
            pending,
            health,
            recovering: Recovering::default(),
        }
    }

    /// Makes `task` live in this process and hands it to the workers. Its queue and owner
    /// slots are already reserved.
    pub(super) fn enqueue(&self, task: &Task, local_run: Option<LocalRun>, events: Option<Arc<dyn TaskEvents>>) {
        self.live.insert(task, events, CancelHandle::new(self.wake.clone()));
        if self.queue.send(Queued { id: task.id.clone(), owner: task.owner.clone(), local_run }).is_err() {
            // The workers stopped (shutdown): the task stays `working` in the store for the
            // next host to recover.
            tracing::warn!(task = %task.id, "the engine is shutting down; the task waits for the next start");
            self.capacity.unqueued();
            self.live.retire(&task.id);
        }
    }

    /// The control a run of `live` gets: every write fenced on this host.
    pub(super) fn control(&self, live: &Arc<Live>) -> TaskControl {
        TaskControl {
            live: live.clone(),
            store: self.store.clone(),
            runner: self.runners.id().into(),
            result_quota: self.settings.result_quota,
            audit: self.settings.audit.clone(),
        }
    }

    /// Whether this host may take on tasks it did not admit (see `health`).
    pub(super) fn may_claim(&self) -> bool {
        self.health.may_claim(self.pending.len())
    }
}
