//! The PostgreSQL store against a real server that the test process starts itself
//! ([`testing`]): the generic store suite, then what only replicas need.

use std::time::Duration;

use serde_json::json;

use super::pool::Target;
use super::testing;
use super::{PgOptions, PgStore};
use crate::tasks::model::{Outcome, TaskStatus};
use crate::tasks::store::{StoreError, TaskStore};
use crate::tasks::store_suite::task;

/// A database of its own, or `None` (the test skips) without a server; see
/// [`database_or_skip`](testing::database_or_skip).
fn database() -> Option<String> {
    testing::database_or_skip()
}

/// A store on a fresh database, made from synchronous code (as `store_suite!` asks): the
/// migration runs on a runtime of its own, the store on the caller's.
fn fresh_store() -> Option<(PgStore, ())> {
    let url = database()?;
    let options = PgOptions::new(&url, "suite-host");
    let target = Target::parse(&url).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(PgStore::prepare(&target, &options))).join().unwrap()
    })
    .unwrap();
    Some((PgStore::assemble(&target, &options).unwrap(), ()))
}

crate::tasks::store_suite::store_suite!(suite, fresh_store);

async fn open(url: &str, host: &str) -> PgStore {
    PgStore::open(PgOptions { host_expiry: Duration::from_millis(300), ..PgOptions::new(url, host) }).await.unwrap()
}

#[tokio::test]
async fn a_foreign_database_is_refused_and_left_alone() {
    let Some(url) = database() else { return };
    testing::psql(&url, "CREATE TABLE invoices (id int); INSERT INTO invoices VALUES (7)").unwrap();
    let e = PgStore::open(PgOptions::new(&url, "h")).await.err().expect("refused");
    assert!(matches!(e, StoreError::Schema { .. }), "{e:?}");
    let shown = e.to_string();
    assert!(shown.contains("tables that are not corral's (invoices)") && shown.contains("belongs to something else"), "{shown}");
    assert!(shown.contains(":***@"), "the password is not shown: {shown}");
    assert_eq!(testing::psql(&url, "SELECT count(*) FROM invoices").unwrap(), "1", "left as it was");
    assert_eq!(testing::psql(&url, "SELECT to_regclass('corral_tasks') IS NULL").unwrap(), "t");
}

#[tokio::test]
async fn a_newer_schema_is_refused() {
    let Some(url) = database() else { return };
    open(&url, "h").await.close().await;
    testing::psql(&url, "UPDATE corral_schema SET version = 99").unwrap();
    let e = PgStore::open(PgOptions::new(&url, "h")).await.err().expect("refused");
    let expected = format!("the corral schema is version 99, newer than this corral understands ({})", super::schema::VERSION);
    assert!(e.to_string().contains(&expected), "{e}");
}

#[tokio::test]
async fn a_wrong_password_is_a_connect_error_naming_the_store() {
    let Some(url) = database() else { return };
    let server = testing::server().unwrap();
    if !server.is_own() {
        eprintln!("{}", testing::skip_notice("the external server's authentication is unknown"));
        return;
    }
    let wrong = url.replace(testing::PASSWORD, "not-the-password");
    let e = PgStore::open(PgOptions::new(&wrong, "h")).await.err().expect("refused");
    assert!(matches!(e, StoreError::Connect { .. }), "{e:?}");
    let shown = e.to_string();
    assert!(shown.contains("password authentication failed"), "{shown}");
    assert!(!shown.contains("not-the-password"), "the password is not shown: {shown}");
}

#[tokio::test]
async fn replicas_starting_together_migrate_once() {
    let Some(url) = database() else { return };
    let opens = (0..4).map(|i| {
        let url = url.clone();
        tokio::spawn(async move { PgStore::open(PgOptions::new(&url, &format!("h{i}"))).await })
    });
    for store in futures_util::future::join_all(opens).await {
        store.unwrap().expect("every replica starts").close().await;
    }
    assert_eq!(testing::psql(&url, "SELECT version FROM corral_schema").unwrap(), super::schema::VERSION.to_string());
}

#[tokio::test]
async fn a_dead_replicas_tasks_are_claimed_once_and_the_late_replica_writes_nothing() {
    let Some(url) = database() else { return };
    let (b, c) = (open(&url, "b").await, open(&url, "c").await);
    // Replica `a` stopped beating an hour ago (it is paused, partitioned or gone); `live` beats.
    testing::psql(&url, "INSERT INTO corral_hosts (id, heartbeat_at) VALUES ('a', now() - interval '1 hour'), ('live', now() + interval '1 hour')").unwrap();
    for i in 0..40 {
        b.insert(task(&format!("a{i}"), "o", "a")).await.unwrap();
    }
    b.insert(task("mine", "o", "live")).await.unwrap();
    b.start("o", "a0", "a").await.unwrap().expect("a had started a0");
    // Two replicas sweep at once: SKIP LOCKED splits the orphans between them, none twice.
    let (by_b, by_c) = tokio::join!(b.claim_orphans("b"), c.claim_orphans("c"));
    let (by_b, by_c) = (by_b.unwrap(), by_c.unwrap());
    let mut ids: Vec<String> = by_b.iter().chain(&by_c).map(|t| t.id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 40, "every orphan claimed exactly once");
    assert_eq!(by_b.len() + by_c.len(), 40);
    assert!(by_b.iter().all(|t| t.runner == "b") && by_c.iter().all(|t| t.runner == "c"));
    assert!(b.claim_orphans("b").await.unwrap().is_empty(), "claimed once");
    assert_eq!(b.get("o", "mine").await.unwrap().unwrap().runner, "live", "a live replica's task is left alone");
    assert!(b.started("a0").await.unwrap() && !b.started("a1").await.unwrap());
    assert_eq!(testing::psql(&url, "SELECT count(*) FROM corral_hosts WHERE id = 'a'").unwrap(), "0", "the dead host is gone");
    assert_eq!(testing::psql(&url, "SELECT min(epoch) FROM corral_tasks WHERE id LIKE 'a%'").unwrap(), "1", "the fencing counter moved");

    // `a` comes back late and finishes what it had started: nothing is written.
    let late = b.finish_as("a0", "a", TaskStatus::Completed, None, &Outcome::Result(json!({ "late": true }))).await.unwrap();
    assert_eq!(late, None, "the late replica writes nothing");
    assert_eq!(b.set_status_as("a0", "a", TaskStatus::InputRequired, None).await.unwrap(), None);
    assert_eq!(b.start("o", "a0", "a").await.unwrap(), None, "nor takes it again");
    let owner = if by_b.iter().any(|t| t.id == "a0") { &b } else { &c };
    let runner = if std::ptr::eq(owner, &b) { "b" } else { "c" };
    let done = owner.finish_as("a0", runner, TaskStatus::Failed, None, &Outcome::Interrupted).await.unwrap().expect("its successor writes");
    assert_eq!(done.status, TaskStatus::Failed);
    assert_eq!(b.outcome("a0").await.unwrap(), Some(Outcome::Interrupted));
    b.close().await;
    c.close().await;
}

#[tokio::test]
async fn a_replica_beats_while_open_and_leaves_when_closed() {
    let Some(url) = database() else { return };
    let store = open(&url, "beating").await;
    let first = testing::psql(&url, "SELECT heartbeat_at FROM corral_hosts WHERE id = 'beating'").unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let later = testing::psql(&url, "SELECT heartbeat_at FROM corral_hosts WHERE id = 'beating'").unwrap();
    assert!(later > first, "the heartbeat moved: {first} → {later}");
    // Taken for dead meanwhile (its row swept), it registers again on its next beat.
    testing::psql(&url, "DELETE FROM corral_hosts WHERE id = 'beating'").unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(testing::psql(&url, "SELECT count(*) FROM corral_hosts WHERE id = 'beating'").unwrap(), "1");
    store.close().await;
    assert_eq!(testing::psql(&url, "SELECT count(*) FROM corral_hosts WHERE id = 'beating'").unwrap(), "0", "deregistered");
    assert!(matches!(store.count_by_status().await, Err(StoreError::Closed)));
}

#[tokio::test]
async fn the_console_sees_each_replica_its_heartbeat_and_the_tasks_it_holds() {
    let Some(url) = database() else { return };
    let (a, b) = (open(&url, "ra").await, open(&url, "rb").await);
    testing::psql(&url, "INSERT INTO corral_hosts (id, heartbeat_at) VALUES ('stale', now() - interval '1 hour')").unwrap();
    a.insert(task("held", "o", "ra")).await.unwrap();
    a.insert(task("done", "o", "ra")).await.unwrap();
    a.finish("done", TaskStatus::Completed, None, &Outcome::Result(json!({}))).await.unwrap();
    b.insert(task("other", "o", "rb")).await.unwrap();
    let replicas = a.replicas().await.unwrap().expect("PostgreSQL keeps replicas");
    let by_id = |id: &str| replicas.iter().find(|r| r.id == id).unwrap_or_else(|| panic!("{id} listed: {replicas:?}")).clone();
    assert_eq!((by_id("ra").tasks_held, by_id("rb").tasks_held, by_id("stale").tasks_held), (1, 1, 0), "unfinished tasks only");
    assert!(by_id("ra").heartbeat_age_ms < 60_000, "{replicas:?}");
    assert!(by_id("stale").heartbeat_age_ms >= 3_500_000, "{replicas:?}");
    a.close().await;
    b.close().await;
}

#[tokio::test]
async fn the_caps_are_counted_across_replicas() {
    let Some(url) = database() else { return };
    let capped = |host: &str| PgOptions { max_queued: Some(3), max_per_owner: Some(2), ..PgOptions::new(&url, host) };
    let (a, b) = (PgStore::open(capped("a")).await.unwrap(), PgStore::open(capped("b")).await.unwrap());
    a.insert(task("a1", "alice", "a")).await.unwrap();
    b.insert(task("b1", "alice", "b")).await.unwrap();
    let e = b.insert(task("b2", "alice", "b")).await.unwrap_err();
    assert!(matches!(e, StoreError::OwnerFull { active: 2, limit: 2 }), "alice's two tasks on two replicas count: {e:?}");
    b.insert(task("b3", "bob", "b")).await.unwrap();
    let e = a.insert(task("a4", "carol", "a")).await.unwrap_err();
    assert!(matches!(e, StoreError::Full { queued: 3, limit: 3 }), "three waiting across replicas: {e:?}");
    assert_eq!(a.get("carol", "a4").await.unwrap(), None, "nothing half-created");
    // A started task no longer waits; an ended one no longer counts for its owner.
    a.start("alice", "a1", "a").await.unwrap().unwrap();
    a.insert(task("a5", "dave", "a")).await.unwrap();
    b.finish("b1", TaskStatus::Completed, None, &Outcome::Result(json!({}))).await.unwrap().unwrap();
    a.start("dave", "a5", "a").await.unwrap().unwrap();
    b.insert(task("b6", "alice", "b")).await.unwrap();
    a.close().await;
    b.close().await;
}

/// The counters of the caps beside the truth they stand for, as `counted/true` for the waiting
/// set and for `owner`'s unfinished tasks.
fn counters(url: &str, owner: &str) -> String {
    let sql = format!(
        "SELECT (SELECT coalesce(sum(waiting), 0) FROM corral_queue_counts) || '/' ||
                (SELECT count(*) FROM corral_tasks WHERE started_at IS NULL AND status IN ('working', 'input_required')) || ' ' ||
                (SELECT coalesce(sum(unfinished), 0) FROM corral_owner_counts WHERE owner = '{owner}') || '/' ||
                (SELECT count(*) FROM corral_tasks WHERE owner = '{owner}' AND status IN ('working', 'input_required'))"
    );
    testing::psql(url, &sql).unwrap()
}

#[tokio::test]
async fn a_crashed_replicas_tasks_stay_counted_until_its_successor_ends_them() {
    let Some(url) = database() else { return };
    // Replica "a" admits three of alice's tasks, starts one, and dies: its runtime goes away
    // mid-flight, so it never deregisters.
    let crashed = url.clone();
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
            let a = open(&crashed, "a").await;
            for id in ["t1", "t2", "t3"] {
                a.insert(task(id, "alice", "a")).await.unwrap();
            }
            a.start("alice", "t1", "a").await.unwrap().unwrap();
            std::mem::forget(a);
        })
    })
    .join()
    .unwrap();
    assert_eq!(counters(&url, "alice"), "2/2 3/3", "what a counted before it died");
    testing::psql(&url, "UPDATE corral_hosts SET heartbeat_at = now() - interval '1 hour' WHERE id = 'a'").unwrap();
    let capped = PgOptions { host_expiry: Duration::from_millis(300), max_queued: Some(3), max_per_owner: Some(3), ..PgOptions::new(&url, "b") };
    let b = PgStore::open(capped).await.unwrap();
    let e = b.insert(task("b1", "alice", "b")).await.unwrap_err();
    assert!(matches!(e, StoreError::OwnerFull { active: 3, limit: 3 }), "the dead replica's tasks still count: {e:?}");
    let claimed = b.claim_orphans("b").await.unwrap();
    assert_eq!(claimed.len(), 3, "b takes a's tasks");
    assert_eq!(counters(&url, "alice"), "2/2 3/3", "a claim moves no count");
    b.finish_as("t1", "b", TaskStatus::Failed, Some("interrupted"), &Outcome::Interrupted).await.unwrap().unwrap();
    b.start("alice", "t2", "b").await.unwrap().unwrap();
    b.finish("t3", TaskStatus::Cancelled, None, &Outcome::Cancelled).await.unwrap().unwrap();
    assert_eq!(counters(&url, "alice"), "0/0 1/1", "each end and start moved the counts in its own transaction");
    b.insert(task("b2", "alice", "b")).await.unwrap();
    assert_eq!(counters(&url, "alice"), "1/1 2/2");
    assert_eq!(b.purge_expired(i64::MAX).await.unwrap(), 4, "every task expired");
    assert_eq!(counters(&url, "alice"), "0/0 0/0", "a purge of unfinished tasks uncounts them");
    b.close().await;
}

#[tokio::test]
async fn counters_that_drifted_from_the_tasks_are_repaired_at_the_next_heartbeat() {
    let Some(url) = database() else { return };
    let capped = PgOptions { host_expiry: Duration::from_millis(300), max_queued: Some(3), max_per_owner: Some(2), ..PgOptions::new(&url, "h") };
    let store = PgStore::open(capped).await.unwrap();
    store.insert(task("t1", "alice", "h")).await.unwrap();
    // Written past the trigger, as a hand edit or a restored table would: the counts now say
    // more than the tasks, and admission believes them.
    testing::psql(
        &url,
        "UPDATE corral_queue_counts SET waiting = waiting + 5 WHERE stripe = 7;
         UPDATE corral_owner_counts SET unfinished = 40 WHERE owner = 'alice';
         INSERT INTO corral_owner_counts VALUES ('ghost', 5, 3), ('carol', 1, 4), ('carol', 2, -4)",
    )
    .unwrap();
    let e = store.insert(task("t2", "bob", "h")).await.unwrap_err();
    assert!(matches!(e, StoreError::Full { queued: 6, limit: 3 }), "{e:?}");
    // A beat every 100 ms: within a few, the counts are the tasks' again.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while counters(&url, "alice") != "1/1 1/1" {
        assert!(std::time::Instant::now() < deadline, "never repaired: {}", counters(&url, "alice"));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left = testing::psql(&url, "SELECT count(*) FROM corral_owner_counts WHERE owner IN ('ghost', 'carol')").unwrap();
    assert_eq!(left, "0", "owners without tasks are dropped, their stripes folded even where they summed to zero");
    store.insert(task("t2", "bob", "h")).await.unwrap();
    store.insert(task("t3", "alice", "h")).await.unwrap();
    let e = store.insert(task("t4", "alice", "h")).await.unwrap_err();
    assert!(matches!(e, StoreError::Full { queued: 3, limit: 3 }), "the repaired counts hold the caps again: {e:?}");
    store.close().await;
}

#[tokio::test]
async fn replicas_draw_call_tokens_from_one_bucket_and_an_owners_own_cap_holds_across_them() {
    let Some(url) = database() else { return };
    let (a, b) = (open(&url, "a").await, open(&url, "b").await);
    // A bucket that refills once an hour: what the two replicas take is all there is.
    let take = |store: &PgStore, key: &str| store.take_token(key, 1.0 / 3600.0, 3).expect("a shared store keeps the buckets");
    assert!(take(&a, "token:ci").await.unwrap().0);
    assert!(take(&b, "token:ci").await.unwrap().0);
    let (granted, left) = take(&a, "token:ci").await.unwrap();
    assert!(granted && left < 0.01, "the third of a burst of three: {left}");
    let (granted, left) = take(&b, "token:ci").await.unwrap();
    assert!(!granted && (0.0..0.01).contains(&left), "spent on both replicas: {left}");
    assert!(take(&b, "token:other").await.unwrap().0, "each principal has its own bucket");

    a.insert_capped(task("a1", "alice", "a"), 2).await.unwrap();
    b.insert_capped(task("b1", "alice", "b"), 2).await.unwrap();
    let e = b.insert_capped(task("b2", "alice", "b"), 2).await.unwrap_err();
    assert!(matches!(e, StoreError::OwnerFull { active: 2, limit: 2 }), "alice's own cap counts both replicas' tasks: {e:?}");
    b.insert(task("b3", "alice", "b")).await.expect("without her cap, the store's (none here) applies");
    assert_eq!(a.owner_of("b1").await.unwrap().as_deref(), Some("alice"), "any replica tells an operator who owns a task");
    assert_eq!(a.owner_of("nope").await.unwrap(), None);
}

#[tokio::test]
async fn caller_secrets_are_kept_sealed_and_rotated_in_the_shared_database() {
    let Some(url) = database() else { return };
    let store = std::sync::Arc::new(open(&url, "h").await);
    // Every secret row as the server returns it, to search for values.
    let raw = async || {
        testing::psql(&url, "SELECT holder, plugin, name, key_id, encode(nonce, 'escape'), encode(sealed, 'escape') FROM corral_secrets").unwrap().into_bytes()
    };
    crate::secrets::suite::run(store.clone(), raw).await;
    store.close().await;
}
