//! [`PgStore`]: the [`TaskStore`] on a pool of PostgreSQL connections.
//!
//! Each call is one statement (finishing a task writes its row and its outcome with one
//! statement too, through a data-modifying CTE), so a call is atomic without an explicit
//! transaction and costs one round trip. Every write that changes a status is then announced
//! (`'<id> <status>'` on `corral_tasks`) by the [`Notifier`], after it committed and outside
//! it: a `NOTIFY` inside the write would serialize every writer's commit (see [`notify`](super::notify)).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool_postgres::Pool;
use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::channel::ANSWERED;
use super::counts::{MINE, QUEUED};
use super::notify::Notifier;
use super::options::PgOptions;
use super::pool::{get, Target};
use super::rows::{read_task, AFTER_COLUMNS, COLUMNS};
use super::{hosts, listen, schema};
use crate::tasks::blobs::{ResultPage, ResultPart, ResultQuota};
use crate::tasks::model::{now_ms, Outcome, Progress, Task, TaskStatus};
use crate::tasks::operator::{Purged, TaskCursor, TaskDetail, TaskFilter, TaskPage};
use crate::tasks::store::{StoreError, StoreEvent, StoreFuture, StoreResult, TaskQuestion, TaskStore};

/// Rows deleted per purge statement; a purge repeats until a batch comes back short.
const PURGE_BATCH: i64 = 1000;

/// Changes buffered per subscriber; one that falls further behind is told to resync.
const EVENT_BUFFER: usize = 4096;

/// The task store on PostgreSQL; see the module doc.
pub struct PgStore {
    pool: Pool,
    host: Arc<str>,
    host_expiry: Duration,
    /// The caps an insert is checked against (`i64::MAX`: none).
    max_queued: i64,
    max_per_owner: i64,
    /// `synchronous_commit` for admissions: `on`, or `off` under `--db-sync process`.
    admit_sync: &'static str,
    /// Stops the heartbeat (which then deregisters the host).
    stop: CancellationToken,
    tracker: TaskTracker,
    /// Changes any replica writes, heard through `LISTEN`.
    events: tokio::sync::broadcast::Sender<StoreEvent>,
    /// Announces this replica's writes to the others.
    notifier: Notifier,
    /// Set once the store is closed: calls fail with [`StoreError::Closed`].
    closed: Arc<Mutex<bool>>,
}

impl PgStore {
    /// Connects, applies the migrations and registers `options.host_id` as a live replica.
    /// An unreachable server, a refused login, another application's database or a newer
    /// schema is an error naming the database (without its password).
    pub async fn open(options: PgOptions) -> StoreResult<PgStore> {
        let target = Target::parse(&options.url)?;
        Self::prepare(&target, &options).await?;
        Self::assemble(&target, &options)
    }

    /// The part of [`PgStore::open`] that talks to the server before the store exists.
    pub(super) async fn prepare(target: &Target, options: &PgOptions) -> StoreResult<()> {
        schema::migrate(target).await?;
        if options.replica {
            let client = target.connect().await?;
            hosts::register(&client, &options.host_id).await?;
        }
        Ok(())
    }

    /// The store on a prepared database; starts the heartbeat on the current runtime.
    pub(super) fn assemble(target: &Target, options: &PgOptions) -> StoreResult<PgStore> {
        let pool = target.pool(options.max_connections, !options.synchronous_commit)?;
        let host: Arc<str> = options.host_id.as_str().into();
        let (stop, tracker) = (CancellationToken::new(), TaskTracker::new());
        let every = (options.host_expiry / 3).max(Duration::from_millis(50));
        let (events, _) = tokio::sync::broadcast::channel(EVENT_BUFFER);
        if options.replica {
            tracker.spawn(hosts::beat(pool.clone(), host.clone(), every, events.clone(), stop.clone()));
            tracker.spawn(super::counts::keep_repaired(pool.clone(), host.clone(), every, stop.clone()));
        }
        tracker.spawn(listen::listen(target.clone(), events.clone(), stop.clone()));
        let (notifier, sender) = Notifier::start(pool.clone(), stop.clone());
        tracker.spawn(sender);
        let cap = |n: Option<usize>| n.map_or(i64::MAX, |n| n as i64);
        Ok(PgStore {
            pool,
            host,
            host_expiry: options.host_expiry,
            max_queued: cap(options.max_queued),
            max_per_owner: cap(options.max_per_owner),
            admit_sync: if options.synchronous_commit { "on" } else { "off" },
            stop,
            tracker,
            events,
            notifier,
            closed: Arc::default(),
        })
    }

    /// The pool, or [`StoreError::Closed`] once the store is closed.
    pub(super) fn pool(&self) -> StoreResult<Pool> {
        if *self.closed.lock().unwrap() {
            return Err(StoreError::Closed);
        }
        Ok(self.pool.clone())
    }

    /// Runs one statement returning at most one task row.
    fn one(&self, sql: String, args: Args) -> StoreFuture<Option<Task>> {
        let pool = self.pool();
        Box::pin(async move {
            let client = get(&pool?).await?;
            let statement = client.prepare_cached(&sql).await?;
            let row = client.query_opt(&statement, &args.refs()).await?;
            row.as_ref().map(read_task).transpose()
        })
    }

    /// Runs one statement that changes at most one task's status; announces the change.
    fn one_announced(&self, sql: String, args: Args) -> StoreFuture<Option<Task>> {
        let (written, notifier) = (self.one(sql, args), self.notifier.clone());
        Box::pin(async move {
            let task = written.await?;
            if let Some(task) = &task {
                notifier.changed(&task.id, task.status.as_str());
            }
            Ok(task)
        })
    }

    /// Runs one statement returning task rows.
    fn many(&self, sql: String, args: Args) -> StoreFuture<Vec<Task>> {
        let pool = self.pool();
        Box::pin(async move {
            let client = get(&pool?).await?;
            let statement = client.prepare_cached(&sql).await?;
            client.query(&statement, &args.refs()).await?.iter().map(read_task).collect()
        })
    }

    /// Ends a task with its outcome in one statement, fenced on `runner` when given.
    fn finish_where(&self, id: &str, runner: Option<&str>, status: TaskStatus, message: Option<&str>, outcome: &Outcome) -> StoreFuture<Option<Task>> {
        debug_assert!(status.is_terminal());
        let stored = outcome.stored();
        // An end always waits for the flush, whatever `--db-sync` says: it is the one write a
        // client may have seen (`completed`) that a database crash must not take back, and its
        // flush makes the task's earlier asynchronous writes (start, status, checkpoint) durable
        // with it, since the log is written in order.
        let sql = format!(
            "WITH durable AS (SELECT set_config('synchronous_commit', 'on', true)),
             ended AS (
                 UPDATE corral_tasks SET status = $2, status_message = $3, updated_at = $4
                 WHERE id = $1 AND ($5::text IS NULL OR runner = $5) AND status IN ('working', 'input_required') RETURNING *),
             kept AS (
                 INSERT INTO corral_outcomes (task_id, body, kind, failure) SELECT id, $6, $7, $8 FROM ended
                 ON CONFLICT (task_id) DO UPDATE SET body = EXCLUDED.body, kind = EXCLUDED.kind, failure = EXCLUDED.failure)
             SELECT {COLUMNS} FROM ended, durable"
        );
        let args = Args::new()
            .text(id)
            .text(status.as_str())
            .opt_text(message)
            .int(now_ms())
            .opt_text(runner)
            .json(Some(stored.body))
            .text(stored.kind.as_str())
            .opt_text(stored.failure.as_deref());
        self.one_announced(sql, args)
    }
}

/// The outcome in `row`'s columns from `at` on: body, kind, failure.
fn read_outcome(row: &tokio_postgres::Row, at: usize, id: &str) -> Result<Outcome, StoreError> {
    let (body, kind, failure): (Value, Option<String>, Option<String>) = (row.try_get(at)?, row.try_get(at + 1)?, row.try_get(at + 2)?);
    Outcome::from_stored_value(body, kind.as_deref(), failure).map_err(|source| StoreError::CorruptOutcome { id: id.to_owned(), source })
}

/// The arguments of one statement, owned so the call's future is `'static`.
struct Args(Vec<Box<dyn tokio_postgres::types::ToSql + Send + Sync>>);

impl Args {
    fn new() -> Args {
        Args(Vec::new())
    }
    fn text(mut self, s: &str) -> Args {
        self.0.push(Box::new(s.to_owned()));
        self
    }
    fn opt_text(mut self, s: Option<&str>) -> Args {
        self.0.push(Box::new(s.map(str::to_owned)));
        self
    }
    fn int(mut self, n: i64) -> Args {
        self.0.push(Box::new(n));
        self
    }
    fn json(mut self, v: Option<Value>) -> Args {
        self.0.push(Box::new(v));
        self
    }
    fn texts(mut self, v: Vec<String>) -> Args {
        self.0.push(Box::new(v));
        self
    }
    fn refs(&self) -> Vec<&(dyn tokio_postgres::types::ToSql + Sync)> {
        self.0.iter().map(|b| &**b as &(dyn tokio_postgres::types::ToSql + Sync)).collect()
    }
}

/// Statuses a task may move to `status` from.
fn allowed_from(status: TaskStatus) -> Vec<String> {
    TaskStatus::ALL.iter().filter(|from| from.can_become(status)).map(|s| s.as_str().to_owned()).collect()
}

impl TaskStore for PgStore {
    fn insert(&self, task: Task) -> StoreFuture<Task> {
        self.insert_capped(task, usize::MAX)
    }

    fn insert_capped(&self, task: Task, owner_cap: usize) -> StoreFuture<Task> {
        let max_per_owner = self.max_per_owner.min(i64::try_from(owner_cap).unwrap_or(i64::MAX));
        let (pool, max_queued, notifier, sync) = (self.pool(), self.max_queued, self.notifier.clone(), self.admit_sync);
        Box::pin(async move {
            let client = get(&pool?).await?;
            // The caps are read in the same statement as the insert, across every replica, from
            // the counter rows (a few rows whatever the backlog: see `counts`), which the insert's
            // trigger then moves in the same transaction; the commit waits for the disk only under
            // `--db-sync power` (`set_config(…, true)` holds for this statement's own
            // transaction: see `PgOptions::synchronous_commit`). Two replicas admitting at the
            // same instant may each see room for one more, so a cap can be passed by as many
            // admissions as race at its edge, never more.
            let statement = client
                .prepare_cached(&format!(
                    "WITH counts AS (
                         SELECT {QUEUED} AS queued, {MINE} AS mine, set_config('synchronous_commit', $17, true) AS sync),
                     added AS (
                         INSERT INTO corral_tasks (id, owner, tool, arguments, status, status_message, created_at, updated_at, ttl_ms, expires_at, poll_interval_ms, progress_token, idempotency_key, runner, client_capabilities, started_at, attempts, plugin, trace_context)
                         SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $18, $19, $20, $21, $22 FROM counts WHERE queued < $15 AND mine < $16
                         RETURNING seq)
                     SELECT (SELECT seq FROM added), queued, mine FROM counts"
                ))
                .await?;
            let row = client
                .query_one(
                    &statement,
                    &[
                        &task.id,
                        &task.owner,
                        &task.tool,
                        &task.arguments,
                        &task.status.as_str(),
                        &task.status_message,
                        &task.created_at,
                        &task.updated_at,
                        &task.ttl_ms,
                        &task.expires_at(),
                        &task.poll_interval_ms,
                        &task.progress_token,
                        &task.idempotency_key,
                        &task.runner,
                        &max_queued,
                        &max_per_owner,
                        &sync,
                        &task.client_capabilities,
                        &task.started.then_some(task.created_at),
                        &(task.attempts as i32),
                        &task.plugin,
                        &task.trace_context,
                    ],
                )
                .await?;
            let (seq, queued, mine): (Option<i64>, i64, i64) = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
            match seq {
                Some(seq) => {
                    // Wakes idle replicas (load spreading) and whoever waits on the id.
                    notifier.changed(&task.id, task.status.as_str());
                    Ok(Task { seq, ..task })
                }
                None if queued >= max_queued => Err(StoreError::Full { queued: queued as usize, limit: max_queued as usize }),
                None => Err(StoreError::OwnerFull { active: mine as usize, limit: max_per_owner as usize }),
            }
        })
    }

    fn get(&self, owner: &str, id: &str) -> StoreFuture<Option<Task>> {
        self.one(format!("SELECT {COLUMNS} FROM corral_tasks WHERE id = $1 AND owner = $2"), Args::new().text(id).text(owner))
    }

    fn owner_of(&self, id: &str) -> StoreFuture<Option<String>> {
        let (pool, id) = (self.pool(), id.to_owned());
        Box::pin(async move {
            let client = get(&pool?).await?;
            let statement = client.prepare_cached("SELECT owner FROM corral_tasks WHERE id = $1").await?;
            Ok(client.query_opt(&statement, &[&id]).await?.map(|row| row.try_get(0)).transpose()?)
        })
    }

    fn take_token(&self, key: &str, per_second: f64, burst: u32) -> Option<StoreFuture<(bool, f64)>> {
        let (pool, key) = (self.pool(), key.to_owned());
        Some(Box::pin(async move { super::buckets::take(&pool?, &key, per_second, burst).await }))
    }

    fn list(&self, owner: &str, after: i64, limit: usize) -> StoreFuture<Vec<Task>> {
        let args = Args::new().text(owner).int(after).int(limit as i64);
        self.many(format!("SELECT {COLUMNS} FROM corral_tasks WHERE owner = $1 AND seq > $2 ORDER BY seq LIMIT $3"), args)
    }

    fn set_status(&self, id: &str, status: TaskStatus, message: Option<&str>) -> StoreFuture<Option<Task>> {
        self.set_status_where(id, None, status, message)
    }

    fn finish(&self, id: &str, status: TaskStatus, message: Option<&str>, outcome: &Outcome) -> StoreFuture<Option<Task>> {
        self.finish_where(id, None, status, message, outcome)
    }

    fn outcome(&self, id: &str) -> StoreFuture<Option<Outcome>> {
        let (pool, id) = (self.pool(), id.to_owned());
        Box::pin(async move {
            let client = get(&pool?).await?;
            let statement = client.prepare_cached("SELECT body, kind, failure FROM corral_outcomes WHERE task_id = $1").await?;
            let Some(row) = client.query_opt(&statement, &[&id]).await? else { return Ok(None) };
            read_outcome(&row, 0, &id).map(Some)
        })
    }

    fn get_with_outcome(&self, owner: &str, id: &str) -> StoreFuture<Option<(Task, Option<Outcome>)>> {
        let (pool, owner, id) = (self.pool(), owner.to_owned(), id.to_owned());
        Box::pin(async move {
            let client = get(&pool?).await?;
            let sql = format!(
                "SELECT {COLUMNS}, o.body, o.kind, o.failure FROM corral_tasks LEFT JOIN corral_outcomes o ON o.task_id = corral_tasks.id
                 WHERE corral_tasks.id = $1 AND corral_tasks.owner = $2"
            );
            let statement = client.prepare_cached(&sql).await?;
            let Some(row) = client.query_opt(&statement, &[&id, &owner]).await? else { return Ok(None) };
            let task = read_task(&row)?;
            let has_outcome = row.try_get::<_, Option<Value>>(AFTER_COLUMNS)?.is_some();
            let outcome = if has_outcome { Some(read_outcome(&row, AFTER_COLUMNS, &id)?) } else { None };
            Ok(Some((task, outcome)))
        })
    }

    fn find_by_key(&self, owner: &str, key: &str) -> StoreFuture<Option<Task>> {
        self.one(format!("SELECT {COLUMNS} FROM corral_tasks WHERE owner = $1 AND idempotency_key = $2"), Args::new().text(owner).text(key))
    }

    fn unfinished(&self) -> StoreFuture<Vec<Task>> {
        self.many(format!("SELECT {COLUMNS} FROM corral_tasks WHERE status IN ('working', 'input_required') ORDER BY seq"), Args::new())
    }

    fn claim(&self, id: &str, from: &str, to: &str) -> StoreFuture<Option<Task>> {
        self.one(
            format!(
                "UPDATE corral_tasks SET runner = $3, epoch = epoch + 1 WHERE id = $1 AND runner = $2 AND status IN ('working', 'input_required') RETURNING {COLUMNS}"
            ),
            Args::new().text(id).text(from).text(to),
        )
    }

    fn start(&self, owner: &str, id: &str, runner: &str) -> StoreFuture<Option<Task>> {
        self.one(
            format!(
                "UPDATE corral_tasks SET started_at = coalesce(started_at, $4), attempts = attempts + 1, resumed_from = checkpoint_seq WHERE id = $1 AND owner = $2 AND runner = $3 AND status IN ('working', 'input_required') RETURNING {COLUMNS}"
            ),
            Args::new().text(id).text(owner).text(runner).int(now_ms()),
        )
    }

    fn started(&self, id: &str) -> StoreFuture<bool> {
        let (pool, id) = (self.pool(), id.to_owned());
        Box::pin(async move {
            let client = get(&pool?).await?;
            let statement = client.prepare_cached("SELECT started_at IS NOT NULL FROM corral_tasks WHERE id = $1").await?;
            let row = client.query_opt(&statement, &[&id]).await?;
            Ok(match row {
                Some(row) => row.try_get(0)?,
                None => false,
            })
        })
    }

    fn set_status_as(&self, id: &str, runner: &str, status: TaskStatus, message: Option<&str>) -> StoreFuture<Option<Task>> {
        self.set_status_where(id, Some(runner), status, message)
    }

    fn finish_as(&self, id: &str, runner: &str, status: TaskStatus, message: Option<&str>, outcome: &Outcome) -> StoreFuture<Option<Task>> {
        self.finish_where(id, Some(runner), status, message, outcome)
    }

    fn claim_orphans(&self, to: &str) -> StoreFuture<Vec<Task>> {
        let (pool, to, expiry) = (self.pool(), to.to_owned(), self.host_expiry);
        Box::pin(async move { hosts::claim_orphans(&pool?, &to, expiry).await })
    }

    fn claim_waiting(&self, to: &str, limit: usize, waited_ms: i64) -> StoreFuture<Vec<Task>> {
        let (pool, to) = (self.pool(), to.to_owned());
        Box::pin(async move { hosts::claim_waiting(&pool?, &to, limit, waited_ms).await })
    }

    fn publish_progress(&self, id: &str, runner: &str, progress: Progress) {
        if !*self.closed.lock().unwrap() {
            self.notifier.progress(id, runner, progress);
        }
    }

    fn subscribe(&self) -> Option<tokio::sync::broadcast::Receiver<StoreEvent>> {
        Some(self.events.subscribe())
    }

    fn checkpoint(&self, id: &str, runner: &str, state: Vec<u8>, message: Option<&str>) -> StoreFuture<Option<u64>> {
        let (pool, id, runner, message) = (self.pool(), id.to_owned(), runner.to_owned(), message.map(str::to_owned));
        Box::pin(async move {
            let client = get(&pool?).await?;
            let statement = client
                .prepare_cached(
                    "UPDATE corral_tasks SET checkpoint = $3, checkpoint_seq = checkpoint_seq + 1, status_message = coalesce($4, status_message), updated_at = $5, checkpointed_at = $5
                     WHERE id = $1 AND runner = $2 AND status IN ('working', 'input_required') RETURNING checkpoint_seq",
                )
                .await?;
            let row = client.query_opt(&statement, &[&id, &runner, &state, &message, &now_ms()]).await?;
            Ok(row.map(|r| r.try_get::<_, i64>(0)).transpose()?.map(|seq| seq as u64))
        })
    }

    fn checkpoint_state(&self, id: &str) -> StoreFuture<Option<(u64, Vec<u8>)>> {
        let (pool, id) = (self.pool(), id.to_owned());
        Box::pin(async move {
            let client = get(&pool?).await?;
            let statement = client.prepare_cached("SELECT checkpoint_seq, checkpoint FROM corral_tasks WHERE id = $1").await?;
            let row = client.query_opt(&statement, &[&id]).await?;
            let Some(row) = row else { return Ok(None) };
            let (seq, state): (i64, Option<Vec<u8>>) = (row.try_get(0)?, row.try_get(1)?);
            Ok(state.map(|s| (seq as u64, s)))
        })
    }

    fn keep_questions(&self, id: &str, questions: Vec<(String, Value)>) -> StoreFuture<()> {
        Box::pin(super::inputs::keep(self.pool(), id.to_owned(), questions))
    }

    fn questions(&self, id: &str) -> StoreFuture<Vec<TaskQuestion>> {
        Box::pin(super::inputs::questions(self.pool(), id.to_owned()))
    }

    fn answer_questions(&self, id: &str, answers: Vec<(String, Value)>) -> StoreFuture<Vec<String>> {
        let (written, notifier, id) = (super::inputs::answer(self.pool(), id.to_owned(), answers), self.notifier.clone(), id.to_owned());
        Box::pin(async move {
            let recorded = written.await?;
            if !recorded.is_empty() {
                // Wakes the replica whose guest waits (it may be this one).
                notifier.changed(&id, ANSWERED);
            }
            Ok(recorded)
        })
    }

    fn drop_questions(&self, id: &str, keys: Vec<String>) -> StoreFuture<()> {
        Box::pin(super::inputs::forget(self.pool(), id.to_owned(), keys))
    }

    fn keep_result(&self, owner: &str, id: &str, expires_at: Option<i64>, parts: Vec<ResultPart>, quota: ResultQuota) -> StoreFuture<()> {
        Box::pin(super::blobs::keep(self.pool(), owner.to_owned(), id.to_owned(), expires_at, parts, quota))
    }

    fn result_bytes_kept(&self) -> StoreFuture<u64> {
        Box::pin(super::blobs::kept(self.pool()))
    }

    fn result_page(&self, owner: &str, id: &str, part: u32, page: u32, now_ms: i64) -> StoreFuture<Option<ResultPage>> {
        Box::pin(super::blobs::page(self.pool(), owner.to_owned(), id.to_owned(), part, page, now_ms))
    }

    fn purge_expired(&self, now_ms: i64) -> StoreFuture<usize> {
        let pool = self.pool();
        Box::pin(async move {
            let client = get(&pool?).await?;
            // Kept results expire with their tasks (a plain call's after the task TTL).
            super::blobs::purge(&client, now_ms).await?;
            // Batched so no statement holds many row locks; SKIP LOCKED lets every replica purge
            // at once without waiting for another. Outcomes go with their tasks (ON DELETE CASCADE).
            let statement = client
                .prepare_cached(
                    "DELETE FROM corral_tasks WHERE seq IN (
                         SELECT seq FROM corral_tasks WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)",
                )
                .await?;
            let mut purged = 0;
            loop {
                let n = client.execute(&statement, &[&now_ms, &PURGE_BATCH]).await?;
                purged += n as usize;
                if (n as i64) < PURGE_BATCH {
                    return Ok(purged);
                }
            }
        })
    }

    fn replicas(&self) -> StoreFuture<Option<Vec<crate::tasks::Replica>>> {
        let pool = self.pool();
        Box::pin(async move {
            let client = get(&pool?).await?;
            let statement = client.prepare_cached(super::hosts::REPLICAS).await?;
            let rows = client.query(&statement, &[]).await?;
            let mut replicas = Vec::with_capacity(rows.len());
            for row in rows {
                let (id, heartbeat_age_ms, up_ms, tasks_held) = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?, row.try_get(3)?);
                replicas.push(crate::tasks::Replica { id, heartbeat_age_ms, up_ms, tasks_held });
            }
            Ok(Some(replicas))
        })
    }

    fn ping(&self) -> StoreFuture<()> {
        let pool = self.pool();
        Box::pin(async move {
            let client = get(&pool?).await?;
            client.simple_query("SELECT 1").await?;
            Ok(())
        })
    }

    fn list_all(&self, filter: &TaskFilter, after: Option<TaskCursor>, limit: usize) -> StoreFuture<TaskPage> {
        Box::pin(super::operator::list_all(self.pool(), filter.clone(), after, limit))
    }

    fn inspect(&self, id: &str) -> StoreFuture<Option<TaskDetail>> {
        Box::pin(super::operator::inspect(self.pool(), id.to_owned()))
    }

    fn purge_tasks(&self, ids: Vec<String>) -> StoreFuture<Vec<(String, Purged)>> {
        Box::pin(super::operator::purge(self.pool(), ids))
    }

    fn count_by_status(&self) -> StoreFuture<Vec<(TaskStatus, u64)>> {
        let pool = self.pool();
        Box::pin(async move {
            let client = get(&pool?).await?;
            let statement = client.prepare_cached("SELECT status, count(*) FROM corral_tasks GROUP BY status").await?;
            let rows = client.query(&statement, &[]).await?;
            let mut counts = Vec::new();
            for row in rows {
                let (status, n): (String, i64) = (row.try_get(0)?, row.try_get(1)?);
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
        *self.closed.lock().unwrap() = true;
        self.stop.cancel();
        self.tracker.close();
        let (tracker, pool) = (self.tracker.clone(), self.pool.clone());
        Box::pin(async move {
            // The heartbeat deregisters the host on its way out, so other replicas may claim what
            // this one leaves unfinished at once instead of after the host expiry.
            tracker.wait().await;
            pool.close();
        })
    }
}

impl PgStore {
    fn set_status_where(&self, id: &str, runner: Option<&str>, status: TaskStatus, message: Option<&str>) -> StoreFuture<Option<Task>> {
        let sql = format!(
            "WITH moved AS (
                 UPDATE corral_tasks SET status = $2, status_message = $3, updated_at = $4
                 WHERE id = $1 AND ($6::text IS NULL OR runner = $6) AND status = ANY($5) RETURNING *)
             SELECT {COLUMNS} FROM moved"
        );
        let args = Args::new().text(id).text(status.as_str()).opt_text(message).int(now_ms()).texts(allowed_from(status)).opt_text(runner);
        self.one_announced(sql, args)
    }

    /// This replica's runner id.
    pub fn host(&self) -> &str {
        &self.host
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}
