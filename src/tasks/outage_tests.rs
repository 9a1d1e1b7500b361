//! A store that fails to take a task's end for a while: the end is kept and written once the
//! store answers again (`pending`), and never replaces an end the store already holds; a start
//! the store fails to take is retried; at shutdown the ends still waiting get the grace; and a
//! replica back from an outage claims nothing for a host expiry. On a real PostgreSQL, stopped
//! and started again: on one replica and on three.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::json;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::blobs::{ResultPage, ResultPart, ResultQuota};
use super::engine_tests::call;
use super::*;

/// SQLite, except that `finish_as` (and `ping`) fail while `failures_left` is above zero (each
/// failure counts down; `usize::MAX` fails until told otherwise), as an unreachable server
/// would, and `start` while `start_failures` is; `claims` counts the looks for orphans, `ends`
/// keeps the ends `finish_as` stored.
pub(super) struct Flaky {
    inner: SqliteStore,
    pub(super) failures_left: AtomicUsize,
    pub(super) refused: AtomicUsize,
    pub(super) start_failures: AtomicUsize,
    claims: AtomicUsize,
    ends: Arc<std::sync::Mutex<Vec<(String, TaskStatus)>>>,
}

impl Flaky {
    fn new(failures: usize) -> Arc<Flaky> {
        Arc::new(Flaky {
            inner: SqliteStore::open(Path::new(":memory:"), Durability::Process).unwrap(),
            failures_left: AtomicUsize::new(failures),
            refused: AtomicUsize::new(0),
            start_failures: AtomicUsize::new(0),
            claims: AtomicUsize::new(0),
            ends: Arc::default(),
        })
    }
}

/// Takes one of `left`'s failures: true when the call must fail.
fn take_failure(left: &AtomicUsize) -> bool {
    left.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| match n {
        0 => None,
        usize::MAX => Some(usize::MAX),
        n => Some(n - 1),
    })
    .is_ok()
}

fn outage<T: Send + 'static>() -> StoreFuture<T> {
    Box::pin(async { Err(StoreError::Unavailable("the test's outage".into())) })
}

impl TaskStore for Flaky {
    fn insert(&self, task: Task) -> StoreFuture<Task> {
        self.inner.insert(task)
    }
    fn get(&self, owner: &str, id: &str) -> StoreFuture<Option<Task>> {
        self.inner.get(owner, id)
    }
    fn owner_of(&self, id: &str) -> StoreFuture<Option<String>> {
        self.inner.owner_of(id)
    }
    fn list(&self, owner: &str, after: i64, limit: usize) -> StoreFuture<Vec<Task>> {
        self.inner.list(owner, after, limit)
    }
    fn set_status(&self, id: &str, status: TaskStatus, message: Option<&str>) -> StoreFuture<Option<Task>> {
        self.inner.set_status(id, status, message)
    }
    fn finish(&self, id: &str, status: TaskStatus, message: Option<&str>, outcome: &Outcome) -> StoreFuture<Option<Task>> {
        self.inner.finish(id, status, message, outcome)
    }
    fn outcome(&self, id: &str) -> StoreFuture<Option<Outcome>> {
        self.inner.outcome(id)
    }
    fn get_with_outcome(&self, owner: &str, id: &str) -> StoreFuture<Option<(Task, Option<Outcome>)>> {
        self.inner.get_with_outcome(owner, id)
    }
    fn find_by_key(&self, owner: &str, key: &str) -> StoreFuture<Option<Task>> {
        self.inner.find_by_key(owner, key)
    }
    fn unfinished(&self) -> StoreFuture<Vec<Task>> {
        self.inner.unfinished()
    }
    fn claim(&self, id: &str, from: &str, to: &str) -> StoreFuture<Option<Task>> {
        self.inner.claim(id, from, to)
    }
    fn start(&self, owner: &str, id: &str, runner: &str) -> StoreFuture<Option<Task>> {
        if take_failure(&self.start_failures) {
            return outage();
        }
        self.inner.start(owner, id, runner)
    }
    fn claim_orphans(&self, to: &str) -> StoreFuture<Vec<Task>> {
        self.claims.fetch_add(1, Ordering::SeqCst);
        self.inner.claim_orphans(to)
    }
    fn started(&self, id: &str) -> StoreFuture<bool> {
        self.inner.started(id)
    }
    fn set_status_as(&self, id: &str, runner: &str, status: TaskStatus, message: Option<&str>) -> StoreFuture<Option<Task>> {
        self.inner.set_status_as(id, runner, status, message)
    }
    fn finish_as(&self, id: &str, runner: &str, status: TaskStatus, message: Option<&str>, outcome: &Outcome) -> StoreFuture<Option<Task>> {
        if take_failure(&self.failures_left) {
            self.refused.fetch_add(1, Ordering::SeqCst);
            return outage();
        }
        let (finishing, ends) = (self.inner.finish_as(id, runner, status, message, outcome), self.ends.clone());
        Box::pin(async move {
            let ended = finishing.await;
            if let Ok(Some(task)) = &ended {
                ends.lock().unwrap().push((task.id.clone(), task.status));
            }
            ended
        })
    }
    fn purge_expired(&self, now_ms: i64) -> StoreFuture<usize> {
        self.inner.purge_expired(now_ms)
    }
    fn list_all(&self, filter: &TaskFilter, after: Option<TaskCursor>, limit: usize) -> StoreFuture<TaskPage> {
        self.inner.list_all(filter, after, limit)
    }
    fn inspect(&self, id: &str) -> StoreFuture<Option<TaskDetail>> {
        self.inner.inspect(id)
    }
    fn cancels_after(&self, after: Option<i64>) -> StoreFuture<(i64, Vec<String>)> {
        self.inner.cancels_after(after)
    }
    fn purge_tasks(&self, ids: Vec<String>) -> StoreFuture<Vec<(String, Purged)>> {
        self.inner.purge_tasks(ids)
    }
    fn checkpoint(&self, id: &str, runner: &str, state: Vec<u8>, message: Option<&str>) -> StoreFuture<Option<u64>> {
        self.inner.checkpoint(id, runner, state, message)
    }
    fn checkpoint_state(&self, id: &str) -> StoreFuture<Option<(u64, Vec<u8>)>> {
        self.inner.checkpoint_state(id)
    }
    fn keep_result(&self, owner: &str, id: &str, expires_at: Option<i64>, parts: Vec<ResultPart>, quota: ResultQuota) -> StoreFuture<()> {
        self.inner.keep_result(owner, id, expires_at, parts, quota)
    }

    fn result_bytes_kept(&self) -> StoreFuture<u64> {
        self.inner.result_bytes_kept()
    }
    fn result_page(&self, owner: &str, id: &str, part: u32, page: u32, now_ms: i64) -> StoreFuture<Option<ResultPage>> {
        self.inner.result_page(owner, id, part, page, now_ms)
    }
    fn keep_questions(&self, id: &str, questions: Vec<(String, serde_json::Value)>) -> StoreFuture<()> {
        self.inner.keep_questions(id, questions)
    }
    fn questions(&self, id: &str) -> StoreFuture<Vec<TaskQuestion>> {
        self.inner.questions(id)
    }
    fn answer_questions(&self, id: &str, answers: Vec<(String, serde_json::Value)>) -> StoreFuture<Vec<String>> {
        self.inner.answer_questions(id, answers)
    }
    fn drop_questions(&self, id: &str, keys: Vec<String>) -> StoreFuture<()> {
        self.inner.drop_questions(id, keys)
    }
    fn count_by_status(&self) -> StoreFuture<Vec<(TaskStatus, u64)>> {
        self.inner.count_by_status()
    }
    fn ping(&self) -> StoreFuture<()> {
        match self.failures_left.load(Ordering::SeqCst) {
            0 => self.inner.ping(),
            _ => outage(),
        }
    }
    fn close(&self) -> BoxFuture<'static, ()> {
        self.inner.close()
    }
}

/// Runs every task until `release` gives a permit, then ends it `completed` with `{ran: id}`.
pub(super) struct Held(pub(super) Arc<Semaphore>);

impl TaskRunner for Held {
    fn run(&self, task: &Task, _control: TaskControl) -> BoxFuture<'static, Finished> {
        let (id, release) = (task.id.clone(), self.0.clone());
        Box::pin(async move {
            release.acquire().await.unwrap().forget();
            Finished { status: TaskStatus::Completed, message: None, outcome: Outcome::Result(json!({ "ran": id })) }
        })
    }
    fn may_rerun(&self, _tool: &str) -> BoxFuture<'static, bool> {
        Box::pin(std::future::ready(false))
    }
    fn outlives_host(&self, _owner: &str) -> bool {
        true
    }
}

pub(super) async fn start(failures: usize) -> (Engine, Arc<Flaky>, Arc<Semaphore>) {
    let settings = TaskSettings { max_running: 2, ..TaskSettings::default() };
    start_with(failures, settings, Runners::register(Path::new(":memory:")).unwrap()).await
}

pub(super) async fn start_with(failures: usize, settings: TaskSettings, runners: Runners) -> (Engine, Arc<Flaky>, Arc<Semaphore>) {
    let store = Flaky::new(failures);
    let release = Arc::new(Semaphore::new(0));
    let engine = Engine::start(store.clone(), runners, settings, Arc::new(Held(release.clone())), Arc::new(|| {}), CancellationToken::new()).await.unwrap();
    (engine, store, release)
}

/// Waits until `done` holds, up to a minute: on a loaded machine a write to a PostgreSQL server
/// that was just stopped can take a pool's wait and connect timeouts (15 s) before it fails.
async fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn an_end_the_store_failed_to_take_is_written_when_it_answers_again() {
    let (engine, store, release) = start(usize::MAX).await;
    let engine = Arc::new(engine);
    let task = engine.admit(call("alice", "slow")).await.unwrap();
    let waiter = {
        let (engine, id) = (engine.clone(), task.id.clone());
        tokio::spawn(async move { engine.result("alice", &id).await })
    };
    release.add_permits(1);
    eventually("the store refused the end twice (a retry)", || store.refused.load(Ordering::SeqCst) >= 2).await;
    // Not written yet: the store says `working`, and no waiter was told otherwise.
    assert_eq!(engine.get("alice", &task.id).await.unwrap().status, TaskStatus::Working);
    assert!(!waiter.is_finished(), "tasks/result waits for the end to be stored");
    assert_eq!(engine.pending_ends(), (1, 0));
    eventually("the worker is free for other tasks meanwhile", || engine.counts().running == 0).await;
    // The store comes back after two more failures.
    let refused = store.refused.load(Ordering::SeqCst);
    store.failures_left.store(2, Ordering::SeqCst);
    let (ended, outcome) = tokio::time::timeout(Duration::from_secs(30), waiter).await.expect("tasks/result answers").unwrap().unwrap();
    assert_eq!(ended.status, TaskStatus::Completed);
    assert_eq!(outcome, Outcome::Result(json!({ "ran": task.id })));
    assert!(store.refused.load(Ordering::SeqCst) >= refused + 2, "retried through the failures");
    assert_eq!(engine.get("alice", &task.id).await.unwrap().status, TaskStatus::Completed);
    assert_eq!(engine.pending_ends(), (0, 0));
    assert!(!engine.runs("alice", &task.id), "retired once written");
}

#[tokio::test]
async fn a_pending_end_never_replaces_a_cancel_the_store_took() {
    let (engine, store, release) = start(usize::MAX).await;
    let task = engine.admit(call("alice", "slow")).await.unwrap();
    release.add_permits(1);
    eventually("the store refused the end", || store.refused.load(Ordering::SeqCst) >= 1).await;
    assert!(engine.runs("alice", &task.id), "kept live while its end waits");
    let cancelled = engine.cancel("alice", &task.id).await.unwrap();
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    store.failures_left.store(0, Ordering::SeqCst);
    eventually("the pending end was dealt with", || engine.pending_ends().0 == 0).await;
    let (ended, outcome) = engine.result("alice", &task.id).await.unwrap();
    assert_eq!(ended.status, TaskStatus::Cancelled);
    assert_eq!(outcome, Outcome::Cancelled);
}

/// A PostgreSQL server of the test's own (it stops and starts it), or `None` (the test skips)
/// without one; a panic under `CORRAL_REQUIRE_POSTGRES` unless an external server was named.
fn private_server_or_skip() -> Option<Arc<super::postgres::testing::Server>> {
    match super::postgres::testing::private_server() {
        Ok(server) => Some(Arc::new(server)),
        Err(why) => {
            let external = std::env::var_os("CORRAL_TEST_POSTGRES").is_some();
            assert!(external || std::env::var_os("CORRAL_REQUIRE_POSTGRES").is_none(), "{}", super::postgres::testing::skip_notice(&why));
            eprintln!("{}", super::postgres::testing::skip_notice(&why));
            None
        }
    }
}

/// PostgreSQL stopped as a task ends and started again 4 s later: the task ends `completed`
/// with its result, written once the server is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_task_that_ends_while_the_server_is_down_is_completed_once_it_is_back() {
    let Some(server) = private_server_or_skip() else { return };
    let url = server.database().unwrap();
    let runners = Runners::shared();
    let store = Arc::new(PgStore::open(PgOptions::new(&url, runners.id())).await.unwrap());
    let release = Arc::new(Semaphore::new(0));
    let engine =
        Engine::start(store, runners, TaskSettings::default(), Arc::new(Held(release.clone())), Arc::new(|| {}), CancellationToken::new()).await.unwrap();
    let task = engine.admit(call("alice", "slow")).await.unwrap();
    eventually("the task runs", || engine.counts().running == 1).await;

    let stopping = server.clone();
    tokio::task::spawn_blocking(move || stopping.stop()).await.unwrap();
    release.add_permits(1);
    eventually("its end waits for the server", || engine.pending_ends().0 == 1).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    let starting = server.clone();
    tokio::task::spawn_blocking(move || starting.restart()).await.unwrap();

    let (ended, outcome) = tokio::time::timeout(Duration::from_secs(60), engine.result("alice", &task.id)).await.expect("tasks/result answers").unwrap();
    assert_eq!(ended.status, TaskStatus::Completed);
    assert_eq!(outcome, Outcome::Result(json!({ "ran": task.id })));
    assert_eq!(engine.pending_ends(), (0, 0));
    assert_eq!(super::postgres::testing::psql(&url, &format!("SELECT status FROM corral_tasks WHERE id = '{}'", task.id)).unwrap(), "completed");
    engine.shutdown().await;
}

#[tokio::test]
async fn a_pending_end_writes_nothing_once_another_host_holds_the_task() {
    let (engine, store, release) = start(usize::MAX).await;
    let task = engine.admit(call("alice", "slow")).await.unwrap();
    release.add_permits(1);
    eventually("the store refused the end", || store.refused.load(Ordering::SeqCst) >= 1).await;
    // Meanwhile another host claimed it (this one was taken for dead).
    let me = engine.inner.runners.id().to_owned();
    assert!(store.inner.claim(&task.id, &me, "another-host").await.unwrap().is_some());
    store.failures_left.store(0, Ordering::SeqCst);
    eventually("the pending end was dealt with", || engine.pending_ends().0 == 0).await;
    let now = engine.get("alice", &task.id).await.unwrap();
    assert_eq!((now.status, now.runner.as_str()), (TaskStatus::Working, "another-host"), "the fence kept the other host's task");
    assert!(!engine.runs("alice", &task.id));
}

#[tokio::test]
async fn an_adopted_call_that_ends_while_the_store_fails_is_written_when_it_answers() {
    let (engine, store, _) = start(2).await;
    let cancel = crate::cancel::CancelHandle::new(Arc::new(|| {}));
    let run: LocalRun = Box::new(|task: &Task, _control: TaskControl| {
        let id = task.id.clone();
        Box::pin(async move { Finished { status: TaskStatus::Completed, message: None, outcome: Outcome::Result(json!({ "adopted": id })) } })
    });
    let task = engine.admit(Admission { launch: Launch::Running { cancel, run }, ..call("alice", "slow") }).await.unwrap();
    let (ended, outcome) = tokio::time::timeout(Duration::from_secs(30), engine.result("alice", &task.id)).await.expect("tasks/result answers").unwrap();
    assert_eq!((ended.status, outcome), (TaskStatus::Completed, Outcome::Result(json!({ "adopted": task.id }))));
    assert_eq!(store.refused.load(Ordering::SeqCst), 2, "stored after two failures");
    assert_eq!(engine.counts().running, 0);
}

#[tokio::test]
async fn a_host_that_cannot_reach_its_store_is_not_ready_and_claims_nothing_until_it_can() {
    let (engine, store, release) = start(usize::MAX).await;
    let problem = engine.store_reachable().await.unwrap_err();
    assert_eq!(problem, "the task store does not answer", "the store's own words stay in the log");
    assert!(!engine.inner.may_claim(), "a failed ping stops claiming");

    let task = engine.admit(call("alice", "slow")).await.unwrap();
    release.add_permits(1);
    eventually("the store refused the end", || store.refused.load(Ordering::SeqCst) >= 1).await;
    let problem = engine.store_reachable().await.unwrap_err();
    assert!(problem.contains("1 task ends wait"), "{problem}");
    assert!(!engine.inner.may_claim(), "a pending end stops claiming");

    store.failures_left.store(0, Ordering::SeqCst);
    eventually("the end written", || engine.pending_ends().0 == 0).await;
    // The failed ping's answer stands for a second; then a new one finds the store.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while engine.store_reachable().await.is_err() {
        assert!(tokio::time::Instant::now() < deadline, "the store never counted as reachable again");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(engine.inner.may_claim());
    assert_eq!(engine.get("alice", &task.id).await.unwrap().status, TaskStatus::Completed);
}

#[tokio::test]
async fn a_start_the_store_failed_to_take_is_retried_until_it_answers() {
    let (engine, store, release) = start(0).await;
    store.start_failures.store(3, Ordering::SeqCst);
    let task = engine.admit(call("alice", "slow")).await.unwrap();
    release.add_permits(1);
    let (ended, outcome) = tokio::time::timeout(Duration::from_secs(30), engine.result("alice", &task.id)).await.expect("tasks/result answers").unwrap();
    assert_eq!((ended.status, outcome), (TaskStatus::Completed, Outcome::Result(json!({ "ran": task.id }))));
    assert_eq!(store.start_failures.load(Ordering::SeqCst), 0, "tried through the three failures");
    assert_eq!(ended.attempts, 1, "started once");
}

#[tokio::test]
async fn a_task_cancelled_while_its_start_waits_for_the_store_never_runs() {
    let (engine, store, release) = start(0).await;
    store.start_failures.store(usize::MAX, Ordering::SeqCst);
    let task = engine.admit(call("alice", "slow")).await.unwrap();
    eventually("the worker tries to start it", || engine.counts().running == 1).await;
    assert_eq!(engine.cancel("alice", &task.id).await.unwrap().status, TaskStatus::Cancelled);
    eventually("the worker lets it go", || engine.counts().running == 0).await;
    store.start_failures.store(0, Ordering::SeqCst);
    release.add_permits(1);
    assert_eq!(engine.result("alice", &task.id).await.unwrap().1, Outcome::Cancelled);
    assert_eq!(release.available_permits(), 1, "it never ran");
}

#[tokio::test]
async fn at_shutdown_pending_ends_are_written_once_the_store_answers_within_the_grace() {
    let settings = TaskSettings { max_running: 2, shutdown_grace: Duration::from_secs(60), ..TaskSettings::default() };
    let (engine, store, release) = start_with(usize::MAX, settings, Runners::register(Path::new(":memory:")).unwrap()).await;
    let task = engine.admit(call("alice", "slow")).await.unwrap();
    release.add_permits(1);
    eventually("its end waits for the store", || engine.pending_ends().0 == 1).await;
    let engine = Arc::new(engine);
    let stopping = tokio::spawn({
        let engine = engine.clone();
        async move { engine.shutdown().await }
    });
    let refused = store.refused.load(Ordering::SeqCst);
    eventually("shutdown keeps trying", || store.refused.load(Ordering::SeqCst) >= refused + 2).await;
    assert!(!stopping.is_finished(), "shutdown waits for the end to be stored");
    store.failures_left.store(0, Ordering::SeqCst);
    tokio::time::timeout(Duration::from_secs(30), stopping).await.expect("shutdown returns once the end is stored").unwrap();
    assert_eq!(engine.pending_ends(), (0, 0));
    assert_eq!(*store.ends.lock().unwrap(), [(task.id.clone(), TaskStatus::Completed)], "stored before the store closed");
}

#[tokio::test]
async fn at_shutdown_the_grace_bounds_the_wait_for_a_store_that_never_answers() {
    let settings = TaskSettings { max_running: 2, shutdown_grace: Duration::from_millis(300), ..TaskSettings::default() };
    let (engine, _store, release) = start_with(usize::MAX, settings, Runners::register(Path::new(":memory:")).unwrap()).await;
    engine.admit(call("alice", "slow")).await.unwrap();
    release.add_permits(1);
    eventually("its end waits for the store", || engine.pending_ends().0 == 1).await;
    let began = tokio::time::Instant::now();
    tokio::time::timeout(Duration::from_secs(20), engine.shutdown()).await.expect("shutdown gives up after the grace");
    assert!(began.elapsed() >= Duration::from_millis(300), "it tried for the whole grace: {:?}", began.elapsed());
    assert_eq!(engine.pending_ends().0, 1, "left for recovery");
}

#[tokio::test]
async fn a_replica_back_from_an_outage_claims_nothing_for_a_host_expiry() {
    // Replicas sharing a store by heartbeat: each looks for orphans four times per expiry.
    let expiry = Duration::from_secs(2);
    let settings = TaskSettings { max_running: 2, host_expiry: expiry, ..TaskSettings::default() };
    let (engine, store, _) = start_with(0, settings, Runners::shared()).await;
    eventually("it looks for orphans", || store.claims.load(Ordering::SeqCst) >= 2).await;

    store.failures_left.store(usize::MAX, Ordering::SeqCst);
    eventually("it saw the store fail", || !engine.inner.may_claim()).await;
    let during = store.claims.load(Ordering::SeqCst);
    tokio::time::sleep(expiry).await;
    assert_eq!(store.claims.load(Ordering::SeqCst), during, "nothing claimed while the store fails");

    store.failures_left.store(0, Ordering::SeqCst);
    let back = tokio::time::Instant::now();
    eventually("it looks for orphans again", || store.claims.load(Ordering::SeqCst) > during).await;
    assert!(back.elapsed() >= expiry, "claimed {:?} after the store came back, within the host expiry ({expiry:?})", back.elapsed());
}

/// Counts the runs of each task; each runs until `release` gives a permit, then completes.
struct Counted {
    release: Arc<Semaphore>,
    runs: Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
}

impl TaskRunner for Counted {
    fn run(&self, task: &Task, _control: TaskControl) -> BoxFuture<'static, Finished> {
        *self.runs.lock().unwrap().entry(task.id.clone()).or_default() += 1;
        let (id, release) = (task.id.clone(), self.release.clone());
        Box::pin(async move {
            release.acquire().await.unwrap().forget();
            Finished { status: TaskStatus::Completed, message: None, outcome: Outcome::Result(json!({ "ran": id })) }
        })
    }
    fn may_rerun(&self, _tool: &str) -> BoxFuture<'static, bool> {
        Box::pin(std::future::ready(false))
    }
    fn outlives_host(&self, _owner: &str) -> bool {
        true
    }
}

/// Three replicas on one PostgreSQL, which stops for longer than the host expiry while every
/// replica runs tasks: half of them end during the outage, half run on well past the moment
/// the server is back. Every replica's heartbeat lapsed, yet none takes another for dead:
/// each task ran once and ends `completed`, none `failed` as interrupted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_three_replicas_back_from_an_outage_longer_than_the_host_expiry_complete_every_task_once() {
    let Some(server) = private_server_or_skip() else { return };
    let url = server.database().unwrap();
    let expiry = Duration::from_secs(3);
    let settings = TaskSettings { max_running: 4, host_expiry: expiry, ..TaskSettings::default() };
    let runner = Arc::new(Counted { release: Arc::new(Semaphore::new(0)), runs: Arc::default() });
    let mut replicas = Vec::new();
    for _ in 0..3 {
        let runners = Runners::shared();
        let store = Arc::new(PgStore::open(PgOptions { host_expiry: expiry, ..PgOptions::new(&url, runners.id()) }).await.unwrap());
        replicas.push(Engine::start(store, runners, settings.clone(), runner.clone(), Arc::new(|| {}), CancellationToken::new()).await.unwrap());
    }
    let mut tasks = Vec::new();
    for (n, replica) in replicas.iter().enumerate() {
        for _ in 0..4 {
            tasks.push((n, replica.admit(call("alice", "slow")).await.unwrap().id));
        }
    }
    eventually("every task runs", || runner.runs.lock().unwrap().len() == tasks.len()).await;

    let stopping = server.clone();
    tokio::task::spawn_blocking(move || stopping.stop()).await.unwrap();
    runner.release.add_permits(tasks.len() / 2);
    eventually("the ends of half of them wait for the server", || replicas.iter().map(|r| r.pending_ends().0).sum::<usize>() == tasks.len() / 2).await;
    // Down for well over the host expiry: every heartbeat lapses.
    tokio::time::sleep(expiry * 3).await;
    let starting = server.clone();
    tokio::task::spawn_blocking(move || starting.restart()).await.unwrap();
    // The other half run on through the time a replica would take the others for dead.
    tokio::time::sleep(expiry * 2).await;
    runner.release.add_permits(tasks.len() - tasks.len() / 2);

    for (n, id) in &tasks {
        let (ended, outcome) = tokio::time::timeout(Duration::from_secs(60), replicas[*n].result("alice", id)).await.expect("tasks/result answers").unwrap();
        assert_eq!((ended.status, ended.status_message.as_deref(), outcome), (TaskStatus::Completed, None, Outcome::Result(json!({ "ran": id }))), "task {id}");
    }
    let runs = runner.runs.lock().unwrap().clone();
    assert!(runs.values().all(|&n| n == 1), "every task ran once: {runs:?}");
    let psql = |sql: &str| super::postgres::testing::psql(&url, sql).unwrap();
    assert_eq!(psql("SELECT count(*) FROM corral_tasks WHERE status = 'completed'"), tasks.len().to_string());
    for replica in &replicas {
        replica.shutdown().await;
    }
}
