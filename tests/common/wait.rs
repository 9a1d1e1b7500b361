//! Waiting for a condition instead of for a while. A test that sleeps a fixed time guesses how
//! long the host takes, and on a loaded machine (2 cores, `scripts/flaky.sh` burning both) the
//! guess is wrong; these poll what the test is waiting for until it holds, under an overall
//! deadline generous enough for that machine, and fail naming what never happened.

use std::fmt::Debug;
use std::time::{Duration, Instant};

/// How often a condition is looked at again.
const POLL: Duration = Duration::from_millis(20);

/// Polls `done` until it holds; panics naming `what` once `deadline` has passed.
pub fn wait_until(what: &str, deadline: Duration, mut done: impl FnMut() -> bool) {
    wait_for(what, deadline, || done().then_some(()));
}

/// Polls `ready` until it gives a value and returns it; panics naming `what` once `deadline` has
/// passed.
pub fn wait_for<T>(what: &str, deadline: Duration, mut ready: impl FnMut() -> Option<T>) -> T {
    let until = Instant::now() + deadline;
    loop {
        if let Some(value) = ready() {
            return value;
        }
        assert!(Instant::now() < until, "timed out after {deadline:?} waiting for {what}");
        std::thread::sleep(POLL);
    }
}

/// Polls `look` until `done` holds of what it saw, and returns that; the panic after `deadline`
/// names `what` and shows the last thing seen.
pub fn wait_on<T: Debug>(what: &str, deadline: Duration, mut look: impl FnMut() -> T, done: impl Fn(&T) -> bool) -> T {
    let until = Instant::now() + deadline;
    loop {
        let seen = look();
        if done(&seen) {
            return seen;
        }
        assert!(Instant::now() < until, "timed out after {deadline:?} waiting for {what}; last seen: {seen:?}");
        std::thread::sleep(POLL);
    }
}
