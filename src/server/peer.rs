//! Requests corral sends to a client (`elicitation/create`, `sampling/createMessage`) and the
//! answers it routes back to them by request id.
//!
//! Where a request goes: a plain call's request goes where the call's own messages go (over
//! HTTP, the SSE stream of the POST that made the call). A task's request carries the
//! related-task `_meta` and goes on the stream of a `tasks/result` for that task when the client
//! has one open in this session, else on the session's own stream (stdout, the HTTP GET stream).
//! A request that reached no reader (over HTTP with no GET stream open) is sent again on the next
//! `tasks/result` for its task; one that reached a reader is never sent twice.
//!
//! A stream that is no longer read (the client dropped an HTTP response) is passed over for the
//! session's own stream.
//!
//! A request whose caller stops waiting (the call was cancelled or ran out of time) is withdrawn
//! with `notifications/cancelled`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Map, Value};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::task_view::RELATED_TASK;
use super::Outlet;
use crate::mcp::jsonrpc::{notification, request_message, Outgoing};
use crate::mcp::{Params, RequestId, RpcError};

/// What the client declared it can do for the server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientCaps {
    /// `elicitation` with form mode (`{}` or `{"form": {}}`).
    pub elicitation: bool,
    /// `sampling`.
    pub sampling: bool,
    /// `roots` (contract 0.3.0's `input.roots` sends `roots/list` only then).
    pub roots: bool,
    /// `elicitation` with URL mode (`{"url": {}}`): a caller secret not set yet is asked for
    /// with a link (`-32042`).
    pub elicitation_url: bool,
}

impl ClientCaps {
    /// The capabilities the 2025-11-25 schema defines for a client, each an object when sent.
    const DECLARED: [&'static str; 5] = ["elicitation", "sampling", "roots", "tasks", "experimental"];

    /// Reads `initialize`'s `capabilities`. Absent, the client declared nothing (clients of
    /// earlier versions omit it); sent, it must be an object whose known capabilities are objects
    /// (`null` read as absent), else -32602 naming the field: a `"sampling": 3` is a client bug
    /// to report, not a capability to guess at.
    pub fn from_initialize(params: Params<'_>) -> Result<ClientCaps, RpcError> {
        let capabilities = match params.get("capabilities") {
            None => return Ok(ClientCaps::default()),
            Some(Value::Object(map)) => Params::new(map),
            Some(_) => return Err(RpcError::invalid_params("`capabilities` must be an object")),
        };
        let mut declared = [None; 5];
        for (slot, key) in declared.iter_mut().zip(Self::DECLARED) {
            *slot = capabilities.optional_object_or(key, &format!("`capabilities.{key}` must be an object"))?;
        }
        let [elicitation, sampling, roots, ..] = declared;
        // An empty object is form mode, for clients of earlier protocol versions.
        let elicitation_url = elicitation.as_ref().is_some_and(|modes| modes.has("url"));
        let elicitation = elicitation.is_some_and(|modes| modes.map().is_empty() || modes.has("form"));
        Ok(ClientCaps { elicitation, sampling: sampling.is_some(), roots: roots.is_some(), elicitation_url })
    }
}

/// Why a request got no usable answer.
#[derive(Debug)]
pub enum PeerError {
    /// The session ended (or the client went away) before the client answered.
    Gone,
    /// The client answered with a JSON-RPC error.
    Rpc(RpcError),
}

/// One client's side of server-to-client requests.
pub struct Peer {
    /// The session's own stream.
    outlet: Arc<dyn Outlet>,
    caps: Mutex<ClientCaps>,
    next_id: AtomicI64,
    next_stream: AtomicU64,
    state: Mutex<State>,
    closed: CancellationToken,
}

#[derive(Default)]
struct State {
    pending: HashMap<RequestId, Pending>,
    /// `tasks/result` requests in flight, by task id, oldest first.
    result_streams: HashMap<String, Vec<Watcher>>,
}

/// A `tasks/result` stream: its registration token and where it goes.
type Watcher = (u64, Arc<dyn Outlet>);

struct Pending {
    answer: oneshot::Sender<Result<Value, RpcError>>,
    task: Option<String>,
    message: Outgoing,
    /// Where it was last sent; `notifications/cancelled` follows it there.
    outlet: Arc<dyn Outlet>,
    /// Sent where a reader was.
    delivered: bool,
}

impl Peer {
    pub fn new(outlet: Arc<dyn Outlet>) -> Peer {
        Peer {
            outlet,
            caps: Mutex::new(ClientCaps::default()),
            next_id: AtomicI64::new(1),
            next_stream: AtomicU64::new(1),
            state: Mutex::new(State::default()),
            closed: CancellationToken::new(),
        }
    }

    pub fn set_capabilities(&self, caps: ClientCaps) {
        *self.caps.lock().unwrap() = caps;
    }

    pub fn capabilities(&self) -> ClientCaps {
        *self.caps.lock().unwrap()
    }

    /// Whether the session has ended.
    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// Sends request `method` and waits for the client's answer. `via` is where the call's own
    /// messages go; `task` is the task the request is made for, if any.
    pub async fn request(
        self: &Arc<Self>,
        method: &str,
        mut params: Map<String, Value>,
        task: Option<&str>,
        via: &Arc<dyn Outlet>,
    ) -> Result<Value, PeerError> {
        if self.closed.is_cancelled() {
            return Err(PeerError::Gone);
        }
        if let Some(task) = task {
            let meta = params.entry("_meta").or_insert_with(|| json!({}));
            if let Value::Object(meta) = meta {
                meta.insert(RELATED_TASK.into(), json!({ "taskId": task }));
            }
        }
        let id = RequestId::Int(self.next_id.fetch_add(1, Ordering::Relaxed));
        let message = request_message(&id, method, &params);
        let (answer, answered) = oneshot::channel();
        let outlet = {
            let mut state = self.state.lock().unwrap();
            let stream =
                task.and_then(|t| state.result_streams.get(t)).and_then(|streams| streams.iter().rev().find(|(_, o)| o.is_open())).map(|(_, o)| o.clone());
            let outlet = match stream {
                Some(stream) => stream,
                None if via.is_open() => via.clone(),
                None => self.outlet.clone(),
            };
            let delivered = outlet.is_open();
            // Registered before it is sent: a quick client may answer at once.
            state.pending.insert(id.clone(), Pending { answer, task: task.map(str::to_owned), message: message.clone(), outlet: outlet.clone(), delivered });
            outlet
        };
        tracing::debug!(request = %id, method, task, "asking the client");
        let withdraw = Withdraw { peer: self.clone(), id };
        outlet.send(message);
        let outcome = tokio::select! {
            answer = answered => answer.unwrap_or(Err(RpcError::internal("the request was dropped"))).map_err(PeerError::Rpc),
            _ = self.closed.cancelled() => Err(PeerError::Gone),
        };
        drop(withdraw);
        outcome
    }

    /// Routes a response from the client to the request waiting for it.
    pub fn answer(&self, id: Option<RequestId>, outcome: Result<Value, RpcError>) {
        let Some(id) = id else {
            return tracing::warn!("the client answered a request of ours with an error it could not attach to an id: {outcome:?}");
        };
        let pending = self.state.lock().unwrap().pending.remove(&id);
        match pending {
            Some(pending) => {
                let _ = pending.answer.send(outcome);
            }
            None => tracing::debug!(request = %id, "ignored an answer to no pending request (answered already, or withdrawn)"),
        }
    }

    /// Registers a `tasks/result` in flight for `task`: the task's requests go on `outlet`
    /// until the returned guard is dropped. Requests of the task that reached no reader are
    /// sent there now.
    pub fn watch_task(self: &Arc<Self>, task: &str, outlet: Arc<dyn Outlet>) -> ResultStream {
        let token = self.next_stream.fetch_add(1, Ordering::Relaxed);
        let resend: Vec<Outgoing> = {
            let mut state = self.state.lock().unwrap();
            state.result_streams.entry(task.to_owned()).or_default().push((token, outlet.clone()));
            state
                .pending
                .values_mut()
                .filter(|p| p.task.as_deref() == Some(task) && !p.delivered)
                .map(|p| {
                    p.delivered = true;
                    p.outlet = outlet.clone();
                    p.message.clone()
                })
                .collect()
        };
        for message in resend {
            outlet.send(message);
        }
        ResultStream { peer: self.clone(), task: task.to_owned(), token }
    }

    /// Ends the session's side: every request waiting gets [`PeerError::Gone`], and new ones too.
    pub fn close(&self) {
        self.closed.cancel();
    }
}

/// Withdraws an unanswered request when its caller stops waiting.
struct Withdraw {
    peer: Arc<Peer>,
    id: RequestId,
}

impl Drop for Withdraw {
    fn drop(&mut self) {
        let pending = self.peer.state.lock().unwrap().pending.remove(&self.id);
        if let Some(pending) = pending {
            if !self.peer.closed.is_cancelled() {
                let reason = "the call that asked stopped waiting (cancelled or out of time)";
                let mut params = json!({ "requestId": self.id, "reason": reason });
                if let Some(task) = &pending.task {
                    params["_meta"] = json!({ RELATED_TASK: { "taskId": task } });
                }
                pending.outlet.send(notification("notifications/cancelled", &params));
            }
        }
    }
}

/// A registered `tasks/result` stream; deregisters when dropped.
pub struct ResultStream {
    peer: Arc<Peer>,
    task: String,
    token: u64,
}

impl Drop for ResultStream {
    fn drop(&mut self) {
        let mut state = self.peer.state.lock().unwrap();
        if let Some(streams) = state.result_streams.get_mut(&self.task) {
            streams.retain(|(t, _)| *t != self.token);
            if streams.is_empty() {
                state.result_streams.remove(&self.task);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::testing::Collect;

    fn caps(capabilities: Value) -> Result<ClientCaps, RpcError> {
        let params = json!({ "capabilities": capabilities });
        ClientCaps::from_initialize(Params::new(params.as_object().unwrap()))
    }

    #[test]
    fn capabilities_follow_the_spec() {
        assert_eq!(caps(json!({})).unwrap(), ClientCaps::default());
        assert_eq!(ClientCaps::from_initialize(Params::new(&Map::new())).unwrap(), ClientCaps::default(), "absent: nothing declared");
        assert_eq!(caps(json!({"elicitation": {}, "sampling": {}})).unwrap(), ClientCaps { elicitation: true, sampling: true, ..ClientCaps::default() });
        assert!(caps(json!({"elicitation": {"form": {}}})).unwrap().elicitation);
        assert!(!caps(json!({"elicitation": {"url": {}}})).unwrap().elicitation, "URL mode only");
        assert!(caps(json!({"elicitation": {"url": {}}})).unwrap().elicitation_url);
        assert!(caps(json!({"elicitation": {"form": {}, "url": {}}})).unwrap().elicitation_url);
        assert!(!caps(json!({"elicitation": {}})).unwrap().elicitation_url, "an empty object is form mode only");
        assert_eq!(caps(json!({"sampling": null, "roots": {"listChanged": true}})).unwrap(), ClientCaps { roots: true, ..ClientCaps::default() });
    }

    #[test]
    fn wrongly_typed_capabilities_are_refused_naming_the_field() {
        let refused = |capabilities: Value| caps(capabilities).unwrap_err();
        assert_eq!(refused(json!(null)).message, "`capabilities` must be an object");
        assert_eq!(refused(json!({"elicitation": "x"})).message, "`capabilities.elicitation` must be an object");
        assert_eq!(refused(json!({"sampling": 3})).message, "`capabilities.sampling` must be an object");
        assert_eq!(refused(json!({"roots": true})).message, "`capabilities.roots` must be an object");
        assert_eq!(refused(json!({"tasks": []})).code, crate::mcp::jsonrpc::INVALID_PARAMS);
    }

    #[tokio::test]
    async fn answers_reach_their_request_and_withdrawn_requests_are_cancelled() {
        let session = Arc::new(Collect::default());
        let peer = Arc::new(Peer::new(session.clone()));
        let via: Arc<dyn Outlet> = session.clone();
        let asking = {
            let (peer, via) = (peer.clone(), via.clone());
            tokio::spawn(async move { peer.request("elicitation/create", Map::new(), Some("t1"), &via).await })
        };
        while session.0.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
        let sent = session.0.lock().unwrap()[0].clone();
        assert_eq!(sent["params"]["_meta"][RELATED_TASK]["taskId"], "t1");
        let id: RequestId = RequestId::Int(sent["id"].as_i64().unwrap());
        peer.answer(Some(id), Ok(json!({"action": "decline"})));
        assert_eq!(asking.await.unwrap().unwrap(), json!({"action": "decline"}));

        let abandoned = {
            let (peer, via) = (peer.clone(), via.clone());
            tokio::spawn(async move { peer.request("sampling/createMessage", Map::new(), None, &via).await })
        };
        while session.0.lock().unwrap().len() < 2 {
            tokio::task::yield_now().await;
        }
        abandoned.abort();
        let _ = abandoned.await;
        let last = session.0.lock().unwrap().last().cloned().unwrap();
        assert_eq!(last["method"], "notifications/cancelled", "{last}");
    }

    struct Closed;
    impl Outlet for Closed {
        fn send(&self, message: Outgoing) {
            panic!("sent on a closed outlet: {}", message.text());
        }
        fn is_open(&self) -> bool {
            false
        }
    }

    #[tokio::test]
    async fn a_stream_nobody_reads_is_passed_over_for_the_sessions_own() {
        let session = Arc::new(Collect::default());
        let peer = Arc::new(Peer::new(session.clone()));
        let via: Arc<dyn Outlet> = Arc::new(Closed);
        let asking = {
            let peer = peer.clone();
            tokio::spawn(async move { peer.request("elicitation/create", Map::new(), None, &via).await })
        };
        while session.0.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
        peer.close();
        assert!(matches!(asking.await.unwrap(), Err(PeerError::Gone)));
    }

    /// A session stream nobody reads: messages wait in it.
    #[derive(Default)]
    struct Unread(Mutex<Vec<Value>>);
    impl Outlet for Unread {
        fn send(&self, message: Outgoing) {
            self.0.lock().unwrap().push(message.to_value());
        }
        fn is_open(&self) -> bool {
            false
        }
    }

    #[tokio::test]
    async fn a_task_request_nobody_read_goes_again_on_a_tasks_result_stream() {
        let session = Arc::new(Unread::default());
        let peer = Arc::new(Peer::new(session.clone()));
        let via: Arc<dyn Outlet> = session.clone();
        let asking = {
            let (peer, via) = (peer.clone(), via.clone());
            tokio::spawn(async move { peer.request("elicitation/create", Map::new(), Some("t9"), &via).await })
        };
        while session.0.lock().unwrap().is_empty() {
            tokio::task::yield_now().await;
        }
        let stream = Arc::new(Collect::default());
        let watching = peer.watch_task("t9", stream.clone());
        let resent = stream.0.lock().unwrap()[0].clone();
        assert_eq!(resent["method"], "elicitation/create");
        let again = Arc::new(Collect::default());
        let second = peer.watch_task("t9", again.clone());
        assert!(again.0.lock().unwrap().is_empty(), "a request that reached a reader is not sent twice");
        peer.close();
        assert!(matches!(asking.await.unwrap(), Err(PeerError::Gone)));
        drop((watching, second));
        assert!(peer.state.lock().unwrap().result_streams.is_empty());
    }
}
