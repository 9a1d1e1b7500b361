//! Versioned migrations, applied when a replica starts. They run in one transaction under an
//! advisory lock, so replicas starting together apply each migration once and the others wait
//! and find it done. A database that holds someone else's tables, or a corral schema newer
//! than this binary, is refused with an error naming it; nothing is changed.

use super::pool::Target;
use crate::tasks::store::{StoreError, StoreResult};

/// The advisory lock key every corral takes while migrating ("corral" in ASCII).
const MIGRATION_LOCK: i64 = 0x636f_7272_616c;

/// Migration `n` takes the schema from version `n` to `n + 1`.
const MIGRATIONS: &[&str] = &[
    "
CREATE TABLE corral_tasks (
    seq BIGSERIAL PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    owner TEXT NOT NULL,
    tool TEXT NOT NULL,
    arguments JSONB NOT NULL,
    status TEXT NOT NULL,
    status_message TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    ttl_ms BIGINT,
    expires_at BIGINT,
    poll_interval_ms BIGINT NOT NULL,
    progress_token JSONB,
    idempotency_key TEXT,
    runner TEXT NOT NULL,
    epoch BIGINT NOT NULL DEFAULT 0,
    started_at BIGINT
);
CREATE INDEX corral_tasks_by_owner ON corral_tasks (owner, seq);
CREATE UNIQUE INDEX corral_tasks_by_key ON corral_tasks (owner, idempotency_key) WHERE idempotency_key IS NOT NULL;
CREATE INDEX corral_tasks_by_expiry ON corral_tasks (expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX corral_tasks_unfinished ON corral_tasks (runner, seq) WHERE status IN ('working', 'input_required');
-- Outcomes can be large; they live apart so the rows that polling reads stay small.
CREATE TABLE corral_outcomes (
    task_id TEXT PRIMARY KEY REFERENCES corral_tasks (id) ON DELETE CASCADE,
    body JSONB NOT NULL
);
-- One row per live replica; a heartbeat older than the host expiry means it is dead.
CREATE TABLE corral_hosts (
    id TEXT PRIMARY KEY,
    started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now()
);
",
    "
-- The admission caps count these two sets in every insert: indexes of exactly those rows keep
-- each count proportional to what it counts (and bounded by its cap), not to every unfinished task.
CREATE INDEX corral_tasks_waiting ON corral_tasks (seq) WHERE started_at IS NULL AND status IN ('working', 'input_required');
CREATE INDEX corral_tasks_unfinished_by_owner ON corral_tasks (owner) WHERE status IN ('working', 'input_required');
",
    "
-- Large results kept by reference, one row per page (issue 16).
CREATE TABLE corral_result_pages (
    id TEXT NOT NULL,
    part INTEGER NOT NULL,
    page INTEGER NOT NULL,
    owner TEXT NOT NULL,
    expires_at BIGINT,
    kind TEXT NOT NULL,
    mime_type TEXT,
    size BIGINT NOT NULL,
    pages INTEGER NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (id, part, page)
);
CREATE INDEX corral_result_pages_by_expiry ON corral_result_pages (expires_at) WHERE expires_at IS NOT NULL;
",
    "
-- Each task's attempts and its last checkpoint (issue 16).
ALTER TABLE corral_tasks
    ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0,
    ADD COLUMN checkpoint_seq BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN checkpoint BYTEA;
",
    "
-- The questions a task waits on, so that any replica shows them and takes their answers (issue 14).
CREATE TABLE corral_task_inputs (
    seq BIGSERIAL PRIMARY KEY,
    task_id TEXT NOT NULL REFERENCES corral_tasks (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    request JSONB NOT NULL,
    answer JSONB,
    UNIQUE (task_id, key)
);
",
    "
-- The checkpoint each attempt started from (issue 16): `_meta corral/resumed` names it.
ALTER TABLE corral_tasks ADD COLUMN resumed_from BIGINT NOT NULL DEFAULT 0;
",
    super::counts::MIGRATION,
    "
-- What a 2026-07-28 task's client declared it can answer, so a replica that runs the task without
-- its request (load spreading, recovery) still asks it (issue 14).
ALTER TABLE corral_tasks ADD COLUMN IF NOT EXISTS client_capabilities JSONB;
",
    "
-- Which outcome each is (`model::OutcomeKind`) and a host-imposed failure's kind, in columns of
-- their own so readers need not look into the body. Older rows get theirs from their body once,
-- here: a result carrying `_meta[\"corral/error\"]` was a failure the host imposed.
ALTER TABLE corral_outcomes ADD COLUMN kind TEXT, ADD COLUMN failure TEXT;
UPDATE corral_outcomes SET
    failure = CASE WHEN jsonb_typeof(body) = 'object' THEN body #>> '{result,_meta,corral/error,kind}' END,
    kind = CASE
        WHEN body = '\"cancelled\"'::jsonb THEN 'cancelled'
        WHEN body = '\"interrupted\"'::jsonb THEN 'interrupted'
        WHEN jsonb_typeof(body) <> 'object' THEN NULL
        WHEN body ? 'error' THEN 'error'
        WHEN body #> '{result,_meta,corral/error,kind}' IS NOT NULL THEN 'failed'
        WHEN body ? 'result' THEN 'result'
    END;
",
    super::blobs::MIGRATION,
    "
-- Each task's plugin and when it last checkpointed, for operators (`corral tasks`).
ALTER TABLE corral_tasks ADD COLUMN IF NOT EXISTS plugin TEXT, ADD COLUMN IF NOT EXISTS checkpointed_at BIGINT;
",
    super::buckets::MIGRATION,
    "
-- The trace context of the request that created each task, so that its runs, on any replica,
-- continue that trace.
ALTER TABLE corral_tasks ADD COLUMN IF NOT EXISTS trace_context TEXT;
",
    super::secrets_table::MIGRATION,
];

/// The schema version this corral writes.
pub(super) const VERSION: i32 = MIGRATIONS.len() as i32;

/// Brings the database to [`VERSION`], or says why it must not.
pub(super) async fn migrate(target: &Target) -> StoreResult<()> {
    let mut client = target.connect().await?;
    let refuse = |problem: String| StoreError::Schema { url: target.shown.clone(), problem };
    let txn = client.transaction().await?;
    txn.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).await?;
    let ours: bool = txn.query_one("SELECT to_regclass('corral_schema') IS NOT NULL", &[]).await?.get(0);
    let version: i32 = if ours {
        txn.query_one("SELECT version FROM corral_schema", &[]).await?.get(0)
    } else {
        let others: Vec<String> = txn
            .query("SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name LIMIT 5", &[])
            .await?
            .iter()
            .map(|r| r.get(0))
            .collect();
        if !others.is_empty() {
            return Err(refuse(format!(
                "the database holds tables that are not corral's ({}): it belongs to something else; give corral a database of its own (CREATE DATABASE corral)",
                others.join(", ")
            )));
        }
        txn.batch_execute("CREATE TABLE corral_schema (version INTEGER NOT NULL); INSERT INTO corral_schema VALUES (0);").await?;
        0
    };
    if version > VERSION {
        return Err(refuse(format!("the corral schema is version {version}, newer than this corral understands ({VERSION}): run a newer corral")));
    }
    for (from, migration) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
        tracing::info!("task store {}: migrating the schema from version {from}", target.shown);
        txn.batch_execute(migration).await?;
    }
    txn.execute("UPDATE corral_schema SET version = $1", &[&VERSION]).await?;
    txn.commit().await?;
    Ok(())
}
