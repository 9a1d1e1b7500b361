//! A running call's wall-clock limit, which whoever started the call may switch while it runs.
//!
//! A 2026-07-28 `optional` call starts as a plain call, under the plain call's `timeout`; when it
//! outgrows `--task-after` the host adopts it as a task, and from then on it has the task's limit
//! (`task-timeout`), still measured from the call's start. The switch must reach both places that
//! watch the clock: the host side (a timer beside the call) and the guest side (the epoch
//! callback, which stops a computing guest), so the limit is shared and read at each check.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// The limit of one call; cloned handles share it. The default keeps the plugin's `timeout`.
#[derive(Clone, Default)]
pub struct TimeLimit(Arc<Shared>);

#[derive(Default)]
struct Shared {
    /// The limit switched to, in nanoseconds; 0 while none was set.
    switched: AtomicU64,
    changed: Notify,
}

impl TimeLimit {
    /// From now on the call may run `limit` in all, counted from its start: a call already past
    /// it stops at its next check.
    pub fn switch_to(&self, limit: Duration) {
        let nanos = u64::try_from(limit.as_nanos()).unwrap_or(u64::MAX).max(1);
        self.0.switched.store(nanos, Ordering::Release);
        self.0.changed.notify_waiters();
    }

    /// The limit in force: the one switched to, else `base` (the call's `timeout`).
    pub fn get(&self, base: Duration) -> Duration {
        match self.0.switched.load(Ordering::Acquire) {
            0 => base,
            nanos => Duration::from_nanos(nanos),
        }
    }

    /// Resolves when a call started at `start` has run past its limit; returns that limit.
    pub(crate) async fn expired(&self, start: Instant, base: Duration) -> Duration {
        loop {
            // Registered before the limit is read, so a switch between the two is not missed.
            let changed = self.0.changed.notified();
            let limit = self.get(base);
            tokio::select! {
                _ = tokio::time::sleep_until((start + limit).into()) => return limit,
                _ = changed => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_switched_limit_moves_the_deadline_of_a_running_call() {
        let (limit, start) = (TimeLimit::default(), Instant::now());
        let waiting = tokio::spawn({
            let limit = limit.clone();
            async move { limit.expired(start, Duration::from_millis(100)).await }
        });
        limit.switch_to(Duration::from_millis(1500));
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!waiting.is_finished(), "the plain limit no longer applies once switched");
        assert_eq!(waiting.await.unwrap(), Duration::from_millis(1500));
        assert!(start.elapsed() >= Duration::from_millis(1500));
        assert_eq!(TimeLimit::default().get(Duration::from_secs(3)), Duration::from_secs(3));
    }
}
