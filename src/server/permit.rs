//! A plugin's concurrency limit (`max-concurrency`): a call waits here for its turn.

/// Runs one call of a plugin under its concurrency limit (`max-concurrency`), waiting for a
/// turn unless `cancel` fires first.
///
/// `work` makes the call's future once the turn came. A future passed in by value would be
/// stored twice in this one's state (once as the argument, once while awaited), and a call's
/// future is kilobytes that every layer above copies (BENCHMARKS.md, section 17).
pub(crate) async fn with_permit<T, F>(
    plugin: &crate::registry::Plugin,
    cancel: &crate::cancel::CancelHandle,
    work: impl FnOnce() -> F,
) -> Result<T, crate::runtime::Failure>
where
    F: std::future::Future<Output = Result<T, crate::runtime::Failure>>,
{
    use tracing::Instrument;
    let _permit = match plugin.permits.try_acquire() {
        Ok(permit) => permit,
        // Every instance slot is taken: the wait is the call's queue, a span of its own.
        Err(_) => tokio::select! {
            biased;
            _ = cancel.cancelled() => return Err(crate::runtime::Failure::Cancelled),
            permit = plugin.permits.acquire().instrument(crate::telemetry::trace::queue(&plugin.name)) => permit.expect("plugin semaphores are never closed"),
        },
    };
    work().await
}
