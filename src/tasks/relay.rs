//! Status changes and progress of tasks that moved to another replica, relayed to the session
//! that created them.
//!
//! A task admitted here may run elsewhere: an idle replica took it while every worker here was
//! busy (load spreading), or another claimed it while this one was taken for dead. The session
//! that asked is still here, so this host keeps the task's [`TaskEvents`] and, whenever the store
//! says the task changed (the running replica's notification, or a resync), reads it and tells the
//! session what moved, until the task ends. Progress comes in the running replica's notification
//! itself ([`StoreEvent::Progress`](super::StoreEvent::Progress)) and is handed to the session
//! with the request's `progressToken`, which the task row keeps.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::events::TaskEvents;
use super::model::{Progress, Task, TaskStatus};
use super::store::TaskStore;

/// The tasks this host relays, by id, and the store it reads them from.
pub(super) struct Relays {
    relays: Mutex<HashMap<String, Relay>>,
    store: Arc<dyn TaskStore>,
    /// This host's runner id, named by the relay spans.
    runner: Arc<str>,
}

struct Relay {
    owner: String,
    events: Arc<dyn TaskEvents>,
    /// The status the session was told last.
    told: TaskStatus,
    /// The request's `progressToken`: progress is relayed only for a request that asked for it.
    token: Option<serde_json::Value>,
}

impl Relays {
    /// Relays nothing yet; reads relayed tasks from `store`, as host `runner`.
    pub(super) fn new(store: Arc<dyn TaskStore>, runner: Arc<str>) -> Relays {
        Relays { relays: Mutex::default(), store, runner }
    }

    /// Relays `task`'s changes to `events` from now on; `task` is what the session knows.
    pub(super) fn watch(&self, task: &Task, events: Arc<dyn TaskEvents>) {
        self.relays.lock().unwrap().insert(task.id.clone(), Relay { owner: task.owner.clone(), events, told: task.status, token: task.progress_token.clone() });
    }

    pub(super) fn is_watched(&self, id: &str) -> bool {
        self.relays.lock().unwrap().contains_key(id)
    }

    pub(super) fn ids(&self) -> Vec<String> {
        self.relays.lock().unwrap().keys().cloned().collect()
    }

    /// Reads relayed task `id` and tells its session if its status moved; an ended (or purged)
    /// task is relayed no further.
    pub(super) async fn relay(&self, id: &str) {
        let Some(owner) = self.relays.lock().unwrap().get(id).map(|r| r.owner.clone()) else { return };
        let task = match self.store.get(&owner, id).await {
            Ok(task) => task,
            Err(e) => return tracing::warn!(task = %id, "reading a task that runs on another replica failed: {e}"),
        };
        let mut relays = self.relays.lock().unwrap();
        let Some(task) = task else {
            relays.remove(id);
            return;
        };
        let Some(relay) = relays.get_mut(id) else { return };
        if task.status != relay.told {
            relay.told = task.status;
            let parent = task.trace_context.as_deref().and_then(crate::telemetry::trace::Carrier::from_stored);
            let _relayed = crate::telemetry::trace::task_relay(parent.as_ref(), id, &self.runner).entered();
            relay.events.status_changed(&task);
        }
        if task.status.is_terminal() {
            relays.remove(id);
        }
    }

    /// Hands `progress` of relayed task `id` to its session, with the request's progress
    /// token; the message is read from the task's row when it was too large to be sent.
    pub(super) async fn relay_progress(&self, id: &str, progress: &Progress, message_in_row: bool) {
        let Some((owner, events, token)) = self.relays.lock().unwrap().get(id).and_then(|r| Some((r.owner.clone(), r.events.clone(), r.token.clone()?))) else {
            return;
        };
        let mut progress = progress.clone();
        if message_in_row {
            match self.store.get(&owner, id).await {
                Ok(Some(task)) => progress.message = task.status_message,
                Ok(None) => return,
                Err(e) => tracing::debug!(task = %id, "reading a relayed task's progress message failed: {e}"),
            }
        }
        events.progress(&token, &progress);
    }
}
