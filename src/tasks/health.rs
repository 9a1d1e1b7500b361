//! Whether this host reaches its task store: what a readiness probe asks, and what decides
//! whether this replica may take on other replicas' tasks.
//!
//! A probe pings the store (one cheap round trip, bounded by [`CHECK_TIMEOUT`]); the answer is
//! kept for [`CHECK_EVERY`], so probes from every load balancer do not hammer the store. A host
//! whose last ping failed, or whose task ends wait in memory for the store (`pending`), claims
//! nothing new (neither tasks waiting on busy replicas nor a dead replica's orphans): it could
//! not store their ends either, and a replica that can takes them instead.
//!
//! On a store shared by replicas that tell the living by heartbeat (PostgreSQL), a host that
//! lost its store also waits, once the store answers again, for one whole host expiry before
//! it claims anything. Every replica's heartbeat failed during the outage too, so the moment
//! the store is back each of them looks dead to the others; within one expiry every live one
//! has beaten again (it beats three times per expiry), and only the ones still silent then are
//! dead. Without the wait, each replica took the others' tasks as the store came back and
//! failed the runs that had completed meanwhile as interrupted.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::store::TaskStore;

/// The longest a ping may take before the store counts as unreachable.
const CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// How long a ping's answer stands.
const CHECK_EVERY: Duration = Duration::from_secs(1);

/// What this host has seen of its store: the last ping's answer, and whether the store has
/// answered without a failure in between, since when.
pub(super) struct StoreHealth {
    store: Arc<dyn TaskStore>,
    /// Whether the store is shared by replicas that tell the living by heartbeat.
    shared: bool,
    /// How long the store must have answered before this host claims anything, when `shared`.
    host_expiry: Duration,
    /// The last ping: when, and `None` when the store answered.
    last_ping: tokio::sync::Mutex<Option<(Instant, Option<String>)>>,
    answering: Streak,
}

/// The failures and answers seen of the store, in order: whether it answers now, and since when.
#[derive(Default)]
struct Streak(Mutex<Answering>);

/// Whether the store answers this host, and since when.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
enum Answering {
    /// No call has failed since this host started.
    #[default]
    Always,
    /// A call failed; nothing has answered since.
    Failing,
    /// The store failed, and has answered every call since this instant.
    Since(Instant),
}

impl StoreHealth {
    /// Nothing seen yet of `store`; `shared` and `host_expiry` as the module doc says.
    pub(super) fn new(store: Arc<dyn TaskStore>, shared: bool, host_expiry: Duration) -> StoreHealth {
        StoreHealth { store, shared, host_expiry, last_ping: Default::default(), answering: Default::default() }
    }

    /// Whether the last ping (if any) found the store; never waits.
    fn last_ok(&self) -> bool {
        match self.last_ping.try_lock() {
            Ok(last) => last.as_ref().is_none_or(|(_, problem)| problem.is_none()),
            // A ping is under way: go by what the pending ends say.
            Err(_) => true,
        }
    }

    /// A store call failed as an unreachable store does.
    pub(super) fn failed(&self) {
        self.answering.failed();
    }

    /// The store answered a ping.
    fn answered(&self) {
        self.answering.answered();
    }
}

impl Streak {
    /// A store call failed as an unreachable store does.
    fn failed(&self) {
        *self.0.lock().unwrap() = Answering::Failing;
    }

    /// The store answered a ping.
    fn answered(&self) {
        let mut answering = self.0.lock().unwrap();
        if *answering == Answering::Failing {
            *answering = Answering::Since(Instant::now());
        }
    }

    /// Whether the store has answered, with no failure in between, for at least `span` (or
    /// never failed).
    fn answered_for(&self, span: Duration) -> bool {
        match *self.0.lock().unwrap() {
            Answering::Always => true,
            Answering::Failing => false,
            Answering::Since(at) => at.elapsed() >= span,
        }
    }
}

impl StoreHealth {
    /// Whether the store is reachable from here now: `Err` says why not (a failed or slow
    /// ping, or `pending` task ends waiting in memory for it). Pings at most every
    /// [`CHECK_EVERY`].
    pub(super) async fn reachable(&self, pending: usize) -> Result<(), String> {
        if pending > 0 {
            return Err(format!("{pending} task ends wait for the task store to answer again"));
        }
        let mut last = self.last_ping.lock().await;
        if let Some((at, problem)) = &*last {
            if at.elapsed() < CHECK_EVERY {
                return problem.clone().map_or(Ok(()), Err);
            }
        }
        let problem = self.ping().await.err();
        *last = Some((Instant::now(), problem.clone()));
        problem.map_or(Ok(()), Err)
    }

    /// Pings the store (bounded by [`CHECK_TIMEOUT`]) and records what it found. `Err` names
    /// the problem as a probe may read it: not the store's own words (which may name hosts and
    /// users); the log has those.
    pub(super) async fn ping(&self) -> Result<(), String> {
        let problem = match tokio::time::timeout(CHECK_TIMEOUT, self.store.ping()).await {
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
        match problem {
            None => self.answered(),
            Some(_) => self.failed(),
        }
        problem.map_or(Ok(()), Err)
    }

    /// Whether this host may take on tasks it did not admit, with `pending` task ends waiting
    /// for the store (see the module doc).
    pub(super) fn may_claim(&self, pending: usize) -> bool {
        // Hosts that tell the living by lock files (SQLite) see a dead host at once, whatever
        // the store did meanwhile.
        let heard_the_others = !self.shared || self.answering.answered_for(self.host_expiry);
        pending == 0 && self.last_ok() && heard_the_others
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_a_failure_the_store_must_answer_for_the_whole_span() {
        let health = Streak::default();
        assert!(health.answered_for(Duration::from_secs(3600)), "never failed");
        health.failed();
        assert!(!health.answered_for(Duration::ZERO), "failing");
        health.answered();
        assert!(health.answered_for(Duration::ZERO));
        assert!(!health.answered_for(Duration::from_secs(3600)), "answering for less than the span");
        let since = *health.0.lock().unwrap();
        health.answered();
        assert_eq!(*health.0.lock().unwrap(), since, "a later answer does not restart the span");
        health.failed();
        assert!(!health.answered_for(Duration::ZERO), "a new failure restarts it");
    }
}
