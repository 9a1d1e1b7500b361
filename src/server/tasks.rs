//! The MCP tasks utility (2025-11-25): task-augmented `tools/call`, `tasks/get`, `tasks/result`,
//! `tasks/list` and `tasks/cancel`.
//!
//! The engine stores what the runner ([`super::runner`]) returns without looking inside, and
//! records cancellation and interruption as outcome kinds of its own; [`result`] renders those
//! as MCP results.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::authorize::steering_owner;
use super::notify::ProgressGate;
use super::results::{error_result, failure_result, violations_json, violations_summary};
use super::runner::Requestor;
use super::task_view::{self, engine_error, interrupted_message, task_json, RELATED_TASK};
use super::tool_run::AdmittedCall;
use super::{paging, Host, Outlet};
use crate::mcp::jsonrpc::notification;
use crate::mcp::types::CallToolResult;
use crate::mcp::{Params, RpcError};
use crate::principal::Owner;
use crate::registry::violations;
use crate::runtime::{CallObserver, Failure, TaskSupport};
use crate::tasks::{Admission, Launch, Outcome, Progress, Task, TaskEvents};
use crate::telemetry::trace;

const LIST_PAGE: usize = 50;

fn task_id(params: &Map<String, Value>) -> Result<&str, RpcError> {
    Params::new(params).required_str("taskId", "")
}

/// Admits a task-augmented `tools/call` and answers `CreateTaskResult`. The arguments are
/// validated here, once: the runner does not check them again.
pub async fn create(
    host: &Host,
    owner: &Owner,
    call: AdmittedCall,
    task: &Value,
    params: &Map<String, Value>,
    outlet: Arc<dyn Outlet>,
    observer: Arc<dyn CallObserver>,
) -> Result<Value, RpcError> {
    let entry = &call.entry;
    if entry.task_support == TaskSupport::Forbidden {
        return Err(RpcError::method_not_found(format!(
            "tool `{}` cannot run as a task (its execution.taskSupport is \"forbidden\"): call it without `task`",
            entry.name
        )));
    }
    let Value::Object(task) = task else { return Err(RpcError::invalid_params("`task` must be an object such as {} or {\"ttl\": 60000}")) };
    let requested_ttl_ms = Params::new(task).optional_non_negative("ttl", "`task.ttl` must be a non-negative integer (milliseconds)")?;
    let problems = violations(&entry.input_validator, &call.arguments);
    if !problems.is_empty() {
        return Err(RpcError::invalid_params(format!("invalid arguments for tool `{}`: {}", entry.name, violations_summary(&problems)))
            .with_data(json!({ "kind": "invalid-arguments", "violations": violations_json(&problems) })));
    }
    let idempotency_key = task_view::idempotency_key(Params::new(params))?;
    let admission = Admission {
        owner: owner.key().to_owned(),
        tool: entry.name.clone(),
        plugin: Some(entry.plugin.name.clone()),
        arguments: call.arguments,
        requested_ttl_ms,
        progress_token: call.progress_token,
        idempotency_key,
        launch: Launch::QueueFor(host.runner.local_run(Requestor::Session(observer))),
        events: Some(Arc::new(StatusNotifier { outlet, progress: Mutex::default() })),
        // A session's requestor lives on one replica: its tasks ask only there.
        client_capabilities: None,
        owner_cap: super::limits::task_cap(host, owner),
        trace_context: trace::carrier(&tracing::Span::current()).map(|c| c.to_stored()),
    };
    let task = host.engine.admit(admission).await.map_err(engine_error)?;
    crate::telemetry::trace::created_task(&tracing::Span::current(), &task.id);
    Ok(json!({ "task": task_json(&task) }))
}

/// `tasks/get`: the task as it is now.
pub async fn get(host: &Host, owner: &Owner, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let id = task_id(params)?;
    let owner = steering_owner(host, owner, id).await?;
    host.engine.get(owner.key(), id).await.map(|t| task_json(&t)).map_err(engine_error)
}

/// `tasks/cancel`: the task, cancelled.
pub async fn cancel(host: &Host, owner: &Owner, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let id = task_id(params)?;
    let owner = steering_owner(host, owner, id).await?;
    host.engine.cancel(owner.key(), id).await.map(|t| task_json(&t)).map_err(engine_error)
}

/// Cancels every unfinished task of `owner` and returns how many were cancelled: what a
/// session that owns its tasks (HTTP without auth) leaves when it ends, since no one else can
/// ever reach them.
pub async fn cancel_owned(host: &Host, owner: &Owner) -> usize {
    let owner = owner.key();
    let (mut after, mut cancelled) = (0, 0);
    loop {
        let page = match host.engine.list(owner, after, LIST_PAGE).await {
            Ok(page) => page,
            Err(e) => {
                tracing::warn!(owner, "cannot list the tasks of an ended session: {e}");
                return cancelled;
            }
        };
        let Some(last) = page.last() else { return cancelled };
        after = last.seq;
        for task in page.iter().filter(|t| !t.status.is_terminal()) {
            match host.engine.cancel(owner, &task.id).await {
                Ok(_) => cancelled += 1,
                Err(e) => tracing::debug!(task = %task.id, "not cancelled at session end: {e}"),
            }
        }
    }
}

/// `tasks/list`: the owner's tasks in creation order, a page at a time.
pub async fn list(host: &Host, owner: &Owner, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let after = paging::resume(Params::new(params), "tasks/list", paging::decode_seq)?.unwrap_or(0);
    let mut tasks = host.engine.list(owner.key(), after, LIST_PAGE + 1).await.map_err(engine_error)?;
    let more = tasks.len() > LIST_PAGE;
    tasks.truncate(LIST_PAGE);
    let mut result = json!({ "tasks": tasks.iter().map(task_json).collect::<Vec<_>>() });
    if let (true, Some(last)) = (more, tasks.last()) {
        result["nextCursor"] = json!(paging::seq_cursor(last.seq));
    }
    Ok(result)
}

/// `tasks/result`: waits for the task to end, then answers exactly what the call produced.
pub async fn result(host: &Host, owner: &Owner, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let id = task_id(params)?.to_owned();
    let owner = steering_owner(host, owner, &id).await?;
    let (task, outcome) = host.engine.result(owner.key(), &id).await.map_err(engine_error)?;
    let related = json!({ RELATED_TASK: { "taskId": id } });
    let rendered = |result: CallToolResult| serde_json::to_value(result).expect("results serialize");
    match outcome {
        Outcome::Cancelled => Ok(with_related(rendered(failure_result(&task.tool, &Failure::Cancelled)), related)),
        Outcome::Interrupted => Ok(with_related(rendered(error_result(interrupted_message(&task.tool), "interrupted")), related)),
        Outcome::Result(value) | Outcome::Failed { result: value, .. } => Ok(with_related(value, related)),
        Outcome::Error(error) => {
            let code = error["code"].as_i64().unwrap_or(-32603) as i32;
            let message = error["message"].as_str().unwrap_or("the task failed").to_owned();
            let mut data = error.get("data").cloned().unwrap_or_else(|| json!({}));
            if let Value::Object(d) = &mut data {
                d.insert("_meta".into(), related);
            }
            Err(RpcError::new(code, message).with_data(data))
        }
    }
}

/// `value` with the related-task `_meta` patched in.
fn with_related(mut value: Value, related: Value) -> Value {
    if let Value::Object(object) = &mut value {
        let meta = object.entry("_meta").or_insert_with(|| json!({}));
        if let (Value::Object(meta), Value::Object(related)) = (meta, related) {
            meta.extend(related);
        }
    }
    value
}

/// Sends `notifications/tasks/status` to the session that created the task, and the progress
/// of a task another replica runs (which reaches this host through the store) as
/// `notifications/progress`, through the same increasing-and-thinned gate as a local call's.
struct StatusNotifier {
    outlet: Arc<dyn Outlet>,
    /// Made at the first relayed report.
    progress: Mutex<Option<ProgressGate>>,
}

impl TaskEvents for StatusNotifier {
    fn status_changed(&self, task: &Task) {
        self.outlet.send(notification("notifications/tasks/status", &task_json(task)));
    }

    fn progress(&self, token: &Value, progress: &Progress) {
        let mut gate = self.progress.lock().unwrap();
        let gate = gate.get_or_insert_with(|| ProgressGate::new(token.clone()));
        if let Some(params) = gate.admit(progress.progress, progress.total, progress.message.clone(), Instant::now()) {
            self.outlet.send(notification("notifications/progress", &params));
        }
    }
}
