//! The engine in-process, on SQLite, with a fake runner: caps, cancellation, recovery,
//! idempotency keys, the input-required bracket and shutdown.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::json;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::*;

/// A runner whose tools say what they do: `quick` ends at once; anything else (when `hold`)
/// waits for a permit from `release` or for cancellation, then ends `completed` all the same
/// (a late result, which must not overwrite `cancelled`). `ask` brackets the wait with
/// `input_required`; `progress` reports a message first; `report` publishes a burst of progress
/// (for a requestor on another replica). Tools ending in `idem` may run again;
/// owners named `session:…` end with their host.
struct Fake {
    hold: bool,
    release: Arc<Semaphore>,
    started: Mutex<Vec<String>>,
    saw_cancel: Arc<Mutex<Vec<String>>>,
    ended: Arc<AtomicUsize>,
}

impl Fake {
    fn new(hold: bool) -> Arc<Fake> {
        Arc::new(Fake { hold, release: Arc::new(Semaphore::new(0)), started: Mutex::default(), saw_cancel: Arc::default(), ended: Arc::default() })
    }

    fn started(&self) -> Vec<String> {
        self.started.lock().unwrap().clone()
    }
}

impl TaskRunner for Fake {
    fn run(&self, task: &Task, control: TaskControl) -> BoxFuture<'static, Finished> {
        self.started.lock().unwrap().push(task.id.clone());
        let (tool, id, hold) = (task.tool.clone(), task.id.clone(), self.hold && task.tool != "quick");
        let (release, saw_cancel, ended) = (self.release.clone(), self.saw_cancel.clone(), self.ended.clone());
        Box::pin(async move {
            if tool == "ask" {
                assert!(control.set_input_required("waiting for the user".into()).await);
            }
            if tool == "progress" {
                control.set_message("half way".into());
            }
            if tool == "report" {
                // A chatty guest, then one report whose message no notification could carry.
                for n in 1..=200 {
                    control.publish_progress(Progress { progress: n as f64, total: Some(300.0), message: Some(format!("step {n}")) });
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
                control.publish_progress(Progress { progress: 300.0, total: Some(300.0), message: Some("x".repeat(10_000)) });
            }
            if hold {
                tokio::select! {
                    _ = control.cancel().cancelled() => saw_cancel.lock().unwrap().push(id.clone()),
                    permit = release.acquire() => permit.unwrap().forget(),
                }
            }
            if tool == "ask" {
                control.set_working().await;
            }
            ended.fetch_add(1, Ordering::SeqCst);
            Finished { status: TaskStatus::Completed, message: None, outcome: Outcome::Result(json!({ "ran": id })) }
        })
    }

    fn may_rerun(&self, tool: &str) -> BoxFuture<'static, bool> {
        Box::pin(std::future::ready(tool.ends_with("idem")))
    }

    fn outlives_host(&self, owner: &str) -> bool {
        !owner.starts_with("session:")
    }
}

/// Every status announced, by task, and every progress report relayed (with its token).
#[derive(Default)]
struct Seen(Mutex<HashMap<String, Vec<TaskStatus>>>, Mutex<Vec<(serde_json::Value, Progress)>>);

impl TaskEvents for Seen {
    fn status_changed(&self, task: &Task) {
        self.0.lock().unwrap().entry(task.id.clone()).or_default().push(task.status);
    }

    fn progress(&self, token: &serde_json::Value, progress: &Progress) {
        self.1.lock().unwrap().push((token.clone(), progress.clone()));
    }
}

impl Seen {
    fn of(&self, id: &str) -> Vec<TaskStatus> {
        self.0.lock().unwrap().get(id).cloned().unwrap_or_default()
    }
}

/// A queued call of `tool` for `owner` (also the outage tests' admission).
pub(super) fn call(owner: &str, tool: &str) -> Admission {
    Admission {
        owner: owner.into(),
        tool: tool.into(),
        plugin: None,
        arguments: json!({}),
        requested_ttl_ms: None,
        progress_token: None,
        idempotency_key: None,
        launch: Launch::Queue,
        events: None,
        client_capabilities: None,
        owner_cap: None,
        trace_context: None,
    }
}

/// A call that already runs until its `cancel` fires or `release` gives a permit, adopted as a
/// task: the admission, and a counter of the runs that saw the cancel.
fn adopted(owner: &str, cancel: &crate::cancel::CancelHandle, release: Arc<Semaphore>) -> (Admission, Arc<AtomicUsize>) {
    let saw_cancel = Arc::new(AtomicUsize::new(0));
    let (seen, cancel_seen) = (saw_cancel.clone(), cancel.clone());
    let run: LocalRun = Box::new(move |task: &Task, _control: TaskControl| {
        let id = task.id.clone();
        Box::pin(async move {
            tokio::select! {
                _ = cancel_seen.cancelled() => {
                    seen.fetch_add(1, Ordering::SeqCst);
                    Finished { status: TaskStatus::Failed, message: Some("tool was cancelled".into()), outcome: Outcome::Result(json!({ "stopped": id })) }
                }
                permit = release.acquire() => {
                    permit.unwrap().forget();
                    Finished { status: TaskStatus::Completed, message: None, outcome: Outcome::Result(json!({ "ran": id })) }
                }
            }
        })
    });
    (Admission { launch: Launch::Running { cancel: cancel.clone(), run }, ..call(owner, "adopted") }, saw_cancel)
}

fn settings(max_running: usize, max_queued: usize, max_per_owner: usize) -> TaskSettings {
    TaskSettings { max_running, max_queued, max_per_owner, ..TaskSettings::default() }
}

async fn start_on(db: &Path, settings: TaskSettings, runner: Arc<Fake>, wakes: Arc<AtomicUsize>) -> Engine {
    let store = Arc::new(SqliteStore::open(db, Durability::Process).unwrap());
    let wake = Arc::new(move || {
        wakes.fetch_add(1, Ordering::SeqCst);
    });
    Engine::start(store, Runners::register(db).unwrap(), settings, runner, wake, CancellationToken::new()).await.unwrap()
}

async fn start(settings: TaskSettings, runner: Arc<Fake>) -> Engine {
    start_on(Path::new(":memory:"), settings, runner, Arc::default()).await
}

/// Waits (up to five seconds) until `done` holds.
async fn eventually(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

async fn stored(engine: &Engine) -> u64 {
    engine.count_by_status().await.unwrap().iter().map(|(_, n)| n).sum()
}

#[tokio::test]
async fn the_queue_cap_refuses_as_overloaded_and_creates_nothing() {
    let fake = Fake::new(true);
    let engine = start(settings(1, 2, 100), fake.clone()).await;
    engine.admit(call("o", "hold")).await.unwrap();
    eventually("the first task runs", || fake.started().len() == 1).await;
    engine.admit(call("o", "hold")).await.unwrap();
    engine.admit(call("o", "hold")).await.unwrap();
    assert_eq!(engine.counts().queued, 2);
    let refused = engine.admit(call("o", "hold")).await.unwrap_err();
    assert!(matches!(refused, EngineError::Overloaded { queued: 2, limit: 2 }), "{refused:?}");
    assert_eq!(refused.to_string(), "the host is overloaded: 2 tasks are waiting (limit 2); try again later");
    assert_eq!(stored(&engine).await, 3, "the refused task was not stored");
    assert_eq!(engine.counts().queued, 2, "nor did it keep a queue slot");
    fake.release.add_permits(3);
    eventually("all three ran", || fake.ended.load(Ordering::SeqCst) == 3).await;
    engine.admit(call("o", "hold")).await.expect("room again once the queue drained");
}

/// Issue 17, finding 6: a refusal must not wait behind the store, whatever the store is doing
/// (a burst of commits). The caps are checked in memory first, so an overload refusal is
/// ready at the admission's first poll: it never reaches the store at all.
#[tokio::test]
async fn an_overload_refusal_is_ready_at_its_first_poll_without_the_store() {
    use futures_util::FutureExt;
    let fake = Fake::new(true);
    let engine = start(settings(1, 1, 100), fake.clone()).await;
    engine.admit(call("o", "hold")).await.unwrap();
    eventually("the first task runs", || fake.started().len() == 1).await;
    engine.admit(call("o", "hold")).await.unwrap();
    for owner in ["o", "p"] {
        let refused = engine.admit(call(owner, "hold")).now_or_never().expect("refused at the first poll, before any store call");
        assert!(matches!(refused, Err(EngineError::Overloaded { queued: 1, limit: 1 })), "{refused:?}");
    }
    let per_owner = start(settings(1, 100, 1), Fake::new(true)).await;
    per_owner.admit(call("o", "hold")).await.unwrap();
    let refused = per_owner.admit(call("o", "hold")).now_or_never().expect("the per-client cap refuses at the first poll too");
    assert!(matches!(refused, Err(EngineError::OwnerLimit { active: 1, limit: 1 })), "{refused:?}");
    fake.release.add_permits(2);
}

#[tokio::test]
async fn an_owners_own_cap_refuses_below_the_hosts_and_never_raises_it() {
    let fake = Fake::new(true);
    let engine = start(settings(4, 100, 3), fake.clone()).await;
    let capped = |cap| Admission { owner_cap: Some(cap), ..call("alice", "hold") };
    engine.admit(capped(1)).await.unwrap();
    let refused = engine.admit(capped(1)).await.unwrap_err();
    assert!(matches!(refused, EngineError::OwnerLimit { active: 1, limit: 1 }), "{refused:?}");
    engine.admit(capped(10)).await.unwrap();
    engine.admit(capped(10)).await.unwrap();
    let refused = engine.admit(capped(10)).await.unwrap_err();
    assert!(matches!(refused, EngineError::OwnerLimit { active: 3, limit: 3 }), "the host's cap still holds: {refused:?}");
    assert_eq!(stored(&engine).await, 3);
    fake.release.add_permits(3);
}

#[tokio::test]
async fn the_per_client_cap_refuses_and_frees_a_slot_when_a_task_ends() {
    let fake = Fake::new(true);
    let engine = start(settings(4, 100, 2), fake.clone()).await;
    let first = engine.admit(call("alice", "hold")).await.unwrap();
    engine.admit(call("alice", "hold")).await.unwrap();
    let refused = engine.admit(call("alice", "hold")).await.unwrap_err();
    assert!(matches!(refused, EngineError::OwnerLimit { active: 2, limit: 2 }), "{refused:?}");
    assert_eq!(refused.to_string(), "too many unfinished tasks: you have 2 (limit 2); wait for some to end or cancel them");
    engine.admit(call("bob", "hold")).await.expect("another client has its own cap");
    assert_eq!(stored(&engine).await, 3, "nothing half-created");
    engine.cancel("alice", &first.id).await.unwrap();
    engine.admit(call("alice", "hold")).await.expect("a cancelled task frees its slot");
}

#[tokio::test]
async fn a_task_cancelled_while_queued_never_runs() {
    let fake = Fake::new(true);
    let engine = start(settings(1, 10, 10), fake.clone()).await;
    let running = engine.admit(call("o", "hold")).await.unwrap();
    eventually("the first task runs", || fake.started().len() == 1).await;
    let queued = engine.admit(call("o", "hold")).await.unwrap();
    let cancelled = engine.cancel("o", &queued.id).await.unwrap();
    assert_eq!((cancelled.status, cancelled.status_message.as_deref()), (TaskStatus::Cancelled, Some("cancelled by the client")));
    fake.release.add_permits(1);
    engine.result("o", &running.id).await.unwrap();
    eventually("the queue drained", || engine.counts().queued + engine.counts().running == 0).await;
    assert_eq!(fake.started(), [running.id.as_str()], "the cancelled task never ran");
    assert_eq!(engine.result("o", &queued.id).await.unwrap().1, Outcome::Cancelled);
    let again = engine.cancel("o", &queued.id).await.unwrap_err();
    assert_eq!(again.to_string(), "task is already cancelled");
}

#[tokio::test]
async fn a_running_task_is_told_and_stays_cancelled_despite_a_late_result() {
    let fake = Fake::new(true);
    let wakes = Arc::new(AtomicUsize::new(0));
    let engine = start_on(Path::new(":memory:"), settings(2, 10, 10), fake.clone(), wakes.clone()).await;
    let seen = Arc::new(Seen::default());
    let task = engine.admit(Admission { events: Some(seen.clone()), ..call("o", "hold") }).await.unwrap();
    eventually("the task runs", || fake.started().len() == 1).await;
    let cancelled = engine.cancel("o", &task.id).await.unwrap();
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    assert_eq!(wakes.load(Ordering::SeqCst), 1, "cancel woke the work");
    eventually("the runner returned its late result", || fake.ended.load(Ordering::SeqCst) == 1).await;
    assert_eq!(*fake.saw_cancel.lock().unwrap(), [task.id.as_str()], "the runner saw its handle cancelled");
    eventually("the worker is free", || engine.counts().running == 0).await;
    let (ended, outcome) = engine.result("o", &task.id).await.unwrap();
    assert_eq!((ended.status, outcome), (TaskStatus::Cancelled, Outcome::Cancelled), "the late result did not overwrite it");
    assert_eq!(seen.of(&task.id), [TaskStatus::Cancelled], "announced once, as cancelled");
}

#[tokio::test]
async fn recovery_reruns_idempotent_tasks_and_fails_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tasks.db");
    let first = Fake::new(true);
    let dead = start_on(&db, settings(4, 10, 10), first.clone(), Arc::default()).await;
    let again = dead.admit(call("o", "hold-idem")).await.unwrap();
    let lost = dead.admit(call("o", "hold")).await.unwrap();
    eventually("both run", || first.started().len() == 2).await;
    // The host goes away mid-run: its tasks stay `working`, its runner lock goes.
    dead.shutdown().await;
    drop(dead);

    let second = Fake::new(false);
    let engine = start_on(&db, settings(4, 10, 10), second.clone(), Arc::default()).await;
    let (rerun, outcome) = engine.result("o", &again.id).await.unwrap();
    assert_eq!((rerun.status, outcome), (TaskStatus::Completed, Outcome::Result(json!({ "ran": again.id }))));
    assert_ne!(rerun.runner, again.runner, "claimed by the new host");
    let (failed, outcome) = engine.result("o", &lost.id).await.unwrap();
    assert_eq!((failed.status, failed.status_message.as_deref()), (TaskStatus::Failed, Some("interrupted by a host restart before it finished")));
    assert_eq!(outcome, Outcome::Interrupted);
    assert_eq!(second.started(), [again.id.as_str()], "only the idempotent task ran again");
}

#[tokio::test]
async fn recovery_runs_a_task_that_was_only_admitted_whatever_its_tool() {
    // Issue 17, finding 3: a task still in the queue when its host died never ran, so running
    // it is safe even for a tool that may not run twice.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tasks.db");
    let first = Fake::new(true);
    let dead = start_on(&db, settings(1, 10, 10), first.clone(), Arc::default()).await;
    let running = dead.admit(call("o", "hold")).await.unwrap();
    eventually("the first runs", || first.started().len() == 1).await;
    let queued = dead.admit(call("o", "hold")).await.unwrap();
    dead.shutdown().await;
    drop(dead);
    assert_eq!(first.started(), [running.id.as_str()], "the second never left the queue");

    let second = Fake::new(false);
    let engine = start_on(&db, settings(1, 10, 10), second.clone(), Arc::default()).await;
    let (ran, outcome) = engine.result("o", &queued.id).await.unwrap();
    assert_eq!((ran.status, outcome), (TaskStatus::Completed, Outcome::Result(json!({ "ran": queued.id }))), "the admitted task ran");
    let (failed, outcome) = engine.result("o", &running.id).await.unwrap();
    assert_eq!((failed.status, outcome), (TaskStatus::Failed, Outcome::Interrupted), "the started one is interrupted");
    assert_eq!(second.started(), [queued.id.as_str()]);
}

#[tokio::test]
async fn recovery_cancels_the_tasks_of_an_owner_that_ended_with_its_host() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("tasks.db");
    let first = Fake::new(true);
    let dead = start_on(&db, settings(1, 10, 10), first.clone(), Arc::default()).await;
    let admitted = admit_for_a_session_and_a_token(&dead, &first).await;
    dead.shutdown().await;
    drop(dead);

    let second = Fake::new(false);
    let heir = start_on(&db, settings(1, 10, 10), second.clone(), Arc::default()).await;
    assert_only_the_tokens_task_was_recovered(&heir, &second, admitted).await;
}

/// Admits on `engine` (one worker, held by `runner`) a started idempotent task and a queued one
/// for session `a`, and an idempotent one for token `b`: [started, queued, token's].
async fn admit_for_a_session_and_a_token(engine: &Engine, runner: &Fake) -> [Task; 3] {
    let started = engine.admit(call("session:a", "hold-idem")).await.unwrap();
    eventually("it runs", || runner.started().len() == 1).await;
    let queued = engine.admit(call("session:a", "hold")).await.unwrap();
    let kept = engine.admit(call("token:b", "hold-idem")).await.unwrap();
    [started, queued, kept]
}

/// Issue 17, finding 8: a session's tasks could only be reached through it, and it was in the
/// dead host's memory, so running them again (idempotent, or never started) is for nobody: the
/// heir cancels them, saying why, and recovers the token holder's task as before.
async fn assert_only_the_tokens_task_was_recovered(heir: &Engine, runner: &Fake, [started, queued, kept]: [Task; 3]) {
    for task in [&started, &queued] {
        let (ended, outcome) = heir.result("session:a", &task.id).await.unwrap();
        assert_eq!(ended.status_message.as_deref(), Some("cancelled: its session ended with the host that held it"));
        assert_eq!((ended.status, outcome), (TaskStatus::Cancelled, Outcome::Cancelled));
    }
    let (ran, outcome) = heir.result("token:b", &kept.id).await.unwrap();
    assert_eq!((ran.status, outcome), (TaskStatus::Completed, Outcome::Result(json!({ "ran": kept.id }))), "a token's task is recovered");
    assert_eq!(runner.started(), [kept.id.as_str()], "nothing of the session ran again");
}

#[tokio::test]
async fn an_idempotency_key_names_one_task_until_it_expires() {
    let fake = Fake::new(false);
    let engine = start(settings(2, 10, 10), fake.clone()).await;
    let keyed = |key: &str, ttl: i64| Admission { idempotency_key: Some(key.into()), requested_ttl_ms: Some(ttl), ..call("o", "quick") };
    let kept = engine.admit(keyed("kept", 60_000)).await.unwrap();
    assert_eq!(engine.admit(keyed("kept", 60_000)).await.unwrap().id, kept.id, "the same key names the same task");
    let other = engine.admit(Admission { owner: "p".into(), ..keyed("kept", 60_000) }).await.unwrap();
    assert_ne!(other.id, kept.id, "keys are per owner");

    let short = engine.admit(keyed("short", 1)).await.unwrap();
    engine.result("o", &short.id).await.ok();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let fresh = engine.admit(keyed("short", 60_000)).await.unwrap();
    assert_ne!(fresh.id, short.id, "an expired key names a new task");
    assert!(matches!(engine.get("o", &short.id).await, Err(EngineError::NotFound)), "the expired task is gone");
    assert_eq!(engine.get("o", &fresh.id).await.unwrap().idempotency_key.as_deref(), Some("short"));
}

#[tokio::test]
async fn ttls_are_clamped_to_the_settings() {
    let engine = start(TaskSettings { max_ttl: Duration::from_secs(60), ..settings(1, 10, 10) }, Fake::new(false)).await;
    let long = engine.admit(Admission { requested_ttl_ms: Some(10_000_000), ..call("o", "quick") }).await.unwrap();
    assert_eq!(long.ttl_ms, Some(60_000));
    let zero = engine.admit(Admission { requested_ttl_ms: Some(0), ..call("o", "quick") }).await.unwrap();
    assert_eq!(zero.ttl_ms, Some(1));
    let default = engine.admit(call("o", "quick")).await.unwrap();
    assert_eq!(default.ttl_ms, Some(60_000), "the default (an hour) is clamped too");
}

#[tokio::test]
async fn the_input_required_bracket_is_stored_and_announced() {
    let fake = Fake::new(true);
    let engine = start(settings(2, 10, 10), fake.clone()).await;
    let seen = Arc::new(Seen::default());
    let task = engine.admit(Admission { events: Some(seen.clone()), ..call("o", "ask") }).await.unwrap();
    eventually("the task asks", || seen.of(&task.id) == [TaskStatus::InputRequired]).await;
    let waiting = engine.get("o", &task.id).await.unwrap();
    assert_eq!((waiting.status, waiting.status_message.as_deref()), (TaskStatus::InputRequired, Some("waiting for the user")));
    fake.release.add_permits(1);
    let (ended, _) = engine.result("o", &task.id).await.unwrap();
    assert_eq!(ended.status, TaskStatus::Completed);
    assert_eq!(seen.of(&task.id), [TaskStatus::InputRequired, TaskStatus::Working, TaskStatus::Completed]);
}

#[tokio::test]
async fn a_progress_message_shows_while_the_task_works() {
    let fake = Fake::new(true);
    let engine = start(settings(2, 10, 10), fake.clone()).await;
    let task = engine.admit(call("o", "progress")).await.unwrap();
    eventually("the task runs", || fake.started().len() == 1).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let now = engine.get("o", &task.id).await.unwrap();
        if now.status_message.as_deref() == Some("half way") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the message never showed: {now:?}");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    assert_eq!(engine.list("o", 0, 10).await.unwrap()[0].status_message.as_deref(), Some("half way"));
    fake.release.add_permits(1);
    assert_eq!(engine.result("o", &task.id).await.unwrap().0.status_message, None, "an ended task shows its stored message");
}

#[tokio::test]
async fn shutdown_stops_the_workers_and_closes_the_store() {
    let fake = Fake::new(true);
    let token = CancellationToken::new();
    let store = Arc::new(SqliteStore::open(Path::new(":memory:"), Durability::Process).unwrap());
    let engine = Engine::start(store, Runners::register(Path::new(":memory:")).unwrap(), settings(2, 10, 10), fake.clone(), Arc::new(|| {}), token.clone())
        .await
        .unwrap();
    engine.admit(call("o", "hold")).await.unwrap();
    eventually("the task runs", || fake.started().len() == 1).await;
    token.cancel();
    tokio::time::timeout(Duration::from_secs(5), engine.shutdown()).await.expect("shutdown finishes");
    assert_eq!(engine.counts().running, 0, "the running task was dropped");
    assert_eq!(fake.ended.load(Ordering::SeqCst), 0, "and did not end");
    assert!(matches!(engine.admit(call("o", "hold")).await, Err(EngineError::ShuttingDown)));
    assert!(matches!(engine.count_by_status().await, Err(EngineError::Store(StoreError::Closed))));
}

#[tokio::test]
async fn an_admission_whose_caller_stops_waiting_still_queues_its_task() {
    let fake = Fake::new(false);
    let attempts = 40;
    let engine = start(settings(2, attempts, attempts), fake.clone()).await;
    // Each caller gives up after one poll (its client went away). Admission runs in the caller's
    // poll, so a quick commit may finish inside it; the others are dropped mid-insert.
    let mut dropped = 0;
    for _ in 0..attempts {
        let mut admitting = Box::pin(engine.admit(call("o", "quick")));
        let polled = std::future::Future::poll(admitting.as_mut(), &mut std::task::Context::from_waker(std::task::Waker::noop()));
        dropped += usize::from(polled.is_pending());
        drop(admitting);
    }
    assert!(dropped > 0, "no admission was still waiting for its commit after one poll: nothing was tested");
    eventually("every stored task ran all the same", || fake.ended.load(Ordering::SeqCst) == attempts).await;
    let tasks = engine.list("o", 0, attempts + 1).await.unwrap();
    assert_eq!(tasks.len(), attempts, "each admission stored one task");
    eventually("their slots are back", || engine.counts().queued + engine.counts().running == 0).await;
    for task in &tasks {
        assert_eq!(engine.result("o", &task.id).await.unwrap().0.status, TaskStatus::Completed);
    }
}

/// An engine on PostgreSQL at `url`, as one replica among others.
async fn start_on_postgres(url: &str, settings: TaskSettings, runner: Arc<Fake>) -> Engine {
    let runners = Runners::shared();
    let options = PgOptions { host_expiry: settings.host_expiry, ..PgOptions::new(url, runners.id()) };
    let store = Arc::new(PgStore::open(options).await.unwrap());
    Engine::start(store, runners, settings, runner, Arc::new(|| {}), CancellationToken::new()).await.unwrap()
}

/// A database of its own, or `None` (the test skips) without a server; see
/// [`database_or_skip`](super::postgres::testing::database_or_skip).
fn postgres_database() -> Option<String> {
    super::postgres::testing::database_or_skip()
}

#[tokio::test]
async fn on_postgres_a_cancel_on_one_replica_stops_the_task_on_another_and_a_result_wakes_without_polling() {
    let Some(url) = postgres_database() else { return };
    // A minute between polls: only a notification can wake a waiter within the test's time.
    let slow_polls = TaskSettings { poll_interval: Duration::from_secs(60), ..settings(4, 10, 10) };
    let (on_a, on_b) = (Fake::new(true), Fake::new(true));
    let a = start_on_postgres(&url, slow_polls.clone(), on_a.clone()).await;
    let b = start_on_postgres(&url, slow_polls, on_b.clone()).await;

    let doomed = a.admit(call("o", "hold")).await.unwrap();
    eventually("it runs on a", || on_a.started() == [doomed.id.clone()]).await;
    let cancelled = b.cancel("o", &doomed.id).await.unwrap();
    assert_eq!(cancelled.status, TaskStatus::Cancelled);
    let saw = on_a.saw_cancel.clone();
    eventually("a's guest is told to stop", || saw.lock().unwrap().contains(&doomed.id)).await;
    eventually("a no longer runs it", || !a.runs("o", &doomed.id)).await;

    let task = a.admit(call("o", "hold")).await.unwrap();
    eventually("it runs on a", || on_a.started().len() == 2).await;
    let asked = tokio::time::Instant::now();
    let waiting = tokio::spawn({
        let id = task.id.clone();
        async move { b.result("o", &id).await.map(|(task, outcome)| (task.status, outcome)) }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    on_a.release.add_permits(1);
    let answer = tokio::time::timeout(Duration::from_secs(10), waiting).await.expect("the waiter on b woke").unwrap().unwrap();
    assert_eq!(answer, (TaskStatus::Completed, Outcome::Result(json!({ "ran": task.id }))));
    assert!(asked.elapsed() < Duration::from_secs(10));
    assert!(on_b.started().is_empty(), "b ran nothing");
}

#[tokio::test]
async fn on_postgres_recovery_runs_an_admitted_task_and_interrupts_a_started_one() {
    // Issue 17, finding 3, across replicas: `dead` stops beating; `heir` claims its tasks.
    let Some(url) = postgres_database() else { return };
    let quick_expiry = TaskSettings { host_expiry: Duration::from_millis(400), ..settings(1, 10, 10) };
    let first = Fake::new(true);
    let dead = start_on_postgres(&url, quick_expiry.clone(), first.clone()).await;
    let running = dead.admit(call("o", "hold")).await.unwrap();
    eventually("the first runs", || first.started().len() == 1).await;
    let queued = dead.admit(call("o", "hold")).await.unwrap();
    // Gone without a goodbye: its heartbeat stops and its host row stays until it expires.
    super::postgres::testing::psql(&url, "UPDATE corral_hosts SET heartbeat_at = now() + interval '1 hour'").unwrap();
    drop(dead);
    tokio::time::sleep(Duration::from_millis(100)).await;
    super::postgres::testing::psql(&url, "UPDATE corral_hosts SET heartbeat_at = now() - interval '1 hour'").unwrap();

    let second = Fake::new(false);
    let heir = start_on_postgres(&url, quick_expiry, second.clone()).await;
    let (ran, outcome) = heir.result("o", &queued.id).await.unwrap();
    assert_eq!((ran.status, outcome), (TaskStatus::Completed, Outcome::Result(json!({ "ran": queued.id }))), "the admitted task ran");
    let (failed, outcome) = heir.result("o", &running.id).await.unwrap();
    assert_eq!((failed.status, outcome), (TaskStatus::Failed, Outcome::Interrupted), "the started one is interrupted");
    assert_eq!(second.started(), [queued.id.as_str()]);
}

#[tokio::test]
async fn on_postgres_recovery_cancels_the_tasks_of_a_session_that_died_with_its_replica() {
    let Some(url) = postgres_database() else { return };
    let quick_expiry = TaskSettings { host_expiry: Duration::from_millis(400), ..settings(1, 10, 10) };
    let first = Fake::new(true);
    let dead = start_on_postgres(&url, quick_expiry.clone(), first.clone()).await;
    let admitted = admit_for_a_session_and_a_token(&dead, &first).await;
    // Gone without a goodbye, as in the test above.
    super::postgres::testing::psql(&url, "UPDATE corral_hosts SET heartbeat_at = now() + interval '1 hour'").unwrap();
    drop(dead);
    tokio::time::sleep(Duration::from_millis(100)).await;
    super::postgres::testing::psql(&url, "UPDATE corral_hosts SET heartbeat_at = now() - interval '1 hour'").unwrap();

    let second = Fake::new(false);
    let heir = start_on_postgres(&url, quick_expiry, second.clone()).await;
    assert_only_the_tokens_task_was_recovered(&heir, &second, admitted).await;
}

#[tokio::test]
async fn on_postgres_tasks_waiting_on_a_busy_replica_run_on_an_idle_one() {
    let Some(url) = postgres_database() else { return };
    // A minute of host expiry: the fallback look comes after 15 s, so within the test only
    // the insert notification can wake the idle replica.
    let slow = |workers| TaskSettings { host_expiry: Duration::from_secs(60), ..settings(workers, 10, 10) };
    let (on_a, on_b) = (Fake::new(true), Fake::new(true));
    let a = start_on_postgres(&url, slow(1), on_a.clone()).await;
    let _b = start_on_postgres(&url, slow(2), on_b.clone()).await;

    let busy = a.admit(call("o", "hold")).await.unwrap();
    eventually("a's only worker is busy", || on_a.started() == [busy.id.clone()]).await;
    let mut waiting = Vec::new();
    for _ in 0..3 {
        waiting.push(a.admit(call("o", "quick")).await.unwrap().id);
    }
    let mut on_b_ids = on_b.started();
    for id in &waiting {
        // Asked where they were admitted, while that replica's worker is still busy.
        let (task, outcome) = tokio::time::timeout(Duration::from_secs(10), a.result("o", id))
            .await
            .unwrap_or_else(|_| panic!("a's waiter woke; b ran {:?}", on_b.started()))
            .unwrap();
        assert_eq!((task.status, outcome), (TaskStatus::Completed, Outcome::Result(json!({ "ran": id }))));
        on_b_ids = on_b.started();
    }
    on_b_ids.sort();
    let mut expected = waiting.clone();
    expected.sort();
    assert_eq!(on_b_ids, expected, "every waiting task ran on the idle replica");

    on_a.release.add_permits(1);
    let (task, _) = a.result("o", &busy.id).await.unwrap();
    assert_eq!(task.status, TaskStatus::Completed);
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(on_a.started(), [busy.id.as_str()], "a skipped what b took");
    assert!(!waiting.iter().any(|id| a.runs("o", id)), "nothing left live on a");
}

#[tokio::test]
async fn on_postgres_a_replica_taken_for_dead_stops_its_stale_runs_and_writes_nothing() {
    let Some(url) = postgres_database() else { return };
    let psql = |sql: &str| super::postgres::testing::psql(&url, sql).unwrap();
    let quick_beats = TaskSettings { host_expiry: Duration::from_millis(600), ..settings(2, 10, 10) };
    let on_a = Fake::new(true);
    let a = start_on_postgres(&url, quick_beats, on_a.clone()).await;
    let task = a.admit(call("o", "hold")).await.unwrap();
    eventually("it runs on a", || on_a.started() == [task.id.clone()]).await;
    // What a live replica does to one it takes for dead (a paused VM, say): its host row is
    // swept and its task claimed, the fencing counter bumped. `heir` beats for an hour.
    psql(&format!(
        "INSERT INTO corral_hosts (id, heartbeat_at) VALUES ('heir', now() + interval '1 hour');
         DELETE FROM corral_hosts WHERE id = (SELECT runner FROM corral_tasks WHERE id = '{id}');
         UPDATE corral_tasks SET runner = 'heir', epoch = epoch + 1 WHERE id = '{id}'",
        id = task.id
    ));
    let saw = on_a.saw_cancel.clone();
    eventually("a's stale run is told to stop at a's next heartbeat", || saw.lock().unwrap().contains(&task.id)).await;
    eventually("a no longer runs it", || !a.runs("o", &task.id)).await;
    assert_eq!(psql(&format!("SELECT status || ' ' || runner FROM corral_tasks WHERE id = '{}'", task.id)), "working heir", "a wrote nothing");
    assert_eq!(psql("SELECT count(*) FROM corral_outcomes"), "0");
}

#[tokio::test]
async fn on_postgres_a_task_run_by_another_replica_reports_its_status_to_the_session_that_created_it() {
    let Some(url) = postgres_database() else { return };
    // A minute of host expiry: only notifications move things within the test.
    let slow = |workers| TaskSettings { host_expiry: Duration::from_secs(60), ..settings(workers, 10, 10) };
    let (on_a, on_b) = (Fake::new(true), Fake::new(true));
    let a = start_on_postgres(&url, slow(1), on_a.clone()).await;
    let _b = start_on_postgres(&url, slow(1), on_b.clone()).await;
    let busy = a.admit(call("o", "hold")).await.unwrap();
    eventually("a's only worker is busy", || on_a.started() == [busy.id.clone()]).await;
    // Admitted on a by a session that listens; b's idle worker takes it and asks for input.
    let seen = Arc::new(Seen::default());
    let moved = a.admit(Admission { events: Some(seen.clone()), ..call("o", "ask") }).await.unwrap();
    eventually("b runs it", || on_b.started() == [moved.id.clone()]).await;
    eventually("a's session hears input_required from b", || seen.of(&moved.id) == [TaskStatus::InputRequired]).await;
    on_b.release.add_permits(1);
    eventually("and its end", || seen.of(&moved.id).last() == Some(&TaskStatus::Completed)).await;
    assert!(on_a.started() == [busy.id.clone()], "a ran only its own");
    on_a.release.add_permits(1);
}

#[tokio::test]
async fn on_postgres_a_task_run_by_another_replica_reports_its_progress_to_the_session_that_created_it() {
    let Some(url) = postgres_database() else { return };
    let slow = |workers| TaskSettings { host_expiry: Duration::from_secs(60), ..settings(workers, 10, 10) };
    let (on_a, on_b) = (Fake::new(true), Fake::new(true));
    let a = start_on_postgres(&url, slow(1), on_a.clone()).await;
    let _b = start_on_postgres(&url, slow(1), on_b.clone()).await;
    let busy = a.admit(call("o", "hold")).await.unwrap();
    eventually("a's only worker is busy", || on_a.started() == [busy.id.clone()]).await;
    let seen = Arc::new(Seen::default());
    let moved = a.admit(Admission { events: Some(seen.clone()), progress_token: Some(json!("tok-7")), ..call("o", "report") }).await.unwrap();
    eventually("b runs it", || on_b.started() == [moved.id.clone()]).await;
    let reports = || seen.1.lock().unwrap().clone();
    eventually("a's session hears b's last report", || reports().last().is_some_and(|(_, p)| p.progress == 300.0)).await;
    let reports = reports();
    assert!(reports.iter().all(|(token, _)| token == &json!("tok-7")), "with the session's progress token");
    let last = &reports.last().unwrap().1;
    assert_eq!(last.message.as_deref(), Some("x".repeat(10_000).as_str()), "a message too large to notify comes through the row");
    let before: Vec<f64> = reports.iter().map(|(_, p)| p.progress).collect();
    assert!(before.contains(&200.0), "the newest of the burst came: {before:?}");
    assert!(before.len() < 40, "the burst of 200 was coalesced, not sent one by one: {} reports", before.len());
    assert!(before.windows(2).all(|w| w[0] < w[1]), "in order: {before:?}");
    on_b.release.add_permits(1);
    eventually("and its end", || seen.of(&moved.id).last() == Some(&TaskStatus::Completed)).await;
    on_a.release.add_permits(1);
}

#[tokio::test]
async fn an_adopted_call_is_a_task_at_once_while_every_worker_is_busy() {
    let fake = Fake::new(true);
    let engine = start(settings(1, 10, 10), fake.clone()).await;
    let busy = engine.admit(call("o", "hold")).await.unwrap();
    eventually("the only worker is busy", || fake.started().len() == 1).await;

    // Cancelled by `tasks/cancel`: the call's own cancel handle fires, not a worker's.
    let cancel = crate::cancel::CancelHandle::new(Arc::new(|| {}));
    let (admission, saw_cancel) = adopted("o", &cancel, Arc::new(Semaphore::new(0)));
    let task = engine.admit(admission).await.unwrap();
    assert!(task.started && task.attempts == 1, "stored started, on its first attempt: {task:?}");
    assert_eq!(engine.counts().running, 2, "an adopted call counts as running beside the worker's task");
    assert!(engine.runs("o", &task.id));
    engine.cancel("o", &task.id).await.unwrap();
    assert!(cancel.is_cancelled(), "tasks/cancel reaches the running call's own handle");
    eventually("the adopted call stopped", || saw_cancel.load(Ordering::SeqCst) == 1).await;
    eventually("its running slot is back", || engine.counts().running == 1).await;
    assert_eq!(engine.get("o", &task.id).await.unwrap().status, TaskStatus::Cancelled, "a late failure does not overwrite `cancelled`");

    // Finished while the worker is still busy: its end is stored at once.
    let release = Arc::new(Semaphore::new(0));
    let other = crate::cancel::CancelHandle::new(Arc::new(|| {}));
    let (admission, _) = adopted("o", &other, release.clone());
    let task = engine.admit(admission).await.unwrap();
    release.add_permits(1);
    let (ended, outcome) = engine.result("o", &task.id).await.unwrap();
    assert_eq!(ended.status, TaskStatus::Completed);
    assert_eq!(outcome, Outcome::Result(json!({ "ran": task.id })));
    assert_eq!(engine.get("o", &busy.id).await.unwrap().status, TaskStatus::Working, "the worker's task still runs");
    fake.release.add_permits(1);
}

#[tokio::test]
async fn an_adopted_call_cancelled_by_its_request_ends_cancelled_not_failed() {
    let engine = start(settings(1, 10, 10), Fake::new(true)).await;
    let cancel = crate::cancel::CancelHandle::new(Arc::new(|| {}));
    let (admission, saw_cancel) = adopted("o", &cancel, Arc::new(Semaphore::new(0)));
    let task = engine.admit(admission).await.unwrap();
    // The request's stream closed as the call became a task: its handle fires, not the engine.
    cancel.cancel();
    let (ended, outcome) = engine.result("o", &task.id).await.unwrap();
    assert_eq!(saw_cancel.load(Ordering::SeqCst), 1);
    assert_eq!((ended.status, outcome), (TaskStatus::Cancelled, Outcome::Cancelled), "{ended:?}");
}

#[tokio::test]
async fn shutdown_stops_an_adopted_call_and_leaves_it_for_recovery() {
    let engine = start(settings(1, 10, 10), Fake::new(true)).await;
    let cancel = crate::cancel::CancelHandle::new(Arc::new(|| {}));
    let (admission, _) = adopted("o", &cancel, Arc::new(Semaphore::new(0)));
    let task = engine.admit(admission).await.unwrap();
    // Shutdown returns only once every run is dropped, this one included.
    tokio::time::timeout(Duration::from_secs(10), engine.shutdown()).await.expect("shutdown waits for no adopted call");
    assert_eq!(engine.counts().running, 0);
    let _ = task;
}

#[tokio::test]
async fn the_owner_cap_refuses_an_adoption_and_drops_the_call() {
    let engine = start(settings(1, 10, 1), Fake::new(true)).await;
    engine.admit(call("o", "hold")).await.unwrap();
    let cancel = crate::cancel::CancelHandle::new(Arc::new(|| {}));
    let dropped = Arc::new(Semaphore::new(0));
    let (admission, _) = adopted("o", &cancel, dropped.clone());
    let refused = engine.admit(admission).await.unwrap_err();
    assert!(matches!(refused, EngineError::OwnerLimit { active: 1, limit: 1 }), "{refused}");
    assert_eq!(engine.counts().running + engine.counts().queued, 1, "nothing reserved for the refused call");
}
