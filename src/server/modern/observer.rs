//! What a plain call of the stateless era may send while it runs, and what it may not.
//!
//! A modern request is answered on its own stream only, and never by a request from the server
//! to the client: logs go out only when the request named a level in its envelope, progress when
//! it gave a token. A guest's questions are answered from the request's input round
//! ([`Round`]): what it cannot answer stops the guest and becomes an input-required result. A
//! 0.2.0 `elicit` or `sample` for a capability the request did not declare is refused and
//! remembered, so the request ends with -32021 naming what it lacked; 0.3.0's `ask` gets the
//! refusal itself (`unsupported`) and may ask again without it.

use std::sync::{Arc, Mutex};

use super::input::Round;
use super::tasks::AdoptedAsks;
use crate::mcp::modern::ClientCapabilities;
use crate::runtime::{
    CallObserver, ClientAnswer, ElicitResponse, InputRequest, InputResponse, Keyed, LogLevel, RequestError, SamplingRequest, SamplingResponse,
};
use crate::server::notify::CallNotifier;

/// A stateless call's observer.
pub(in crate::server) struct ModernObserver {
    /// Logs (when wanted) and progress to the request's stream; it cannot ask the client.
    notifier: CallNotifier,
    logs: bool,
    capabilities: ClientCapabilities,
    /// The first capability the guest needed and the request had not declared.
    missing: Mutex<Option<&'static str>>,
    /// What the request brought for its input, and what the guest asked.
    round: Round,
    /// Set for a call that may become a task: once it has, its questions go to the task.
    adopted: Option<Arc<AdoptedAsks>>,
}

impl ModernObserver {
    pub(in crate::server) fn new(notifier: CallNotifier, logs: bool, capabilities: ClientCapabilities, round: Round) -> Arc<ModernObserver> {
        Arc::new(ModernObserver { notifier, logs, capabilities, missing: Mutex::new(None), round, adopted: None })
    }

    /// The same observer for a call that may become a task (`asks` tells when it has).
    pub(in crate::server) fn adoptable(
        notifier: CallNotifier,
        logs: bool,
        capabilities: ClientCapabilities,
        round: Round,
        asks: Arc<AdoptedAsks>,
    ) -> Arc<ModernObserver> {
        Arc::new(ModernObserver { notifier, logs, capabilities, missing: Mutex::new(None), round, adopted: Some(asks) })
    }

    /// The task's observer, once the call has become a task.
    fn task(&self) -> Option<Arc<dyn CallObserver>> {
        self.adopted.as_ref().and_then(|a| a.task())
    }

    /// The call's input round: its outcome when the guest stopped for input.
    pub(in crate::server) fn round(&self) -> &Round {
        &self.round
    }

    /// One question of a 0.2.0 `elicit` or `sample`, under a key the host chooses.
    fn single<T: Send + 'static>(
        &self,
        capability: &'static str,
        declared: bool,
        request: InputRequest,
        pick: fn(InputResponse) -> Option<T>,
    ) -> ClientAnswer<T> {
        if !declared {
            return self.refuse(capability);
        }
        let key = self.round.host_key(capability);
        let answer = match self.round.answer(vec![(key, request)]) {
            Ok(Some(answers)) => {
                answers.into_iter().next().and_then(|(_, a)| pick(a)).ok_or_else(|| RequestError::Refused("the answer is of another kind".into()))
            }
            // The guest is stopped before it sees this.
            Ok(None) => Err(RequestError::Unavailable("waiting for the client's input".into())),
            Err(e) => Err(e),
        };
        Box::pin(std::future::ready(answer))
    }

    /// The capability the call needed and lacked, if any: the request's answer is then -32021.
    pub(in crate::server) fn missing(&self) -> Option<&'static str> {
        *self.missing.lock().unwrap()
    }

    fn refuse<T: Send + 'static>(&self, capability: &'static str) -> ClientAnswer<T> {
        self.missing.lock().unwrap().get_or_insert(capability);
        let why = RequestError::Unsupported(format!("the request did not declare the `{capability}` capability, so the client was not asked"));
        Box::pin(std::future::ready(Err(why)))
    }
}

impl CallObserver for ModernObserver {
    fn checkpoint(&self, state: &[u8]) -> Option<futures_util::future::BoxFuture<'static, Result<(), String>>> {
        // A plain call keeps its checkpoints for the call only; one that may become a task
        // makes them durable with the task once it is one (the last one before, at once).
        self.adopted.as_ref().and_then(|a| a.checkpoint(state))
    }

    fn log(&self, level: LogLevel, message: &str) {
        if self.logs {
            self.notifier.log(level, message);
        }
    }

    fn progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        // Once adopted, the request's stream has its CreateTaskResult: progress is the task's.
        match self.task() {
            Some(task) => task.progress(progress, total, message),
            None => self.notifier.progress(progress, total, message),
        }
    }

    fn elicit(&self, task: Option<&str>, message: String, requested_schema: String) -> ClientAnswer<ElicitResponse> {
        if let Some(adopted) = self.task() {
            return adopted.elicit(task, message, requested_schema);
        }
        let request = InputRequest::Elicit { message, requested_schema };
        self.single("elicitation", self.capabilities.elicitation, request, |a| if let InputResponse::Elicit(e) = a { Some(e) } else { None })
    }

    fn sample(&self, task: Option<&str>, request: SamplingRequest) -> ClientAnswer<SamplingResponse> {
        if let Some(adopted) = self.task() {
            return adopted.sample(task, request);
        }
        self.single("sampling", self.capabilities.sampling, InputRequest::Sample(request), |a| if let InputResponse::Sample(s) = a { Some(s) } else { None })
    }

    fn ask(&self, task: Option<&str>, requests: Keyed<InputRequest>) -> ClientAnswer<Keyed<InputResponse>> {
        if let Some(adopted) = self.task() {
            return adopted.ask(task, requests);
        }
        let answer = match self.round.answer(requests) {
            Ok(Some(answers)) => Ok(answers),
            Ok(None) => Err(RequestError::Unavailable("waiting for the client's input".into())),
            Err(e) => Err(e),
        };
        Box::pin(std::future::ready(answer))
    }

    fn stops_for_input(&self) -> bool {
        // A task waits for its answers instead (what the round asked before still stops it).
        self.round.stops()
    }
}
