//! A future that is run to its end even when its caller stops waiting for it.
//!
//! Admission must not stop half-way: once the insert is handed to the store's writer it will be
//! committed, and a stored task that was never queued would sit `working` until this host died.
//! Spawning every admission makes it whole, but costs a hand-off to a worker and a wake-up back on
//! each one (about 30 µs per admission on a 2-vCPU VM, BENCHMARKS §9). [`FinishOnDrop`] runs the
//! work in the caller's own poll instead, and spawns what is left only if the caller drops it
//! before the end.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Runs `F` in place; if dropped before `F` finished, spawns the rest on the current tokio
/// runtime (with no runtime left, the host is stopping and the rest is dropped).
pub(crate) struct FinishOnDrop<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    work: Option<Pin<Box<F>>>,
}

impl<F> FinishOnDrop<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    pub(crate) fn new(work: F) -> FinishOnDrop<F> {
        FinishOnDrop { work: Some(Box::pin(work)) }
    }
}

impl<F> Future for FinishOnDrop<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.get_mut();
        let work = this.work.as_mut().expect("FinishOnDrop polled after it finished");
        let done = work.as_mut().poll(cx);
        if done.is_ready() {
            this.work = None;
        }
        done
    }
}

impl<F> Drop for FinishOnDrop<F>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn drop(&mut self) {
        if let (Some(rest), Ok(runtime)) = (self.work.take(), tokio::runtime::Handle::try_current()) {
            runtime.spawn(rest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn dropped_before_the_end_it_still_finishes() {
        let finished = Arc::new(AtomicBool::new(false));
        let flag = finished.clone();
        let mut work = Box::pin(FinishOnDrop::new(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            flag.store(true, Ordering::SeqCst);
        }));
        assert!(work.as_mut().poll(&mut Context::from_waker(std::task::Waker::noop())).is_pending());
        drop(work);
        tokio::time::timeout(Duration::from_secs(10), async {
            while !finished.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the dropped work ran to its end");
    }

    #[tokio::test]
    async fn awaited_it_answers_in_place() {
        assert_eq!(FinishOnDrop::new(async { 7 }).await, 7);
    }
}
