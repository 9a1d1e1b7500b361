//! `tools/list` and `tools/call`.

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD as CURSOR;
use base64::Engine as _;
use serde_json::{json, Map, Value};

use super::results::{failure_result, invalid_arguments_result, note_denials, tool_result};
use super::{Host, Metrics};
use crate::mcp::types::{CallToolResult, TaskSupport as McpTaskSupport, Tool, ToolAnnotations, ToolExecution};
use crate::mcp::RpcError;
use crate::registry::{violations, ToolEntry};
use crate::runtime::{CallContext, Failure, Runtime, TaskSupport};

/// The MCP view of a tool.
pub fn list_entry(entry: &ToolEntry) -> Tool {
    let a = &entry.annotations;
    Tool {
        name: entry.name.clone(),
        title: entry.title.clone(),
        description: entry.description.clone(),
        input_schema: entry.input_schema.clone(),
        output_schema: entry.output_schema.clone(),
        annotations: ToolAnnotations {
            title: a.title.clone(),
            read_only_hint: a.read_only,
            destructive_hint: a.destructive,
            idempotent_hint: a.idempotent,
            open_world_hint: a.open_world,
        },
        execution: ToolExecution { task_support: mcp_task_support(entry.task_support) },
    }
}

pub fn mcp_task_support(t: TaskSupport) -> McpTaskSupport {
    match t {
        TaskSupport::Forbidden => McpTaskSupport::Forbidden,
        TaskSupport::Optional => McpTaskSupport::Optional,
        TaskSupport::Required => McpTaskSupport::Required,
    }
}

/// `tools/list`: tools in name order, `page_size` at a time. The cursor is opaque to clients;
/// it encodes the name to resume after, so it stays valid while the catalog changes.
pub fn list(host: &Host, params: &Map<String, Value>) -> Result<Value, RpcError> {
    let catalog = host.registry.snapshot();
    let after = match params.get("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(
            decode_cursor(c).ok_or_else(|| RpcError::invalid_params(format!("invalid cursor {c:?}: pass back a `nextCursor` from an earlier tools/list")))?,
        ),
        Some(_) => return Err(RpcError::invalid_params("`cursor` must be a string")),
    };
    let range = match &after {
        Some(name) => catalog.tools.range::<String, _>((std::ops::Bound::Excluded(name), std::ops::Bound::Unbounded)),
        None => catalog.tools.range::<String, _>(..),
    };
    let page: Vec<&Arc<ToolEntry>> = range.map(|(_, e)| e).take(host.options.page_size + 1).collect();
    let more = page.len() > host.options.page_size;
    let shown = &page[..page.len().min(host.options.page_size)];
    let tools: Vec<Tool> = shown.iter().map(|e| list_entry(e)).collect();
    let mut result = json!({ "tools": tools });
    if more {
        let last = &shown[shown.len() - 1].name;
        result["nextCursor"] = json!(CURSOR.encode(format!("after:{last}")));
    }
    Ok(result)
}

fn decode_cursor(cursor: &str) -> Option<String> {
    let bytes = CURSOR.decode(cursor).ok()?;
    String::from_utf8(bytes).ok()?.strip_prefix("after:").map(str::to_owned)
}

/// A `tools/call` that passed the protocol checks and is ready to run.
pub struct AdmittedCall {
    pub entry: Arc<ToolEntry>,
    pub arguments: Value,
    pub progress_token: Option<Value>,
}

/// Checks a `tools/call` request: params, tool, task policy. Errors here are protocol errors.
pub fn admit(host: &Host, params: &Map<String, Value>, enforce_policy: bool) -> Result<AdmittedCall, RpcError> {
    let name = match params.get("name") {
        Some(Value::String(n)) => n,
        Some(_) => return Err(RpcError::invalid_params("`name` must be a string")),
        None => return Err(RpcError::invalid_params("missing `name`: tools/call needs the name of a tool")),
    };
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => return Err(RpcError::invalid_params("`arguments` must be an object")),
    };
    let entry = host.registry.snapshot().tool(name).cloned().ok_or_else(|| RpcError::invalid_params(format!("unknown tool `{name}`")))?;
    if enforce_policy && entry.task_support == TaskSupport::Required && params.get("task").is_none_or(Value::is_null) {
        return Err(RpcError::method_not_found(format!(
            "tool `{name}` must be called as a task (its execution.taskSupport is \"required\"): add `\"task\": {{}}` to the params"
        )));
    }
    let progress_token = params.get("_meta").and_then(|m| m.get("progressToken")).filter(|t| t.is_string() || t.is_i64()).cloned();
    Ok(AdmittedCall { entry, arguments, progress_token })
}

/// Runs an admitted call to its result. Validation failures and limits become `isError`
/// results; `Err(Failure::Cancelled)` means the caller cancelled and wants no answer.
pub async fn run(runtime: &Runtime, metrics: &Metrics, call: &AdmittedCall, ctx: CallContext) -> Result<CallToolResult, Failure> {
    let started = std::time::Instant::now();
    let outcome = run_checked(runtime, call, ctx).await;
    let label = match &outcome {
        Ok(result) => match result.meta.get("corral/error").and_then(|e| e.get("kind")).and_then(Value::as_str) {
            Some(kind) => kind.to_owned(),
            None if result.is_error => "tool-error".to_owned(),
            None => "ok".to_owned(),
        },
        Err(failure) => failure.kind().to_owned(),
    };
    metrics.call(&call.entry.name, &label, started.elapsed());
    outcome
}

async fn run_checked(runtime: &Runtime, call: &AdmittedCall, ctx: CallContext) -> Result<CallToolResult, Failure> {
    let entry = &call.entry;
    let problems = violations(&entry.input_validator, &call.arguments);
    if !problems.is_empty() {
        return Ok(invalid_arguments_result(&entry.name, &problems));
    }
    let _permit = tokio::select! {
        biased;
        _ = ctx.cancel.cancelled() => return Err(Failure::Cancelled),
        permit = entry.plugin.permits.acquire() => permit.expect("plugin semaphores are never closed"),
    };
    let arguments = call.arguments.to_string();
    let denials = ctx.denials.clone();
    let outcome = runtime.call_tool(&entry.plugin.code, &entry.own_name, &arguments, ctx).await;
    let mut result = match outcome.and_then(|result| tool_result(entry, result)) {
        Ok(result) => result,
        Err(Failure::Cancelled) => return Err(Failure::Cancelled),
        Err(failure) => {
            tracing::warn!(tool = %entry.name, plugin = %entry.plugin.name, kind = failure.kind(), "{}", failure.describe(&entry.name));
            failure_result(&entry.name, &failure)
        }
    };
    let denied = denials.take();
    for what in &denied {
        tracing::warn!(tool = %entry.name, plugin = %entry.plugin.name, "{what}");
    }
    note_denials(&mut result, denied);
    Ok(result)
}

/// One call outside any session (`corral call`): a local test, so the task policy is not applied.
pub async fn call_tool_once(host: &Host, name: &str, arguments: Value, ctx: impl FnOnce(&ToolEntry) -> CallContext) -> Result<CallToolResult, RpcError> {
    let mut params = Map::new();
    params.insert("name".into(), json!(name));
    params.insert("arguments".into(), arguments);
    let call = admit(host, &params, false)?;
    let ctx = ctx(&call.entry);
    run(&host.runtime, &host.metrics, &call, ctx).await.map_err(|f| RpcError::internal(f.describe(name)))
}
