//! Introspection refusals remembered for a short while, so that a client repeating a garbage or
//! revoked opaque token costs the authorization server one call, not one per request.
//!
//! Kept apart from the active answers ([`super::answers`]) on purpose: garbage must never push
//! good answers out. Keyed by the token's SHA-256, never the token; bounded (the oldest refusal
//! goes first when full) and short-lived ([`REMEMBER`]): a refusal is not worth keeping long,
//! and a token refused for a reason that passes (an `nbf` not reached) is asked about again soon.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::answers::Digested;
use super::rejection::Reason;

/// How long a refusal is remembered.
pub const REMEMBER: Duration = Duration::from_secs(30);

/// The bounded map of recent refusals.
pub struct Refusals {
    capacity: usize,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<Digested, (Reason, Instant)>,
    /// Digests in the order they were stored, with when (a stale copy is skipped).
    order: VecDeque<(Digested, Instant)>,
}

impl Refusals {
    /// At most `capacity` refusals at once.
    pub fn new(capacity: usize) -> Refusals {
        Refusals { capacity, inner: Mutex::default() }
    }

    /// Why the token of digest `key` was refused, if that was less than [`REMEMBER`] ago.
    pub fn get(&self, key: &Digested, now: Instant) -> Option<Reason> {
        let mut inner = self.inner.lock().unwrap();
        let (reason, stored) = *inner.entries.get(key)?;
        if now.saturating_duration_since(stored) < REMEMBER {
            return Some(reason);
        }
        inner.entries.remove(key);
        None
    }

    /// Remembers that the token of digest `key` was refused for `reason`.
    pub fn put(&self, key: Digested, reason: Reason, now: Instant) {
        if self.capacity == 0 {
            return;
        }
        let mut inner = self.inner.lock().unwrap();
        while inner.entries.len() >= self.capacity && !inner.entries.contains_key(&key) {
            let Some((old, stored)) = inner.order.pop_front() else { break };
            if inner.entries.get(&old).is_some_and(|(_, at)| *at == stored) {
                inner.entries.remove(&old);
            }
        }
        inner.entries.insert(key, (reason, now));
        inner.order.push_back((key, now));
        if inner.order.len() > 2 * self.capacity {
            let entries = &inner.entries;
            let kept: VecDeque<_> = inner.order.iter().filter(|(k, at)| entries.get(k).is_some_and(|(_, stored)| stored == at)).copied().collect();
            inner.order = kept;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::answers::digest;

    #[test]
    fn a_refusal_is_remembered_briefly_by_digest_and_the_oldest_goes_when_full() {
        let refusals = Refusals::new(2);
        let start = Instant::now();
        refusals.put(digest("garbage"), Reason::Inactive, start);
        assert_eq!(refusals.get(&digest("garbage"), start + Duration::from_secs(29)), Some(Reason::Inactive));
        assert_eq!(refusals.get(&digest("garbage"), start + REMEMBER), None, "forgotten after a while");
        refusals.put(digest("a"), Reason::Inactive, start);
        refusals.put(digest("b"), Reason::Audience, start);
        refusals.put(digest("c"), Reason::Claims, start);
        assert_eq!(refusals.get(&digest("a"), start), None, "the oldest went");
        assert_eq!(refusals.get(&digest("c"), start), Some(Reason::Claims));
        assert!(!refusals.inner.lock().unwrap().entries.keys().any(|k| k == b"c".as_slice()), "keyed by the digest");
    }
}
