//! What a running call reports, turned into MCP notifications for the session's client.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::peer::Peer;
use super::Outlet;
use crate::mcp::jsonrpc::notification;
use crate::mcp::types::LogLevel;
use crate::runtime::{self, CallObserver, ClientAnswer, ElicitResponse, Root, SamplingRequest, SamplingResponse};

/// Progress reports closer together than this are dropped, unless they are the last one.
const MIN_PROGRESS_INTERVAL: Duration = Duration::from_millis(20);

/// The lowest level the client wants to see, shared by a session and its calls.
#[derive(Clone)]
pub struct LevelFilter(Arc<AtomicU8>);

impl LevelFilter {
    pub fn new(level: LogLevel) -> LevelFilter {
        LevelFilter(Arc::new(AtomicU8::new(level as u8)))
    }
    pub fn set(&self, level: LogLevel) {
        self.0.store(level as u8, Ordering::Relaxed);
    }
    pub fn allows(&self, level: LogLevel) -> bool {
        level as u8 >= self.0.load(Ordering::Relaxed)
    }
}

/// Sends one call's log lines and progress to the client that made the call, and carries the
/// call's requests (elicitation, sampling) to it.
pub struct CallNotifier {
    outlet: Arc<dyn Outlet>,
    levels: LevelFilter,
    plugin: String,
    progress: Option<Mutex<ProgressGate>>,
    peer: Option<Arc<Peer>>,
}

impl CallNotifier {
    pub fn new(outlet: Arc<dyn Outlet>, levels: LevelFilter, plugin: &str, progress_token: Option<Value>) -> CallNotifier {
        CallNotifier { outlet, levels, plugin: plugin.to_owned(), progress: progress_token.map(|t| Mutex::new(ProgressGate::new(t))), peer: None }
    }

    /// Lets the call ask the client through `peer`.
    pub fn asking(mut self, peer: Arc<Peer>) -> CallNotifier {
        self.peer = Some(peer);
        self
    }

    fn ask<T: Send + 'static, F>(&self, ask: impl FnOnce(Arc<Peer>, Arc<dyn Outlet>) -> F) -> ClientAnswer<T>
    where
        F: std::future::Future<Output = Result<T, runtime::RequestError>> + Send + 'static,
    {
        match &self.peer {
            Some(peer) => Box::pin(ask(peer.clone(), self.outlet.clone())),
            None => Box::pin(std::future::ready(Err(runtime::RequestError::Unavailable("no MCP client is connected to this call".into())))),
        }
    }
}

impl CallObserver for CallNotifier {
    fn log(&self, level: runtime::LogLevel, message: &str) {
        let level = mcp_level(level);
        if self.levels.allows(level) {
            let params = json!({ "level": level, "logger": self.plugin, "data": message });
            self.outlet.send(notification("notifications/message", &params));
        }
    }

    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let Some(gate) = &self.progress else { return };
        let mut gate = gate.lock().unwrap();
        if let Some(params) = gate.admit(progress, total, message, Instant::now()) {
            self.outlet.send(notification("notifications/progress", &params));
        }
    }

    fn elicit(&self, task: Option<&str>, message: String, requested_schema: String) -> ClientAnswer<ElicitResponse> {
        let task = task.map(str::to_owned);
        self.ask(move |peer, via| async move { super::ask::elicit(&peer, &via, task.as_deref(), message, requested_schema).await })
    }

    fn sample(&self, task: Option<&str>, request: SamplingRequest) -> ClientAnswer<SamplingResponse> {
        let task = task.map(str::to_owned);
        self.ask(move |peer, via| async move { super::ask::sample(&peer, &via, task.as_deref(), request).await })
    }

    fn roots(&self, task: Option<&str>) -> ClientAnswer<Vec<Root>> {
        let task = task.map(str::to_owned);
        self.ask(move |peer, via| async move { super::ask::roots(&peer, &via, task.as_deref()).await })
    }
}

/// The MCP level of a guest's log line. The runtime has the other mapping (the contract's
/// WIT levels to [`runtime::LogLevel`]); the two cannot meet in one place because the runtime
/// knows nothing of MCP.
fn mcp_level(level: runtime::LogLevel) -> LogLevel {
    match level {
        runtime::LogLevel::Debug => LogLevel::Debug,
        runtime::LogLevel::Info => LogLevel::Info,
        runtime::LogLevel::Notice => LogLevel::Notice,
        runtime::LogLevel::Warning => LogLevel::Warning,
        runtime::LogLevel::Error => LogLevel::Error,
    }
}

/// MCP requires progress to increase; clients should not be flooded either.
pub struct ProgressGate {
    token: Value,
    last: Option<(f64, Instant)>,
}

impl ProgressGate {
    pub fn new(token: Value) -> ProgressGate {
        ProgressGate { token, last: None }
    }

    /// The notification params to send for this report, or `None` to drop it.
    pub fn admit(&mut self, progress: f64, total: Option<f64>, message: Option<String>, now: Instant) -> Option<Value> {
        if !progress.is_finite() {
            return None;
        }
        let is_final = total.is_some_and(|t| progress >= t);
        if let Some((last, at)) = self.last {
            if progress <= last || (!is_final && now.duration_since(at) < MIN_PROGRESS_INTERVAL) {
                return None;
            }
        }
        self.last = Some((progress, now));
        let mut params = Map::new();
        params.insert("progressToken".into(), self.token.clone());
        params.insert("progress".into(), json!(progress));
        if let Some(t) = total.filter(|t| t.is_finite()) {
            params.insert("total".into(), json!(t));
        }
        if let Some(m) = message {
            params.insert("message".into(), json!(m));
        }
        Some(Value::Object(params))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_must_increase_and_is_thinned_except_the_last() {
        let mut gate = ProgressGate::new(json!("t"));
        let t0 = Instant::now();
        assert!(gate.admit(1.0, Some(10.0), None, t0).is_some());
        assert!(gate.admit(1.0, Some(10.0), None, t0 + Duration::from_secs(1)).is_none(), "not increasing");
        assert!(gate.admit(0.5, Some(10.0), None, t0 + Duration::from_secs(1)).is_none(), "decreasing");
        assert!(gate.admit(2.0, Some(10.0), None, t0 + Duration::from_millis(5)).is_none(), "too soon");
        let last = gate.admit(10.0, Some(10.0), Some("done".into()), t0 + Duration::from_millis(6)).expect("the final report passes");
        assert_eq!(last, json!({"progressToken":"t","progress":10.0,"total":10.0,"message":"done"}));
    }

    #[test]
    fn level_filter_lets_through_at_and_above() {
        let f = LevelFilter::new(LogLevel::Warning);
        assert!(f.allows(LogLevel::Error) && f.allows(LogLevel::Warning) && !f.allows(LogLevel::Info));
    }
}
