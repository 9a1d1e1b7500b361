//! Where tasks live: embedded SQLite (one machine), or PostgreSQL for several replicas that
//! share one database; both implement this trait and pass one suite (`store_suite`).
//!
//! The trait is async so that no store call ever holds a tokio worker: the SQLite store answers
//! from its own threads, a PostgreSQL store from the network. It returns boxed futures
//! ([`StoreFuture`]) rather than using `async fn`, because the engine holds the store as
//! `Arc<dyn TaskStore>` and `async fn` in traits is not object-safe; writing the box by hand
//! costs one allocation per call (what `async-trait` would generate) without another
//! dependency. Every future is `'static`: implementations copy what they need from the
//! arguments before the future is made, so callers never have to keep them alive.
//!
//! Shaped for several hosts on one database: writes are conditional on the row's current
//! state and return the row they wrote (`UPDATE … RETURNING`), so no caller re-reads after a
//! write and two hosts racing for one row learn which of them won.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::blobs::{Overrun, QuotaBound, ResultPage, ResultPart, ResultQuota};
pub use super::model::TaskQuestion;
use super::model::{Outcome, Progress, Task, TaskStatus};
use super::operator::{Purged, TaskCursor, TaskDetail, TaskFilter, TaskPage};

/// What every store call returns.
pub type StoreResult<T> = Result<T, StoreError>;

/// A store call in flight; it owns everything it needs.
pub type StoreFuture<T> = BoxFuture<'static, StoreResult<T>>;

/// Why a store call failed. Each variant keeps its source, so the log shows the SQLite error.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database cannot be opened or created.
    #[error("task store {path}: {source}")]
    Open {
        /// The database file as given.
        path: String,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// The file opened but is not a task database this corral understands.
    #[error("task store {path}: {source} (is it a corral task database? move it away to start afresh)")]
    NotTaskDatabase {
        /// The database file as given.
        path: String,
        /// What SQLite said.
        source: rusqlite::Error,
    },
    /// An operator's command was given a file that is not a corral task store (another
    /// program's database, or no database): it was opened read-only and left as it was.
    #[error("task store {path}: {why} (is it a corral task database? corral's operator commands open only a store `corral serve --db` made, and change no other file)")]
    NotCorralStore {
        /// The database file as given.
        path: String,
        /// What is missing or what SQLite said.
        why: String,
    },
    /// The directory for the database, or a store thread, cannot be made.
    #[error("task store {path}: {source}")]
    Io {
        /// The database file as given.
        path: String,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// One operation failed; the others of its batch are unaffected.
    #[error("task store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The batch an operation was part of could not begin or commit: nothing of it was stored.
    /// Shared by every operation of the batch, hence the `Arc`.
    #[error("task store: {0}")]
    Batch(Arc<rusqlite::Error>),
    /// The store was shut down (or its thread died): the operation was not run.
    #[error("task store: the store thread has stopped")]
    Closed,
    /// A stored outcome is not JSON this corral can read.
    #[error("task store: stored outcome of task {id} is not valid: {source}")]
    CorruptOutcome {
        /// The task whose outcome it is.
        id: String,
        /// What the JSON parser said.
        source: serde_json::Error,
    },
    /// The PostgreSQL server cannot be reached, or refused us (a wrong password, say).
    #[error("task store {url}: cannot connect: {problem}")]
    Connect {
        /// The database URL, without its password.
        url: String,
        /// What the server or the network said.
        problem: String,
    },
    /// The PostgreSQL database holds a schema this corral must not touch: another
    /// application's tables, or a corral schema newer than this binary.
    #[error("task store {url}: {problem}")]
    Schema {
        /// The database URL, without its password.
        url: String,
        /// What is wrong, in words a person can act on.
        problem: String,
    },
    /// One PostgreSQL operation failed (or the server went away while it ran).
    #[error("task store (PostgreSQL): {0}")]
    Postgres(String),
    /// No PostgreSQL connection could be had from the pool: the server is down or unreachable.
    #[error("task store (PostgreSQL) is unavailable: {0}")]
    Unavailable(String),
    /// The insert would pass the cap on tasks waiting for a worker, counted across every host
    /// of a shared store (`--max-queued`).
    #[error("task store: {queued} tasks are waiting (limit {limit})")]
    Full {
        /// Tasks waiting now, across hosts.
        queued: usize,
        /// The cap.
        limit: usize,
    },
    /// The insert would pass the owner's cap on unfinished tasks, counted across every host of
    /// a shared store (`--max-tasks-per-client`).
    #[error("task store: the owner has {active} unfinished tasks (limit {limit})")]
    OwnerFull {
        /// The owner's unfinished tasks now, across hosts.
        active: usize,
        /// The cap.
        limit: usize,
    },
    /// Keeping a result would pass a bound on the bytes of kept results ([`ResultQuota`]): it
    /// is not kept.
    #[error(
        "the results kept for {} would pass {} ({limit} bytes): {kept} bytes are kept and this result is {size} bytes; read them and let them expire, or raise the flag",
        bound.whose(), bound.flag()
    )]
    OverQuota {
        /// Which bound.
        bound: QuotaBound,
        /// Its value in bytes.
        limit: u64,
        /// The bytes kept already under it.
        kept: u64,
        /// The bytes this keep would add.
        size: u64,
    },
    /// A task ended without an outcome, which a store must never let happen.
    #[error("task store: task {id} ended without an outcome")]
    MissingOutcome {
        /// The task.
        id: String,
    },
}

impl From<Overrun> for StoreError {
    fn from(Overrun { bound, limit, kept, size }: Overrun) -> StoreError {
        StoreError::OverQuota { bound, limit, kept, size }
    }
}

/// A change to a task that a store shared by several hosts tells every host about
/// ([`TaskStore::subscribe`]).
#[derive(Clone, Debug, PartialEq)]
pub enum StoreEvent {
    /// Task `id` now has `status` (whichever host wrote it).
    Changed {
        /// The task.
        id: String,
        /// Its new status.
        status: TaskStatus,
    },
    /// Task `id`, run by another host, reported progress (the newest of a burst: a store may
    /// coalesce). When `message_in_row`, the message was too large for a notification and was
    /// written to the task's `status_message` instead: read the task for it.
    Progress {
        /// The task.
        id: String,
        /// The report.
        progress: Progress,
        /// Whether the report's message is in the task's row rather than here.
        message_in_row: bool,
    },
    /// Some of task `id`'s questions were answered (on whichever host): the host whose guest
    /// waits for them reads them.
    Answered {
        /// The task.
        id: String,
    },
    /// Changes may have been missed (the store lost its connection and has it back, or the
    /// receiver lagged): whoever waits on a task should read it again.
    Resync,
    /// This host was taken for dead (its heartbeat lapsed past the host expiry: a paused VM, a
    /// partition) and other hosts may have claimed its tasks: its runs of those are stale. The
    /// fence refuses their writes already; this lets the host stop them instead of finishing
    /// work whose result no one will keep.
    TakenForDead,
}

/// One replica sharing a PostgreSQL store, as the operator's console shows it.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Replica {
    /// Its runner id (what a task's `runner` names).
    pub id: String,
    /// Milliseconds since its last heartbeat, by the database's clock.
    pub heartbeat_age_ms: i64,
    /// Milliseconds since it registered.
    pub up_ms: i64,
    /// Its `working` and `input_required` tasks.
    pub tasks_held: i64,
}

/// Every write is durable when its future resolves: a record before its `CreateTaskResult` is
/// sent, an outcome before its terminal status can be seen.
pub trait TaskStore: Send + Sync + 'static {
    /// Stores a new task; returns it as stored (with its `seq`).
    fn insert(&self, task: Task) -> StoreFuture<Task>;

    /// The task `id` if `owner` owns it.
    fn get(&self, owner: &str, id: &str) -> StoreFuture<Option<Task>>;

    /// Who owns task `id`, whoever asks: only for a principal the policy lets steer every
    /// task (an operator), who then acts on the task as its owner.
    fn owner_of(&self, id: &str) -> StoreFuture<Option<String>>;

    /// [`TaskStore::insert`] under a cap of the owner's own on its unfinished tasks (the
    /// policy's `max-active-tasks`) besides the store's. A store shared by replicas counts
    /// them across replicas; one host's store leaves the cap to the engine, which counts them
    /// in memory.
    fn insert_capped(&self, task: Task, _owner_cap: usize) -> StoreFuture<Task> {
        self.insert(task)
    }

    /// Takes one call token from the bucket kept under `key` (`burst` tokens at most, `per_second`
    /// gained a second): whether one was there, and the tokens left. `None` for a store that is
    /// not shared by replicas: then each host keeps its buckets in memory.
    fn take_token(&self, _key: &str, _per_second: f64, _burst: u32) -> Option<StoreFuture<(bool, f64)>> {
        None
    }

    /// Up to `limit` of `owner`'s tasks with `seq` above `after`, in `seq` order.
    fn list(&self, owner: &str, after: i64, limit: usize) -> StoreFuture<Vec<Task>>;

    /// Moves a task to a non-terminal status; returns the row as written, or `None` when the
    /// move is not allowed (e.g. the task already ended).
    fn set_status(&self, id: &str, status: TaskStatus, message: Option<&str>) -> StoreFuture<Option<Task>>;

    /// Ends a task: its outcome and terminal status in one transaction. Returns the row as
    /// written, or `None` when the task had already ended (a cancelled task stays cancelled).
    fn finish(&self, id: &str, status: TaskStatus, message: Option<&str>, outcome: &Outcome) -> StoreFuture<Option<Task>>;

    /// The outcome of an ended task.
    fn outcome(&self, id: &str) -> StoreFuture<Option<Outcome>>;

    /// The task, if `owner` owns it, with its outcome once it has ended: one read where the
    /// store can join them (what a poll of a finished task costs).
    fn get_with_outcome(&self, owner: &str, id: &str) -> StoreFuture<Option<(Task, Option<Outcome>)>>;

    /// The task `owner` created with this idempotency key, if it is still kept.
    fn find_by_key(&self, owner: &str, key: &str) -> StoreFuture<Option<Task>>;

    /// Tasks that are `working` or `input_required`, in `seq` order.
    fn unfinished(&self) -> StoreFuture<Vec<Task>>;

    /// Moves an unfinished task from the dead host `from` to `to`, fenced on `from`: returns
    /// the claimed row, or `None` when another host claimed it first or it has ended.
    fn claim(&self, id: &str, from: &str, to: &str) -> StoreFuture<Option<Task>>;

    /// A worker of host `runner` takes `owner`'s task `id`: records that it started (so a
    /// crash from here on interrupts it) and returns the row, or `None` when the task ended,
    /// went or now belongs to another host.
    fn start(&self, owner: &str, id: &str, runner: &str) -> StoreFuture<Option<Task>>;

    /// Whether a worker ever took the task ([`TaskStore::start`]). A task that was only
    /// admitted has done nothing yet, so recovery may always run it.
    fn started(&self, id: &str) -> StoreFuture<bool>;

    /// [`TaskStore::set_status`] for the host that runs the task: nothing is written unless
    /// `runner` still holds it, so a host that lost its tasks to another writes nothing.
    fn set_status_as(&self, id: &str, runner: &str, status: TaskStatus, message: Option<&str>) -> StoreFuture<Option<Task>>;

    /// [`TaskStore::finish`] fenced on `runner` like [`TaskStore::set_status_as`]. (A cancel
    /// uses `finish`: any host may cancel any task.)
    fn finish_as(&self, id: &str, runner: &str, status: TaskStatus, message: Option<&str>, outcome: &Outcome) -> StoreFuture<Option<Task>>;

    /// Claims for host `to` the unfinished tasks of hosts the store itself knows to be dead
    /// (PostgreSQL: a heartbeat older than the host expiry). A store whose hosts are told
    /// alive by [`Runners`](super::Runners) (SQLite: lock files) claims nothing here.
    fn claim_orphans(&self, to: &str) -> StoreFuture<Vec<Task>> {
        let _ = to;
        Box::pin(async { Ok(Vec::new()) })
    }

    /// Claims for host `to`, which has `limit` idle workers, up to `limit` tasks that other
    /// live hosts admitted but no worker of theirs has started within `waited_ms` of being
    /// created (their workers are busy), fenced like a recovery claim: the admitting host's
    /// worker then finds the task no longer its own and skips it. A store that one machine
    /// serves claims nothing: each host runs what it admitted.
    fn claim_waiting(&self, to: &str, limit: usize, waited_ms: i64) -> StoreFuture<Vec<Task>> {
        let _ = (to, limit, waited_ms);
        Box::pin(async { Ok(Vec::new()) })
    }

    /// Passes `progress` of task `id`, which host `runner` runs, on to the other hosts
    /// ([`StoreEvent::Progress`]), so the one whose session created the task can tell it. Fire
    /// and forget: progress is advisory, a lost report is followed by the next one. A store
    /// that one machine serves passes nothing: there a task runs on the host that admitted it
    /// (or, after a crash, on one whose sessions never knew it).
    fn publish_progress(&self, id: &str, runner: &str, progress: Progress) {
        let _ = (id, runner, progress);
    }

    /// Changes written by any host, as they commit, for a store that several hosts share over
    /// the network (PostgreSQL `LISTEN`). `None`: the store tells nothing, and a host waiting on
    /// a task another host runs has to poll.
    fn subscribe(&self) -> Option<tokio::sync::broadcast::Receiver<StoreEvent>> {
        None
    }

    /// Deletes tasks (and their outcomes) whose TTL has passed at `now_ms`; returns how many.
    fn purge_expired(&self, now_ms: i64) -> StoreFuture<usize>;

    /// Stores `state` as the task's checkpoint, replacing the previous one, with `message` as
    /// its `statusMessage` (the progress it stands for) in the same transaction; fenced on
    /// `runner` like [`TaskStore::set_status_as`]. Returns the checkpoint's number (1 for the
    /// first), or `None` when the task ended or belongs to another host.
    fn checkpoint(&self, id: &str, runner: &str, state: Vec<u8>, message: Option<&str>) -> StoreFuture<Option<u64>>;

    /// The task's last checkpoint and its number, if it has one.
    fn checkpoint_state(&self, id: &str) -> StoreFuture<Option<(u64, Vec<u8>)>>;

    /// Keeps `parts` of the large result `id` for `owner` in pages ([`super::blobs::pages`]),
    /// all in one transaction, until `expires_at` (ms since the epoch; `None`: until deleted).
    /// [`TaskStore::purge_expired`] deletes them when they expire. A keep that would pass either
    /// bound of `quota` (counted over what is stored, on every host of a shared store, the
    /// result's own earlier version left out) keeps nothing and fails with
    /// [`StoreError::OverQuota`].
    fn keep_result(&self, owner: &str, id: &str, expires_at: Option<i64>, parts: Vec<ResultPart>, quota: ResultQuota) -> StoreFuture<()>;

    /// The bytes of every kept result now stored, by every owner, as the quota counts them.
    fn result_bytes_kept(&self) -> StoreFuture<u64>;

    /// Page `page` of part `part` of the kept result `id`, when `owner` owns it and it has not
    /// expired at `now_ms`; `None` otherwise (whoever asks learns nothing of others' results).
    fn result_page(&self, owner: &str, id: &str, part: u32, page: u32, now_ms: i64) -> StoreFuture<Option<ResultPage>>;

    /// Keeps `questions` (key, request) as what task `id` now waits for, beside those it waits
    /// for already (keys are unique over a task's life). Deleted with the task.
    fn keep_questions(&self, id: &str, questions: Vec<(String, serde_json::Value)>) -> StoreFuture<()>;

    /// Task `id`'s kept questions, in the order they were asked.
    fn questions(&self, id: &str) -> StoreFuture<Vec<TaskQuestion>>;

    /// Records `answers` (key, answer) for those of task `id`'s questions that have none yet;
    /// other keys are ignored. Returns the keys recorded. A store several hosts share over the
    /// network tells them ([`StoreEvent::Answered`]).
    fn answer_questions(&self, id: &str, answers: Vec<(String, serde_json::Value)>) -> StoreFuture<Vec<String>>;

    /// Forgets task `id`'s questions `keys` (their answers were read, or the guest stopped
    /// waiting).
    fn drop_questions(&self, id: &str, keys: Vec<String>) -> StoreFuture<()>;

    /// An operator's list: the tasks of every owner that pass `filter`, newest first, the page
    /// after `after` (the previous page's [`TaskPage::next`]), at most `limit` of them (and never
    /// more than [`MAX_PAGE`](super::operator::MAX_PAGE)). Expired tasks not yet purged are
    /// listed: they are still in the store.
    fn list_all(&self, filter: &TaskFilter, after: Option<TaskCursor>, limit: usize) -> StoreFuture<TaskPage>;

    /// Everything the store knows of task `id`, whoever owns it (an operator's view).
    fn inspect(&self, id: &str) -> StoreFuture<Option<TaskDetail>>;

    /// Cancels task `id` for whoever asks from outside its host (an operator, another
    /// replica): stored `cancelled` with `message`, unfenced, and made known to the host that
    /// runs it, which stops its guest: a shared store announces it (PostgreSQL `NOTIFY`), and a
    /// store that announces nothing leaves a notice its hosts look for
    /// ([`TaskStore::cancels_after`]). `None` when the task had already ended (or is unknown).
    fn cancel(&self, id: &str, message: &str) -> StoreFuture<Option<Task>> {
        self.finish(id, TaskStatus::Cancelled, Some(message), &Outcome::Cancelled)
    }

    /// For a store that announces nothing ([`TaskStore::subscribe`] is `None`) but that other
    /// processes write (a SQLite file shared by hosts and `corral tasks`): the ids of tasks
    /// cancelled by [`TaskStore::cancel`] (or the unfenced [`TaskStore::finish`]) whose notice
    /// comes after notice `after`, and the newest notice's number, to ask from next time.
    /// `after: None` asks only for that number. A store that announces, or is private to one
    /// process, has no notices: `(0, [])`.
    fn cancels_after(&self, after: Option<i64>) -> StoreFuture<(i64, Vec<String>)> {
        let _ = after;
        Box::pin(async { Ok((0, Vec::new())) })
    }

    /// Deletes each of the named tasks that has ended, with its outcome, its questions and the
    /// result kept under its id, all in one transaction; a task that has not ended is left as
    /// it is (an operator cancels it first). Says what it did to each, in the order given.
    fn purge_tasks(&self, ids: Vec<String>) -> StoreFuture<Vec<(String, Purged)>>;

    /// Tasks per status, for metrics and tests.
    fn count_by_status(&self) -> StoreFuture<Vec<(TaskStatus, u64)>>;

    /// The replicas sharing the store, with their heartbeats' age and the unfinished tasks each
    /// holds; `None` for a store one machine's hosts share (SQLite), which keeps no such rows.
    fn replicas(&self) -> StoreFuture<Option<Vec<Replica>>> {
        Box::pin(std::future::ready(Ok(None)))
    }

    /// One cheap round trip: answers when the store does (readiness checks). A store in
    /// this process's memory is always there.
    fn ping(&self) -> StoreFuture<()> {
        Box::pin(async { Ok(()) })
    }

    /// The caller secrets kept in the same database ([`crate::secrets`]), for every store that
    /// keeps them (both real ones do).
    fn secret_rows(self: Arc<Self>) -> Option<Arc<dyn crate::secrets::SecretRows>> {
        None
    }

    /// Stops the store: what was submitted before is answered, later calls fail with
    /// [`StoreError::Closed`], and the store's threads (or connections) are gone when this
    /// resolves.
    fn close(&self) -> BoxFuture<'static, ()>;
}
