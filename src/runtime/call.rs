//! What a call carries down into the runtime, and the per-call store state.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use wasmtime::component::ResourceTable;
use wasmtime::ResourceLimiter;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::bindings::{self, LogLevel};
use super::network::{HttpGuard, NetGuard};
use crate::config::Limits;

/// Receives what a guest reports while it runs. The server turns these into MCP notifications.
pub trait CallObserver: Send + Sync {
    fn log(&self, level: LogLevel, message: &str);
    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>);
}

/// An observer that drops everything (loading, benchmarks).
pub struct Silent;

impl CallObserver for Silent {
    fn log(&self, _: LogLevel, _: &str) {}
    fn progress(&self, _: f64, _: Option<f64>, _: Option<String>) {}
}

/// Everything one call needs besides the plugin and its arguments.
#[derive(Clone)]
pub struct CallContext {
    pub limits: Limits,
    pub cancel: CancellationToken,
    pub observer: Arc<dyn CallObserver>,
    /// Accesses the sandbox refused during the call, for the result to name.
    pub denials: Arc<Denials>,
}

impl CallContext {
    pub fn new(limits: Limits, observer: Arc<dyn CallObserver>) -> CallContext {
        CallContext { limits, cancel: CancellationToken::new(), observer, denials: Arc::default() }
    }
}

/// What the sandbox refused a guest, each in a sentence naming the grant that would allow it.
#[derive(Default)]
pub struct Denials(Mutex<Vec<String>>);

/// A guest retrying in a loop must not grow the list without bound.
const MAX_DENIALS: usize = 16;

impl Denials {
    pub fn record(&self, what: String) {
        let mut list = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if list.len() < MAX_DENIALS && !list.contains(&what) {
            tracing::debug!("{what}");
            list.push(what);
        }
    }

    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
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
    pub cancel: CancellationToken,
    pub deadline: Instant,
    pub memory_cap: u64,
    pub memory_cap_hit: bool,
}

/// The error a denied memory growth traps with; `memory_cap_hit` records it for classification.
#[derive(Debug, thiserror::Error)]
#[error("memory limit of {0} bytes reached")]
struct MemoryCapReached(u64);

impl ResourceLimiter for CallState {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired as u64 > self.memory_cap {
            self.memory_cap_hit = true;
            return Err(MemoryCapReached(self.memory_cap).into());
        }
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

impl bindings::corral::plugin::types::Host for CallState {}

impl bindings::corral::plugin::host::Host for CallState {
    fn log(&mut self, level: LogLevel, message: String) {
        match level {
            LogLevel::Debug => tracing::debug!(plugin = %self.plugin, "{message}"),
            LogLevel::Info | LogLevel::Notice => tracing::info!(plugin = %self.plugin, "{message}"),
            LogLevel::Warning => tracing::warn!(plugin = %self.plugin, "{message}"),
            LogLevel::Error => tracing::error!(plugin = %self.plugin, "{message}"),
        }
        self.observer.log(level, &message);
    }

    fn progress(&mut self, progress: f64, total: Option<f64>, message: Option<String>) {
        self.observer.progress(progress, total, message);
    }

    fn cancelled(&mut self) -> bool {
        self.cancel.is_cancelled() || Instant::now() >= self.deadline
    }
}
