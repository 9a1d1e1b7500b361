//! The task store on embedded SQLite, in WAL mode, with group commit.
//!
//! One thread owns the writing connection. Callers hand it operations over a channel; it runs
//! every operation waiting at that moment inside one transaction (each in its own savepoint, so
//! one failure spoils nothing else) and commits once, then answers each caller over its own
//! `oneshot`. Under load many admissions share one commit, which is how thousands of durable
//! admissions per second fit in the time of a few syncs.
//!
//! Reads of a file database go to a second, read-only connection on a thread of its own: WAL
//! lets it read the last commit while the writer writes the next, so `tasks/get` polls never
//! wait behind a write batch. An in-memory database is private to its connection, so there
//! reads join the writer's batches.
//!
//! Callers never block: they `await` a slot in a bounded channel (async back-pressure) and
//! then their answer. Only the store's own threads block, on `blocking_recv`.

use std::path::Path;
use std::sync::{mpsc as std_mpsc, Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use futures_util::future::BoxFuture;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use super::blobs::{ResultPage, ResultPart, ResultQuota};
use super::model::{Outcome, Task, TaskStatus};
use super::operator::{Purged, TaskCursor, TaskDetail, TaskFilter, TaskPage};
use super::sqlite_rows::{read_task, AFTER_COLUMNS, COLUMNS};
use super::store::{StoreError, StoreFuture, StoreResult, TaskQuestion, TaskStore};

/// How hard a commit tries to reach the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Survives the host process dying (`kill -9`), not the machine losing power.
    Process,
    /// Survives power loss: every commit waits for fsync.
    Power,
}

const SCHEMA_VERSION: i64 = 12;
/// Cancel notices older than this are deleted by the purge: every host looks far more often.
const NOTICE_KEEP_MS: i64 = 10 * 60 * 1000;
/// Operations per transaction at most, so one commit's answers are not held back for long.
const MAX_BATCH: usize = 512;
/// Operations waiting for a thread at most; a caller beyond it waits (asynchronously) for a
/// slot. The engine's own bound on admissions is `max_queued`, far below this under load.
const CHANNEL_BOUND: usize = 4096;
/// How often the WAL is copied back into the database file.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// WAL frames (pages) past which the checkpointer truncates the log: 16 MiB of 4 KiB pages.
const WAL_TRUNCATE_FRAMES: i64 = 4096;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS tasks (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    status TEXT NOT NULL,
    status_message TEXT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    ttl_ms INTEGER,
    expires_at INTEGER,
    poll_interval_ms INTEGER NOT NULL,
    progress_token TEXT,
    idempotency_key TEXT,
    runner TEXT NOT NULL,
    started_at INTEGER,
    attempts INTEGER NOT NULL DEFAULT 0,
    checkpoint_seq INTEGER NOT NULL DEFAULT 0,
    checkpoint BLOB,
    resumed_from INTEGER NOT NULL DEFAULT 0,
    client_capabilities TEXT,
    plugin TEXT,
    checkpointed_at INTEGER,
    trace_context TEXT
);
CREATE INDEX IF NOT EXISTS tasks_by_owner ON tasks(owner, seq);
CREATE UNIQUE INDEX IF NOT EXISTS tasks_by_key ON tasks(owner, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS tasks_by_expiry ON tasks(expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS tasks_unfinished ON tasks(status) WHERE status IN ('working', 'input_required');
-- Outcomes can be large; they live apart so the task rows that polling reads stay small.
-- `kind` says which outcome it is (`model::OutcomeKind`) and `failure` names a host-imposed
-- failure's kind, so readers need not look into `body`.
CREATE TABLE IF NOT EXISTS outcomes (
    task_id TEXT PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
    body TEXT NOT NULL,
    kind TEXT,
    failure TEXT
);
-- Cancels written from outside the task's host (`corral tasks cancel`, another host): SQLite
-- has no NOTIFY, so each host reads the notices after the last it saw (`cancels_after`).
CREATE TABLE IF NOT EXISTS task_notices (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL,
    at INTEGER NOT NULL
);
";

/// What a write batch's commit came to, told to every operation of the batch.
type Commit = Result<(), Arc<rusqlite::Error>>;
/// Answers one caller once its batch has committed (or not).
type Deliver = Box<dyn FnOnce(&Commit) + Send>;
/// A write: runs inside the batch's transaction (or is told the transaction could not begin).
type WriteOp = Box<dyn FnOnce(Result<&mut Transaction, &Arc<rusqlite::Error>>) -> Deliver + Send>;
/// A read on the read-only connection; answers its caller itself.
type ReadOp = Box<dyn FnOnce(&Connection) + Send>;

/// What a store thread is sent: work, or the order to stop once what came before is done.
enum Msg<Op> {
    Run(Op),
    Stop,
}

/// The task store on one SQLite database; see the module doc.
pub struct SqliteStore {
    /// To the writer thread; bounded by [`CHANNEL_BOUND`].
    writes: mpsc::Sender<Msg<WriteOp>>,
    /// To the reader thread of a file database (bounded by [`CHANNEL_BOUND`]); `None` for
    /// `:memory:`, whose reads go to the writer.
    reads: Option<mpsc::Sender<Msg<ReadOp>>>,
    /// Dropping it stops the checkpointer (it waits on the receiver between checkpoints).
    checkpoint_stop: Mutex<Option<std_mpsc::Sender<()>>>,
    /// The store's threads, joined when it is closed or dropped.
    threads: Mutex<Vec<JoinHandle<()>>>,
}

impl SqliteStore {
    /// Opens (or creates) the database at `path`; `:memory:` keeps tasks for this process only.
    /// A file that is not a corral task database is an error naming the file, never reset.
    pub fn open(path: &Path, durability: Durability) -> StoreResult<SqliteStore> {
        let shown = path.display().to_string();
        let in_memory = path == Path::new(":memory:");
        let io = |source| StoreError::Io { path: shown.clone(), source };
        if !in_memory {
            create_owner_only(path).map_err(io)?;
        }
        let open = |source| StoreError::Open { path: shown.clone(), source };
        let conn = Connection::open(path).map_err(open)?;
        prepare(&conn, durability).map_err(|source| StoreError::NotTaskDatabase { path: shown.clone(), source })?;
        let mut threads = Vec::new();
        let mut checkpoint_stop = None;
        let mut reads = None;
        if !in_memory {
            let checkpointer = Connection::open(path).map_err(open)?;
            checkpointer.execute_batch("PRAGMA busy_timeout = 5000;").map_err(open)?;
            let (stop, stopped) = std_mpsc::channel();
            threads.push(spawn("corral-checkpoint", move || run_checkpointer(checkpointer, stopped)).map_err(io)?);
            checkpoint_stop = Some(stop);
            let reader = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(open)?;
            reader.execute_batch("PRAGMA busy_timeout = 5000;").map_err(open)?;
            let (sender, queue) = mpsc::channel(CHANNEL_BOUND);
            threads.push(spawn("corral-taskdb-read", move || run_reader(reader, queue)).map_err(io)?);
            reads = Some(sender);
        }
        let (writes, queue) = mpsc::channel(CHANNEL_BOUND);
        threads.push(spawn("corral-taskdb", move || run_writer(conn, queue)).map_err(io)?);
        Ok(SqliteStore { writes, reads, checkpoint_stop: Mutex::new(checkpoint_stop), threads: Mutex::new(threads) })
    }

    /// Opens the task database at `path` for an operator's command (`corral tasks`): never
    /// creates one, and refuses a file that is not corral's before anything is written to it,
    /// so that a mistyped `--db` cannot put corral's schema into another program's database.
    pub fn open_existing(path: &Path, durability: Durability) -> StoreResult<SqliteStore> {
        check_is_task_store(path)?;
        SqliteStore::open(path, durability)
    }

    /// Runs `f` on the writer thread inside the next batch; resolves once the batch committed.
    pub(super) fn write<T: Send + 'static>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static) -> StoreFuture<T> {
        let (reply, answer) = oneshot::channel::<StoreResult<T>>();
        let op: WriteOp = Box::new(move |txn| -> Deliver {
            let txn = match txn {
                Ok(txn) => txn,
                Err(begin) => {
                    let _ = reply.send(Err(StoreError::Batch(begin.clone())));
                    return Box::new(|_| ());
                }
            };
            let result = (|| {
                let savepoint = txn.savepoint()?;
                let value = f(&savepoint)?;
                savepoint.commit()?;
                Ok::<T, rusqlite::Error>(value)
            })();
            Box::new(move |commit| {
                let _ = reply.send(match (result, commit) {
                    (Err(e), _) => Err(StoreError::Sqlite(e)),
                    (Ok(_), Err(e)) => Err(StoreError::Batch(e.clone())),
                    (Ok(v), Ok(())) => Ok(v),
                });
            })
        });
        let writes = self.writes.clone();
        Box::pin(async move {
            writes.send(Msg::Run(op)).await.map_err(|_| StoreError::Closed)?;
            answer.await.map_err(|_| StoreError::Closed)?
        })
    }

    /// Runs `f` on the read-only connection (on the writer's for `:memory:`).
    pub(super) fn read<T: Send + 'static>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static) -> StoreFuture<T> {
        let Some(reads) = &self.reads else { return self.write(f) };
        let (reply, answer) = oneshot::channel::<StoreResult<T>>();
        let op: ReadOp = Box::new(move |conn| {
            let _ = reply.send(f(conn).map_err(StoreError::Sqlite));
        });
        let reads = reads.clone();
        Box::pin(async move {
            reads.send(Msg::Run(op)).await.map_err(|_| StoreError::Closed)?;
            answer.await.map_err(|_| StoreError::Closed)?
        })
    }

    /// Ends a task (outcome and status in one transaction), fenced on `runner` when given.
    fn finish_where(&self, id: &str, runner: Option<&str>, status: TaskStatus, message: Option<&str>, outcome: &Outcome) -> StoreFuture<Option<Task>> {
        debug_assert!(status.is_terminal());
        let (id, runner, message) = (id.to_owned(), runner.map(str::to_owned), message.map(str::to_owned));
        let stored = outcome.stored();
        self.write(move |c| {
            let ended = c
                .prepare_cached(&format!(
                    "UPDATE tasks SET status = ?2, status_message = ?3, updated_at = ?4 WHERE id = ?1 AND (?5 IS NULL OR runner = ?5) AND status IN ('working', 'input_required') RETURNING {COLUMNS}"
                ))?
                .query_row(params![id, status.as_str(), message, now(), runner], read_task)
                .optional()?;
            if ended.is_some() {
                c.execute(
                    "INSERT OR REPLACE INTO outcomes (task_id, body, kind, failure) VALUES (?1, ?2, ?3, ?4)",
                    params![id, stored.body.to_string(), stored.kind.as_str(), stored.failure],
                )?;
                if runner.is_none() && status == TaskStatus::Cancelled {
                    // Whoever runs it may be another process: it finds this notice.
                    c.prepare_cached("INSERT INTO task_notices (task_id, at) VALUES (?1, ?2)")?.execute(params![id, now()])?;
                }
            }
            Ok(ended)
        })
    }

    /// Tells every thread to stop after the work sent before; returns the threads to join.
    fn stop_threads(&self) -> Vec<JoinHandle<()>> {
        // A full channel cannot take `Stop`; the thread then stops when the store (and with it
        // the channel's last sender) is dropped, after the work already queued.
        let _ = self.writes.try_send(Msg::Stop);
        if let Some(reads) = &self.reads {
            let _ = reads.try_send(Msg::Stop);
        }
        self.checkpoint_stop.lock().unwrap().take();
        std::mem::take(&mut *self.threads.lock().unwrap())
    }
}

impl Drop for SqliteStore {
    fn drop(&mut self) {
        let threads = self.stop_threads();
        // Joining waits for the batch in progress. Off a tokio runtime that is fine; on one, a
        // blocking thread waits instead, so a worker never does.
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(move || join(threads))),
            Err(_) => join(threads),
        }
    }
}

fn join(threads: Vec<JoinHandle<()>>) {
    for thread in threads {
        if thread.join().is_err() {
            tracing::error!("a task store thread panicked");
        }
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> std::io::Result<JoinHandle<()>> {
    thread::Builder::new().name(name.into()).spawn(f)
}

/// Creates the database file, and the directories to it that do not exist, for its owner only
/// (0600, 0700): it holds every task's arguments and results. SQLite gives its WAL and shared
/// memory files the database file's mode. An existing file or directory is left as it is.
fn create_owner_only(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(parent)?;
    }
    match std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

/// Whether the file at `path` is a corral task store, read through a read-only connection that
/// creates nothing: a schema version corral wrote (`PRAGMA user_version`, set by every store
/// since the first) and its `tasks` and `outcomes` tables.
fn check_is_task_store(path: &Path) -> StoreResult<()> {
    let refused = |why: String| StoreError::NotCorralStore { path: path.display().to_string(), why };
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX).map_err(|e| refused(e.to_string()))?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(|e| refused(e.to_string()))?;
    let tables: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('tasks', 'outcomes')", [], |r| r.get(0))
        .map_err(|e| refused(e.to_string()))?;
    if version < 1 || tables < 2 {
        return Err(refused(format!("a SQLite database without corral's schema (schema version {version}, {tables} of its 2 main tables)")));
    }
    Ok(())
}

fn prepare(conn: &Connection, durability: Durability) -> rusqlite::Result<()> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version > SCHEMA_VERSION {
        return Err(rusqlite::Error::InvalidParameterName(format!("schema version {version} is newer than this corral understands ({SCHEMA_VERSION})")));
    }
    conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))?;
    let sync = match durability {
        Durability::Process => "NORMAL",
        Durability::Power => "FULL",
    };
    // Checkpoints (which sync the database file) run on their own thread, not in a commit.
    conn.execute_batch(&format!("PRAGMA synchronous = {sync}; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000; PRAGMA wal_autocheckpoint = 0;"))?;
    if version == 1 {
        // Version 2 records which host runs each task, for databases shared by several hosts.
        conn.execute_batch("ALTER TABLE tasks ADD COLUMN runner TEXT NOT NULL DEFAULT ''")?;
    }
    if (1..3).contains(&version) {
        // Version 3 records when a worker took each task: one only admitted may always run
        // after a crash. Tasks of older databases count as started, as they may have been.
        conn.execute_batch("ALTER TABLE tasks ADD COLUMN started_at INTEGER; UPDATE tasks SET started_at = updated_at")?;
    }
    if (1..5).contains(&version) {
        // Version 5 counts each task's attempts and keeps its last checkpoint.
        conn.execute_batch(
            "ALTER TABLE tasks ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0; ALTER TABLE tasks ADD COLUMN checkpoint_seq INTEGER NOT NULL DEFAULT 0; ALTER TABLE tasks ADD COLUMN checkpoint BLOB;",
        )?;
    }
    if (1..7).contains(&version) {
        // Version 7 records the checkpoint each attempt started from.
        conn.execute_batch("ALTER TABLE tasks ADD COLUMN resumed_from INTEGER NOT NULL DEFAULT 0")?;
    }
    if (1..8).contains(&version) {
        // Version 8 keeps what a 2026-07-28 task's client declared, so any host may run it and ask.
        conn.execute_batch("ALTER TABLE tasks ADD COLUMN client_capabilities TEXT")?;
    }
    if (1..9).contains(&version) {
        // Version 9 stores each outcome's kind in columns of its own. Rows of older versions get
        // theirs from their body once, here: a result that carries `_meta["corral/error"]` was
        // a failure the host imposed, which is where earlier versions recorded its kind.
        conn.execute_batch(
            "ALTER TABLE outcomes ADD COLUMN kind TEXT; ALTER TABLE outcomes ADD COLUMN failure TEXT;
             UPDATE outcomes SET
                 failure = CASE WHEN json_valid(body) AND json_type(body) = 'object' THEN json_extract(body, '$.result._meta.\"corral/error\".kind') END,
                 kind = CASE
                     WHEN body = '\"cancelled\"' THEN 'cancelled'
                     WHEN body = '\"interrupted\"' THEN 'interrupted'
                     WHEN NOT json_valid(body) OR json_type(body) <> 'object' THEN NULL
                     WHEN json_type(body, '$.error') IS NOT NULL THEN 'error'
                     WHEN json_extract(body, '$.result._meta.\"corral/error\".kind') IS NOT NULL THEN 'failed'
                     WHEN json_type(body, '$.result') IS NOT NULL THEN 'result'
                 END;",
        )?;
    }
    if (1..10).contains(&version) {
        // Version 10 records each task's plugin and when it last checkpointed, for operators.
        conn.execute_batch("ALTER TABLE tasks ADD COLUMN plugin TEXT; ALTER TABLE tasks ADD COLUMN checkpointed_at INTEGER;")?;
    }
    if (1..11).contains(&version) {
        // Version 11 keeps the trace context of the request that created each task, so that its
        // runs, on any host, continue that trace.
        conn.execute_batch("ALTER TABLE tasks ADD COLUMN trace_context TEXT;")?;
    }
    conn.execute_batch(SCHEMA)?;
    // Version 4 keeps large results by reference, in pages (`sqlite_blobs`).
    conn.execute_batch(super::sqlite_blobs::SCHEMA)?;
    // Version 6 keeps the questions tasks wait on (`sqlite_inputs`).
    conn.execute_batch(super::sqlite_inputs::SCHEMA)?;
    // Version 12 keeps caller secrets, sealed (`sqlite_secrets`).
    conn.execute_batch(super::sqlite_secrets_table::SCHEMA)?;
    conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))?;
    conn.query_row("SELECT count(*) FROM tasks", [], |_| Ok(()))?;
    Ok(())
}

/// Copies the WAL back into the database file every second, beside the writer: a passive
/// checkpoint never blocks commits, so its file sync stays off the admission path. Stops when
/// `stop` is dropped.
fn run_checkpointer(conn: Connection, stop: std_mpsc::Receiver<()>) {
    while let Err(std_mpsc::RecvTimeoutError::Timeout) = stop.recv_timeout(CHECKPOINT_EVERY) {
        if let Err(e) = checkpoint(&conn, WAL_TRUNCATE_FRAMES) {
            tracing::warn!("task store checkpoint failed: {e}");
        }
    }
}

/// One round of the checkpointer. A PASSIVE checkpoint never waits and never shrinks the WAL
/// file, and under a steady stream of commits (a task burst, a soak) there is never a moment
/// with the whole log copied back and no reader on it, so SQLite never restarts the log: the
/// WAL grew to 3.6 GB in ten minutes of soak. Once the log holds `truncate_at` frames, a
/// TRUNCATE checkpoint waits (through `busy_timeout`) for readers to move on, copies the rest and
/// cuts the file to zero; writers wait for it as they would for one slow commit.
fn checkpoint(conn: &Connection, truncate_at: i64) -> rusqlite::Result<()> {
    let frames: i64 = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(1))?;
    if frames >= truncate_at {
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    }
    Ok(())
}

fn run_reader(conn: Connection, mut queue: mpsc::Receiver<Msg<ReadOp>>) {
    while let Some(Msg::Run(op)) = queue.blocking_recv() {
        op(&conn);
    }
}

fn run_writer(mut conn: Connection, mut queue: mpsc::Receiver<Msg<WriteOp>>) {
    let mut stopping = false;
    while !stopping {
        let Some(Msg::Run(first)) = queue.blocking_recv() else { break };
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(Msg::Run(op)) => batch.push(op),
                Ok(Msg::Stop) => {
                    stopping = true;
                    break;
                }
                Err(_) => break,
            }
        }
        let mut txn = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
            Ok(txn) => txn,
            Err(e) => {
                tracing::error!("task store: cannot begin a transaction: {e}");
                let e = Arc::new(e);
                for op in batch {
                    let _answered = op(Err(&e));
                }
                continue;
            }
        };
        let deliveries: Vec<Deliver> = batch.into_iter().map(|op| op(Ok(&mut txn))).collect();
        let commit = txn.commit().map_err(Arc::new);
        if let Err(e) = &commit {
            tracing::error!("task store: commit failed: {e}");
        }
        for deliver in deliveries {
            deliver(&commit);
        }
    }
}

fn now() -> i64 {
    super::model::now_ms()
}

/// Statuses a task may move to `status` from, as a JSON array for `json_each`.
fn allowed_from(status: TaskStatus) -> String {
    let from: Vec<&'static str> = TaskStatus::ALL.iter().filter(|from| from.can_become(status)).map(|s| s.as_str()).collect();
    serde_json::to_string(&from).expect("strings serialize")
}

/// An outcome row as read, before its body is parsed (off the reader thread).
struct RawOutcome {
    body: String,
    kind: Option<String>,
    failure: Option<String>,
}

impl RawOutcome {
    fn outcome(&self, id: &str) -> Result<Outcome, StoreError> {
        Outcome::from_stored(&self.body, self.kind.as_deref(), self.failure.clone()).map_err(|source| StoreError::CorruptOutcome { id: id.to_owned(), source })
    }
}

fn read_outcome(row: &rusqlite::Row<'_>) -> rusqlite::Result<RawOutcome> {
    Ok(RawOutcome { body: row.get(0)?, kind: row.get(1)?, failure: row.get(2)? })
}

impl TaskStore for SqliteStore {
    fn insert(&self, task: Task) -> StoreFuture<Task> {
        self.write(move |c| {
            let seq = c.query_row(
                "INSERT INTO tasks (id, owner, tool, arguments, status, status_message, created_at, updated_at, ttl_ms, expires_at, poll_interval_ms, progress_token, idempotency_key, runner, client_capabilities, started_at, attempts, plugin, trace_context)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19) RETURNING seq",
                params![
                    task.id,
                    task.owner,
                    task.tool,
                    task.arguments.to_string(),
                    task.status.as_str(),
                    task.status_message,
                    task.created_at,
                    task.updated_at,
                    task.ttl_ms,
                    task.expires_at(),
                    task.poll_interval_ms,
                    task.progress_token.as_ref().map(Value::to_string),
                    task.idempotency_key,
                    task.runner,
                    task.client_capabilities.as_ref().map(Value::to_string),
                    task.started.then_some(task.created_at),
                    task.attempts,
                    task.plugin,
                    task.trace_context
                ],
                |r| r.get(0),
            )?;
            Ok(Task { seq, ..task })
        })
    }

    fn get(&self, owner: &str, id: &str) -> StoreFuture<Option<Task>> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        self.read(move |c| {
            c.prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1 AND owner = ?2"))?.query_row(params![id, owner], read_task).optional()
        })
    }

    fn owner_of(&self, id: &str) -> StoreFuture<Option<String>> {
        let id = id.to_owned();
        self.read(move |c| c.prepare_cached("SELECT owner FROM tasks WHERE id = ?1")?.query_row(params![id], |row| row.get(0)).optional())
    }

    fn list(&self, owner: &str, after: i64, limit: usize) -> StoreFuture<Vec<Task>> {
        let owner = owner.to_owned();
        self.read(move |c| {
            let mut stmt = c.prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE owner = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3"))?;
            let rows = stmt.query_map(params![owner, after, limit as i64], read_task)?;
            rows.collect()
        })
    }

    fn set_status(&self, id: &str, status: TaskStatus, message: Option<&str>) -> StoreFuture<Option<Task>> {
        let (id, message) = (id.to_owned(), message.map(str::to_owned));
        let from = allowed_from(status);
        self.write(move |c| {
            c.prepare_cached(&format!(
                "UPDATE tasks SET status = ?2, status_message = ?3, updated_at = ?4 WHERE id = ?1 AND status IN (SELECT value FROM json_each(?5)) RETURNING {COLUMNS}"
            ))?
            .query_row(params![id, status.as_str(), message, now(), from], read_task)
            .optional()
        })
    }

    fn finish(&self, id: &str, status: TaskStatus, message: Option<&str>, outcome: &Outcome) -> StoreFuture<Option<Task>> {
        self.finish_where(id, None, status, message, outcome)
    }

    fn outcome(&self, id: &str) -> StoreFuture<Option<Outcome>> {
        let id = id.to_owned();
        let query = id.clone();
        let row = self.read(move |c| c.query_row("SELECT body, kind, failure FROM outcomes WHERE task_id = ?1", params![query], read_outcome).optional());
        Box::pin(async move {
            let Some(row) = row.await? else { return Ok(None) };
            row.outcome(&id).map(Some)
        })
    }

    fn get_with_outcome(&self, owner: &str, id: &str) -> StoreFuture<Option<(Task, Option<Outcome>)>> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        let query = id.clone();
        let row = self.read(move |c| {
            c.prepare_cached(&format!(
                "SELECT {COLUMNS}, o.body, o.kind, o.failure FROM tasks LEFT JOIN outcomes o ON o.task_id = tasks.id WHERE tasks.id = ?1 AND tasks.owner = ?2"
            ))?
            .query_row(params![query, owner], |r| {
                let task = read_task(r)?;
                let body: Option<String> = r.get(AFTER_COLUMNS)?;
                let outcome = body
                    .map(|body| Ok::<_, rusqlite::Error>(RawOutcome { body, kind: r.get(AFTER_COLUMNS + 1)?, failure: r.get(AFTER_COLUMNS + 2)? }))
                    .transpose()?;
                Ok((task, outcome))
            })
            .optional()
        });
        Box::pin(async move {
            let Some((task, outcome)) = row.await? else { return Ok(None) };
            let outcome = outcome.map(|o| o.outcome(&id)).transpose()?;
            Ok(Some((task, outcome)))
        })
    }

    fn find_by_key(&self, owner: &str, key: &str) -> StoreFuture<Option<Task>> {
        let (owner, key) = (owner.to_owned(), key.to_owned());
        self.read(move |c| {
            c.query_row(&format!("SELECT {COLUMNS} FROM tasks WHERE owner = ?1 AND idempotency_key = ?2"), params![owner, key], read_task).optional()
        })
    }

    fn unfinished(&self) -> StoreFuture<Vec<Task>> {
        self.read(|c| {
            let mut stmt = c.prepare(&format!("SELECT {COLUMNS} FROM tasks WHERE status IN ('working', 'input_required') ORDER BY seq"))?;
            let rows = stmt.query_map([], read_task)?;
            rows.collect()
        })
    }

    fn claim(&self, id: &str, from: &str, to: &str) -> StoreFuture<Option<Task>> {
        let (id, from, to) = (id.to_owned(), from.to_owned(), to.to_owned());
        self.write(move |c| {
            c.query_row(
                &format!("UPDATE tasks SET runner = ?3 WHERE id = ?1 AND runner = ?2 AND status IN ('working', 'input_required') RETURNING {COLUMNS}"),
                params![id, from, to],
                read_task,
            )
            .optional()
        })
    }

    fn start(&self, owner: &str, id: &str, runner: &str) -> StoreFuture<Option<Task>> {
        let (owner, id, runner) = (owner.to_owned(), id.to_owned(), runner.to_owned());
        self.write(move |c| {
            c.prepare_cached(&format!(
                "UPDATE tasks SET started_at = coalesce(started_at, ?4), attempts = attempts + 1, resumed_from = checkpoint_seq WHERE id = ?1 AND owner = ?2 AND runner = ?3 AND status IN ('working', 'input_required') RETURNING {COLUMNS}"
            ))?
            .query_row(params![id, owner, runner, now()], read_task)
            .optional()
        })
    }

    fn started(&self, id: &str) -> StoreFuture<bool> {
        let id = id.to_owned();
        self.read(move |c| {
            let started: Option<Option<i64>> = c.query_row("SELECT started_at FROM tasks WHERE id = ?1", params![id], |r| r.get(0)).optional()?;
            Ok(started.flatten().is_some())
        })
    }

    fn set_status_as(&self, id: &str, runner: &str, status: TaskStatus, message: Option<&str>) -> StoreFuture<Option<Task>> {
        let (id, runner, message) = (id.to_owned(), runner.to_owned(), message.map(str::to_owned));
        let from = allowed_from(status);
        self.write(move |c| {
            c.prepare_cached(&format!(
                "UPDATE tasks SET status = ?2, status_message = ?3, updated_at = ?4 WHERE id = ?1 AND runner = ?6 AND status IN (SELECT value FROM json_each(?5)) RETURNING {COLUMNS}"
            ))?
            .query_row(params![id, status.as_str(), message, now(), from, runner], read_task)
            .optional()
        })
    }

    fn finish_as(&self, id: &str, runner: &str, status: TaskStatus, message: Option<&str>, outcome: &Outcome) -> StoreFuture<Option<Task>> {
        self.finish_where(id, Some(runner), status, message, outcome)
    }

    fn purge_expired(&self, now_ms: i64) -> StoreFuture<usize> {
        // Outcomes go with their tasks (ON DELETE CASCADE); kept results expire with them.
        self.write(move |c| {
            super::sqlite_blobs::purge(c, now_ms)?;
            c.execute("DELETE FROM task_notices WHERE at < ?1", params![now_ms - NOTICE_KEEP_MS])?;
            c.execute("DELETE FROM tasks WHERE expires_at IS NOT NULL AND expires_at <= ?1", params![now_ms])
        })
    }

    fn checkpoint(&self, id: &str, runner: &str, state: Vec<u8>, message: Option<&str>) -> StoreFuture<Option<u64>> {
        let (id, runner, message) = (id.to_owned(), runner.to_owned(), message.map(str::to_owned));
        self.write(move |c| {
            c.prepare_cached(
                "UPDATE tasks SET checkpoint = ?3, checkpoint_seq = checkpoint_seq + 1, status_message = coalesce(?4, status_message), updated_at = ?5, checkpointed_at = ?5
                 WHERE id = ?1 AND runner = ?2 AND status IN ('working', 'input_required') RETURNING checkpoint_seq",
            )?
            .query_row(params![id, runner, state, message, now()], |r| r.get::<_, i64>(0))
            .optional()
            .map(|seq| seq.map(|s| s as u64))
        })
    }

    fn checkpoint_state(&self, id: &str) -> StoreFuture<Option<(u64, Vec<u8>)>> {
        let id = id.to_owned();
        self.read(move |c| {
            let row: Option<(i64, Option<Vec<u8>>)> =
                c.query_row("SELECT checkpoint_seq, checkpoint FROM tasks WHERE id = ?1", params![id], |r| Ok((r.get(0)?, r.get(1)?))).optional()?;
            Ok(row.and_then(|(seq, state)| Some((seq as u64, state?))))
        })
    }

    fn keep_questions(&self, id: &str, questions: Vec<(String, Value)>) -> StoreFuture<()> {
        let id = id.to_owned();
        self.write(move |c| super::sqlite_inputs::keep(c, &id, &questions))
    }

    fn questions(&self, id: &str) -> StoreFuture<Vec<TaskQuestion>> {
        let id = id.to_owned();
        self.read(move |c| super::sqlite_inputs::questions(c, &id))
    }

    fn answer_questions(&self, id: &str, answers: Vec<(String, Value)>) -> StoreFuture<Vec<String>> {
        let id = id.to_owned();
        self.write(move |c| super::sqlite_inputs::answer(c, &id, &answers))
    }

    fn drop_questions(&self, id: &str, keys: Vec<String>) -> StoreFuture<()> {
        let id = id.to_owned();
        self.write(move |c| super::sqlite_inputs::forget(c, &id, &keys))
    }

    fn keep_result(&self, owner: &str, id: &str, expires_at: Option<i64>, parts: Vec<ResultPart>, quota: ResultQuota) -> StoreFuture<()> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        let kept = self.write(move |c| super::sqlite_blobs::keep(c, &owner, &id, expires_at, &parts, quota));
        Box::pin(async move { kept.await? })
    }

    fn result_bytes_kept(&self) -> StoreFuture<u64> {
        self.read(super::sqlite_blobs::kept)
    }

    fn result_page(&self, owner: &str, id: &str, part: u32, page: u32, now_ms: i64) -> StoreFuture<Option<ResultPage>> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        self.read(move |c| super::sqlite_blobs::page(c, &owner, &id, part, page, now_ms))
    }

    fn ping(&self) -> StoreFuture<()> {
        self.read(|c| c.query_row("SELECT 1", [], |_| Ok(())))
    }

    fn list_all(&self, filter: &TaskFilter, after: Option<TaskCursor>, limit: usize) -> StoreFuture<TaskPage> {
        let filter = filter.clone();
        self.read(move |c| super::sqlite_operator::list_all(c, &filter, after, limit))
    }

    fn inspect(&self, id: &str) -> StoreFuture<Option<TaskDetail>> {
        let id = id.to_owned();
        self.read(move |c| super::sqlite_operator::inspect(c, &id))
    }

    fn cancels_after(&self, after: Option<i64>) -> StoreFuture<(i64, Vec<String>)> {
        self.read(move |c| super::sqlite_operator::cancels_after(c, after))
    }

    fn purge_tasks(&self, ids: Vec<String>) -> StoreFuture<Vec<(String, Purged)>> {
        self.write(move |c| super::sqlite_operator::purge(c, &ids))
    }

    fn count_by_status(&self) -> StoreFuture<Vec<(TaskStatus, u64)>> {
        self.read(|c| {
            let mut stmt = c.prepare_cached("SELECT status, count(*) FROM tasks GROUP BY status")?;
            let rows = stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?;
            let mut counts = Vec::new();
            for row in rows {
                let (status, n) = row?;
                if let Some(s) = TaskStatus::parse(&status) {
                    counts.push((s, n as u64));
                }
            }
            Ok(counts)
        })
    }

    fn secret_rows(self: Arc<Self>) -> Option<Arc<dyn crate::secrets::SecretRows>> {
        Some(self)
    }

    fn close(&self) -> BoxFuture<'static, ()> {
        let writes = self.writes.clone();
        let reads = self.reads.clone();
        self.checkpoint_stop.lock().unwrap().take();
        let threads = std::mem::take(&mut *self.threads.lock().unwrap());
        Box::pin(async move {
            // Sent with back-pressure, so `Stop` comes after everything submitted before.
            let _ = writes.send(Msg::Stop).await;
            if let Some(reads) = reads {
                let _ = reads.send(Msg::Stop).await;
            }
            let _ = tokio::task::spawn_blocking(move || join(threads)).await;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::OutcomeKind;

    crate::tasks::store_suite::store_suite!(memory, || (SqliteStore::open(Path::new(":memory:"), Durability::Process).unwrap(), ()));

    crate::tasks::store_suite::store_suite!(file, || {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("tasks.db"), Durability::Process).unwrap();
        (store, dir)
    });

    #[tokio::test]
    async fn reads_of_a_file_database_do_not_wait_behind_a_write_batch() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("tasks.db"), Durability::Process).unwrap();
        store.insert(crate::tasks::store_suite::task("t", "o", "h")).await.unwrap();
        let slow = tokio::spawn(store.write(|_| {
            std::thread::sleep(Duration::from_millis(600));
            Ok(())
        }));
        tokio::time::sleep(Duration::from_millis(50)).await;
        let asked = std::time::Instant::now();
        assert!(store.get("o", "t").await.unwrap().is_some());
        assert!(asked.elapsed() < Duration::from_millis(300), "the read waited for the writer: {:?}", asked.elapsed());
        slow.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn a_closed_store_refuses_work_and_its_threads_are_gone() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(&dir.path().join("tasks.db"), Durability::Process).unwrap();
        store.close().await;
        assert!(store.threads.lock().unwrap().is_empty());
        assert!(matches!(store.count_by_status().await, Err(StoreError::Closed)));
        assert!(matches!(store.purge_expired(0).await, Err(StoreError::Closed)));
    }

    #[tokio::test]
    async fn outcomes_of_a_version_8_database_get_their_kinds_in_columns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.db");
        SqliteStore::open(&path, Durability::Process).unwrap().close().await;
        let conn = Connection::open(&path).unwrap();
        // Back to version 8, with one outcome of each shape it wrote.
        conn.execute_batch(
            "ALTER TABLE outcomes DROP COLUMN kind; ALTER TABLE outcomes DROP COLUMN failure; PRAGMA user_version = 8;
             ALTER TABLE tasks DROP COLUMN plugin; ALTER TABLE tasks DROP COLUMN checkpointed_at; ALTER TABLE tasks DROP COLUMN trace_context; DROP TABLE task_notices;
             INSERT INTO tasks (id, owner, tool, arguments, status, created_at, updated_at, poll_interval_ms, runner) VALUES
               ('ok', 'o', 't', '{}', 'completed', 0, 0, 1000, ''), ('limit', 'o', 't', '{}', 'failed', 0, 0, 1000, ''),
               ('err', 'o', 't', '{}', 'failed', 0, 0, 1000, ''), ('gone', 'o', 't', '{}', 'cancelled', 0, 0, 1000, ''),
               ('cut', 'o', 't', '{}', 'failed', 0, 0, 1000, '');
             INSERT INTO outcomes (task_id, body) VALUES
               ('ok', '{\"result\":{\"content\":[],\"isError\":true}}'),
               ('limit', '{\"result\":{\"content\":[],\"isError\":true,\"_meta\":{\"corral/error\":{\"kind\":\"fuel-exhausted\"}}}}'),
               ('err', '{\"error\":{\"code\":-32602,\"message\":\"m\"}}'), ('gone', '\"cancelled\"'), ('cut', '\"interrupted\"');",
        )
        .unwrap();
        drop(conn);
        let store = SqliteStore::open(&path, Durability::Process).unwrap();
        let kind = |id: &'static str| {
            let store = &store;
            async move { store.outcome(id).await.unwrap().unwrap().kind() }
        };
        assert_eq!(kind("ok").await, OutcomeKind::Result, "a tool's own error result stays the tool's");
        let limit = store.outcome("limit").await.unwrap().unwrap();
        assert!(matches!(&limit, Outcome::Failed { kind, .. } if kind == "fuel-exhausted"), "{limit:?}");
        assert_eq!(kind("err").await, OutcomeKind::Error);
        assert_eq!(kind("gone").await, OutcomeKind::Cancelled);
        assert_eq!(kind("cut").await, OutcomeKind::Interrupted);
        let old = store.inspect("ok").await.unwrap().unwrap();
        assert_eq!((old.task.plugin, old.checkpointed_at), (None, None), "rows from before version 10 have no plugin nor checkpoint time");
    }

    #[tokio::test]
    async fn an_old_outcome_reads_and_a_corrupt_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.db");
        let store = SqliteStore::open(&path, Durability::Process).unwrap();
        store.close().await;
        drop(store);
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "INSERT INTO tasks (id, owner, tool, arguments, status, created_at, updated_at, poll_interval_ms, runner) VALUES
               ('old', 'o', 't', '{}', 'completed', 0, 0, 1000, ''), ('bad', 'o', 't', '{}', 'completed', 0, 0, 1000, '');
             INSERT INTO outcomes (task_id, body) VALUES ('old', '{\"result\":{\"content\":[]}}'), ('bad', 'not json');",
        )
        .unwrap();
        drop(conn);
        let store = SqliteStore::open(&path, Durability::Process).unwrap();
        assert_eq!(store.outcome("old").await.unwrap(), Some(Outcome::Result(serde_json::json!({ "content": [] }))));
        let bad = store.outcome("bad").await.unwrap_err();
        assert!(matches!(bad, StoreError::CorruptOutcome { .. }), "{bad:?}");
        assert!(bad.to_string().contains("outcome of task bad is not valid"), "{bad}");
    }

    #[test]
    fn a_file_that_is_not_a_task_database_is_named_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, "not a database, just notes").unwrap();
        let e = SqliteStore::open(&path, Durability::Process).err().expect("refused");
        assert!(matches!(e, StoreError::NotTaskDatabase { .. }), "{e:?}");
        assert!(e.to_string().contains("is it a corral task database?"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not a database, just notes");
    }

    #[tokio::test]
    async fn a_new_store_and_its_directories_are_for_their_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/corral/tasks.db");
        let store = SqliteStore::open(&path, Durability::Process).unwrap();
        store.insert(crate::tasks::store_suite::task("t1", "o", "h")).await.unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600, "the database");
        for file in ["tasks.db-wal", "tasks.db-shm"] {
            let beside = path.with_file_name(file);
            assert_eq!(mode(&beside), 0o600, "{file} takes the database's mode");
        }
        assert_eq!(mode(&dir.path().join("state/corral")), 0o700);
        assert_eq!(mode(&dir.path().join("state")), 0o700);
        store.close().await;
        // An existing file keeps the mode its owner gave it.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        SqliteStore::open(&path, Durability::Process).unwrap().close().await;
        assert_eq!(mode(&path), 0o640);
    }

    #[tokio::test]
    async fn a_long_write_ahead_log_is_truncated_by_the_checkpointer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tasks.db");
        let store = SqliteStore::open(&path, Durability::Process).unwrap();
        for i in 0..50 {
            store.insert(crate::tasks::store_suite::task(&format!("t{i}"), "o", "h")).await.unwrap();
        }
        let wal = dir.path().join("tasks.db-wal");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA busy_timeout = 5000;").unwrap();
        checkpoint(&conn, i64::MAX).unwrap();
        assert!(std::fs::metadata(&wal).unwrap().len() > 0, "a passive checkpoint keeps the log file");
        checkpoint(&conn, 1).unwrap();
        assert_eq!(std::fs::metadata(&wal).unwrap().len(), 0, "past the bound the log is cut to nothing");
        assert_eq!(store.list("o", 0, 100).await.unwrap().len(), 50, "nothing was lost");
    }
}
