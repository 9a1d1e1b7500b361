//! Recovery of the tasks a dead host left unfinished (at start, and from the reaper), and the
//! reaper that deletes expired tasks.

use std::sync::Arc;

use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;

use super::audit;
use super::capacity::Reservation;
use super::error::EngineError;
use super::model::{now_ms, Outcome, Task, TaskStatus};
use super::resume::{verdict, Verdict};
use super::state::Inner;

/// The `statusMessage` of a task cancelled at recovery because its owner was a session of the
/// host that died.
const SESSION_ENDED: &str = "cancelled: its session ended with the host that held it";

/// Tasks left `working` or `input_required` by a host that died are claimed by this one.
/// A task whose owner went with that host (its session) is cancelled: no one can reach it.
/// A task no worker had started yet has done nothing, so it is queued whatever its tool;
/// a started one is queued again if the runner may run its tool again, and otherwise
/// fails with a message saying why.
///
/// The verdict on a started task needs its tool, which the runner may know only once its
/// plugin has loaded; the tasks whose verdict is not ready at once are returned, for
/// [`settle`] to decide beside everything else (start does not wait for them).
pub(super) async fn recover(inner: &Arc<Inner>) -> Result<Vec<Task>, EngineError> {
    let me = inner.runners.id();
    let mut claimed = Vec::new();
    if !inner.runners.is_shared() {
        for task in inner.store.unfinished().await? {
            if inner.runners.is_alive(&task.runner) {
                continue;
            }
            if let Some(task) = inner.store.claim(&task.id, &task.runner, me).await? {
                claimed.push(task);
            }
        }
    }
    claimed.extend(inner.store.claim_orphans(me).await?);
    let mut later = Vec::new();
    for task in claimed {
        if !inner.runner.outlives_host(&task.owner) {
            tracing::info!(task = %task.id, tool = %task.tool, "cancelling a task whose session ended with its host");
            if let Some(ended) = inner.store.finish_as(&task.id, me, TaskStatus::Cancelled, Some(SESSION_ENDED), &Outcome::Cancelled).await? {
                audit::ended(&inner.settings.audit, &ended, &Outcome::Cancelled);
            }
            continue;
        }
        let started = inner.store.started(&task.id).await?;
        match verdict(&*inner.runner, &task, started).now_or_never() {
            Some(verdict) => recovered(inner, &task, verdict).await?,
            None => later.push(task),
        }
    }
    // Only those `settle` will decide: an error above returns none of them.
    for task in &later {
        inner.recovering.begin(&task.id);
    }
    Ok(later)
}

/// The verdicts [`recover`] could not reach at once, all waited for together: a task
/// of a plugin that loads quickly runs without waiting behind one whose plugin is slow.
pub(super) async fn settle(inner: &Arc<Inner>, started: Vec<Task>) {
    futures_util::future::join_all(started.iter().map(|task| async move {
        let verdict = verdict(&*inner.runner, task, true).await;
        if let Err(e) = recovered(inner, task, verdict).await {
            tracing::error!(task = %task.id, "recovering the task failed: {e}");
        }
        inner.recovering.decided(&task.id);
    }))
    .await;
}

/// Queues a recovered task again, or fails it with the verdict's message.
async fn recovered(inner: &Arc<Inner>, task: &Task, verdict: Verdict) -> Result<(), EngineError> {
    if let Verdict::Interrupt(message) = verdict {
        tracing::warn!(task = %task.id, tool = %task.tool, "failing a task its host left unfinished: {message}");
        if let Some(ended) = inner.store.finish_as(&task.id, inner.runners.id(), TaskStatus::Failed, Some(&message), &Outcome::Interrupted).await? {
            audit::ended(&inner.settings.audit, &ended, &Outcome::Interrupted);
        }
    } else {
        tracing::info!(task = %task.id, tool = %task.tool, checkpoint = task.checkpoint, "running a task its host left unfinished");
        Reservation::force(&inner.capacity, &task.owner).keep();
        inner.enqueue(task, None, None);
    }
    Ok(())
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
        // A host that cannot reach the store leaves orphans to a replica that can; one that
        // shares it with replicas learns from the ping when the store answers again (see
        // `health`).
        if inner.runners.is_shared() {
            let _ = inner.health.ping().await;
        }
        let recovered = match inner.may_claim() {
            true => recover(&inner).await,
            false => Ok(Vec::new()),
        };
        match recovered {
            Ok(later) => {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = settle(&inner, later) => {}
                }
            }
            Err(e) => {
                tracing::error!("recovering orphaned tasks failed: {e}");
                inner.health.failed();
            }
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
