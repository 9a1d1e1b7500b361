//! The stateless era (2026-07-28): one request at a time, each with its envelope.
//!
//! The transports decide the era of each message ([`crate::mcp::modern::Era::of`]) and hand a
//! modern request here through [`Session::handle_modern`] with its envelope already checked.
//! The methods both eras share run the same handlers as 2025-11-25 (`tools`, `resources`,
//! `prompts`); what differs lives here: `server/discover`, the result shapes (`resultType`,
//! server identity, caching), the observer that never asks the client, and the error codes of
//! this era (an unknown resource is -32602 with `data.uri`).

mod discover;
mod input;
mod listen;
mod observer;
mod state;
mod task_input;
mod tasks;

use std::sync::Arc;

use serde_json::{Map, Value};

use self::input::Round;
use self::observer::ModernObserver;
use super::notify::{CallNotifier, LevelFilter};
use super::{prompts, resources, result_links, tools, Outlet, Session};
use crate::cancel::CancelHandle;
use crate::mcp::modern::wire::{self, CacheScope, Caching, COMPLETE};
use crate::mcp::modern::{missing_capability, Envelope, ModernMethod, TASKS_EXTENSION};
use crate::mcp::types::LogLevel;
use crate::mcp::{Method, Params, RequestId, RpcError};
use crate::registry::Plugin;
use crate::runtime::{CallContext, CallObserver, TaskSupport, TimeLimit};

pub(super) use self::task_input::TaskInput;
use self::tasks::AdoptedAsks;
pub(super) use discover::discover;
pub use state::StateSecret;
pub use task_input::TaskInputs;
pub(super) use tasks::{owns, Adopted};

/// How long a list may be cached when plugins are not watched (the list cannot change).
const STATIC_LIST_TTL_MS: u64 = 5 * 60 * 1000;

/// Serves one modern request; the answer goes to `reply`.
pub(super) fn dispatch(session: &Session, id: RequestId, method: ModernMethod, envelope: Envelope, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
    let host = session.host();
    let p = Params::new(&params);
    let lists = Caching { ttl_ms: if host.options.list_changed { 0 } else { STATIC_LIST_TTL_MS }, scope: CacheScope::Public };
    let listed = |answer: Result<Value, RpcError>| answer.map(|v| wire::result(v, COMPLETE, Some(lists)));
    let answer = match method {
        ModernMethod::ServerDiscover => Ok(discover(&host.options)),
        ModernMethod::Shared(Method::ToolsList) => listed(tools::list(host, p)),
        ModernMethod::Shared(Method::ResourcesList) => listed(resources::list(host, p)),
        ModernMethod::Shared(Method::ResourcesTemplatesList) => listed(resources::list_templates(host, p)),
        ModernMethod::Shared(Method::PromptsList) => listed(prompts::list(host, p)),
        ModernMethod::Shared(Method::ToolsCall) => return call(session, id, envelope, params, reply),
        ModernMethod::Shared(Method::ResourcesRead) => return read(session, id, envelope, params, reply),
        ModernMethod::Shared(Method::PromptsGet) => return prompt(session, id, envelope, params, reply),
        ModernMethod::Shared(Method::CompletionComplete) => return completion(session, id, envelope, params, reply),
        ModernMethod::Shared(Method::TasksGet | Method::TasksCancel) | ModernMethod::TasksUpdate if !envelope.capabilities.tasks => {
            Err(missing_capability(TASKS_EXTENSION))
        }
        // The engine's entry points wait for the store: they answer from their own future.
        ModernMethod::Shared(Method::TasksGet) => {
            let (host, owner) = (host.clone(), tasks::owner(session.owner()));
            return session.answer_later(id, reply, async move { tasks::get(&host, &owner, &params).await });
        }
        ModernMethod::Shared(Method::TasksCancel) => {
            let (host, owner) = (host.clone(), tasks::owner(session.owner()));
            return session.answer_later(id, reply, async move { tasks::cancel(&host, &owner, &params).await });
        }
        ModernMethod::TasksUpdate => {
            let (host, owner) = (host.clone(), tasks::owner(session.owner()));
            return session.answer_later(id, reply, async move { tasks::update(&host, &owner, &params).await });
        }
        ModernMethod::SubscriptionsListen => return listen::listen(session, id, &envelope, &params, reply),
        other => Err(RpcError::method_not_found(format!("method `{other}` is not served in the 2026-07-28 era yet"))),
    };
    session.reply(reply, &id, answer);
}

/// The error of this era for one the shared handlers made: an unknown resource is -32602 (with
/// the URI in `data`), not 2025-11-25's -32002.
fn era_error(mut error: RpcError) -> RpcError {
    if error.code == resources::RESOURCE_NOT_FOUND {
        error.code = crate::mcp::jsonrpc::INVALID_PARAMS;
    }
    error
}

/// A stateless call's observer for `plugin`: reports go to `reply`, logs only at the level the
/// envelope names, questions to `round`.
fn observer(envelope: &Envelope, plugin: &Plugin, progress_token: Option<Value>, reply: &Arc<dyn Outlet>, round: Round) -> Arc<ModernObserver> {
    let levels = LevelFilter::new(envelope.log_level.unwrap_or(LogLevel::Emergency));
    let notifier = CallNotifier::new(reply.clone(), levels, &plugin.name, progress_token);
    ModernObserver::new(notifier, envelope.log_level.is_some(), envelope.capabilities, round)
}

/// The input round of `method` (`tools/call`, `prompts/get`, `resources/read`): what its
/// `requestState` recorded and its `inputResponses` add; -32602 when either is bad.
fn round(session: &Session, method: &str, envelope: &Envelope, params: &Map<String, Value>) -> Result<Round, RpcError> {
    let host = session.host();
    Round::open(&host.options.state_secret, &tasks::owner(session.owner()), method, params, envelope.capabilities)
}

/// The context of one call of `plugin` under `observer`, once it has its cancel handle.
fn context(plugin: &Plugin, observer: &Arc<ModernObserver>) -> impl FnOnce(CancelHandle) -> CallContext + Send + 'static {
    let (limits, observer) = (plugin.limits.clone(), observer.clone());
    move |cancel| CallContext { limits, cancel, observer, denials: Arc::default(), time_limit: TimeLimit::default() }
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

fn call(session: &Session, id: RequestId, envelope: Envelope, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
    let host = session.host().clone();
    let call = match tools::admit_local(&host, Params::new(&params)) {
        Ok(call) => call,
        Err(e) => return session.reply(reply, &id, Err(e)),
    };
    let round = match round(session, "tools/call", &envelope, &params) {
        Ok(round) => round,
        Err(e) => return session.reply(reply, &id, Err(e)),
    };
    let as_task = envelope.capabilities.tasks;
    match call.entry.task_support {
        TaskSupport::Required if !as_task => return session.reply(reply, &id, Err(missing_capability(TASKS_EXTENSION))),
        TaskSupport::Required => {
            // Validated here, once, as for a 2025-11-25 task: the runner does not check again.
            let problems = crate::registry::violations(&call.entry.input_validator, &call.arguments);
            if !problems.is_empty() {
                let result = super::results::invalid_arguments_result(&call.entry.name, &problems);
                return session.reply(reply, &id, Ok(wire::result(serde_json::to_value(result).expect("results serialize"), COMPLETE, None)));
            }
            let owner = tasks::owner(session.owner());
            let capabilities = envelope.capabilities;
            return session.answer_later(id, reply, async move { tasks::create(&host, &owner, &call, None, capabilities).await });
        }
        TaskSupport::Optional if as_task => return adaptive(session, id, envelope, call, reply, round),
        _ => {}
    }
    let observer = observer(&envelope, &call.entry.plugin, call.progress_token.clone(), reply, round);
    let ctx = context(&call.entry.plugin, &observer);
    let owner = tasks::owner(session.owner());
    session.spawn_request(id, reply, move |cancel| async move {
        let result = tools::run(&host.runtime, &host.metrics, &call, ctx(cancel)).await.ok()?;
        let result = result_links::keep_plain(&host, &owner, &call.entry.name, call.entry.plugin.limits.inline_result, result).await;
        Some(finish(&observer, Ok(serde_json::to_value(result).expect("results serialize"))))
    });
}

/// An `optional` tool for a request that declared the tasks extension: the call starts at once
/// and answers inline if it ends within `task_after`; past that, the running call becomes a task.
fn adaptive(session: &Session, id: RequestId, envelope: Envelope, call: tools::AdmittedCall, reply: &Arc<dyn Outlet>, round: Round) {
    let host = session.host().clone();
    let owner = tasks::owner(session.owner());
    // The plugin's manifest (`[limits] task-after`) wins over the host's `--task-after`.
    let task_after = call.entry.plugin.limits.task_after.unwrap_or(host.options.task_after);
    let asks = Arc::new(AdoptedAsks::default());
    let observer = {
        let levels = LevelFilter::new(envelope.log_level.unwrap_or(LogLevel::Emergency));
        let notifier = CallNotifier::new(reply.clone(), levels, &call.entry.plugin.name, call.progress_token.clone());
        ModernObserver::adoptable(notifier, envelope.log_level.is_some(), envelope.capabilities, round, asks.clone())
    };
    let input: Arc<dyn CallObserver> = Arc::new(TaskInput::new(host.task_inputs.clone(), envelope.capabilities));
    // Runs under the plain call's `timeout` until adopted, then under the task's.
    let (time_limit, task_timeout) = (TimeLimit::default(), call.entry.plugin.limits.task_timeout);
    let ctx = {
        let (ctx, time_limit) = (context(&call.entry.plugin, &observer), time_limit.clone());
        move |cancel| CallContext { time_limit, ..ctx(cancel) }
    };
    let call = Arc::new(call);
    session.spawn_request(id, reply, move |cancel| async move {
        let running = {
            let (host, call, cancel) = (host.clone(), call.clone(), cancel.clone());
            tokio::spawn(async move { tools::run(&host.runtime, &host.metrics, &call, ctx(cancel)).await })
        };
        let mut running = running;
        tokio::select! {
            done = &mut running => {
                let result = done.ok()?.ok()?;
                let result = result_links::keep_plain(&host, &owner, &call.entry.name, call.entry.plugin.limits.inline_result, result).await;
                Some(finish(&observer, Ok(serde_json::to_value(result).expect("results serialize"))))
            }
            _ = tokio::time::sleep(task_after) => {
                time_limit.switch_to(task_timeout);
                let created = tasks::create(&host, &owner, &call, Some(Adopted::new(running, cancel.clone(), asks, input)), envelope.capabilities).await;
                if created.is_err() {
                    // Refused (overloaded, shutting down): the call it would have adopted stops.
                    cancel.cancel();
                }
                Some(created)
            }
        }
    });
}

fn read(session: &Session, id: RequestId, envelope: Envelope, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
    let host = session.host().clone();
    if resources::uri_param(Params::new(&params)).is_ok_and(result_links::is_result_uri) {
        // A kept result (`corral://results/…`), read by the owner that made the call.
        let owner = tasks::owner(session.owner());
        let caching = Caching { ttl_ms: 0, scope: CacheScope::Private };
        return session.answer_later(id, reply, async move {
            result_links::read(&host, &owner, Params::new(&params)).await.map(|v| wire::result(v, COMPLETE, Some(caching)))
        });
    }
    let owner = resources::uri_param(Params::new(&params)).and_then(|uri| Ok((uri.to_owned(), resources::owner(&host, uri)?)));
    let (uri, plugin) = match owner {
        Ok(found) => found,
        Err(e) => return session.reply(reply, &id, Err(era_error(e))),
    };
    let round = match round(session, "resources/read", &envelope, &params) {
        Ok(round) => round,
        Err(e) => return session.reply(reply, &id, Err(e)),
    };
    let observer = observer(&envelope, &plugin, Params::new(&params).progress_token(), reply, round);
    let ctx = context(&plugin, &observer);
    let caching = Caching { ttl_ms: 0, scope: CacheScope::Private };
    session.spawn_request(id, reply, move |cancel| async move {
        let answer = resources::read(&host, &plugin, &uri, ctx(cancel)).await.ok()?;
        if let Some(outcome) = observer.round().outcome() {
            return Some(outcome);
        }
        Some(finish(&observer, answer).map(|v| wire::result(v, COMPLETE, Some(caching))))
    });
}

fn prompt(session: &Session, id: RequestId, envelope: Envelope, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
    let host = session.host().clone();
    let admitted = match prompts::admit(&host, Params::new(&params)) {
        Ok(admitted) => admitted,
        Err(e) => return session.reply(reply, &id, Err(e)),
    };
    let round = match round(session, "prompts/get", &envelope, &params) {
        Ok(round) => round,
        Err(e) => return session.reply(reply, &id, Err(e)),
    };
    let observer = observer(&envelope, &admitted.entry.plugin, Params::new(&params).progress_token(), reply, round);
    let ctx = context(&admitted.entry.plugin, &observer);
    session.spawn_request(id, reply, move |cancel| async move {
        let answer = prompts::get(&host, &admitted, ctx(cancel)).await.ok()?;
        Some(finish(&observer, answer))
    });
}

fn completion(session: &Session, id: RequestId, envelope: Envelope, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
    let host = session.host().clone();
    let admitted = match prompts::admit_completion(&host, Params::new(&params)) {
        Ok(admitted) => admitted,
        Err(e) => return session.reply(reply, &id, Err(e)),
    };
    let observer = observer(&envelope, &admitted.plugin, Params::new(&params).progress_token(), reply, Round::closed(envelope.capabilities));
    let ctx = context(&admitted.plugin, &observer);
    session.spawn_request(id, reply, move |cancel| async move {
        let answer = prompts::complete(&host, &admitted, ctx(cancel)).await.ok()?;
        Some(finish(&observer, answer))
    });
}
