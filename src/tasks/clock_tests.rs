//! The engine's timing on tokio's paused clock: the waits between retries of a store write
//! (a task's end, a task's start) and the reaper's period, checked to the millisecond and
//! without waiting for them in real time.
//!
//! The paused clock moves by itself whenever the runtime has nothing to do: while a SQLite
//! write is on the store's writer thread (a real OS thread), time would jump to the next timer
//! and a retry could fire unseen. So these tests never await the engine while they measure:
//! they move the clock with [`advance`] and then [`spin_until`] the engine has done its part,
//! yielding to the runtime (which keeps it busy, so the clock stays where it was) until the
//! condition holds or a real-time deadline passes. What they read is either an atomic counter
//! of the store wrapper or the database file itself, read synchronously.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio::time::advance;
use tokio_util::sync::CancellationToken;

use super::engine_tests::call;
use super::outage_tests::{start, start_with, Held};
use super::*;

/// How long (real time) the engine may take to do what the clock made due: a loaded machine.
const PATIENCE: Duration = Duration::from_secs(30);

/// A millisecond: the clock is moved to just before a retry is due, then onto it.
const MS: Duration = Duration::from_millis(1);

/// The waits between tries of a store write that keeps failing: 50 ms, doubled, capped at 1 s.
const BACKOFF_MS: [u64; 8] = [50, 100, 200, 400, 800, 1000, 1000, 1000];

/// Yields to the runtime until `done` holds; panics naming `what` after [`PATIENCE`] of real
/// time. The runtime always has this task to run, so the paused clock does not move meanwhile.
async fn spin_until(what: &str, done: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + PATIENCE;
    while !done() {
        assert!(std::time::Instant::now() < deadline, "the engine never did it: {what} (the clock stood at {:?})", tokio::time::Instant::now());
        tokio::task::yield_now().await;
    }
}

/// Runs `work` to its end without letting the clock move: spawned, and spun on. (Awaited
/// directly, a store write would leave the runtime idle and the clock would run ahead, timer
/// after timer, for as long as the writer thread takes.)
async fn unpaused<T: Send + 'static>(what: &str, work: impl std::future::Future<Output = T> + Send + 'static) -> T {
    let handle = tokio::spawn(work);
    spin_until(what, || handle.is_finished()).await;
    handle.await.unwrap()
}

/// Lets every task the clock woke run as far as it can without the clock moving.
async fn settle() {
    for _ in 0..200 {
        tokio::task::yield_now().await;
    }
}

/// Moves the clock to `wait` past the last try, one millisecond short first: no try before it,
/// and one exactly at it (`tries` counts them).
async fn next_try_after(wait: Duration, tries: impl Fn() -> usize) {
    let before = tries();
    advance(wait - MS).await;
    settle().await;
    assert_eq!(tries(), before, "tried again before the wait of {wait:?} was up");
    advance(MS).await;
    spin_until(&format!("a try once the wait of {wait:?} was up"), || tries() == before + 1).await;
}

#[tokio::test(start_paused = true)]
async fn an_end_the_store_refuses_is_tried_again_after_waits_that_double_up_to_a_second() {
    let (engine, store, release) = start(usize::MAX).await;
    engine.admit(call("alice", "slow")).await.unwrap();
    release.add_permits(1);
    let refused = || store.refused.load(Ordering::SeqCst);
    spin_until("the store refused the end", || refused() == 1).await;
    for wait in BACKOFF_MS {
        next_try_after(Duration::from_millis(wait), refused).await;
    }
    assert_eq!(engine.pending_ends(), (1, 0), "still kept, still tried");
}

#[tokio::test(start_paused = true)]
async fn a_start_the_store_refuses_is_tried_again_after_waits_that_double_up_to_a_second() {
    let (engine, store, release) = start(0).await;
    let failures = 100;
    store.start_failures.store(failures, Ordering::SeqCst);
    engine.admit(call("alice", "slow")).await.unwrap();
    let tries = || failures - store.start_failures.load(Ordering::SeqCst);
    spin_until("the store refused the start", || tries() == 1).await;
    for wait in BACKOFF_MS {
        next_try_after(Duration::from_millis(wait), tries).await;
    }
    // The store answers again: the next try takes, and the task runs to its end.
    store.start_failures.store(0, Ordering::SeqCst);
    release.add_permits(1);
    advance(Duration::from_secs(1)).await;
    spin_until("the task to run once the store took its start", || engine.counts().running == 0 && engine.counts().queued == 0).await;
}

#[tokio::test(start_paused = true)]
async fn at_shutdown_ends_the_store_refuses_are_tried_for_the_grace_and_no_longer() {
    let grace = Duration::from_secs(5);
    let settings = TaskSettings { max_running: 2, shutdown_grace: grace, ..TaskSettings::default() };
    let (engine, store, release) = start_with(usize::MAX, settings, Runners::register(Path::new(":memory:")).unwrap()).await;
    engine.admit(call("alice", "slow")).await.unwrap();
    release.add_permits(1);
    let refused = || store.refused.load(Ordering::SeqCst);
    spin_until("the store refused the end", || refused() == 1).await;
    let engine = Arc::new(engine);
    let shutting = tokio::spawn({
        let engine = engine.clone();
        async move { engine.shutdown().await }
    });
    // The grace starts with the shutdown's first try of the ends still pending.
    spin_until("the shutdown to try the pending end", || refused() == 2).await;
    advance(grace - MS).await;
    settle().await;
    assert!(!shutting.is_finished(), "gave up before the grace was spent");
    assert!(refused() > 2, "tried again within the grace");
    advance(MS).await;
    spin_until("the shutdown to give up once the grace was spent", || shutting.is_finished()).await;
    assert_eq!(engine.pending_ends(), (1, 0), "the end it could not store is left for recovery");
}

/// Whether task `id` is in the SQLite file `db`, read beside the engine (synchronously, so the
/// clock cannot move while it is read).
fn stored(db: &Path, id: &str) -> bool {
    let db = rusqlite::Connection::open(db).unwrap();
    db.query_row("SELECT count(*) FROM tasks WHERE id = ?1", [id], |r| r.get::<_, i64>(0)).unwrap() == 1
}

#[tokio::test(start_paused = true)]
async fn the_reaper_deletes_an_expired_task_at_its_first_pass_not_before() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tasks.db");
    let every = Duration::from_secs(3600);
    let settings = TaskSettings { reap_every: every, ..TaskSettings::default() };
    let store = Arc::new(SqliteStore::open(&db, Durability::Process).unwrap());
    let runs = Arc::new(Semaphore::new(1));
    let runners = Runners::register(&db).unwrap();
    // Started and the task admitted with the clock standing still: the reaper's first pass is
    // due an hour from now.
    let starting = Engine::start(store, runners, settings, Arc::new(Held(runs)), Arc::new(|| {}), CancellationToken::new());
    let engine = Arc::new(unpaused("the engine to start", starting).await.unwrap());
    let admitting = {
        let engine = engine.clone();
        async move { engine.admit(Admission { requested_ttl_ms: Some(1), ..call("alice", "quick") }).await }
    };
    let task = unpaused("the task's admission", admitting).await.unwrap();
    // Its TTL runs on the wall clock (task rows hold wall-clock times): a millisecond.
    let expired = task.expires_at().unwrap();
    spin_until("the task's 1 ms TTL to pass on the wall clock", || now_ms() > expired).await;
    spin_until("the task to end", || engine.counts().running == 0 && !engine.runs("alice", &task.id)).await;

    advance(every / 2).await;
    settle().await;
    assert!(stored(&db, &task.id), "deleted half an hour before the reaper's first pass");
    advance(every / 2).await;
    spin_until("the reaper's first pass to delete the expired task", || !stored(&db, &task.id)).await;
}
