//! Answers about tokens kept in memory: an introspection's, so a client that sends the same
//! opaque token on every request costs the authorization server one call per token, not one per
//! request; and a JWT's verification, so its signature is checked once per token, not per call.
//!
//! An entry is keyed by the SHA-256 of the token: the token itself is never kept, so a heap
//! dump or a debugger shows no credential. An entry lives until the token expires, and at most
//! the configured age (how long a revocation may go unnoticed). The map is bounded: when full,
//! the entry stored first goes. Only active tokens are kept: a refused
//! token is asked about again, so garbage cannot push good answers out.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use crate::principal::User;

/// A token's digest: what the cache is keyed by.
pub(super) type Digested = [u8; 32];

/// The bounded map of answers.
pub struct Answers {
    capacity: usize,
    max_age: Duration,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    entries: HashMap<Digested, Entry>,
    /// Digests in the order they were stored (a digest stored again appears twice; the older
    /// copy is skipped when its entry is newer than it).
    order: VecDeque<(Digested, Instant)>,
}

struct Entry {
    user: Arc<User>,
    stored: Instant,
    until: Instant,
}

impl Answers {
    /// At most `capacity` answers, each for at most `max_age`.
    pub fn new(capacity: usize, max_age: Duration) -> Answers {
        Answers { capacity, max_age, inner: Mutex::default() }
    }

    /// The user an active token's answer named, if it is kept and still fresh.
    pub fn get(&self, token: &str) -> Option<Arc<User>> {
        let key = digest(token);
        let mut inner = self.inner.lock().unwrap();
        let entry = inner.entries.get(&key)?;
        if entry.until > Instant::now() {
            return Some(entry.user.clone());
        }
        inner.entries.remove(&key);
        None
    }

    /// Keeps `user` as `token`'s answer until `expires` (the token's `exp`, if it has one),
    /// at most the maximum age from now.
    pub fn put(&self, token: &str, user: Arc<User>, expires: Option<Instant>) {
        if self.capacity == 0 {
            return;
        }
        let now = Instant::now();
        let capped = now + self.max_age;
        let until = expires.map_or(capped, |at| at.min(capped));
        if until <= now {
            return;
        }
        let key = digest(token);
        let mut inner = self.inner.lock().unwrap();
        if !inner.entries.contains_key(&key) && inner.entries.len() >= self.capacity {
            inner.make_room(self.capacity);
        }
        inner.entries.insert(key, Entry { user, stored: now, until });
        inner.order.push_back((key, now));
    }

    /// Answers kept now (expired ones included until they are dropped).
    pub fn len(&self) -> usize {
        self.inner.lock().unwrap().entries.len()
    }
}

impl Inner {
    /// Drops the oldest entries until one more fits: amortized constant time, as a full map is
    /// what a flood of tokens makes. (The oldest are mostly the expired ones too: every entry
    /// lives at most the same maximum age.)
    fn make_room(&mut self, capacity: usize) {
        while self.entries.len() >= capacity {
            let Some((key, stored)) = self.order.pop_front() else { break };
            // Only the copy that matches the entry's own time is its place in line.
            if self.entries.get(&key).is_some_and(|e| e.stored == stored) {
                self.entries.remove(&key);
            }
        }
        // The line holds stale copies of digests replaced or dropped; keep it near the map's size.
        if self.order.len() > 2 * capacity {
            let entries = &self.entries;
            self.order.retain(|(key, stored)| entries.get(key).is_some_and(|e| e.stored == *stored));
        }
    }
}

pub(super) fn digest(token: &str) -> Digested {
    Sha256::digest(token.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(subject: &str) -> Arc<User> {
        Arc::new(User { issuer: "https://id.example".into(), subject: subject.into(), ..User::default() })
    }

    #[test]
    fn an_answer_is_kept_for_the_tokens_life_at_most_the_max_age() {
        let answers = Answers::new(10, Duration::from_secs(300));
        answers.put("a", user("ada"), None);
        assert_eq!(answers.get("a").unwrap().subject, "ada");
        assert!(answers.get("b").is_none());
        // Expiring sooner than the max age: kept until then; later: until the max age.
        let (soon, late) = (Instant::now() + Duration::from_secs(10), Instant::now() + Duration::from_secs(3600));
        answers.put("soon", user("bo"), Some(soon));
        answers.put("late", user("di"), Some(late));
        let until = |token: &str| answers.inner.lock().unwrap().entries[&digest(token)].until;
        assert_eq!(until("soon"), soon);
        assert!(until("late") < soon + Duration::from_secs(300), "capped by the max age");
        answers.put("brief", user("ed"), Some(Instant::now() + Duration::from_millis(1)));
        std::thread::sleep(Duration::from_millis(20));
        assert!(answers.get("brief").is_none(), "gone once the token expired");
        // Already expired: not kept at all.
        answers.put("past", user("cy"), Some(Instant::now()));
        assert!(answers.get("past").is_none());
        let short = Answers::new(10, Duration::ZERO);
        short.put("a", user("ada"), None);
        assert!(short.get("a").is_none(), "a zero max age keeps nothing");
    }

    #[test]
    fn a_full_cache_drops_the_oldest_answer_and_never_holds_the_token() {
        let answers = Answers::new(2, Duration::from_secs(300));
        answers.put("first", user("1"), None);
        answers.put("second", user("2"), None);
        answers.put("first", user("1 again"), None);
        answers.put("third", user("3"), None);
        assert_eq!(answers.len(), 2);
        assert!(answers.get("second").is_none(), "the oldest went");
        assert_eq!(answers.get("first").unwrap().subject, "1 again");
        assert!(answers.get("third").is_some());
        let inner = answers.inner.lock().unwrap();
        assert!(inner.entries.contains_key(&digest("first")), "keyed by the digest");
    }
}
