//! The questions a running task waits on, kept with the task in the store, so that any replica
//! shows them and takes their answers: the guest waits on the replica that runs it, the client
//! may reach any other (the 2026-07-28 era needs no affinity).
//!
//! The replica that runs the guest keeps the questions ([`Inputs::ask`]) and waits
//! ([`Inputs::answers`]); whichever replica a `tasks/update` reaches records the answers
//! ([`Inputs::answer`]), which wakes the waiting guest: at once on the same host, by the store's
//! notification on another ([`StoreEvent::Answered`]), and at the task's poll interval when a
//! notification was lost (or the store tells nothing: SQLite hosts sharing a file). What is
//! asked and answered is opaque here; the server checks answers against their questions before
//! they are recorded.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::watch;

use super::error::EngineError;
use super::store::{StoreEvent, TaskQuestion, TaskStore};

/// The engine's side of task input; cheap to clone.
#[derive(Clone)]
pub struct Inputs {
    store: Arc<dyn TaskStore>,
    /// Bumped whenever this host records answers to a task's questions, so a guest waiting here
    /// for them reads them at once (answers recorded elsewhere come as [`StoreEvent::Answered`]).
    answered: Arc<watch::Sender<u64>>,
    /// How often a waiting guest reads its answers again when no notification came.
    poll_interval: Duration,
}

impl Inputs {
    /// Questions kept in `store`; a guest waiting for answers reads them again at least every
    /// `poll_interval`.
    pub(super) fn new(store: Arc<dyn TaskStore>, poll_interval: Duration) -> Inputs {
        Inputs { store, answered: Arc::new(watch::channel(0).0), poll_interval }
    }

    /// Keeps `questions` (key, request) as what task `id` now waits for.
    pub async fn ask(&self, id: &str, questions: Vec<(String, Value)>) -> Result<(), EngineError> {
        Ok(self.store.keep_questions(id, questions).await?)
    }

    /// Task `id`'s kept questions, answered or not, in the order they were asked.
    pub async fn questions(&self, id: &str) -> Result<Vec<TaskQuestion>, EngineError> {
        Ok(self.store.questions(id).await?)
    }

    /// Task `id`'s questions that have no answer yet, in the order they were asked. The caller
    /// has checked that the asker owns the task.
    pub async fn outstanding(&self, id: &str) -> Result<Vec<TaskQuestion>, EngineError> {
        let questions = self.store.questions(id).await?;
        Ok(questions.into_iter().filter(|q| q.answer.is_none()).collect())
    }

    /// Records `answers` (key, answer, already checked) for task `id`'s outstanding questions and
    /// wakes its guest; keys not outstanding are ignored. Returns the keys recorded.
    pub async fn answer(&self, id: &str, answers: Vec<(String, Value)>) -> Result<Vec<String>, EngineError> {
        let recorded = self.store.answer_questions(id, answers).await?;
        if !recorded.is_empty() {
            self.answered.send_modify(|n| *n += 1);
        }
        Ok(recorded)
    }

    /// Waits until every one of task `id`'s questions `keys` has an answer, then forgets them
    /// and returns the answers, in the order of `keys`.
    pub async fn answers(&self, id: &str, keys: &[String]) -> Result<Vec<(String, Value)>, EngineError> {
        let fallback = self.poll_interval.max(Duration::from_millis(10));
        loop {
            // Subscribed before the read, so answers recorded in between wake the wait.
            let mut here = self.answered.subscribe();
            here.borrow_and_update();
            let elsewhere = self.store.subscribe();
            let questions = self.store.questions(id).await?;
            let answered: Option<Vec<(String, Value)>> =
                keys.iter().map(|key| questions.iter().find(|q| &q.key == key).and_then(|q| q.answer.clone()).map(|a| (key.clone(), a))).collect();
            if let Some(answers) = answered {
                self.store.drop_questions(id, keys.to_vec()).await?;
                return Ok(answers);
            }
            let heard = async {
                match elsewhere {
                    Some(mut events) => loop {
                        match events.recv().await {
                            Ok(StoreEvent::Answered { id: answered }) if answered == id => return,
                            Ok(StoreEvent::Resync) | Err(_) => return,
                            Ok(_) => continue,
                        }
                    },
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = here.changed() => {}
                _ = heard => {}
                _ = tokio::time::sleep(fallback) => {}
            }
        }
    }

    /// Forgets task `id`'s questions `keys` (the guest stopped waiting), off the caller's path.
    pub fn withdraw(&self, id: &str, keys: Vec<String>) {
        let (store, id) = (self.store.clone(), id.to_owned());
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = store.drop_questions(&id, keys).await {
                    tracing::debug!(task = %id, "forgetting a task's questions failed: {e}");
                }
            });
        }
    }
}
