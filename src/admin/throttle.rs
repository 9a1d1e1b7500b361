//! Slows down guessing at admin tokens: after a few failed sign-ins (a wrong token posted to
//! `/api/login`, or a wrong bearer token on the API) from one address, that address is refused
//! with 429 until a pause has passed, the pause doubling with each further failure.
//!
//! A pause refuses rather than sleeps: a sleeping handler would hold one of the listener's
//! connections per guess, which is the resource a guesser has most of. A success clears the
//! address. IPv6 addresses count by their /64, the block one host is usually given, so a
//! guesser cannot step through its own addresses. What is kept is bounded: addresses quiet for
//! [`FORGET_AFTER`] are forgotten, and at [`MAX_ADDRESSES`] the quietest goes first.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::principal::client_address;

/// Failures from one address before the first pause.
pub const FREE_FAILURES: u32 = 5;
/// The first pause; each further failure doubles it, up to [`MAX_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_secs(10);
const MAX_PAUSE: Duration = Duration::from_secs(300);
/// An address without a failure for this long starts again from nothing.
const FORGET_AFTER: Duration = Duration::from_secs(3600);
/// Addresses remembered at once.
const MAX_ADDRESSES: usize = 4096;

/// What one address did lately.
struct Failures {
    count: u32,
    last: Instant,
    paused_until: Option<Instant>,
}

/// The failed sign-ins of each address, lately.
#[derive(Default)]
pub struct SignInThrottle {
    addresses: Mutex<HashMap<IpAddr, Failures>>,
}

impl SignInThrottle {
    /// `Err(wait)` while `ip` is paused: how long until it may try again.
    pub fn check(&self, ip: IpAddr) -> Result<(), Duration> {
        let addresses = self.addresses.lock().unwrap();
        let now = Instant::now();
        match addresses.get(&client_address(ip)).and_then(|f| f.paused_until) {
            Some(until) if until > now => Err(until - now),
            _ => Ok(()),
        }
    }

    /// Counts a failure of `ip`: how many it has made lately.
    pub fn failed(&self, ip: IpAddr) -> u32 {
        let mut addresses = self.addresses.lock().unwrap();
        let now = Instant::now();
        addresses.retain(|_, f| now.duration_since(f.last) < FORGET_AFTER);
        if addresses.len() >= MAX_ADDRESSES && !addresses.contains_key(&client_address(ip)) {
            if let Some(quietest) = addresses.iter().min_by_key(|(_, f)| f.last).map(|(ip, _)| *ip) {
                addresses.remove(&quietest);
            }
        }
        let failures = addresses.entry(client_address(ip)).or_insert(Failures { count: 0, last: now, paused_until: None });
        failures.count += 1;
        failures.last = now;
        if let Some(beyond) = failures.count.checked_sub(FREE_FAILURES) {
            let pause = FIRST_PAUSE.saturating_mul(1 << beyond.min(16)).min(MAX_PAUSE);
            failures.paused_until = Some(now + pause);
        }
        failures.count
    }

    /// A sign-in from `ip` succeeded: its failures are forgotten.
    pub fn succeeded(&self, ip: IpAddr) {
        self.addresses.lock().unwrap().remove(&client_address(ip));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn repeated_failures_pause_their_address_for_longer_each_time() {
        let throttle = SignInThrottle::default();
        let guesser = ip("192.0.2.7");
        for n in 1..FREE_FAILURES {
            assert_eq!(throttle.failed(guesser), n);
            assert_eq!(throttle.check(guesser), Ok(()), "failure {n} is free");
        }
        throttle.failed(guesser);
        assert_eq!(throttle.check(guesser), Err(FIRST_PAUSE));
        // Another address is not held up by it.
        assert_eq!(throttle.check(ip("192.0.2.8")), Ok(()));
        tokio::time::advance(FIRST_PAUSE).await;
        assert_eq!(throttle.check(guesser), Ok(()));
        throttle.failed(guesser);
        assert_eq!(throttle.check(guesser), Err(FIRST_PAUSE * 2));
        // A success forgets the address.
        throttle.succeeded(guesser);
        assert_eq!(throttle.check(guesser), Ok(()));
    }

    #[tokio::test(start_paused = true)]
    async fn the_pause_is_bounded_and_quiet_addresses_are_forgotten() {
        let throttle = SignInThrottle::default();
        let guesser = ip("192.0.2.7");
        for _ in 0..FREE_FAILURES + 40 {
            throttle.failed(guesser);
        }
        assert_eq!(throttle.check(guesser), Err(MAX_PAUSE));
        tokio::time::advance(FORGET_AFTER).await;
        assert_eq!(throttle.failed(guesser), 1, "an hour without a failure starts again");
    }

    #[tokio::test(start_paused = true)]
    async fn an_ipv6_block_counts_as_one_address() {
        let throttle = SignInThrottle::default();
        for n in 0..FREE_FAILURES {
            throttle.failed(ip(&format!("2001:db8:1:2::{n:x}")));
        }
        assert!(throttle.check(ip("2001:db8:1:2:ffff::1")).is_err(), "the same /64");
        assert_eq!(throttle.check(ip("2001:db8:1:3::1")), Ok(()), "another /64");
        // An IPv4-mapped address is its IPv4 address.
        for _ in 0..FREE_FAILURES {
            throttle.failed(ip("::ffff:192.0.2.9"));
        }
        assert!(throttle.check(ip("192.0.2.9")).is_err());
    }
}
