//! The tasks this process has queued or is running ([`LiveTasks`]), each with what only this
//! process knows of it ([`Live`]): its cancel handle, its requestor's events, its newest
//! progress message, and whether it has ended here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::capacity::Capacity;
use super::events::TaskEvents;
use super::model::Task;
use crate::cancel::CancelHandle;

/// A task this process has queued or is running.
pub(super) struct Live {
    pub(super) id: String,
    pub(super) owner: String,
    pub(super) cancel: CancelHandle,
    pub(super) events: Option<Arc<dyn TaskEvents>>,
    /// Set when the engine itself stopped the task (`tasks/cancel`, or another replica ended or
    /// claimed it), which has stored its end already: the run then writes nothing.
    pub(super) stopped: std::sync::atomic::AtomicBool,
    /// The newest progress message, shown as `statusMessage` while working.
    pub(super) message: Mutex<Option<String>>,
    /// Becomes true once the task ended in this process; `tasks/result` waits on it.
    pub(super) done: watch::Sender<bool>,
}

impl Live {
    /// Stops the run for a reason the store has recorded (see `stopped`).
    pub(super) fn stop(&self) {
        self.stopped.store(true, std::sync::atomic::Ordering::Release);
        self.cancel.cancel();
    }

    /// Whether the engine stopped the run itself (see `stopped`).
    pub(super) fn stopped_by_engine(&self) -> bool {
        self.stopped.load(std::sync::atomic::Ordering::Acquire)
    }

    pub(super) fn has_ended(&self) -> bool {
        *self.done.borrow()
    }

    /// Tells the requestor about `task`, the row a write returned.
    pub(super) fn announce(&self, task: &Task) {
        if let Some(events) = &self.events {
            events.status_changed(task);
        }
    }
}

/// The live tasks of this process, by id; each holds an owner slot of [`Capacity`] until it is
/// retired.
pub(super) struct LiveTasks {
    tasks: Mutex<HashMap<String, Arc<Live>>>,
    capacity: Arc<Capacity>,
}

impl LiveTasks {
    /// No live task yet; retiring one gives its owner slot back to `capacity`.
    pub(super) fn new(capacity: Arc<Capacity>) -> LiveTasks {
        LiveTasks { tasks: Mutex::default(), capacity }
    }

    /// Makes `task` live in this process, stopped through `cancel`.
    pub(super) fn insert(&self, task: &Task, events: Option<Arc<dyn TaskEvents>>, cancel: CancelHandle) -> Arc<Live> {
        let live = Arc::new(Live {
            id: task.id.clone(),
            owner: task.owner.clone(),
            cancel,
            stopped: Default::default(),
            events,
            message: Mutex::new(None),
            done: watch::channel(false).0,
        });
        self.tasks.lock().unwrap().insert(task.id.clone(), live.clone());
        live
    }

    /// Task `id`, if it is live here.
    pub(super) fn get(&self, id: &str) -> Option<Arc<Live>> {
        self.tasks.lock().unwrap().get(id).cloned()
    }

    /// The ids of every live task.
    pub(super) fn ids(&self) -> Vec<String> {
        self.tasks.lock().unwrap().keys().cloned().collect()
    }

    /// Whether no task is live here.
    pub(super) fn is_empty(&self) -> bool {
        self.tasks.lock().unwrap().is_empty()
    }

    /// Whether `owner`'s task `id` is live here.
    pub(super) fn runs(&self, owner: &str, id: &str) -> bool {
        self.tasks.lock().unwrap().get(id).is_some_and(|live| live.owner == owner)
    }

    /// Becomes true once task `id` ends here; `None` when it is not live here.
    pub(super) fn ended(&self, id: &str) -> Option<watch::Receiver<bool>> {
        self.tasks.lock().unwrap().get(id).map(|live| live.done.subscribe())
    }

    /// Shows the newest progress message of a task that is still working.
    pub(super) fn with_message(&self, mut task: Task) -> Task {
        if !task.status.is_terminal() {
            if let Some(message) = self.tasks.lock().unwrap().get(&task.id).and_then(|l| l.message.lock().unwrap().clone()) {
                task.status_message = Some(message);
            }
        }
        task
    }

    /// Marks a task ended in memory: wakes `tasks/result` waiters, forgets the live state and
    /// gives its owner slot back.
    pub(super) fn retire(&self, id: &str) {
        let live = self.tasks.lock().unwrap().remove(id);
        if let Some(live) = live {
            live.done.send_replace(true);
            self.capacity.release_owner(&live.owner);
        }
    }
}
