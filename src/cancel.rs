//! Cancellation with one owner.
//!
//! Cancelling a call takes two steps: fire the token that every waiter watches, and wake the
//! work that cannot watch it (a guest computing inside wasmtime notices only when the epoch
//! moves). [`CancelHandle::cancel`] does both, so no caller can do half of it. The handle knows
//! nothing of wasmtime: whoever makes it says how to wake (the runtime advances the epoch).

use std::fmt;
use std::sync::Arc;

use tokio_util::sync::{CancellationToken, WaitForCancellationFuture};

/// Makes running work notice a cancellation now rather than at its next check.
pub type Wake = Arc<dyn Fn() + Send + Sync>;

/// A cancellable unit of work's stop button; clones share it.
#[derive(Clone)]
pub struct CancelHandle {
    token: CancellationToken,
    wake: Option<Wake>,
}

impl CancelHandle {
    /// A handle whose [`cancel`](CancelHandle::cancel) also calls `wake`.
    pub fn new(wake: Wake) -> CancelHandle {
        CancelHandle { token: CancellationToken::new(), wake: Some(wake) }
    }

    /// A handle that wakes nothing, for work that notices cancellation by itself in good time
    /// (loading a plugin, benchmarks, tests).
    pub fn unwoken() -> CancelHandle {
        CancelHandle { token: CancellationToken::new(), wake: None }
    }

    /// Cancels the work and wakes it.
    pub fn cancel(&self) {
        self.token.cancel();
        if let Some(wake) = &self.wake {
            wake();
        }
    }

    /// Whether [`cancel`](CancelHandle::cancel) was called.
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Resolves once [`cancel`](CancelHandle::cancel) was called.
    pub fn cancelled(&self) -> WaitForCancellationFuture<'_> {
        self.token.cancelled()
    }
}

impl fmt::Debug for CancelHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelHandle").field("cancelled", &self.is_cancelled()).finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn cancel_fires_the_token_and_wakes_once_per_call() {
        let woken = Arc::new(AtomicUsize::new(0));
        let count = woken.clone();
        let handle = CancelHandle::new(Arc::new(move || {
            count.fetch_add(1, Ordering::SeqCst);
        }));
        let clone = handle.clone();
        assert!(!clone.is_cancelled());
        handle.cancel();
        assert!(clone.is_cancelled(), "clones share the cancellation");
        assert_eq!(woken.load(Ordering::SeqCst), 1, "cancel wakes the work");
    }
}
