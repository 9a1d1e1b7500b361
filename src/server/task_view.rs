//! How a task looks to a client in either era: the pieces both eras' task methods and the
//! requests tied to a task share (times, the resumed marker, the engine's refusals, the
//! related-task `_meta` key, the idempotency key a creation carries).

use std::time::{Duration, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::mcp::{Params, RpcError};
use crate::tasks::{EngineError, Task};

/// The `_meta` key that ties a message to its task.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// The `_meta` key of a task creation's idempotency key, in both eras: a creation retried with
/// the same key (by the same owner, while the first task is kept) answers with the first task
/// instead of running the tool again.
const IDEMPOTENCY_KEY: &str = "corral/idempotency-key";

/// A `tools/call`'s idempotency key, if it sends one (a non-string is -32602 naming the key).
pub fn idempotency_key(params: Params<'_>) -> Result<Option<String>, RpcError> {
    Ok(params.meta_str(IDEMPOTENCY_KEY)?.map(str::to_owned))
}
/// JSON-RPC code for "the host cannot take more work now" (implementation-defined range).
pub const OVERLOADED: i32 = -32000;

/// The `Task` object as 2025-11-25 shows it.
pub(super) fn task_json(task: &Task) -> Value {
    let mut t = json!({
        "taskId": task.id,
        "status": task.status.as_str(),
        "createdAt": iso8601(task.created_at),
        "lastUpdatedAt": iso8601(task.updated_at),
        "ttl": task.ttl_ms,
        "pollInterval": task.poll_interval_ms,
    });
    if let Some(m) = &task.status_message {
        t["statusMessage"] = json!(m);
    }
    if let Some(resumed) = resumed_meta(task) {
        t["_meta"] = json!({ "corral/resumed": resumed });
    }
    t
}

/// For a task that ran again after an interruption: which attempt this is, and the checkpoint
/// it resumed from (0: it ran again from the start), not the ones it made since.
pub(super) fn resumed_meta(task: &Task) -> Option<Value> {
    (task.attempts > 1).then(|| json!({ "attempt": task.attempts, "checkpoint": task.resumed_from }))
}

/// The `statusMessage` a task shows when it runs again after an interruption.
pub(super) fn resumed_message(task: &Task) -> String {
    match task.resumed_from {
        0 => format!("running again from the start after an interruption (attempt {})", task.attempts),
        n => format!("resumed from checkpoint {n} after an interruption (attempt {})", task.attempts),
    }
}

/// What a client reads about a task a host restart interrupted and could not run again.
pub(super) fn interrupted_message(tool: &str) -> String {
    format!("tool `{tool}` was interrupted by a host restart; it is not marked idempotent, so it was not run again")
}

/// A time in milliseconds since the epoch as MCP shows it (RFC 3339, UTC, milliseconds).
pub(super) fn iso8601(ms: i64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms.max(0) as u64)).to_string()
}

/// The JSON-RPC error for what the engine refused.
pub(super) fn engine_error(e: EngineError) -> RpcError {
    match e {
        EngineError::NotFound => RpcError::invalid_params("Failed to retrieve task: Task not found"),
        EngineError::Expired => RpcError::invalid_params("Failed to retrieve task: Task has expired"),
        EngineError::Terminal(status) => RpcError::invalid_params(format!("Cannot cancel task: it is already {status}")),
        EngineError::Overloaded { queued, limit } => {
            RpcError::new(OVERLOADED, e.to_string()).with_data(json!({ "kind": "overloaded", "queued": queued, "limit": limit }))
        }
        EngineError::OwnerLimit { active, limit } => {
            RpcError::new(OVERLOADED, e.to_string()).with_data(json!({ "kind": "overloaded", "scope": "owner", "active": active, "limit": limit }))
        }
        EngineError::ShuttingDown => RpcError::new(OVERLOADED, e.to_string()).with_data(json!({ "kind": "shutting-down" })),
        EngineError::Store(s) => RpcError::internal(s.to_string()),
    }
}
