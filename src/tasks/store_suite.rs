//! One test suite for every [`TaskStore`], written once: `store_suite!(name, make)` expands to a
//! `#[tokio::test]` per rule below, each on a fresh store from `make()` (which returns the store
//! and whatever must live as long as it, such as a temporary directory). The SQLite store runs
//! it on `:memory:` and on a file; a PostgreSQL store runs the same suite.

use serde_json::json;

use super::model::{now_ms, Outcome, Task, TaskStatus};
use super::store::{TaskQuestion, TaskStore};

/// A working task of `owner`, run by host `runner`, kept for an hour.
pub(crate) fn task(id: &str, owner: &str, runner: &str) -> Task {
    let now = now_ms();
    Task {
        id: id.to_owned(),
        owner: owner.to_owned(),
        tool: "tool".to_owned(),
        plugin: Some("plugin".to_owned()),
        arguments: json!({ "n": 1 }),
        status: TaskStatus::Working,
        status_message: None,
        created_at: now,
        updated_at: now,
        ttl_ms: Some(3_600_000),
        poll_interval_ms: 1000,
        progress_token: None,
        idempotency_key: None,
        seq: 0,
        runner: runner.to_owned(),
        attempts: 0,
        checkpoint: 0,
        resumed_from: 0,
        client_capabilities: None,
        started: false,
        trace_context: None,
    }
}

pub(crate) async fn insert_then_get_scoped_by_owner(store: &dyn TaskStore) {
    let stored = store.insert(task("t1", "alice", "h")).await.unwrap();
    assert!(stored.seq > 0, "insert returns the row with its seq: {stored:?}");
    let got = store.get("alice", "t1").await.unwrap().expect("stored");
    assert_eq!(got, stored);
    assert_eq!(got.arguments, json!({ "n": 1 }));
    assert_eq!(store.get("bob", "t1").await.unwrap(), None, "another owner sees nothing");
    assert_eq!(store.get("alice", "nope").await.unwrap(), None);
    assert_eq!(store.owner_of("t1").await.unwrap().as_deref(), Some("alice"), "who owns it, for an operator");
    assert_eq!(store.owner_of("nope").await.unwrap(), None);
    assert!(store.insert(task("t1", "alice", "h")).await.is_err(), "ids are unique");
}

/// A task stored started (an adopted call whose guest already runs) is never claimed as waiting
/// by another host and counts as started when its host dies; one stored plain is waiting until
/// a worker's `start`.
pub(crate) async fn a_task_stored_started_is_never_taken_as_waiting(store: &dyn TaskStore) {
    let old = |id: &str, started: bool| Task { started, created_at: 0, updated_at: 0, ..task(id, "o", "admitting") };
    store.insert(old("running", true)).await.unwrap();
    store.insert(old("queued", false)).await.unwrap();
    assert!(store.get("o", "running").await.unwrap().unwrap().started);
    assert!(store.started("running").await.unwrap(), "a task stored started counts as run after a crash");
    assert!(!store.started("queued").await.unwrap());
    let claimed: Vec<String> = store.claim_waiting("idle", 10, 0).await.unwrap().into_iter().map(|t| t.id).collect();
    assert!(!claimed.contains(&"running".to_owned()), "an adopted call's task was claimed as waiting: {claimed:?}");
    let started = store.start("o", "running", "admitting").await.unwrap().expect("its own host starts it");
    assert_eq!(started.attempts, 1, "storing it started does not count an attempt");
}

/// What the creating client declared travels with the task, through a claim by another host,
/// so whichever host runs it may ask that client; a task without it reads back as none.
pub(crate) async fn client_capabilities_go_with_their_task(store: &dyn TaskStore) {
    let declared = json!({ "elicitation": true, "sampling": false, "roots": true });
    store.insert(Task { client_capabilities: Some(declared.clone()), ..task("t", "o", "dead") }).await.unwrap();
    assert_eq!(store.get("o", "t").await.unwrap().unwrap().client_capabilities, Some(declared.clone()));
    let claimed = store.claim("t", "dead", "me").await.unwrap().expect("claimed");
    assert_eq!(claimed.client_capabilities, Some(declared), "a claimed task keeps what its client declared");
    store.insert(task("plain", "o", "h")).await.unwrap();
    assert_eq!(store.get("o", "plain").await.unwrap().unwrap().client_capabilities, None);
}

/// The creating request's trace context travels with the task, through a claim and an
/// operator's read, so the run on whichever host continues that trace.
pub(crate) async fn the_trace_context_goes_with_its_task(store: &dyn TaskStore) {
    let context = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\ncongo=t61rcWkgMzE".to_owned();
    store.insert(Task { trace_context: Some(context.clone()), ..task("traced", "o", "dead") }).await.unwrap();
    let claimed = store.claim("traced", "dead", "me").await.unwrap().expect("claimed");
    assert_eq!(claimed.trace_context.as_ref(), Some(&context));
    let started = store.start("o", "traced", "me").await.unwrap().expect("started");
    assert_eq!(started.trace_context.as_ref(), Some(&context));
    assert_eq!(store.inspect("traced").await.unwrap().unwrap().task.trace_context, Some(context));
    store.insert(task("untraced", "o", "h")).await.unwrap();
    assert_eq!(store.get("o", "untraced").await.unwrap().unwrap().trace_context, None);
}

pub(crate) async fn claim_is_fenced(store: &dyn TaskStore) {
    store.insert(task("t", "o", "dead")).await.unwrap();
    assert_eq!(store.claim("t", "someone-else", "me").await.unwrap(), None, "a claim from the wrong host fails");
    let claimed = store.claim("t", "dead", "me").await.unwrap().expect("claimed");
    assert_eq!(claimed.runner, "me", "the claim returns the row it wrote");
    assert_eq!(store.claim("t", "dead", "other").await.unwrap(), None, "a second claim from a stale `from` fails");
    assert_eq!(store.get("o", "t").await.unwrap().unwrap().runner, "me");
    store.finish("t", TaskStatus::Completed, None, &Outcome::Result(json!({}))).await.unwrap().unwrap();
    assert_eq!(store.claim("t", "me", "other").await.unwrap(), None, "an ended task cannot be claimed");
}

pub(crate) async fn transitions_never_leave_a_terminal_state(store: &dyn TaskStore) {
    store.insert(task("t", "o", "h")).await.unwrap();
    let waiting = store.set_status("t", TaskStatus::InputRequired, Some("waiting")).await.unwrap().expect("allowed");
    assert_eq!((waiting.status, waiting.status_message.as_deref()), (TaskStatus::InputRequired, Some("waiting")), "returns the row it wrote");
    assert_eq!(store.set_status("t", TaskStatus::InputRequired, None).await.unwrap(), None, "input_required → input_required is no move");
    let working = store.set_status("t", TaskStatus::Working, None).await.unwrap().expect("allowed");
    assert_eq!((working.status, working.status_message), (TaskStatus::Working, None));
    for end in [TaskStatus::Completed, TaskStatus::Failed, TaskStatus::Cancelled] {
        let id = format!("t-{}", end.as_str());
        store.insert(task(&id, "o", "h")).await.unwrap();
        store.finish(&id, end, None, &Outcome::Cancelled).await.unwrap().expect("ends");
        for next in [TaskStatus::Working, TaskStatus::InputRequired] {
            assert_eq!(store.set_status(&id, next, None).await.unwrap(), None, "{end:?} → {next:?}");
        }
        assert_eq!(store.get("o", &id).await.unwrap().unwrap().status, end, "{end:?} is final");
    }
    assert_eq!(store.set_status("missing", TaskStatus::Working, None).await.unwrap(), None);
}

pub(crate) async fn finish_stores_the_outcome_once(store: &dyn TaskStore) {
    store.insert(task("t", "o", "h")).await.unwrap();
    assert_eq!(store.outcome("t").await.unwrap(), None, "no outcome before the end");
    let first = Outcome::Result(json!({ "content": [{ "type": "text", "text": "done" }] }));
    let ended = store.finish("t", TaskStatus::Failed, Some("it broke"), &first).await.unwrap().expect("ends");
    assert_eq!((ended.status, ended.status_message.as_deref()), (TaskStatus::Failed, Some("it broke")), "returns the row it wrote");
    assert_eq!(store.outcome("t").await.unwrap(), Some(first.clone()), "status and outcome together");
    let late = store.finish("t", TaskStatus::Completed, None, &Outcome::Error(json!({ "code": 1, "message": "late" }))).await.unwrap();
    assert_eq!(late, None, "a second finish is refused");
    assert_eq!(store.outcome("t").await.unwrap(), Some(first), "and changes nothing");
    assert_eq!(store.get("o", "t").await.unwrap().unwrap().status, TaskStatus::Failed);
    assert_eq!(store.finish("missing", TaskStatus::Completed, None, &Outcome::Cancelled).await.unwrap(), None);
}

pub(crate) async fn outcome_kinds_round_trip(store: &dyn TaskStore) {
    let kinds = [
        Outcome::Result(json!({ "content": [], "isError": false })),
        Outcome::Result(json!({ "content": [{ "type": "text", "text": "no" }], "isError": true })),
        Outcome::Failed { kind: "timeout".into(), result: json!({ "content": [], "isError": true }) },
        Outcome::Error(json!({ "code": -32602, "message": "bad", "data": { "kind": "x" } })),
        Outcome::Cancelled,
        Outcome::Interrupted,
    ];
    for (i, outcome) in kinds.iter().enumerate() {
        let id = format!("t{i}");
        store.insert(task(&id, "o", "h")).await.unwrap();
        assert_eq!(store.get_with_outcome("o", &id).await.unwrap().map(|(t, o)| (t.id, o)), Some((id.clone(), None)), "no outcome before the end");
        store.finish(&id, TaskStatus::Failed, None, outcome).await.unwrap().unwrap();
        assert_eq!(store.outcome(&id).await.unwrap().as_ref(), Some(outcome));
        let (ended, read) = store.get_with_outcome("o", &id).await.unwrap().expect("the owner reads it");
        assert_eq!((ended.status, read.as_ref()), (TaskStatus::Failed, Some(outcome)), "the task and its outcome in one read");
        assert!(store.get_with_outcome("other", &id).await.unwrap().is_none(), "another owner reads nothing");
    }
}

pub(crate) async fn idempotency_keys_are_scoped_by_owner(store: &dyn TaskStore) {
    let keyed = |id: &str, owner: &str| Task { idempotency_key: Some("k".into()), ..task(id, owner, "h") };
    store.insert(keyed("a1", "alice")).await.unwrap();
    store.insert(keyed("b1", "bob")).await.unwrap();
    assert_eq!(store.find_by_key("alice", "k").await.unwrap().unwrap().id, "a1");
    assert_eq!(store.find_by_key("bob", "k").await.unwrap().unwrap().id, "b1");
    assert_eq!(store.find_by_key("carol", "k").await.unwrap(), None);
    assert_eq!(store.find_by_key("alice", "other").await.unwrap(), None);
    assert!(store.insert(keyed("a2", "alice")).await.is_err(), "one task per owner and key");
}

pub(crate) async fn list_pages_by_seq_per_owner(store: &dyn TaskStore) {
    for i in 0..5 {
        store.insert(task(&format!("a{i}"), "alice", "h")).await.unwrap();
        if i % 2 == 0 {
            store.insert(task(&format!("b{i}"), "bob", "h")).await.unwrap();
        }
    }
    let first = store.list("alice", 0, 2).await.unwrap();
    assert_eq!(first.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["a0", "a1"]);
    let rest = store.list("alice", first[1].seq, 10).await.unwrap();
    assert_eq!(rest.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["a2", "a3", "a4"]);
    assert!(rest.windows(2).all(|w| w[0].seq < w[1].seq), "in seq order");
    assert_eq!(store.list("bob", 0, 10).await.unwrap().len(), 3, "only the owner's");
    assert!(store.list("alice", rest[2].seq, 10).await.unwrap().is_empty());
}

pub(crate) async fn purge_deletes_expired_tasks_and_their_outcomes(store: &dyn TaskStore) {
    let old = Task { created_at: now_ms() - 10_000, ttl_ms: Some(1_000), ..task("old", "o", "h") };
    let forever = Task { ttl_ms: None, ..task("forever", "o", "h") };
    store.insert(old).await.unwrap();
    store.insert(forever).await.unwrap();
    store.insert(task("young", "o", "h")).await.unwrap();
    store.finish("old", TaskStatus::Completed, None, &Outcome::Result(json!({}))).await.unwrap().unwrap();
    assert_eq!(store.purge_expired(now_ms()).await.unwrap(), 1);
    assert_eq!(store.get("o", "old").await.unwrap(), None);
    assert_eq!(store.outcome("old").await.unwrap(), None, "the outcome went with its task");
    assert!(store.get("o", "young").await.unwrap().is_some() && store.get("o", "forever").await.unwrap().is_some());
    assert_eq!(store.purge_expired(now_ms()).await.unwrap(), 0);
}

pub(crate) async fn counts_and_unfinished_follow_the_statuses(store: &dyn TaskStore) {
    for id in ["w1", "w2", "i", "c", "f"] {
        store.insert(task(id, "o", "h")).await.unwrap();
    }
    store.set_status("i", TaskStatus::InputRequired, None).await.unwrap().unwrap();
    store.finish("c", TaskStatus::Completed, None, &Outcome::Result(json!({}))).await.unwrap().unwrap();
    store.finish("f", TaskStatus::Failed, None, &Outcome::Interrupted).await.unwrap().unwrap();
    let mut counts = store.count_by_status().await.unwrap();
    counts.sort_by_key(|(s, _)| s.as_str());
    assert_eq!(counts, [(TaskStatus::Completed, 1), (TaskStatus::Failed, 1), (TaskStatus::InputRequired, 1), (TaskStatus::Working, 2)]);
    let unfinished = store.unfinished().await.unwrap();
    assert_eq!(unfinished.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), ["w1", "w2", "i"]);
}

pub(crate) async fn results_are_kept_in_pages_for_their_owner_until_they_expire(store: &dyn TaskStore) {
    use super::blobs::{PartKind, ResultPart, ResultQuota, RESULT_PAGE_BYTES};
    let now = now_ms();
    let text: String = (0..RESULT_PAGE_BYTES * 2 + 10).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
    let parts = vec![
        ResultPart { part: 0, kind: PartKind::Text, mime_type: Some("text/plain".into()), data: text.clone() },
        ResultPart { part: 2, kind: PartKind::Blob, mime_type: Some("image/png".into()), data: "AQID".into() },
    ];
    store.keep_result("alice", "r1", Some(now + 60_000), parts, ResultQuota::default()).await.unwrap();
    let mut read = String::new();
    for n in 0..3 {
        let page = store.result_page("alice", "r1", 0, n, now).await.unwrap().expect("a page");
        assert_eq!((page.kind, page.page, page.pages, page.size), (PartKind::Text, n, 3, text.len() as u64));
        assert_eq!(page.mime_type.as_deref(), Some("text/plain"));
        read.push_str(&page.data);
    }
    assert_eq!(read, text, "the pages join to the whole part");
    assert_eq!(store.result_page("alice", "r1", 0, 3, now).await.unwrap(), None, "no page past the last");
    let blob = store.result_page("alice", "r1", 2, 0, now).await.unwrap().expect("the binary part");
    assert_eq!((blob.kind, blob.data.as_str(), blob.pages), (PartKind::Blob, "AQID", 1));
    assert_eq!(store.result_page("alice", "r1", 1, 0, now).await.unwrap(), None, "no such part");
    assert_eq!(store.result_page("bob", "r1", 0, 0, now).await.unwrap(), None, "another owner reads nothing");
    assert_eq!(store.result_page("alice", "r1", 0, 0, now + 60_000).await.unwrap(), None, "an expired result reads as gone");
    store
        .keep_result("alice", "forever", None, vec![ResultPart { part: 0, kind: PartKind::Text, mime_type: None, data: String::new() }], ResultQuota::default())
        .await
        .unwrap();
    store.purge_expired(now + 60_000).await.unwrap();
    assert_eq!(store.result_page("alice", "r1", 2, 0, now).await.unwrap(), None, "purged once expired");
    let empty = store.result_page("alice", "forever", 0, 0, now + 60_000).await.unwrap().expect("kept without expiry");
    assert_eq!((empty.data.as_str(), empty.pages, empty.size), ("", 1, 0));
}

pub(crate) async fn a_keep_past_the_owners_bound_is_refused_and_another_owner_is_unaffected(store: &dyn TaskStore) {
    use super::blobs::{PartKind, QuotaBound, ResultPart, ResultQuota};
    use super::store::StoreError;
    let part = |n: usize| vec![ResultPart { part: 0, kind: PartKind::Text, mime_type: None, data: "x".repeat(n) }];
    let quota = ResultQuota { per_owner: 1000, total: 1700 };
    let expires = Some(now_ms() + 60_000);
    store.keep_result("alice", "a1", expires, part(600), quota).await.unwrap();
    let e = store.keep_result("alice", "a2", expires, part(500), quota).await.unwrap_err();
    assert!(matches!(e, StoreError::OverQuota { bound: QuotaBound::PerOwner, limit: 1000, kept: 600, size: 500 }), "{e:?}");
    assert!(e.to_string().contains("--max-result-bytes-per-client"), "the refusal names the flag: {e}");
    assert_eq!(store.result_page("alice", "a2", 0, 0, now_ms()).await.unwrap(), None, "nothing of the refused result is kept");
    assert_eq!(store.result_bytes_kept().await.unwrap(), 600);
    // Replacing a result counts its new size, not both.
    store.keep_result("alice", "a1", expires, part(1000), quota).await.unwrap();
    store.keep_result("bob", "b1", expires, part(700), quota).await.expect("another owner has a bound of its own");
    assert_eq!(store.result_bytes_kept().await.unwrap(), 1700);
    let e = store.keep_result("carol", "c1", expires, part(1), quota).await.unwrap_err();
    assert!(matches!(e, StoreError::OverQuota { bound: QuotaBound::Total, limit: 1700, kept: 1700, size: 1 }), "{e:?}");
    assert!(store.result_page("alice", "a1", 0, 0, now_ms()).await.unwrap().is_some(), "what was kept stays readable");
}

pub(crate) async fn questions_are_kept_answered_once_and_go_with_their_task(store: &dyn TaskStore) {
    store.insert(task("t", "o", "h")).await.unwrap();
    let ask = |key: &str| (key.to_owned(), json!({ "method": "elicitation/create", "params": { "message": key } }));
    store.keep_questions("t", vec![ask("first"), ask("second")]).await.unwrap();
    store.keep_questions("t", vec![ask("third")]).await.unwrap();
    let keys = |qs: Vec<TaskQuestion>| qs.into_iter().map(|q| (q.key, q.answer)).collect::<Vec<_>>();
    assert_eq!(keys(store.questions("t").await.unwrap()), [("first".into(), None), ("second".into(), None), ("third".into(), None)], "in the order asked");
    assert_eq!(store.questions("t").await.unwrap()[1].request, ask("second").1);

    let recorded = store.answer_questions("t", vec![("second".into(), json!({ "action": "accept" })), ("nobody-asked".into(), json!({}))]).await.unwrap();
    assert_eq!(recorded, ["second"], "only an outstanding question takes an answer");
    let again = store.answer_questions("t", vec![("second".into(), json!({ "action": "decline" }))]).await.unwrap();
    assert!(again.is_empty(), "an answered question keeps its first answer");
    assert_eq!(store.questions("t").await.unwrap()[1].answer, Some(json!({ "action": "accept" })));

    store.drop_questions("t", vec!["second".into()]).await.unwrap();
    assert_eq!(keys(store.questions("t").await.unwrap()), [("first".into(), None), ("third".into(), None)]);
    assert!(store.answer_questions("t", vec![("second".into(), json!({}))]).await.unwrap().is_empty(), "a forgotten question takes nothing");
    assert!(store.questions("other").await.unwrap().is_empty());

    let mut expiring = task("gone", "o", "h");
    expiring.ttl_ms = Some(1);
    expiring.created_at = now_ms() - 10_000;
    store.insert(expiring).await.unwrap();
    store.keep_questions("gone", vec![ask("q")]).await.unwrap();
    store.purge_expired(now_ms()).await.unwrap();
    assert!(store.questions("gone").await.unwrap().is_empty(), "questions go with their task");
}

pub(crate) async fn checkpoints_replace_each_other_are_fenced_and_attempts_are_counted(store: &dyn TaskStore) {
    store.insert(task("t", "o", "h")).await.unwrap();
    assert_eq!(store.checkpoint_state("t").await.unwrap(), None, "no checkpoint yet");
    let first = store.start("o", "t", "h").await.unwrap().expect("started");
    assert_eq!((first.attempts, first.checkpoint), (1, 0), "the first start is attempt 1");
    assert_eq!(store.checkpoint("t", "other", b"x".to_vec(), None).await.unwrap(), None, "another host writes nothing");
    assert_eq!(store.checkpoint("t", "h", b"one".to_vec(), Some("10 of 100")).await.unwrap(), Some(1));
    assert_eq!(store.checkpoint("t", "h", vec![0, 255, 7], Some("20 of 100")).await.unwrap(), Some(2));
    assert_eq!(store.checkpoint_state("t").await.unwrap(), Some((2, vec![0, 255, 7])), "the last replaces the one before");
    let row = store.get("o", "t").await.unwrap().unwrap();
    assert_eq!((row.checkpoint, row.status_message.as_deref()), (2, Some("20 of 100")), "progress is stored with the checkpoint");
    let again = store.start("o", "t", "h").await.unwrap().expect("started again");
    assert_eq!((again.attempts, again.checkpoint), (2, 2), "a second start is attempt 2, from checkpoint 2");
    store.finish("t", TaskStatus::Completed, None, &Outcome::Result(json!({}))).await.unwrap().unwrap();
    assert_eq!(store.checkpoint("t", "h", b"late".to_vec(), None).await.unwrap(), None, "an ended task takes no checkpoint");
}

pub(crate) async fn an_attempt_remembers_the_checkpoint_it_started_from(store: &dyn TaskStore) {
    store.insert(task("t", "o", "h")).await.unwrap();
    assert_eq!(store.start("o", "t", "h").await.unwrap().expect("started").resumed_from, 0, "the first run starts from nothing");
    for state in [b"1".to_vec(), b"2".to_vec(), b"3".to_vec()] {
        store.checkpoint("t", "h", state, None).await.unwrap().expect("stored");
    }
    let again = store.start("o", "t", "h").await.unwrap().expect("started again");
    assert_eq!((again.attempts, again.checkpoint, again.resumed_from), (2, 3, 3), "attempt 2 starts from checkpoint 3");
    store.checkpoint("t", "h", b"4".to_vec(), None).await.unwrap().expect("stored");
    store.checkpoint("t", "h", b"5".to_vec(), None).await.unwrap().expect("stored");
    let row = store.get("o", "t").await.unwrap().unwrap();
    assert_eq!((row.checkpoint, row.resumed_from), (5, 3), "later checkpoints move `checkpoint`, never where the attempt started");
}

/// The ids of a page, in its order.
fn ids(page: &super::TaskPage) -> Vec<&str> {
    page.tasks.iter().map(|t| t.id.as_str()).collect()
}

pub(crate) async fn operators_list_every_owner_newest_first_filtered_and_paged(store: &dyn TaskStore) {
    use super::operator::{TaskCursor, TaskFilter};
    let at = now_ms() - 100_000;
    for (i, (owner, tool, plugin)) in
        [("alice", "echo", "text"), ("bob", "spin", "spin"), ("alice", "spin", "spin"), ("carol", "echo", "text"), ("bob", "echo", "text")]
            .into_iter()
            .enumerate()
    {
        let t = Task { tool: tool.into(), plugin: Some(plugin.into()), created_at: at + i as i64 * 1000, ..task(&format!("t{i}"), owner, "h") };
        store.insert(t).await.unwrap();
    }
    store.insert(Task { plugin: None, created_at: at + 5000, ..task("t5", "dave", "h") }).await.unwrap();
    store.finish("t1", TaskStatus::Completed, None, &Outcome::Result(json!({}))).await.unwrap().unwrap();
    store.set_status("t3", TaskStatus::InputRequired, None).await.unwrap().unwrap();

    let all = store.list_all(&TaskFilter::default(), None, 100).await.unwrap();
    assert_eq!(ids(&all), ["t5", "t4", "t3", "t2", "t1", "t0"], "every owner's, newest first");
    assert_eq!(all.next, None, "one page holds them all");
    assert_eq!(all.tasks[0].plugin, None, "a task stored without its plugin reads as such");
    assert_eq!(all.tasks[1].plugin.as_deref(), Some("text"));

    let first = store.list_all(&TaskFilter::default(), None, 4).await.unwrap();
    assert_eq!(ids(&first), ["t5", "t4", "t3", "t2"]);
    let cursor = first.next.expect("more to come");
    assert_eq!(TaskCursor::parse(&cursor.to_string()), Some(cursor), "a cursor reads back as written");
    store.insert(Task { created_at: at + 9000, ..task("t6", "alice", "h") }).await.unwrap();
    let rest = store.list_all(&TaskFilter::default(), Some(cursor), 4).await.unwrap();
    assert_eq!(ids(&rest), ["t1", "t0"], "a task added meanwhile shifts no page");
    assert_eq!(rest.next, None);

    let by = |filter: TaskFilter| async move { ids(&store.list_all(&filter, None, 100).await.unwrap()).into_iter().map(str::to_owned).collect::<Vec<_>>() };
    assert_eq!(by(TaskFilter { owner: Some("alice".into()), ..TaskFilter::default() }).await, ["t6", "t2", "t0"]);
    assert_eq!(by(TaskFilter { tool: Some("spin".into()), ..TaskFilter::default() }).await, ["t2", "t1"]);
    assert_eq!(by(TaskFilter { plugin: Some("text".into()), ..TaskFilter::default() }).await, ["t4", "t3", "t0"]);
    assert_eq!(by(TaskFilter { statuses: vec![TaskStatus::Completed, TaskStatus::InputRequired], ..TaskFilter::default() }).await, ["t3", "t1"]);
    assert_eq!(by(TaskFilter { created_from: Some(at + 2000), created_before: Some(at + 4000), ..TaskFilter::default() }).await, ["t3", "t2"]);
    let filter = TaskFilter { owner: Some("bob".into()), plugin: Some("text".into()), ..TaskFilter::default() };
    assert_eq!(by(filter.clone()).await, ["t4"], "every filter set must match");
    assert!(all.tasks.iter().filter(|t| filter.matches(t)).map(|t| t.id.as_str()).eq(["t4"]), "`matches` agrees with the store");
    assert!(by(TaskFilter { owner: Some("nobody".into()), ..TaskFilter::default() }).await.is_empty());
}

pub(crate) async fn inspect_tells_everything_stored_of_any_owners_task(store: &dyn TaskStore) {
    use super::OutcomeKind;
    store.insert(task("t", "someone", "h")).await.unwrap();
    let fresh = store.inspect("t").await.unwrap().expect("any owner's task");
    assert_eq!((fresh.started_at, fresh.checkpointed_at, fresh.outcome), (None, None, None), "{fresh:?}");
    assert_eq!(fresh.task.arguments, json!({ "n": 1 }));
    assert_eq!(fresh.task.plugin.as_deref(), Some("plugin"));
    let before = now_ms();
    store.start("someone", "t", "h").await.unwrap().unwrap();
    store.checkpoint("t", "h", b"state".to_vec(), Some("half way")).await.unwrap().unwrap();
    let ask = |key: &str| (key.to_owned(), json!({ "method": "elicitation/create", "params": { "message": key } }));
    store.keep_questions("t", vec![ask("answered"), ask("open")]).await.unwrap();
    store.answer_questions("t", vec![("answered".into(), json!({ "action": "accept" }))]).await.unwrap();
    let running = store.inspect("t").await.unwrap().unwrap();
    assert!(running.started_at.is_some_and(|at| at >= before), "{running:?}");
    assert!(running.checkpointed_at.is_some_and(|at| at >= before), "{running:?}");
    assert_eq!((running.task.attempts, running.task.checkpoint), (1, 1));
    assert_eq!(running.task.status_message.as_deref(), Some("half way"));
    assert_eq!(running.questions.iter().map(|q| q.key.as_str()).collect::<Vec<_>>(), ["open"], "only the questions still waiting");
    store.finish_as("t", "h", TaskStatus::Failed, None, &Outcome::Failed { kind: "timeout".into(), result: json!({}) }).await.unwrap().unwrap();
    let ended = store.inspect("t").await.unwrap().unwrap();
    assert_eq!((ended.outcome, ended.failure.as_deref()), (Some(OutcomeKind::Failed), Some("timeout")));
    assert_eq!(store.inspect("missing").await.unwrap(), None);
}

pub(crate) async fn an_outside_cancel_ends_the_task_and_reaches_its_host(store: &dyn TaskStore) {
    store.insert(task("run", "o", "h")).await.unwrap();
    store.start("o", "run", "h").await.unwrap().unwrap();
    let mut changes = store.subscribe();
    if let Some(changes) = &mut changes {
        heard_from_now_on(store, changes).await;
    }
    let (seen, _) = store.cancels_after(None).await.unwrap();
    let cancelled = store.cancel("run", "cancelled by an operator").await.unwrap().expect("cancelled");
    assert_eq!((cancelled.status, cancelled.status_message.as_deref()), (TaskStatus::Cancelled, Some("cancelled by an operator")));
    assert_eq!(store.outcome("run").await.unwrap(), Some(Outcome::Cancelled));
    assert_eq!(
        store.finish_as("run", "h", TaskStatus::Completed, None, &Outcome::Result(json!({}))).await.unwrap(),
        None,
        "the host's late end writes nothing"
    );
    assert_eq!(store.cancel("run", "again").await.unwrap(), None, "an ended task stays as it ended");
    assert_eq!(store.cancel("missing", "x").await.unwrap(), None);
    match changes {
        // A shared store announces it to every host.
        Some(mut changes) => loop {
            let event = tokio::time::timeout(std::time::Duration::from_secs(30), changes.recv()).await.expect("announced").unwrap();
            if event == (super::StoreEvent::Changed { id: "run".into(), status: TaskStatus::Cancelled }) {
                break;
            }
        },
        // One that announces nothing leaves a notice its hosts look for.
        None => {
            let (newest, ids) = store.cancels_after(Some(seen)).await.unwrap();
            assert_eq!(ids, ["run"]);
            assert!(store.cancels_after(Some(newest)).await.unwrap().1.is_empty(), "each notice once");
        }
    }
}

/// Returns once `changes` hears this store's writes (its listener connects on its own time):
/// writes probes until one comes back.
async fn heard_from_now_on(store: &dyn TaskStore, changes: &mut tokio::sync::broadcast::Receiver<super::StoreEvent>) {
    for attempt in 0..120 {
        let probe = format!("probe-{attempt}");
        store.insert(task(&probe, "probe", "h")).await.unwrap();
        let heard = async {
            loop {
                match changes.recv().await {
                    Ok(super::StoreEvent::Changed { id, .. }) if id == probe => return,
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => panic!("the store's events stopped"),
                    _ => continue,
                }
            }
        };
        if tokio::time::timeout(std::time::Duration::from_millis(250), heard).await.is_ok() {
            return;
        }
    }
    panic!("the store's listener never heard a write");
}

pub(crate) async fn purge_deletes_named_ended_tasks_and_refuses_unfinished_ones(store: &dyn TaskStore) {
    use super::blobs::{PartKind, ResultPart, ResultQuota};
    use super::operator::Purged;
    for id in ["done", "running", "waiting"] {
        store.insert(task(id, "o", "h")).await.unwrap();
    }
    store.set_status("waiting", TaskStatus::InputRequired, None).await.unwrap().unwrap();
    store.keep_questions("done", vec![("q".into(), json!({}))]).await.unwrap();
    let part = ResultPart { part: 0, kind: PartKind::Text, mime_type: None, data: "kept".into() };
    store.keep_result("o", "done", None, vec![part], ResultQuota::default()).await.unwrap();
    store.finish("done", TaskStatus::Completed, None, &Outcome::Result(json!({}))).await.unwrap().unwrap();
    let purged = store.purge_tasks(vec!["running".into(), "done".into(), "waiting".into(), "missing".into()]).await.unwrap();
    assert_eq!(
        purged,
        [
            ("running".into(), Purged::NotEnded(TaskStatus::Working)),
            ("done".into(), Purged::Deleted),
            ("waiting".into(), Purged::NotEnded(TaskStatus::InputRequired)),
            ("missing".into(), Purged::Unknown)
        ]
    );
    assert_eq!(store.inspect("done").await.unwrap(), None);
    assert_eq!(store.outcome("done").await.unwrap(), None, "its outcome went with it");
    assert!(store.questions("done").await.unwrap().is_empty(), "its questions too");
    assert_eq!(store.result_page("o", "done", 0, 0, now_ms()).await.unwrap(), None, "and its kept result");
    assert_eq!(store.result_bytes_kept().await.unwrap(), 0);
    assert!(store.inspect("running").await.unwrap().is_some() && store.inspect("waiting").await.unwrap().is_some(), "unfinished tasks stay");
}

/// What a suite's store maker returns: a store and whatever must outlive it, or `None` when no
/// store can be made on this machine (no PostgreSQL server), so the rule skips (the maker says why).
pub(crate) trait Made<S, K> {
    fn made(self) -> Option<(S, K)>;
}

impl<S, K> Made<S, K> for (S, K) {
    fn made(self) -> Option<(S, K)> {
        Some(self)
    }
}

impl<S, K> Made<S, K> for Option<(S, K)> {
    fn made(self) -> Option<(S, K)> {
        self
    }
}

/// Expands to one `#[tokio::test]` per rule of the suite, in a module `$name`, each on a fresh
/// store from `$make()` (a closure returning `(store, keep_alive)`, or an `Option` of it: see [`Made`]).
macro_rules! store_suite {
    ($name:ident, $make:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $crate::tasks::store_suite::store_suite!(@tests $make;
                insert_then_get_scoped_by_owner,
                claim_is_fenced,
                transitions_never_leave_a_terminal_state,
                finish_stores_the_outcome_once,
                outcome_kinds_round_trip,
                idempotency_keys_are_scoped_by_owner,
                list_pages_by_seq_per_owner,
                purge_deletes_expired_tasks_and_their_outcomes,
                counts_and_unfinished_follow_the_statuses,
                results_are_kept_in_pages_for_their_owner_until_they_expire,
                a_keep_past_the_owners_bound_is_refused_and_another_owner_is_unaffected,
                checkpoints_replace_each_other_are_fenced_and_attempts_are_counted,
                questions_are_kept_answered_once_and_go_with_their_task,
                an_attempt_remembers_the_checkpoint_it_started_from,
                client_capabilities_go_with_their_task,
                the_trace_context_goes_with_its_task,
                a_task_stored_started_is_never_taken_as_waiting,
                operators_list_every_owner_newest_first_filtered_and_paged,
                inspect_tells_everything_stored_of_any_owners_task,
                an_outside_cancel_ends_the_task_and_reaches_its_host,
                purge_deletes_named_ended_tasks_and_refuses_unfinished_ones
            );
        }
    };
    (@tests $make:expr; $($rule:ident),*) => {
        $(
            #[tokio::test]
            async fn $rule() {
                let Some((store, _keep)) = $crate::tasks::store_suite::Made::made(($make)()) else { return };
                $crate::tasks::store_suite::$rule(&store).await;
                $crate::tasks::TaskStore::close(&store).await;
            }
        )*
    };
}

pub(crate) use store_suite;
