//! The last progress each task running on this host reported, for the operator's console.
//!
//! A task's progress goes to its requestor as notifications and, as a message only, onto its
//! record; the numbers (how far, out of how much) are kept nowhere else. The board holds one
//! entry per task running here, written by the task's observer and removed when the run ends,
//! so it is as large as the tasks running at once.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::tasks::Progress;

/// Task id → its last progress report.
#[derive(Default)]
pub struct ProgressBoard(Mutex<HashMap<String, Progress>>);

impl ProgressBoard {
    /// Records `progress` as task `id`'s latest.
    pub(super) fn report(&self, id: &str, progress: Progress) {
        let mut board = self.0.lock().unwrap();
        match board.get_mut(id) {
            Some(last) => *last = progress,
            None => {
                board.insert(id.to_owned(), progress);
            }
        }
    }

    /// Forgets task `id` (its run ended).
    pub(super) fn forget(&self, id: &str) {
        self.0.lock().unwrap().remove(id);
    }

    /// Task `id`'s last report, while it runs here.
    pub fn get(&self, id: &str) -> Option<Progress> {
        self.0.lock().unwrap().get(id).cloned()
    }
}
