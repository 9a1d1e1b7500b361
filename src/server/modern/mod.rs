//! The stateless era (2026-07-28): one request at a time, each with its envelope.
//!
//! The transports decide the era of each message ([`crate::mcp::modern::Era::of`]) and hand a
//! modern request here ([`serve`]) with its envelope already checked, in a [`Scope`] of its own
//! (HTTP) or of its connection (stdio). The methods both eras share run the same handlers as
//! 2025-11-25 (`tools`, `resources`, `prompts`); what differs lives here: `server/discover`, the
//! result shapes (`resultType`, server identity, caching), the observer that never asks the
//! client, and the error codes of this era (an unknown resource is -32602 with `data.uri`).

mod discover;
mod input;
mod listen;
mod listens;
mod observer;
mod state;
mod task_input;
mod tasks;

use std::sync::Arc;

use serde_json::{Map, Value};

use self::input::Round;
use self::observer::ModernObserver;
use self::tasks::{AdoptedAsks, RunningCall};
use super::authorize::Action;
use super::load_wait::Needs;
use super::notify::{CallNotifier, LevelFilter};
use super::scope::Scope;
use super::tool_run::{self, AdmittedCall};
use super::tools;
use super::{kept_results, prompts, resources, result_links, task_view};
use crate::cancel::CancelHandle;
use crate::mcp::modern::wire::{self, CacheScope, Caching, COMPLETE};
use crate::mcp::modern::{missing_capability, Envelope, ModernMethod, MODERN_PROTOCOL_VERSION, TASKS_EXTENSION};
use crate::mcp::types::LogLevel;
use crate::mcp::{Method, Params, RequestId, RpcError};
use crate::registry::Plugin;
use crate::runtime::{CallContext, TaskSupport, TimeLimit};

pub(super) use self::task_input::TaskInput;
pub(super) use discover::discover;
pub use listens::OpenListens;
pub use state::StateSecret;
pub use task_input::TaskInputs;

/// How long a list may be cached when plugins are not watched (the list cannot change).
const STATIC_LIST_TTL_MS: u64 = 5 * 60 * 1000;

/// Serves one 2026-07-28 request whose envelope and method the transport has read (HTTP, after
/// its header checks). It neither needs nor changes a session's phase; the answer goes to the
/// scope's reply.
pub fn serve(scope: &Scope, id: RequestId, method: ModernMethod, envelope: Envelope, params: Map<String, Value>) {
    if let Some(client) = &envelope.client {
        tracing::debug!(client, %method, "stateless request");
    }
    scope.host().metrics.request(MODERN_PROTOCOL_VERSION, method.as_str());
    // The same rule as 2025-11-25: what reads the catalog waits for the first load;
    // `server/discover` and `subscriptions/listen` never do.
    if let ModernMethod::Shared(shared) = method {
        if super::limits::counts(shared) {
            let later = scope.clone();
            return scope.within_rate(id, move |id| admitted(&later, id, method, envelope, params));
        }
    }
    admitted(scope, id, method, envelope, params);
}

/// A request past its rate check: dispatched once what it needs has loaded.
fn admitted(scope: &Scope, id: RequestId, method: ModernMethod, envelope: Envelope, params: Map<String, Value>) {
    if let ModernMethod::Shared(shared) = method {
        let needs = Needs::of(shared, &params);
        if !needs.met(&scope.host().registry) {
            let (later, waiting_id) = (scope.clone(), id.clone());
            return scope.after_load(waiting_id, needs, move || dispatch(&later, id, method, envelope, params));
        }
    }
    dispatch(scope, id, method, envelope, params);
}

fn dispatch(scope: &Scope, id: RequestId, method: ModernMethod, envelope: Envelope, params: Map<String, Value>) {
    let host = scope.host();
    let p = Params::new(&params);
    // Under a policy each principal sees its own lists: no shared cache may keep them.
    let shared_lists = host.options.policy.current().is_none();
    let lists = Caching {
        ttl_ms: if host.options.list_changed { 0 } else { STATIC_LIST_TTL_MS },
        scope: if shared_lists { CacheScope::Public } else { CacheScope::Private },
    };
    let listed = |answer: Result<Value, RpcError>| answer.map(|v| wire::result(v, COMPLETE, Some(lists)));
    let answer = match method {
        ModernMethod::ServerDiscover => Ok(discover(&host.options)),
        ModernMethod::Shared(Method::ToolsList) => listed(tools::list(host, scope.owner(), p)),
        ModernMethod::Shared(Method::ResourcesList) => listed(resources::list(host, scope.owner(), p)),
        ModernMethod::Shared(Method::ResourcesTemplatesList) => listed(resources::list_templates(host, scope.owner(), p)),
        ModernMethod::Shared(Method::PromptsList) => listed(prompts::list(host, scope.owner(), p)),
        ModernMethod::Shared(Method::ToolsCall) => return call(scope, id, envelope, params),
        ModernMethod::Shared(Method::ResourcesRead) => return read(scope, id, envelope, params),
        ModernMethod::Shared(Method::PromptsGet) => return prompt(scope, id, envelope, params),
        ModernMethod::Shared(Method::CompletionComplete) => return completion(scope, id, envelope, params),
        ModernMethod::Shared(Method::TasksGet | Method::TasksCancel) | ModernMethod::TasksUpdate if !envelope.capabilities.tasks => {
            Err(missing_capability(TASKS_EXTENSION))
        }
        // The engine's entry points wait for the store: they answer from their own future.
        ModernMethod::Shared(Method::TasksGet) => {
            let (host, owner) = (host.clone(), scope.owner().clone());
            return scope.answer_later(id, async move { tasks::get(&host, &owner, &params).await });
        }
        ModernMethod::Shared(Method::TasksCancel) => {
            let (host, owner) = (host.clone(), scope.owner().clone());
            return scope.answer_later(id, async move { tasks::cancel(&host, &owner, &params).await });
        }
        ModernMethod::TasksUpdate => {
            let (host, owner) = (host.clone(), scope.owner().clone());
            return scope.answer_later(id, async move { tasks::update(&host, &owner, &params).await });
        }
        ModernMethod::SubscriptionsListen => return listen::listen(scope, id, &envelope, &params),
        other => Err(RpcError::method_not_found(format!("method `{other}` is not served in the 2026-07-28 era yet"))),
    };
    scope.reply(&id, answer);
}

/// The error of this era for one the shared handlers made: an unknown resource is -32602 (with
/// the URI in `data`), not 2025-11-25's -32002.
fn era_error(mut error: RpcError) -> RpcError {
    if error.code == resources::RESOURCE_NOT_FOUND {
        error.code = crate::mcp::jsonrpc::INVALID_PARAMS;
    }
    error
}

/// A stateless call's notifier for `plugin`: reports go to the request's reply, logs only at
/// the level the envelope names.
fn notifier(scope: &Scope, envelope: &Envelope, plugin: &Plugin, progress_token: Option<Value>) -> CallNotifier {
    let levels = LevelFilter::new(envelope.log_level.unwrap_or(LogLevel::Emergency));
    CallNotifier::new(scope.outlet().clone(), levels, &plugin.name, progress_token)
}

/// A stateless call's observer for `plugin`: the notifier above, questions to `round`.
fn observer(scope: &Scope, envelope: &Envelope, plugin: &Plugin, progress_token: Option<Value>, round: Round) -> Arc<ModernObserver> {
    ModernObserver::new(notifier(scope, envelope, plugin, progress_token), envelope.log_level.is_some(), envelope.capabilities, round)
}

/// The input round of `method` (`tools/call`, `prompts/get`, `resources/read`): what its
/// `requestState` recorded and its `inputResponses` add; -32602 when either is bad.
fn round(scope: &Scope, method: &str, envelope: &Envelope, params: &Map<String, Value>) -> Result<Round, RpcError> {
    Round::open(&scope.host().options.state_secret, scope.owner().key(), method, params, envelope.capabilities)
}

/// The context of one call of `plugin` under `observer`, once it has its cancel handle.
fn context(plugin: &Plugin, observer: &Arc<ModernObserver>) -> impl FnOnce(CancelHandle) -> CallContext + Send + 'static {
    let (limits, observer) = (plugin.limits.clone(), observer.clone());
    move |cancel| CallContext::for_request(limits, cancel, observer)
}

/// What a finished call answers: an input-required result (or -32602 for a malformed answer)
/// when the guest stopped for input, -32021 when it needed a capability the request lacked,
/// else the result in this era's shape.
fn finish(observer: &ModernObserver, answer: Result<Value, RpcError>) -> Result<Value, RpcError> {
    if let Some(outcome) = observer.round().outcome() {
        return outcome;
    }
    if let Some(capability) = observer.missing() {
        return Err(missing_capability(capability));
    }
    answer.map(|v| wire::result(v, COMPLETE, None)).map_err(era_error)
}

fn call(scope: &Scope, id: RequestId, envelope: Envelope, params: Map<String, Value>) {
    let host = scope.host().clone();
    let Some(call) =
        scope.admit(&id, tools::admit_local(&host, Params::new(&params)), |c| Action::CallTool { plugin: &c.entry.plugin.name, name: &c.entry.name })
    else {
        return;
    };
    let Some(round) = scope.or_answer(&id, round(scope, "tools/call", &envelope, &params)) else { return };
    let as_task = envelope.capabilities.tasks;
    match call.entry.task_support {
        TaskSupport::Required if !as_task => return scope.reply(&id, Err(missing_capability(TASKS_EXTENSION))),
        TaskSupport::Required => {
            // Validated here, once, as for a 2025-11-25 task: the runner does not check again.
            let problems = crate::registry::violations(&call.entry.input_validator, &call.arguments);
            if !problems.is_empty() {
                let result = super::results::invalid_arguments_result(&call.entry.name, &problems);
                return scope.reply(&id, Ok(wire::result(serde_json::to_value(result).expect("results serialize"), COMPLETE, None)));
            }
            let key = match task_view::idempotency_key(Params::new(&params)) {
                Ok(key) => key,
                Err(e) => return scope.reply(&id, Err(e)),
            };
            let owner = scope.owner().clone();
            let capabilities = envelope.capabilities;
            return scope.answer_later(id, async move { tasks::create(&host, &owner, &call, None, capabilities, key).await });
        }
        TaskSupport::Optional if as_task => {
            let key = match task_view::idempotency_key(Params::new(&params)) {
                Ok(key) => key,
                Err(e) => return scope.reply(&id, Err(e)),
            };
            return adaptive(scope, id, envelope, call, round, key);
        }
        _ => {}
    }
    let observer = observer(scope, &envelope, &call.entry.plugin, call.progress_token.clone(), round);
    let ctx = context(&call.entry.plugin, &observer);
    let owner = scope.owner().clone();
    let url_elicitation = envelope.capabilities.elicitation_url;
    scope.spawn_request(id, move |cancel| async move {
        let caller = tool_run::Caller { owner: owner.key(), task: None };
        let result = tool_run::run(host.runs(), caller, &call, ctx(cancel)).await.ok()?.result;
        // A caller secret not set yet, for a request that can send its person to a link: the
        // retry (after the page, or an operator's `corral secrets set`) runs the call again.
        if let Some(asked) = url_elicitation.then(|| super::call_secrets::UrlElicitation::of(&result)).flatten() {
            observer.round().ask_url(format!("secret-{}", asked.name), asked.modern_params());
        }
        let result = kept_results::keep_plain(&host, &owner, &call.entry.name, call.entry.plugin.limits.inline_result, result).await;
        Some(finish(&observer, Ok(serde_json::to_value(result).expect("results serialize"))))
    });
}

/// An `optional` tool for a request that declared the tasks extension: the call starts at once
/// (its first poll inline, like any call) and answers inline if it ends within `task_after`;
/// past that, the running call becomes a task, and from then on the engine holds it.
///
/// With an idempotency key the owner already gave a kept task, the answer is that task and
/// nothing runs: a client whose first request broke after the call was adopted retries with
/// the same key. The key is stored when the call is adopted; two retries racing past the
/// lookup meet at the store's unique key, and the later adoption answers the earlier task.
fn adaptive(scope: &Scope, id: RequestId, envelope: Envelope, call: AdmittedCall, round: Round, key: Option<String>) {
    let host = scope.host().clone();
    let owner = scope.owner().clone();
    // The plugin's manifest (`[limits] task-after`) wins over the host's `--task-after`.
    let task_after = call.entry.plugin.limits.task_after.unwrap_or(host.options.task_after);
    let asks = Arc::new(AdoptedAsks::default());
    let notifier = notifier(scope, &envelope, &call.entry.plugin, call.progress_token.clone());
    let observer = ModernObserver::adoptable(notifier, envelope.log_level.is_some(), envelope.capabilities, round, asks.clone());
    let input = Arc::new(TaskInput::new(host.task_inputs.clone(), envelope.capabilities));
    // Runs under the plain call's `timeout` until adopted, then under the task's.
    let (time_limit, task_timeout) = (TimeLimit::default(), call.entry.plugin.limits.task_timeout);
    let ctx = {
        let (ctx, time_limit) = (context(&call.entry.plugin, &observer), time_limit.clone());
        move |cancel| CallContext { time_limit, ..ctx(cancel) }
    };
    let call = Arc::new(call);
    scope.spawn_request(id, move |cancel| async move {
        if let Some(key) = &key {
            match host.engine.find_by_key(owner.key(), key).await {
                Ok(Some(existing)) => return Some(Ok(tasks::created(&existing))),
                Ok(None) => {}
                Err(e) => return Some(Err(task_view::engine_error(e))),
            }
        }
        let mut running: futures_util::future::BoxFuture<'static, _> = {
            let (host, call, ctx, owner) = (host.clone(), call.clone(), ctx(cancel.clone()), owner.clone());
            Box::pin(async move { tool_run::run(host.runs(), tool_run::Caller { owner: owner.key(), task: None }, &call, ctx).await })
        };
        // The call is polled first: one that ends in its first poll arms no timer.
        let adopt = tokio::select! {
            biased;
            done = &mut running => {
                let result = done.ok()?.result;
                let result = kept_results::keep_plain(&host, &owner, &call.entry.name, call.entry.plugin.limits.inline_result, result).await;
                return Some(finish(&observer, Ok(serde_json::to_value(result).expect("results serialize"))));
            }
            _ = tokio::time::sleep(task_after) => RunningCall { call: running, cancel, asks, input },
        };
        time_limit.switch_to(task_timeout);
        // Refused (overloaded, shutting down), the call it would have adopted is dropped, and
        // its guest with it.
        Some(tasks::create(&host, &owner, &call, Some(adopt), envelope.capabilities, key).await)
    });
}

fn read(scope: &Scope, id: RequestId, envelope: Envelope, params: Map<String, Value>) {
    let host = scope.host().clone();
    if resources::uri_param(Params::new(&params)).is_ok_and(result_links::is_result_uri) {
        // A kept result (`corral://results/…`), read by the owner that made the call.
        let owner = scope.owner().clone();
        let caching = Caching { ttl_ms: 0, scope: CacheScope::Private };
        return scope
            .answer_later(id, async move { kept_results::read(&host, &owner, Params::new(&params)).await.map(|v| wire::result(v, COMPLETE, Some(caching))) });
    }
    let owner = resources::requested_uri(Params::new(&params)).and_then(|uri| Ok((resources::owner(&host, &uri)?, uri))).map(|(plugin, uri)| (uri, plugin));
    let Some((uri, plugin)) = scope.admit(&id, owner.map_err(era_error), |(uri, plugin)| Action::ReadResource { plugin: &plugin.name, uri }) else { return };
    let Some(round) = scope.or_answer(&id, round(scope, "resources/read", &envelope, &params)) else { return };
    let observer = observer(scope, &envelope, &plugin, Params::new(&params).progress_token(), round);
    let ctx = context(&plugin, &observer);
    let caching = Caching { ttl_ms: 0, scope: CacheScope::Private };
    scope.spawn_request(id, move |cancel| async move {
        let answer = resources::read(&host, &plugin, &uri, ctx(cancel)).await.ok()?;
        if let Some(outcome) = observer.round().outcome() {
            return Some(outcome);
        }
        Some(finish(&observer, answer).map(|v| wire::result(v, COMPLETE, Some(caching))))
    });
}

fn prompt(scope: &Scope, id: RequestId, envelope: Envelope, params: Map<String, Value>) {
    let host = scope.host().clone();
    let Some(admitted) =
        scope.admit(&id, prompts::admit(&host, Params::new(&params)), |a| Action::UsePrompt { plugin: &a.entry.plugin.name, name: &a.entry.prompt.name })
    else {
        return;
    };
    let Some(round) = scope.or_answer(&id, round(scope, "prompts/get", &envelope, &params)) else { return };
    let observer = observer(scope, &envelope, &admitted.entry.plugin, Params::new(&params).progress_token(), round);
    let ctx = context(&admitted.entry.plugin, &observer);
    scope.spawn_request(id, move |cancel| async move {
        let answer = prompts::get(&host, &admitted, ctx(cancel)).await.ok()?;
        Some(finish(&observer, answer))
    });
}

fn completion(scope: &Scope, id: RequestId, envelope: Envelope, params: Map<String, Value>) {
    let host = scope.host().clone();
    let Some(admitted) = scope.admit(&id, prompts::admit_completion(&host, Params::new(&params)), prompts::AdmittedCompletion::action) else { return };
    let observer = observer(scope, &envelope, &admitted.plugin, Params::new(&params).progress_token(), Round::closed(envelope.capabilities));
    let ctx = context(&admitted.plugin, &observer);
    scope.spawn_request(id, move |cancel| async move {
        let answer = prompts::complete(&host, &admitted, ctx(cancel)).await.ok()?;
        Some(finish(&observer, answer))
    });
}
