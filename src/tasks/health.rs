//! Whether this host reaches its task store: what a readiness probe asks, and what decides
//! whether this replica may take on other replicas' tasks.
//!
//! A probe pings the store (one cheap round trip, bounded by [`CHECK_TIMEOUT`]); the answer is
//! kept for [`CHECK_EVERY`], so probes from every load balancer do not hammer the store. A host
//! whose last ping failed, or whose task ends wait in memory for the store (`pending`), claims
//! nothing new (neither tasks waiting on busy replicas nor a dead replica's orphans): it could
//! not store their ends either, and a replica that can takes them instead.

use std::time::{Duration, Instant};

use super::engine::{Engine, Inner};

/// The longest a ping may take before the store counts as unreachable.
const CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a ping's answer stands.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// The last ping's answer: when, and `None` when the store answered.
#[derive(Default)]
pub(super) struct StoreHealth(tokio::sync::Mutex<Option<(Instant, Option<String>)>>);

impl StoreHealth {
    /// Whether the last ping (if any) found the store; never waits.
    fn last_ok(&self) -> bool {
        match self.0.try_lock() {
            Ok(last) => last.as_ref().is_none_or(|(_, problem)| problem.is_none()),
            // A ping is under way: go by what the pending ends say.
            Err(_) => true,
        }
    }
}

impl Engine {
    /// Whether the store is reachable from here now: `Err` says why not (a failed or slow
    /// ping, or task ends waiting in memory for it). Pings at most every [`CHECK_EVERY`].
    pub async fn store_reachable(&self) -> Result<(), String> {
        let inner = &self.inner;
        let pending = inner.pending.len();
        if pending > 0 {
            return Err(format!("{pending} task ends wait for the task store to answer again"));
        }
        let mut last = inner.health.0.lock().await;
        if let Some((at, problem)) = &*last {
            if at.elapsed() < CHECK_EVERY {
                return problem.clone().map_or(Ok(()), Err);
            }
        }
        // What a probe reads names the problem, not the store's own words (which may name
        // hosts and users); the log has those.
        let problem = match tokio::time::timeout(CHECK_TIMEOUT, inner.store.ping()).await {
            Ok(Ok(())) => None,
            Ok(Err(e)) => {
                tracing::warn!("the task store does not answer: {e}; this replica claims no other replica's tasks until it does");
                Some("the task store does not answer".to_owned())
            }
            Err(_) => {
                tracing::warn!("the task store did not answer within {CHECK_TIMEOUT:?}; this replica claims no other replica's tasks until it does");
                Some(format!("the task store did not answer within {CHECK_TIMEOUT:?}"))
            }
        };
        *last = Some((Instant::now(), problem.clone()));
        problem.map_or(Ok(()), Err)
    }
}

impl Inner {
    /// Whether this host may take on tasks it did not admit (see the module doc).
    pub(super) fn may_claim(&self) -> bool {
        self.pending.len() == 0 && self.health.last_ok()
    }
}
