//! Running one admitted tool call, whatever its era, transport or task: the guest under its
//! permit, the figures counted and the audit record written, in one place. Below the
//! handlers and the task runner alike, so it needs nothing of the [`super::Host`] they share.

use std::sync::Arc;

use serde_json::Value;
use tracing::Instrument;

use super::call_secrets::{redact_result, unresolved_result, Redacting, SECRET_UNAVAILABLE};
use super::results::{failure_result, invalid_arguments_result, note_denials, tool_result, INVALID_ARGUMENTS};
use super::{with_permit, Metrics};
use crate::audit::{Audit, CallOutcome, CallRecord, CallSecrets, Reached, Subject, TaskRun};
use crate::mcp::types::CallToolResult;
use crate::registry::{violations, ToolEntry};
use crate::runtime::{CallContext, Failure, Runtime};
use crate::secrets::Resolver;
use crate::telemetry::trace;

/// A `tools/call` that passed the protocol checks and is ready to run.
pub struct AdmittedCall {
    /// The tool, from the catalog at admission: a reload does not change a call in flight.
    pub entry: Arc<ToolEntry>,
    /// The arguments object (`{}` when the client sent none).
    pub arguments: Value,
    /// Where the call's progress goes, when the client asked for progress.
    pub progress_token: Option<Value>,
}

/// The caller cancelled the call and wants no answer (MCP sends none): the one way a call
/// ends without a `CallToolResult`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cancelled;

/// What a call came to: its result, and the kind of the failure the host imposed on it (a
/// limit, a trap, output that broke its schema), which the result also reports as an error.
pub struct Called {
    /// The `CallToolResult`.
    pub result: CallToolResult,
    /// The failure's kind (`timeout`, `fuel-exhausted`, …); `None` when the tool answered.
    pub failure: Option<&'static str>,
}

/// What running a call needs of the host: the runtime, and where its figures go.
#[derive(Clone, Copy)]
pub struct Runs<'a> {
    /// Runs the guest.
    pub runtime: &'a Runtime,
    /// Counts the call by tool and outcome, with its latency, fuel and memory.
    pub metrics: &'a Metrics,
    /// Records the call (`--audit-log`).
    pub audit: &'a Audit,
    /// Resolves the secrets the call's plugin declares, for its caller.
    pub secrets: &'a Resolver,
}

/// Who a call acts for, as the audit trail names them.
pub struct Caller<'a> {
    /// The owner key of the request (or task) the call runs for.
    pub owner: &'a str,
    /// The task it runs for, if it runs as one.
    pub task: Option<TaskRun>,
}

/// Runs an admitted call to its result. Validation failures and limits become `isError`
/// results; `Err(Cancelled)` means the caller cancelled and wants no answer.
pub async fn run(runs: Runs<'_>, caller: Caller<'_>, call: &AdmittedCall, ctx: CallContext) -> Result<Called, Cancelled> {
    run_counted(runs, caller, call, ctx, true).await
}

/// Like [`run`], for arguments already validated (a task's, checked at admission).
pub async fn run_validated(runs: Runs<'_>, caller: Caller<'_>, call: &AdmittedCall, ctx: CallContext) -> Result<Called, Cancelled> {
    run_counted(runs, caller, call, ctx, false).await
}

/// The one place a call ends, whatever its era, transport or task: counted, then audited.
async fn run_counted(runs: Runs<'_>, caller: Caller<'_>, call: &AdmittedCall, ctx: CallContext, validate: bool) -> Result<Called, Cancelled> {
    let started = std::time::Instant::now();
    let (usage, denials, connections) = (ctx.usage.clone(), ctx.denials.clone(), ctx.connections.clone());
    let Checked { outcome, denied, secrets } = run_checked(runs, caller.owner, call, ctx, validate, caller.task.is_some()).await;
    let took = started.elapsed();
    let label = match &outcome {
        Ok(Called { failure: Some(kind), .. }) => kind,
        Ok(Called { result, .. }) if result.is_error => "tool-error",
        Ok(_) => "ok",
        Err(Cancelled) => Failure::Cancelled.kind(),
    };
    runs.metrics.call(&call.entry.name, label, took, &usage);
    let (reached, uncounted, totals) = connections.take();
    runs.metrics.connections(&call.entry.name, &totals);
    runs.audit.call(|| {
        let (outcome_kind, failure, is_error) = match &outcome {
            Ok(Called { failure: Some(kind), .. }) => (CallOutcome::Failed, Some((*kind).to_owned()), false),
            Ok(Called { result, .. }) => (CallOutcome::Result, None, result.is_error),
            Err(Cancelled) => (CallOutcome::Cancelled, None, false),
        };
        let entry = &call.entry;
        let mut record = CallRecord::new(caller.owner.to_owned(), Subject::Tool(entry.name.clone()), outcome_kind);
        record.plugin = Some(entry.plugin.name.clone());
        record.digest = Some(entry.plugin.code.digest());
        record.contract = Some(entry.plugin.code.contract().as_str());
        record.failure = failure;
        record.is_error = is_error;
        record.duration = took;
        record.fuel_consumed = usage.fuel_consumed();
        record.peak_memory = usage.peak_memory();
        // A cancelled call's refusals were never taken for a result: nobody else reads them.
        record.denials = match &outcome {
            Ok(_) => denied,
            Err(Cancelled) => denials.take(),
        };
        record.task = caller.task;
        record.trace_id = trace::current_trace_id();
        record.secrets = secrets;
        record.connections = reached
            .into_iter()
            .map(|c| Reached { via: c.door.as_str(), host: c.host, name: c.name, port: c.port, allowed: c.allowed, count: c.count })
            .collect();
        record.connections_uncounted = uncounted;
        if runs.audit.with_arguments() {
            record.arguments = Some(call.arguments.clone());
            record.result = outcome.as_ref().ok().map(|c| serde_json::to_value(&c.result).expect("results serialize"));
        }
        record
    });
    outcome
}

/// What a run came to, with what its audit record says beside the result.
struct Checked {
    outcome: Result<Called, Cancelled>,
    /// What the sandbox refused it (also named in the result).
    denied: Vec<String>,
    /// The names of the secrets it was given, or of the one it lacked.
    secrets: CallSecrets,
}

impl Checked {
    fn ended(outcome: Result<Called, Cancelled>) -> Checked {
        Checked { outcome, denied: Vec::new(), secrets: CallSecrets::default() }
    }
}

/// Runs the call: what it came to.
async fn run_checked(runs: Runs<'_>, owner: &str, call: &AdmittedCall, mut ctx: CallContext, validate: bool, in_task: bool) -> Checked {
    let (entry, runtime) = (&call.entry, runs.runtime);
    if validate {
        let problems = violations(&entry.input_validator, &call.arguments);
        if !problems.is_empty() {
            return Checked::ended(Ok(Called { result: invalid_arguments_result(&entry.name, &problems), failure: Some(INVALID_ARGUMENTS) }));
        }
    }
    // A plugin that declares no secrets resolves nothing and wraps nothing.
    let mut given = CallSecrets::default();
    if !entry.plugin.secrets.is_empty() {
        match runs.secrets.resolve(owner, &entry.plugin.name, &entry.plugin.secrets).await {
            Ok(env) => {
                given.given = env.iter().map(|(name, _)| name.clone()).collect();
                ctx.secret_env = env.into();
                ctx.observer = Redacting::wrap(ctx.observer, &ctx.secret_env);
            }
            Err(unresolved) => {
                tracing::info!(tool = %entry.name, plugin = %entry.plugin.name, principal = %owner, "{unresolved}");
                let missing = CallSecrets { given: Vec::new(), missing: unresolved.secret().map(str::to_owned), asked: unresolved.asked() };
                let outcome = Ok(Called { result: unresolved_result(&entry.name, &unresolved), failure: Some(SECRET_UNAVAILABLE) });
                return Checked { outcome, denied: Vec::new(), secrets: missing };
            }
        }
    }
    let secrets = ctx.secret_env.clone();
    let arguments = call.arguments.to_string();
    let denials = ctx.denials.clone();
    let (cancel, usage) = (ctx.cancel.clone(), ctx.usage.clone());
    // Untraced, nothing is looked up for a span (the digest is a shared string to clone).
    let span = match crate::telemetry::enabled() {
        true => {
            trace::guest(tracing::Span::current(), in_task, &entry.plugin.name, &entry.plugin.code.digest(), entry.plugin.code.contract().as_str(), &entry.name)
        }
        false => tracing::Span::none(),
    };
    let run = with_permit(&entry.plugin, &cancel, || runtime.call_tool(&entry.plugin.code, &entry.own_name, &arguments, ctx));
    // A plain call's run is traced on its request's span, which is entered already.
    let outcome = if in_task { run.instrument(span.clone()).await } else { run.await };
    let ended = |outcome: &str, failed: bool| {
        if span.is_disabled() {
            return;
        }
        let digest = (!in_task).then(|| entry.plugin.code.digest());
        let plugin = digest.as_deref().map(|digest| (entry.plugin.name.as_str(), digest, entry.plugin.code.contract().as_str()));
        trace::guest_ended(&span, trace::GuestEnded { outcome, fuel_consumed: usage.fuel_consumed(), peak_memory: usage.peak_memory(), failed, plugin });
    };
    let (mut result, failure) = match outcome.and_then(|result| tool_result(entry, result)) {
        Ok(result) => (result, None),
        Err(Failure::Cancelled) => {
            ended(Failure::Cancelled.kind(), false);
            return Checked { outcome: Err(Cancelled), denied: Vec::new(), secrets: given };
        }
        Err(failure) => {
            let described = failure.describe(&entry.name);
            let described = crate::runtime::redacted(&secrets, &described).unwrap_or(described);
            tracing::warn!(parent: &span, tool = %entry.name, plugin = %entry.plugin.name, kind = failure.kind(), "{described}");
            (failure_result(&entry.name, &failure), Some(failure.kind()))
        }
    };
    redact_result(&secrets, &mut result);
    let denied = denials.take();
    for what in &denied {
        tracing::warn!(parent: &span, tool = %entry.name, plugin = %entry.plugin.name, "{what}");
    }
    let outcome = failure.unwrap_or(if result.is_error { "tool-error" } else { "ok" });
    ended(outcome, failure.is_some());
    note_denials(&mut result, denied.clone());
    Checked { outcome: Ok(Called { result, failure }), denied, secrets: given }
}
