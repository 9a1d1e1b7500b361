//! The task engine: admission, a bounded queue, a bounded worker pool, cancellation, results.
//!
//! Admission never waits for a worker: it checks capacity, writes the task record durably and
//! queues the task id; a worker picks it up later. Everything a task produces goes through the
//! store first, so what a client reads after a restart is what it would have read before.
//!
//! Lifetimes: [`Engine::start`] spawns the workers and the reaper; they stop when the caller's
//! shutdown token fires, when [`Engine::shutdown`] is called or when the `Engine` is dropped.
//! `shutdown` also waits for them and then closes the store.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::audit;
use super::finish::FinishOnDrop;
use super::health::StoreHealth;
use super::model::{now_ms, Outcome, Task, TaskStatus};
use super::pending::{self, PendingEnds};
use super::relay::Relays;
use super::runner::{Launch, Live, LocalRun, TaskControl, TaskEvents, TaskRunner};
use super::runners::Runners;
use super::settings::TaskSettings;
use super::store::{StoreError, StoreEvent, TaskStore};
use super::work;
use crate::audit::Transition;
use crate::cancel::{CancelHandle, Wake};
use crate::telemetry::trace;
use tracing::Instrument;

/// A task call that passed the protocol checks.
pub struct Admission {
    /// Who may see and steer the task.
    pub owner: String,
    /// The tool to call.
    pub tool: String,
    /// The plugin that serves it, kept with the task for operators.
    pub plugin: Option<String>,
    /// The call's arguments, already validated.
    pub arguments: Value,
    /// The TTL the client asked for, in milliseconds.
    pub requested_ttl_ms: Option<i64>,
    /// The request's `progressToken`.
    pub progress_token: Option<Value>,
    /// The owner's idempotency key: the same key names the same task while it is kept.
    pub idempotency_key: Option<String>,
    /// How the task gets going here: queued (for its requestor, when it has one here) or
    /// already running.
    pub launch: Launch,
    /// Told about every status change while the requestor is connected.
    pub events: Option<Arc<dyn TaskEvents>>,
    /// Kept with the task as [`Task::client_capabilities`], opaque to the engine.
    pub client_capabilities: Option<Value>,
    /// The creating request's trace context, kept as [`Task::trace_context`].
    pub trace_context: Option<String>,
    /// A cap of the owner's own on its unfinished tasks, below `max_per_owner` (a policy's
    /// `max-active-tasks`); `None`: only `max_per_owner`.
    pub owner_cap: Option<usize>,
}

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

/// Tasks this process has queued and is running.
#[derive(Default, Clone, Copy, Debug)]
pub struct Counts {
    /// Admitted (or recovered) and waiting for a worker.
    pub queued: usize,
    /// On a worker now.
    pub running: usize,
}

/// The task engine; see the module doc.
pub struct Engine {
    pub(super) inner: Arc<Inner>,
    /// Stops the workers and the reaper: a child of the caller's shutdown token.
    stop: CancellationToken,
    /// The workers and the reaper, waited for by [`Engine::shutdown`].
    tracker: TaskTracker,
}

pub(super) struct Inner {
    pub(super) store: Arc<dyn TaskStore>,
    pub(super) runners: Runners,
    pub(super) settings: TaskSettings,
    pub(super) runner: Arc<dyn TaskRunner>,
    /// Wakes a running task's work when it is cancelled.
    pub(super) wake: Wake,
    pub(super) live: Mutex<HashMap<String, Arc<Live>>>,
    pub(super) counts: Mutex<Counts>,
    /// Unfinished tasks per owner in this host.
    pub(super) per_owner: Mutex<HashMap<String, usize>>,
    /// To the workers. Unbounded as a channel, bounded in fact: every send follows a reserved
    /// `counts.queued` slot, and admission refuses beyond `max_queued` (recovery adds the
    /// orphans it claims, at most the tasks a dead host had).
    pub(super) queue: mpsc::UnboundedSender<Queued>,
    /// Wakes `work::spread` (a shared store only): another host admitted a task, or a worker
    /// here went idle, so this host may take tasks that wait on a busy replica.
    pub(super) spread: Arc<tokio::sync::Notify>,
    /// Tasks admitted here that run on another replica, whose status changes this host relays
    /// to the session that created them.
    pub(super) relays: Relays,
    /// Bumped whenever this host records answers to a task's questions, so a guest waiting here
    /// for them reads them at once (answers recorded elsewhere come as [`StoreEvent::Answered`]).
    pub(super) answered: watch::Sender<u64>,
    /// Ends of runs the store could not take yet, written by `pending::flush` once it answers.
    pub(super) pending: PendingEnds,
    /// The last readiness ping of the store.
    pub(super) health: StoreHealth,
}

/// A queued task: its id and owner (every store read is scoped by owner).
pub(super) struct Queued {
    pub(super) id: String,
    pub(super) owner: String,
}

impl Engine {
    /// Starts the workers and the reaper, and recovers tasks a previous host left unfinished.
    /// They stop when `shutdown` fires (or [`Engine::shutdown`] is called, or the engine is
    /// dropped). `wake` makes each task's [`CancelHandle`] wake its work.
    pub async fn start(
        store: Arc<dyn TaskStore>,
        runners: Runners,
        settings: TaskSettings,
        runner: Arc<dyn TaskRunner>,
        wake: Wake,
        shutdown: CancellationToken,
    ) -> Result<Engine, EngineError> {
        let (queue, receiver) = mpsc::unbounded_channel();
        let inner = Arc::new(Inner {
            store,
            runners,
            settings,
            runner,
            wake,
            live: Mutex::new(HashMap::new()),
            counts: Mutex::new(Counts::default()),
            per_owner: Mutex::new(HashMap::new()),
            queue,
            spread: Arc::new(tokio::sync::Notify::new()),
            relays: Relays::default(),
            answered: watch::channel(0).0,
            pending: PendingEnds::default(),
            health: StoreHealth::default(),
        });
        let engine = Engine { inner: inner.clone(), stop: shutdown.child_token(), tracker: TaskTracker::new() };
        let receiver = Arc::new(tokio::sync::Mutex::new(receiver));
        for _ in 0..inner.settings.max_running.max(1) {
            engine.tracker.spawn(work::worker(inner.clone(), receiver.clone(), engine.stop.clone()));
        }
        engine.tracker.spawn(work::reaper(inner.clone(), engine.stop.clone()));
        engine.tracker.spawn(pending::flush(inner.clone(), engine.stop.clone()));
        if let Some(changes) = inner.store.subscribe() {
            engine.tracker.spawn(work::follow(inner.clone(), changes, engine.stop.clone()));
            engine.tracker.spawn(work::spread(inner.clone(), engine.stop.clone()));
        } else {
            engine.tracker.spawn(work::outside_cancels(inner.clone(), engine.stop.clone()));
        }
        // On an error the engine is dropped, which stops what was spawned.
        let later = inner.recover().await?;
        if !later.is_empty() {
            // Their tools' plugins are still loading: decided when each is in, not before start.
            let (inner, stop) = (inner.clone(), engine.stop.clone());
            engine.tracker.spawn(async move {
                tokio::select! {
                    _ = stop.cancelled() => {}
                    _ = inner.settle(later) => {}
                }
            });
        }
        Ok(engine)
    }

    /// Stops the workers and the reaper, waits for them, then closes the store. A task still
    /// running is dropped where it is: it stays `working` in the store, and the next host to
    /// start on the database recovers it.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        self.tracker.close();
        self.tracker.wait().await;
        self.inner.store.close().await;
    }

    /// Tasks queued and running in this process now.
    pub fn counts(&self) -> Counts {
        *self.inner.counts.lock().unwrap()
    }

    /// Task ends waiting for the store to answer again, and how many were dropped so far
    /// because too many waited (see `pending`).
    pub fn pending_ends(&self) -> (usize, u64) {
        (self.inner.pending.len(), self.inner.pending.dropped())
    }

    /// Stored tasks per status.
    pub async fn count_by_status(&self) -> Result<Vec<(TaskStatus, u64)>, EngineError> {
        Ok(self.inner.store.count_by_status().await?)
    }

    /// The operator's list (`TaskStore::list_all`), with the live messages of the tasks
    /// running here: the admin console.
    pub async fn list_all(
        &self,
        filter: &crate::tasks::TaskFilter,
        after: Option<crate::tasks::TaskCursor>,
        limit: usize,
    ) -> Result<crate::tasks::TaskPage, EngineError> {
        let mut page = self.inner.store.list_all(filter, after, limit).await?;
        page.tasks = page.tasks.into_iter().map(|t| self.inner.with_live_message(t)).collect();
        Ok(page)
    }

    /// Everything the store knows of task `id`, whoever owns it (`TaskStore::inspect`), with
    /// its live message.
    pub async fn inspect(&self, id: &str) -> Result<Option<crate::tasks::TaskDetail>, EngineError> {
        let detail = self.inner.store.inspect(id).await?;
        Ok(detail.map(|mut d| {
            d.task = self.inner.with_live_message(d.task);
            d
        }))
    }

    /// The replicas sharing the store (`None` on SQLite); see [`TaskStore::replicas`].
    pub async fn replicas(&self) -> Result<Option<Vec<crate::tasks::Replica>>, EngineError> {
        Ok(self.inner.store.replicas().await?)
    }

    /// This host's runner id (what the tasks it holds name as their `runner`).
    pub fn runner_id(&self) -> &str {
        self.inner.runners.id()
    }

    /// Whether this process runs (or has queued) `owner`'s task `id`; asks no store.
    pub fn runs(&self, owner: &str, id: &str) -> bool {
        self.inner.live.lock().unwrap().get(id).is_some_and(|live| live.owner == owner)
    }

    /// Admits a task: durable record first, then the queue (or, for a call that already runs,
    /// its run, tracked here from now on). Returns the task as created, or the existing task
    /// when the idempotency key was used before by the same owner. A refused `Launch::Running`
    /// is dropped, and the call with it.
    ///
    /// Once capacity is reserved the rest runs on a task of its own, so a caller that stops
    /// waiting (its client went away) cannot leave a stored record that nothing queued.
    pub async fn admit(&self, admission: Admission) -> Result<Task, EngineError> {
        let inner = &self.inner;
        if self.stop.is_cancelled() {
            return Err(EngineError::ShuttingDown);
        }
        if let Some(key) = &admission.idempotency_key {
            if let Some(existing) = inner.store.find_by_key(&admission.owner, key).await? {
                if !existing.is_expired(now_ms()) {
                    return Ok(inner.with_live_message(existing));
                }
                // The key's old task expired but is not purged yet; it must go before the
                // key can name a new one.
                inner.store.purge_expired(now_ms()).await?;
            }
        }
        let running = matches!(admission.launch, Launch::Running { .. });
        let owner_cap = admission.owner_cap;
        let reserved = match running {
            true => Reservation::running(inner, &admission.owner, owner_cap)?,
            false => Reservation::take(inner, &admission.owner, owner_cap)?,
        };
        let now = now_ms();
        let max_ttl = inner.settings.max_ttl.as_millis() as i64;
        let ttl = admission.requested_ttl_ms.unwrap_or(inner.settings.default_ttl.as_millis() as i64).clamp(1, max_ttl);
        let task = Task {
            id: uuid::Uuid::new_v4().to_string(),
            owner: admission.owner,
            tool: admission.tool,
            plugin: admission.plugin,
            arguments: admission.arguments,
            status: TaskStatus::Working,
            status_message: None,
            created_at: now,
            updated_at: now,
            ttl_ms: Some(ttl),
            poll_interval_ms: inner.settings.poll_interval.as_millis() as i64,
            progress_token: admission.progress_token,
            idempotency_key: admission.idempotency_key,
            seq: 0,
            runner: inner.runners.id().to_owned(),
            // A running call is on its first attempt already; nothing will `start` it.
            attempts: u32::from(running),
            checkpoint: 0,
            resumed_from: 0,
            client_capabilities: admission.client_capabilities,
            started: running,
            trace_context: admission.trace_context,
        };
        let (launch, events) = (admission.launch, admission.events);
        let (inner, stop, tracker) = (inner.clone(), self.stop.clone(), self.tracker.clone());
        let span = trace::task_admit(&task.tool);
        if !span.is_disabled() {
            span.record("corral.task.id", task.id.as_str());
        }
        // Finished even if the caller stops waiting: a stored task is always queued (or run).
        FinishOnDrop::new(
            async move {
                // Dropping `reserved` on an error gives the slots back: nothing half-created.
                let insert = match owner_cap {
                    Some(cap) => inner.store.insert_capped(task, cap),
                    None => inner.store.insert(task),
                };
                let task = insert.instrument(trace::store("insert")).await?;
                reserved.keep();
                audit::record(&inner.settings.audit, &task, Transition::Created);
                if task.started {
                    audit::started(&inner.settings.audit, &task);
                }
                match launch {
                    Launch::Queue => inner.enqueue(&task, None, events),
                    Launch::QueueFor(run) => inner.enqueue(&task, Some(run), events),
                    Launch::Running { cancel, run } => {
                        let live = inner.make_live(&task, None, events, cancel);
                        tracker.spawn(work::run_adopted(inner.clone(), live, task.clone(), run, stop));
                    }
                }
                Ok::<Task, EngineError>(task)
            }
            .instrument(span),
        )
        .await
    }

    /// The task, if `owner` owns it and it has not expired.
    pub async fn get(&self, owner: &str, id: &str) -> Result<Task, EngineError> {
        let task = self.inner.store.get(owner, id).await?.ok_or(EngineError::NotFound)?;
        if task.is_expired(now_ms()) {
            return Err(EngineError::Expired);
        }
        Ok(self.inner.with_live_message(task))
    }

    /// The task, if `owner` owns it and it has not expired, with its outcome once it has ended:
    /// one store read.
    pub async fn get_with_outcome(&self, owner: &str, id: &str) -> Result<(Task, Option<Outcome>), EngineError> {
        let (task, outcome) = self.inner.store.get_with_outcome(owner, id).await?.ok_or(EngineError::NotFound)?;
        if task.is_expired(now_ms()) {
            return Err(EngineError::Expired);
        }
        if task.status.is_terminal() && outcome.is_none() {
            return Err(StoreError::MissingOutcome { id: id.to_owned() }.into());
        }
        Ok((self.inner.with_live_message(task), outcome))
    }

    /// Who owns task `id`, whoever asks (for a principal the policy lets steer every task);
    /// `None` for a task that is not there.
    pub async fn owner_of(&self, id: &str) -> Result<Option<String>, EngineError> {
        Ok(self.inner.store.owner_of(id).await?)
    }

    /// Takes a call token from the bucket `key` in a store shared by replicas (see
    /// [`TaskStore::take_token`]); `None` when the store is not shared.
    pub fn take_token(
        &self,
        key: &str,
        per_second: f64,
        burst: u32,
    ) -> Option<impl std::future::Future<Output = Result<(bool, f64), EngineError>> + Send + 'static> {
        let taking = self.inner.store.take_token(key, per_second, burst)?;
        Some(async move { Ok(taking.await?) })
    }

    /// `owner`'s tasks after position `after`, at most `limit`; the last one's `seq` is the
    /// position to continue from.
    pub async fn list(&self, owner: &str, after: i64, limit: usize) -> Result<Vec<Task>, EngineError> {
        let now = now_ms();
        let tasks = self.inner.store.list(owner, after, limit).await?;
        Ok(tasks.into_iter().filter(|t| !t.is_expired(now)).map(|t| self.inner.with_live_message(t)).collect())
    }

    /// Waits until the task has ended, then returns it with its outcome.
    pub async fn result(&self, owner: &str, id: &str) -> Result<(Task, Outcome), EngineError> {
        loop {
            // Subscribed before the read, so an end between the two is not missed.
            let done = self.inner.live.lock().unwrap().get(id).map(|live| live.done.subscribe());
            let changes = self.inner.store.subscribe();
            let task = self.get(owner, id).await?;
            if task.status.is_terminal() {
                let outcome = self.inner.store.outcome(id).await?.ok_or_else(|| StoreError::MissingOutcome { id: id.to_owned() })?;
                return Ok((task, outcome));
            }
            match done {
                Some(mut done) => {
                    // Err: the task was retired meanwhile; the next read sees how it ended.
                    let _ = done.wait_for(|ended| *ended).await;
                }
                // Not run by this process (another host runs it, or recovery has not queued it
                // yet): a shared store says when it changes; the poll interval is the fallback
                // for a change it could not tell (its connection was lost meanwhile).
                None => match changes {
                    Some(changes) => wait_for_change(changes, id, Duration::from_millis(task.poll_interval_ms.max(1) as u64)).await,
                    // A store that tells nothing (SQLite shared by hosts on one machine): poll.
                    None => tokio::time::sleep(Duration::from_millis(50)).await,
                },
            }
        }
    }

    /// Cancels a task: it is `cancelled` in the store before this returns, and its work is
    /// told to stop.
    pub async fn cancel(&self, owner: &str, id: &str) -> Result<Task, EngineError> {
        let inner = &self.inner;
        let task = self.get(owner, id).await?;
        if task.status.is_terminal() {
            return Err(EngineError::Terminal(task.status.as_str()));
        }
        // Stop the work first: the store write below takes a commit, and a cancelled worker
        // never stores an outcome of its own, so nothing can overwrite `cancelled`.
        let live = inner.live.lock().unwrap().get(id).cloned();
        if let Some(live) = &live {
            live.stop();
        }
        let Some(cancelled) = inner.store.finish(id, TaskStatus::Cancelled, Some("cancelled by the client"), &Outcome::Cancelled).await? else {
            let now = self.get(owner, id).await?;
            return Err(EngineError::Terminal(now.status.as_str()));
        };
        audit::ended(&inner.settings.audit, &cancelled, &Outcome::Cancelled);
        if let Some(live) = &live {
            live.announce(&cancelled);
        }
        // Waiters on `tasks/result` can answer now; the work winds down on its own.
        inner.retire(id);
        Ok(cancelled)
    }
}

/// Waits until the store says task `id` changed (or may have), at most `fallback`.
async fn wait_for_change(mut changes: tokio::sync::broadcast::Receiver<StoreEvent>, id: &str, fallback: Duration) {
    let changed = async {
        loop {
            match changes.recv().await {
                Ok(StoreEvent::Changed { id: changed, .. }) if changed != id => continue,
                // Progress changes nothing a result waiter reads.
                Ok(StoreEvent::Progress { .. } | StoreEvent::Answered { .. }) => continue,
                // This task, a resync, a lag or a closed store: read again.
                _ => return,
            }
        }
    };
    let _ = tokio::time::timeout(fallback, changed).await;
}

impl Drop for Engine {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Inner {
    /// Makes `task` live in this process and hands it to the workers. Its queue and owner
    /// slots are already reserved.
    pub(super) fn enqueue(&self, task: &Task, local_run: Option<LocalRun>, events: Option<Arc<dyn TaskEvents>>) {
        self.make_live(task, local_run, events, CancelHandle::new(self.wake.clone()));
        if self.queue.send(Queued { id: task.id.clone(), owner: task.owner.clone() }).is_err() {
            // The workers stopped (shutdown): the task stays `working` in the store for the
            // next host to recover.
            tracing::warn!(task = %task.id, "the engine is shutting down; the task waits for the next start");
            self.counts.lock().unwrap().queued -= 1;
            self.retire(&task.id);
        }
    }

    /// Makes `task` live in this process, stopped through `cancel`.
    pub(super) fn make_live(&self, task: &Task, local_run: Option<LocalRun>, events: Option<Arc<dyn TaskEvents>>, cancel: CancelHandle) -> Arc<Live> {
        let live = Arc::new(Live {
            id: task.id.clone(),
            owner: task.owner.clone(),
            cancel,
            local_run: Mutex::new(local_run),
            stopped: Default::default(),
            events,
            message: Mutex::new(None),
            done: watch::channel(false).0,
        });
        self.live.lock().unwrap().insert(task.id.clone(), live.clone());
        live
    }

    /// The control a run of `live` gets: every write fenced on this host.
    pub(super) fn control(self: &Arc<Self>, live: &Arc<Live>) -> TaskControl {
        TaskControl {
            live: live.clone(),
            store: self.store.clone(),
            runner: self.runners.id().into(),
            result_quota: self.settings.result_quota,
            audit: self.settings.audit.clone(),
        }
    }

    /// Shows the newest progress message of a task that is still working.
    pub(super) fn with_live_message(&self, mut task: Task) -> Task {
        if !task.status.is_terminal() {
            if let Some(message) = self.live.lock().unwrap().get(&task.id).and_then(|l| l.message.lock().unwrap().clone()) {
                task.status_message = Some(message);
            }
        }
        task
    }

    /// Marks a task ended in memory: wakes `tasks/result` waiters and forgets the live state.
    pub(super) fn retire(&self, id: &str) {
        let live = self.live.lock().unwrap().remove(id);
        if let Some(live) = live {
            live.done.send_replace(true);
            self.release_owner_slot(&live.owner);
        }
    }

    fn release_owner_slot(&self, owner: &str) {
        let mut per_owner = self.per_owner.lock().unwrap();
        if let Some(active) = per_owner.get_mut(owner) {
            *active = active.saturating_sub(1);
            if *active == 0 {
                per_owner.remove(owner);
            }
        }
    }
}

/// A queue (or running) slot and an owner slot, given back on drop unless
/// [`Reservation::keep`] is called.
pub(super) struct Reservation {
    inner: Option<(Arc<Inner>, String)>,
    /// Whether the slot is a running one (a call adopted as it runs) rather than a queued one.
    running: bool,
}

impl Reservation {
    /// Reserves a slot within the caps, or says which cap refuses. The locks are not held
    /// across the durable insert, so concurrent admissions can share one commit.
    fn take(inner: &Arc<Inner>, owner: &str, owner_cap: Option<usize>) -> Result<Reservation, EngineError> {
        Reservation::within_caps(inner, owner, owner_cap, false)
    }

    /// Reserves a running slot for a call that already runs: within the owner's cap, but not
    /// the queue's (it waits in no queue) nor `max_running`'s (its guest is mid-run, and
    /// stopping it to wait for a worker would throw its work away; the plugin's
    /// `max-concurrency` and the instance pool bound it instead).
    fn running(inner: &Arc<Inner>, owner: &str, owner_cap: Option<usize>) -> Result<Reservation, EngineError> {
        Reservation::within_caps(inner, owner, owner_cap, true)
    }

    fn within_caps(inner: &Arc<Inner>, owner: &str, owner_cap: Option<usize>, running: bool) -> Result<Reservation, EngineError> {
        let mut counts = inner.counts.lock().unwrap();
        if !running && counts.queued >= inner.settings.max_queued {
            return Err(EngineError::Overloaded { queued: counts.queued, limit: inner.settings.max_queued });
        }
        let mut per_owner = inner.per_owner.lock().unwrap();
        let active = per_owner.entry(owner.to_owned()).or_default();
        let limit = owner_cap.map_or(inner.settings.max_per_owner, |cap| cap.min(inner.settings.max_per_owner));
        if *active >= limit {
            return Err(EngineError::OwnerLimit { active: *active, limit });
        }
        *active += 1;
        match running {
            true => counts.running += 1,
            false => counts.queued += 1,
        }
        Ok(Reservation { inner: Some((inner.clone(), owner.to_owned())), running })
    }

    /// Reserves without the caps, for an orphan recovery claimed.
    pub(super) fn force(inner: &Arc<Inner>, owner: &str) -> Reservation {
        inner.counts.lock().unwrap().queued += 1;
        *inner.per_owner.lock().unwrap().entry(owner.to_owned()).or_default() += 1;
        Reservation { inner: Some((inner.clone(), owner.to_owned())), running: false }
    }

    /// The slots now belong to a queued task (the worker and `retire` give them back).
    pub(super) fn keep(mut self) {
        self.inner = None;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some((inner, owner)) = self.inner.take() {
            let mut counts = inner.counts.lock().unwrap();
            match self.running {
                true => counts.running -= 1,
                false => counts.queued -= 1,
            }
            drop(counts);
            inner.release_owner_slot(&owner);
        }
    }
}
