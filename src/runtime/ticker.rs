//! The epoch ticker: one thread that advances the engine's epoch every tick while calls run.
//!
//! Every call's store yields to the async runtime when the epoch moves past its deadline, so
//! the tick bounds how long a spinning guest can go unobserved. When no call has run for a
//! while the thread parks, so an idle host does not wake a core every millisecond.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use wasmtime::Engine;

const PARK_AFTER_IDLE: Duration = Duration::from_millis(200);

pub struct Ticker {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    active: AtomicUsize,
    stop: AtomicBool,
}

/// Keeps the ticker running while a call is alive.
pub struct Active<'a> {
    ticker: &'a Ticker,
}

impl Ticker {
    pub fn start(engine: Engine, tick: Duration) -> Ticker {
        let shared = Arc::new(Shared { active: AtomicUsize::new(0), stop: AtomicBool::new(false) });
        let state = shared.clone();
        let thread = thread::Builder::new()
            .name("corral-epoch".into())
            .spawn(move || {
                let mut idle = Duration::ZERO;
                while !state.stop.load(Ordering::Relaxed) {
                    thread::sleep(tick);
                    engine.increment_epoch();
                    if state.active.load(Ordering::Acquire) > 0 {
                        idle = Duration::ZERO;
                    } else if idle >= PARK_AFTER_IDLE {
                        thread::park();
                        idle = Duration::ZERO;
                    } else {
                        idle += tick;
                    }
                }
            })
            .expect("spawning the epoch ticker thread");
        Ticker { shared, thread: Some(thread) }
    }

    /// Marks a call as running; the ticker wakes if it was parked.
    pub fn activate(&self) -> Active<'_> {
        if self.shared.active.fetch_add(1, Ordering::AcqRel) == 0 {
            if let Some(t) = &self.thread {
                t.thread().unpark();
            }
        }
        Active { ticker: self }
    }

    /// Calls running now (benchmarks watch it to see a cancelled guest stop).
    pub fn active_calls(&self) -> usize {
        self.shared.active.load(Ordering::Acquire)
    }
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.ticker.shared.active.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}
