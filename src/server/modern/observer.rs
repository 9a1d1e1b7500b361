//! What a plain call of the stateless era may send while it runs, and what it may not.
//!
//! A modern request is answered on its own stream only, and never by a request from the server
//! to the client: logs go out only when the request named a level in its envelope, progress when
//! it gave a token, and a guest's `elicit` or `sample` for a capability the request did not
//! declare is refused and remembered, so the request ends with -32021 naming what it lacked.

use std::sync::{Arc, Mutex};

use crate::mcp::modern::ClientCapabilities;
use crate::runtime::{CallObserver, ClientAnswer, ElicitResponse, LogLevel, RequestError, SamplingRequest, SamplingResponse};
use crate::server::notify::CallNotifier;

/// A stateless call's observer.
pub(in crate::server) struct ModernObserver {
    /// Logs (when wanted) and progress to the request's stream; it cannot ask the client.
    notifier: CallNotifier,
    logs: bool,
    capabilities: ClientCapabilities,
    /// The first capability the guest needed and the request had not declared.
    missing: Mutex<Option<&'static str>>,
}

impl ModernObserver {
    pub(in crate::server) fn new(notifier: CallNotifier, logs: bool, capabilities: ClientCapabilities) -> Arc<ModernObserver> {
        Arc::new(ModernObserver { notifier, logs, capabilities, missing: Mutex::new(None) })
    }

    /// The capability the call needed and lacked, if any: the request's answer is then -32021.
    pub(in crate::server) fn missing(&self) -> Option<&'static str> {
        *self.missing.lock().unwrap()
    }

    fn refuse<T: Send + 'static>(&self, capability: &'static str, declared: bool) -> ClientAnswer<T> {
        let why = if declared {
            // Declared, so the answer would be an input-required result, which is not served yet.
            RequestError::Unavailable(format!("asking the client (`{capability}`) from a 2026-07-28 request is not supported yet"))
        } else {
            self.missing.lock().unwrap().get_or_insert(capability);
            RequestError::Unsupported(format!("the request did not declare the `{capability}` capability, so the client was not asked"))
        };
        Box::pin(std::future::ready(Err(why)))
    }
}

impl CallObserver for ModernObserver {
    fn log(&self, level: LogLevel, message: &str) {
        if self.logs {
            self.notifier.log(level, message);
        }
    }

    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        self.notifier.progress(progress, total, message);
    }

    fn elicit(&self, _task: Option<&str>, _message: String, _requested_schema: String) -> ClientAnswer<ElicitResponse> {
        self.refuse("elicitation", self.capabilities.elicitation)
    }

    fn sample(&self, _task: Option<&str>, _request: SamplingRequest) -> ClientAnswer<SamplingResponse> {
        self.refuse("sampling", self.capabilities.sampling)
    }
}
