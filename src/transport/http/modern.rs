//! The stateless era (2026-07-28) over Streamable HTTP: one POST, one request, no session.
//!
//! A POST whose body claims the era (or whose `MCP-Protocol-Version` names a version that is not
//! 2025-11-25's) comes here instead of the session path. Its headers are checked against its
//! body, its envelope read, and its method looked up in the era's set, answering the error
//! ladder with HTTP 400 (-32020, -32602, -32022, -32021) or 404 (-32601). The request then runs
//! in a scope of its own ([`Scope`], no session) that lives as long as its response: when the
//! client closes the response stream, what it still runs is cancelled (the era's cancellation
//! signal) and the guest stops at its next epoch tick.

use std::sync::Arc;

use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use futures_util::stream::StreamExt;
use tokio::sync::mpsc;

use super::{answer, events, json_message, until_answer, App, ChannelOutlet, PeerAddr, VERSION_HEADER};
use crate::mcp::jsonrpc::{self, Incoming, INVALID_PARAMS, METHOD_NOT_FOUND};
use crate::mcp::modern::headers::{self, RequestHeaders};
use crate::mcp::modern::{self as era, ModernMethod, HEADER_MISMATCH, MISSING_CAPABILITY, UNSUPPORTED_VERSION};
use crate::mcp::{RequestId, RpcError};
use crate::principal::{Owner, Principal, Wire};
use crate::server::{Requests, Scope};
use crate::telemetry::trace;

/// Asks proxies not to buffer an SSE response (nginx honours it), so notifications arrive as sent.
const NO_BUFFERING: (&str, &str) = ("x-accel-buffering", "no");

/// Cancels what the request still runs when the response is dropped: the client closed the
/// stream (or the request finished, and then there is nothing left to cancel).
struct CancelOnDrop(Arc<Requests>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.cancel_all();
    }
}

/// The HTTP status of a modern error answer: the ladder's codes are 400, an unknown method 404.
fn status_of(code: i32) -> StatusCode {
    match code {
        HEADER_MISMATCH | MISSING_CAPABILITY | UNSUPPORTED_VERSION => StatusCode::BAD_REQUEST,
        METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
        _ => StatusCode::OK,
    }
}

fn refuse(status: StatusCode, id: &RequestId, error: &RpcError) -> Response {
    json_message(status, jsonrpc::error_message(Some(id), error))
}

/// Serves one modern POST. `identity` is the authenticated principal when authentication is on;
/// `peer` is where the request came from.
pub(super) async fn post(app: &Arc<App>, headers: &HeaderMap, identity: Option<Principal>, peer: Option<PeerAddr>, message: Incoming) -> Response {
    let Incoming::Request { id, method, params } = message else {
        unreachable!("only requests are classified by era");
    };
    let value = |name: &str| headers.get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let (version, method_header, name_header) = (value(VERSION_HEADER), value("mcp-method"), value("mcp-name"));
    let sent = RequestHeaders { version: version.as_deref(), method: method_header.as_deref(), name: name_header.as_deref() };
    if let Err(mismatch) = headers::check(sent, &method, &params) {
        return refuse(StatusCode::BAD_REQUEST, &id, &mismatch);
    }
    let (method, envelope) = match era::admit(&method, &params) {
        Ok(admitted) => admitted,
        // Envelope errors (-32602, -32022) are the ladder's 400s; an unknown method is 404.
        Err(e) if e.code == INVALID_PARAMS => return refuse(StatusCode::BAD_REQUEST, &id, &e),
        Err(e) => return refuse(status_of(e.code), &id, &e),
    };
    // A listen holds its stream until the client closes it: it takes one of the client's stream
    // places first, for as long as it is open.
    let slot = match method {
        ModernMethod::SubscriptionsListen => match app.open_stream_slot(&identity, peer, Some(&id)) {
            Ok(slot) => Some(slot),
            Err(response) => return response,
        },
        _ => None,
    };
    // Without authentication the requests of all clients share one principal: a task id, which
    // is unguessable, is then the only capability to a task (as the tasks extension says).
    let principal = identity.unwrap_or(Principal::Anonymous);
    let (sender, mut answers) = mpsc::unbounded_channel();
    let requests = Requests::new(app.host.clone());
    let guard = CancelOnDrop(requests.clone());
    let owner = Owner::new(principal, Wire::Stateless);
    let span = if crate::telemetry::enabled() {
        trace::request(trace::Request {
            method: method.as_str(),
            id: &id,
            params: &params,
            transport: trace::Transport::Tcp,
            protocol_version: era::MODERN_PROTOCOL_VERSION,
            session: None,
            principal: owner.principal_key(),
            headers: trace::Carrier::from_headers(headers),
        })
    } else {
        tracing::Span::none()
    };
    let scope = Scope::new(requests, owner, Arc::new(ChannelOutlet(sender)), span);
    crate::server::serve_stateless(&scope, id.clone(), method, envelope, params);
    drop(scope);
    let request_id = id.clone();
    let stopping = app.stopping.clone();
    let first = tokio::select! {
        first = answers.recv() => first,
        // Shutting down: the request's calls are cancelled as the guard drops.
        _ = stopping.cancelled() => None,
    };
    let Some(first) = first else {
        return refuse(StatusCode::SERVICE_UNAVAILABLE, &id, &RpcError::internal("the server is shutting down"));
    };
    if first.answers(&request_id) {
        let status = first.error_code().map_or(StatusCode::OK, status_of);
        return answer(status, first);
    }
    // Notifications (progress, logs) came first: an SSE stream, ending with the response. A
    // listen stream never ends by itself: shutdown or the end of its lifetime ends it (and,
    // dropping the guard, its request); the client listens again.
    let lifetime = slot.as_ref().map(|_| app.streams.lifetime());
    let lifetime = async move {
        match lifetime {
            Some(lifetime) => tokio::time::sleep(lifetime).await,
            None => std::future::pending().await,
        }
    };
    let rest = until_answer(answers, request_id, (guard, slot)).take_until(stopping.cancelled_owned()).take_until(lifetime);
    ([NO_BUFFERING], events(first, rest)).into_response()
}
