//! The task engine: admission, a bounded queue, a bounded worker pool, cancellation, results.
//!
//! Admission never waits for a worker: it checks capacity, writes the task record durably and
//! queues the task id; a worker picks it up later. Everything a task produces goes through the
//! store first, so what a client reads after a restart is what it would have read before.
//!
//! Lifetimes: [`Engine::start`] spawns the workers and the reaper; they stop when the caller's
//! shutdown token fires, when [`Engine::shutdown`] is called or when the `Engine` is dropped.
//! `shutdown` also waits for them and then closes the store.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use super::audit;
use super::blobs::{ResultPage, ResultPart};
use super::canceller::Canceller;
use super::capacity::{Counts, Reservation};
use super::error::EngineError;
use super::events::TaskEvents;
use super::finish::FinishOnDrop;
use super::input::Inputs;
use super::model::{now_ms, Outcome, Task, TaskStatus};
use super::operator::{TaskCursor, TaskDetail, TaskFilter, TaskPage};
use super::runner::{Launch, TaskRunner};
use super::runners::Runners;
use super::settings::TaskSettings;
use super::state::Inner;
use super::store::{Replica, StoreError, StoreEvent, TaskStore};
use super::{follow, recovery, work};
use crate::audit::Transition;
use crate::cancel::Wake;
use crate::telemetry::trace;

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

/// The task engine; see the module doc.
pub struct Engine {
    pub(super) inner: Arc<Inner>,
    /// Stops the workers and the reaper: a child of the caller's shutdown token.
    stop: CancellationToken,
    /// The workers and the reaper, waited for by [`Engine::shutdown`].
    tracker: TaskTracker,
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
        let inner = Arc::new(Inner::new(store, runners, settings, runner, wake, queue));
        let engine = Engine { inner: inner.clone(), stop: shutdown.child_token(), tracker: TaskTracker::new() };
        let receiver = Arc::new(tokio::sync::Mutex::new(receiver));
        for _ in 0..inner.settings.max_running.max(1) {
            engine.tracker.spawn(work::worker(inner.clone(), receiver.clone(), engine.stop.clone()));
        }
        engine.tracker.spawn(recovery::reaper(inner.clone(), engine.stop.clone()));
        let (pending, stop) = (inner.pending.clone(), engine.stop.clone());
        engine.tracker.spawn(async move { pending.flush(stop).await });
        if let Some(changes) = inner.store.subscribe() {
            engine.tracker.spawn(follow::follow(inner.clone(), changes, engine.stop.clone()));
            engine.tracker.spawn(follow::spread(inner.clone(), engine.stop.clone()));
        } else {
            engine.tracker.spawn(follow::outside_cancels(inner.clone(), engine.stop.clone()));
        }
        // On an error the engine is dropped, which stops what was spawned.
        let later = recovery::recover(&inner).await?;
        if !later.is_empty() {
            // Their tools' plugins are still loading: decided when each is in, not before start.
            let (inner, stop) = (inner.clone(), engine.stop.clone());
            engine.tracker.spawn(async move {
                tokio::select! {
                    _ = stop.cancelled() => {}
                    _ = recovery::settle(&inner, later) => {}
                }
            });
        }
        Ok(engine)
    }

    /// Stops the workers and the reaper, waits for them, gives the task ends still waiting for
    /// the store up to [`TaskSettings::shutdown_grace`] to be stored, then closes the store. A
    /// task still running is dropped where it is: it stays `working` in the store, and the
    /// next host to start on the database recovers it.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        self.tracker.close();
        self.tracker.wait().await;
        self.inner.pending.flush_before(self.inner.settings.shutdown_grace).await;
        self.inner.store.close().await;
    }

    /// Tasks queued and running in this process now.
    pub fn counts(&self) -> Counts {
        self.inner.capacity.counts()
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
    pub async fn list_all(&self, filter: &TaskFilter, after: Option<TaskCursor>, limit: usize) -> Result<TaskPage, EngineError> {
        let mut page = self.inner.store.list_all(filter, after, limit).await?;
        page.tasks = page.tasks.into_iter().map(|t| self.inner.live.with_message(t)).collect();
        Ok(page)
    }

    /// Everything the store knows of task `id`, whoever owns it (`TaskStore::inspect`), with
    /// its live message.
    pub async fn inspect(&self, id: &str) -> Result<Option<TaskDetail>, EngineError> {
        let detail = self.inner.store.inspect(id).await?;
        Ok(detail.map(|mut d| {
            d.task = self.inner.live.with_message(d.task);
            d
        }))
    }

    /// The replicas sharing the store (`None` on SQLite); see [`TaskStore::replicas`].
    pub async fn replicas(&self) -> Result<Option<Vec<Replica>>, EngineError> {
        Ok(self.inner.store.replicas().await?)
    }

    /// This host's runner id (what the tasks it holds name as their `runner`).
    pub fn runner_id(&self) -> &str {
        self.inner.runners.id()
    }

    /// Whether this process runs (or has queued) `owner`'s task `id`; asks no store.
    pub fn runs(&self, owner: &str, id: &str) -> bool {
        self.inner.live.runs(owner, id)
    }

    /// The kept task `owner` created with idempotency `key`, if there is one: a call that would
    /// become a task only once it has run (an adopted `optional` call) asks before it starts.
    pub async fn find_by_key(&self, owner: &str, key: &str) -> Result<Option<Task>, EngineError> {
        let found = self.inner.store.find_by_key(owner, key).await?;
        Ok(found.filter(|task| !task.is_expired(now_ms())).map(|task| self.inner.live.with_message(task)))
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
                    return Ok(inner.live.with_message(existing));
                }
                // The key's old task expired but is not purged yet; it must go before the
                // key can name a new one.
                inner.store.purge_expired(now_ms()).await?;
            }
        }
        let running = matches!(admission.launch, Launch::Running { .. });
        let owner_cap = admission.owner_cap;
        let reserved = match running {
            true => Reservation::running(&inner.capacity, &admission.owner, owner_cap)?,
            false => Reservation::take(&inner.capacity, &admission.owner, owner_cap)?,
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
                        let live = inner.live.insert(&task, events, cancel);
                        tracker.spawn(work::run_adopted(inner.clone(), live, task.clone(), run, stop));
                    }
                }
                Ok::<Task, EngineError>(task)
            }
            .instrument(span),
        )
        .await
    }

    /// The task, if `owner` owns it and it has not expired. A task this host is recovering is
    /// read once its verdict is in (see `recovering`).
    pub async fn get(&self, owner: &str, id: &str) -> Result<Task, EngineError> {
        self.inner.recovering.wait_for(id).await;
        let task = self.inner.store.get(owner, id).await?.ok_or(EngineError::NotFound)?;
        if task.is_expired(now_ms()) {
            return Err(EngineError::Expired);
        }
        Ok(self.inner.live.with_message(task))
    }

    /// The task, if `owner` owns it and it has not expired, with its outcome once it has ended:
    /// one store read.
    pub async fn get_with_outcome(&self, owner: &str, id: &str) -> Result<(Task, Option<Outcome>), EngineError> {
        self.inner.recovering.wait_for(id).await;
        let (task, outcome) = self.inner.store.get_with_outcome(owner, id).await?.ok_or(EngineError::NotFound)?;
        if task.is_expired(now_ms()) {
            return Err(EngineError::Expired);
        }
        if task.status.is_terminal() && outcome.is_none() {
            return Err(StoreError::MissingOutcome { id: id.to_owned() }.into());
        }
        Ok((self.inner.live.with_message(task), outcome))
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
        Ok(tasks.into_iter().filter(|t| !t.is_expired(now)).map(|t| self.inner.live.with_message(t)).collect())
    }

    /// Waits until the task has ended, then returns it with its outcome.
    pub async fn result(&self, owner: &str, id: &str) -> Result<(Task, Outcome), EngineError> {
        loop {
            // Subscribed before the read, so an end between the two is not missed.
            let done = self.inner.live.ended(id);
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

    /// Cancels a task for its owner: it is `cancelled` in the store before this returns, and
    /// its work is told to stop.
    pub async fn cancel(&self, owner: &str, id: &str) -> Result<Task, EngineError> {
        self.cancel_by(owner, id, Canceller::Owner).await
    }

    /// [`Engine::cancel`], by `canceller`, whom the task's status message names.
    pub async fn cancel_by(&self, owner: &str, id: &str, canceller: Canceller<'_>) -> Result<Task, EngineError> {
        let inner = &self.inner;
        let task = self.get(owner, id).await?;
        if task.status.is_terminal() {
            return Err(EngineError::Terminal(task.status.as_str()));
        }
        // Stop the work first: the store write below takes a commit, and a cancelled worker
        // never stores an outcome of its own, so nothing can overwrite `cancelled`.
        let live = inner.live.get(id);
        if let Some(live) = &live {
            live.stop();
        }
        let Some(cancelled) = inner.store.finish(id, TaskStatus::Cancelled, Some(&canceller.status_message()), &Outcome::Cancelled).await? else {
            let now = self.get(owner, id).await?;
            return Err(EngineError::Terminal(now.status.as_str()));
        };
        audit::ended(&inner.settings.audit, &cancelled, &Outcome::Cancelled);
        if let Some(live) = &live {
            live.announce(&cancelled);
        }
        // Waiters on `tasks/result` can answer now; the work winds down on its own.
        inner.live.retire(id);
        Ok(cancelled)
    }

    /// Keeps `parts` of the result `id` for `owner` until `expires_at` (ms since the epoch;
    /// `None`: until deleted): a plain call's large result, read back with [`Engine::result_page`].
    /// Past the [`ResultQuota`](super::ResultQuota) it is not kept ([`StoreError::OverQuota`]).
    pub async fn keep_result(&self, owner: &str, id: &str, expires_at: Option<i64>, parts: Vec<ResultPart>) -> Result<(), EngineError> {
        Ok(self.inner.store.keep_result(owner, id, expires_at, parts, self.inner.settings.result_quota).await?)
    }

    /// The bytes of results kept now, by every owner (for `/metrics`).
    pub async fn result_bytes_kept(&self) -> Result<u64, EngineError> {
        Ok(self.inner.store.result_bytes_kept().await?)
    }

    /// Page `page` of part `part` of the result `id`, if `owner` owns it and it has not expired.
    pub async fn result_page(&self, owner: &str, id: &str, part: u32, page: u32) -> Result<Option<ResultPage>, EngineError> {
        Ok(self.inner.store.result_page(owner, id, part, page, now_ms()).await?)
    }

    /// When something kept now for the default task TTL (`--task-ttl`) expires.
    pub fn default_expiry(&self) -> i64 {
        now_ms().saturating_add(self.inner.settings.default_ttl.as_millis() as i64)
    }

    /// Whether the store is reachable from here now: `Err` says why not (a failed or slow
    /// ping, or task ends waiting in memory for it). Pings at most once a second.
    pub async fn store_reachable(&self) -> Result<(), String> {
        self.inner.health.reachable(self.inner.pending.len()).await
    }

    /// The handle through which tasks ask and are answered.
    pub fn inputs(&self) -> Inputs {
        self.inner.inputs.clone()
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
