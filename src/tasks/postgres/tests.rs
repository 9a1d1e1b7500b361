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

/// A database of its own, or a loud panic saying why there is no server.
fn database() -> String {
    testing::fresh_database().unwrap_or_else(|why| panic!("{}", testing::skip_notice(&why)))
}

/// A store on a fresh database, made from synchronous code (as `store_suite!` asks): the
/// migration runs on a runtime of its own, the store on the caller's.
fn fresh_store() -> (PgStore, ()) {
    let url = database();
    let options = PgOptions::new(&url, "suite-host");
    let target = Target::parse(&url).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(PgStore::prepare(&target, &options))).join().unwrap()
    })
    .unwrap();
    (PgStore::assemble(&target, &options).unwrap(), ())
}

crate::tasks::store_suite::store_suite!(suite, fresh_store);

async fn open(url: &str, host: &str) -> PgStore {
    PgStore::open(PgOptions { host_expiry: Duration::from_millis(300), ..PgOptions::new(url, host) }).await.unwrap()
}

#[tokio::test]
async fn a_foreign_database_is_refused_and_left_alone() {
    let url = database();
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
    let url = database();
    open(&url, "h").await.close().await;
    testing::psql(&url, "UPDATE corral_schema SET version = 99").unwrap();
    let e = PgStore::open(PgOptions::new(&url, "h")).await.err().expect("refused");
    let understood = format!("the corral schema is version 99, newer than this corral understands ({})", super::schema::VERSION);
    assert!(e.to_string().contains(&understood), "{e}");
}

#[tokio::test]
async fn a_wrong_password_is_a_connect_error_naming_the_store() {
    let url = database();
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
    let url = database();
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
    let url = database();
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
    let url = database();
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
async fn the_caps_are_counted_across_replicas() {
    let url = database();
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
