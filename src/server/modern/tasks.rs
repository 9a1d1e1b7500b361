//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the same engine and store
//! as 2025-11-25's tasks.
//!
//! The server alone decides, per request, whether a call becomes a task, from the tool's task
//! policy and only for a request that declares the extension: `required` always does; `optional`
//! starts at once and answers inline when it finishes within `task_after`, and past that the
//! call already running is handed to the engine ([`Adopted`]) and the client gets a flat
//! `CreateTaskResult`, written to the store first so that an immediate `tasks/get` finds it.
//!
//! A task created on this wire belongs to the requestor's principal on this wire
//! ([`Wire::Stateless`](crate::principal::Wire)), so it is read on this wire only. `tasks/get` inlines the outcome: a tool's own `isError` result is `completed`
//! (the extension's rule), while a failure the host imposed (timeout, fuel, memory, trap, ...)
//! is `failed` with an `error` whose `data.kind` names it.

use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use serde_json::{json, Map, Value};

use super::task_input::TaskInput;
use crate::cancel::CancelHandle;
use crate::mcp::modern::wire::{self, COMPLETE};
use crate::mcp::modern::ClientCapabilities;
use crate::mcp::{Params, RpcError};
use crate::principal::Owner;
use crate::runtime::CallObserver;
use crate::server::authorize::steering_owner;
use crate::server::runner::{finished, kept, Requestor};
use crate::server::task_observer::TaskObserver;
use crate::server::task_view::{engine_error, interrupted_message, iso8601, resumed_meta};
use crate::server::tool_run::{AdmittedCall, Called, Cancelled};
use crate::server::Host;
use crate::tasks::{Admission, EngineError, Launch, LocalRun, Outcome, Task, TaskControl, TaskStatus};
use crate::telemetry::trace;

/// `resultType` of a `CreateTaskResult`.
const TASK: &str = "task";

/// A call that was already running when it became a task (an `optional` tool past
/// `task_after`): the engine holds its cancel handle from the moment it is a task and awaits it
/// instead of starting the tool again. From then on the call's questions go to the task (they
/// wait for `tasks/update`) instead of ending the request.
pub(in crate::server) struct RunningCall {
    /// The call, polled so far by its request.
    pub(in crate::server) call: BoxFuture<'static, Result<Called, Cancelled>>,
    /// The handle its guest watches.
    pub(in crate::server) cancel: CancelHandle,
    /// Where the call's observer looks for the task.
    pub(in crate::server) asks: Arc<AdoptedAsks>,
    /// What answers the task's questions.
    pub(in crate::server) input: Arc<TaskInput>,
}

/// Where an adopted call's questions and checkpoints go once the engine runs it: shared by the
/// call's `ModernObserver` and its [`Adopted`].
#[derive(Default)]
pub(in crate::server) struct AdoptedAsks {
    task: Mutex<Option<Arc<dyn CallObserver>>>,
    /// The call's last checkpoint before it became a task (kept for the call only until then),
    /// stored with the task the moment it is adopted.
    pending: Mutex<Option<Vec<u8>>>,
    /// Keeps the checkpoints of an adopted call in the order the guest made them: the one made
    /// before adoption is stored first (a fair lock serves its waiters in turn).
    order: Arc<tokio::sync::Mutex<()>>,
}

impl AdoptedAsks {
    /// The task's observer, once the call is a task.
    pub(in crate::server) fn task(&self) -> Option<Arc<dyn CallObserver>> {
        self.task.lock().unwrap().clone()
    }

    /// Where a checkpoint of the call goes: to the task once there is one (durably, after any
    /// checkpoint still being stored), else kept here for the moment the call is adopted, and
    /// for the call only (`None`) until then.
    pub(in crate::server) fn checkpoint(&self, state: &[u8]) -> Option<BoxFuture<'static, Result<(), String>>> {
        let mut pending = self.pending.lock().unwrap();
        let Some(task) = self.task() else {
            *pending = Some(state.to_vec());
            return None;
        };
        let order = self.order.clone();
        let stored = task.checkpoint(state)?;
        Some(Box::pin(async move {
            let _turn = order.lock().await;
            stored.await
        }))
    }

    /// Makes `observer` the call's from now on; the checkpoint the call made before, if any,
    /// goes to the task first.
    fn adopt(&self, observer: Arc<dyn CallObserver>) {
        let mut pending = self.pending.lock().unwrap();
        let earlier = pending.take().and_then(|state| observer.checkpoint(&state));
        *self.task.lock().unwrap() = Some(observer);
        if let Some(earlier) = earlier {
            // Taken now, before any later checkpoint can ask for it.
            let turn = self.order.clone().try_lock_owned().expect("nothing waits before the call is adopted");
            tokio::spawn(async move {
                if let Err(e) = earlier.await {
                    tracing::warn!("the checkpoint an adopted call made before it became a task was not stored: {e}");
                }
                drop(turn);
            });
        }
    }
}

impl RunningCall {
    /// How the engine runs the call from the moment it is a task: its questions go to the
    /// task, then its outcome is kept like any task's.
    fn launch(self, call: &AdmittedCall) -> Launch {
        let RunningCall { call: running, cancel, asks, input } = self;
        let (tool, limit) = (call.entry.name.clone(), call.entry.plugin.limits.inline_result);
        let run: LocalRun = Box::new(move |task: &Task, control: TaskControl| {
            let expires_at = task.expires_at();
            let input: Arc<dyn CallObserver> = input;
            asks.adopt(Arc::new(TaskObserver::new(control.clone(), Some(input))));
            Box::pin(async move {
                let outcome = running.await;
                finished(&tool, kept(&control, expires_at, &tool, limit, outcome).await)
            })
        });
        Launch::Running { cancel, run }
    }
}

/// The `Task` fields both `CreateTaskResult` and `DetailedTask` carry.
fn task_fields(task: &Task, status: &str) -> Map<String, Value> {
    let mut t = Map::new();
    t.insert("taskId".into(), json!(task.id));
    t.insert("status".into(), json!(status));
    t.insert("createdAt".into(), json!(iso8601(task.created_at)));
    t.insert("lastUpdatedAt".into(), json!(iso8601(task.updated_at)));
    t.insert("ttlMs".into(), json!(task.ttl_ms));
    t.insert("pollIntervalMs".into(), json!(task.poll_interval_ms));
    if let Some(m) = &task.status_message {
        t.insert("statusMessage".into(), json!(m));
    }
    if let Some(resumed) = resumed_meta(task) {
        t.insert("_meta".into(), json!({ "corral/resumed": resumed }));
    }
    t
}

/// Admits `call` as a task (its arguments were validated by the shared admission) and answers
/// the flat `CreateTaskResult`. `running` is the call already going, when there is one; else
/// the task's guest asks through [`TaskInput`] (questions wait for `tasks/update`), for the
/// `capabilities` the creating request declared. With an `idempotency_key` the owner used
/// before (the task still kept), the answer is that task and nothing runs: a client that lost
/// the answer to a creation may send it again.
pub(in crate::server) async fn create(
    host: &Host,
    owner: &Owner,
    call: &AdmittedCall,
    running: Option<RunningCall>,
    capabilities: ClientCapabilities,
    idempotency_key: Option<String>,
) -> Result<Value, RpcError> {
    let launch = match running {
        Some(running) => running.launch(call),
        None => {
            let input = Arc::new(TaskInput::new(host.task_inputs.clone(), capabilities));
            Launch::QueueFor(host.runner.local_run(Requestor::Stateless(input)))
        }
    };
    let admission = Admission {
        owner: owner.key().to_owned(),
        tool: call.entry.name.clone(),
        plugin: Some(call.entry.plugin.name.clone()),
        arguments: call.arguments.clone(),
        requested_ttl_ms: None,
        progress_token: None,
        idempotency_key,
        launch,
        events: None,
        client_capabilities: Some(super::task_input::kept(capabilities)),
        owner_cap: crate::server::limits::task_cap(host, owner),
        trace_context: trace::carrier(&tracing::Span::current()).map(|c| c.to_stored()),
    };
    let task = host.engine.admit(admission).await.map_err(engine_error)?;
    crate::telemetry::trace::created_task(&tracing::Span::current(), &task.id);
    Ok(created(&task))
}

/// The flat `CreateTaskResult` naming `task`.
pub(in crate::server) fn created(task: &Task) -> Value {
    wire::result(Value::Object(task_fields(task, task.status.as_str())), TASK, None)
}

fn task_id(params: &Map<String, Value>) -> Result<&str, RpcError> {
    Params::new(params).required_str("taskId", "the id a CreateTaskResult gave")
}

/// An unknown (or another owner's) task: -32602, as the extension asks.
fn not_found(e: EngineError) -> RpcError {
    match e {
        EngineError::NotFound | EngineError::Expired => RpcError::invalid_params(format!("Failed to retrieve task: {e}")),
        other => engine_error(other),
    }
}

fn first_text(result: &Value) -> Option<String> {
    result.get("content")?.as_array()?.iter().find_map(|c| c.get("text").and_then(Value::as_str)).map(str::to_owned)
}

/// A tool's result as this era carries it, `resultType` included: ext-tasks 0.2.2 decodes an
/// inlined result as a `CallToolResult` of 2026-07-28 and refuses one without it.
fn complete(mut result: Value) -> Value {
    if let Value::Object(fields) = &mut result {
        fields.insert("resultType".into(), json!(COMPLETE));
    }
    result
}

/// `tasks/get`: the `DetailedTask`, with the outcome inlined once the task has ended; one store
/// read either way.
pub(in crate::server) async fn get(host: &Host, owner: &Owner, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let id = task_id(params)?;
    let owner = steering_owner(host, owner, id).await?;
    let (task, outcome) = host.engine.get_with_outcome(owner.key(), id).await.map_err(not_found)?;
    let Some(outcome) = outcome else {
        let mut fields = task_fields(&task, task.status.as_str());
        if task.status == TaskStatus::InputRequired {
            // What the guest waits for, wherever it runs.
            if let Some(requests) = host.task_inputs.outstanding(&task.id).await? {
                fields.insert("inputRequests".into(), Value::Object(requests));
            }
        }
        return Ok(wire::result(Value::Object(fields), COMPLETE, None));
    };
    let failed = |code: i64, message: String, kind: &str| json!({ "code": code, "message": message, "data": { "kind": kind } });
    let (status, key, value) = match outcome {
        Outcome::Result(result) => ("completed", "result", complete(result)),
        Outcome::Failed { kind, result } => {
            let message = first_text(&result).unwrap_or_else(|| format!("the call ended with `{kind}`"));
            ("failed", "error", failed(-32603, message, &kind))
        }
        Outcome::Error(error) => ("failed", "error", error),
        Outcome::Cancelled => ("cancelled", "", Value::Null),
        Outcome::Interrupted => ("failed", "error", failed(-32603, interrupted_message(&task.tool), "interrupted")),
    };
    let mut fields = task_fields(&task, status);
    if !key.is_empty() {
        fields.insert(key.into(), value);
    }
    Ok(wire::result(Value::Object(fields), COMPLETE, None))
}

/// `tasks/cancel`: an empty acknowledgement, the same for a task that has already ended.
pub(in crate::server) async fn cancel(host: &Host, owner: &Owner, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let id = task_id(params)?;
    let owner = steering_owner(host, owner, id).await?;
    match host.engine.cancel(owner.key(), id).await {
        Ok(_) | Err(EngineError::Terminal(_)) => Ok(wire::result(json!({}), COMPLETE, None)),
        Err(e) => Err(not_found(e)),
    }
}

/// `tasks/update`: delivers input responses to a task of this owner, whichever replica its guest
/// waits on, and acknowledges (empty). Keys that are not outstanding are ignored; an answer that
/// does not fit its question is -32602 and nothing is delivered.
pub(in crate::server) async fn update(host: &Host, owner: &Owner, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let id = task_id(params)?;
    let responses = Params::new(params).object_or("inputResponses", "missing `inputResponses`: an object of answers keyed like the task's inputRequests")?;
    let responses = responses.map().clone();
    let owner = steering_owner(host, owner, id).await?;
    host.engine.get(owner.key(), id).await.map_err(not_found)?;
    host.task_inputs.deliver(id, &responses).await?;
    Ok(wire::result(json!({}), COMPLETE, None))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::LogLevel;

    /// Records the checkpoints it is asked to store, in the order they are stored.
    #[derive(Default)]
    struct Recorder(Arc<Mutex<Vec<Vec<u8>>>>);

    impl CallObserver for Recorder {
        fn log(&self, _: LogLevel, _: &str) {}
        fn progress(&self, _: f64, _: Option<f64>, _: Option<String>) {}
        fn checkpoint(&self, state: &[u8]) -> Option<BoxFuture<'static, Result<(), String>>> {
            let (stored, state) = (self.0.clone(), state.to_vec());
            Some(Box::pin(async move {
                // Slow to store: a later checkpoint must still come after it.
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                stored.lock().unwrap().push(state);
                Ok(())
            }))
        }
    }

    #[tokio::test]
    async fn an_adopted_calls_last_checkpoint_before_adoption_is_stored_first_then_the_later_ones() {
        let asks = AdoptedAsks::default();
        assert!(asks.checkpoint(b"1").is_none(), "a plain call keeps its checkpoint for the call only");
        assert!(asks.checkpoint(b"2").is_none());
        let recorder = Recorder::default();
        let stored = recorder.0.clone();
        asks.adopt(Arc::new(recorder));
        asks.checkpoint(b"3").expect("a task's checkpoint is stored").await.unwrap();
        asks.checkpoint(b"4").expect("stored").await.unwrap();
        assert_eq!(*stored.lock().unwrap(), [b"2".to_vec(), b"3".to_vec(), b"4".to_vec()], "the last one before adoption, then the rest in order");
    }
}
