//! The task record and the status transitions MCP allows.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A task's status. `working` is the only starting point; the last three never change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl TaskStatus {
    pub const ALL: [TaskStatus; 5] = [TaskStatus::Working, TaskStatus::InputRequired, TaskStatus::Completed, TaskStatus::Failed, TaskStatus::Cancelled];

    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<TaskStatus> {
        TaskStatus::ALL.into_iter().find(|t| t.as_str() == s)
    }

    pub fn is_terminal(self) -> bool {
        matches!(self, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled)
    }

    /// Whether MCP (2025-11-25) allows going from `self` to `next`.
    pub fn can_become(self, next: TaskStatus) -> bool {
        match self {
            TaskStatus::Working => next != TaskStatus::Working,
            TaskStatus::InputRequired => next != TaskStatus::InputRequired,
            _ => false,
        }
    }
}

/// What a finished task produced: exactly what the original request would have answered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A result object (for `tools/call`, a `CallToolResult`, error results included).
    Result(Value),
    /// A JSON-RPC error object: `{code, message, data?}`.
    Error(Value),
}

/// One task as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    pub id: String,
    /// Who may see and steer the task (stdio: the local client; HTTP: a session or identity).
    pub owner: String,
    pub tool: String,
    /// The call's arguments, kept so a restarted host can run an idempotent task again.
    pub arguments: Value,
    pub status: TaskStatus,
    pub status_message: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    pub updated_at: i64,
    /// Retention from `created_at` in milliseconds; `None` keeps the task until deleted.
    pub ttl_ms: Option<i64>,
    pub poll_interval_ms: i64,
    pub progress_token: Option<Value>,
    pub idempotency_key: Option<String>,
    /// Insertion order; `tasks/list` pages by it so a cursor stays valid while tasks are added.
    pub seq: i64,
    /// The host process that runs the task; several hosts may share one database.
    pub runner: String,
}

impl Task {
    pub fn expires_at(&self) -> Option<i64> {
        self.ttl_ms.map(|ttl| self.created_at.saturating_add(ttl))
    }

    pub fn is_expired(&self, now_ms: i64) -> bool {
        self.expires_at().is_some_and(|at| now_ms >= at)
    }
}

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transitions_follow_the_spec() {
        use TaskStatus::*;
        assert!(Working.can_become(InputRequired) && Working.can_become(Completed) && Working.can_become(Cancelled));
        assert!(InputRequired.can_become(Working) && InputRequired.can_become(Failed));
        assert!(!Working.can_become(Working));
        for terminal in [Completed, Failed, Cancelled] {
            assert!(terminal.is_terminal());
            assert!(TaskStatus::ALL.iter().all(|next| !terminal.can_become(*next)), "{terminal:?} is final");
        }
        assert_eq!(TaskStatus::parse("input_required"), Some(InputRequired));
    }
}
