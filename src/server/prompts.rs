//! MCP prompts and completion from plugins (contract 0.2.0): `prompts/list`, `prompts/get`,
//! `completion/complete`.

use serde_json::{json, Map, Value};

use super::authorize::Visible;
use super::paging::page;
use super::results::{content_block, failure_error};
use super::Host;
use crate::mcp::{Params, RpcError};
use crate::policy::Kind;
use crate::principal::Owner;
use crate::registry::{Plugin, PromptEntry};
use crate::runtime::{CallContext, Failure, Prompt, PromptError, Reference, Role};

/// At most this many completion values go to the client (MCP's limit).
const MAX_COMPLETIONS: usize = 100;

/// A prompt as `prompts/list` shows it.
pub fn prompt_json(p: &Prompt) -> Value {
    let mut o = Map::new();
    o.insert("name".into(), json!(p.name));
    if let Some(t) = &p.title {
        o.insert("title".into(), json!(t));
    }
    if let Some(d) = &p.description {
        o.insert("description".into(), json!(d));
    }
    if !p.arguments.is_empty() {
        let arguments: Vec<Value> = p
            .arguments
            .iter()
            .map(|a| {
                let mut o = Map::new();
                o.insert("name".into(), json!(a.name));
                if let Some(t) = &a.title {
                    o.insert("title".into(), json!(t));
                }
                if let Some(d) = &a.description {
                    o.insert("description".into(), json!(d));
                }
                o.insert("required".into(), json!(a.required));
                Value::Object(o)
            })
            .collect();
        o.insert("arguments".into(), Value::Array(arguments));
    }
    Value::Object(o)
}

/// `prompts/list`: the prompts `owner` may use, in name order, a page at a time.
pub fn list(host: &Host, owner: &Owner, params: Params<'_>) -> Result<Value, RpcError> {
    let catalog = host.registry.listing();
    let visible = Visible::to(host, owner);
    let keep = |e: &PromptEntry| visible.shows(Kind::Prompt, &e.plugin.name, &e.prompt.name);
    page(&catalog.prompts, params, host.options.page_size, ("prompts/list", "prompts"), keep, |e| prompt_json(&e.prompt))
}

/// String arguments from `params[key]` (an object of strings), in the client's order.
fn string_arguments(value: Option<&Value>, what: &str) -> Result<Vec<(String, String)>, RpcError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(RpcError::invalid_params(format!("{what} `{k}` must be a string"))),
            })
            .collect(),
        Some(_) => Err(RpcError::invalid_params(format!("{what}s must be an object of strings"))),
    }
}

/// A `prompts/get` that passed the protocol checks.
pub struct AdmittedPrompt {
    pub entry: std::sync::Arc<PromptEntry>,
    pub arguments: Vec<(String, String)>,
}

/// Checks a `prompts/get`'s params and finds its prompt. What depends on the prompt itself (its
/// required arguments) is checked in [`get`], once the request is authorized: a prompt the
/// policy hides then answers as one that does not exist, whatever the request lacks, as a tool
/// does.
pub fn admit(host: &Host, params: Params<'_>) -> Result<AdmittedPrompt, RpcError> {
    let name = params.required_str("name", "prompts/get needs the name of a prompt")?;
    let arguments = string_arguments(params.get("arguments"), "argument")?;
    let entry = host.registry.snapshot().prompt(name).cloned().ok_or_else(|| RpcError::invalid_params(format!("unknown prompt `{name}`")))?;
    Ok(AdmittedPrompt { entry, arguments })
}

/// Every argument the prompt requires is given.
fn check_required(admitted: &AdmittedPrompt) -> Result<(), RpcError> {
    let name = &admitted.entry.prompt.name;
    let given = |wanted: &str| admitted.arguments.iter().any(|(k, _)| k == wanted);
    let missing: Vec<&str> = admitted.entry.prompt.arguments.iter().filter(|a| a.required && !given(&a.name)).map(|a| a.name.as_str()).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let list = missing.iter().map(|m| format!("`{m}`")).collect::<Vec<_>>().join(", ");
    Err(RpcError::invalid_params(format!("prompt `{name}` needs the argument{} {list}", if missing.len() > 1 { "s" } else { "" }))
        .with_data(json!({ "missing": missing })))
}

/// `prompts/get`: checks the arguments, then runs the owner's `get-prompt` in a fresh instance
/// under its limits. `Err(Failure::Cancelled)` means the client cancelled and wants no answer.
pub async fn get(host: &Host, admitted: &AdmittedPrompt, ctx: CallContext) -> Result<Result<Value, RpcError>, Failure> {
    if let Err(missing) = check_required(admitted) {
        return Ok(Err(missing));
    }
    let (plugin, name) = (&admitted.entry.plugin, &admitted.entry.prompt.name);
    let cancel = ctx.cancel.clone();
    let own_name = &admitted.entry.own_name;
    let got = super::with_permit(plugin, &cancel, || host.runtime.get_prompt(&plugin.code, own_name, &admitted.arguments, ctx)).await;
    let subject = format!("prompt `{name}`");
    Ok(match got {
        Err(Failure::Cancelled) => return Err(Failure::Cancelled),
        Err(failure) => {
            tracing::warn!(plugin = %plugin.name, prompt = %name, kind = failure.kind(), "{}", failure.describe_as(&subject));
            Err(failure_error(&failure, &subject))
        }
        Ok(Err(PromptError::InvalidArguments(why))) => Err(RpcError::invalid_params(format!("invalid arguments for {subject}: {why}"))),
        Ok(Err(PromptError::Failed(why))) => Err(RpcError::internal(format!("{subject} failed: {why}"))),
        Ok(Ok(result)) => {
            let messages: Vec<Value> = result
                .messages
                .into_iter()
                .map(|m| json!({ "role": if m.role == Role::User { "user" } else { "assistant" }, "content": content_block(m.content) }))
                .collect();
            let mut o = Map::new();
            if let Some(d) = result.description.or_else(|| admitted.entry.prompt.description.clone()) {
                o.insert("description".into(), json!(d));
            }
            o.insert("messages".into(), Value::Array(messages));
            Ok(Value::Object(o))
        }
    })
}

/// A `completion/complete` that passed the protocol checks.
pub struct AdmittedCompletion {
    pub plugin: std::sync::Arc<Plugin>,
    /// The prompt's served name (namespaced) or the template's URI template: what policy names.
    pub served: String,
    pub reference: Reference,
    pub argument: String,
    pub value: String,
    pub context: Vec<(String, String)>,
    /// A prompt's argument the prompt does not have: refused by [`complete`], after
    /// authorization, so a hidden prompt answers as an unknown one.
    pub unknown_argument: bool,
}

impl AdmittedCompletion {
    /// What completing this does, as authorization names it.
    pub(super) fn action(&self) -> super::authorize::Action<'_> {
        let plugin = &self.plugin.name;
        match &self.reference {
            Reference::Prompt(_) => super::authorize::Action::UsePrompt { plugin, name: &self.served },
            Reference::ResourceTemplate(_) => super::authorize::Action::CompleteTemplate { plugin, uri: &self.served },
        }
    }
}

/// Checks a `completion/complete`: a known prompt (and one of its arguments) or a known template.
pub fn admit_completion(host: &Host, params: Params<'_>) -> Result<AdmittedCompletion, RpcError> {
    let reference = params.object_or("ref", "missing `ref`: {\"type\": \"ref/prompt\", \"name\": ...} or {\"type\": \"ref/resource\", \"uri\": ...}")?;
    let argument = params.object_or("argument", "missing `argument`: {\"name\": ..., \"value\": ...}")?;
    let (Some(arg_name), Some(value)) = (argument.get_str("name"), argument.get_str("value")) else {
        return Err(RpcError::invalid_params("`argument` needs a string `name` and a string `value`"));
    };
    let context = string_arguments(params.get("context").and_then(|c| c.get("arguments")), "context argument")?;
    let catalog = host.registry.snapshot();
    let found = match reference.get_str("type") {
        Some("ref/prompt") => {
            let name = reference.str_or("name", "`ref.name` must be a string")?;
            let entry = catalog.prompt(name).ok_or_else(|| RpcError::invalid_params(format!("unknown prompt `{name}`")))?;
            let unknown_argument = !entry.prompt.arguments.iter().any(|a| a.name == *arg_name);
            // The plugin knows its prompt by its own name, not the namespaced one.
            (entry.plugin.clone(), name.to_owned(), Reference::Prompt(entry.own_name.clone()), unknown_argument)
        }
        Some("ref/resource") => {
            let uri = reference.str_or("uri", "`ref.uri` must be a string")?;
            let entry = catalog.templates.get(uri).ok_or_else(|| RpcError::invalid_params(format!("unknown resource template `{uri}`")))?;
            (entry.plugin.clone(), uri.to_owned(), Reference::ResourceTemplate(uri.to_owned()), false)
        }
        other => return Err(RpcError::invalid_params(format!("`ref.type` must be \"ref/prompt\" or \"ref/resource\", not {other:?}"))),
    };
    let (plugin, served, reference, unknown_argument) = found;
    Ok(AdmittedCompletion { plugin, served, reference, argument: arg_name.to_owned(), value: value.to_owned(), context, unknown_argument })
}

/// `completion/complete`: checks the argument, then runs the owner's `complete` (no values
/// when it has none).
pub async fn complete(host: &Host, admitted: &AdmittedCompletion, ctx: CallContext) -> Result<Result<Value, RpcError>, Failure> {
    if admitted.unknown_argument {
        return Ok(Err(RpcError::invalid_params(format!("prompt `{}` has no argument `{}`", admitted.served, admitted.argument))));
    }
    let plugin = &admitted.plugin;
    let cancel = ctx.cancel.clone();
    let work = || host.runtime.complete(&plugin.code, &admitted.reference, &admitted.argument, &admitted.value, &admitted.context, ctx);
    let completed = super::with_permit(plugin, &cancel, work).await;
    let subject = format!("completing `{}`", admitted.argument);
    Ok(match completed {
        Err(Failure::Cancelled) => return Err(Failure::Cancelled),
        Err(failure) => Err(failure_error(&failure, &subject)),
        Ok(mut completion) => {
            let all = completion.values.len();
            let cut = all > MAX_COMPLETIONS;
            completion.values.truncate(MAX_COMPLETIONS);
            let mut o = Map::new();
            o.insert("values".into(), json!(completion.values));
            match (completion.total, cut) {
                (Some(total), _) => o.insert("total".into(), json!(total)),
                (None, true) => o.insert("total".into(), json!(all)),
                (None, false) => None,
            };
            o.insert("hasMore".into(), json!(completion.has_more || cut));
            Ok(json!({ "completion": o }))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::PromptArgument;

    #[test]
    fn prompts_use_mcp_names() {
        let p = Prompt {
            name: "greet".into(),
            title: None,
            description: Some("Says hello".into()),
            arguments: vec![PromptArgument { name: "who".into(), title: None, description: None, required: true }],
        };
        assert_eq!(prompt_json(&p), json!({"name":"greet","description":"Says hello","arguments":[{"name":"who","required":true}]}));
    }

    #[test]
    fn arguments_must_be_strings() {
        assert_eq!(string_arguments(Some(&json!({"a": "1"})), "argument").unwrap(), vec![("a".to_owned(), "1".to_owned())]);
        assert!(string_arguments(Some(&json!({"a": 1})), "argument").unwrap_err().message.contains("`a`"));
    }
}
