//! A request's scope: what one request needs on its way through the pipeline, whatever its era
//! and transport (who it acts for, where its answer goes) and the [`Requests`] that cancel,
//! drain and answer it.
//!
//! A 2025-11-25 session holds one [`Requests`] and makes a [`Scope`] for each request it reads
//! (its answer goes to that request's reply: the session's pipe over stdio, the POST's response
//! over HTTP). A 2026-07-28 request over HTTP *is* a scope, with a `Requests` of its own that
//! lives as long as its response; nothing else of a session is made for it.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio_util::task::TaskTracker;
use tracing::{Instrument, Span};

use super::authorize::{authorize, Action};
use super::inline::run_inline_then_spawn;
use super::load_wait::Needs;
use super::{Host, Outlet};
use crate::cancel::CancelHandle;
use crate::mcp::jsonrpc::{error_message, result_message, Outgoing};
use crate::mcp::types::CallToolResult;
use crate::mcp::{RequestId, RpcError};
use crate::principal::Owner;
use crate::telemetry::trace;

/// The requests one client has in flight: how to cancel each, and where its answer goes (so
/// that a shutdown can answer it when it does not finish in time).
pub struct Requests {
    host: Arc<Host>,
    in_flight: Mutex<HashMap<RequestId, InFlight>>,
    calls: TaskTracker,
    runtime: tokio::runtime::Handle,
}

struct InFlight {
    cancel: CancelHandle,
    reply: Arc<dyn Outlet>,
}

impl Requests {
    /// Requests served by `host`. Must be made inside a tokio runtime, which then runs them.
    pub fn new(host: Arc<Host>) -> Arc<Requests> {
        Arc::new(Requests { host, in_flight: Mutex::default(), calls: TaskTracker::new(), runtime: tokio::runtime::Handle::current() })
    }

    /// How many requests are in flight now (for the operator's view of sessions).
    pub fn in_flight(&self) -> usize {
        self.in_flight.lock().unwrap().len()
    }

    /// Cancels every request in flight (the client went away): no answers follow.
    pub fn cancel_all(&self) {
        for call in self.in_flight.lock().unwrap().values() {
            call.cancel.cancel();
        }
    }

    /// Cancels request `id` if it is in flight (`notifications/cancelled`); true when it was.
    pub(super) fn cancel(&self, id: &RequestId) -> bool {
        let in_flight = self.in_flight.lock().unwrap();
        let Some(call) = in_flight.get(id) else { return false };
        call.cancel.cancel();
        true
    }

    /// Waits until every request started here has finished.
    pub async fn drained(&self) {
        self.calls.close();
        self.calls.wait().await;
    }

    /// Shutdown: the requests in flight get `grace` to finish and answer; each one still
    /// running then is answered with a shutdown error and cancelled, and gets `wind_down` to
    /// stop. The transport has stopped reading before this, so nothing new starts.
    pub async fn finish(&self, grace: Duration, wind_down: Duration) {
        self.calls.close();
        if tokio::time::timeout(grace, self.calls.wait()).await.is_ok() {
            return;
        }
        let unfinished: Vec<(RequestId, InFlight)> = self.in_flight.lock().unwrap().drain().collect();
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
        if tokio::time::timeout(wind_down, self.calls.wait()).await.is_err() {
            tracing::warn!("cancelled calls still running after {wind_down:?}; exiting anyway");
        }
    }

    /// Registers request `id` as in flight, answering on `reply`: its cancel handle, or `None`
    /// (and the error answered) when the id is already in use by a request in flight.
    fn enter(&self, id: &RequestId, reply: &Arc<dyn Outlet>) -> Option<CancelHandle> {
        let cancel = self.host.runtime.cancel_handle();
        let mut in_flight = self.in_flight.lock().unwrap();
        if in_flight.contains_key(id) {
            drop(in_flight);
            let refused = RpcError::invalid_request(format!("request id {id} is already in use by a request in flight"));
            reply.send(error_message(Some(id), &refused));
            return None;
        }
        in_flight.insert(id.clone(), InFlight { cancel: cancel.clone(), reply: reply.clone() });
        Some(cancel)
    }

    /// Takes request `id` out of flight; false when a shutdown answered it first. Whoever takes
    /// the entry answers, so a request is never answered twice.
    fn leave(&self, id: &RequestId) -> bool {
        self.in_flight.lock().unwrap().remove(id).is_some()
    }
}

/// What a request can be answered with: anything that serialises as its `result`, written into
/// the answer as it is (a call's result is never turned into a JSON tree first), and that says
/// whether it reports an error, for the request's span.
pub trait Answer: serde::Serialize + Send + 'static {
    /// Whether the result reports an error (`isError`).
    fn is_error(&self) -> bool;
}

impl Answer for Value {
    fn is_error(&self) -> bool {
        self.get("isError").and_then(Value::as_bool) == Some(true)
    }
}

impl Answer for CallToolResult {
    fn is_error(&self) -> bool {
        self.is_error
    }
}

/// One request on its way: the host, who it acts for, where its answer goes, and its span
/// (disabled unless traces are exported), which everything the request runs is inside.
#[derive(Clone)]
pub struct Scope {
    requests: Arc<Requests>,
    owner: Owner,
    reply: Arc<dyn Outlet>,
    span: Span,
}

impl Scope {
    /// A request of `requests` acting for `owner`, answered on `reply`, traced as `span`
    /// (`telemetry::trace::request`).
    pub fn new(requests: Arc<Requests>, owner: Owner, reply: Arc<dyn Outlet>, span: Span) -> Scope {
        Scope { requests, owner, reply, span }
    }

    /// The host serving the request.
    pub(super) fn host(&self) -> &Arc<Host> {
        &self.requests.host
    }

    /// Who the request acts for, and so who owns what it creates.
    pub(super) fn owner(&self) -> &Owner {
        &self.owner
    }

    /// Where the request's answer and notifications go.
    pub(super) fn outlet(&self) -> &Arc<dyn Outlet> {
        &self.reply
    }

    /// The admission and authorization steps of the pipeline: what the method's own admission
    /// made of the params (`admitted`), if the principal may do what it names (`action`); else
    /// `None`, with the refusal answered.
    ///
    /// A refusal of the policy is recorded in the audit trail by [`authorize`]; a request that
    /// did not make it past its own admission is not.
    pub(super) fn admit<T>(&self, id: &RequestId, admitted: Result<T, RpcError>, action: impl for<'a> FnOnce(&'a T) -> Action<'a>) -> Option<T> {
        let admitted = self.or_answer(id, admitted)?;
        let asked = action(&admitted);
        let host = &self.requests.host;
        // A decision is a span of its own only in a traced request under a policy.
        let decided = if self.span.is_disabled() || host.options.policy.current().is_none() {
            authorize(host, &self.owner, asked)
        } else {
            self.span.in_scope(|| {
                let span = trace::authorize(asked.verb());
                let decided = authorize(host, &self.owner, asked);
                span.record("corral.decision", if decided.is_ok() { "allowed" } else { "denied" });
                decided
            })
        };
        if let Err(refused) = decided {
            return self.or_answer(id, Err(refused));
        }
        Some(admitted)
    }

    /// `step`'s value, or `None` with its error answered.
    pub(super) fn or_answer<T>(&self, id: &RequestId, step: Result<T, RpcError>) -> Option<T> {
        match step {
            Ok(value) => Some(value),
            Err(refused) => {
                self.reply(id, Err(refused));
                None
            }
        }
    }

    /// Answers request `id` now.
    pub(super) fn reply(&self, id: &RequestId, answer: Result<Value, RpcError>) {
        answered(&self.span, &answer);
        self.reply.send(answer_message(id, &answer));
    }

    /// Answers `id` with what `answer` comes to, without holding up the next message. Tracked
    /// with the requests (so `drained` waits for it), but not cancellable: the task engine's
    /// entry points are quick, and a write that reached the store must not be dropped half-way.
    /// The first poll runs here, so an answer that does not wait leaves in order.
    pub(super) fn answer_later<R: Answer>(&self, id: RequestId, answer: impl Future<Output = Result<R, RpcError>> + Send + 'static) {
        let (reply, span) = (self.reply.clone(), self.span.clone());
        let request = self.requests.calls.track_future(
            async move {
                let answer = answer.await;
                answered(&Span::current(), &answer);
                reply.send(answer_message(&id, &answer));
            }
            .instrument(span),
        );
        run_inline_then_spawn(request, &self.requests.runtime);
    }

    /// Runs `work` with the requests (so `drained` waits for it), without holding up the next
    /// message: what a request does before it is dispatched and must wait for (a shared rate
    /// bucket). Its first poll runs here.
    pub(super) fn track(&self, work: impl Future<Output = ()> + Send + 'static) {
        run_inline_then_spawn(self.requests.calls.track_future(work.instrument(self.span.clone())), &self.requests.runtime);
    }

    /// Runs `work` as a request that answers when it is done, unless the client cancels it
    /// first (then no answer, as MCP wants).
    pub(super) fn spawn_answer<R: Answer, Fut>(&self, id: RequestId, work: Fut)
    where
        Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
    {
        self.spawn_request(id, move |cancel| async move {
            tokio::select! {
                _ = cancel.cancelled() => None,
                answer = work => Some(answer),
            }
        });
    }

    /// Runs a request that may take a while, cancellable by its client. `work` answers `None`
    /// when it was cancelled: no response. Its first poll runs on this thread
    /// ([`run_inline_then_spawn`]): most calls finish there.
    ///
    /// `work` makes its future inside the request's: a future captured by value would be stored
    /// twice in the request's state, and a call's is kilobytes that its first poll would copy
    /// (BENCHMARKS.md, section 17).
    pub(super) fn spawn_request<R: Answer, F, Fut>(&self, id: RequestId, work: F)
    where
        F: FnOnce(CancelHandle) -> Fut + Send + 'static,
        Fut: Future<Output = Option<Result<R, RpcError>>> + Send + 'static,
    {
        let Some(cancel) = self.requests.enter(&id, &self.reply) else { return };
        let (requests, reply, span) = (self.requests.clone(), self.reply.clone(), self.span.clone());
        let request = self.requests.calls.track_future(
            async move {
                let answer = work(cancel).await;
                if !requests.leave(&id) {
                    return;
                }
                match answer {
                    Some(answer) => {
                        answered(&Span::current(), &answer);
                        reply.send(answer_message(&id, &answer));
                    }
                    None => {
                        trace::cancelled(&Span::current());
                        tracing::info!(request = %id, "cancelled request stopped; no response sent")
                    }
                }
            }
            .instrument(span),
        );
        run_inline_then_spawn(request, &self.requests.runtime);
    }

    /// Goes on with request `id` (`then`) once what it `needs` has loaded (at most the
    /// registry's load wait; then from what has loaded), without holding up the messages after
    /// it. Meanwhile it is in flight like a running call: a cancel (or the end of its client)
    /// ends it at once with no answer, and a shutdown answers it.
    pub(super) fn after_load(&self, id: RequestId, needs: Needs, then: impl FnOnce() + Send + 'static) {
        let Some(cancel) = self.requests.enter(&id, &self.reply) else { return };
        let requests = self.requests.clone();
        let waiting = async move {
            tokio::select! {
                _ = cancel.cancelled() => {}
                _ = needs.wait(&requests.host.registry) => {}
            }
            if !requests.leave(&id) {
                return;
            }
            if cancel.is_cancelled() {
                trace::cancelled(&Span::current());
                return tracing::info!(request = %id, "cancelled while waiting for the plugins to load; no response sent");
            }
            then();
        };
        self.requests.calls.spawn_on(waiting.instrument(self.span.clone()), &self.requests.runtime);
    }
}

/// The message answering request `id` with `answer`.
fn answer_message(id: &RequestId, answer: &Result<impl Answer, RpcError>) -> Outgoing {
    match answer {
        Ok(result) => result_message(id, result),
        Err(error) => error_message(Some(id), error),
    }
}

/// Records how a request was answered on its span.
fn answered(span: &Span, answer: &Result<impl Answer, RpcError>) {
    if span.is_disabled() {
        return;
    }
    match answer {
        Ok(result) => trace::answered(span, None, result.is_error()),
        Err(error) => trace::answered(span, Some((error.code.into(), &error.message)), false),
    }
}
