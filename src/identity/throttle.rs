//! How many introspections one client address may cause: a token bucket per address (an IPv6
//! client by its /64, which one host commonly holds whole), so that a client sending garbage
//! opaque tokens cannot make corral flood the authorization server. Only calls to the issuer
//! take from it: a kept answer or a remembered refusal costs nothing.
//!
//! The map is bounded: when it reaches [`MAX_ADDRESSES`], the buckets that have filled up again
//! (clients that stopped) are dropped, and if none has, the fullest go.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Addresses tracked at once.
const MAX_ADDRESSES: usize = 10_000;

/// Introspections an address may cause: `burst` at once, then `per_second`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IntrospectionRate {
    /// Introspections gained a second.
    pub per_second: f64,
    /// The most a bucket holds, and what a new one starts with.
    pub burst: u32,
}

/// The buckets, by client address.
pub struct Throttle {
    rate: IntrospectionRate,
    buckets: Mutex<HashMap<IpAddr, (f64, Instant)>>,
}

impl Throttle {
    /// Buckets of `rate`.
    pub fn new(rate: IntrospectionRate) -> Throttle {
        Throttle { rate, buckets: Mutex::default() }
    }

    /// Takes one introspection for `client` at `now`, or says how long until it may have one.
    pub fn take(&self, client: IpAddr, now: Instant) -> Result<(), Duration> {
        let burst = f64::from(self.rate.burst.max(1));
        let mut buckets = self.buckets.lock().unwrap();
        let key = crate::principal::client_address(client);
        if !buckets.contains_key(&key) && buckets.len() >= MAX_ADDRESSES {
            self.make_room(&mut buckets, now, burst);
        }
        let (tokens, at) = buckets.entry(key).or_insert((burst, now));
        *tokens = (*tokens + now.saturating_duration_since(*at).as_secs_f64() * self.rate.per_second).min(burst);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            return Ok(());
        }
        let wait = ((1.0 - *tokens) / self.rate.per_second).ceil().clamp(1.0, u32::MAX as f64);
        Err(Duration::from_secs_f64(wait))
    }

    fn make_room(&self, buckets: &mut HashMap<IpAddr, (f64, Instant)>, now: Instant, burst: f64) {
        let level = |(tokens, at): &(f64, Instant)| (tokens + now.saturating_duration_since(*at).as_secs_f64() * self.rate.per_second).min(burst);
        buckets.retain(|_, bucket| level(bucket) < burst);
        if buckets.len() >= MAX_ADDRESSES {
            let mut levels: Vec<f64> = buckets.values().map(level).collect();
            levels.sort_by(f64::total_cmp);
            let threshold = levels[levels.len() / 2];
            buckets.retain(|_, bucket| level(bucket) < threshold);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_gets_its_burst_then_its_rate_and_a_v6_client_is_its_64() {
        let throttle = Throttle::new(IntrospectionRate { per_second: 0.5, burst: 3 });
        let (start, one): (Instant, IpAddr) = (Instant::now(), "192.0.2.1".parse().unwrap());
        for _ in 0..3 {
            throttle.take(one, start).unwrap();
        }
        assert_eq!(throttle.take(one, start), Err(Duration::from_secs(2)), "empty: one more in 2 s");
        throttle.take("192.0.2.2".parse().unwrap(), start).expect("another address has its own bucket");
        throttle.take(one, start + Duration::from_secs(2)).expect("refilled at the rate");
        let v6 = |text: &str| text.parse::<IpAddr>().unwrap();
        for n in 0..3 {
            throttle.take(v6(&format!("2001:db8:0:1::{n}")), start).unwrap();
        }
        assert!(throttle.take(v6("2001:db8:0:1:ffff::9"), start).is_err(), "the same /64 is one client");
        throttle.take(v6("2001:db8:0:2::1"), start).expect("another /64 is another client");
    }
}
