//! The task store on embedded SQLite, in WAL mode, with group commit.
//!
//! One thread owns the connection. Callers hand it operations over a channel; it runs every
//! operation waiting at that moment inside one transaction (each in its own savepoint, so one
//! failure spoils nothing else) and commits once, then answers each caller. Under load many
//! admissions share one commit, which is how thousands of durable admissions per second fit
//! in the time of a few syncs.

use std::path::Path;
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Mutex;
use std::thread;

use rusqlite::{params, Connection, OptionalExtension, Row, TransactionBehavior};
use serde_json::Value;

use super::model::{Outcome, Task, TaskStatus};
use super::store::{StoreError, StoreResult, TaskStore};

/// How hard a commit tries to reach the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Survives the host process dying (`kill -9`), not the machine losing power.
    Process,
    /// Survives power loss: every commit waits for fsync.
    Power,
}

const SCHEMA_VERSION: i64 = 2;
const MAX_BATCH: usize = 512;

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
    runner TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_by_owner ON tasks(owner, seq);
CREATE UNIQUE INDEX IF NOT EXISTS tasks_by_key ON tasks(owner, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX IF NOT EXISTS tasks_by_expiry ON tasks(expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS tasks_unfinished ON tasks(status) WHERE status IN ('working', 'input_required');
-- Outcomes can be large; they live apart so the task rows that polling reads stay small.
CREATE TABLE IF NOT EXISTS outcomes (
    task_id TEXT PRIMARY KEY REFERENCES tasks(id) ON DELETE CASCADE,
    body TEXT NOT NULL
);
";

const COLUMNS: &str =
    "seq, id, owner, tool, arguments, status, status_message, created_at, updated_at, ttl_ms, poll_interval_ms, progress_token, idempotency_key, runner";

type Deliver = Box<dyn FnOnce(Result<(), String>) + Send>;
type Op = Box<dyn FnOnce(&mut rusqlite::Transaction) -> Deliver + Send>;

pub struct SqliteStore {
    ops: Mutex<SyncSender<Op>>,
}

impl SqliteStore {
    /// Opens (or creates) the database at `path`; `:memory:` keeps tasks for this process only.
    /// A file that is not a corral task database is an error naming the file, never reset.
    pub fn open(path: &Path, durability: Durability) -> StoreResult<SqliteStore> {
        let shown = path.display().to_string();
        let fail = |e: &dyn std::fmt::Display| StoreError::Open { path: shown.clone(), message: e.to_string() };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty() && path != Path::new(":memory:")) {
            std::fs::create_dir_all(parent).map_err(|e| fail(&e))?;
        }
        let conn = Connection::open(path).map_err(|e| fail(&e))?;
        prepare(&conn, durability).map_err(|e| fail(&format!("{e} (is it a corral task database? move it away to start afresh)")))?;
        if path != Path::new(":memory:") {
            start_checkpointer(path).map_err(|e| fail(&e))?;
        }
        let (ops, queue) = mpsc::sync_channel::<Op>(4096);
        thread::Builder::new().name("corral-taskdb".into()).spawn(move || run_writer(conn, queue)).map_err(|e| fail(&e))?;
        Ok(SqliteStore { ops: Mutex::new(ops) })
    }

    /// Runs `f` on the store thread inside the current batch and waits for the commit.
    fn exec<T: Send + 'static>(&self, f: impl FnOnce(&Connection) -> rusqlite::Result<T> + Send + 'static) -> StoreResult<T> {
        let (reply, answer) = mpsc::sync_channel::<Result<T, String>>(1);
        let op: Op = Box::new(move |txn| {
            let result = (|| {
                let savepoint = txn.savepoint()?;
                let value = f(&savepoint)?;
                savepoint.commit()?;
                Ok::<T, rusqlite::Error>(value)
            })();
            Box::new(move |commit| {
                let _ = reply.send(match (result, commit) {
                    (Err(e), _) => Err(e.to_string()),
                    (Ok(_), Err(e)) => Err(e),
                    (Ok(v), Ok(())) => Ok(v),
                });
            })
        });
        let sender = self.ops.lock().unwrap_or_else(|e| e.into_inner()).clone();
        sender.send(op).map_err(|_| StoreError::Io("the store thread has stopped".into()))?;
        answer.recv().map_err(|_| StoreError::Io("the operation was not run (see the host log)".into()))?.map_err(StoreError::Io)
    }
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
    conn.execute_batch(SCHEMA)?;
    conn.execute_batch(&format!("PRAGMA user_version = {SCHEMA_VERSION}"))?;
    conn.query_row("SELECT count(*) FROM tasks", [], |_| Ok(()))?;
    Ok(())
}

/// Copies the WAL back into the database file every second, beside the writer: a passive
/// checkpoint never blocks commits, so its file sync stays off the admission path.
fn start_checkpointer(path: &Path) -> rusqlite::Result<()> {
    let conn = Connection::open(path)?;
    conn.execute_batch("PRAGMA busy_timeout = 5000;")?;
    thread::Builder::new()
        .name("corral-checkpoint".into())
        .spawn(move || loop {
            thread::sleep(std::time::Duration::from_secs(1));
            if let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
                tracing::warn!("task store checkpoint failed: {e}");
            }
        })
        .map_err(|e| rusqlite::Error::InvalidParameterName(e.to_string()))?;
    Ok(())
}

fn run_writer(mut conn: Connection, queue: Receiver<Op>) {
    while let Ok(first) = queue.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        let mut txn = match conn.transaction_with_behavior(TransactionBehavior::Immediate) {
            Ok(txn) => txn,
            Err(e) => {
                // Dropping the batch makes each waiting caller fail with a store error.
                tracing::error!("task store: cannot begin a transaction: {e}");
                continue;
            }
        };
        let deliveries: Vec<Deliver> = batch.into_iter().map(|op| op(&mut txn)).collect();
        let commit = txn.commit().map_err(|e| e.to_string());
        if let Err(e) = &commit {
            tracing::error!("task store: commit failed: {e}");
        }
        for deliver in deliveries {
            deliver(commit.clone());
        }
    }
}

fn read_task(row: &Row) -> rusqlite::Result<Task> {
    let json = |text: Option<String>| text.and_then(|t| serde_json::from_str::<Value>(&t).ok());
    let status: String = row.get(5)?;
    Ok(Task {
        seq: row.get(0)?,
        id: row.get(1)?,
        owner: row.get(2)?,
        tool: row.get(3)?,
        arguments: json(row.get(4)?).unwrap_or(Value::Null),
        status: TaskStatus::parse(&status).ok_or_else(|| rusqlite::Error::InvalidColumnType(5, status.clone(), rusqlite::types::Type::Text))?,
        status_message: row.get(6)?,
        created_at: row.get(7)?,
        updated_at: row.get(8)?,
        ttl_ms: row.get(9)?,
        poll_interval_ms: row.get(10)?,
        progress_token: json(row.get(11)?),
        idempotency_key: row.get(12)?,
        runner: row.get(13)?,
    })
}

fn now() -> i64 {
    super::model::now_ms()
}

impl TaskStore for SqliteStore {
    fn insert(&self, task: &Task) -> StoreResult<()> {
        let t = task.clone();
        self.exec(move |c| {
            c.execute(
                "INSERT INTO tasks (id, owner, tool, arguments, status, status_message, created_at, updated_at, ttl_ms, expires_at, poll_interval_ms, progress_token, idempotency_key, runner)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                params![
                    t.id,
                    t.owner,
                    t.tool,
                    t.arguments.to_string(),
                    t.status.as_str(),
                    t.status_message,
                    t.created_at,
                    t.updated_at,
                    t.ttl_ms,
                    t.expires_at(),
                    t.poll_interval_ms,
                    t.progress_token.as_ref().map(Value::to_string),
                    t.idempotency_key,
                    t.runner
                ],
            )
            .map(|_| ())
        })
    }

    fn get(&self, owner: &str, id: &str) -> StoreResult<Option<Task>> {
        let (owner, id) = (owner.to_owned(), id.to_owned());
        self.exec(move |c| c.query_row(&format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1 AND owner = ?2"), params![id, owner], read_task).optional())
    }

    fn list(&self, owner: &str, after: i64, limit: usize) -> StoreResult<Vec<Task>> {
        let owner = owner.to_owned();
        self.exec(move |c| {
            let mut stmt = c.prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE owner = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3"))?;
            let rows = stmt.query_map(params![owner, after, limit as i64], read_task)?;
            rows.collect()
        })
    }

    fn set_status(&self, id: &str, status: TaskStatus, message: Option<&str>) -> StoreResult<bool> {
        let (id, message) = (id.to_owned(), message.map(str::to_owned));
        let allowed_from: Vec<&'static str> = TaskStatus::ALL.iter().filter(|from| from.can_become(status)).map(|s| s.as_str()).collect();
        self.exec(move |c| {
            let changed = c.execute(
                "UPDATE tasks SET status = ?2, status_message = ?3, updated_at = ?4 WHERE id = ?1 AND status IN (SELECT value FROM json_each(?5))",
                params![id, status.as_str(), message, now(), serde_json::to_string(&allowed_from).unwrap()],
            )?;
            Ok(changed == 1)
        })
    }

    fn finish(&self, id: &str, status: TaskStatus, message: Option<&str>, outcome: &Outcome) -> StoreResult<bool> {
        debug_assert!(status.is_terminal());
        let (id, message) = (id.to_owned(), message.map(str::to_owned));
        let body = serde_json::to_string(outcome).expect("outcomes serialize");
        self.exec(move |c| {
            let changed = c.execute(
                "UPDATE tasks SET status = ?2, status_message = ?3, updated_at = ?4 WHERE id = ?1 AND status IN ('working', 'input_required')",
                params![id, status.as_str(), message, now()],
            )?;
            if changed == 1 {
                c.execute("INSERT OR REPLACE INTO outcomes (task_id, body) VALUES (?1, ?2)", params![id, body])?;
            }
            Ok(changed == 1)
        })
    }

    fn outcome(&self, id: &str) -> StoreResult<Option<Outcome>> {
        let id = id.to_owned();
        let body: Option<String> = self.exec(move |c| c.query_row("SELECT body FROM outcomes WHERE task_id = ?1", params![id], |r| r.get(0)).optional())?;
        body.map(|b| serde_json::from_str(&b).map_err(|e| StoreError::Io(format!("stored outcome is not valid: {e}")))).transpose()
    }

    fn find_by_key(&self, owner: &str, key: &str) -> StoreResult<Option<Task>> {
        let (owner, key) = (owner.to_owned(), key.to_owned());
        self.exec(move |c| {
            c.query_row(&format!("SELECT {COLUMNS} FROM tasks WHERE owner = ?1 AND idempotency_key = ?2"), params![owner, key], read_task).optional()
        })
    }

    fn unfinished(&self) -> StoreResult<Vec<Task>> {
        self.exec(|c| {
            let mut stmt = c.prepare(&format!("SELECT {COLUMNS} FROM tasks WHERE status IN ('working', 'input_required') ORDER BY seq"))?;
            let rows = stmt.query_map([], read_task)?;
            rows.collect()
        })
    }

    fn claim(&self, id: &str, from: &str, to: &str) -> StoreResult<bool> {
        let (id, from, to) = (id.to_owned(), from.to_owned(), to.to_owned());
        self.exec(move |c| {
            let changed =
                c.execute("UPDATE tasks SET runner = ?3 WHERE id = ?1 AND runner = ?2 AND status IN ('working', 'input_required')", params![id, from, to])?;
            Ok(changed == 1)
        })
    }

    fn purge_expired(&self, now_ms: i64) -> StoreResult<usize> {
        self.exec(move |c| c.execute("DELETE FROM tasks WHERE expires_at IS NOT NULL AND expires_at <= ?1", params![now_ms]))
    }

    fn count_by_status(&self) -> StoreResult<Vec<(TaskStatus, u64)>> {
        self.exec(|c| {
            let mut stmt = c.prepare("SELECT status, count(*) FROM tasks GROUP BY status")?;
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
}
