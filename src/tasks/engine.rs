//! The task engine: admission, a bounded queue, a bounded worker pool, cancellation, results.
//!
//! Admission never waits for a worker: it checks capacity, writes the task record durably and
//! queues the task id; a worker picks it up later. Everything a task produces goes through the
//! store first, so what a client reads after a restart is what it would have read before.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use super::model::{now_ms, Outcome, Task, TaskStatus};
use super::runners::Runners;
use super::store::{StoreError, TaskStore};
use crate::cancel::{CancelHandle, Wake};
use crate::runtime::{CallObserver, ClientAnswer, ElicitResponse, LogLevel, RequestError, SamplingRequest, SamplingResponse};

/// Engine limits and defaults.
#[derive(Clone, Debug)]
pub struct EngineSettings {
    /// Tasks running at once, across all plugins.
    pub max_running: usize,
    /// Tasks admitted but not yet running; admission beyond it is refused as overloaded.
    pub max_queued: usize,
    /// Unfinished tasks (queued or running) one owner may have in this host.
    pub max_per_owner: usize,
    pub default_ttl: Duration,
    pub max_ttl: Duration,
    pub poll_interval: Duration,
    /// How often expired tasks are deleted.
    pub reap_every: Duration,
}

impl Default for EngineSettings {
    fn default() -> EngineSettings {
        EngineSettings {
            max_running: 8,
            max_queued: 1024,
            max_per_owner: 256,
            default_ttl: Duration::from_secs(3600),
            max_ttl: Duration::from_secs(24 * 3600),
            poll_interval: Duration::from_millis(1000),
            reap_every: Duration::from_secs(30),
        }
    }
}

/// A task call that passed the protocol checks.
pub struct Admission {
    pub owner: String,
    pub tool: String,
    pub arguments: Value,
    /// The TTL the client asked for, in milliseconds.
    pub requested_ttl_ms: Option<i64>,
    pub progress_token: Option<Value>,
    pub idempotency_key: Option<String>,
    /// Where the task's progress and logs go while the requestor is connected.
    pub observer: Option<Arc<dyn CallObserver>>,
    /// Told about every status change while the requestor is connected.
    pub events: Option<Arc<dyn TaskEvents>>,
}

/// Receives a task's status changes (`notifications/tasks/status`).
pub trait TaskEvents: Send + Sync {
    fn status_changed(&self, task: &Task);
}

/// How a task's run ended.
pub struct Finished {
    pub status: TaskStatus,
    pub message: Option<String>,
    pub outcome: Outcome,
}

/// Runs tasks' calls; provided by the layer that knows what a tool call is.
pub trait Executor: Send + Sync + 'static {
    /// Runs the call of `task`, reporting through `observer`, until it ends or `cancel` fires.
    fn execute(&self, task: Task, cancel: CancelHandle, observer: Arc<dyn CallObserver>) -> BoxFuture<'static, Finished>;
    /// The outcome stored for a task the client cancelled.
    fn cancelled(&self, task: &Task) -> Outcome;
    /// The outcome stored for a task a host restart interrupted.
    fn interrupted(&self, task: &Task) -> Outcome;
    /// Whether running the tool again after a restart is safe.
    fn is_idempotent(&self, tool: &str) -> bool;
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("task not found")]
    NotFound,
    #[error("task has expired")]
    Expired,
    #[error("task is already {0}")]
    Terminal(&'static str),
    #[error("the host is overloaded: {queued} tasks are waiting (limit {limit}); try again later")]
    Overloaded { queued: usize, limit: usize },
    #[error("too many unfinished tasks: you have {active} (limit {limit}); wait for some to end or cancel them")]
    OwnerLimit { active: usize, limit: usize },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The state of a task this process is running or has queued.
struct Live {
    owner: String,
    cancel: CancelHandle,
    observer: Option<Arc<dyn CallObserver>>,
    events: Option<Arc<dyn TaskEvents>>,
    /// The newest progress message, shown as `statusMessage` while working.
    message: Option<String>,
    done: watch::Sender<bool>,
}

pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    store: Arc<dyn TaskStore>,
    runners: Runners,
    settings: EngineSettings,
    executor: Arc<dyn Executor>,
    /// Wakes a running task's work when it is cancelled.
    wake: Wake,
    live: Mutex<HashMap<String, Live>>,
    counts: Mutex<Counts>,
    /// Unfinished tasks per owner in this host.
    per_owner: Mutex<HashMap<String, usize>>,
    queue: mpsc::UnboundedSender<Queued>,
    /// Signals watchers of tasks that ended before this process started.
    ended: watch::Sender<bool>,
}

/// A queued task: its id and owner (every store read is scoped by owner).
struct Queued {
    id: String,
    owner: String,
}

#[derive(Default, Clone, Copy, Debug)]
pub struct Counts {
    pub queued: usize,
    pub running: usize,
}

impl Engine {
    /// Starts the workers and the reaper, and recovers tasks a previous host left unfinished.
    pub fn start(store: Arc<dyn TaskStore>, runners: Runners, settings: EngineSettings, executor: Arc<dyn Executor>, wake: Wake) -> Result<Engine, EngineError> {
        let (queue, receiver) = mpsc::unbounded_channel();
        let inner = Arc::new(Inner {
            store,
            runners,
            settings,
            executor,
            wake,
            live: Mutex::new(HashMap::new()),
            counts: Mutex::new(Counts::default()),
            per_owner: Mutex::new(HashMap::new()),
            queue,
            ended: watch::channel(true).0,
        });
        let receiver = Arc::new(tokio::sync::Mutex::new(receiver));
        for _ in 0..inner.settings.max_running.max(1) {
            tokio::spawn(worker(inner.clone(), receiver.clone()));
        }
        tokio::spawn(reaper(Arc::downgrade(&inner)));
        inner.recover()?;
        Ok(Engine { inner })
    }

    pub fn counts(&self) -> Counts {
        *self.inner.counts.lock().unwrap()
    }

    /// Stored tasks per status.
    pub fn count_by_status(&self) -> Result<Vec<(TaskStatus, u64)>, EngineError> {
        Ok(self.inner.store.count_by_status()?)
    }

    /// Admits a task: durable record first, then the queue. Returns the task as created, or
    /// the existing task when the idempotency key was used before by the same owner.
    pub fn admit(&self, admission: Admission) -> Result<Task, EngineError> {
        let inner = &self.inner;
        if let Some(key) = &admission.idempotency_key {
            if let Some(existing) = inner.store.find_by_key(&admission.owner, key)? {
                if !existing.is_expired(now_ms()) {
                    return Ok(self.with_live_message(existing));
                }
                // The key's old task expired but is not purged yet; it must go before the
                // key can name a new one.
                inner.store.purge_expired(now_ms())?;
            }
        }
        {
            // Reserve a queue slot and an owner slot; the locks are not held across the
            // durable insert, so concurrent admissions can share one commit.
            let mut counts = inner.counts.lock().unwrap();
            if counts.queued >= inner.settings.max_queued {
                return Err(EngineError::Overloaded { queued: counts.queued, limit: inner.settings.max_queued });
            }
            let mut per_owner = inner.per_owner.lock().unwrap();
            let active = per_owner.entry(admission.owner.clone()).or_default();
            if *active >= inner.settings.max_per_owner {
                return Err(EngineError::OwnerLimit { active: *active, limit: inner.settings.max_per_owner });
            }
            *active += 1;
            counts.queued += 1;
        }
        let now = now_ms();
        let max_ttl = inner.settings.max_ttl.as_millis() as i64;
        let ttl = admission.requested_ttl_ms.unwrap_or(inner.settings.default_ttl.as_millis() as i64).clamp(1, max_ttl);
        let task = Task {
            id: uuid::Uuid::new_v4().to_string(),
            owner: admission.owner,
            tool: admission.tool,
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
        };
        if let Err(e) = inner.store.insert(&task) {
            inner.counts.lock().unwrap().queued -= 1;
            inner.release_owner_slot(&task.owner);
            return Err(e.into());
        }
        inner.live.lock().unwrap().insert(
            task.id.clone(),
            Live {
                owner: task.owner.clone(),
                cancel: CancelHandle::new(inner.wake.clone()),
                observer: admission.observer,
                events: admission.events,
                message: None,
                done: watch::channel(false).0,
            },
        );
        inner.queue.send(Queued { id: task.id.clone(), owner: task.owner.clone() }).expect("the workers hold the queue's receiver");
        Ok(task)
    }

    /// The task, if `owner` owns it and it has not expired.
    pub fn get(&self, owner: &str, id: &str) -> Result<Task, EngineError> {
        let task = self.inner.store.get(owner, id)?.ok_or(EngineError::NotFound)?;
        if task.is_expired(now_ms()) {
            return Err(EngineError::Expired);
        }
        Ok(self.with_live_message(task))
    }

    /// `owner`'s tasks after position `after`, at most `limit`; the last one's `seq` is the
    /// position to continue from.
    pub fn list(&self, owner: &str, after: i64, limit: usize) -> Result<Vec<Task>, EngineError> {
        let now = now_ms();
        let tasks = self.inner.store.list(owner, after, limit)?;
        Ok(tasks.into_iter().filter(|t| !t.is_expired(now)).map(|t| self.with_live_message(t)).collect())
    }

    /// Waits until the task has ended, then returns it with its outcome.
    pub async fn result(&self, owner: &str, id: &str) -> Result<(Task, Outcome), EngineError> {
        loop {
            let mut done = match self.inner.live.lock().unwrap().get(id) {
                Some(live) => live.done.subscribe(),
                None => self.inner.ended.subscribe(),
            };
            let ended = tokio::task::block_in_place(|| -> Result<Option<(Task, Outcome)>, EngineError> {
                let task = self.get(owner, id)?;
                if !task.status.is_terminal() {
                    return Ok(None);
                }
                let outcome = self.inner.store.outcome(id)?.ok_or_else(|| StoreError::Io(format!("task {id} ended without an outcome")))?;
                Ok(Some((task, outcome)))
            })?;
            if let Some(ended) = ended {
                return Ok(ended);
            }
            if !self.inner.live.lock().unwrap().contains_key(id) {
                // Not run by this process and not ended: recovery is still deciding. Poll.
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            let _ = done.wait_for(|ended| *ended).await;
        }
    }

    /// Cancels a task: it is `cancelled` in the store before this returns, and its guest is
    /// told to stop.
    pub fn cancel(&self, owner: &str, id: &str) -> Result<Task, EngineError> {
        let inner = &self.inner;
        let task = self.get(owner, id)?;
        if task.status.is_terminal() {
            return Err(EngineError::Terminal(task.status.as_str()));
        }
        // Stop the guest first: the store write below takes a commit, and a cancelled worker
        // never stores an outcome of its own, so nothing can overwrite `cancelled`.
        if let Some(live) = inner.live.lock().unwrap().get(id) {
            live.cancel.cancel();
        }
        let outcome = inner.executor.cancelled(&task);
        if !inner.store.finish(id, TaskStatus::Cancelled, Some("cancelled by the client"), &outcome)? {
            let now = self.get(owner, id)?;
            return Err(EngineError::Terminal(now.status.as_str()));
        }
        let cancelled = self.get(owner, id)?;
        inner.announce(&cancelled);
        // Waiters on `tasks/result` can answer now; the guest winds down on its own.
        inner.retire(id);
        Ok(cancelled)
    }

    fn with_live_message(&self, mut task: Task) -> Task {
        if !task.status.is_terminal() {
            if let Some(message) = self.inner.live.lock().unwrap().get(&task.id).and_then(|l| l.message.clone()) {
                task.status_message = Some(message);
            }
        }
        task
    }
}

impl Inner {
    /// Tasks left `working` or `input_required` by a host that died: idempotent tools run
    /// again, the others fail with a message saying why.
    fn recover(&self) -> Result<(), EngineError> {
        let inner = self;
        for task in inner.store.unfinished()? {
            if inner.runners.is_alive(&task.runner) {
                continue;
            }
            if inner.executor.is_idempotent(&task.tool) {
                if !inner.store.claim(&task.id, &task.runner, inner.runners.id())? {
                    continue;
                }
                tracing::info!(task = %task.id, tool = %task.tool, "running an interrupted idempotent task again");
                inner.counts.lock().unwrap().queued += 1;
                *inner.per_owner.lock().unwrap().entry(task.owner.clone()).or_default() += 1;
                inner.live.lock().unwrap().insert(
                    task.id.clone(),
                    Live {
                        owner: task.owner.clone(),
                        cancel: CancelHandle::new(inner.wake.clone()),
                        observer: None,
                        events: None,
                        message: None,
                        done: watch::channel(false).0,
                    },
                );
                inner.queue.send(Queued { id: task.id.clone(), owner: task.owner.clone() }).expect("the workers hold the queue's receiver");
            } else {
                tracing::warn!(task = %task.id, tool = %task.tool, "failing a task its host left unfinished");
                let outcome = inner.executor.interrupted(&task);
                inner.store.finish(&task.id, TaskStatus::Failed, Some("interrupted by a host restart before it finished"), &outcome)?;
            }
        }
        Ok(())
    }

    fn announce(&self, task: &Task) {
        let events = self.live.lock().unwrap().get(&task.id).and_then(|l| l.events.clone());
        if let Some(events) = events {
            events.status_changed(task);
        }
    }

    /// Marks a task ended in memory: wakes `tasks/result` waiters and forgets the live state.
    fn retire(&self, id: &str) {
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

async fn worker(inner: Arc<Inner>, queue: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Queued>>>) {
    loop {
        let Some(next) = queue.lock().await.recv().await else { return };
        {
            let mut counts = inner.counts.lock().unwrap();
            counts.queued -= 1;
            counts.running += 1;
        }
        run_one(&inner, &next).await;
        inner.counts.lock().unwrap().running -= 1;
    }
}

async fn run_one(inner: &Arc<Inner>, queued: &Queued) {
    let (id, owner) = (queued.id.as_str(), queued.owner.as_str());
    let task = tokio::task::block_in_place(|| inner.store.get(owner, id)).ok().flatten().filter(|t| !t.status.is_terminal());
    let Some(task) = task else {
        // Cancelled (or purged) while it waited in the queue.
        inner.retire(id);
        return;
    };
    let (cancel, observer) = {
        let live = inner.live.lock().unwrap();
        match live.get(id) {
            Some(l) => (l.cancel.clone(), l.observer.clone()),
            None => return,
        }
    };
    if cancel.is_cancelled() {
        inner.retire(id);
        return;
    }
    let reporter = Arc::new(TaskReporter { inner: Arc::downgrade(inner), id: id.to_owned(), cancel: cancel.clone(), forward: observer });
    let finished = inner.executor.execute(task, cancel.clone(), reporter).await;
    if !cancel.is_cancelled() {
        let stored = tokio::task::block_in_place(|| inner.store.finish(id, finished.status, finished.message.as_deref(), &finished.outcome));
        match stored {
            Ok(true) => {
                if let Some(task) = tokio::task::block_in_place(|| inner.store.get(owner, id).ok().flatten()) {
                    inner.announce(&task);
                }
            }
            Ok(false) => {}
            Err(e) => tracing::error!(task = %id, "storing the task's outcome failed: {e}"),
        }
    }
    inner.retire(id);
}

/// A task's observer: records progress messages as the status message and forwards progress
/// and logs to the requestor, until the task ends. A request to the requestor (elicitation,
/// sampling) turns the task `input_required` until the answer is in.
struct TaskReporter {
    inner: std::sync::Weak<Inner>,
    id: String,
    cancel: CancelHandle,
    forward: Option<Arc<dyn CallObserver>>,
}

impl TaskReporter {
    /// Moves the task to `status` (stored, announced, shown with `message`); false when the
    /// task has ended meanwhile.
    fn set_status(&self, status: TaskStatus, message: Option<String>) -> bool {
        let Some(inner) = self.inner.upgrade() else { return false };
        let owner = match inner.live.lock().unwrap().get_mut(&self.id) {
            Some(live) => {
                live.message = message.clone();
                live.owner.clone()
            }
            None => return false,
        };
        let stored = tokio::task::block_in_place(|| inner.store.set_status(&self.id, status, message.as_deref()));
        match stored {
            Ok(true) => {
                if let Some(task) = tokio::task::block_in_place(|| inner.store.get(&owner, &self.id).ok().flatten()) {
                    inner.announce(&task);
                }
                true
            }
            Ok(false) => false,
            Err(e) => {
                tracing::error!(task = %self.id, "storing the task's status failed: {e}");
                false
            }
        }
    }

    /// Runs a request to the requestor with the task `input_required` meanwhile.
    fn ask<T: Send + 'static>(&self, waiting_for: String, ask: impl FnOnce(&dyn CallObserver, &str) -> ClientAnswer<T>) -> ClientAnswer<T> {
        let Some(forward) = &self.forward else {
            let why = "the client that started this task is not connected (the host restarted since), so nobody can be asked";
            return Box::pin(std::future::ready(Err(RequestError::Unavailable(why.into()))));
        };
        if self.cancel.is_cancelled() {
            return Box::pin(std::future::ready(Err(RequestError::Unavailable("the task was cancelled".into()))));
        }
        self.set_status(TaskStatus::InputRequired, Some(waiting_for));
        let asked = ask(forward.as_ref(), &self.id);
        let back = TaskReporter { inner: self.inner.clone(), id: self.id.clone(), cancel: self.cancel.clone(), forward: None };
        Box::pin(async move {
            let answer = asked.await;
            // Cancelled or out of time, the task ends from `input_required`; this is not reached.
            back.set_status(TaskStatus::Working, None);
            answer
        })
    }
}

impl CallObserver for TaskReporter {
    fn log(&self, level: LogLevel, message: &str) {
        if let (Some(forward), false) = (&self.forward, self.cancel.is_cancelled()) {
            forward.log(level, message);
        }
    }

    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        if self.cancel.is_cancelled() {
            return;
        }
        if let (Some(inner), Some(text)) = (self.inner.upgrade(), &message) {
            if let Some(live) = inner.live.lock().unwrap().get_mut(&self.id) {
                live.message = Some(text.clone());
            }
        }
        if let Some(forward) = &self.forward {
            forward.progress(progress, total, message);
        }
    }

    fn elicit(&self, _task: Option<&str>, message: String, requested_schema: String) -> ClientAnswer<ElicitResponse> {
        let waiting = format!("waiting for the user: {message}");
        self.ask(waiting, move |forward, id| forward.elicit(Some(id), message, requested_schema))
    }

    fn sample(&self, _task: Option<&str>, request: SamplingRequest) -> ClientAnswer<SamplingResponse> {
        self.ask("waiting for the client's model to answer".into(), move |forward, id| forward.sample(Some(id), request))
    }
}

async fn reaper(inner: std::sync::Weak<Inner>) {
    let every = match inner.upgrade() {
        Some(i) => i.settings.reap_every,
        None => return,
    };
    let mut ticks = tokio::time::interval(every);
    loop {
        ticks.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        // Hosts sharing the database may have died since the last look.
        if let Err(e) = tokio::task::block_in_place(|| inner.recover()) {
            tracing::error!("recovering orphaned tasks failed: {e}");
        }
        let store = inner.store.clone();
        match tokio::task::spawn_blocking(move || store.purge_expired(now_ms())).await {
            Ok(Ok(0)) => {}
            Ok(Ok(n)) => tracing::info!("deleted {n} expired tasks"),
            Ok(Err(e)) => tracing::error!("deleting expired tasks failed: {e}"),
            Err(e) => tracing::error!("the task reaper panicked: {e}"),
        }
    }
}
