//! Ends of tasks the store could not take when the run ended (PostgreSQL unreachable, a SQLite
//! write error), kept in memory and written as soon as the store answers again.
//!
//! Without this an outcome that failed to be written was lost: the task stayed `working` until
//! its host died and recovery ran it again (or failed it as interrupted), although its run had
//! ended once and well. A pending end stays live in this host (its `tasks/result` waiters keep
//! waiting, its owner slot stays taken), so nobody is told an end the store does not hold; once
//! written it is announced and retired like any other.
//!
//! The write is [`TaskStore::finish_as`](super::store::TaskStore::finish_as), fenced on this
//! host: a task that another host claimed meanwhile (this one was taken for dead), or that was
//! cancelled, keeps what the store has and the pending end is dropped.
//!
//! Bounded: at most [`MAX_PENDING_ENDS`]; beyond that the oldest is logged, counted and dropped
//! (its task stays `working` for recovery, as before). At shutdown the ends still pending are
//! tried until the shutdown grace is spent ([`PendingEnds::flush_before`]); what is left then is lost
//! the same way.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::health::StoreHealth;
use super::live::{Live, LiveTasks};
use super::model::{Outcome, TaskStatus};
use super::retry::Backoff;
use super::store::TaskStore;
use crate::audit::Audit;

/// How many ends may wait for the store at once. An outcome can be large (a tool's whole
/// result), so this bounds the memory an outage can pin; a host runs far fewer tasks at a time
/// than this, so only a long outage under load reaches it.
pub(super) const MAX_PENDING_ENDS: usize = 1024;

/// How a run ended, not yet stored.
pub(super) struct PendingEnd {
    pub(super) live: Arc<Live>,
    pub(super) status: TaskStatus,
    pub(super) message: Option<String>,
    pub(super) outcome: Outcome,
}

/// The ends waiting for the store, oldest first, and what writing them takes; see the module doc.
pub(super) struct PendingEnds {
    queue: Mutex<VecDeque<PendingEnd>>,
    /// Wakes [`PendingEnds::flush`] when an end is added.
    added: Notify,
    /// Ends dropped because more than [`MAX_PENDING_ENDS`] waited.
    dropped: AtomicU64,
    store: Arc<dyn TaskStore>,
    /// This host's runner id: the writes are fenced on it.
    runner: Arc<str>,
    /// Where a written end is recorded.
    audit: Audit,
    /// Where a written (or dropped) end's task is retired.
    live: Arc<LiveTasks>,
    /// Told of every failed write.
    health: Arc<StoreHealth>,
}

impl PendingEnds {
    /// None pending yet: ends are written to `store` as host `runner`, recorded in `audit`, their
    /// tasks retired from `live`, and failures told to `health`.
    pub(super) fn new(store: Arc<dyn TaskStore>, runner: Arc<str>, audit: Audit, live: Arc<LiveTasks>, health: Arc<StoreHealth>) -> PendingEnds {
        PendingEnds { queue: Mutex::default(), added: Notify::new(), dropped: AtomicU64::new(0), store, runner, audit, live, health }
    }

    /// Keeps `end` until the store takes it; returns the oldest end when that one had to go to
    /// make room.
    fn push(&self, end: PendingEnd) -> Option<PendingEnd> {
        let evicted = {
            let mut queue = self.queue.lock().unwrap();
            queue.push_back(end);
            (queue.len() > MAX_PENDING_ENDS).then(|| queue.pop_front()).flatten()
        };
        self.added.notify_one();
        if evicted.is_some() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        evicted
    }

    /// Ends waiting now.
    pub(super) fn len(&self) -> usize {
        self.queue.lock().unwrap().len()
    }

    /// Ends dropped so far because too many waited.
    pub(super) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Keeps the end of a run for [`PendingEnds::flush`] to write, after the store failed to
    /// take it.
    pub(super) fn keep(&self, end: PendingEnd) {
        self.health.failed();
        if let Some(old) = self.push(end) {
            tracing::error!(
                task = %old.live.id,
                limit = MAX_PENDING_ENDS,
                "too many task ends wait for the store; dropping the oldest (the task stays working for recovery)"
            );
            self.live.retire(&old.live.id);
        }
    }

    /// Writes the oldest pending end. `Err(())`: the store is still failing.
    async fn write_oldest(&self) -> Result<(), ()> {
        let Some((live, status, message, outcome)) =
            self.queue.lock().unwrap().front().map(|e| (e.live.clone(), e.status, e.message.clone(), e.outcome.clone()))
        else {
            return Ok(());
        };
        // Written even when the engine stopped the run meanwhile: the fence keeps whatever the
        // store holds (a cancel that was stored, a claim by another host), and a cancel that
        // failed to be stored leaves nothing this end should give way to.
        match self.store.finish_as(&live.id, &self.runner, status, message.as_deref(), &outcome).await {
            Ok(Some(ended)) => {
                tracing::info!(task = %live.id, status = ended.status.as_str(), "stored a task's end once the store answered again");
                super::audit::ended(&self.audit, &ended, &outcome);
                live.announce(&ended);
            }
            Ok(None) => tracing::warn!(task = %live.id, "a task's pending end was refused: it ended or moved to another host meanwhile"),
            Err(e) => {
                tracing::warn!(task = %live.id, "storing the task's outcome failed again: {e}");
                self.health.failed();
                return Err(());
            }
        }
        // Only this task removes entries from the front, save `keep`'s eviction: drop the
        // entry written, if it is still there.
        let mut queue = self.queue.lock().unwrap();
        if queue.front().is_some_and(|e| Arc::ptr_eq(&e.live, &live)) {
            queue.pop_front();
        }
        drop(queue);
        self.live.retire(&live.id);
        Ok(())
    }

    /// Writes pending ends, oldest first, retrying with a capped backoff while the store fails,
    /// until `stop` fires (then [`PendingEnds::flush_before`] has the shutdown grace for the rest).
    pub(super) async fn flush(&self, stop: CancellationToken) {
        let mut backoff = Backoff::default();
        loop {
            if self.len() == 0 {
                backoff.reset();
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = self.added.notified() => {}
                }
                // Just failed in `conclude`: give the store a moment before the first retry.
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(backoff.next()) => {}
            }
            self.write_pending(&mut backoff).await;
        }
    }

    /// Writes pending ends, oldest first, until none is left or a write fails (`backoff` then
    /// says how long to wait; a success resets it).
    async fn write_pending(&self, backoff: &mut Backoff) {
        while self.len() > 0 {
            if self.write_oldest().await.is_err() {
                return;
            }
            backoff.reset();
        }
    }

    /// Shutdown: the ends still pending get up to `grace` to be written, retried as
    /// [`PendingEnds::flush`] does; those left after it are logged and lost (their tasks stay `working`
    /// for recovery).
    pub(super) async fn flush_before(&self, grace: Duration) {
        if self.len() == 0 {
            return;
        }
        tracing::info!("{} task ends wait for the store; trying them for up to {grace:?} before exiting", self.len());
        let deadline = tokio::time::Instant::now() + grace;
        let mut backoff = Backoff::default();
        let flushed = async {
            loop {
                self.write_pending(&mut backoff).await;
                if self.len() == 0 {
                    return;
                }
                tokio::time::sleep(backoff.next()).await;
            }
        };
        let _ = tokio::time::timeout_at(deadline, flushed).await;
        let lost = self.len();
        if lost > 0 {
            tracing::error!(
                "{lost} task ends were never stored (the store did not answer within the shutdown grace, {grace:?}); their tasks stay working for recovery"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cancel::CancelHandle;
    use crate::tasks::capacity::Capacity;
    use crate::tasks::sqlite::{Durability, SqliteStore};

    fn end(id: usize) -> PendingEnd {
        let live = Arc::new(Live {
            id: format!("t{id}"),
            owner: "o".into(),
            cancel: CancelHandle::new(Arc::new(|| {})),
            stopped: Default::default(),
            events: None,
            message: Mutex::new(None),
            done: tokio::sync::watch::channel(false).0,
        });
        PendingEnd { live, status: TaskStatus::Completed, message: None, outcome: Outcome::Cancelled }
    }

    #[test]
    fn beyond_the_bound_the_oldest_end_is_dropped_and_counted() {
        let store: Arc<dyn TaskStore> = Arc::new(SqliteStore::open(std::path::Path::new(":memory:"), Durability::Process).unwrap());
        let health = Arc::new(StoreHealth::new(store.clone(), false, Duration::from_secs(1)));
        let live = Arc::new(LiveTasks::new(Capacity::new(1, 1, 1)));
        let pending = PendingEnds::new(store, "me".into(), Audit::off(), live, health);
        for n in 0..MAX_PENDING_ENDS {
            assert!(pending.push(end(n)).is_none());
        }
        let evicted = pending.push(end(MAX_PENDING_ENDS)).expect("one had to go");
        assert_eq!(evicted.live.id, "t0", "the oldest");
        assert_eq!((pending.len(), pending.dropped()), (MAX_PENDING_ENDS, 1));
        assert_eq!(pending.queue.lock().unwrap().back().unwrap().live.id, format!("t{MAX_PENDING_ENDS}"), "the newest is kept");
    }
}
