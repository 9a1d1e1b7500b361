//! `tools/list`, and admitting a `tools/call`: its params checked and its tool found (running it
//! is [`super::tool_run`]'s).

use serde_json::{json, Map, Value};

use super::authorize::Visible;
use super::paging::page;
use super::tool_run::{run, AdmittedCall, Caller, Cancelled};
use super::Host;
use crate::mcp::types::{CallToolResult, TaskSupport as McpTaskSupport, Tool, ToolAnnotations, ToolExecution};
use crate::mcp::{Params, RpcError};
use crate::policy::Kind;
use crate::principal::{Owner, Principal, Wire};
use crate::registry::ToolEntry;
use crate::runtime::{CallContext, Failure, TaskSupport};

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

/// The MCP spelling of a tool's task policy.
pub fn mcp_task_support(t: TaskSupport) -> McpTaskSupport {
    match t {
        TaskSupport::Forbidden => McpTaskSupport::Forbidden,
        TaskSupport::Optional => McpTaskSupport::Optional,
        TaskSupport::Required => McpTaskSupport::Required,
    }
}

/// `tools/list`: the tools `owner` may call, in name order, `page_size` at a time. The cursor is opaque to clients;
/// it encodes the name to resume after, so it stays valid while the catalog changes.
pub fn list(host: &Host, owner: &Owner, params: Params<'_>) -> Result<Value, RpcError> {
    let catalog = host.registry.listing();
    let visible = Visible::to(host, owner);
    let keep = |e: &ToolEntry| visible.shows(Kind::Tool, &e.plugin.name, &e.name);
    page(&catalog.tools, params, host.options.page_size, ("tools/list", "tools"), keep, |e| json!(list_entry(e)))
}

/// The tool's task policy for an admitted 2025-11-25 call: a tool whose `taskSupport` is
/// "required" must be called with `task`. A protocol error otherwise.
pub fn check_task_policy(call: AdmittedCall, params: Params<'_>) -> Result<AdmittedCall, RpcError> {
    if call.entry.task_support == TaskSupport::Required && !params.has("task") {
        return Err(RpcError::method_not_found(format!(
            "tool `{}` must be called as a task (its execution.taskSupport is \"required\"): add `\"task\": {{}}` to the params",
            call.entry.name
        )));
    }
    Ok(call)
}

/// Checks a `tools/call`'s params and finds its tool, without the task policy: what a local
/// call (`corral call`, which runs any tool directly) and the 2026-07-28 era need, and what a
/// 2025-11-25 call is authorized on before [`check_task_policy`].
pub fn admit_local(host: &Host, params: Params<'_>) -> Result<AdmittedCall, RpcError> {
    let name = params.required_str("name", "tools/call needs the name of a tool")?;
    let arguments = match params.optional_object("arguments")? {
        None => Value::Object(Map::new()),
        Some(arguments) => Value::Object(arguments.map().clone()),
    };
    let progress_token = params.checked_progress_token()?;
    let entry = host.registry.snapshot().tool(name).cloned().ok_or_else(|| RpcError::invalid_params(format!("unknown tool `{name}`")))?;
    Ok(AdmittedCall { entry, arguments, progress_token })
}

/// One call outside any session (`corral call`): a local test, so the task policy is not applied.
pub async fn call_tool_once(host: &Host, name: &str, arguments: Value, ctx: impl FnOnce(&ToolEntry) -> CallContext) -> Result<CallToolResult, RpcError> {
    let mut params = Map::new();
    params.insert("name".into(), json!(name));
    params.insert("arguments".into(), arguments);
    let call = admit_local(host, Params::new(&params))?;
    let ctx = ctx(&call.entry);
    let local = Owner::new(Principal::Local, Wire::Sessions);
    run(host.runs(), Caller { owner: local.key(), task: None }, &call, ctx)
        .await
        .map(|called| called.result)
        .map_err(|Cancelled| RpcError::internal(Failure::Cancelled.describe(name)))
}
