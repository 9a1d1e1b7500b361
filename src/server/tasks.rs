//! The MCP tasks utility (2025-11-25): task-augmented `tools/call`, `tasks/get`, `tasks/result`,
//! `tasks/list`, `tasks/cancel`, and the [`ToolRunner`] that runs a task's tool call.
//!
//! The engine stores what the runner returns without looking inside, and records cancellation
//! and interruption as outcome kinds of its own; [`result`] renders those as MCP results.

use std::any::Any;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};
use tokio::sync::SetOnce;

use super::modern::Adopted;
use super::notify::ProgressGate;
use super::results::{error_result, failure_result, violations_json, violations_summary};
use super::task_observer::TaskObserver;
use super::tools::{self, AdmittedCall};
use super::{paging, result_links, Host, Outlet};
use crate::config::Limits;
use crate::mcp::jsonrpc::notification;
use crate::mcp::types::CallToolResult;
use crate::mcp::{Params, RpcError};
use crate::registry::{violations, Registry};
use crate::runtime::{CallContext, CallObserver, Failure, Runtime, TaskSupport};
use crate::tasks::{Admission, EngineError, Finished, Outcome, Progress, Recovery, Task, TaskControl, TaskEvents, TaskRunner, TaskStatus};

/// The `_meta` key that ties a message to its task.
pub const RELATED_TASK: &str = "io.modelcontextprotocol/related-task";
const IDEMPOTENCY_KEY: &str = "corral/idempotency-key";
/// JSON-RPC code for "the host cannot take more work now" (implementation-defined range).
pub const OVERLOADED: i32 = -32000;
const LIST_PAGE: usize = 50;

/// The `Task` object as MCP shows it.
pub fn task_json(task: &Task) -> Value {
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
fn resumed_message(task: &Task) -> String {
    match task.resumed_from {
        0 => format!("running again from the start after an interruption (attempt {})", task.attempts),
        n => format!("resumed from checkpoint {n} after an interruption (attempt {})", task.attempts),
    }
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

fn task_id(params: &Map<String, Value>) -> Result<&str, RpcError> {
    Params::new(params).required_str("taskId", "")
}

/// Admits a task-augmented `tools/call` and answers `CreateTaskResult`. The arguments are
/// validated here, once: the runner does not check them again.
pub async fn create(
    host: &Host,
    owner: &str,
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
    let idempotency_key = Params::new(params).meta_str(IDEMPOTENCY_KEY)?.map(str::to_owned);
    let admission = Admission {
        owner: owner.to_owned(),
        tool: entry.name.clone(),
        arguments: call.arguments,
        requested_ttl_ms,
        progress_token: call.progress_token,
        idempotency_key,
        requestor: Some(Arc::new(observer) as Arc<dyn Any + Send + Sync>),
        events: Some(Arc::new(StatusNotifier { outlet, progress: Mutex::default() })),
        // A session's requestor lives on one replica: its tasks ask only there.
        client_capabilities: None,
        running: false,
    };
    let task = host.engine.admit(admission).await.map_err(engine_error)?;
    Ok(json!({ "task": task_json(&task) }))
}

/// `tasks/get`: the task as it is now.
pub async fn get(host: &Host, owner: &str, params: &Map<String, Value>) -> Result<Value, RpcError> {
    host.engine.get(owner, task_id(params)?).await.map(|t| task_json(&t)).map_err(engine_error)
}

/// `tasks/cancel`: the task, cancelled.
pub async fn cancel(host: &Host, owner: &str, params: &Map<String, Value>) -> Result<Value, RpcError> {
    host.engine.cancel(owner, task_id(params)?).await.map(|t| task_json(&t)).map_err(engine_error)
}

/// Cancels every unfinished task of `owner` and returns how many were cancelled: what a
/// session that owns its tasks (HTTP without auth) leaves when it ends, since no one else can
/// ever reach them (issue 17, finding 8).
pub async fn cancel_owned(host: &Host, owner: &str) -> usize {
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
pub async fn list(host: &Host, owner: &str, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let after = paging::resume(Params::new(params), "tasks/list", paging::decode_seq)?.unwrap_or(0);
    let mut tasks = host.engine.list(owner, after, LIST_PAGE + 1).await.map_err(engine_error)?;
    let more = tasks.len() > LIST_PAGE;
    tasks.truncate(LIST_PAGE);
    let mut result = json!({ "tasks": tasks.iter().map(task_json).collect::<Vec<_>>() });
    if let (true, Some(last)) = (more, tasks.last()) {
        result["nextCursor"] = json!(paging::seq_cursor(last.seq));
    }
    Ok(result)
}

/// `tasks/result`: waits for the task to end, then answers exactly what the call produced.
pub async fn result(host: &Host, owner: &str, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let id = task_id(params)?.to_owned();
    let (task, outcome) = host.engine.result(owner, &id).await.map_err(engine_error)?;
    let related = json!({ RELATED_TASK: { "taskId": id } });
    let rendered = |result: CallToolResult| serde_json::to_value(result).expect("results serialize");
    match outcome {
        Outcome::Cancelled => Ok(with_related(rendered(failure_result(&task.tool, &Failure::Cancelled)), related)),
        Outcome::Interrupted => {
            let text = format!("tool `{}` was interrupted by a host restart; it is not marked idempotent, so it was not run again", task.tool);
            Ok(with_related(rendered(error_result(text, "interrupted")), related))
        }
        Outcome::Result(value) => Ok(with_related(value, related)),
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
        self.outlet.send(notification("notifications/tasks/status", task_json(task)));
    }

    fn progress(&self, token: &Value, progress: &Progress) {
        let mut gate = self.progress.lock().unwrap();
        let gate = gate.get_or_insert_with(|| ProgressGate::new(token.clone()));
        if let Some(params) = gate.admit(progress.progress, progress.total, progress.message.clone(), Instant::now()) {
            self.outlet.send(notification("notifications/progress", params));
        }
    }
}

/// What tasks of an HTTP session without auth are owned by (`session:ID`): the session, which
/// lives in one host's memory, so its tasks end with it (issue 17, finding 8).
const SESSION_OWNER: &str = "session:";

/// The owner of the tasks of HTTP session `id` when no token names its client.
pub fn session_owner(id: &str) -> String {
    format!("{SESSION_OWNER}{id}")
}

/// Runs a task's tool call with the tool's task limits (the engine's [`TaskRunner`]).
pub struct ToolRunner {
    /// Where the task's tool is looked up when it runs (it may have been reloaded since).
    pub registry: Arc<Registry>,
    /// Runs the call.
    pub runtime: Arc<Runtime>,
    /// Counts the call like any other.
    pub metrics: Arc<super::Metrics>,
    /// The host's [`TaskInputs`](super::TaskInputs), set once the host exists (it is made after
    /// the engine, which needs this runner first): a 2026-07-28 task that runs here without its
    /// requestor asks through them.
    pub task_inputs: Arc<SetOnce<Arc<super::TaskInputs>>>,
}

impl TaskRunner for ToolRunner {
    fn run(&self, task: &Task, control: TaskControl) -> BoxFuture<'static, Finished> {
        // A 2026-07-28 call that outgrew `task_after` is already running: await it, not a new run.
        if let Some((running, call_cancel)) = control.requestor().and_then(|r| r.downcast_ref::<Adopted>()).and_then(|a| a.take(&control)) {
            let tool = task.tool.clone();
            let (expires_at, registry) = (task.expires_at(), self.registry.clone());
            return Box::pin(async move {
                let mut running = running;
                let outcome = tokio::select! {
                    done = &mut running => done,
                    _ = control.cancel().cancelled() => {
                        call_cancel.cancel();
                        running.await
                    }
                };
                let limit = registry.snapshot().tool(&tool).map_or(Limits::default().inline_result, |e| e.plugin.limits.inline_result);
                let outcome = kept(&control, expires_at, &tool, limit, outcome.unwrap_or(Err(tools::Cancelled))).await;
                finished(&tool, outcome)
            });
        }
        let registry = self.registry.clone();
        let runtime = self.runtime.clone();
        let metrics = self.metrics.clone();
        let (tool, arguments, expires_at) = (task.tool.clone(), task.arguments.clone(), task.expires_at());
        let resumed_from = if task.attempts > 1 { task.resumed_from } else { 0 };
        let has_token = task.progress_token.is_some();
        // A 2026-07-28 task whose creating request declared what its client answers.
        let kept_capabilities = task.client_capabilities.clone().filter(|_| super::modern::owns(&task.owner));
        let (task_inputs, rerun) = (self.task_inputs.clone(), task.attempts > 1);
        if task.attempts > 1 {
            control.set_message(resumed_message(task));
        }
        Box::pin(async move {
            // A task recovered at start may run before the plugins finish loading: it waits for
            // its own plugin, not for all of them.
            registry.serving(|catalog| catalog.tool(&tool).is_some()).await;
            let entry = registry.snapshot().tool(&tool).cloned();
            let Some(entry) = entry else {
                let error = RpcError::invalid_params(format!("unknown tool `{tool}`: its plugin is no longer loaded"));
                return Finished { status: TaskStatus::Failed, message: Some(error.message.clone()), outcome: Outcome::Error(json!(error)) };
            };
            // What `create` handed the engine: the requestor's notifier.
            let forward = control.requestor().and_then(|r| r.downcast_ref::<Arc<dyn CallObserver>>()).cloned();
            let cancel = control.cancel().clone();
            // A run after an interruption starts from the task's last checkpoint, if it has one.
            let resume = match resumed_from {
                0 => None,
                _ => control.last_checkpoint().await.unwrap_or_else(|e| {
                    tracing::error!(task = %control.id(), "reading the task's checkpoint failed, it starts over: {e}");
                    None
                }),
            };
            // No requestor here, yet one that asked for progress: it is on the replica that admitted
            // the task, and hears the progress through the store.
            let publish = forward.is_none() && has_token;
            // No requestor here for a 2026-07-28 task: another replica admitted it, or it runs
            // again after a crash. Its client holds the task id and polls any replica, so its
            // guest asks through the store, for what the creating request declared.
            let forward = match (forward, kept_capabilities) {
                (None, Some(kept)) => {
                    let inputs = task_inputs.wait().await.clone();
                    if rerun {
                        if let Err(e) = inputs.forget_earlier(control.id()).await {
                            tracing::warn!(task = %control.id(), "cannot forget an earlier attempt's questions: {}", e.message);
                        }
                    }
                    Some(Arc::new(super::modern::TaskInput::stored(inputs, &kept)) as Arc<dyn CallObserver>)
                }
                (forward, _) => forward,
            };
            let observer = Arc::new(TaskObserver::new(control.clone(), forward).resuming(resume.map(|(_, state)| state)).publishing(publish));
            let mut limits = entry.plugin.limits.clone();
            limits.timeout = limits.task_timeout;
            let inline_limit = limits.inline_result;
            let ctx = CallContext { limits, cancel, observer, denials: Arc::default(), time_limit: Default::default() };
            let call = AdmittedCall { entry, arguments, progress_token: None };
            let outcome = tools::run_validated(&runtime, &metrics, &call, ctx).await;
            finished(&tool, kept(&control, expires_at, &tool, inline_limit, outcome).await)
        })
    }

    fn recovery(&self, tool: &str) -> BoxFuture<'static, Recovery> {
        let (registry, tool) = (self.registry.clone(), tool.to_owned());
        Box::pin(async move {
            registry.serving(|catalog| catalog.tool(&tool).is_some()).await;
            let limits = registry.snapshot().tool(&tool).map(|t| t.plugin.limits.clone());
            limits.map_or_else(Recovery::default, |l| Recovery { resumable: l.resumable, retries: l.retries })
        })
    }

    fn may_rerun(&self, tool: &str) -> BoxFuture<'static, bool> {
        // Tasks a dead host left are looked at when this one starts, while its plugins may
        // still be loading: without them every tool would look unknown, so wait for the task's
        // own plugin (or the end of the load: then the tool is unknown for good).
        let (registry, tool) = (self.registry.clone(), tool.to_owned());
        Box::pin(async move {
            registry.serving(|catalog| catalog.tool(&tool).is_some()).await;
            registry.snapshot().tool(&tool).is_some_and(|t| t.annotations.idempotent == Some(true))
        })
    }

    fn outlives_host(&self, owner: &str) -> bool {
        // A session's tasks were reachable only through it; the local user (stdio), a token's
        // holder and the 2026-07-28 clients (who hold the task id) come back.
        !owner.starts_with(SESSION_OWNER)
    }
}

/// A task's result with its large pieces kept with the task (by reference, see
/// [`result_links`]) when it is over `limit`; one the store would not keep becomes an error
/// result saying so.
async fn kept(
    control: &TaskControl,
    expires_at: Option<i64>,
    tool: &str,
    limit: u64,
    outcome: Result<CallToolResult, tools::Cancelled>,
) -> Result<CallToolResult, tools::Cancelled> {
    let result = outcome?;
    let Some((inline, parts)) = result_links::by_reference(&result, control.id(), limit) else { return Ok(result) };
    match control.keep_result(expires_at, parts).await {
        Ok(()) => Ok(inline),
        Err(e) => Ok(result_links::not_kept(tool, result_links::payload_size(&result), limit, &e.to_string())),
    }
}

/// What a task's call came to, for the engine to store.
fn finished(tool: &str, outcome: Result<CallToolResult, tools::Cancelled>) -> Finished {
    match outcome {
        Ok(result) => {
            let status = if result.is_error { TaskStatus::Failed } else { TaskStatus::Completed };
            let message = result.is_error.then(|| failure_message(&result));
            Finished { status, message, outcome: Outcome::Result(serde_json::to_value(result).expect("results serialize")) }
        }
        Err(tools::Cancelled) => {
            let failure = Failure::Cancelled;
            let result = failure_result(tool, &failure);
            Finished {
                status: TaskStatus::Failed,
                message: Some(failure.describe(tool)),
                outcome: Outcome::Result(serde_json::to_value(result).expect("results serialize")),
            }
        }
    }
}

/// The first text of an error result, as the task's `statusMessage`.
fn failure_message(result: &CallToolResult) -> String {
    let text = result.content.iter().find_map(|c| match c {
        crate::mcp::types::ContentBlock::Text { text } => Some(text.as_str()),
        _ => None,
    });
    let text = text.unwrap_or("the tool reported an error");
    let mut message: String = text.chars().take(500).collect();
    if message.len() < text.len() {
        message.push('…');
    }
    message
}
