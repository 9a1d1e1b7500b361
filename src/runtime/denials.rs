//! What the sandbox refused a call's guest: the network guard and the file guard record each
//! refusal here, and the call's result names them, so an author sees which grant is missing.

use std::sync::Mutex;

/// What the sandbox refused a guest, each in a sentence naming the grant that would allow it.
#[derive(Default)]
pub struct Denials(Mutex<Vec<String>>);

/// A guest retrying in a loop must not grow the list without bound.
const MAX_DENIALS: usize = 16;

impl Denials {
    /// Records one refusal (each once, at most a few).
    pub fn record(&self, what: String) {
        let mut list = self.0.lock().unwrap();
        if list.len() < MAX_DENIALS && !list.contains(&what) {
            tracing::debug!("{what}");
            list.push(what);
        }
    }

    /// The refusals recorded so far, leaving none.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}
