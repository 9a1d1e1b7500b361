//! MCP over Streamable HTTP (2025-11-25) at `/mcp`, plus `/healthz`.
//!
//! POST carries one client message. A notification or response is accepted with 202; a
//! request is answered with JSON when its answer is the first thing the session has for it,
//! or with an SSE stream when notifications (progress, logs) come first. GET opens the
//! session's stream of server-initiated messages (task status), resumable with
//! `Last-Event-ID`. DELETE ends the session. Sessions are minted at `initialize`.

mod events;
mod guard;
mod modern;

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use futures_util::stream::{self, StreamExt};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use self::events::EventLog;
pub use self::guard::parse_tokens;
use self::guard::Guard;
use crate::mcp::jsonrpc::{self, Incoming};
use crate::mcp::modern::Era;
use crate::mcp::types::SUPPORTED_PROTOCOL_VERSIONS;
use crate::mcp::{Method, RpcError};
use crate::server::{Host, Outlet, Session};

const SESSION_HEADER: &str = "mcp-session-id";
/// How long open connections get to finish after a shutdown signal.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
const VERSION_HEADER: &str = "mcp-protocol-version";

/// HTTP settings from the flags.
#[derive(Clone, Debug)]
pub struct HttpSettings {
    /// Where [`serve`] listens (port 0 picks a free port).
    pub addr: SocketAddr,
    /// `Host` names allowed besides the loopback names.
    pub allowed_hosts: Vec<String>,
    /// `Origin`s allowed besides loopback origins.
    pub allowed_origins: Vec<String>,
    /// (identity, token) pairs; empty turns authentication off.
    pub tokens: Vec<(String, String)>,
    /// Largest POST body accepted, in bytes.
    pub max_body: usize,
    /// How long a session may go unused (no request, no open stream) before it is ended.
    pub session_idle: Duration,
    /// Server-initiated messages kept per session for `Last-Event-ID` resumption.
    pub event_buffer: usize,
    /// Sessions open at once; `initialize` beyond it is refused with 503.
    pub max_sessions: usize,
}

struct App {
    host: Arc<Host>,
    guard: Guard,
    settings: HttpSettings,
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    /// Fires at shutdown: ends the 2026-07-28 requests still open (listen streams, calls).
    stopping: tokio_util::sync::CancellationToken,
}

struct HttpSession {
    session: Session,
    events: Arc<EventLog>,
    /// The bearer token's name when authentication is on.
    identity: Option<String>,
    last_seen: Mutex<Instant>,
    /// GET streams open now; a session with one is in use even without requests.
    open_streams: std::sync::atomic::AtomicUsize,
}

/// Counts an open GET stream for as long as the stream lives.
struct OpenStream(Arc<HttpSession>);

impl OpenStream {
    fn new(session: Arc<HttpSession>) -> OpenStream {
        session.open_streams.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        session.events.attach();
        OpenStream(session)
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.open_streams.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
        self.0.events.detach();
        *self.0.last_seen.lock().unwrap() = Instant::now();
    }
}

/// A POST's own answer channel.
struct ChannelOutlet(mpsc::UnboundedSender<Value>);

impl Outlet for ChannelOutlet {
    fn send(&self, message: Value) {
        let _ = self.0.send(message);
    }

    fn is_open(&self) -> bool {
        !self.0.is_closed()
    }
}

/// Listens on `settings.addr` and serves until `shutdown` resolves.
pub async fn serve(host: Arc<Host>, settings: HttpSettings, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(settings.addr).await.map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", settings.addr))?;
    serve_on(host, listener, settings, shutdown).await
}

/// Serves on a listener the caller bound (a test binds port 0 and reads the port back) until
/// `shutdown` resolves. When `shutdown` resolves every session's calls are cancelled and its
/// streams closed, then open connections get [`SHUTDOWN_GRACE`] to finish. The idle-session
/// reaper stops when this returns.
pub async fn serve_on(
    host: Arc<Host>,
    listener: tokio::net::TcpListener,
    settings: HttpSettings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let addr = listener.local_addr()?;
    let guard = Guard::new(&settings.allowed_hosts, &settings.allowed_origins, settings.tokens.clone());
    if !addr.ip().is_loopback() && !guard.auth_enabled() {
        tracing::warn!("listening on {addr} without authentication: anyone who can reach it can run tools");
    }
    let app = Arc::new(App { host, guard, settings: settings.clone(), sessions: Mutex::new(HashMap::new()), stopping: Default::default() });
    let _reaper = AbortOnDrop(tokio::spawn(reap_idle_sessions(Arc::downgrade(&app))));
    let router = Router::new()
        .route("/mcp", get(open_stream).post(post_message).delete(end_session))
        .route("/healthz", get(|| async { Json(json!({ "status": "ok" })) }))
        .route("/metrics", get(metrics))
        .layer(DefaultBodyLimit::max(settings.max_body))
        .with_state(app.clone());
    tracing::info!("serving MCP over HTTP at http://{addr}/mcp");
    let stopping = Arc::new(tokio::sync::Notify::new());
    let (stop_app, stop_signal) = (app.clone(), stopping.clone());
    // Open SSE responses would keep a graceful shutdown waiting forever: end every session's
    // calls and streams first, then let the server finish what is left.
    let shutdown = async move {
        shutdown.await;
        tracing::info!("signal received; shutting down");
        for (_, s) in stop_app.sessions.lock().unwrap().drain() {
            s.events.close();
            s.session.cancel_all();
        }
        stop_app.stopping.cancel();
        stop_signal.notify_one();
    };
    let server = axum::serve(listener, router).with_graceful_shutdown(shutdown);
    tokio::select! {
        served = server => served?,
        _ = async { stopping.notified().await; tokio::time::sleep(SHUTDOWN_GRACE).await } => {
            tracing::warn!("connections still open after {SHUTDOWN_GRACE:?}; exiting anyway");
        }
    }
    Ok(())
}

/// Aborts a background task when dropped, so it ends with the function that started it.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn refuse(status: StatusCode, message: impl Into<String>) -> Response {
    // -32001 (implementation-defined) marks "session not found", as other MCP servers do.
    let code = if status == StatusCode::NOT_FOUND { -32001 } else { jsonrpc::INVALID_REQUEST };
    let mut response = (status, Json(jsonrpc::error_message(None, &RpcError::new(code, message)))).into_response();
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert("www-authenticate", HeaderValue::from_static("Bearer realm=\"corral\""));
    }
    response
}

/// Origin/Host, authentication and protocol version: the checks every method shares.
// A refusal is the HTTP response itself; boxing it would buy nothing on these cold paths.
#[allow(clippy::result_large_err)]
fn check_headers(app: &App, headers: &HeaderMap) -> Result<Option<String>, Response> {
    let identity = check_access(app, headers)?;
    check_version(headers)?;
    Ok(identity)
}

/// Origin/Host, the announced body size and authentication: what every request passes before
/// its era is known.
// A refusal is the HTTP response itself; boxing it would buy nothing on these cold paths.
#[allow(clippy::result_large_err)]
fn check_access(app: &App, headers: &HeaderMap) -> Result<Option<String>, Response> {
    app.guard.check_origin(headers).map_err(|(s, m)| refuse(s, m))?;
    // A body announced larger than `--max-body` is refused before any of it is read.
    let announced = headers.get(axum::http::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(length) = announced.filter(|n| *n > app.settings.max_body as u64) {
        return Err(refuse(StatusCode::PAYLOAD_TOO_LARGE, format!("the body is {length} bytes, over --max-body ({} bytes)", app.settings.max_body)));
    }
    app.guard.authenticate(headers).map_err(|(s, m)| refuse(s, m))
}

/// A 2025-11-25 request's `MCP-Protocol-Version`, when it sends one, must be a version of that era.
// A refusal is the HTTP response itself; boxing it would buy nothing on these cold paths.
#[allow(clippy::result_large_err)]
fn check_version(headers: &HeaderMap) -> Result<(), Response> {
    if let Some(version) = headers.get(VERSION_HEADER) {
        let version = version.to_str().unwrap_or("");
        if !SUPPORTED_PROTOCOL_VERSIONS.contains(&version) {
            return Err(refuse(
                StatusCode::BAD_REQUEST,
                format!("unsupported MCP-Protocol-Version `{version}`; supported: {}", SUPPORTED_PROTOCOL_VERSIONS.join(", ")),
            ));
        }
    }
    Ok(())
}

/// The whole body, at most `limit` bytes (a chunked body that runs past it is refused with 413).
async fn read_body(body: axum::body::Body, limit: usize) -> Result<Bytes, Response> {
    axum::body::to_bytes(body, limit).await.map_err(|e| {
        let too_large = std::error::Error::source(&e).is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
        match too_large {
            true => refuse(StatusCode::PAYLOAD_TOO_LARGE, format!("the body is over --max-body ({limit} bytes)")),
            false => refuse(StatusCode::BAD_REQUEST, format!("cannot read the body: {e}")),
        }
    })
}

/// The session named by the request's `Mcp-Session-Id`, if the caller may use it.
// A refusal is the HTTP response itself; boxing it would buy nothing on these cold paths.
#[allow(clippy::result_large_err)]
fn find_session(app: &App, headers: &HeaderMap, identity: &Option<String>) -> Result<(String, Arc<HttpSession>), Response> {
    let Some(id) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
        return Err(refuse(StatusCode::BAD_REQUEST, "missing Mcp-Session-Id header: send `initialize` first and echo the id it returns"));
    };
    let found = app.sessions.lock().unwrap().get(id).cloned();
    match found {
        Some(s) if &s.identity == identity => {
            *s.last_seen.lock().unwrap() = Instant::now();
            Ok((id.to_owned(), s))
        }
        _ => Err(refuse(StatusCode::NOT_FOUND, "session not found: it ended or expired; initialize a new one")),
    }
}

/// The shared checks, then the request's session (GET and DELETE need one).
// A refusal is the HTTP response itself; boxing it would buy nothing on these cold paths.
#[allow(clippy::result_large_err)]
fn existing_session(app: &App, headers: &HeaderMap) -> Result<(String, Arc<HttpSession>), Response> {
    let identity = check_headers(app, headers)?;
    find_session(app, headers, &identity)
}

// A refusal is the HTTP response itself; boxing it would buy nothing on these cold paths.
#[allow(clippy::result_large_err)]
fn new_session(app: &App, identity: Option<String>) -> Result<(String, Arc<HttpSession>), Response> {
    let mut sessions = app.sessions.lock().unwrap();
    if sessions.len() >= app.settings.max_sessions {
        return Err(refuse(StatusCode::SERVICE_UNAVAILABLE, format!("too many sessions ({}); end one with DELETE or try later", sessions.len())));
    }
    let id = uuid::Uuid::new_v4().simple().to_string();
    let events = Arc::new(EventLog::new(app.settings.event_buffer));
    // Tasks belong to the token's holder when authentication is on, else to the session.
    let owner = identity.as_ref().map_or_else(|| format!("session:{id}"), |who| format!("token:{who}"));
    let session = Session::new(app.host.clone(), events.clone(), owner);
    let entry = Arc::new(HttpSession { session, events, identity, last_seen: Mutex::new(Instant::now()), open_streams: Default::default() });
    sessions.insert(id.clone(), entry.clone());
    Ok((id, entry))
}

async fn post_message(State(app): State<Arc<App>>, headers: HeaderMap, body: axum::body::Body) -> Response {
    let identity = match check_access(&app, &headers) {
        Ok(identity) => identity,
        Err(response) => return response,
    };
    // Read only after the headers passed, so a refused request never has its body read.
    let body = match read_body(body, app.settings.max_body).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let Ok(text) = std::str::from_utf8(&body) else {
        let error = RpcError::new(jsonrpc::PARSE_ERROR, "parse error: the body is not UTF-8");
        return (StatusCode::BAD_REQUEST, Json(jsonrpc::error_message(None, &error))).into_response();
    };
    // One JSON-RPC message per POST; anything else is refused here, before any session sees
    // it. The session gets the message as parsed here: it is parsed once.
    let message = match jsonrpc::parse(text) {
        Ok(message) => message,
        Err(rejected) => return (StatusCode::BAD_REQUEST, Json(jsonrpc::error_message(rejected.id.as_ref(), &rejected.error))).into_response(),
    };
    // The era is decided here, once per POST, by the body (the version header only backs it up).
    if let Incoming::Request { params, .. } = &message {
        // A request on a live 2025-11-25 session is that session's, whatever version header it sends.
        let header = headers.get(VERSION_HEADER).filter(|_| !headers.contains_key(SESSION_HEADER)).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        if Era::of(params, header.as_deref()) == Era::Modern {
            return modern::post(&app, &headers, identity, message).await;
        }
    }
    if let Err(response) = check_version(&headers) {
        return response;
    }
    let (is_initialize, request_id) = match &message {
        Incoming::Request { id, method, .. } => (method == Method::Initialize.as_str(), Some(json!(id))),
        _ => (false, None),
    };
    // Only an `initialize` without a session header makes a session; one sent on a live session
    // is that session's request (refused by it) and must leave the session as it was.
    let creates = is_initialize && !headers.contains_key(SESSION_HEADER);
    let found = if creates { new_session(&app, identity) } else { find_session(&app, &headers, &identity) };
    let (session_id, session) = match found {
        Ok(found) => found,
        Err(response) => return response,
    };

    let Some(request_id) = request_id else {
        // A notification or a response: nothing comes back on this request.
        let sink: Arc<dyn Outlet> = Arc::new(ChannelOutlet(mpsc::unbounded_channel().0));
        session.session.handle(Ok(message), &sink);
        return StatusCode::ACCEPTED.into_response();
    };
    let (sender, mut answers) = mpsc::unbounded_channel();
    let reply: Arc<dyn Outlet> = Arc::new(ChannelOutlet(sender));
    session.session.handle(Ok(message), &reply);
    drop(reply);

    let mut response = match answers.recv().await {
        // Cancelled by the client: MCP sends no response.
        None => StatusCode::ACCEPTED.into_response(),
        Some(first) if creates && first.get("error").is_some() => {
            // A failed initialize leaves no session behind.
            app.sessions.lock().unwrap().remove(&session_id);
            return Json(first).into_response();
        }
        Some(first) if is_response_to(&first, &request_id) => Json(first).into_response(),
        Some(first) => {
            let rest = stream::unfold((answers, request_id, false), |(mut answers, id, done)| async move {
                if done {
                    return None;
                }
                let message = answers.recv().await?;
                let done = is_response_to(&message, &id);
                Some((message, (answers, id, done)))
            });
            let events = stream::once(async move { first }).chain(rest).map(|m| Ok::<_, Infallible>(SseEvent::default().data(m.to_string())));
            Sse::new(events).keep_alive(KeepAlive::default()).into_response()
        }
    };
    if creates {
        response.headers_mut().insert(SESSION_HEADER, HeaderValue::from_str(&session_id).expect("session ids are ASCII"));
    }
    response
}

fn is_response_to(message: &Value, id: &Value) -> bool {
    message.get("id") == Some(id) && (message.get("result").is_some() || message.get("error").is_some())
}

async fn open_stream(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let (_, session) = match existing_session(&app, &headers) {
        Ok(found) => found,
        Err(response) => return response,
    };
    let accept = headers.get("accept").and_then(|v| v.to_str().ok()).unwrap_or("*/*");
    if !accept.contains("text/event-stream") && !accept.contains("*/*") {
        return refuse(StatusCode::NOT_ACCEPTABLE, "GET /mcp opens an event stream: send `Accept: text/event-stream`");
    }
    let last_seen = headers.get("last-event-id").and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    let events::Subscription { missed, live, complete, ended } = session.events.subscribe(last_seen);
    let open = OpenStream::new(session.clone());
    if !complete {
        tracing::warn!("a client resumed after event {last_seen:?}, older than the buffer keeps; some messages are lost");
    }
    let live = tokio_stream::wrappers::BroadcastStream::new(live)
        // A client too slow for the buffer loses its place: end the stream so it reconnects
        // with Last-Event-ID and replays from the buffer.
        .take_while(|item| std::future::ready(item.is_ok()))
        .filter_map(|item| std::future::ready(item.ok()))
        // Each message goes on one stream only: a newer GET takes over and this one ends.
        .take_until(ended.cancelled_owned());
    let events = stream::iter(missed).chain(live).map(move |e| {
        let _open = &open;
        Ok::<_, Infallible>(SseEvent::default().id(e.id.to_string()).data(e.message.to_string()))
    });
    Sse::new(events).keep_alive(KeepAlive::default()).into_response()
}

async fn end_session(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    let (id, session) = match existing_session(&app, &headers) {
        Ok(found) => found,
        Err(response) => return response,
    };
    app.sessions.lock().unwrap().remove(&id);
    session.events.close();
    session.session.cancel_all();
    tracing::info!(session = %id, "session ended by the client");
    StatusCode::OK.into_response()
}

/// Prometheus metrics; behind the same Host/Origin checks and tokens as `/mcp`.
async fn metrics(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if let Err(response) = check_headers(&app, &headers) {
        return response;
    }
    let mut text = app.host.metrics.render(&app.host.engine).await;
    text.push_str(&format!(
        "# HELP corral_http_sessions Open MCP sessions.\n# TYPE corral_http_sessions gauge\ncorral_http_sessions {}\n",
        app.sessions.lock().unwrap().len()
    ));
    ([("content-type", "text/plain; version=0.0.4; charset=utf-8")], text).into_response()
}

async fn reap_idle_sessions(app: std::sync::Weak<App>) {
    loop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let Some(app) = app.upgrade() else { return };
        let idle = app.settings.session_idle;
        let expired: Vec<(String, Arc<HttpSession>)> = {
            let mut sessions = app.sessions.lock().unwrap();
            let ids: Vec<String> = sessions
                .iter()
                .filter(|(_, s)| s.open_streams.load(std::sync::atomic::Ordering::Acquire) == 0 && s.last_seen.lock().unwrap().elapsed() > idle)
                .map(|(id, _)| id.clone())
                .collect();
            ids.into_iter().filter_map(|id| sessions.remove(&id).map(|s| (id, s))).collect()
        };
        for (id, s) in expired {
            tracing::info!(session = %id, "session expired after {idle:?} idle");
            s.events.close();
            s.session.cancel_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::testing::{self, PATIENCE};
    use crate::server::ServerOptions;

    fn settings(addr: SocketAddr) -> HttpSettings {
        HttpSettings {
            addr,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            tokens: Vec::new(),
            max_body: 1 << 20,
            session_idle: Duration::from_secs(60),
            event_buffer: 16,
            max_sessions: 4,
        }
    }

    /// POSTs `body` to `/mcp` on a blocking thread: (status, session id, body).
    async fn post(url: String, body: &'static str) -> (u16, Option<String>, String) {
        tokio::task::spawn_blocking(move || {
            let agent = ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(PATIENCE)).build().new_agent();
            let request = ureq::http::Request::builder()
                .method("POST")
                .uri(url)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .body(body.to_owned())
                .unwrap();
            let response = agent.run(request).expect("POST /mcp");
            let session = response.headers().get(SESSION_HEADER).map(|v| v.to_str().unwrap().to_owned());
            (response.status().as_u16(), session, response.into_body().read_to_string().unwrap())
        })
        .await
        .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn serves_on_a_listener_the_caller_bound_until_shutdown() {
        let host = testing::host(&[], ServerOptions::default()).await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(serve_on(host.clone(), listener, settings("127.0.0.1:0".parse().unwrap()), async move {
            let _ = stopped.await;
        }));
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}"#;
        let (status, session, body) = post(url.clone(), init).await;
        assert_eq!(status, 200, "{body}");
        assert!(session.is_some(), "initialize mints a session");
        assert!(body.contains("\"protocolVersion\""), "{body}");
        let (status, _, body) = post(url, "{nope").await;
        assert_eq!(status, 400, "{body}");
        assert!(body.contains("-32700"), "{body}");
        stop.send(()).unwrap();
        tokio::time::timeout(PATIENCE, served).await.expect("shutdown ends serve").unwrap().unwrap();
        assert_eq!(host.sessions.broadcast(&json!({})), 0, "the HTTP session ended with serve");
    }
}
