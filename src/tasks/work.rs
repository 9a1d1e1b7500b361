//! The workers that run queued tasks, the run of a call adopted as a task, and how a run's end is
//! stored.

use std::sync::Arc;

use tracing::Instrument;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::audit;
use super::live::Live;
use super::model::{now_ms, Outcome, Task, TaskStatus};
use super::pending::PendingEnd;
use super::retry::Backoff;
use super::runner::{Finished, LocalRun};
use super::state::{Inner, Queued};
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
        inner.capacity.started();
        tokio::select! {
            // Shutdown drops the run where it is; see `Engine::shutdown`.
            _ = stop.cancelled() => {}
            _ = run_one(&inner, next) => {}
        }
        inner.capacity.stopped_running();
        // Idle again: tasks may be waiting on a busy replica (a shared store; else unheard).
        inner.spread.notify_one();
        if stop.is_cancelled() {
            return;
        }
    }
}

async fn run_one(inner: &Arc<Inner>, queued: Queued) {
    let Queued { id, owner, local_run } = queued;
    let (id, owner) = (id.as_str(), owner.as_str());
    let Some(live) = inner.live.get(id) else { return };
    if live.cancel.is_cancelled() {
        inner.live.retire(id);
        return;
    }
    // Read (and marked started), not taken from the queue: another host sharing the database
    // may have cancelled or claimed it.
    let task = match start_when_the_store_answers(inner, &live, owner).await {
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
            inner.live.retire(id);
            return;
        }
        // Cancelled here while the store did not answer: `Engine::cancel` did the rest.
        Err(Stopped) => {
            inner.live.retire(id);
            return;
        }
    };
    let control = inner.control(&live);
    let span = run_span(inner, &task);
    let run = async {
        let finished = match local_run {
            Some(run) => run(&task, control).await,
            None => inner.runner.run(&task, control).await,
        };
        if !span.is_disabled() {
            span.record("corral.outcome", finished.outcome.kind().as_str());
        }
        conclude(inner, &live, finished).await
    };
    if run.instrument(span.clone()).await {
        inner.live.retire(id);
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

/// A task's start was not written: it was cancelled here while the store did not answer.
struct Stopped;

/// Marks `live`'s task started (fenced on this host) and reads it. While the store does not
/// answer this is retried with a capped backoff (the worker waits: the store could not take
/// this task's end either), until the store answers or the task is cancelled here.
async fn start_when_the_store_answers(inner: &Inner, live: &Live, owner: &str) -> Result<Option<Task>, Stopped> {
    let mut backoff = Backoff::default();
    loop {
        match inner.store.start(owner, &live.id, inner.runners.id()).await {
            Ok(task) => return Ok(task),
            Err(e) => {
                tracing::warn!(task = %live.id, "marking the task started failed; trying again when the store answers: {e}");
                inner.health.failed();
            }
        }
        tokio::select! {
            _ = live.cancel.cancelled() => return Err(Stopped),
            _ = tokio::time::sleep(backoff.next()) => {}
        }
    }
}

/// Runs a call adopted as task `task` as it goes on (see `Launch::Running`): no worker, the
/// running slot reserved at admission. Shutdown drops it where it is, guest included; like a
/// worker's run, it stays `working` in the store for recovery.
pub(super) async fn run_adopted(inner: Arc<Inner>, live: Arc<Live>, task: Task, run: LocalRun, stop: CancellationToken) {
    let control = inner.control(&live);
    let ended = tokio::select! {
        _ = stop.cancelled() => true,
        finished = run(&task, control) => conclude(&inner, &live, finished).await,
    };
    inner.capacity.stopped_running();
    if ended {
        inner.live.retire(&task.id);
    }
}

/// The `statusMessage` of a task whose own request was cancelled as the task was made (a
/// 2026-07-28 call adopted as its response stream closed): nobody holds its id.
const REQUEST_CANCELLED: &str = "cancelled: its request was cancelled as it became a task";

/// Stores how a run of `live` ended, fenced on this host, and announces it. A run the
/// engine stopped writes nothing (its end is stored already); one cancelled another way (an
/// adopted call's request, cancelled as it became a task) is stored `cancelled`, never left
/// `working` nor stored as the failure the stopped guest reported.
///
/// An end the store fails to take is kept and written when it answers again (`pending`);
/// false then: the task is not retired until it is written, so no waiter is told an end the
/// store does not hold. True when the caller retires the task now.
async fn conclude(inner: &Inner, live: &Arc<Live>, finished: Finished) -> bool {
    if live.stopped_by_engine() {
        return true;
    }
    let (status, message, outcome) = match live.cancel.is_cancelled() {
        true => (TaskStatus::Cancelled, Some(REQUEST_CANCELLED.to_owned()), Outcome::Cancelled),
        false => (finished.status, finished.message, finished.outcome),
    };
    match inner.store.finish_as(&live.id, inner.runners.id(), status, message.as_deref(), &outcome).instrument(trace::store("finish")).await {
        Ok(Some(ended)) => {
            audit::ended(&inner.settings.audit, &ended, &outcome);
            live.announce(&ended);
        }
        Ok(None) => {}
        Err(e) => {
            tracing::warn!(task = %live.id, "storing the task's outcome failed; keeping it to write when the store answers: {e}");
            inner.pending.keep(PendingEnd { live: live.clone(), status, message, outcome });
            return false;
        }
    }
    true
}
