//! What this host learns from the others sharing its store: cancels and claims written
//! elsewhere stop the runs here, relayed tasks are told to their sessions, and idle workers here
//! take tasks waiting on busy replicas (load spreading).

use std::sync::Arc;

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::capacity::Reservation;
use super::error::EngineError;
use super::model::TaskStatus;
use super::state::Inner;
use super::store::StoreEvent;

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
            let queued_here = inner.live.get(id).is_some_and(|live| live.events.is_some());
            if queued_here && !inner.relays.is_watched(id) {
                stop_if_ended_elsewhere(&inner, id).await;
            }
            inner.relays.relay_progress(id, progress, *message_in_row).await;
            continue;
        }
        if let Ok(StoreEvent::Changed { id, .. }) = &event {
            if inner.relays.is_watched(id) {
                inner.relays.relay(id).await;
                continue;
            }
        }
        if let Ok(StoreEvent::Resync) | Err(broadcast::error::RecvError::Lagged(_)) = &event {
            for id in inner.relays.ids() {
                inner.relays.relay(&id).await;
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
            Ok(StoreEvent::Resync) | Err(broadcast::error::RecvError::Lagged(_)) => inner.live.ids(),
            Ok(StoreEvent::TakenForDead) => {
                let ids = inner.live.ids();
                let mut stopped = 0;
                for id in &ids {
                    stopped += usize::from(stop_if_ended_elsewhere(&inner, id).await);
                }
                tracing::warn!(
                    "this replica was taken for dead (its heartbeat lapsed past the host expiry): stopped {stopped} stale runs of tasks other replicas claimed"
                );
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        for id in ids {
            stop_if_ended_elsewhere(&inner, &id).await;
        }
    }
}

/// Stops task `id` if it is live here and the store says another host cancelled it, that
/// it ended on another host (which claimed it while it waited here: see `spread`), or that
/// another host claimed it (this one was taken for dead): a stale run, whose writes the
/// fence would refuse. True when it stopped the task.
async fn stop_if_ended_elsewhere(inner: &Inner, id: &str) -> bool {
    let Some(live) = inner.live.get(id) else { return false };
    if live.cancel.is_cancelled() {
        return false; // cancelled here: `Engine::cancel` does the rest
    }
    match inner.store.get(&live.owner, id).await {
        Ok(Some(task)) if task.status == TaskStatus::Cancelled || (task.status.is_terminal() && task.runner != inner.runners.id()) => {
            tracing::info!(task = %id, status = task.status.as_str(), "ended on another replica; stopping it here");
            live.stop();
            live.announce(&task);
            inner.live.retire(id);
            true
        }
        Ok(Some(task)) if task.runner != inner.runners.id() => {
            // The task goes on where it is now; its session here hears how it goes.
            tracing::info!(task = %id, runner = %task.runner, "claimed by another replica; stopping it here");
            live.stop();
            if let Some(events) = &live.events {
                if task.status != TaskStatus::Working {
                    events.status_changed(&task);
                }
                inner.relays.watch(&task, events.clone());
            }
            inner.live.retire(id);
            true
        }
        Ok(_) => false,
        Err(e) => {
            tracing::warn!(task = %id, "reading a task cancelled elsewhere failed: {e}");
            false
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
        if seen.is_some() && inner.live.is_empty() {
            continue;
        }
        match inner.store.cancels_after(seen).await {
            Ok((newest, ids)) => {
                seen = Some(newest);
                for id in ids {
                    stop_if_ended_elsewhere(&inner, &id).await;
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
        if let Err(e) = take_waiting_elsewhere(&inner).await {
            tracing::warn!("taking tasks waiting on other replicas failed: {e}");
            inner.health.failed();
        }
    }
}

/// Claims as many tasks waiting on busy hosts as this one has idle workers, and queues them.
async fn take_waiting_elsewhere(inner: &Arc<Inner>) -> Result<(), EngineError> {
    if !inner.may_claim() {
        return Ok(());
    }
    let idle = inner.capacity.idle_workers();
    if idle == 0 {
        return Ok(());
    }
    for task in inner.store.claim_waiting(inner.runners.id(), idle, WAITED_BEFORE_SPREAD_MS).await? {
        tracing::debug!(task = %task.id, tool = %task.tool, "running a task that waited on a busy replica");
        Reservation::force(&inner.capacity, &task.owner).keep();
        inner.enqueue(&task, None, None);
    }
    Ok(())
}
