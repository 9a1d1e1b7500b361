//! What this host has taken on: tasks queued and running, and each owner's unfinished tasks,
//! counted in memory and bounded by the engine's caps.
//!
//! Admission reserves its slots here before the durable insert and gives them back if the insert
//! fails ([`Reservation`]), so a refused or failed admission leaves nothing counted; the locks are
//! not held across the insert, so concurrent admissions share one commit.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::error::EngineError;

/// Tasks this process has queued and is running.
#[derive(Default, Clone, Copy, Debug)]
pub struct Counts {
    /// Admitted (or recovered) and waiting for a worker.
    pub queued: usize,
    /// On a worker now.
    pub running: usize,
}

/// The counts and the caps they are held to.
pub(super) struct Capacity {
    counts: Mutex<Counts>,
    /// Unfinished tasks per owner in this host.
    per_owner: Mutex<HashMap<String, usize>>,
    max_queued: usize,
    max_per_owner: usize,
    max_running: usize,
}

impl Capacity {
    /// Counts held to `max_queued` waiting tasks, `max_per_owner` unfinished tasks of one owner,
    /// and `max_running` workers (which only [`Capacity::idle_workers`] reads).
    pub(super) fn new(max_queued: usize, max_per_owner: usize, max_running: usize) -> Arc<Capacity> {
        Arc::new(Capacity { counts: Mutex::default(), per_owner: Mutex::default(), max_queued, max_per_owner, max_running: max_running.max(1) })
    }

    /// The counts now.
    pub(super) fn counts(&self) -> Counts {
        *self.counts.lock().unwrap()
    }

    /// Workers neither running nor about to run a task here.
    pub(super) fn idle_workers(&self) -> usize {
        let counts = self.counts.lock().unwrap();
        self.max_running.saturating_sub(counts.running + counts.queued)
    }

    /// A worker took a queued task.
    pub(super) fn started(&self) {
        let mut counts = self.counts.lock().unwrap();
        counts.queued -= 1;
        counts.running += 1;
    }

    /// A queued task left the queue without running (the workers stopped).
    pub(super) fn unqueued(&self) {
        self.counts.lock().unwrap().queued -= 1;
    }

    /// A run (a worker's, or an adopted call's) ended.
    pub(super) fn stopped_running(&self) {
        self.counts.lock().unwrap().running -= 1;
    }

    /// One of `owner`'s tasks ended here.
    pub(super) fn release_owner(&self, owner: &str) {
        let mut per_owner = self.per_owner.lock().unwrap();
        if let Some(active) = per_owner.get_mut(owner) {
            *active = active.saturating_sub(1);
            if *active == 0 {
                per_owner.remove(owner);
            }
        }
    }
}

/// A queue (or running) slot and an owner slot, given back on drop unless
/// [`Reservation::keep`] is called.
pub(super) struct Reservation {
    held: Option<(Arc<Capacity>, String)>,
    /// Whether the slot is a running one (a call adopted as it runs) rather than a queued one.
    running: bool,
}

impl Reservation {
    /// Reserves a queue slot and an owner slot within the caps (`owner_cap`: a cap of the
    /// owner's own below `max_per_owner`), or says which cap refuses.
    pub(super) fn take(capacity: &Arc<Capacity>, owner: &str, owner_cap: Option<usize>) -> Result<Reservation, EngineError> {
        Reservation::within_caps(capacity, owner, owner_cap, false)
    }

    /// Reserves a running slot for a call that already runs: within the owner's cap, but not
    /// the queue's (it waits in no queue) nor `max_running`'s (its guest is mid-run, and
    /// stopping it to wait for a worker would throw its work away; the plugin's
    /// `max-concurrency` and the instance pool bound it instead).
    pub(super) fn running(capacity: &Arc<Capacity>, owner: &str, owner_cap: Option<usize>) -> Result<Reservation, EngineError> {
        Reservation::within_caps(capacity, owner, owner_cap, true)
    }

    fn within_caps(capacity: &Arc<Capacity>, owner: &str, owner_cap: Option<usize>, running: bool) -> Result<Reservation, EngineError> {
        let mut counts = capacity.counts.lock().unwrap();
        if !running && counts.queued >= capacity.max_queued {
            return Err(EngineError::Overloaded { queued: counts.queued, limit: capacity.max_queued });
        }
        let mut per_owner = capacity.per_owner.lock().unwrap();
        let active = per_owner.entry(owner.to_owned()).or_default();
        let limit = owner_cap.map_or(capacity.max_per_owner, |cap| cap.min(capacity.max_per_owner));
        if *active >= limit {
            return Err(EngineError::OwnerLimit { active: *active, limit });
        }
        *active += 1;
        match running {
            true => counts.running += 1,
            false => counts.queued += 1,
        }
        Ok(Reservation { held: Some((capacity.clone(), owner.to_owned())), running })
    }

    /// Reserves without the caps, for a task recovery or load spreading claimed.
    pub(super) fn force(capacity: &Arc<Capacity>, owner: &str) -> Reservation {
        capacity.counts.lock().unwrap().queued += 1;
        *capacity.per_owner.lock().unwrap().entry(owner.to_owned()).or_default() += 1;
        Reservation { held: Some((capacity.clone(), owner.to_owned())), running: false }
    }

    /// The slots now belong to a queued task (the worker and its retirement give them back).
    pub(super) fn keep(mut self) {
        self.held = None;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if let Some((capacity, owner)) = self.held.take() {
            match self.running {
                true => capacity.stopped_running(),
                false => capacity.unqueued(),
            }
            capacity.release_owner(&owner);
        }
    }
}
