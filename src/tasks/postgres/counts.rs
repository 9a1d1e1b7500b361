//! Counter rows for the admission caps, so an admission costs the same whatever the backlog.
//!
//! Counting the waiting set (`--max-queued`) and the owner's unfinished tasks
//! (`--max-tasks-per-client`) with `count(*)` in every insert walked both sets: when the workers
//! fall behind the clients, the sets grow, each admission gets slower, and the workers fall
//! further behind (BENCHMARKS §12.3: the counts were 94 % of the server's statement time).
//! Instead two small tables hold the counts, and an admission sums a handful of rows:
//!
//! - `corral_queue_counts`: tasks admitted and not yet started, in 64 rows. A
//!   transaction adds its change to the row of its own connection (`pg_backend_pid() % 64`), so
//!   concurrent writers, on one replica or many, do not queue behind one hot row; the count is
//!   the sum of the stripes, and a single stripe may well be negative (a task admitted through
//!   one connection and started through another).
//! - `corral_owner_counts`: unfinished tasks per owner, striped the same way (`owner, stripe`).
//!   With one row per owner, an admission waited behind the end of one of that owner's own
//!   tasks, whose commit holds the row until the server has flushed it (BENCHMARKS §12.3: that
//!   wait was the p99); striped, the two meet only when their connections share a stripe.
//!
//! **A trigger keeps them**, in the same transaction as the change to `corral_tasks`, for every
//! statement that inserts, deletes, starts or ends a task: the admission, `start`, the end,
//! a cancel, the purge, and any statement a later change adds. The counts therefore commit or
//! vanish with the change they count: a replica killed mid-transaction, or a database crash that
//! loses the last asynchronous commits, loses count and change together, and a dead replica's
//! rows need nothing done (its stripe rows keep their sums; its tasks are counted until a
//! successor ends them). Writing the deltas from Rust in each statement instead would have to be
//! repeated in every statement that changes a status, and forgetting one would drift.
//!
//! **[`repair`] recounts from the truth** once per heartbeat period ([`keep_repaired`], a loop of
//! its own so a slow recount never delays a heartbeat), for whatever bypassed the
//! trigger (a hand edit under `session_replication_role = replica`, a restored table, a bug): it
//! corrects the sums by the difference it finds in one snapshot, folds the stripes of owners
//! without unfinished tasks into one row (moving each value, which keeps every sum right whatever
//! commits meanwhile), and deletes rows at zero, so the table holds about the owners with
//! unfinished tasks. It walks the unfinished
//! set once per beat of one replica (an advisory lock keeps two replicas from repairing at
//! once), off every client's path.
//!
//! Within one row a trigger takes the queue stripe before the owner row, and only rows whose
//! count changes. Two purges deleting several expired *unfinished* tasks of the same owners in
//! different orders could still deadlock; PostgreSQL then aborts one, which the next purge redoes.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::Pool;
use tokio_util::sync::CancellationToken;

use super::pool::get;
use crate::tasks::store::StoreResult;

/// The advisory lock key a repair holds ("counts" in ASCII).
const REPAIR_LOCK: i64 = 0x636f_756e_7473;

/// The schema migration that adds the counters, filled from the tasks already stored.
pub(super) const MIGRATION: &str = "
-- Counter rows for the admission caps, kept by a trigger in the same transaction as each change
-- (issue 14; src/tasks/postgres/counts.rs says why and how).
CREATE TABLE corral_queue_counts (
    stripe INTEGER PRIMARY KEY,
    waiting BIGINT NOT NULL DEFAULT 0
);
INSERT INTO corral_queue_counts (stripe) SELECT generate_series(0, 63);
UPDATE corral_queue_counts SET waiting = (SELECT count(*) FROM corral_tasks WHERE started_at IS NULL AND status IN ('working', 'input_required')) WHERE stripe = 0;
CREATE TABLE corral_owner_counts (
    owner TEXT NOT NULL,
    stripe INTEGER NOT NULL,
    unfinished BIGINT NOT NULL,
    PRIMARY KEY (owner, stripe)
);
INSERT INTO corral_owner_counts (owner, stripe, unfinished)
    SELECT owner, 0, count(*) FROM corral_tasks WHERE status IN ('working', 'input_required') GROUP BY owner;
CREATE FUNCTION corral_count_tasks() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    was_open BOOLEAN := false;
    was_waiting BOOLEAN := false;
    is_open BOOLEAN := false;
    is_waiting BOOLEAN := false;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        was_open := OLD.status IN ('working', 'input_required');
        was_waiting := was_open AND OLD.started_at IS NULL;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        is_open := NEW.status IN ('working', 'input_required');
        is_waiting := is_open AND NEW.started_at IS NULL;
    END IF;
    IF is_waiting <> was_waiting THEN
        UPDATE corral_queue_counts SET waiting = waiting + is_waiting::INTEGER - was_waiting::INTEGER
        WHERE stripe = pg_backend_pid() % 64;
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.owner = NEW.owner THEN
        IF is_open <> was_open THEN
            INSERT INTO corral_owner_counts AS c (owner, stripe, unfinished) VALUES (NEW.owner, pg_backend_pid() % 64, is_open::INTEGER - was_open::INTEGER)
            ON CONFLICT (owner, stripe) DO UPDATE SET unfinished = c.unfinished + EXCLUDED.unfinished;
        END IF;
    ELSE
        IF was_open THEN
            INSERT INTO corral_owner_counts AS c (owner, stripe, unfinished) VALUES (OLD.owner, pg_backend_pid() % 64, -1)
            ON CONFLICT (owner, stripe) DO UPDATE SET unfinished = c.unfinished - 1;
        END IF;
        IF is_open THEN
            INSERT INTO corral_owner_counts AS c (owner, stripe, unfinished) VALUES (NEW.owner, pg_backend_pid() % 64, 1)
            ON CONFLICT (owner, stripe) DO UPDATE SET unfinished = c.unfinished + 1;
        END IF;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER corral_tasks_counted AFTER INSERT OR DELETE OR UPDATE OF status, started_at, owner ON corral_tasks
    FOR EACH ROW EXECUTE FUNCTION corral_count_tasks();
";

/// The waiting tasks across every replica, as an SQL expression (for the admission).
pub(super) const QUEUED: &str = "(SELECT coalesce(sum(waiting), 0)::BIGINT FROM corral_queue_counts)";

/// The unfinished tasks of the owner bound to `$2`, as an SQL expression (for the admission).
pub(super) const MINE: &str = "(SELECT coalesce(sum(unfinished), 0)::BIGINT FROM corral_owner_counts WHERE owner = $2)";

/// What a [`repair`] corrected.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Repaired {
    /// How far the waiting count was off (true minus counted).
    pub(super) waiting: i64,
    /// Owners whose count was off.
    pub(super) owners: usize,
}

/// Brings the counters back to the truth (see the module doc); `None` when another replica
/// is repairing right now.
pub(super) async fn repair(client: &mut deadpool_postgres::Object) -> StoreResult<Option<Repaired>> {
    let txn = client.transaction().await?;
    let locked: bool = txn.query_one("SELECT pg_try_advisory_xact_lock($1)", &[&REPAIR_LOCK]).await?.try_get(0)?;
    if !locked {
        return Ok(None);
    }
    // Each statement reads one snapshot, in which every committed change is in both the tasks
    // and the counters; the difference is the drift, and adding it stays right whatever commits
    // after the snapshot.
    let drift = txn
        .prepare_cached(&format!("SELECT (SELECT count(*) FROM corral_tasks WHERE started_at IS NULL AND status IN ('working', 'input_required')) - {QUEUED}"))
        .await?;
    let waiting: i64 = txn.query_one(&drift, &[]).await?.try_get(0)?;
    if waiting != 0 {
        txn.execute("UPDATE corral_queue_counts SET waiting = waiting + $1 WHERE stripe = 0", &[&waiting]).await?;
    }
    let owners = txn
        .prepare_cached(
            "SELECT owner, coalesce(t.n, 0) - coalesce(c.n, 0)
             FROM (SELECT owner, count(*) AS n FROM corral_tasks WHERE status IN ('working', 'input_required') GROUP BY owner) t
             FULL JOIN (SELECT owner, sum(unfinished)::BIGINT AS n FROM corral_owner_counts GROUP BY owner) c USING (owner)
             WHERE coalesce(t.n, 0) <> coalesce(c.n, 0)",
        )
        .await?;
    let off = txn.query(&owners, &[]).await?;
    let (names, deltas): (Vec<String>, Vec<i64>) = off.iter().map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1))).unzip();
    if !names.is_empty() {
        txn.execute(
            "INSERT INTO corral_owner_counts AS c (owner, stripe, unfinished) SELECT o, 0, n FROM unnest($1::TEXT[], $2::BIGINT[]) AS d(o, n)
             ON CONFLICT (owner, stripe) DO UPDATE SET unfinished = c.unfinished + EXCLUDED.unfinished",
            &[&names, &deltas],
        )
        .await?;
    }
    // Idle owners' stripes into stripe 0: each value read is subtracted where it was and added
    // there, in this transaction, so the sums stay right even if a write lands meanwhile.
    let idle = txn
        .prepare_cached(
            "SELECT c.owner, c.stripe, c.unfinished FROM corral_owner_counts c
             WHERE c.stripe <> 0 AND c.unfinished <> 0
               AND NOT EXISTS (SELECT 1 FROM corral_tasks t WHERE t.owner = c.owner AND t.status IN ('working', 'input_required'))",
        )
        .await?;
    let rows = txn.query(&idle, &[]).await?;
    if !rows.is_empty() {
        let owners: Vec<String> = rows.iter().map(|r| r.get(0)).collect();
        let stripes: Vec<i32> = rows.iter().map(|r| r.get(1)).collect();
        let values: Vec<i64> = rows.iter().map(|r| r.get(2)).collect();
        txn.execute(
            "WITH m AS (SELECT * FROM unnest($1::TEXT[], $2::INTEGER[], $3::BIGINT[]) AS m(owner, stripe, v)),
                  taken AS (UPDATE corral_owner_counts c SET unfinished = c.unfinished - m.v FROM m WHERE c.owner = m.owner AND c.stripe = m.stripe RETURNING c.owner)
             INSERT INTO corral_owner_counts AS c (owner, stripe, unfinished) SELECT owner, 0, sum(v) FROM m GROUP BY owner
             ON CONFLICT (owner, stripe) DO UPDATE SET unfinished = c.unfinished + EXCLUDED.unfinished",
            &[&owners, &stripes, &values],
        )
        .await?;
    }
    // Re-checked row by row against the newest version, so a row an admission just raised stays.
    let statement = txn.prepare_cached("DELETE FROM corral_owner_counts WHERE unfinished = 0").await?;
    txn.execute(&statement, &[]).await?;
    txn.commit().await?;
    Ok(Some(Repaired { waiting, owners: names.len() }))
}

/// Runs [`repair`] every `every` until `stop` fires, and says when it corrected anything.
pub(super) async fn keep_repaired(pool: Pool, host: Arc<str>, every: Duration, stop: CancellationToken) {
    let mut ticks = tokio::time::interval(every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = ticks.tick() => {}
        }
        let repaired = async { repair(&mut get(&pool).await?).await };
        match repaired.await {
            Ok(Some(repaired)) if repaired != Repaired::default() => {
                tracing::warn!(host = %host, waiting = repaired.waiting, owners = repaired.owners, "the admission counters were off; repaired from the tasks")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(host = %host, "recounting the admission counters failed: {e}"),
        }
    }
}
