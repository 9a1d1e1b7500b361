//! One client's session: lifecycle, dispatch, and the calls it has in flight.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio_util::task::TaskTracker;

use super::inline::run_inline_then_spawn;
use super::load_wait::Needs;
use super::notify::{CallNotifier, LevelFilter};
use super::peer::{ClientCaps, Peer};
use super::sessions::Listener;
use super::{prompts, resources, result_links, tasks, tools, Host, Outlet};
use crate::cancel::CancelHandle;
use crate::mcp::jsonrpc::{error_message, result_message};
use crate::mcp::modern::{self, Envelope, Era, ModernMethod};
use crate::mcp::types::{negotiate_version, LogLevel};
use crate::mcp::{IdKey, Incoming, Method, Notification, Params, Rejected, RequestId, RpcError};
use crate::registry::Plugin;
use crate::runtime::CallContext;

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
    owner: String,
    outlet: Arc<dyn Outlet>,
    phase: Mutex<Phase>,
    levels: LevelFilter,
    in_flight: Mutex<HashMap<RequestId, InFlight>>,
    calls: TaskTracker,
    runtime: tokio::runtime::Handle,
    /// Requests to the client (elicitation, sampling) and the answers coming back.
    peer: Arc<Peer>,
    /// Resource URIs the client subscribed to.
    subscriptions: Mutex<HashSet<String>>,
}

/// A request running on the runtime: how to cancel it, and where its answer goes (so that a
/// shutdown can answer it when it does not finish in time).
struct InFlight {
    cancel: CancelHandle,
    reply: Arc<dyn Outlet>,
}

impl Session {
    /// A session answering through `outlet`, whose tasks belong to `owner`. Must be created
    /// inside a tokio runtime, which then runs the session's tool calls.
    pub fn new(host: Arc<Host>, outlet: Arc<dyn Outlet>, owner: impl Into<String>) -> Session {
        let shared = Arc::new(Shared {
            host,
            owner: owner.into(),
            peer: Arc::new(Peer::new(outlet.clone())),
            subscriptions: Mutex::new(HashSet::new()),
            outlet,
            phase: Mutex::new(Phase::New),
            levels: LevelFilter::new(LogLevel::Info),
            in_flight: Mutex::new(HashMap::new()),
            calls: TaskTracker::new(),
            runtime: tokio::runtime::Handle::current(),
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
        match message {
            Err(rejected) => {
                tracing::debug!(code = rejected.error.code, "rejected message: {}", rejected.error.message);
                if rejected.answer {
                    reply.send(error_message(rejected.id.as_ref(), &rejected.error));
                }
            }
            Ok(Incoming::Request { id, method, params }) => self.request(id, &method, params, reply),
            Ok(Incoming::Notification { method, params }) => self.notification(&method, Params::new(&params)),
            Ok(Incoming::Response { id, outcome }) => self.shared.peer.answer(id, outcome),
        }
    }

    /// Cancels every call in flight (the client went away).
    pub fn cancel_all(&self) {
        for call in self.shared.in_flight.lock().unwrap().values() {
            call.cancel.cancel();
        }
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
        self.shared.calls.close();
        self.shared.calls.wait().await;
    }

    /// Serves a 2026-07-28 request whose envelope and method the transport has read (HTTP, after
    /// its header checks). It neither needs nor changes the session's phase.
    pub fn handle_modern(&self, id: RequestId, method: ModernMethod, envelope: Envelope, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
        if let Some(client) = &envelope.client {
            tracing::debug!(client, %method, "stateless request");
        }
        self.shared.host.metrics.request(modern::MODERN_PROTOCOL_VERSION, &method.to_string());
        // The same rule as 2025-11-25 (`after_load`): what reads the catalog waits for the first
        // load; `server/discover` and `subscriptions/listen` never do.
        if let ModernMethod::Shared(shared) = method {
            let needs = Needs::of(shared, &params);
            if !needs.met(&self.shared.host.registry) {
                let waiting_id = id.clone();
                return self.after_load(waiting_id, needs, reply, move |session, reply| super::modern::dispatch(session, id, method, envelope, params, reply));
            }
        }
        super::modern::dispatch(self, id, method, envelope, params, reply);
    }

    /// Who this session's tasks belong to.
    pub(super) fn owner(&self) -> &str {
        &self.shared.owner
    }

    /// The host this session serves.
    pub(super) fn host(&self) -> &Arc<Host> {
        &self.shared.host
    }

    /// Shutdown (issue 17, finding 4): the calls in flight get `grace` to finish and answer;
    /// each one still running then is answered with a shutdown error and cancelled, and gets
    /// `wind_down` to stop. The transport has stopped reading before this, so nothing new starts.
    pub async fn finish(&self, grace: Duration, wind_down: Duration) {
        self.shared.calls.close();
        if tokio::time::timeout(grace, self.shared.calls.wait()).await.is_ok() {
            return;
        }
        let unfinished: Vec<(RequestId, InFlight)> = self.shared.in_flight.lock().unwrap().drain().collect();
        let error = RpcError::internal(format!(
            "corral is shutting down: the call was still running after the shutdown grace ({}) and was cancelled",
            humantime::format_duration(grace)
        ))
        .with_data(json!({ "kind": "shutdown" }));
        for (id, call) in unfinished {
            tracing::warn!(request = %id, "call still running at the end of the shutdown grace; answered and cancelled");
            call.cancel.cancel();
            call.reply.send(error_message(Some(&id), &error));
        }
        if tokio::time::timeout(wind_down, self.shared.calls.wait()).await.is_err() {
            tracing::warn!("cancelled calls still running after {wind_down:?}; exiting anyway");
        }
    }

    fn request(&self, id: RequestId, name: &str, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
        // The era is decided here, once per request: stdio carries both on one connection.
        if Era::of(&params, None) == Era::Modern {
            return self.stateless(id, name, params, reply);
        }
        let method = match name.parse::<Method>() {
            Ok(method) => method,
            Err(unknown) => return self.reply(reply, &id, Err(RpcError::method_not_found(unknown.to_string()))),
        };
        self.shared.host.metrics.request(crate::mcp::types::LATEST_PROTOCOL_VERSION, name);
        if let Err(refused) = check_phase(method, *self.shared.phase.lock().unwrap()) {
            return self.reply(reply, &id, Err(refused));
        }
        let needs = Needs::of(method, &params);
        if !needs.met(&self.shared.host.registry) {
            let waiting_id = id.clone();
            return self.after_load(waiting_id, needs, reply, move |session, reply| session.dispatch(id, method, params, reply));
        }
        self.dispatch(id, method, params, reply);
    }

    fn dispatch(&self, id: RequestId, method: Method, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
        let host = &self.shared.host;
        let p = Params::new(&params);
        let answer = match method {
            Method::Ping => Ok(json!({})),
            Method::Initialize => self.initialize(p),
            Method::LoggingSetLevel => self.set_level(p),
            Method::ToolsList => tools::list(host, p),
            Method::ResourcesList => resources::list(host, p),
            Method::ResourcesTemplatesList => resources::list_templates(host, p),
            Method::ResourcesSubscribe => self.subscribe(p, true),
            Method::ResourcesUnsubscribe => self.subscribe(p, false),
            Method::PromptsList => prompts::list(host, p),
            Method::ToolsCall => return self.start_call(id, params, reply),
            Method::ResourcesRead => return self.start_read(id, params, reply),
            Method::PromptsGet => return self.start_prompt(id, params, reply),
            Method::CompletionComplete => return self.start_completion(id, params, reply),
            Method::TasksResult => return self.start_task_result(id, params, reply),
            // The task engine's entry points wait for the store, so they answer from their own
            // future instead of holding this thread; the first poll still runs here, so an answer
            // that does not wait leaves in order. Not cancellable: they are quick, and a cancel
            // that reaches the store must not be dropped half-way.
            Method::TasksGet => {
                let (host, owner) = self.host_and_owner();
                return self.answer_later(id, reply, async move { tasks::get(&host, &owner, &params).await });
            }
            Method::TasksList => {
                let (host, owner) = self.host_and_owner();
                return self.answer_later(id, reply, async move { tasks::list(&host, &owner, &params).await });
            }
            Method::TasksCancel => {
                let (host, owner) = self.host_and_owner();
                return self.answer_later(id, reply, async move { tasks::cancel(&host, &owner, &params).await });
            }
        };
        self.reply(reply, &id, answer);
    }

    /// A request with the 2026-07-28 envelope on a connection (stdio). `server/discover` and the
    /// rest are served statelessly and lock nothing, so a client may probe and then `initialize`;
    /// once `initialize` has locked the connection to 2025-11-25, an enveloped request is refused.
    fn stateless(&self, id: RequestId, name: &str, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
        if *self.shared.phase.lock().unwrap() == Phase::Initialized {
            let refused = RpcError::invalid_request(format!(
                "this connection was initialized for 2025-11-25: send `{name}` without the 2026-07-28 `_meta` envelope, or open a new connection"
            ));
            return self.reply(reply, &id, Err(refused));
        }
        match modern::admit(name, &params) {
            Ok((method, envelope)) => self.handle_modern(id, method, envelope, params, reply),
            Err(e) => self.reply(reply, &id, Err(e)),
        }
    }

    /// Handles a request that needs the plugins once what it `needs` has loaded (at most the
    /// registry's load wait; then from what has loaded), without holding up the messages after
    /// it. Meanwhile it is in flight like a running call: `notifications/cancelled` (or the end
    /// of its session) ends it at once with no answer, and a shutdown answers it.
    fn after_load(&self, id: RequestId, needs: Needs, reply: &Arc<dyn Outlet>, then: impl FnOnce(&Session, &Arc<dyn Outlet>) + Send + 'static) {
        let Some(cancel) = self.enter(&id, reply) else { return };
        let (session, reply) = (self.clone(), reply.clone());
        let waiting = async move {
            let registry = &session.shared.host.registry;
            tokio::select! {
                _ = cancel.cancelled() => {}
                _ = needs.wait(registry) => {}
            }
            // Whoever takes the entry answers: a shutdown that answered first leaves nothing.
            if session.shared.in_flight.lock().unwrap().remove(&id).is_none() {
                return;
            }
            if cancel.is_cancelled() {
                return tracing::info!(request = %id, "cancelled while waiting for the plugins to load; no response sent");
            }
            then(&session, &reply);
        };
        self.shared.calls.spawn_on(waiting, &self.shared.runtime);
    }

    /// Registers request `id` as in flight, answering on `reply`: its cancel handle, or `None`
    /// (and the error answered) when the id is already in use by a request in flight.
    fn enter(&self, id: &RequestId, reply: &Arc<dyn Outlet>) -> Option<CancelHandle> {
        let cancel = self.shared.host.runtime.cancel_handle();
        let mut in_flight = self.shared.in_flight.lock().unwrap();
        if in_flight.contains_key(id) {
            drop(in_flight);
            self.reply(reply, id, Err(RpcError::invalid_request(format!("request id {id} is already in use by a request in flight"))));
            return None;
        }
        in_flight.insert(id.clone(), InFlight { cancel: cancel.clone(), reply: reply.clone() });
        Some(cancel)
    }

    fn host_and_owner(&self) -> (Arc<Host>, String) {
        (self.shared.host.clone(), self.shared.owner.clone())
    }

    pub(super) fn reply(&self, reply: &Arc<dyn Outlet>, id: &RequestId, answer: Result<Value, RpcError>) {
        let message = match answer {
            Ok(result) => result_message(id, result),
            Err(error) => error_message(Some(id), &error),
        };
        reply.send(message);
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
        params.optional_object("capabilities")?;
        params.optional_object("clientInfo")?;
        let version = negotiate_version(requested);
        let client = params.get("clientInfo").and_then(|c| c.get("name")).and_then(Value::as_str).unwrap_or("unknown");
        let caps = ClientCaps::from_initialize(params.get("capabilities"));
        tracing::info!(client, requested = %requested, version, elicitation = caps.elicitation, sampling = caps.sampling, "session initialized");
        self.shared.peer.set_capabilities(caps);
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
        if let Some(call) = self.shared.in_flight.lock().unwrap().get(&id) {
            let reason = params.get_str("reason").unwrap_or("no reason given");
            tracing::info!(request = %id, "client cancelled the call: {reason}");
            call.cancel.cancel();
        }
    }

    fn start_call(&self, id: RequestId, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
        let shared = &self.shared;
        let call = match tools::admit(&shared.host, Params::new(&params)) {
            Ok(call) => call,
            Err(e) => return self.reply(reply, &id, Err(e)),
        };
        if Params::new(&params).has("task") {
            // A task outlives this request: its notifications go to the session's outlet.
            let notifier = Arc::new(shared.notifier(&shared.outlet, &call.entry.plugin, call.progress_token.clone()));
            let (host, owner, outlet) = (shared.host.clone(), shared.owner.clone(), shared.outlet.clone());
            // Not cancellable: once admitted, the task exists whether or not the client waits.
            return self.answer_later(id, reply, async move {
                let task = params.get("task").cloned().unwrap_or_default();
                tasks::create(&host, &owner, call, &task, &params, outlet, notifier).await
            });
        }
        let notifier = Arc::new(shared.notifier(reply, &call.entry.plugin, call.progress_token.clone()));
        let limits = call.entry.plugin.limits.clone();
        let (host, owner) = (shared.host.clone(), shared.owner.clone());
        self.spawn_request(id, reply, move |cancel| async move {
            let inline_limit = limits.inline_result;
            let ctx = CallContext { limits, cancel, observer: notifier, denials: Arc::default(), time_limit: Default::default() };
            let result = tools::run(&host.runtime, &host.metrics, &call, ctx).await.ok()?;
            let result = result_links::keep_plain(&host, &owner, &call.entry.name, inline_limit, result).await;
            Some(Ok(serde_json::to_value(result).expect("results serialize")))
        });
    }

    fn start_task_result(&self, id: RequestId, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
        let shared = self.shared.clone();
        let stream = reply.clone();
        self.spawn_answer(id, reply, async move {
            // While this waits, what the task asks of the client goes on this request's stream.
            // This runs in the first poll, on the receiving thread, before the wait begins.
            let _watching = match Params::new(&params).get_str("taskId") {
                Some(task) if shared.host.engine.runs(&shared.owner, task) => Some(shared.peer.watch_task(task, stream)),
                _ => None,
            };
            tasks::result(&shared.host, &shared.owner, &params).await
        });
    }

    /// Answers `id` with what `answer` comes to, without holding up the next message. Tracked
    /// with the session's calls (so `drained` waits for it), but not cancellable.
    pub(super) fn answer_later(
        &self,
        id: RequestId,
        reply: &Arc<dyn Outlet>,
        answer: impl std::future::Future<Output = Result<Value, RpcError>> + Send + 'static,
    ) {
        let reply = reply.clone();
        let request = self.shared.calls.track_future(async move {
            let message = match answer.await {
                Ok(result) => result_message(&id, result),
                Err(error) => error_message(Some(&id), &error),
            };
            reply.send(message);
        });
        run_inline_then_spawn(request, &self.shared.runtime);
    }

    fn start_read(&self, id: RequestId, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
        let host = self.shared.host.clone();
        let p = Params::new(&params);
        if resources::uri_param(p).is_ok_and(result_links::is_result_uri) {
            let owner = self.shared.owner.clone();
            return self.answer_later(id, reply, async move { result_links::read(&host, &owner, Params::new(&params)).await });
        }
        let owner = resources::uri_param(p).and_then(|uri| Ok((uri.to_owned(), resources::owner(&host, uri)?)));
        let (uri, plugin) = match owner {
            Ok(found) => found,
            Err(e) => return self.reply(reply, &id, Err(e)),
        };
        let ctx = self.context(&plugin, p, reply);
        self.spawn_request(id, reply, move |cancel| async move { resources::read(&host, &plugin, &uri, ctx(cancel)).await.ok() });
    }

    fn start_prompt(&self, id: RequestId, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
        let host = self.shared.host.clone();
        let p = Params::new(&params);
        let admitted = match prompts::admit(&host, p) {
            Ok(admitted) => admitted,
            Err(e) => return self.reply(reply, &id, Err(e)),
        };
        let ctx = self.context(&admitted.entry.plugin, p, reply);
        self.spawn_request(id, reply, move |cancel| async move { prompts::get(&host, &admitted, ctx(cancel)).await.ok() });
    }

    fn start_completion(&self, id: RequestId, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
        let host = self.shared.host.clone();
        let p = Params::new(&params);
        let admitted = match prompts::admit_completion(&host, p) {
            Ok(admitted) => admitted,
            Err(e) => return self.reply(reply, &id, Err(e)),
        };
        let ctx = self.context(&admitted.plugin, p, reply);
        self.spawn_request(id, reply, move |cancel| async move { prompts::complete(&host, &admitted, ctx(cancel)).await.ok() });
    }

    /// The context of a call of `plugin` for this request, once the request has its cancel
    /// handle: the plugin's limits, and a notifier that reports to `reply` and may ask the client.
    fn context(&self, plugin: &Plugin, params: Params<'_>, reply: &Arc<dyn Outlet>) -> impl FnOnce(CancelHandle) -> CallContext + Send + 'static {
        let observer = Arc::new(self.shared.notifier(reply, plugin, params.progress_token()));
        let limits = plugin.limits.clone();
        move |cancel| CallContext { limits, cancel, observer, denials: Arc::default(), time_limit: Default::default() }
    }

    /// `resources/subscribe` (`on`) and `resources/unsubscribe`.
    fn subscribe(&self, params: Params<'_>, on: bool) -> Result<Value, RpcError> {
        let uri = resources::uri_param(params)?;
        let mut subscriptions = self.shared.subscriptions.lock().unwrap();
        if on {
            resources::owner(&self.shared.host, uri)?;
            subscriptions.insert(uri.to_owned());
        } else {
            subscriptions.remove(uri);
        }
        Ok(json!({}))
    }

    /// Runs `work` as a request that answers when it is done, unless the client cancels it
    /// first (then no answer, as MCP wants).
    fn spawn_answer<Fut>(&self, id: RequestId, reply: &Arc<dyn Outlet>, work: Fut)
    where
        Fut: std::future::Future<Output = Result<Value, RpcError>> + Send + 'static,
    {
        self.spawn_request(id, reply, move |cancel| async move {
            tokio::select! {
                _ = cancel.cancelled() => None,
                answer = work => Some(answer),
            }
        });
    }

    /// Runs a request that may take a while on the runtime, cancellable by
    /// `notifications/cancelled`. `work` answers `None` when it was cancelled: no response.
    ///
    /// `work` makes its future inside the request's: a future captured by value would be stored
    /// twice in the request's state, and a call's is kilobytes that its first poll would copy
    /// (BENCHMARKS.md, section 17).
    pub(super) fn spawn_request<F, Fut>(&self, id: RequestId, reply: &Arc<dyn Outlet>, work: F)
    where
        F: FnOnce(CancelHandle) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Option<Result<Value, RpcError>>> + Send + 'static,
    {
        let shared = &self.shared;
        let Some(cancel) = self.enter(&id, reply) else { return };
        let task_shared = shared.clone();
        let reply = reply.clone();
        let request = shared.calls.track_future(async move {
            let answer = work(cancel).await;
            // Whoever takes the entry answers: a shutdown that answered first leaves nothing.
            if task_shared.in_flight.lock().unwrap().remove(&id).is_none() {
                return;
            }
            match answer {
                Some(Ok(result)) => reply.send(result_message(&id, result)),
                Some(Err(error)) => reply.send(error_message(Some(&id), &error)),
                None => tracing::info!(request = %id, "cancelled request stopped; no response sent"),
            }
        });
        run_inline_then_spawn(request, &shared.runtime);
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
    fn announce(&self, message: &Value) -> bool {
        let initialized = *self.phase.lock().unwrap() == Phase::Initialized;
        if initialized {
            self.outlet.send(message.clone());
        }
        initialized
    }

    fn resource_updated(&self, uri: &str) -> bool {
        let subscribed = self.subscriptions.lock().unwrap().contains(uri);
        if subscribed {
            self.outlet.send(crate::mcp::jsonrpc::notification("notifications/resources/updated", json!({ "uri": uri })));
        }
        subscribed
    }
}

#[cfg(test)]
mod tests;
