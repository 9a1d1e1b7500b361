//! What the engine does on its own: the workers that run queued tasks, recovery of tasks a dead
//! host left unfinished, and the reaper that deletes expired tasks.

use std::sync::Arc;

use futures_util::FutureExt;
use tracing::Instrument;

use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use super::audit;
use super::engine::{EngineError, Inner, Queued, Reservation};
use super::model::{now_ms, Outcome, Task, TaskStatus};
use super::pending::PendingEnd;
use super::resume::{verdict, Verdict};
use super::runner::{Finished, Live, LocalRun};
use super::store::StoreEvent;
use crate::telemetry::trace::{self, Carrier};

/// The workers share one receiver; whoever holds the lock takes the next task.
pub(super) type SharedQueue = Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Queued>>>;

/// Runs queued tasks one at a time until `stop` fires.
pub(super) async fn worker(inner: Arc<Inner>, queue: SharedQueue, stop: CancellationToken) {
    loop {
        let next = tokio::select! {
            _ = stop.cancelled() => return,
            next = async { queue.lock().await.recv().await } => next,
        };
        let Some(next) = next else { return };
        {
            let mut counts = inner.counts.lock().unwrap();
            counts.queued -= 1;
            counts.running += 1;
        }
        tokio::select! {
            // Shutdown drops the run where it is; see `Engine::shutdown`.
            _ = stop.cancelled() => {}
            _ = run_one(&inner, &next) => {}
        }
        inner.counts.lock().unwrap().running -= 1;
        // Idle again: tasks may be waiting on a busy replica (a shared store; else unheard).
        inner.spread.notify_one();
        if stop.is_cancelled() {
            return;
        }
    }
}

async fn run_one(inner: &Arc<Inner>, queued: &Queued) {
    let (id, owner) = (queued.id.as_str(), queued.owner.as_str());
    let Some(live) = inner.live.lock().unwrap().get(id).cloned() else { return };
    if live.cancel.is_cancelled() {
        inner.retire(id);
        return;
    }
    // Read (and marked started), not taken from the queue: another host sharing the database
    // may have cancelled or claimed it.
    let task = match inner.store.start(owner, id, inner.runners.id()).await {
        Ok(Some(task)) if !task.status.is_terminal() => {
            audit::started(&inner.settings.audit, &task);
            task
        }
        Ok(_) => {
            // Cancelled (or purged, or claimed by another host) while it waited in the queue.
            // Claimed and still going: its session here hears how it goes on.
            if let Some(events) = &live.events {
                if let Ok(Some(task)) = inner.store.get(owner, id).await {
                    if !task.status.is_terminal() && task.runner != inner.runners.id() {
                        inner.relays.watch(&task, events.clone());
                    }
                }
            }
            inner.retire(id);
            return;
        }
        Err(e) => {
            tracing::error!(task = %id, "reading a queued task failed: {e}");
            inner.retire(id);
            return;
        }
    };
    let control = inner.control(&live);
    let local_run = live.local_run.lock().unwrap().take();
    let span = run_span(inner, &task);
    let run = async {
        let finished = match local_run {
            Some(run) => run(&task, control).await,
            None => inner.runner.run(&task, control).await,
        };
        if !span.is_disabled() {
            span.record("corral.outcome", finished.outcome.kind().as_str());
        }
        inner.conclude(&live, finished).await
    };
    if run.instrument(span.clone()).await {
        inner.retire(id);
    }
}

/// The span of this run of `task`: a child of the request that created it, wherever that was.
fn run_span(inner: &Inner, task: &Task) -> tracing::Span {
    if !crate::telemetry::enabled() {
        return tracing::Span::none();
    }
    let parent = task.trace_context.as_deref().and_then(Carrier::from_stored);
    // The first attempt waited in the queue since its admission; a later one since the crash.
    let waited = if task.attempts <= 1 { now_ms() - task.created_at } else { 0 };
    trace::task_run(parent.as_ref(), &task.id, &task.tool, task.attempts, waited, inner.runners.id())
}

/// Runs a call adopted as task `task` as it goes on (see `Launch::Running`): no worker, the
/// running slot reserved at admission. Shutdown drops it where it is, guest included; like a
/// worker's run, it stays `working` in the store for recovery.
pub(super) async fn run_adopted(inner: Arc<Inner>, live: Arc<Live>, task: Task, run: LocalRun, stop: CancellationToken) {
    let control = inner.control(&live);
    let ended = tokio::select! {
        _ = stop.cancelled() => true,
        finished = run(&task, control) => inner.conclude(&live, finished).await,
    };
    inner.counts.lock().unwrap().running -= 1;
    if ended {
        inner.retire(&task.id);
    }
}

/// The `statusMessage` of a task whose own request was cancelled as the task was made (a
/// 2026-07-28 call adopted as its response stream closed): nobody holds its id.
const REQUEST_CANCELLED: &str = "cancelled: its request was cancelled as it became a task";

impl Inner {
    /// Stores how a run of `live` ended, fenced on this host, and announces it. A run the
    /// engine stopped writes nothing (its end is stored already); one cancelled another way (an
    /// adopted call's request, cancelled as it became a task) is stored `cancelled`, never left
    /// `working` nor stored as the failure the stopped guest reported.
    ///
    /// An end the store fails to take is kept and written when it answers again (`pending`);
    /// false then: the task is not retired until it is written, so no waiter is told an end the
    /// store does not hold. True when the caller retires the task now.
    async fn conclude(&self, live: &Arc<Live>, finished: Finished) -> bool {
        if live.stopped_by_engine() {
            return true;
        }
        let (status, message, outcome) = match live.cancel.is_cancelled() {
            true => (TaskStatus::Cancelled, Some(REQUEST_CANCELLED.to_owned()), Outcome::Cancelled),
            false => (finished.status, finished.message, finished.outcome),
        };
        match self.store.finish_as(&live.id, self.runners.id(), status, message.as_deref(), &outcome).instrument(trace::store("finish")).await {
            Ok(Some(ended)) => {
                audit::ended(&self.settings.audit, &ended, &outcome);
                live.announce(&ended);
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(task = %live.id, "storing the task's outcome failed; keeping it to write when the store answers: {e}");
                self.keep_end(PendingEnd { live: live.clone(), status, message, outcome });
                return false;
            }
        }
        true
    }
}

/// The `statusMessage` of a task cancelled at recovery because its owner was a session of the
/// host that died.
const SESSION_ENDED: &str = "cancelled: its session ended with the host that held it";

impl Inner {
    /// Tasks left `working` or `input_required` by a host that died are claimed by this one.
    /// A task whose owner went with that host (its session) is cancelled: no one can reach it.
    /// A task no worker had started yet has done nothing, so it is queued whatever its tool;
    /// a started one is queued again if the runner may run its tool again, and otherwise
    /// fails with a message saying why.
    ///
    /// The verdict on a started task needs its tool, which the runner may know only once its
    /// plugin has loaded; the tasks whose verdict is not ready at once are returned, for
    /// [`Inner::settle`] to decide beside everything else (start does not wait for them).
    pub(super) async fn recover(self: &Arc<Self>) -> Result<Vec<Task>, EngineError> {
        let me = self.runners.id();
        let mut claimed = Vec::new();
        if !self.runners.is_shared() {
            for task in self.store.unfinished().await? {
                if self.runners.is_alive(&task.runner) {
                    continue;
                }
                if let Some(task) = self.store.claim(&task.id, &task.runner, me).await? {
                    claimed.push(task);
                }
            }
        }
        claimed.extend(self.store.claim_orphans(me).await?);
        let mut later = Vec::new();
        for task in claimed {
            if !self.runner.outlives_host(&task.owner) {
                tracing::info!(task = %task.id, tool = %task.tool, "cancelling a task whose session ended with its host");
                if let Some(ended) = self.store.finish_as(&task.id, me, TaskStatus::Cancelled, Some(SESSION_ENDED), &Outcome::Cancelled).await? {
                    audit::ended(&self.settings.audit, &ended, &Outcome::Cancelled);
                }
                continue;
            }
            let started = self.store.started(&task.id).await?;
            match verdict(&*self.runner, &task, started).now_or_never() {
                Some(verdict) => self.recovered(&task, verdict).await?,
                None => later.push(task),
            }
        }
        Ok(later)
    }

    /// The verdicts [`Inner::recover`] could not reach at once, all waited for together: a task
    /// of a plugin that loads quickly runs without waiting behind one whose plugin is slow.
    pub(super) async fn settle(self: &Arc<Self>, started: Vec<Task>) {
        futures_util::future::join_all(started.iter().map(|task| async move {
            let verdict = verdict(&*self.runner, task, true).await;
            if let Err(e) = self.recovered(task, verdict).await {
                tracing::error!(task = %task.id, "recovering the task failed: {e}");
            }
        }))
        .await;
    }

    /// Queues a recovered task again, or fails it with the verdict's message.
    async fn recovered(self: &Arc<Self>, task: &Task, verdict: Verdict) -> Result<(), EngineError> {
        if let Verdict::Interrupt(message) = verdict {
            tracing::warn!(task = %task.id, tool = %task.tool, "failing a task its host left unfinished: {message}");
            if let Some(ended) = self.store.finish_as(&task.id, self.runners.id(), TaskStatus::Failed, Some(&message), &Outcome::Interrupted).await? {
                audit::ended(&self.settings.audit, &ended, &Outcome::Interrupted);
            }
        } else {
            tracing::info!(task = %task.id, tool = %task.tool, checkpoint = task.checkpoint, "running a task its host left unfinished");
            Reservation::force(self, &task.owner).keep();
            self.enqueue(task, None, None);
        }
        Ok(())
    }
}

/// Follows the changes other hosts make to the tasks this one runs, until `stop` fires: a
/// task cancelled on another replica is stopped here (its guest within one epoch tick) and
/// its requestor told. After a resync (the store's connection came back) every live task is
/// read again, so a cancel sent while the connection was down is not missed.
/// A task admitted (status `working`) wakes `spread`, so idle workers here look for it.
/// When this host learns it was taken for dead, every live task is read again too, and the
/// runs whose tasks now belong to another host are stopped.
pub(super) async fn follow(inner: Arc<Inner>, mut changes: broadcast::Receiver<StoreEvent>, stop: CancellationToken) {
    loop {
        let event = tokio::select! {
            _ = stop.cancelled() => return,
            event = changes.recv() => event,
        };
        if let Ok(StoreEvent::Progress { id, progress, message_in_row }) = &event {
            // Another replica runs a task whose session is here. If it is still queued here, that
            // replica claimed it: stop it here and relay from now on (`stop_if_ended_elsewhere`).
            let queued_here = inner.live.lock().unwrap().get(id).is_some_and(|live| live.events.is_some());
            if queued_here && !inner.relays.is_watched(id) {
                inner.stop_if_ended_elsewhere(id).await;
            }
            inner.relay_progress(id, progress, *message_in_row).await;
            continue;
        }
        if let Ok(StoreEvent::Changed { id, .. }) = &event {
            if inner.relays.is_watched(id) {
                inner.relay(id).await;
                continue;
            }
        }
        if let Ok(StoreEvent::Resync) | Err(broadcast::error::RecvError::Lagged(_)) = &event {
            for id in inner.relays.ids() {
                inner.relay(&id).await;
            }
        }
        let ids: Vec<String> = match event {
            Ok(StoreEvent::Changed { id, status }) if status.is_terminal() => vec![id],
            // Another host wrote it: if it is live here, it was claimed (see `spread`).
            Ok(StoreEvent::Changed { id, status: TaskStatus::InputRequired }) => vec![id],
            Ok(StoreEvent::Changed { status: TaskStatus::Working, .. }) => {
                inner.spread.notify_one();
                continue;
            }
            Ok(StoreEvent::Changed { .. }) => continue,
            Ok(StoreEvent::Progress { .. }) => continue, // handled above
            Ok(StoreEvent::Answered { .. }) => continue, // for the waiting guest (`Inputs::answers`)
            Ok(StoreEvent::Resync) | Err(broadcast::error::RecvError::Lagged(_)) => inner.live.lock().unwrap().keys().cloned().collect(),
            Ok(StoreEvent::TakenForDead) => {
                let ids: Vec<String> = inner.live.lock().unwrap().keys().cloned().collect();
                let mut stopped = 0;
                for id in &ids {
                    stopped += usize::from(inner.stop_if_ended_elsewhere(id).await);
                }
                tracing::warn!(
                    "this replica was taken for dead (its heartbeat lapsed past the host expiry): stopped {stopped} stale runs of tasks other replicas claimed"
                );
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        for id in ids {
            inner.stop_if_ended_elsewhere(&id).await;
        }
    }
}

impl Inner {
    /// Stops task `id` if it is live here and the store says another host cancelled it, that
    /// it ended on another host (which claimed it while it waited here: see `spread`), or that
    /// another host claimed it (this one was taken for dead): a stale run, whose writes the
    /// fence would refuse. True when it stopped the task.
    async fn stop_if_ended_elsewhere(&self, id: &str) -> bool {
        let Some(live) = self.live.lock().unwrap().get(id).cloned() else { return false };
        if live.cancel.is_cancelled() {
            return false; // cancelled here: `Engine::cancel` does the rest
        }
        match self.store.get(&live.owner, id).await {
            Ok(Some(task)) if task.status == TaskStatus::Cancelled || (task.status.is_terminal() && task.runner != self.runners.id()) => {
                tracing::info!(task = %id, status = task.status.as_str(), "ended on another replica; stopping it here");
                live.stop();
                live.announce(&task);
                self.retire(id);
                true
            }
            Ok(Some(task)) if task.runner != self.runners.id() => {
                // The task goes on where it is now; its session here hears how it goes.
                tracing::info!(task = %id, runner = %task.runner, "claimed by another replica; stopping it here");
                live.stop();
                if let Some(events) = &live.events {
                    if task.status != TaskStatus::Working {
                        events.status_changed(&task);
                    }
                    self.relays.watch(&task, events.clone());
                }
                self.retire(id);
                true
            }
            Ok(_) => false,
            Err(e) => {
                tracing::warn!(task = %id, "reading a task cancelled elsewhere failed: {e}");
                false
            }
        }
    }
}

/// How often a host on a store that announces nothing looks for cancels other processes wrote
/// there, while it runs tasks: the most a cancel from `corral tasks` (or another host on the
/// same SQLite file) waits before the guest is stopped.
const OUTSIDE_CANCELS_EVERY: std::time::Duration = std::time::Duration::from_millis(200);

/// On a store that announces nothing ([`TaskStore::subscribe`](super::TaskStore::subscribe) is
/// `None`: SQLite), stops the runs here of tasks that another process cancelled, until `stop`
/// fires: what `follow` does for a shared store, from the store's cancel notices
/// ([`TaskStore::cancels_after`](super::TaskStore::cancels_after)) instead of `NOTIFY`. It
/// reads only while this host has live tasks; a notice of a task not live here costs a lookup.
pub(super) async fn outside_cancels(inner: Arc<Inner>, stop: CancellationToken) {
    let mut seen = None;
    let mut ticks = tokio::time::interval(OUTSIDE_CANCELS_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = ticks.tick() => {}
        }
        if seen.is_some() && inner.live.lock().unwrap().is_empty() {
            continue;
        }
        match inner.store.cancels_after(seen).await {
            Ok((newest, ids)) => {
                seen = Some(newest);
                for id in ids {
                    inner.stop_if_ended_elsewhere(&id).await;
                }
            }
            Err(e) => tracing::warn!("looking for tasks cancelled by other processes failed: {e}"),
        }
    }
}

/// How long a task waits for a worker of the host that admitted it before an idle replica
/// may take it: that host's own worker, when it has one free, starts it well within this, and
/// only there does the task reach its requestor's session (elicitation, progress).
const WAITED_BEFORE_SPREAD_MS: i64 = 100;

/// Load spreading across replicas of a shared store, until `stop` fires: when another host
/// admits a task (`follow` wakes this), a worker here finishes one, or at each fallback tick, and this
/// host has idle workers, it claims tasks that have waited [`WAITED_BEFORE_SPREAD_MS`] on a
/// busy host and runs them here.
pub(super) async fn spread(inner: Arc<Inner>, stop: CancellationToken) {
    let fallback = (inner.settings.host_expiry / 4).max(std::time::Duration::from_millis(50));
    let waited = std::time::Duration::from_millis(WAITED_BEFORE_SPREAD_MS as u64);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = inner.spread.notified() => {}
            _ = tokio::time::sleep(fallback) => {}
        }
        // A task admitted just now may still start where it was admitted.
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(waited) => {}
        }
        if let Err(e) = inner.take_waiting_elsewhere().await {
            tracing::warn!("taking tasks waiting on other replicas failed: {e}");
        }
    }
}

impl Inner {
    /// Claims as many tasks waiting on busy hosts as this one has idle workers, and queues them.
    async fn take_waiting_elsewhere(self: &Arc<Self>) -> Result<(), EngineError> {
        if !self.may_claim() {
            return Ok(());
        }
        let idle = {
            let counts = self.counts.lock().unwrap();
            self.settings.max_running.max(1).saturating_sub(counts.running + counts.queued)
        };
        if idle == 0 {
            return Ok(());
        }
        for task in self.store.claim_waiting(self.runners.id(), idle, WAITED_BEFORE_SPREAD_MS).await? {
            tracing::debug!(task = %task.id, tool = %task.tool, "running a task that waited on a busy replica");
            Reservation::force(self, &task.owner).keep();
            self.enqueue(&task, None, None);
        }
        Ok(())
    }
}

/// Every `reap_every`: recovers orphans of hosts that died since, and deletes expired tasks.
/// On a store that tracks hosts by heartbeat, recovery looks four times per host expiry (if
/// that is more often), so a dead replica's tasks move within about the expiry. Stops when
/// `stop` fires.
pub(super) async fn reaper(inner: Arc<Inner>, stop: CancellationToken) {
    let every = inner.settings.reap_every;
    let recover_every = match inner.runners.is_shared() {
        true => every.min(inner.settings.host_expiry / 4).max(std::time::Duration::from_millis(10)),
        false => every,
    };
    // The first look is `Engine::start`'s own recovery.
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + recover_every, recover_every);
    let mut purge_at = tokio::time::Instant::now() + every;
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = ticks.tick() => {}
        }
        // A host that cannot reach the store leaves orphans to a replica that can.
        let recovered = match inner.may_claim() {
            true => inner.recover().await,
            false => Ok(Vec::new()),
        };
        match recovered {
            Ok(later) => {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = inner.settle(later) => {}
                }
            }
            Err(e) => tracing::error!("recovering orphaned tasks failed: {e}"),
        }
        if tokio::time::Instant::now() < purge_at {
            continue;
        }
        purge_at = tokio::time::Instant::now() + every;
        match inner.store.purge_expired(now_ms()).await {
            Ok(0) => {}
            Ok(n) => tracing::info!("deleted {n} expired tasks"),
            Err(e) => tracing::error!("deleting expired tasks failed: {e}"),
        }
    }
}
