//! Replicas as rows of `corral_hosts`: each registers at start, beats every third of the host
//! expiry, and deregisters when its store closes. Time is the database's (`now()`), so the
//! replicas' clocks need not agree.
//!
//! A live replica claims a dead one's tasks in one transaction: it deletes the expired host
//! rows (`FOR UPDATE SKIP LOCKED`, so replicas sweeping at once split the work), then moves
//! the unfinished tasks of every runner without a row to itself, bumping each task's epoch.
//! A dead replica that comes back finds its row gone: it registers again, and since its tasks
//! now name another runner, the fenced writes of its old runs change nothing.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio_util::sync::CancellationToken;

use super::pool::get;
use super::rows::{read_task, COLUMNS};
use crate::tasks::model::Task;
use crate::tasks::store::{StoreEvent, StoreResult};

/// Every registered replica: id, heartbeat age and uptime in milliseconds (by the database's
/// clock), and the unfinished tasks it holds. For the operator's console, which reads it on
/// demand, not on any request path.
pub(super) const REPLICAS: &str = "SELECT h.id, \
    (extract(epoch FROM now() - h.heartbeat_at) * 1000)::BIGINT, \
    (extract(epoch FROM now() - h.started_at) * 1000)::BIGINT, \
    (SELECT count(*) FROM corral_tasks t WHERE t.runner = h.id AND t.status IN ('working', 'input_required')) \
    FROM corral_hosts h ORDER BY h.id";

/// Tasks claimed per sweep at most; the next sweep takes the rest.
const CLAIM_BATCH: i64 = 256;

/// Registers `host` (again, if it was taken for dead).
pub(super) async fn register(client: &tokio_postgres::Client, host: &str) -> Result<(), tokio_postgres::Error> {
    client.execute("INSERT INTO corral_hosts (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET heartbeat_at = now()", &[&host]).await.map(|_| ())
}

/// Beats for `host` every `every` until `stop` fires, then deregisters it. A beat that finds
/// the host's row gone (it was taken for dead) registers it again and sends
/// [`StoreEvent::TakenForDead`] on `events`, so the engine stops the runs now stale.
pub(super) async fn beat(pool: Pool, host: Arc<str>, every: Duration, events: tokio::sync::broadcast::Sender<StoreEvent>, stop: CancellationToken) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = ticks.tick() => {}
        }
        let beat = async {
            let client = get(&pool).await?;
            let statement = client.prepare_cached("UPDATE corral_hosts SET heartbeat_at = now() WHERE id = $1").await?;
            let kept = client.execute(&statement, &[&&*host]).await?;
            if kept == 0 {
                tracing::warn!(host = %host, "this replica was taken for dead and its tasks went to others; registering again");
                register(&client, &host).await?;
                let _ = events.send(StoreEvent::TakenForDead);
            }
            StoreResult::Ok(())
        };
        if let Err(e) = beat.await {
            tracing::warn!(host = %host, "heartbeat failed: {e}");
        }
    }
    let bye = async {
        let client = get(&pool).await?;
        client.execute("DELETE FROM corral_hosts WHERE id = $1", &[&&*host]).await?;
        StoreResult::Ok(())
    };
    if let Err(e) = bye.await {
        tracing::debug!(host = %host, "deregistering failed: {e}");
    }
}

/// Claims for `to` the unfinished tasks of replicas dead for longer than `expiry`.
pub(super) async fn claim_orphans(pool: &Pool, to: &str, expiry: Duration) -> StoreResult<Vec<Task>> {
    let mut client = get(pool).await?;
    let txn = client.transaction().await?;
    let expiry_ms = expiry.as_millis() as f64;
    txn.execute(
        "DELETE FROM corral_hosts WHERE id IN (
             SELECT id FROM corral_hosts WHERE heartbeat_at < now() - $1 * interval '1 millisecond' AND id <> $2 FOR UPDATE SKIP LOCKED)",
        &[&expiry_ms, &to],
    )
    .await?;
    let rows = txn
        .query(
            &format!(
                "WITH orphans AS MATERIALIZED (
                     SELECT seq FROM corral_tasks t
                     WHERE status IN ('working', 'input_required') AND runner <> $1
                       AND NOT EXISTS (SELECT 1 FROM corral_hosts h WHERE h.id = t.runner)
                     ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED)
                 UPDATE corral_tasks t SET runner = $1, epoch = t.epoch + 1 FROM orphans WHERE t.seq = orphans.seq
                 RETURNING {}",
                COLUMNS.split(", ").map(|c| format!("t.{c}")).collect::<Vec<_>>().join(", ")
            ),
            &[&to, &CLAIM_BATCH],
        )
        .await?;
    txn.commit().await?;
    rows.iter().map(read_task).collect()
}

/// Claims for `to` up to `limit` tasks admitted by other hosts that no worker started, created
/// at least `waited_ms` ago (see [`TaskStore::claim_waiting`](crate::tasks::store::TaskStore::claim_waiting)).
/// `SKIP LOCKED` lets idle replicas claim side by side; the admitting host's `start` is fenced
/// on `runner`, so exactly one of them runs the task.
pub(super) async fn claim_waiting(pool: &Pool, to: &str, limit: usize, waited_ms: i64) -> StoreResult<Vec<Task>> {
    let client = get(pool).await?;
    let created_before = crate::tasks::model::now_ms() - waited_ms;
    let statement = client
        .prepare_cached(&format!(
            "WITH waiting AS MATERIALIZED (
                     SELECT seq FROM corral_tasks
                     WHERE status = 'working' AND started_at IS NULL AND runner <> $1 AND created_at <= $3
                     ORDER BY seq LIMIT $2 FOR UPDATE SKIP LOCKED)
                 UPDATE corral_tasks t SET runner = $1, epoch = t.epoch + 1 FROM waiting WHERE t.seq = waiting.seq
                 RETURNING {}",
            COLUMNS.split(", ").map(|c| format!("t.{c}")).collect::<Vec<_>>().join(", ")
        ))
        .await?;
    let rows = client.query(&statement, &[&to, &(limit as i64), &created_before]).await?;
    rows.iter().map(read_task).collect()
}
