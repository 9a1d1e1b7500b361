//! The task record and the status transitions MCP allows.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A task's status. `working` is the only starting point; the last three never change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// Running or queued to run.
    Working,
    /// Waiting for the client (an elicitation or a sampling request).
    InputRequired,
    /// Ended with a result.
    Completed,
    /// Ended with an error (an error result, a failure, or a host restart).
    Failed,
    /// Ended because the client cancelled it.
    Cancelled,
}

impl TaskStatus {
    /// Every status, in the order metrics list them.
    pub const ALL: [TaskStatus; 5] = [TaskStatus::Working, TaskStatus::InputRequired, TaskStatus::Completed, TaskStatus::Failed, TaskStatus::Cancelled];

    /// The status as MCP spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }

    /// The status spelled `s`, as [`TaskStatus::as_str`] writes it.
    pub fn parse(s: &str) -> Option<TaskStatus> {
        TaskStatus::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// Whether the status is final (`completed`, `failed`, `cancelled`).
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

/// One progress report of a running task (`notifications/progress` without its token): what a
/// replica that runs a task another replica admitted passes on, so the session that created it
/// hears it there ([`TaskEvents::progress`](super::TaskEvents::progress)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// How far the work is (increasing).
    pub progress: f64,
    /// Where it ends, when the guest knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// What the guest says it is doing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// What a finished task produced. The engine never looks inside the values: `Result`, `Failed`
/// and `Error` hold what the runner returned, and the two kinds the engine records itself
/// (`Cancelled`, `Interrupted`) are rendered by the layer that knows the protocol when a client
/// asks. Which kind it is is stored in a column of its own ([`OutcomeKind`]), so a reader tells
/// a tool's own result from a failure the host imposed without looking into the JSON.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// The call's own result (for `tools/call`, a `CallToolResult`, the tool's error results
    /// included).
    Result(Value),
    /// A failure the host imposed on the call (a limit, a trap, output that broke its schema):
    /// `kind` names it (`timeout`, `fuel-exhausted`, …); `result` is the error result made for
    /// it, which a 2025-11-25 `tasks/result` answers as it is.
    Failed {
        /// The failure's kind, as metrics and `error.data.kind` name it.
        kind: String,
        /// The error result made for it.
        result: Value,
    },
    /// A JSON-RPC error object: `{code, message, data?}`.
    Error(Value),
    /// The client cancelled the task before it ended.
    Cancelled,
    /// A host restart interrupted the task and its tool is not safe to run again.
    Interrupted,
}

/// Which of the [`Outcome`]s a stored one is: the `kind` column beside its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutcomeKind {
    /// [`Outcome::Result`].
    Result,
    /// [`Outcome::Failed`]; its failure's kind is in a column of its own.
    Failed,
    /// [`Outcome::Error`].
    Error,
    /// [`Outcome::Cancelled`].
    Cancelled,
    /// [`Outcome::Interrupted`].
    Interrupted,
}

impl OutcomeKind {
    const ALL: [OutcomeKind; 5] = [OutcomeKind::Result, OutcomeKind::Failed, OutcomeKind::Error, OutcomeKind::Cancelled, OutcomeKind::Interrupted];

    /// The kind as the `kind` column spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Result => "result",
            OutcomeKind::Failed => "failed",
            OutcomeKind::Error => "error",
            OutcomeKind::Cancelled => "cancelled",
            OutcomeKind::Interrupted => "interrupted",
        }
    }

    /// The kind spelled `s`, as [`OutcomeKind::as_str`] writes it.
    pub fn parse(s: &str) -> Option<OutcomeKind> {
        OutcomeKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// An outcome's body as stored: the JSON of its value, in the shape every version wrote
/// (`{"result": …}`, `{"error": …}`, `"cancelled"`, `"interrupted"`), so rows written before
/// the kind had a column of its own read unchanged.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Body {
    Result(Value),
    Error(Value),
    Cancelled,
    Interrupted,
}

/// An outcome as the stores keep it: its body, its kind and, for a failure, the failure's kind.
pub struct StoredOutcome {
    /// The value, as JSON.
    pub body: Value,
    /// Which outcome it is.
    pub kind: OutcomeKind,
    /// The failure's kind, for [`Outcome::Failed`].
    pub failure: Option<String>,
}

impl Outcome {
    /// Which outcome this is.
    pub fn kind(&self) -> OutcomeKind {
        match self {
            Outcome::Result(_) => OutcomeKind::Result,
            Outcome::Failed { .. } => OutcomeKind::Failed,
            Outcome::Error(_) => OutcomeKind::Error,
            Outcome::Cancelled => OutcomeKind::Cancelled,
            Outcome::Interrupted => OutcomeKind::Interrupted,
        }
    }

    /// The stored form.
    pub fn stored(&self) -> StoredOutcome {
        let (body, failure) = match self {
            Outcome::Result(value) => (Body::Result(value.clone()), None),
            Outcome::Failed { kind, result } => (Body::Result(result.clone()), Some(kind.clone())),
            Outcome::Error(value) => (Body::Error(value.clone()), None),
            Outcome::Cancelled => (Body::Cancelled, None),
            Outcome::Interrupted => (Body::Interrupted, None),
        };
        StoredOutcome { body: serde_json::to_value(&body).expect("outcomes serialize"), kind: self.kind(), failure }
    }

    /// The outcome stored as the JSON text `body` with `kind` and `failure`. A row whose kind
    /// column is empty (or names no kind this version knows) reads by its body's shape.
    pub fn from_stored(body: &str, kind: Option<&str>, failure: Option<String>) -> Result<Outcome, serde_json::Error> {
        Ok(Outcome::from_body(serde_json::from_str(body)?, kind, failure))
    }

    /// [`Outcome::from_stored`] for a body already parsed.
    pub fn from_stored_value(body: Value, kind: Option<&str>, failure: Option<String>) -> Result<Outcome, serde_json::Error> {
        Ok(Outcome::from_body(serde_json::from_value(body)?, kind, failure))
    }

    fn from_body(body: Body, kind: Option<&str>, failure: Option<String>) -> Outcome {
        match (body, kind.and_then(OutcomeKind::parse), failure) {
            (Body::Result(result), Some(OutcomeKind::Failed), Some(kind)) => Outcome::Failed { kind, result },
            (Body::Result(value), _, _) => Outcome::Result(value),
            (Body::Error(value), _, _) => Outcome::Error(value),
            (Body::Cancelled, _, _) => Outcome::Cancelled,
            (Body::Interrupted, _, _) => Outcome::Interrupted,
        }
    }
}

/// A question a running task waits on, kept with the task so that any host can show it and
/// take its answer (the 2026-07-28 tasks extension's `inputRequests`); opaque to the store.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskQuestion {
    /// The key the client answers under, unique over the task's life.
    pub key: String,
    /// What is asked (`{method, params}`).
    pub request: serde_json::Value,
    /// The client's answer, once one came (checked against the question before it was kept).
    pub answer: Option<serde_json::Value>,
}

/// One task as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Task {
    /// A UUID, the `taskId` clients see.
    pub id: String,
    /// Who may see and steer the task (stdio: the local client; HTTP: a session or identity).
    pub owner: String,
    /// The tool the task calls.
    pub tool: String,
    /// The plugin that serves the tool, when the admitting host said (`None` for rows stored
    /// before it was recorded): what an operator filters a fleet's tasks by.
    pub plugin: Option<String>,
    /// The call's arguments, kept so a restarted host can run an idempotent task again.
    pub arguments: Value,
    /// Where the task is in its life.
    pub status: TaskStatus,
    /// What a client is shown beside the status (`statusMessage`).
    pub status_message: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    /// When the status last changed, in milliseconds since the Unix epoch.
    pub updated_at: i64,
    /// Retention from `created_at` in milliseconds; `None` keeps the task until deleted.
    pub ttl_ms: Option<i64>,
    /// How often clients are asked to poll, in milliseconds.
    pub poll_interval_ms: i64,
    /// The `progressToken` of the request that created the task.
    pub progress_token: Option<Value>,
    /// The owner's `corral/idempotency-key`: the same key names the same task while it is kept.
    pub idempotency_key: Option<String>,
    /// Insertion order; `tasks/list` pages by it so a cursor stays valid while tasks are added.
    pub seq: i64,
    /// The host process that runs the task; several hosts may share one database.
    pub runner: String,
    /// How many times a worker has taken the task, counted in the store when it starts: 1 for
    /// the first run, more when it ran again after an interruption.
    pub attempts: u32,
    /// The number of the task's last checkpoint (1 for the first); 0 when it has none.
    pub checkpoint: u64,
    /// The checkpoint the current attempt started from, as it was when a worker took the task
    /// (0: from the start). `checkpoint` moves on as the attempt checkpoints; this does not.
    pub resumed_from: u64,
    /// What the client that created the task declared it can answer (a 2026-07-28 request's
    /// client capabilities), kept opaque: a replica that runs the task without that request in
    /// hand (load spreading, a crash) still asks the client only what it declared. `None` for
    /// tasks whose requestor is a session (2025-11-25) and for rows written before it existed.
    pub client_capabilities: Option<Value>,
    /// Whether a worker has taken the task (`started_at` is set). A 2026-07-28 call adopted as a
    /// task is stored started: its guest already runs, so no other replica may claim it as
    /// waiting, and a crash before its worker's `start` must not make it look never run.
    pub started: bool,
    /// The W3C trace context of the request that created the task (`traceparent`, then
    /// `tracestate` on a line of its own; `telemetry::trace::Carrier`), when traces were
    /// exported: its runs, on any host and after any crash, continue that trace.
    pub trace_context: Option<String>,
}

impl Task {
    /// When the task may be deleted, in milliseconds since the Unix epoch.
    pub fn expires_at(&self) -> Option<i64> {
        self.ttl_ms.map(|ttl| self.created_at.saturating_add(ttl))
    }

    /// Whether the task's TTL has passed at `now_ms`.
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
