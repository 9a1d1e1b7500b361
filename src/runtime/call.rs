//! What a call carries down into the runtime, and the per-call store state.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use wasmtime::component::ResourceTable;
use wasmtime::ResourceLimiter;
use wasmtime_wasi::sockets::WasiSocketsCtxView;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::bindings::{self, ElicitResponse, LogLevel, RequestError, SamplingRequest, SamplingResponse};
use super::connections::Connections;
use super::denials::Denials;
use super::failure::Stopped;
use super::input::{self, InputRequest, InputResponse, Keyed, Root};
use super::network::{HttpGuard, LookupView, NetGuard};
use super::redact::SecretVars;
use super::time_limit::TimeLimit;
use crate::cancel::CancelHandle;
use crate::config::Limits;
use crate::telemetry::trace;

/// What a guest's request to the client (`elicit`, `sample`) comes back with, once the client
/// answered. The guest waits in the host meanwhile.
pub type ClientAnswer<T> = BoxFuture<'static, Result<T, RequestError>>;

/// Receives what a guest reports while it runs and carries its requests to the client. The
/// server turns these into MCP notifications and requests.
///
/// `task` is the id of the task the call runs for, when it runs for one: requests made for a
/// task carry it to the client.
pub trait CallObserver: Send + Sync {
    /// A log line from the guest (`host.log`).
    fn log(&self, level: LogLevel, message: &str);
    /// A progress report from the guest (`host.progress`).
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>);

    /// Asks the user to fill in a form. By default there is nobody to ask.
    fn elicit(&self, task: Option<&str>, message: String, requested_schema: String) -> ClientAnswer<ElicitResponse> {
        let _ = (task, message, requested_schema);
        nobody_to_ask()
    }

    /// Asks the client's model for a message. By default there is nobody to ask.
    fn sample(&self, task: Option<&str>, request: SamplingRequest) -> ClientAnswer<SamplingResponse> {
        let _ = (task, request);
        nobody_to_ask()
    }

    /// Asks the client for its roots (`roots/list`). By default there is nobody to ask.
    fn roots(&self, task: Option<&str>) -> ClientAnswer<Vec<Root>> {
        let _ = task;
        nobody_to_ask()
    }

    /// Asks for several inputs under the plugin's keys (0.3.0 `input.ask`; the keys are already
    /// checked). By default each goes to [`CallObserver::elicit`], [`CallObserver::sample`] or
    /// [`CallObserver::roots`] in turn, the first failure failing the whole `ask`: that is how a
    /// client that takes one request at a time (2025-11-25) answers it.
    fn ask(&self, task: Option<&str>, requests: Keyed<InputRequest>) -> ClientAnswer<Keyed<InputResponse>> {
        // The answers are futures that do nothing until polled: created here, awaited in order.
        let asked: Vec<(String, ClientAnswer<InputResponse>)> = requests
            .into_iter()
            .map(|(key, request)| {
                let answer: ClientAnswer<InputResponse> = match request {
                    InputRequest::Elicit { message, requested_schema } => {
                        let answer = self.elicit(task, message, requested_schema);
                        Box::pin(async move { answer.await.map(InputResponse::Elicit) })
                    }
                    InputRequest::Sample(request) => {
                        let answer = self.sample(task, request);
                        Box::pin(async move { answer.await.map(InputResponse::Sample) })
                    }
                    InputRequest::ListRoots => {
                        let answer = self.roots(task);
                        Box::pin(async move { answer.await.map(InputResponse::Roots) })
                    }
                };
                (key, answer)
            })
            .collect();
        Box::pin(async move {
            let mut answers = Vec::with_capacity(asked.len());
            for (key, answer) in asked {
                answers.push((key, answer.await?));
            }
            Ok(answers)
        })
    }

    /// Whether the call must stop now because it asked for input its request cannot answer yet
    /// (a 2026-07-28 plain call): checked after every request to the client, and the guest is
    /// stopped when it is true. The observer keeps what was asked.
    fn stops_for_input(&self) -> bool {
        false
    }

    /// Stores a checkpoint (0.3.0 `checkpoints.checkpoint`, already within the plugin's cap)
    /// durably with the call's task; the guest goes on once the future is done. `None`: the call
    /// is no task, and the runtime keeps the checkpoint for the call only.
    fn checkpoint(&self, state: &[u8]) -> Option<BoxFuture<'static, Result<(), String>>> {
        let _ = state;
        None
    }

    /// The checkpoint the call's task resumes from (0.3.0 `checkpoints.resume`): its last one
    /// when it runs again after an interruption; `None` otherwise.
    fn resume(&self) -> Option<Vec<u8>> {
        None
    }
}

fn nobody_to_ask<T: Send + 'static>() -> ClientAnswer<T> {
    Box::pin(std::future::ready(Err(RequestError::Unavailable("no MCP client is connected to this call".into()))))
}

/// An observer that drops everything (loading, benchmarks, `corral call`).
pub struct Silent;

impl CallObserver for Silent {
    fn log(&self, _: LogLevel, _: &str) {}
    fn progress(&self, _: f64, _: Option<f64>, _: Option<String>) {}
}

/// A plugin said one of its resources changed (`resource-updated`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceUpdate {
    /// The plugin that said so.
    pub plugin: Arc<str>,
    /// The resource's URI.
    pub uri: String,
}

/// Everything one call needs besides the plugin and its arguments.
#[derive(Clone)]
pub struct CallContext {
    /// Time, fuel, memory and concurrency limits of the call.
    pub limits: Limits,
    /// Cancels the call and wakes its guest.
    pub cancel: CancelHandle,
    /// Where the guest's logs, progress and requests to the client go.
    pub observer: Arc<dyn CallObserver>,
    /// Accesses the sandbox refused during the call, for the result to name.
    pub denials: Arc<Denials>,
    /// Each outbound connection the guest opened or tried, allowed or refused, for the audit trail.
    pub connections: Arc<Connections>,
    /// What the call consumed, filled in as it ends, for the audit trail, metrics and traces.
    pub usage: Arc<Usage>,
    /// `limits.timeout` unless switched while the call runs (an adopted call gets its task's).
    pub time_limit: TimeLimit,
    /// The secrets resolved for this call (`[secrets.NAME]` of its plugin, for its caller): in
    /// its environment, and redacted from its stdout and stderr.
    pub secret_env: SecretVars,
}

impl CallContext {
    /// A context for a call nobody cancels early (loading, `corral call`, benchmarks).
    pub fn new(limits: Limits, observer: Arc<dyn CallObserver>) -> CallContext {
        CallContext::for_request(limits, CancelHandle::unwoken(), observer)
    }

    /// A context for a call that `cancel` stops (a request, a task), under `limits.timeout`.
    pub fn for_request(limits: Limits, cancel: CancelHandle, observer: Arc<dyn CallObserver>) -> CallContext {
        CallContext {
            limits,
            cancel,
            observer,
            denials: Arc::default(),
            connections: Arc::default(),
            usage: Arc::default(),
            time_limit: TimeLimit::default(),
            secret_env: Arc::new([]),
        }
    }
}

/// What one call consumed: the fuel its guest burned and the largest its linear memory grew.
/// Read once the call has ended (whatever its outcome); zero before.
#[derive(Debug, Default)]
pub struct Usage {
    fuel: AtomicU64,
    peak_memory: AtomicU64,
}

impl Usage {
    /// Fuel units the guest consumed (about one per WebAssembly instruction).
    pub fn fuel_consumed(&self) -> u64 {
        self.fuel.load(Ordering::Relaxed)
    }

    /// The largest linear memory the guest held, in bytes.
    pub fn peak_memory(&self) -> u64 {
        self.peak_memory.load(Ordering::Relaxed)
    }

    pub(crate) fn record(&self, fuel: u64, peak_memory: u64) {
        self.fuel.store(fuel, Ordering::Relaxed);
        self.peak_memory.store(peak_memory, Ordering::Relaxed);
    }
}

/// The data of one call's `Store`.
pub(crate) struct CallState {
    pub wasi: WasiCtx,
    pub http: WasiHttpCtx,
    pub http_guard: HttpGuard,
    pub net: Arc<NetGuard>,
    pub denials: Arc<Denials>,
    pub table: ResourceTable,
    pub plugin: Arc<str>,
    pub observer: Arc<dyn CallObserver>,
    /// Where `resource-updated` goes: the runtime's channel of updates.
    pub updates: tokio::sync::broadcast::Sender<ResourceUpdate>,
    pub cancel: CancelHandle,
    /// When the call started, its `timeout`, and the limit that may replace it.
    pub start: Instant,
    pub timeout: Duration,
    pub time_limit: TimeLimit,
    pub memory_cap: u64,
    pub memory_cap_hit: bool,
    /// The largest memory size granted so far (every growth, the first allocation included,
    /// passes through the limiter).
    pub peak_memory: u64,
    /// The call's last `checkpoint` (0.3.0) outside a task: kept for the call only.
    pub checkpoint: Option<Vec<u8>>,
    /// The largest checkpoint the plugin may store (`[limits] checkpoint`).
    pub checkpoint_cap: u64,
    /// The call's resolved secrets, replaced by their names in what the host logs of the call.
    pub secrets: SecretVars,
}

/// The error a denied memory growth traps with; `memory_cap_hit` records it for classification.
#[derive(Debug, thiserror::Error)]
#[error("memory limit of {0} bytes reached")]
struct MemoryCapReached(u64);

/// A call's name lookups, through its network guard (the linker's view of `ip-name-lookup`).
pub(crate) fn lookup_view(state: &mut CallState) -> LookupView<'_> {
    LookupView::new(WasiSocketsCtxView { ctx: state.wasi.sockets(), table: &mut state.table }, &state.net)
}

impl ResourceLimiter for CallState {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired as u64 > self.memory_cap {
            self.memory_cap_hit = true;
            return Err(MemoryCapReached(self.memory_cap).into());
        }
        self.peak_memory = self.peak_memory.max(desired as u64);
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { ctx: &mut self.http, table: &mut self.table, hooks: &mut self.http_guard }
    }
}

impl bindings::v1::corral::plugin::types::Host for CallState {}

impl bindings::v1::corral::plugin::host::Host for CallState {
    fn log(&mut self, level: LogLevel, message: String) {
        self.log_line(level, message);
    }

    fn progress(&mut self, progress: f64, total: Option<f64>, message: Option<String>) {
        self.observer.progress(progress, total, message);
    }

    fn cancelled(&mut self) -> bool {
        self.is_stopping()
    }
}

impl bindings::v2::corral::plugin::messages::Host for CallState {}

impl bindings::v2::corral::plugin::host::Host for CallState {
    fn log(&mut self, level: bindings::v2::corral::plugin::host::LogLevel, message: String) {
        use bindings::v2::corral::plugin::host::LogLevel as V2;
        let level = match level {
            V2::Debug => LogLevel::Debug,
            V2::Info => LogLevel::Info,
            V2::Notice => LogLevel::Notice,
            V2::Warning => LogLevel::Warning,
            V2::Error => LogLevel::Error,
        };
        self.log_line(level, message);
    }

    fn progress(&mut self, progress: f64, total: Option<f64>, message: Option<String>) {
        self.observer.progress(progress, total, message);
    }

    fn cancelled(&mut self) -> bool {
        self.is_stopping()
    }

    fn elicit(
        &mut self,
        message: String,
        requested_schema: String,
    ) -> impl std::future::Future<Output = wasmtime::Result<Result<ElicitResponse, RequestError>>> + Send {
        tracing::debug!(plugin = %self.plugin, "asks the client to elicit: {}", self.shown(&message));
        trace::host_call("elicit", "the guest asks the client to elicit");
        self.until_input(self.observer.elicit(None, message, requested_schema))
    }

    fn sample(&mut self, request: SamplingRequest) -> impl std::future::Future<Output = wasmtime::Result<Result<SamplingResponse, RequestError>>> + Send {
        tracing::debug!(plugin = %self.plugin, "asks the client to sample");
        trace::host_call("sample", "the guest asks the client to sample");
        self.until_input(self.observer.sample(None, request))
    }

    fn resource_updated(&mut self, uri: String) {
        // Nobody listening (no server) is not an error.
        let _ = self.updates.send(ResourceUpdate { plugin: self.plugin.clone(), uri });
    }
}

mod v3 {
    pub use crate::runtime::bindings::v3::corral::plugin::{checkpoints, host, input};
}

impl v3::host::Host for CallState {
    fn log(&mut self, level: v3::host::LogLevel, message: String) {
        self.log_line(level.into(), message);
    }

    fn progress(&mut self, progress: f64, total: Option<f64>, message: Option<String>) {
        self.observer.progress(progress, total, message);
    }

    fn cancelled(&mut self) -> bool {
        self.is_stopping()
    }

    fn elicit(
        &mut self,
        message: String,
        requested_schema: String,
    ) -> impl std::future::Future<Output = wasmtime::Result<Result<v3::host::ElicitResponse, v3::host::RequestError>>> + Send {
        tracing::debug!(plugin = %self.plugin, "asks the client to elicit: {}", self.shown(&message));
        trace::host_call("elicit", "the guest asks the client to elicit");
        let answer = self.until_input(self.observer.elicit(None, message, requested_schema));
        async move { answer.await.map(|r| r.map(Into::into).map_err(Into::into)) }
    }

    fn sample(
        &mut self,
        request: v3::host::SamplingRequest,
    ) -> impl std::future::Future<Output = wasmtime::Result<Result<v3::host::SamplingResponse, v3::host::RequestError>>> + Send {
        tracing::debug!(plugin = %self.plugin, "asks the client to sample");
        trace::host_call("sample", "the guest asks the client to sample");
        let answer = self.until_input(self.observer.sample(None, request.into()));
        async move { answer.await.map(|r| r.map(Into::into).map_err(Into::into)) }
    }

    fn resource_updated(&mut self, uri: String) {
        let _ = self.updates.send(ResourceUpdate { plugin: self.plugin.clone(), uri });
    }
}

impl v3::input::Host for CallState {
    fn ask(
        &mut self,
        requests: Vec<(String, v3::input::InputRequest)>,
    ) -> impl std::future::Future<Output = wasmtime::Result<Result<Vec<(String, v3::input::InputResponse)>, v3::host::RequestError>>> + Send {
        let requests: Keyed<InputRequest> = requests.into_iter().map(|(k, r)| (k, super::v3_values::input_request(r))).collect();
        tracing::debug!(plugin = %self.plugin, "asks the client for {} input(s)", requests.len());
        trace::host_call("ask", "the guest asks the client for input");
        let answer = match input::check_keys(&requests) {
            Ok(()) => Ok(self.until_input(self.observer.ask(None, requests))),
            Err(refused) => Err(refused),
        };
        async move {
            let answered = match answer {
                Ok(answer) => answer.await?,
                Err(refused) => Err(refused),
            };
            Ok(answered.map(|answers| answers.into_iter().map(|(k, r)| (k, super::v3_values::input_response(r))).collect()).map_err(Into::into))
        }
    }

    fn roots(&mut self) -> impl std::future::Future<Output = wasmtime::Result<Result<Vec<Root>, v3::host::RequestError>>> + Send {
        tracing::debug!(plugin = %self.plugin, "asks the client for its roots");
        trace::host_call("ask", "the guest asks the client for its roots");
        let answer = self.until_input(self.observer.ask(None, vec![("roots".to_owned(), InputRequest::ListRoots)]));
        async move {
            Ok(answer.await?.map_err(Into::into).and_then(|answers| match answers.into_iter().next() {
                Some((_, InputResponse::Roots(roots))) => Ok(roots),
                _ => Err(v3::host::RequestError::Refused("the answer to `roots/list` is not a list of roots".into())),
            }))
        }
    }
}

impl v3::checkpoints::Host for CallState {
    fn checkpoint(&mut self, state: Vec<u8>) -> impl std::future::Future<Output = Result<(), String>> + Send {
        trace::host_call("checkpoint", "the guest checkpoints");
        let stored = if state.len() as u64 > self.checkpoint_cap {
            // Refused whole: the previous checkpoint stays.
            Err(format!("a checkpoint holds at most {} bytes; this one has {}", self.checkpoint_cap, state.len()))
        } else {
            let durable = self.observer.checkpoint(&state);
            self.checkpoint = Some(state);
            Ok(durable)
        };
        async move {
            match stored? {
                Some(durable) => durable.await,
                None => Ok(()),
            }
        }
    }

    fn resume(&mut self) -> Option<Vec<u8>> {
        // Outside a task (or in a task's first run) nothing ran before: there is nothing to resume.
        self.observer.resume()
    }
}

impl CallState {
    /// Waits for an answer to the client request `answer`, then stops the guest (a trap) when
    /// the observer says the call must stop for input it cannot have yet.
    fn until_input<T: Send + 'static>(
        &self,
        answer: ClientAnswer<T>,
    ) -> impl std::future::Future<Output = wasmtime::Result<Result<T, RequestError>>> + Send + 'static {
        let observer = self.observer.clone();
        async move {
            let answer = answer.await;
            if observer.stops_for_input() {
                return Err(Stopped::ForInput.into());
            }
            Ok(answer)
        }
    }

    fn is_stopping(&self) -> bool {
        self.cancel.is_cancelled() || self.past_deadline()
    }

    /// Whether the call has run past the limit in force.
    pub(crate) fn past_deadline(&self) -> bool {
        self.start.elapsed() >= self.time_limit.get(self.timeout)
    }

    /// `text` as the host may log it: the call's secrets replaced by their names.
    fn shown<'a>(&self, text: &'a str) -> std::borrow::Cow<'a, str> {
        super::redact::redacted(&self.secrets, text).map_or(std::borrow::Cow::Borrowed(text), std::borrow::Cow::Owned)
    }

    fn log_line(&mut self, level: LogLevel, message: String) {
        let message = self.shown(&message).into_owned();
        match level {
            LogLevel::Debug => tracing::debug!(plugin = %self.plugin, "{message}"),
            LogLevel::Info | LogLevel::Notice => tracing::info!(plugin = %self.plugin, "{message}"),
            LogLevel::Warning => tracing::warn!(plugin = %self.plugin, "{message}"),
            LogLevel::Error => tracing::error!(plugin = %self.plugin, "{message}"),
        }
        self.observer.log(level, &message);
    }
}
