//! The task runner: runs a task's tool call for the engine, in either era, with the tool's
//! task limits.
//!
//! It sits below both eras' task methods, which hand the engine a [`LocalRun`] made here for
//! their requestor ([`ToolRunner::local_run`]); the engine runs a task whose requestor is not
//! here (recovered after a restart, or claimed from another replica) through
//! [`TaskRunner::run`]. The requestor is typed ([`Requestor`]): what a task reports and asks goes
//! to a 2025-11-25 session's notifier, or waits for a 2026-07-28 `tasks/update`.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::json;
use tokio::sync::SetOnce;

use super::modern::TaskInput;
use super::results::failure_result;
use super::task_observer::TaskObserver;
use super::task_view::resumed_message;
use super::tool_run::{self, AdmittedCall, Called, Cancelled};
use super::{result_links, Metrics, TaskInputs};
use crate::audit::{Audit, TaskRun};
use crate::mcp::types::{CallToolResult, ContentBlock};
use crate::mcp::RpcError;
use crate::principal::{Owner, Wire};
use crate::registry::Registry;
use crate::runtime::{CallContext, CallObserver, Failure, Runtime};
use crate::secrets::Resolver;
use crate::tasks::{Finished, LocalRun, Outcome, Recovery, Task, TaskControl, TaskRunner, TaskStatus};

/// Who a task reports to and asks while the client that created it is reachable from here.
pub(super) enum Requestor {
    /// A 2025-11-25 session: progress and logs go to it, and it is asked directly
    /// (elicitation, sampling) while the task waits `input_required`.
    Session(Arc<dyn CallObserver>),
    /// A 2026-07-28 client: it polls, so questions wait with the task for `tasks/update`.
    Stateless(Arc<TaskInput>),
}

/// Runs a task's tool call with the tool's task limits (the engine's [`TaskRunner`]).
#[derive(Clone)]
pub struct ToolRunner {
    /// Where the task's tool is looked up when it runs (it may have been reloaded since).
    registry: Arc<Registry>,
    /// Runs the call.
    runtime: Arc<Runtime>,
    /// Counts the call like any other.
    metrics: Arc<Metrics>,
    /// Records the call like any other, with its task and attempt.
    audit: Audit,
    /// Resolves the secrets of each call's plugin for the task's owner.
    secrets: Arc<Resolver>,
    /// The host's [`TaskInputs`], set once the host exists (it is made after the engine, which
    /// needs this runner first): a 2026-07-28 task that runs here without its requestor asks
    /// through them.
    task_inputs: Arc<SetOnce<Arc<TaskInputs>>>,
    /// The last progress of the tasks running here, for the operator's console.
    progress: Arc<super::progress_board::ProgressBoard>,
}

impl ToolRunner {
    /// A runner of the tools in `registry`.
    pub fn new(registry: Arc<Registry>, runtime: Arc<Runtime>, metrics: Arc<Metrics>) -> ToolRunner {
        ToolRunner { registry, runtime, metrics, audit: Audit::off(), secrets: Arc::default(), task_inputs: Arc::default(), progress: Arc::default() }
    }

    /// The last progress of the tasks running here.
    pub(super) fn progress(&self) -> &super::progress_board::ProgressBoard {
        &self.progress
    }

    /// The same runner, recording each call it runs in `audit`.
    pub fn auditing(self, audit: Audit) -> ToolRunner {
        ToolRunner { audit, ..self }
    }

    /// The same runner, resolving each call's secrets through `secrets`.
    pub fn resolving(self, secrets: Arc<Resolver>) -> ToolRunner {
        ToolRunner { secrets, ..self }
    }

    /// Gives the runner the host's task inputs (see the field); once.
    pub(super) fn give_task_inputs(&self, inputs: Arc<TaskInputs>) {
        let _ = self.task_inputs.set(inputs);
    }

    /// How a worker runs a task admitted here for `requestor`.
    pub(super) fn local_run(&self, requestor: Requestor) -> LocalRun {
        let runner = self.clone();
        Box::new(move |task, control| runner.run_for(task, control, Some(requestor)))
    }

    fn run_for(&self, task: &Task, control: TaskControl, requestor: Option<Requestor>) -> BoxFuture<'static, Finished> {
        let (registry, runtime, metrics, audit) = (self.registry.clone(), self.runtime.clone(), self.metrics.clone(), self.audit.clone());
        let secrets = self.secrets.clone();
        let (owner, run) = (task.owner.clone(), TaskRun { id: task.id.clone(), attempt: task.attempts });
        let (tool, arguments, expires_at) = (task.tool.clone(), task.arguments.clone(), task.expires_at());
        let resumed_from = if task.attempts > 1 { task.resumed_from } else { 0 };
        let has_token = task.progress_token.is_some();
        // A 2026-07-28 task whose creating request declared what its client answers.
        let stateless = Owner::parse(&task.owner).is_some_and(|owner| owner.wire() == Wire::Stateless);
        let kept_capabilities = task.client_capabilities.clone().filter(|_| stateless);
        let (task_inputs, rerun) = (self.task_inputs.clone(), task.attempts > 1);
        let board = self.progress.clone();
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
            let cancel = control.cancel().clone();
            // A run after an interruption starts from the task's last checkpoint, if it has one.
            let resume = match resumed_from {
                0 => None,
                _ => control.last_checkpoint().await.unwrap_or_else(|e| {
                    tracing::error!(task = %control.id(), "reading the task's checkpoint failed, it starts over: {e}");
                    None
                }),
            };
            // No requestor here, yet one that asked for progress: it is on the replica that
            // admitted the task, and hears the progress through the store.
            let publish = requestor.is_none() && has_token;
            let forward: Option<Arc<dyn CallObserver>> = match requestor {
                Some(Requestor::Session(notifier)) => Some(notifier),
                Some(Requestor::Stateless(input)) => Some(input),
                // No requestor here for a 2026-07-28 task: another replica admitted it, or it
                // runs again after a crash. Its client holds the task id and polls any replica,
                // so its guest asks through the store, for what the creating request declared.
                None => match kept_capabilities {
                    Some(kept) => {
                        let inputs = task_inputs.wait().await.clone();
                        if rerun {
                            if let Err(e) = inputs.forget_earlier(control.id()).await {
                                tracing::warn!(task = %control.id(), "cannot forget an earlier attempt's questions: {}", e.message);
                            }
                        }
                        Some(Arc::new(TaskInput::stored(inputs, &kept)))
                    }
                    None => None,
                },
            };
            let observer = TaskObserver::new(control.clone(), forward).resuming(resume.map(|(_, state)| state)).publishing(publish);
            let observer = Arc::new(observer.reporting(board.clone()));
            let mut limits = entry.plugin.limits.clone();
            limits.timeout = limits.task_timeout;
            let inline_limit = limits.inline_result;
            let ctx = CallContext::for_request(limits, cancel, observer);
            let call = AdmittedCall { entry, arguments, progress_token: None };
            let runs = tool_run::Runs { runtime: &runtime, metrics: &metrics, audit: &audit, secrets: &secrets };
            let outcome = tool_run::run_validated(runs, tool_run::Caller { owner: &owner, task: Some(run) }, &call, ctx).await;
            board.forget(control.id());
            finished(&tool, kept(&control, expires_at, &tool, inline_limit, outcome).await)
        })
    }
}

impl TaskRunner for ToolRunner {
    fn run(&self, task: &Task, control: TaskControl) -> BoxFuture<'static, Finished> {
        self.run_for(task, control, None)
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
        // A key this host never wrote is kept, not cancelled: nothing says it ended.
        Owner::parse(owner).is_none_or(|owner| owner.outlives_host())
    }
}

/// A task's result with its large pieces kept with the task (by reference, see
/// [`result_links`]) when it is over `limit`; one the store would not keep becomes an error
/// result saying so.
pub(super) async fn kept(
    control: &TaskControl,
    expires_at: Option<i64>,
    tool: &str,
    limit: u64,
    outcome: Result<Called, Cancelled>,
) -> Result<Called, Cancelled> {
    let called = outcome?;
    let Some((inline, parts)) = result_links::by_reference(&called.result, control.id(), limit) else { return Ok(called) };
    match control.keep_result(expires_at, parts).await {
        Ok(()) => Ok(Called { result: inline, ..called }),
        Err(e) => {
            let result = result_links::not_kept(tool, result_links::payload_size(&called.result), limit, &e.to_string());
            Ok(Called { result, failure: Some(result_links::NOT_KEPT) })
        }
    }
}

/// What a task's call came to, for the engine to store: a tool's own result, or a failure the
/// host imposed, by its kind.
pub(super) fn finished(tool: &str, outcome: Result<Called, Cancelled>) -> Finished {
    let (result, failure) = match outcome {
        Ok(Called { result, failure }) => (result, failure),
        Err(Cancelled) => (failure_result(tool, &Failure::Cancelled), Some(Failure::Cancelled.kind())),
    };
    let status = if result.is_error { TaskStatus::Failed } else { TaskStatus::Completed };
    let message = result.is_error.then(|| failure_message(&result));
    let value = serde_json::to_value(result).expect("results serialize");
    let outcome = match failure {
        Some(kind) => Outcome::Failed { kind: kind.to_owned(), result: value },
        None => Outcome::Result(value),
    };
    Finished { status, message, outcome }
}

/// The first text of an error result, as the task's `statusMessage`.
fn failure_message(result: &CallToolResult) -> String {
    let text = result.content.iter().find_map(|c| match c {
        ContentBlock::Text { text } => Some(text.as_str()),
        _ => None,
    });
    let text = text.unwrap_or("the tool reported an error");
    let mut message: String = text.chars().take(500).collect();
    if message.len() < text.len() {
        message.push('…');
    }
    message
}
