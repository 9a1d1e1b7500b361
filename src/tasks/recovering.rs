//! Tasks whose recovery verdict is not reached yet: a task left started by a host that died
//! runs again or fails as interrupted depending on its tool, which is known only once its
//! plugin has loaded (`recovery::recover` hands such tasks to `settle`).
//!
//! Until then the store still says `working`, which the verdict may turn into `failed` a moment
//! later; a client asking in between would read a status that was never going to hold. So a
//! read of such a task waits for its verdict, at most [`VERDICT_WAIT`] (a plugin that takes
//! longer to load leaves the read to answer what the store has).

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::watch;

/// The longest a read waits for a recovered task's verdict.
pub(super) const VERDICT_WAIT: Duration = Duration::from_secs(5);

/// The ids awaiting their verdict; see the module doc.
pub(super) struct Recovering {
    ids: Mutex<HashSet<String>>,
    /// Bumped at each verdict, waking the reads that wait.
    decided: watch::Sender<u64>,
}

impl Default for Recovering {
    fn default() -> Recovering {
        Recovering { ids: Mutex::default(), decided: watch::channel(0).0 }
    }
}

impl Recovering {
    /// Task `id` waits for its verdict from now on.
    pub(super) fn begin(&self, id: &str) {
        self.ids.lock().unwrap().insert(id.to_owned());
    }

    /// Task `id` has its verdict (stored, or failed to be: either way a read answers now).
    pub(super) fn decided(&self, id: &str) {
        if self.ids.lock().unwrap().remove(id) {
            self.decided.send_modify(|n| *n = n.wrapping_add(1));
        }
    }

    fn is_pending(&self, id: &str) -> bool {
        self.ids.lock().unwrap().contains(id)
    }

    /// Returns once task `id` is not awaiting a verdict, or after [`VERDICT_WAIT`].
    pub(super) async fn wait_for(&self, id: &str) {
        // Subscribed before the check, so a verdict between the two is not missed.
        let mut decided = self.decided.subscribe();
        if !self.is_pending(id) {
            return;
        }
        let _ = tokio::time::timeout(VERDICT_WAIT, decided.wait_for(|_| !self.is_pending(id))).await;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test]
    async fn a_read_waits_for_the_verdict_and_only_for_its_own_task() {
        let recovering = Arc::new(Recovering::default());
        recovering.begin("a");
        recovering.begin("b");
        tokio::time::timeout(Duration::from_millis(100), recovering.wait_for("c")).await.expect("a task not recovering answers at once");
        let waiting = tokio::spawn({
            let recovering = recovering.clone();
            async move { recovering.wait_for("a").await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        recovering.decided("b");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "another task's verdict does not answer it");
        recovering.decided("a");
        tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("its verdict answers it").unwrap();
    }
}
