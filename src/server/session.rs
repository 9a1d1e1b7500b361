//! One client's session (2025-11-25): lifecycle, dispatch, and the requests it has in flight.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::authorize::{authorize, Action};
use super::load_wait::Needs;
use super::notify::{CallNotifier, LevelFilter};
use super::peer::{ClientCaps, Peer};
use super::scope::{Requests, Scope};
use super::sessions::{ListChanged, Listener};
use super::{call_secrets, kept_results, limits, prompts, resources, result_links, tasks, tool_run, tools, Host, Outlet};
use crate::cancel::CancelHandle;
use crate::mcp::jsonrpc::error_message;
use crate::mcp::modern::{self, Era};
use crate::mcp::types::{negotiate_version, LogLevel};
use crate::mcp::{IdKey, Incoming, Method, Notification, Params, Rejected, RequestId, RpcError};
use crate::principal::Owner;
use crate::registry::Plugin;
use crate::runtime::CallContext;
use crate::telemetry::trace::{self, Carrier, Inbound};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Nothing but `initialize` and `ping` yet.
    New,
    /// `initialize` answered.
    Initialized,
}

/// One client's MCP session. A transport hands it each message it parsed; the session
/// answers through the outlet it is given with the message, or its own.
#[derive(Clone)]
pub struct Session {
    shared: Arc<Shared>,
    /// This session's place in the host's [`super::Sessions`], left when the last clone goes
    /// (a clone lives on in a request waiting for the plugins to load).
    _member: Arc<Member>,
}

/// A session's membership of the host's [`super::Sessions`]; dropping it ends the session.
struct Member {
    shared: Arc<Shared>,
    id: u64,
}

struct Shared {
    host: Arc<Host>,
    /// Who this session's tasks belong to.
    owner: Owner,
    outlet: Arc<dyn Outlet>,
    phase: Mutex<Phase>,
    levels: LevelFilter,
    requests: Arc<Requests>,
    /// Requests to the client (elicitation, sampling) and the answers coming back.
    peer: Arc<Peer>,
    /// Resource URIs the client subscribed to.
    subscriptions: Mutex<HashSet<String>>,
    /// When the session was made, in milliseconds since the Unix epoch.
    opened_at: i64,
    /// `clientInfo.name` and the protocol version agreed, once initialized.
    client: Mutex<Option<(String, String)>>,
    /// Where its requests come from, as their trace spans say.
    inbound: Inbound,
}

impl Session {
    /// A session answering through `outlet`, whose tasks belong to `owner`. Must be created
    /// inside a tokio runtime, which then runs the session's tool calls.
    pub fn new(host: Arc<Host>, outlet: Arc<dyn Outlet>, owner: Owner, inbound: Inbound) -> Session {
        let shared = Arc::new(Shared {
            requests: Requests::new(host.clone()),
            host,
            owner,
            peer: Arc::new(Peer::new(outlet.clone())),
            subscriptions: Mutex::new(HashSet::new()),
            outlet,
            phase: Mutex::new(Phase::New),
            levels: LevelFilter::new(LogLevel::Info),
            opened_at: crate::tasks::now_ms(),
            client: Mutex::new(None),
            inbound,
        });
        let listener: Arc<dyn Listener> = shared.clone();
        let id = shared.host.sessions.join(Arc::downgrade(&listener));
        Session { _member: Arc::new(Member { shared: shared.clone(), id }), shared }
    }

    /// Handles one message as the transport parsed it (or the reason it could not), answering
    /// on `reply`: the session's own outlet over stdio, the request's response over HTTP. Quick
    /// methods are answered before this returns; tool calls run on the tokio runtime and
    /// answer when they finish, so they never block the next message. The notifications of a
    /// request's call go to `reply` too; what outlives the request (task status, a task's
    /// progress) goes to the session's outlet.
    pub fn handle(&self, message: Result<Incoming, Rejected>, reply: &Arc<dyn Outlet>) {
        self.handle_traced(message, reply, None);
    }

    /// [`Session::handle`] for a message whose transport carried a trace context of its own
    /// (HTTP headers); the request's `_meta` overrides it.
    pub fn handle_traced(&self, message: Result<Incoming, Rejected>, reply: &Arc<dyn Outlet>, headers: Option<Carrier>) {
        match message {
            Err(rejected) => {
                tracing::debug!(code = rejected.error.code, "rejected message: {}", rejected.error.message);
                if rejected.answer {
                    reply.send(error_message(rejected.id.as_ref(), &rejected.error));
                }
            }
            Ok(Incoming::Request { id, method, params }) => self.request(id, &method, params, reply, headers),
            Ok(Incoming::Notification { method, params }) => self.notification(&method, Params::new(&params)),
            Ok(Incoming::Response { id, outcome }) => self.shared.peer.answer(id, outcome),
        }
    }

    /// Cancels every call in flight (the client went away).
    pub fn cancel_all(&self) {
        self.shared.requests.cancel_all();
        // Tasks outlive the session; what they ask of this client now gets "unavailable".
        self.shared.peer.close();
    }

    /// Cancels the session's unfinished tasks; for a session that owns its tasks (HTTP without
    /// auth) once it has ended, as nothing else can reach them. Returns how many were cancelled.
    pub async fn cancel_tasks(&self) -> usize {
        tasks::cancel_owned(&self.shared.host, &self.shared.owner).await
    }

    /// Waits until every call this session started has finished.
    pub async fn drained(&self) {
        self.shared.requests.drained().await;
    }

    /// Shutdown: the calls in flight get `grace` to finish and answer; each one still running
    /// then is answered with a shutdown error and cancelled, and gets `wind_down` to stop. The
    /// transport has stopped reading before this, so nothing new starts.
    pub async fn finish(&self, grace: Duration, wind_down: Duration) {
        self.shared.requests.finish(grace, wind_down).await;
    }

    /// The span of request `id` of this session (disabled unless traces are exported).
    fn span(&self, id: &RequestId, method: &str, params: &Map<String, Value>, modern: bool, headers: Option<Carrier>) -> tracing::Span {
        if !crate::telemetry::enabled() {
            return tracing::Span::none();
        }
        let agreed = if modern { None } else { self.shared.client.lock().unwrap().as_ref().map(|(_, version)| version.clone()) };
        let version = if modern { modern::MODERN_PROTOCOL_VERSION } else { agreed.as_deref().unwrap_or(crate::mcp::types::LATEST_PROTOCOL_VERSION) };
        let inbound = &self.shared.inbound;
        // A session's own id is what speaks as it: its digest stands for it, as for `mcp.session.id`.
        let enduser = match self.shared.owner.principal() {
            crate::principal::Principal::Session(id) => format!("session:{}", trace::session_digest(id)),
            _ => self.shared.owner.principal_key().to_owned(),
        };
        trace::request(trace::Request {
            method,
            id,
            params,
            transport: inbound.transport,
            protocol_version: version,
            session: if modern { None } else { inbound.session.as_deref() },
            principal: &enduser,
            headers,
        })
    }

    fn request(&self, id: RequestId, name: &str, params: Map<String, Value>, reply: &Arc<dyn Outlet>, headers: Option<Carrier>) {
        // The era of a request on a connection (stdio) is decided here: it carries both.
        if Era::of(&params, None) == Era::Modern {
            return self.stateless(id, name, params, reply, headers);
        }
        let span = self.span(&id, name, &params, false, headers);
        let scope = Scope::new(self.shared.requests.clone(), self.shared.owner.clone(), reply.clone(), span);
        let method = match name.parse::<Method>() {
            Ok(method) => method,
            Err(unknown) => return scope.reply(&id, Err(RpcError::method_not_found(unknown.to_string()))),
        };
        self.shared.host.metrics.request(crate::mcp::types::LATEST_PROTOCOL_VERSION, method.as_str());
        if let Err(refused) = check_phase(method, *self.shared.phase.lock().unwrap()) {
            return scope.reply(&id, Err(refused));
        }
        if limits::counts(method) {
            let (session, later) = (self.clone(), scope.clone());
            return scope.within_rate(id, move |id| session.admitted(&later, id, method, params));
        }
        self.admitted(&scope, id, method, params);
    }

    /// A request past its phase and rate checks: dispatched once what it needs has loaded.
    fn admitted(&self, scope: &Scope, id: RequestId, method: Method, params: Map<String, Value>) {
        let needs = Needs::of(method, &params);
        if !needs.met(&self.shared.host.registry) {
            let (session, waiting_id, later) = (self.clone(), id.clone(), scope.clone());
            return scope.after_load(waiting_id, needs, move || session.dispatch(&later, id, method, params));
        }
        self.dispatch(scope, id, method, params);
    }

    fn dispatch(&self, scope: &Scope, id: RequestId, method: Method, params: Map<String, Value>) {
        let host = &self.shared.host;
        let p = Params::new(&params);
        let answer = match method {
            Method::Ping => Ok(json!({})),
            Method::Initialize => self.initialize(p),
            Method::LoggingSetLevel => self.set_level(p),
            Method::ToolsList => tools::list(host, &self.shared.owner, p),
            Method::ResourcesList => resources::list(host, &self.shared.owner, p),
            Method::ResourcesTemplatesList => resources::list_templates(host, &self.shared.owner, p),
            Method::ResourcesSubscribe => self.subscribe(p, true),
            Method::ResourcesUnsubscribe => self.subscribe(p, false),
            Method::PromptsList => prompts::list(host, &self.shared.owner, p),
            Method::ToolsCall => return self.start_call(scope, id, params),
            Method::ResourcesRead => return self.start_read(scope, id, params),
            Method::PromptsGet => return self.start_prompt(scope, id, params),
            Method::CompletionComplete => return self.start_completion(scope, id, params),
            Method::TasksResult => return self.start_task_result(scope, id, params),
            // The task engine's entry points wait for the store, so they answer from their own
            // future instead of holding this thread.
            Method::TasksGet => {
                let (host, owner) = (host.clone(), self.shared.owner.clone());
                return scope.answer_later(id, async move { tasks::get(&host, &owner, &params).await });
            }
            Method::TasksList => {
                let (host, owner) = (host.clone(), self.shared.owner.clone());
                return scope.answer_later(id, async move { tasks::list(&host, &owner, &params).await });
            }
            Method::TasksCancel => {
                let (host, owner) = (host.clone(), self.shared.owner.clone());
                return scope.answer_later(id, async move { tasks::cancel(&host, &owner, &params).await });
            }
        };
        scope.reply(&id, answer);
    }

    /// A request with the 2026-07-28 envelope on a connection (stdio). `server/discover` and the
    /// rest are served statelessly and lock nothing, so a client may probe and then `initialize`;
    /// once `initialize` has locked the connection to 2025-11-25, an enveloped request is refused.
    /// It is served like a stateless POST, with this connection's requests (so
    /// `notifications/cancelled` reaches it) and its principal on the stateless wire.
    fn stateless(&self, id: RequestId, name: &str, params: Map<String, Value>, reply: &Arc<dyn Outlet>, headers: Option<Carrier>) {
        let span = self.span(&id, name, &params, true, headers);
        let scope = Scope::new(self.shared.requests.clone(), self.shared.owner.stateless(), reply.clone(), span);
        if *self.shared.phase.lock().unwrap() == Phase::Initialized {
            let refused = RpcError::invalid_request(format!(
                "this connection was initialized for 2025-11-25: send `{name}` without the 2026-07-28 `_meta` envelope, or open a new connection"
            ));
            return scope.reply(&id, Err(refused));
        }
        match modern::admit(name, &params) {
            Ok((method, envelope)) => super::modern::serve(&scope, id, method, envelope, params),
            Err(e) => scope.reply(&id, Err(e)),
        }
    }

    fn notification(&self, method: &str, params: Params<'_>) {
        match Notification::parse(method) {
            Some(Notification::Initialized) => tracing::debug!("client confirmed initialization"),
            Some(Notification::Cancelled) => self.cancel(params),
            None => tracing::debug!("ignored notification `{method}`"),
        }
    }

    fn initialize(&self, params: Params<'_>) -> Result<Value, RpcError> {
        let requested = params.required_str("protocolVersion", "")?;
        let caps = ClientCaps::from_initialize(params)?;
        let client = client_name(params)?;
        let version = negotiate_version(requested);
        tracing::info!(client, principal = %self.shared.owner, requested = %requested, version, elicitation = caps.elicitation, sampling = caps.sampling, "session initialized");
        self.shared.peer.set_capabilities(caps);
        *self.shared.client.lock().unwrap() = Some((client.to_owned(), version.to_owned()));
        *self.shared.phase.lock().unwrap() = Phase::Initialized;
        let list_changed = self.shared.host.options.list_changed;
        Ok(json!({
            "protocolVersion": version,
            "capabilities": {
                "tools": { "listChanged": list_changed },
                "resources": { "subscribe": true, "listChanged": list_changed },
                "prompts": { "listChanged": list_changed },
                "completions": {},
                "logging": {},
                "tasks": { "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } },
            },
            "serverInfo": { "name": "corral", "version": env!("CARGO_PKG_VERSION") },
            "instructions": "Tools served by corral run in sandboxed WebAssembly plugins with time, fuel and memory limits.",
        }))
    }

    fn set_level(&self, params: Params<'_>) -> Result<Value, RpcError> {
        let name = params.str_or("level", "missing `level`: a string such as \"info\"")?;
        let level = LogLevel::parse(name).ok_or_else(|| {
            let known: Vec<&str> = LogLevel::ALL.iter().map(|l| l.as_str()).collect();
            RpcError::invalid_params(format!("unknown log level `{name}`: use one of {}", known.join(", ")))
        })?;
        self.shared.levels.set(level);
        Ok(json!({}))
    }

    fn cancel(&self, params: Params<'_>) {
        let Some(IdKey(id)) = params.get("requestId").and_then(|v| serde_json::from_value::<IdKey>(v.clone()).ok()) else {
            return tracing::debug!("ignored notifications/cancelled without a usable requestId");
        };
        if self.shared.requests.cancel(&id) {
            let reason = params.get_str("reason").unwrap_or("no reason given");
            tracing::info!(request = %id, "client cancelled the call: {reason}");
        }
    }

    fn start_call(&self, scope: &Scope, id: RequestId, params: Map<String, Value>) {
        let shared = &self.shared;
        // Authorized before the task policy is checked: a tool the policy hides must answer as
        // unknown whatever else the call lacks.
        let admitted = tools::admit_local(&shared.host, Params::new(&params));
        let Some(call) = scope.admit(&id, admitted, |c| Action::CallTool { plugin: &c.entry.plugin.name, name: &c.entry.name }) else { return };
        let Some(call) = scope.or_answer(&id, tools::check_task_policy(call, Params::new(&params))) else { return };
        if Params::new(&params).has("task") {
            // A task outlives this request: its notifications go to the session's outlet.
            let notifier = Arc::new(shared.notifier(&shared.outlet, &call.entry.plugin, call.progress_token.clone()));
            let (host, owner, outlet) = (shared.host.clone(), shared.owner.clone(), shared.outlet.clone());
            // Not cancellable: once admitted, the task exists whether or not the client waits.
            return scope.answer_later(id, async move {
                let task = params.get("task").cloned().unwrap_or_default();
                tasks::create(&host, &owner, call, &task, &params, outlet, notifier).await
            });
        }
        let observer = Arc::new(shared.notifier(scope.outlet(), &call.entry.plugin, call.progress_token.clone()));
        let (host, owner) = (shared.host.clone(), shared.owner.clone());
        let url_elicitation = shared.peer.capabilities().elicitation_url;
        scope.spawn_request(id, move |cancel| async move {
            let ctx = CallContext::for_request(call.entry.plugin.limits.clone(), cancel, observer);
            let caller = tool_run::Caller { owner: owner.key(), task: None };
            let result = tool_run::run(host.runs(), caller, &call, ctx).await.ok()?.result;
            // A caller secret not set yet, for a client that can send its person to a link.
            if let Some(error) = url_elicitation.then(|| call_secrets::url_elicitation_error(&result)).flatten() {
                return Some(Err(error));
            }
            let result = kept_results::keep_plain(&host, &owner, &call.entry.name, call.entry.plugin.limits.inline_result, result).await;
            Some(Ok(result))
        });
    }

    fn start_task_result(&self, scope: &Scope, id: RequestId, params: Map<String, Value>) {
        let shared = self.shared.clone();
        let stream = scope.outlet().clone();
        scope.spawn_answer(id, async move {
            // While this waits, what the task asks of the client goes on this request's stream.
            // This runs in the first poll, on the receiving thread, before the wait begins.
            let _watching = match Params::new(&params).get_str("taskId") {
                Some(task) if shared.host.engine.runs(shared.owner.key(), task) => Some(shared.peer.watch_task(task, stream)),
                _ => None,
            };
            tasks::result(&shared.host, &shared.owner, &params).await
        });
    }

    fn start_read(&self, scope: &Scope, id: RequestId, params: Map<String, Value>) {
        let host = self.shared.host.clone();
        let p = Params::new(&params);
        if resources::uri_param(p).is_ok_and(result_links::is_result_uri) {
            let owner = self.shared.owner.clone();
            return scope.answer_later(id, async move { kept_results::read(&host, &owner, Params::new(&params)).await });
        }
        let owner = resources::requested_uri(p).and_then(|uri| Ok((resources::owner(&host, &uri)?, uri))).map(|(plugin, uri)| (uri, plugin));
        let Some((uri, plugin)) = scope.admit(&id, owner, |(uri, plugin)| Action::ReadResource { plugin: &plugin.name, uri }) else { return };
        let ctx = self.context(&plugin, p, scope);
        scope.spawn_request(id, move |cancel| async move { resources::read(&host, &plugin, &uri, ctx(cancel)).await.ok() });
    }

    fn start_prompt(&self, scope: &Scope, id: RequestId, params: Map<String, Value>) {
        let host = self.shared.host.clone();
        let p = Params::new(&params);
        let Some(admitted) = scope.admit(&id, prompts::admit(&host, p), |a| Action::UsePrompt { plugin: &a.entry.plugin.name, name: &a.entry.prompt.name })
        else {
            return;
        };
        let ctx = self.context(&admitted.entry.plugin, p, scope);
        scope.spawn_request(id, move |cancel| async move { prompts::get(&host, &admitted, ctx(cancel)).await.ok() });
    }

    fn start_completion(&self, scope: &Scope, id: RequestId, params: Map<String, Value>) {
        let host = self.shared.host.clone();
        let p = Params::new(&params);
        let Some(admitted) = scope.admit(&id, prompts::admit_completion(&host, p), prompts::AdmittedCompletion::action) else { return };
        let ctx = self.context(&admitted.plugin, p, scope);
        scope.spawn_request(id, move |cancel| async move { prompts::complete(&host, &admitted, ctx(cancel)).await.ok() });
    }

    /// The context of a call of `plugin` for this request, once the request has its cancel
    /// handle: the plugin's limits, and a notifier that reports to the request's reply and may
    /// ask the client.
    fn context(&self, plugin: &Plugin, params: Params<'_>, scope: &Scope) -> impl FnOnce(CancelHandle) -> CallContext + Send + 'static {
        let observer = Arc::new(self.shared.notifier(scope.outlet(), plugin, params.progress_token()));
        let limits = plugin.limits.clone();
        move |cancel| CallContext::for_request(limits, cancel, observer)
    }

    /// `resources/subscribe` (`on`) and `resources/unsubscribe`.
    fn subscribe(&self, params: Params<'_>, on: bool) -> Result<Value, RpcError> {
        let uri = resources::requested_uri(params)?;
        if on {
            let plugin = resources::owner(&self.shared.host, &uri)?;
            authorize(&self.shared.host, &self.shared.owner, Action::ReadResource { plugin: &plugin.name, uri: &uri })?;
            self.shared.subscriptions.lock().unwrap().insert(uri);
        } else {
            self.shared.subscriptions.lock().unwrap().remove(&uri);
        }
        Ok(json!({}))
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.shared.peer.close();
        self.shared.host.sessions.leave(self.id);
    }
}

impl Shared {
    /// A call's observer: its notifications go to `outlet`, and it may ask the client.
    fn notifier(&self, outlet: &Arc<dyn Outlet>, plugin: &Plugin, progress_token: Option<Value>) -> CallNotifier {
        CallNotifier::new(outlet.clone(), self.levels.clone(), &plugin.name, progress_token).asking(self.peer.clone())
    }
}

/// Which methods a session in `phase` accepts: only `initialize` and `ping` before
/// `initialize`, everything but `initialize` after.
fn check_phase(method: Method, phase: Phase) -> Result<(), RpcError> {
    match (method, phase) {
        (Method::Ping, _) | (Method::Initialize, Phase::New) => Ok(()),
        (Method::Initialize, Phase::Initialized) => Err(RpcError::invalid_request("the session is already initialized")),
        (_, Phase::New) => Err(RpcError::invalid_request(format!("`{method}` before `initialize`: initialize the session first"))),
        (_, Phase::Initialized) => Ok(()),
    }
}

impl Listener for Shared {
    fn announce(&self, changed: &ListChanged) -> bool {
        let initialized = *self.phase.lock().unwrap() == Phase::Initialized;
        if initialized {
            self.outlet.send(changed.message.clone());
        }
        initialized
    }

    fn log(&self, level: LogLevel, message: &crate::mcp::jsonrpc::Outgoing) -> bool {
        let wanted = *self.phase.lock().unwrap() == Phase::Initialized && self.levels.allows(level);
        if wanted {
            self.outlet.send(message.clone());
        }
        wanted
    }

    fn describe(&self) -> Option<super::session_view::SessionView> {
        let client = self.client.lock().unwrap().clone();
        Some(super::session_view::SessionView::new(&self.owner, client, self.opened_at, self.requests.in_flight()))
    }

    fn resource_updated(&self, uri: &str, may_hear: &dyn Fn(&Owner) -> bool) -> bool {
        let subscribed = self.subscriptions.lock().unwrap().contains(uri) && may_hear(&self.owner);
        if subscribed {
            self.outlet.send(crate::mcp::jsonrpc::notification("notifications/resources/updated", &json!({ "uri": uri })));
        }
        subscribed
    }
}

/// The name in `initialize`'s `clientInfo`, for the log. The schema's `Implementation` needs
/// `name` and `version` strings; a `clientInfo` that is sent without them is refused (-32602
/// naming the field). One that is absent reads as "unknown", as it always has: clients of this
/// host's earliest versions omit it, and nothing here depends on it.
fn client_name(params: Params<'_>) -> Result<&str, RpcError> {
    let Some(info) = params.get("clientInfo") else { return Ok("unknown") };
    let Value::Object(info) = info else { return Err(RpcError::invalid_params("`clientInfo` must be an object")) };
    let field = |key: &str| match info.get(key) {
        Some(Value::String(text)) => Ok(text.as_str()),
        Some(_) => Err(RpcError::invalid_params(format!("`clientInfo.{key}` must be a string"))),
        None => Err(RpcError::invalid_params(format!("missing `clientInfo.{key}`: the client's {key}, a string"))),
    };
    let name = field("name")?;
    field("version")?;
    Ok(name)
}

#[cfg(test)]
mod tests;
