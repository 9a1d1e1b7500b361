//! One client's session: lifecycle, dispatch, and the calls it has in flight.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};
use tokio_util::task::TaskTracker;

use super::notify::{CallNotifier, LevelFilter};
use super::peer::{ClientCaps, Peer};
use super::sessions::Listener;
use super::{prompts, resources, tasks, tools, Host, Outlet};
use crate::mcp::jsonrpc::{self, error_message, result_message, Incoming};
use crate::mcp::types::{negotiate_version, LogLevel};
use crate::mcp::{RequestId, RpcError};
use crate::cancel::CancelHandle;
use crate::runtime::{CallContext, Failure};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Nothing but `initialize` and `ping` yet.
    New,
    /// `initialize` answered.
    Initialized,
}

pub struct Session {
    shared: Arc<Shared>,
    /// This session's place in the host's [`super::Sessions`].
    member: u64,
}

struct Shared {
    host: Arc<Host>,
    /// Who this session's tasks belong to.
    owner: String,
    outlet: Arc<dyn Outlet>,
    phase: Mutex<Phase>,
    levels: LevelFilter,
    in_flight: Mutex<HashMap<RequestId, CancelHandle>>,
    calls: TaskTracker,
    runtime: tokio::runtime::Handle,
    /// Requests to the client (elicitation, sampling) and the answers coming back.
    peer: Arc<Peer>,
    /// Resource URIs the client subscribed to.
    subscriptions: Mutex<HashSet<String>>,
}

const METHODS: [&str; 17] = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "logging/setLevel",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
];

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
        let member = shared.host.sessions.join(Arc::downgrade(&listener));
        Session { shared, member }
    }

    /// Handles one framed message, answering on the session's outlet. Quick methods are
    /// answered before this returns; tool calls run on the tokio runtime and answer when they
    /// finish, so they never block the next message.
    pub fn handle(&self, text: &str) {
        self.handle_with(text, &self.shared.outlet.clone());
    }

    /// Like [`Session::handle`], but the answer and the notifications of this request's call go
    /// to `reply` (an HTTP response stream); what outlives the request (task status, a task's
    /// progress) still goes to the session's outlet.
    pub fn handle_with(&self, text: &str, reply: &Arc<dyn Outlet>) {
        match jsonrpc::parse(text) {
            Err(rejected) => {
                tracing::debug!(code = rejected.error.code, "rejected message: {}", rejected.error.message);
                reply.send(error_message(rejected.id.as_ref(), &rejected.error));
            }
            Ok(Incoming::Request { id, method, params }) => self.request(id, &method, params, reply),
            Ok(Incoming::Notification { method, params }) => self.notification(&method, &params),
            Ok(Incoming::Response { id, outcome }) => self.shared.peer.answer(id, outcome),
        }
    }

    /// Cancels every call in flight (the client went away).
    pub fn cancel_all(&self) {
        for call in self.shared.in_flight.lock().unwrap().values() {
            call.cancel();
        }
        // Tasks outlive the session; what they ask of this client now gets "unavailable".
        self.shared.peer.close();
    }

    /// Waits until every call this session started has finished.
    pub async fn drained(&self) {
        self.shared.calls.close();
        self.shared.calls.wait().await;
    }

    fn request(&self, id: RequestId, method: &str, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
        let shared = &self.shared;
        if !METHODS.contains(&method) {
            return self.reply(reply, &id, Err(RpcError::method_not_found(format!("method `{method}` not found"))));
        }
        let phase = *shared.phase.lock().unwrap();
        let answer = match (method, phase) {
            ("ping", _) => Ok(json!({})),
            ("initialize", Phase::New) => self.initialize(&params),
            ("initialize", _) => Err(RpcError::invalid_request("the session is already initialized")),
            (_, Phase::New) => Err(RpcError::invalid_request(format!("`{method}` before `initialize`: initialize the session first"))),
            ("tools/list", _) => tools::list(&shared.host, &params),
            ("logging/setLevel", _) => self.set_level(&params),
            ("tools/call", _) => return self.start_call(id, params, reply),
            ("tasks/get", _) | ("tasks/list", _) | ("tasks/cancel", _) => return self.start_task_method(id, method, params, reply),
            ("tasks/result", _) => return self.start_task_result(id, params, reply),
            ("resources/list", _) => resources::list(&shared.host, &params),
            ("resources/templates/list", _) => resources::list_templates(&shared.host, &params),
            ("resources/read", _) => return self.start_read(id, params, reply),
            ("resources/subscribe", _) => self.subscribe(&params, true),
            ("resources/unsubscribe", _) => self.subscribe(&params, false),
            ("prompts/list", _) => prompts::list(&shared.host, &params),
            ("prompts/get", _) => return self.start_prompt(id, params, reply),
            ("completion/complete", _) => return self.start_completion(id, params, reply),
            _ => unreachable!("every method in METHODS is dispatched"),
        };
        self.reply(reply, &id, answer);
    }

    fn reply(&self, reply: &Arc<dyn Outlet>, id: &RequestId, answer: Result<Value, RpcError>) {
        let message = match answer {
            Ok(result) => result_message(id, result),
            Err(error) => error_message(Some(id), &error),
        };
        reply.send(message);
    }

    fn notification(&self, method: &str, params: &Map<String, Value>) {
        match method {
            "notifications/initialized" => tracing::debug!("client confirmed initialization"),
            "notifications/cancelled" => self.cancel(params),
            other => tracing::debug!("ignored notification `{other}`"),
        }
    }

    fn initialize(&self, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let requested = match params.get("protocolVersion") {
            Some(Value::String(v)) => v,
            Some(_) => return Err(RpcError::invalid_params("`protocolVersion` must be a string")),
            None => return Err(RpcError::invalid_params("missing `protocolVersion`")),
        };
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

    fn set_level(&self, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let name = params.get("level").and_then(Value::as_str).ok_or_else(|| RpcError::invalid_params("missing `level`: a string such as \"info\""))?;
        let level = LogLevel::parse(name).ok_or_else(|| {
            let known: Vec<&str> = LogLevel::ALL.iter().map(|l| l.as_str()).collect();
            RpcError::invalid_params(format!("unknown log level `{name}`: use one of {}", known.join(", ")))
        })?;
        self.shared.levels.set(level);
        Ok(json!({}))
    }

    fn cancel(&self, params: &Map<String, Value>) {
        let Some(id) = params.get("requestId").and_then(|v| serde_json::from_value::<IdKey>(v.clone()).ok()) else {
            return tracing::debug!("ignored notifications/cancelled without a usable requestId");
        };
        let id = id.0;
        if let Some(token) = self.shared.in_flight.lock().unwrap().get(&id) {
            let reason = params.get("reason").and_then(Value::as_str).unwrap_or("no reason given");
            tracing::info!(request = %id, "client cancelled the call: {reason}");
            token.cancel();
        }
    }

    fn start_call(&self, id: RequestId, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
        let shared = &self.shared;
        let call = match tools::admit(&shared.host, &params, true) {
            Ok(call) => call,
            Err(e) => return self.reply(reply, &id, Err(e)),
        };
        if let Some(task) = params.get("task").filter(|t| !t.is_null()) {
            // A task outlives this request: its notifications go to the session's outlet.
            let notifier = CallNotifier::new(shared.outlet.clone(), shared.levels.clone(), &call.entry.plugin.name, call.progress_token.clone())
                .asking(shared.peer.clone());
            let (task, shared) = (task.clone(), shared.clone());
            let observer: Arc<dyn crate::runtime::CallObserver> = Arc::new(notifier);
            // Not cancellable: once admitted, the task exists whether or not the client waits.
            return self.answer_later(id, reply, async move {
                tasks::create(&shared.host, &shared.owner, call, &task, &params, shared.outlet.clone(), observer).await
            });
        }
        let notifier = Arc::new(self.notifier(reply, &call.entry.plugin.name, call.progress_token.clone()));
        let limits = call.entry.plugin.limits.clone();
        let host = shared.host.clone();
        self.spawn_request(id, reply, move |cancel| async move {
            let tool = call.entry.name.clone();
            let ctx = CallContext { limits, cancel, observer: notifier, denials: Arc::default() };
            match tools::run(&host.runtime, &host.metrics, &call, ctx).await {
                Ok(result) => Some(Ok(serde_json::to_value(result).expect("results serialize"))),
                Err(Failure::Cancelled) => None,
                Err(other) => Some(Err(RpcError::internal(other.describe(&tool)))),
            }
        });
    }

    fn start_task_result(&self, id: RequestId, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
        let shared = self.shared.clone();
        // While this waits, what the task asks of the client goes on this request's stream.
        let watching = match params.get("taskId") {
            Some(Value::String(task)) if shared.host.engine.runs(&shared.owner, task) => Some(shared.peer.watch_task(task, reply.clone())),
            _ => None,
        };
        self.spawn_request(id, reply, move |cancel| async move {
            let _watching = watching;
            tokio::select! {
                _ = cancel.cancelled() => None,
                answer = tasks::result(&shared.host, &shared.owner, &params) => Some(answer),
            }
        });
    }

    /// `tasks/get`, `tasks/list` and `tasks/cancel`: quick, but they wait for the store, so
    /// they answer from their own task instead of holding up the next message.
    fn start_task_method(&self, id: RequestId, method: &str, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
        let shared = self.shared.clone();
        let method = method.to_owned();
        self.answer_later(id, reply, async move {
            match method.as_str() {
                "tasks/get" => tasks::get(&shared.host, &shared.owner, &params).await,
                "tasks/list" => tasks::list(&shared.host, &shared.owner, &params).await,
                _ => tasks::cancel(&shared.host, &shared.owner, &params).await,
            }
        });
    }

    /// Answers `id` with what `answer` comes to, without holding up the next message. Tracked
    /// with the session's calls (so `drained` waits for it), but not cancellable.
    fn answer_later(&self, id: RequestId, reply: &Arc<dyn Outlet>, answer: impl std::future::Future<Output = Result<Value, RpcError>> + Send + 'static) {
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

    /// A call's observer: its notifications go to `reply`, and it may ask the client.
    fn notifier(&self, reply: &Arc<dyn Outlet>, plugin: &str, progress_token: Option<Value>) -> CallNotifier {
        CallNotifier::new(reply.clone(), self.shared.levels.clone(), plugin, progress_token).asking(self.shared.peer.clone())
    }

    fn start_read(&self, id: RequestId, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
        let host = self.shared.host.clone();
        let owner = resources::uri_param(&params).and_then(|uri| resources::owner(&host, uri));
        let plugin = match owner {
            Ok(plugin) => plugin,
            Err(e) => return self.reply(reply, &id, Err(e)),
        };
        let this = self.clone_handle();
        let reply_to = reply.clone();
        self.spawn_request(id, reply, move |cancel| async move {
            let uri = resources::uri_param(&params).expect("checked above");
            let ctx = this.context(&plugin, &params, &reply_to, cancel);
            resources::read(&host, &plugin, uri, ctx).await.ok()
        });
    }

    fn start_prompt(&self, id: RequestId, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
        let host = self.shared.host.clone();
        let admitted = match prompts::admit(&host, &params) {
            Ok(admitted) => admitted,
            Err(e) => return self.reply(reply, &id, Err(e)),
        };
        let this = self.clone_handle();
        let reply_to = reply.clone();
        self.spawn_request(id, reply, move |cancel| async move {
            let ctx = this.context(&admitted.entry.plugin, &params, &reply_to, cancel);
            prompts::get(&host, &admitted, ctx).await.ok()
        });
    }

    fn start_completion(&self, id: RequestId, params: Map<String, Value>, reply: &Arc<dyn Outlet>) {
        let host = self.shared.host.clone();
        let admitted = match prompts::admit_completion(&host, &params) {
            Ok(admitted) => admitted,
            Err(e) => return self.reply(reply, &id, Err(e)),
        };
        let this = self.clone_handle();
        let reply_to = reply.clone();
        self.spawn_request(id, reply, move |cancel| async move {
            let ctx = this.context(&admitted.plugin, &params, &reply_to, cancel);
            prompts::complete(&host, &admitted, ctx).await.ok()
        });
    }

    /// `resources/subscribe` (`on`) and `resources/unsubscribe`.
    fn subscribe(&self, params: &Map<String, Value>, on: bool) -> Result<Value, RpcError> {
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

    /// A handle on this session for work that outlives the current call.
    fn clone_handle(&self) -> SessionHandle {
        SessionHandle { shared: self.shared.clone() }
    }

    /// Runs a request that may take a while on the runtime, cancellable by
    /// `notifications/cancelled`. `work` answers `None` when it was cancelled: no response.
    fn spawn_request<F, Fut>(&self, id: RequestId, reply: &Arc<dyn Outlet>, work: F)
    where
        F: FnOnce(CancelHandle) -> Fut,
        Fut: std::future::Future<Output = Option<Result<Value, RpcError>>> + Send + 'static,
    {
        let shared = &self.shared;
        let cancel = shared.host.runtime.cancel_handle();
        {
            let mut in_flight = shared.in_flight.lock().unwrap();
            if in_flight.contains_key(&id) {
                drop(in_flight);
                return self.reply(reply, &id, Err(RpcError::invalid_request(format!("request id {id} is already in use by a request in flight"))));
            }
            in_flight.insert(id.clone(), cancel.clone());
        }
        let future = work(cancel);
        let task_shared = shared.clone();
        let reply = reply.clone();
        let request = shared.calls.track_future(async move {
            let answer = future.await;
            task_shared.in_flight.lock().unwrap().remove(&id);
            match answer {
                Some(Ok(result)) => reply.send(result_message(&id, result)),
                Some(Err(error)) => reply.send(error_message(Some(&id), &error)),
                None => tracing::info!(request = %id, "cancelled request stopped; no response sent"),
            }
        });
        run_inline_then_spawn(request, &shared.runtime);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.shared.peer.close();
        self.shared.host.sessions.leave(self.member);
    }
}

/// What a request's work needs of its session once it runs on its own.
struct SessionHandle {
    shared: Arc<Shared>,
}

impl SessionHandle {
    fn context(&self, plugin: &crate::registry::Plugin, params: &Map<String, Value>, reply: &Arc<dyn Outlet>, cancel: CancelHandle) -> CallContext {
        let progress_token = params.get("_meta").and_then(|m| m.get("progressToken")).filter(|t| t.is_string() || t.is_i64()).cloned();
        let notifier = CallNotifier::new(reply.clone(), self.shared.levels.clone(), &plugin.name, progress_token).asking(self.shared.peer.clone());
        CallContext { limits: plugin.limits.clone(), cancel, observer: Arc::new(notifier), denials: Arc::default() }
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

/// Polls `request` once on this thread and spawns it only if it has to wait.
///
/// Most calls finish within their first poll (a fresh instance runs until the guest returns or
/// the next epoch tick), so this saves the hand-off to a worker thread, which costs tens of
/// microseconds on a small VM. A guest still computing at its first tick yields; the rest of
/// the call then runs on the runtime's workers like any other task.
fn run_inline_then_spawn<F>(request: F, runtime: &tokio::runtime::Handle)
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let _context = runtime.enter();
    let mut request = Box::pin(request);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    if request.as_mut().poll(&mut cx).is_pending() {
        // The first poll saw a no-op waker; the spawned task polls again with a real one.
        runtime.spawn(request);
    }
}

/// A request id as it appears in `notifications/cancelled`.
struct IdKey(RequestId);

impl<'de> serde::Deserialize<'de> for IdKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<IdKey, D::Error> {
        match Value::deserialize(d)? {
            Value::String(s) => Ok(IdKey(RequestId::Str(s))),
            Value::Number(n) if n.is_i64() => Ok(IdKey(RequestId::Int(n.as_i64().unwrap()))),
            _ => Err(serde::de::Error::custom("request ids are strings or integers")),
        }
    }
}
