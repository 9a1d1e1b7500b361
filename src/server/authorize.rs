//! The one place a request is authorized, whatever its era and transport. Every step of the
//! pipeline that names what it will touch (a tool, a resource, a prompt) passes through
//! [`authorize`] with the request's principal before anything runs, and the lists show a
//! principal only what it may use ([`Visible`]), both from the policy in force
//! (`crate::policy`; without a policy file, everything is allowed). Who owns a task or a kept
//! result is enforced by the stores, which read and write only by owner; who may steer another
//! principal's tasks is [`steers_any_task`].
//!
//! A refusal is written to the audit trail here, where it is decided: whichever method asked
//! (a call, a read, a subscription, a prompt, a completion), it is recorded once, as `denied`.

use serde_json::json;

use super::Host;
use crate::audit::{CallOutcome, CallRecord, Subject};
use crate::mcp::jsonrpc::{FORBIDDEN, INVALID_PARAMS};
use crate::mcp::RpcError;
use crate::policy::{Decision, Kind, Policy, Target};
use crate::principal::{Owner, Principal, Wire};
use crate::telemetry::trace;

/// What a request is about to do, named as a policy would name it.
#[derive(Clone, Copy, Debug)]
pub(super) enum Action<'a> {
    /// Call the tool of this name (`tools/call`, as a plain call or a task).
    CallTool { plugin: &'a str, name: &'a str },
    /// Read the resource at this URI (`resources/read`), or hear when it changes
    /// (`resources/subscribe`): who may not read it may not watch it either.
    ReadResource { plugin: &'a str, uri: &'a str },
    /// Render the prompt of this name (`prompts/get`), or complete one of its arguments.
    UsePrompt { plugin: &'a str, name: &'a str },
    /// Complete an argument of a resource template (`completion/complete`).
    CompleteTemplate { plugin: &'a str, uri: &'a str },
}

impl<'a> Action<'a> {
    fn target(self) -> Target<'a> {
        let (kind, plugin, name) = match self {
            Action::CallTool { plugin, name } => (Kind::Tool, plugin, name),
            Action::ReadResource { plugin, uri } | Action::CompleteTemplate { plugin, uri } => (Kind::Resource, plugin, uri),
            Action::UsePrompt { plugin, name } => (Kind::Prompt, plugin, name),
        };
        Target { kind, plugin, name }
    }

    /// The error a request naming something that does not exist gets: what a hidden target
    /// answers, so that a refusal cannot be told from an absence.
    fn unknown(self, wire: Wire) -> RpcError {
        match self {
            Action::CallTool { name, .. } => RpcError::invalid_params(format!("unknown tool `{name}`")),
            Action::ReadResource { uri, .. } => {
                let mut error = super::results::resource_not_found(uri);
                // The 2026-07-28 era answers an unknown resource with -32602.
                if wire == Wire::Stateless {
                    error.code = INVALID_PARAMS;
                }
                error
            }
            Action::UsePrompt { name, .. } => RpcError::invalid_params(format!("unknown prompt `{name}`")),
            Action::CompleteTemplate { uri, .. } => RpcError::invalid_params(format!("unknown resource template `{uri}`")),
        }
    }

    /// What kind of action it is (`call-tool`, `read-resource`, `use-prompt`,
    /// `complete-template`), as its trace span names it.
    pub(super) fn verb(self) -> &'static str {
        match self {
            Action::CallTool { .. } => "call-tool",
            Action::ReadResource { .. } => "read-resource",
            Action::UsePrompt { .. } => "use-prompt",
            Action::CompleteTemplate { .. } => "complete-template",
        }
    }

    /// What the action names, as the audit trail records it.
    fn subject(self) -> Subject {
        match self {
            Action::CallTool { name, .. } => Subject::Tool(name.to_owned()),
            Action::ReadResource { uri, .. } => Subject::Resource(uri.to_owned()),
            Action::UsePrompt { name, .. } => Subject::Prompt(name.to_owned()),
            Action::CompleteTemplate { uri, .. } => Subject::Template(uri.to_owned()),
        }
    }
}

/// Whether `owner` may do `action`: `Ok`, or the refusal to answer with, recorded in the audit
/// trail (outcome `denied`, naming what was asked for).
pub(super) fn authorize(host: &Host, owner: &Owner, action: Action<'_>) -> Result<(), RpcError> {
    let Some(policy) = host.options.policy.current() else { return Ok(()) };
    let target = action.target();
    let Decision::Deny(denial) = policy.decide(owner.principal(), &target) else { return Ok(()) };
    let what = target.kind.as_str();
    tracing::info!(principal = %owner, what, name = target.name, plugin = target.plugin, rule = denial.rule_kind(), hidden = denial.hide, "denied by the policy");
    host.options.audit.call(|| {
        let mut record = CallRecord::new(owner.key().to_owned(), action.subject(), CallOutcome::Denied);
        // The request's trace, when the caller runs this inside its span.
        record.trace_id = trace::trace_id(&tracing::Span::current());
        record
    });
    if denial.hide {
        return Err(action.unknown(owner.wire()));
    }
    let why = match &denial.deny_rule {
        Some(Some(name)) => format!("the [[deny]] rule `{name}` refuses it"),
        Some(None) => "a [[deny]] rule refuses it".to_owned(),
        None => "no [[allow]] rule grants it".to_owned(),
    };
    // `data.tool`, `data.resource` or `data.prompt` names the target.
    let mut data = json!({ "kind": "denied", "rule": denial.rule_kind() });
    data[what] = json!(target.name);
    if let Some(Some(name)) = &denial.deny_rule {
        data["name"] = json!(name);
    }
    Err(RpcError::new(FORBIDDEN, format!("the policy does not let you use {what} `{}`: {why}", target.name)).with_data(data))
}

/// What a principal's lists show: with a policy, only what it may use.
pub(super) struct Visible {
    policy: Option<std::sync::Arc<Policy>>,
    principal: Principal,
}

impl Visible {
    /// What `owner` may see under the policy in force now.
    pub(super) fn to(host: &Host, owner: &Owner) -> Visible {
        Visible { policy: host.options.policy.current(), principal: owner.principal().clone() }
    }

    /// Whether the list shows `name` (a tool, resource, template or prompt) of `plugin`.
    pub(super) fn shows(&self, kind: Kind, plugin: &str, name: &str) -> bool {
        self.policy.as_ref().is_none_or(|policy| policy.decide(&self.principal, &Target { kind, plugin, name }) == Decision::Allow)
    }
}

/// Whether `principal` may hear that resource `uri` of `plugin` changed: whether it may read it
/// under the policy in force now (a subscription made before the policy changed is held to
/// the new one). Not a request, so nothing is audited.
pub(super) fn may_read(host: &Host, principal: &Principal, plugin: &str, uri: &str) -> bool {
    host.options.policy.current().is_none_or(|policy| policy.decide(principal, &Target { kind: Kind::Resource, plugin, name: uri }) == Decision::Allow)
}

/// Whether `owner` may read and steer tasks other principals own (a policy's operators).
pub(super) fn steers_any_task(host: &Host, owner: &Owner) -> bool {
    host.options.policy.current().is_some_and(|policy| policy.steers_any_task(owner.principal()))
}

/// Whom a request acts as on task `id`: its own owner, or, for a principal the policy lets steer
/// every task (an operator), the task's owner when the task was made on the request's wire (one
/// read more, for operators only). Anyone else reaches only its own tasks: the stores read by
/// owner, and another owner's task answers "not found", like a missing one.
pub(super) async fn steering_owner(host: &Host, owner: &Owner, id: &str) -> Result<Owner, RpcError> {
    if !steers_any_task(host, owner) {
        return Ok(owner.clone());
    }
    let theirs = host.engine.owner_of(id).await.map_err(super::task_view::engine_error)?.as_deref().and_then(Owner::parse);
    match theirs {
        Some(theirs) if theirs.wire() == owner.wire() => {
            if theirs != *owner {
                tracing::info!(operator = %owner, owner = %theirs, task = id, "an operator acts on another principal's task");
            }
            Ok(theirs)
        }
        _ => Ok(owner.clone()),
    }
}
