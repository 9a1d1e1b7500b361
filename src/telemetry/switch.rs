//! Whether this process exports traces: decided once at start ([`super::init`]) and read by every
//! span maker, so that with no collector configured no span is made at all.

use std::sync::atomic::{AtomicBool, Ordering};

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Whether this process exports traces (an OTLP endpoint is configured).
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Set once, by [`super::init`].
pub(super) fn set(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}
