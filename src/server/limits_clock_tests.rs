//! The policy's call rate on tokio's paused clock: a bucket refills with the time that passes
//! for the host, to the half second, without a test waiting for it in real time. (The rate
//! check reads the time from tokio's clock for this; outside a paused test it is the system's
//! monotonic clock, as before.)

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::advance;

use super::{rate, RateCheck};
use crate::policy::{parse, Policies};
use crate::principal::{Owner, Principal, Wire};
use crate::server::{testing, Host, ServerOptions};

/// One call's rate check: `Ok`, or the `retryAfterSeconds` of its refusal.
fn take(host: &Host, owner: &Owner) -> Result<(), u64> {
    match rate(host, owner) {
        RateCheck::Free => Ok(()),
        RateCheck::Refused(refused) => Err(refused.data.as_ref().and_then(|d| d["retryAfterSeconds"].as_u64()).expect("a refusal says when to retry")),
        RateCheck::Shared(_) => panic!("a host on SQLite keeps its buckets in memory"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_principal_over_its_rate_gets_a_call_again_once_the_clock_refilled_a_token() {
    let policy = parse("[[limit]]\nwho = { local = true }\nrate = \"1/s\"\nburst = 2\n", Path::new("policy.toml")).unwrap();
    let host = testing::host(&[], ServerOptions { policy: Arc::new(Policies::new(Some(policy))), ..ServerOptions::default() }).await;
    let (local, other) = (Owner::new(Principal::Local, Wire::Sessions), Owner::new(Principal::Token("ci".into()), Wire::Sessions));
    assert_eq!((take(&host, &local), take(&host, &local)), (Ok(()), Ok(())), "the burst");
    assert_eq!(take(&host, &local), Err(1), "then one a second");
    assert_eq!(take(&host, &other), Ok(()), "a principal the limit does not hold is never refused");

    advance(Duration::from_millis(500)).await;
    assert_eq!(take(&host, &local), Err(1), "half a token after half a second");
    advance(Duration::from_millis(500)).await;
    assert_eq!(take(&host, &local), Ok(()), "a whole one after a second");
    assert_eq!(take(&host, &local), Err(1));

    advance(Duration::from_secs(3600)).await;
    assert_eq!((take(&host, &local), take(&host, &local)), (Ok(()), Ok(())), "an hour refills the bucket");
    assert_eq!(take(&host, &local), Err(1), "to its burst, no further");
}
