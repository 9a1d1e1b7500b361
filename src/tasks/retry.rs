//! The backoff of a store write retried while the store does not answer (a task's end, a
//! task's start): short at first, so a blip costs little, and capped, so a write lands within
//! about a second of the store coming back, well inside a host expiry (before other replicas
//! could take this host for dead).

use std::time::Duration;

/// The first wait after a failed write.
const FIRST_RETRY: Duration = Duration::from_millis(50);

/// The longest wait between two tries.
pub(super) const MAX_RETRY: Duration = Duration::from_secs(1);

/// The waits between tries: [`FIRST_RETRY`], doubled after each failure up to [`MAX_RETRY`].
#[derive(Debug)]
pub(super) struct Backoff(Duration);

impl Default for Backoff {
    fn default() -> Backoff {
        Backoff(FIRST_RETRY)
    }
}

impl Backoff {
    /// The wait before the next try; the one after it is longer, up to the cap.
    pub(super) fn next(&mut self) -> Duration {
        let wait = self.0;
        self.0 = (self.0 * 2).min(MAX_RETRY);
        wait
    }

    /// The store answered: the next failure starts from the shortest wait again.
    pub(super) fn reset(&mut self) {
        self.0 = FIRST_RETRY;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_cap_and_start_over_after_a_reset() {
        let mut backoff = Backoff::default();
        let waits: Vec<Duration> = (0..7).map(|_| backoff.next()).collect();
        let ms: Vec<u128> = waits.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, [50, 100, 200, 400, 800, 1000, 1000]);
        backoff.reset();
        assert_eq!(backoff.next(), FIRST_RETRY);
    }
}
