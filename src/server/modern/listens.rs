//! How many `subscriptions/listen` streams that watch tasks each owner holds open.
//!
//! Each task a listen names costs a watcher (a read of the task at its poll interval until it
//! ends), so the ids of one listen are bounded (`config::defaults::MAX_LISTEN_TASKS`) and so are
//! an owner's open listens that name any (`MAX_TASK_LISTENS_PER_OWNER`): one client cannot make
//! the host spend its cores and memory watching, and the others keep being served. A listen
//! that names no task costs one stream, which the transports already bound.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The open task listens per owner key, shared by a host's requests.
#[derive(Default)]
pub struct OpenListens {
    open: Arc<Mutex<HashMap<String, usize>>>,
}

/// One open listen's place in its owner's count, given back when dropped (the stream ended).
pub struct ListenSlot {
    open: Arc<Mutex<HashMap<String, usize>>>,
    owner: String,
}

impl OpenListens {
    /// A place for one more of `owner`'s listens, or `None` when it already holds `limit`.
    pub fn take(&self, owner: &str, limit: usize) -> Option<ListenSlot> {
        let mut open = self.open.lock().unwrap();
        let held = open.entry(owner.to_owned()).or_default();
        if *held >= limit {
            return None;
        }
        *held += 1;
        Some(ListenSlot { open: self.open.clone(), owner: owner.to_owned() })
    }
}

impl Drop for ListenSlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap();
        if let Some(held) = open.get_mut(&self.owner) {
            *held -= 1;
            if *held == 0 {
                open.remove(&self.owner);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_owner_holds_at_most_the_limit_and_a_closed_listen_frees_its_place() {
        let listens = OpenListens::default();
        let alice: Vec<ListenSlot> = (0..2).map(|_| listens.take("alice", 2).expect("within the limit")).collect();
        assert!(listens.take("alice", 2).is_none(), "the third is refused");
        let bob = listens.take("bob", 2);
        assert!(bob.is_some(), "another owner has places of its own");
        drop(alice.into_iter().next());
        assert!(listens.take("alice", 2).is_some(), "a closed listen gives its place back");
        drop(bob);
        assert!(!listens.open.lock().unwrap().contains_key("bob"), "an owner with none open is forgotten");
    }
}
