//! Running a request's first poll on the thread that received it.
//!
//! This is the trick of wasi's `poll_noop`: poll a future once with a waker that does nothing,
//! and hand it to the runtime only if it is not done. It is what keeps answers in order for
//! requests that finish at once, and what makes a short tool call cost no thread hand-off.

use std::future::Future;

/// Polls `request` once on this thread and spawns it only if it has to wait.
///
/// Most calls finish within their first poll (a fresh instance runs until the guest returns or
/// the next epoch tick), so this saves the hand-off to a worker thread, which costs tens of
/// microseconds on a small VM (see BENCHMARKS.md). A guest still computing at its first tick
/// yields; the rest of the call then runs on the runtime's workers like any other task.
/// Requests that need no guest (`tasks/get`, a task-augmented `tools/call`) finish in the
/// first poll, so their answers leave in the order the requests came.
pub fn run_inline_then_spawn<F>(request: F, runtime: &tokio::runtime::Handle)
where
    F: Future<Output = ()> + Send + 'static,
{
    let _context = runtime.enter();
    let mut request = Box::pin(request);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    if request.as_mut().poll(&mut cx).is_pending() {
        // The first poll saw a no-op waker; the spawned task polls again with a real one.
        runtime.spawn(request);
    }
}
