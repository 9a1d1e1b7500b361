//! Per-principal limits: a call rate, kept as a token bucket, and a cap on unfinished tasks.
//!
//! A bucket holds up to `burst` tokens and gains `per_second` of them a second; each call takes
//! one, and a call that finds less than one is refused with the time until one is there. The
//! buckets here are one host's ([`Buckets`]); replicas on PostgreSQL keep them in the database
//! instead (the task store's `take_token`), so that every replica draws from the same one.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A call rate: `burst` calls at once, then `per_second` a second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// Tokens gained a second.
    pub per_second: f64,
    /// The most tokens a bucket holds (and a new one starts with).
    pub burst: u32,
}

impl std::fmt::Display for Rate {
    /// As a rate is written in the file, in the largest unit that gives at least one.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (count, unit) = [(1.0, "s"), (60.0, "min"), (3600.0, "h")]
            .into_iter()
            .map(|(seconds, unit)| (self.per_second * seconds, unit))
            .find(|(count, _)| *count >= 1.0)
            .unwrap_or((self.per_second * 86400.0, "day"));
        let count = format!("{count:.3}");
        write!(f, "{}/{unit}", count.trim_end_matches('0').trim_end_matches('.'))
    }
}

impl Rate {
    /// Reads `N/s`, `N/min`, `N/h` or `N/day` (N a positive number, e.g. `10/s`, `0.5/min`).
    pub fn per(text: &str) -> Result<f64, String> {
        let bad = || format!("`{text}` is not a rate: write N/s, N/min, N/h or N/day with N a positive number, e.g. \"10/s\"");
        let (count, unit) = text.split_once('/').ok_or_else(bad)?;
        let count: f64 = count.trim().parse().map_err(|_| bad())?;
        if !(count.is_finite() && count > 0.0) {
            return Err(bad());
        }
        let seconds = match unit.trim() {
            "s" | "sec" | "second" => 1.0,
            "min" | "minute" => 60.0,
            "h" | "hour" => 3600.0,
            "d" | "day" => 86400.0,
            _ => return Err(bad()),
        };
        Ok(count / seconds)
    }

    /// How long until a bucket holding `tokens` has one, rounded up to whole seconds for
    /// `Retry-After` (at least 1).
    pub fn wait_for_token(&self, tokens: f64) -> Duration {
        let seconds = ((1.0 - tokens).max(0.0) / self.per_second).ceil().max(1.0);
        Duration::from_secs_f64(seconds.min(u32::MAX as f64))
    }
}

/// One host's buckets, by principal.
#[derive(Default)]
pub struct Buckets {
    buckets: Mutex<HashMap<String, Bucket>>,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Buckets {
    /// Takes a token from `key`'s bucket at `now`: `Ok`, or how long until one is there.
    pub fn take(&self, key: &str, rate: &Rate, now: Instant) -> Result<(), Duration> {
        let mut buckets = self.buckets.lock().unwrap();
        let burst = f64::from(rate.burst);
        let bucket = match buckets.get_mut(key) {
            Some(bucket) => bucket,
            None => buckets.entry(key.to_owned()).or_insert(Bucket { tokens: burst, at: now }),
        };
        let gained = now.saturating_duration_since(bucket.at).as_secs_f64() * rate.per_second;
        // A burst lowered by a reload applies at once.
        bucket.tokens = (bucket.tokens + gained).min(burst);
        bucket.at = bucket.at.max(now);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            Err(rate.wait_for_token(bucket.tokens))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_read_in_their_units_and_bad_ones_say_how_to_write_them() {
        assert_eq!(Rate::per("10/s"), Ok(10.0));
        for (text, shown) in [("10/s", "10/s"), ("1/h", "1/h"), ("90/min", "1.5/s"), ("0.5/min", "30/h"), ("2/day", "2/day")] {
            assert_eq!(Rate { per_second: Rate::per(text).unwrap(), burst: 1 }.to_string(), shown);
        }
        assert_eq!(Rate::per("120/min"), Ok(2.0));
        assert_eq!(Rate::per("36 / h"), Ok(0.01));
        for bad in ["10", "ten/s", "0/s", "-1/s", "5/fortnight", "NaN/s", "inf/s"] {
            assert!(Rate::per(bad).unwrap_err().contains("N/s, N/min"), "{bad}");
        }
    }

    #[test]
    fn a_bucket_gives_its_burst_then_one_token_per_refill_and_says_how_long_to_wait() {
        let buckets = Buckets::default();
        let rate = Rate { per_second: 0.5, burst: 2 };
        let start = Instant::now();
        assert_eq!(buckets.take("a", &rate, start), Ok(()));
        assert_eq!(buckets.take("a", &rate, start), Ok(()));
        assert_eq!(buckets.take("a", &rate, start), Err(Duration::from_secs(2)));
        assert_eq!(buckets.take("b", &rate, start), Ok(()), "each principal has its own bucket");
        assert_eq!(buckets.take("a", &rate, start + Duration::from_secs(1)), Err(Duration::from_secs(1)));
        assert_eq!(buckets.take("a", &rate, start + Duration::from_secs(2)), Ok(()));
        assert_eq!(buckets.take("a", &rate, start + Duration::from_secs(100)), Ok(()), "refilled up to the burst");
        assert_eq!(buckets.take("a", &rate, start + Duration::from_secs(100)), Ok(()));
        assert!(buckets.take("a", &rate, start + Duration::from_secs(100)).is_err(), "never more than the burst");
    }
}
