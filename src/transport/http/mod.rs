//! MCP over Streamable HTTP (2025-11-25) at `/mcp`, plus `/healthz` (alive), `/readyz` (ready
//! for traffic) and `/metrics`.
//!
//! POST carries one client message. A notification or response is accepted with 202; a
//! request is answered with JSON when its answer is the first thing the session has for it,
//! or with an SSE stream when notifications (progress, logs) come first. GET opens the
//! session's stream of server-initiated messages (task status), resumable with
//! `Last-Event-ID`. DELETE ends the session. Sessions are minted at `initialize`.

mod body;
mod conn;
mod events;
mod guard;
mod modern;
mod resource;
mod streams;
mod tokens;

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
use axum::Extension;
use axum::{Json, Router};
use futures_util::stream::{self, StreamExt};
use serde_json::json;
use tokio::sync::mpsc;

pub use self::body::{closing, read_whole, BodyError};
pub use self::conn::{Acceptor, ConnectionSettings};
use self::events::EventLog;
pub use self::guard::{check_single, parse_tokens, Denied, Guard, HeaderRefusal};
use self::resource::ResourceMetadata;
pub use self::streams::{PeerAddr, StreamSettings};
use self::streams::{StreamClient, StreamSlot, Streams};
pub use self::tokens::Tokens;
use crate::identity::{OAuthSettings, Verifier};
use crate::mcp::jsonrpc::{self, Incoming, Outgoing};
use crate::mcp::modern::Era;
use crate::mcp::types::SUPPORTED_PROTOCOL_VERSIONS;
use crate::mcp::{Method, RequestId, RpcError};
use crate::principal::{Owner, Principal, Wire};
use crate::server::{Host, Outlet, Session};
use crate::telemetry::trace::{Carrier, Inbound, Transport};

const SESSION_HEADER: &str = "mcp-session-id";
/// How long calls cancelled at the end of the shutdown grace, and connections after them, get
/// to stop before `serve` returns anyway.
const WIND_DOWN: Duration = Duration::from_secs(5);
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
    /// The static tokens (holder, token); empty turns them off. Shared with the file's watcher,
    /// which replaces them when the file changes.
    pub tokens: Arc<Tokens>,
    /// The tokens `/metrics` takes instead of the MCP clients' (`--metrics-tokens-file`): a
    /// scraper then holds a credential that cannot call a tool. Empty: `/metrics` is checked
    /// as `/mcp` is.
    pub metrics_tokens: Arc<Tokens>,
    /// The OAuth resource server: trusted issuers, the audience, required scopes.
    pub oauth: Option<OAuthSettings>,
    /// Largest POST body accepted, in bytes.
    pub max_body: usize,
    /// How long a session may go unused (no request, no open stream) before it is ended.
    pub session_idle: Duration,
    /// Server-initiated messages kept per session for `Last-Event-ID` resumption.
    pub event_buffer: usize,
    /// Sessions open at once; `initialize` beyond it is refused with 503.
    pub max_sessions: usize,
    /// The connection cap, timeouts and shutdown grace.
    pub connections: ConnectionSettings,
    /// The bounds on long-lived event streams.
    pub streams: StreamSettings,
}

struct App {
    host: Arc<Host>,
    guard: Guard,
    /// `/metrics`'s own tokens, when it has them.
    metrics_guard: Option<Guard>,
    /// The protected resource metadata and challenges, with OAuth on.
    resource: Option<ResourceMetadata>,
    settings: HttpSettings,
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    /// Fires at shutdown: ends the 2026-07-28 requests still open (listen streams, calls).
    stopping: tokio_util::sync::CancellationToken,
    /// The event streams open now (GET and listen), bounded per client and in all.
    streams: Arc<Streams>,
}

impl App {
    /// A place for one more long-lived stream of the client a request comes from, or the 429
    /// (this client holds its bound) or 503 (streams hold all they may) to answer with.
    // A refusal is the HTTP response itself; boxing it would buy nothing on this cold path.
    #[allow(clippy::result_large_err)]
    fn open_stream_slot(&self, identity: &Option<Principal>, peer: Option<PeerAddr>, id: Option<&crate::mcp::RequestId>) -> Result<StreamSlot, Response> {
        let client = StreamClient::of(identity.clone(), peer);
        self.streams.open(client).map_err(|refusal| {
            let status = match refusal {
                streams::StreamRefusal::Client { .. } => StatusCode::TOO_MANY_REQUESTS,
                streams::StreamRefusal::All { .. } => StatusCode::SERVICE_UNAVAILABLE,
            };
            let error = RpcError::new(jsonrpc::INVALID_REQUEST, refusal.message());
            let mut response = json_message(status, jsonrpc::error_message(id, &error));
            response.headers_mut().insert("retry-after", HeaderValue::from_static("1"));
            response
        })
    }
}

struct HttpSession {
    session: Session,
    events: Arc<EventLog>,
    /// Who opened it when authentication is on (a token's holder, an access token's subject):
    /// only the same principal may use it.
    identity: Option<Principal>,
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
struct ChannelOutlet(mpsc::UnboundedSender<Outgoing>);

impl Outlet for ChannelOutlet {
    fn send(&self, message: Outgoing) {
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
/// `shutdown` resolves. Then no connection is accepted, every session's event streams close,
/// and its calls in flight get the shutdown grace to finish and answer; those still running
/// are answered with a shutdown error and cancelled. Running tasks are left to the store's
/// recovery. The idle-session reaper stops when this returns.
pub async fn serve_on(
    host: Arc<Host>,
    listener: tokio::net::TcpListener,
    settings: HttpSettings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let addr = listener.local_addr()?;
    let verifier = settings.oauth.clone().map(Verifier::start).transpose().map_err(|e| anyhow::anyhow!("OAuth: {e}"))?;
    let resource = settings.oauth.as_ref().map(ResourceMetadata::new);
    let guard = Guard::sharing(&settings.allowed_hosts, &settings.allowed_origins, settings.tokens.clone(), verifier);
    if !addr.ip().is_loopback() && !guard.auth_enabled() {
        tracing::warn!("listening on {addr} without authentication: anyone who can reach it can run tools");
    }
    let streams = Streams::new(settings.streams.clone(), settings.connections.max_connections);
    let paths = resource.as_ref().map(|r| r.paths.clone()).unwrap_or_default();
    let metrics_guard = (!settings.metrics_tokens.is_empty())
        .then(|| Guard::sharing(&settings.allowed_hosts, &settings.allowed_origins, settings.metrics_tokens.clone(), None));
    let app = Arc::new(App {
        host,
        guard,
        metrics_guard,
        resource,
        settings: settings.clone(),
        sessions: Mutex::new(HashMap::new()),
        stopping: Default::default(),
        streams,
    });
    let _reaper = AbortOnDrop(tokio::spawn(reap_idle_sessions(Arc::downgrade(&app))));
    let mut router = Router::new();
    for path in paths {
        router = router.route(&path, get(resource_metadata));
    }
    let router = router
        .route("/mcp", get(open_stream).post(post_message).delete(end_session))
        .route("/healthz", get(|| async { Json(json!({ "status": "ok" })) }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .layer(DefaultBodyLimit::max(settings.max_body))
        .with_state(app.clone());
    tracing::info!("serving MCP over HTTP at http://{addr}/mcp");
    let acceptor = conn::Acceptor::new(settings.connections.clone());
    acceptor.serve_until(&listener, router, shutdown).await;
    drop(listener);
    tracing::info!("signal received; finishing the calls in flight");
    // Event streams would hold their connections open forever: end them first. Then every
    // session's calls get the grace to answer (the rest are answered with a shutdown error),
    // while each connection closes once its requests are answered.
    let sessions: Vec<Arc<HttpSession>> = app.sessions.lock().unwrap().drain().map(|(_, s)| s).collect();
    for s in &sessions {
        s.events.close();
    }
    // 2026-07-28 requests still open (listen streams, calls waiting for their first message).
    app.stopping.cancel();
    acceptor.stop();
    let grace = settings.connections.shutdown_grace;
    futures_util::future::join_all(sessions.iter().map(|s| s.session.finish(grace, WIND_DOWN))).await;
    for s in &sessions {
        s.session.cancel_all();
    }
    if tokio::time::timeout(WIND_DOWN, acceptor.closed()).await.is_err() {
        tracing::warn!("connections still open {WIND_DOWN:?} after the calls ended; exiting anyway");
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
    let mut response = json_message(status, jsonrpc::error_message(None, &RpcError::new(code, message)));
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert("www-authenticate", HeaderValue::from_static("Bearer realm=\"corral\""));
    }
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        return closing(response);
    }
    response
}

/// The response to refused credentials: the status and challenge the spec asks for (RFC 6750
/// §3, RFC 9728 §5.1 with OAuth on), and a message that says what to do, never why a token failed.
fn deny(app: &App, denied: &Denied) -> Response {
    let message = resource::message(denied);
    match &app.resource {
        Some(resource) => {
            let (status, challenge) = resource.challenge(denied);
            let mut response = resource::with_challenge(refuse(status, message), &challenge);
            if status == StatusCode::SERVICE_UNAVAILABLE {
                response.headers_mut().insert("retry-after", HeaderValue::from_static("5"));
            }
            if let Denied::Throttled { retry_after_secs } = denied {
                response.headers_mut().insert("retry-after", HeaderValue::from(*retry_after_secs));
            }
            response
        }
        None => refuse(StatusCode::UNAUTHORIZED, message),
    }
}

/// RFC 9728 metadata: public, the same for every client.
async fn resource_metadata(State(app): State<Arc<App>>) -> Response {
    match &app.resource {
        Some(resource) => resource.response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// Origin/Host, authentication and protocol version: the checks every method shares.
// A refusal is the HTTP response itself; boxing it would buy nothing on these cold paths.
#[allow(clippy::result_large_err)]
async fn check_headers(app: &App, headers: &HeaderMap, peer: Option<&PeerAddr>) -> Result<Option<Principal>, Response> {
    let identity = check_access(app, headers, peer).await?;
    check_version(headers)?;
    Ok(identity)
}

/// Origin/Host, the announced body size and authentication: what every request passes before
/// its era is known.
// A refusal is the HTTP response itself; boxing it would buy nothing on these cold paths.
#[allow(clippy::result_large_err)]
async fn check_access(app: &App, headers: &HeaderMap, peer: Option<&PeerAddr>) -> Result<Option<Principal>, Response> {
    // Before any header is read: a check must not pass on one copy while the era, the session
    // or the method is decided by another.
    guard::check_single(headers).map_err(|(s, m)| refuse(s, m))?;
    app.guard.check_origin(headers).map_err(|(s, m)| refuse(s, m))?;
    // A body announced larger than `--max-body` is refused before any of it is read.
    let announced = headers.get(axum::http::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(length) = announced.filter(|n| *n > app.settings.max_body as u64) {
        return Err(refuse(StatusCode::PAYLOAD_TOO_LARGE, format!("the body is {length} bytes, over --max-body ({} bytes)", app.settings.max_body)));
    }
    app.guard.authenticate_from(headers, peer.map(|p| p.0.ip())).await.map_err(|denied| deny(app, &denied))
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

/// The whole body, at most `limit` bytes (a chunked body that runs past it is refused with 413),
/// within `timeout` (a body that trickles or stops short is refused with 408).
async fn read_body(body: axum::body::Body, limit: usize, timeout: Duration) -> Result<Bytes, Response> {
    read_whole(body, limit, timeout).await.map_err(|error| match error {
        BodyError::TooLarge { announced: Some(length) } => {
            refuse(StatusCode::PAYLOAD_TOO_LARGE, format!("the body is {length} bytes, over --max-body ({limit} bytes)"))
        }
        BodyError::TooLarge { announced: None } => refuse(StatusCode::PAYLOAD_TOO_LARGE, format!("the body is over --max-body ({limit} bytes)")),
        BodyError::TooSlow => {
            let message = format!("the body did not arrive within --http-body-timeout ({})", humantime::format_duration(timeout));
            closing(refuse(StatusCode::REQUEST_TIMEOUT, message))
        }
        BodyError::Unreadable(e) => refuse(StatusCode::BAD_REQUEST, format!("cannot read the body: {e}")),
    })
}

/// The session named by the request's `Mcp-Session-Id`, if the caller may use it.
// A refusal is the HTTP response itself; boxing it would buy nothing on these cold paths.
#[allow(clippy::result_large_err)]
fn find_session(app: &App, headers: &HeaderMap, identity: &Option<Principal>) -> Result<(String, Arc<HttpSession>), Response> {
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
async fn existing_session(app: &App, headers: &HeaderMap, peer: Option<&PeerAddr>) -> Result<(String, Arc<HttpSession>), Response> {
    let identity = check_headers(app, headers, peer).await?;
    find_session(app, headers, &identity)
}

// A refusal is the HTTP response itself; boxing it would buy nothing on these cold paths.
#[allow(clippy::result_large_err)]
fn new_session(app: &App, identity: Option<Principal>) -> Result<(String, Arc<HttpSession>), Response> {
    let mut sessions = app.sessions.lock().unwrap();
    if sessions.len() >= app.settings.max_sessions {
        return Err(refuse(StatusCode::SERVICE_UNAVAILABLE, format!("too many sessions ({}); end one with DELETE or try later", sessions.len())));
    }
    let id = uuid::Uuid::new_v4().simple().to_string();
    let events = Arc::new(EventLog::new(app.settings.event_buffer));
    // Tasks belong to the authenticated principal when authentication is on, else to the session.
    let principal = identity.clone().unwrap_or_else(|| Principal::Session(id.clone()));
    let owner = Owner::new(principal, Wire::Sessions);
    let inbound = Inbound { transport: Transport::Tcp, session: Some(id.clone()) };
    let session = Session::new(app.host.clone(), events.clone(), owner, inbound);
    let entry = Arc::new(HttpSession { session, events, identity, last_seen: Mutex::new(Instant::now()), open_streams: Default::default() });
    sessions.insert(id.clone(), entry.clone());
    Ok((id, entry))
}

async fn post_message(State(app): State<Arc<App>>, peer: Option<Extension<PeerAddr>>, headers: HeaderMap, body: axum::body::Body) -> Response {
    let identity = match check_access(&app, &headers, peer.as_deref()).await {
        Ok(identity) => identity,
        // Its body stays unread, so hyper closes the connection after the answer, perhaps while
        // the client sends its next request down it: the answer says so first.
        Err(response) => return closing(response),
    };
    // Read only after the headers passed, so a refused request never has its body read.
    let body = match read_body(body, app.settings.max_body, app.settings.connections.body_timeout).await {
        Ok(body) => body,
        Err(response) => return response,
    };
    let Ok(text) = std::str::from_utf8(&body) else {
        let error = RpcError::new(jsonrpc::PARSE_ERROR, "parse error: the body is not UTF-8");
        return json_message(StatusCode::BAD_REQUEST, jsonrpc::error_message(None, &error));
    };
    // One JSON-RPC message per POST; anything else is refused here, before any session sees
    // it. The session gets the message as parsed here: it is parsed once.
    let message = match jsonrpc::parse(text) {
        Ok(message) => message,
        Err(rejected) => return json_message(StatusCode::BAD_REQUEST, jsonrpc::error_message(rejected.id.as_ref(), &rejected.error)),
    };
    // The era is decided here, once per POST, by the body (the version header only backs it up).
    if let Incoming::Request { params, .. } = &message {
        // A request on a live 2025-11-25 session is that session's, whatever version header it sends.
        let header = headers.get(VERSION_HEADER).filter(|_| !headers.contains_key(SESSION_HEADER)).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        if Era::of(params, header.as_deref()) == Era::Modern {
            return modern::post(&app, &headers, identity, peer.map(|Extension(p)| p), message).await;
        }
    }
    // A 2026-07-28 notification outside a session (the TS client 2.4 sends `notifications/cancelled`
    // after closing a listen stream): this era cancels by closing the stream, which has been done.
    if let Incoming::Notification { params, .. } = &message {
        if !headers.contains_key(SESSION_HEADER) && Era::of(params, None) == Era::Modern {
            return StatusCode::ACCEPTED.into_response();
        }
    }
    if let Err(response) = check_version(&headers) {
        return response;
    }
    let (is_initialize, request_id) = match &message {
        Incoming::Request { id, method, .. } => (method == Method::Initialize.as_str(), Some(id.clone())),
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
    let traced = if crate::telemetry::enabled() { Carrier::from_headers(&headers) } else { None };
    session.session.handle_traced(Ok(message), &reply, traced);
    drop(reply);

    let mut response = match answers.recv().await {
        // Cancelled by the client: MCP sends no response.
        None => StatusCode::ACCEPTED.into_response(),
        Some(first) if creates && first.error_code().is_some() => {
            // A failed initialize leaves no session behind.
            app.sessions.lock().unwrap().remove(&session_id);
            return json_message(StatusCode::OK, first);
        }
        Some(first) if first.answers(&request_id) => answer(StatusCode::OK, first),
        Some(first) => events(first, until_answer(answers, request_id, ())).into_response(),
    };
    if creates {
        response.headers_mut().insert(SESSION_HEADER, HeaderValue::from_str(&session_id).expect("session ids are ASCII"));
    }
    response
}

/// A JSON response carrying one answer, with `status`; an answer refused for the principal's
/// call rate is a 429 with `Retry-After` (seconds, from the error's `data.retryAfterSeconds`)
/// whatever the era, so that HTTP clients and proxies back off without reading the body.
fn answer(status: StatusCode, message: Outgoing) -> Response {
    if message.error_code() != Some(jsonrpc::RATE_LIMITED) {
        return json_message(status, message);
    }
    let retry_after = message.retry_after().unwrap_or(1);
    let mut response = json_message(StatusCode::TOO_MANY_REQUESTS, message);
    response.headers_mut().insert("retry-after", HeaderValue::from(retry_after));
    response
}

/// A JSON response carrying `message`'s text as it was serialised.
fn json_message(status: StatusCode, message: Outgoing) -> Response {
    (status, [(axum::http::header::CONTENT_TYPE, HeaderValue::from_static("application/json"))], message.into_text()).into_response()
}

/// A request's messages after the first, as they come, up to and including its response (the
/// response to `id`), as SSE events. `guard` lives as long as the stream: what it ends when
/// dropped (a stateless request's calls) ends when the client stops reading.
fn until_answer<G: Send + 'static>(answers: mpsc::UnboundedReceiver<Outgoing>, id: RequestId, guard: G) -> impl futures_core::Stream<Item = Outgoing> + Send {
    stream::unfold((answers, id, false, guard), |(mut answers, id, done, guard)| async move {
        if done {
            return None;
        }
        let message = answers.recv().await?;
        let done = message.answers(&id);
        Some((message, (answers, id, done, guard)))
    })
}

/// `first`, then `rest`, each message one SSE event.
fn events(
    first: Outgoing,
    rest: impl futures_core::Stream<Item = Outgoing> + Send + 'static,
) -> Sse<impl futures_core::Stream<Item = Result<SseEvent, Infallible>>> {
    let events = stream::once(async move { first }).chain(rest).map(|m| Ok::<_, Infallible>(SseEvent::default().data(m.text())));
    Sse::new(events).keep_alive(KeepAlive::default())
}

async fn open_stream(State(app): State<Arc<App>>, peer: Option<Extension<PeerAddr>>, headers: HeaderMap) -> Response {
    let (_, session) = match existing_session(&app, &headers, peer.as_deref()).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let accept = headers.get("accept").and_then(|v| v.to_str().ok()).unwrap_or("*/*");
    if !accept.contains("text/event-stream") && !accept.contains("*/*") {
        return refuse(StatusCode::NOT_ACCEPTABLE, "GET /mcp opens an event stream: send `Accept: text/event-stream`");
    }
    let slot = match app.open_stream_slot(&session.identity, peer.map(|Extension(p)| p), None) {
        Ok(slot) => slot,
        Err(response) => return response,
    };
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
    // At the end of its lifetime the stream ends; the client reconnects with Last-Event-ID.
    let events = stream::iter(missed).chain(live).take_until(tokio::time::sleep(app.streams.lifetime())).map(move |e| {
        let _open = (&open, &slot);
        Ok::<_, Infallible>(SseEvent::default().id(e.id.to_string()).data(e.message.text()))
    });
    Sse::new(events).keep_alive(KeepAlive::default()).into_response()
}

async fn end_session(State(app): State<Arc<App>>, peer: Option<Extension<PeerAddr>>, headers: HeaderMap) -> Response {
    let (id, session) = match existing_session(&app, &headers, peer.as_deref()).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    app.sessions.lock().unwrap().remove(&id);
    session.events.close();
    session.session.cancel_all();
    tracing::info!(session = %id, "session ended by the client");
    end_tasks(&session).await;
    StatusCode::OK.into_response()
}

/// Without auth a session's tasks belong to the session: once it ends (DELETE, expiry) nothing
/// can reach them, so they are cancelled rather than left to run, and re-run after a restart,
/// for no one. With auth they belong to the token's holder and live on.
async fn end_tasks(session: &HttpSession) {
    if session.identity.is_none() {
        let cancelled = session.session.cancel_tasks().await;
        if cancelled > 0 {
            tracing::info!("cancelled {cancelled} unfinished task(s) of the ended session");
        }
    }
}

/// Readiness, for load balancers and Kubernetes: 200 when the plugins are loaded, the task
/// store answers and shutdown has not begun, else 503; the body names each check. Like
/// `/healthz`, no token: probes carry none, and it says nothing about what is served.
async fn readyz(State(app): State<Arc<App>>) -> Response {
    let readiness = app.host.readiness(app.stopping.is_cancelled()).await;
    let status = if readiness.is_ready() { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, Json(readiness.to_json())).into_response()
}

/// Prometheus metrics: behind the same Host/Origin checks as `/mcp`, and its own tokens when it
/// has them, else the MCP clients'.
async fn metrics(State(app): State<Arc<App>>, peer: Option<Extension<PeerAddr>>, headers: HeaderMap) -> Response {
    match &app.metrics_guard {
        Some(guard) => {
            let checked = guard::check_single(&headers).and_then(|()| guard.check_origin(&headers)).and_then(|()| guard.token_holder(&headers));
            if let Err((status, message)) = checked {
                return refuse(status, message);
            }
        }
        None => {
            if let Err(response) = check_headers(&app, &headers, peer.as_deref()).await {
                return response;
            }
        }
    }
    let mut text = app.host.metrics_text().await;
    if let Some(oauth) = app.guard.oauth() {
        text.push_str(&oauth.metrics_text());
    }
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
            tokio::spawn(async move { end_tasks(&s).await });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::testing::{self, PATIENCE};
    use crate::server::ServerOptions;
    use serde_json::Value;

    fn settings(addr: SocketAddr) -> HttpSettings {
        HttpSettings {
            addr,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            tokens: Default::default(),
            metrics_tokens: Default::default(),
            oauth: None,
            max_body: 1 << 20,
            session_idle: Duration::from_secs(60),
            event_buffer: 16,
            max_sessions: 4,
            connections: ConnectionSettings::default(),
            streams: StreamSettings::default(),
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
        assert_eq!(host.announce_to_all(&crate::server::ListChanged::new("tools")), 0, "the HTTP session ended with serve");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn readyz_names_each_check_and_is_503_once_shutdown_begins() {
        let host = testing::host(&[], ServerOptions::default()).await;
        let settings = settings("127.0.0.1:0".parse().unwrap());
        let guard = Guard::new(&settings.allowed_hosts, &settings.allowed_origins, Vec::new(), None);
        let streams = Streams::new(settings.streams.clone(), settings.connections.max_connections);
        let app =
            Arc::new(App { host, guard, metrics_guard: None, resource: None, settings, sessions: Mutex::default(), stopping: Default::default(), streams });
        let body = |response: Response| async move {
            let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
            serde_json::from_slice::<Value>(&bytes).unwrap()
        };
        let ready = readyz(State(app.clone())).await;
        assert_eq!(ready.status(), StatusCode::OK);
        assert_eq!(body(ready).await["checks"]["not_draining"], json!({ "ok": true }));
        app.stopping.cancel();
        let draining = readyz(State(app)).await;
        assert_eq!(draining.status(), StatusCode::SERVICE_UNAVAILABLE);
        let answer = body(draining).await;
        assert_eq!(answer["status"], "not ready", "{answer}");
        assert_eq!(answer["checks"]["not_draining"]["ok"], false, "{answer}");
        assert_eq!((answer["checks"]["plugins_loaded"]["ok"].as_bool(), answer["checks"]["store_reachable"]["ok"].as_bool()), (Some(true), Some(true)));
    }

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpStream;

    /// A server on a free port with `connections`: its address, and what stops it.
    async fn start(connections: ConnectionSettings) -> (SocketAddr, tokio::sync::oneshot::Sender<()>, tokio::task::JoinHandle<anyhow::Result<()>>) {
        let host = testing::host(&[], ServerOptions::default()).await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let settings = HttpSettings { connections, max_sessions: 100, ..settings(addr) };
        let served = tokio::spawn(serve_on(host, listener, settings, async move {
            let _ = stopped.await;
        }));
        (addr, stop, served)
    }

    const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}"#;

    /// Sends one keep-alive GET /healthz on `stream` and reads its whole answer.
    async fn healthz(stream: &mut TcpStream) -> String {
        stream.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n").await.unwrap();
        let mut answer = Vec::new();
        let mut chunk = [0u8; 1024];
        while !String::from_utf8_lossy(&answer).contains("\"ok\"}") {
            let n = tokio::time::timeout(PATIENCE, stream.read(&mut chunk)).await.expect("an answer").unwrap();
            assert!(n > 0, "closed before answering: {:?}", String::from_utf8_lossy(&answer));
            answer.extend_from_slice(&chunk[..n]);
        }
        String::from_utf8(answer).unwrap()
    }

    /// Reads `stream` until the server closes it; what it sent, and how long that took.
    async fn until_closed(stream: &mut TcpStream) -> (String, Duration) {
        let started = Instant::now();
        let mut all = Vec::new();
        let read = tokio::time::timeout(PATIENCE, stream.read_to_end(&mut all)).await.expect("the server closes the connection");
        if let Err(e) = read {
            assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}");
        }
        (String::from_utf8_lossy(&all).into_owned(), started.elapsed())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_refused_post_says_its_connection_ends() {
        let (addr, stop, _served) = start(ConnectionSettings::default()).await;
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let request = format!(
            "POST /mcp HTTP/1.1\r\nhost: localhost\r\norigin: https://evil.example\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n\r\n{INIT}",
            INIT.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let (answer, _) = until_closed(&mut stream).await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        assert!(answer.to_ascii_lowercase().contains("connection: close"), "{answer}");
        // An accepted one keeps its connection.
        let mut stream = TcpStream::connect(addr).await.unwrap();
        assert!(!healthz(&mut stream).await.to_ascii_lowercase().contains("connection: close"));
        stop.send(()).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn idle_connections_past_the_cap_leave_sessions_and_new_clients_served() {
        let (addr, stop, served) = start(ConnectionSettings { max_connections: 8, ..ConnectionSettings::default() }).await;
        let url = format!("http://{addr}/mcp");
        let (status, session, _) = post(url.clone(), INIT).await;
        assert_eq!(status, 200);
        // An established keep-alive connection, then far more idle sockets than the cap.
        let mut established = TcpStream::connect(addr).await.unwrap();
        assert!(healthz(&mut established).await.starts_with("HTTP/1.1 200"));
        let mut idle = Vec::new();
        for _ in 0..40 {
            idle.push(TcpStream::connect(addr).await.unwrap());
        }
        // A new client is served: the oldest idle sockets made room for it.
        let (status, new_session, body) = post(url.clone(), INIT).await;
        assert_eq!(status, 200, "{body}");
        assert!(new_session.is_some() && new_session != session);
        // The established connection keeps being served, and so does the first session.
        assert!(healthz(&mut established).await.starts_with("HTTP/1.1 200"));
        let session = session.unwrap();
        let ping = tokio::task::spawn_blocking(move || {
            let agent = ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(PATIENCE)).build().new_agent();
            let response = agent
                .post(&url)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .header(SESSION_HEADER, &session)
                .send(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#)
                .unwrap();
            (response.status().as_u16(), response.into_body().read_to_string().unwrap())
        })
        .await
        .unwrap();
        assert_eq!(ping.0, 200, "{}", ping.1);
        // The evicted idle sockets were closed, not left hanging.
        let (_, took) = until_closed(&mut idle[0]).await;
        assert!(took < Duration::from_secs(5), "the oldest idle socket was closed at once: {took:?}");
        stop.send(()).unwrap();
        tokio::time::timeout(PATIENCE, served).await.unwrap().unwrap().unwrap();
    }

    /// A connection from `from` with a request in progress: the GET event stream of `session`,
    /// whose answer never ends (read up to its headers, so the server has taken it). A session
    /// holds one such stream: a newer one ends it.
    async fn busy(addr: SocketAddr, from: &str, session: &str) -> TcpStream {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
        let mut stream = socket.connect(addr).await.unwrap();
        let request = format!(
            "GET /mcp HTTP/1.1\r\nhost: localhost\r\naccept: text/event-stream\r\n{SESSION_HEADER}: {session}\r\nmcp-protocol-version: 2025-11-25\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let mut chunk = [0u8; 1024];
        while !String::from_utf8_lossy(&answer).contains("\r\n\r\n") {
            let n = tokio::time::timeout(PATIENCE, stream.read(&mut chunk)).await.expect("an answer").unwrap();
            assert!(n > 0, "closed before answering: {:?}", String::from_utf8_lossy(&answer));
            answer.extend_from_slice(&chunk[..n]);
        }
        assert!(answer.starts_with(b"HTTP/1.1 200"), "{:?}", String::from_utf8_lossy(&answer));
        stream
    }

    /// A connection with a request in progress: a POST whose body the server has asked for
    /// (`100 Continue`), which never comes.
    async fn busy_post(addr: SocketAddr) -> TcpStream {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let head = "POST /mcp HTTP/1.1\r\nhost: localhost\r\naccept: application/json, text/event-stream\r\ncontent-type: application/json\r\ncontent-length: 100\r\nexpect: 100-continue\r\n\r\n";
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        let mut chunk = [0u8; 256];
        while !String::from_utf8_lossy(&answer).contains("\r\n\r\n") {
            let n = tokio::time::timeout(PATIENCE, stream.read(&mut chunk)).await.expect("an answer").unwrap();
            assert!(n > 0, "closed before answering: {:?}", String::from_utf8_lossy(&answer));
            answer.extend_from_slice(&chunk[..n]);
        }
        assert!(answer.starts_with(b"HTTP/1.1 100 Continue"), "{:?}", String::from_utf8_lossy(&answer));
        stream
    }

    /// A new session's id.
    async fn session(addr: SocketAddr) -> String {
        let (status, session, body) = post(format!("http://{addr}/mcp"), INIT).await;
        assert_eq!(status, 200, "{body}");
        session.unwrap()
    }

    /// A keep-alive connection from `from` that has been answered once and is now between requests.
    async fn idle(addr: SocketAddr, from: &str) -> TcpStream {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind(format!("{from}:0").parse().unwrap()).unwrap();
        let mut stream = socket.connect(addr).await.unwrap();
        assert!(healthz(&mut stream).await.starts_with("HTTP/1.1 200"));
        stream
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn when_every_slot_serves_a_client_a_new_connection_gets_503_at_once() {
        let (addr, stop, served) = start(ConnectionSettings { max_connections: 4, ..ConnectionSettings::default() }).await;
        let mut clients = Vec::new();
        for _ in 0..4 {
            clients.push(busy_post(addr).await);
        }
        let mut refused = TcpStream::connect(addr).await.unwrap();
        let (answer, took) = until_closed(&mut refused).await;
        assert!(answer.starts_with("HTTP/1.1 503 Service Unavailable"), "{answer:?} after {took:?}");
        assert!(answer.contains("too many connections (4); try again later"), "{answer}");
        assert!(took < Duration::from_secs(5), "answered at once, not held: {took:?}");
        // Once a client leaves, a new connection is served again.
        drop(clients.pop());
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut again = TcpStream::connect(addr).await.unwrap();
        assert!(healthz(&mut again).await.starts_with("HTTP/1.1 200"));
        stop.send(()).unwrap();
        tokio::time::timeout(PATIENCE, served).await.unwrap().unwrap().unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn when_every_slot_is_taken_an_idle_keep_alive_makes_room() {
        let (addr, stop, served) = start(ConnectionSettings { max_connections: 4, ..ConnectionSettings::default() }).await;
        let mut kept = Vec::new();
        for _ in 0..4 {
            kept.push(idle(addr, "127.0.0.1").await);
        }
        // Four keep-alives between requests hold every slot: a new client (a probe) is served,
        // and the oldest keep-alive is closed, gracefully, for it.
        let mut probe = TcpStream::connect(addr).await.unwrap();
        assert!(healthz(&mut probe).await.starts_with("HTTP/1.1 200"));
        let (_, took) = until_closed(&mut kept[0]).await;
        assert!(took < Duration::from_secs(5), "the oldest idle keep-alive was closed: {took:?}");
        stop.send(()).unwrap();
        tokio::time::timeout(PATIENCE, served).await.unwrap().unwrap().unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_address_holds_at_most_its_bound_and_others_are_served() {
        let (addr, stop, served) = start(ConnectionSettings { max_connections: 16, per_address: 2, ..ConnectionSettings::default() }).await;
        let sessions = [session(addr).await, session(addr).await];
        // Two streams from 127.0.0.1 hold its bound, both busy: a third connection from it is
        // refused with 429 naming why.
        let streams = [busy(addr, "127.0.0.1", &sessions[0]).await, busy(addr, "127.0.0.1", &sessions[1]).await];
        let mut third = TcpStream::connect(addr).await.unwrap();
        let (answer, _) = until_closed(&mut third).await;
        assert!(answer.starts_with("HTTP/1.1 429 Too Many Requests"), "{answer}");
        assert!(answer.contains("too many connections from your address (2, each busy)"), "{answer}");
        // Another address is served meanwhile.
        let mut other = idle(addr, "127.0.0.2").await;
        assert!(healthz(&mut other).await.starts_with("HTTP/1.1 200"));
        // Its own idle keep-alives make room for its new connections: the oldest is closed.
        let mut first = idle(addr, "127.0.0.2").await;
        let _second = idle(addr, "127.0.0.2").await;
        let (_, took) = until_closed(&mut other).await;
        assert!(took < Duration::from_secs(5), "the address's oldest idle keep-alive was closed: {took:?}");
        assert!(healthz(&mut first).await.starts_with("HTTP/1.1 200"), "the newer ones are served");
        drop(streams);
        stop.send(()).unwrap();
        tokio::time::timeout(PATIENCE, served).await.unwrap().unwrap().unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn slow_headers_a_short_body_and_an_idle_keep_alive_are_cut_off() {
        let connections = ConnectionSettings {
            header_timeout: Duration::from_millis(500),
            body_timeout: Duration::from_millis(500),
            idle_timeout: Duration::from_millis(500),
            ..ConnectionSettings::default()
        };
        let (addr, stop, served) = start(connections).await;
        // Slowloris: a header byte every 100 ms would take 6 s; the connection is closed first.
        let mut slow = TcpStream::connect(addr).await.unwrap();
        let started = Instant::now();
        let headers = b"POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\r\n";
        let mut cut = false;
        for byte in headers {
            if slow.write_all(&[*byte]).await.is_err() {
                cut = true;
                break;
            }
            let mut probe = [0u8; 64];
            if let Ok(Ok(0) | Err(_)) = tokio::time::timeout(Duration::from_millis(100), slow.read(&mut probe)).await {
                cut = true;
                break;
            }
        }
        assert!(cut && started.elapsed() < Duration::from_secs(3), "slow headers were cut off after {:?}", started.elapsed());
        // A body announced as 100 bytes of which 10 come: 408, then the connection closes.
        let mut short = TcpStream::connect(addr).await.unwrap();
        short.write_all(b"POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"jsonrpc\"").await.unwrap();
        let (answer, took) = until_closed(&mut short).await;
        assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
        assert!(answer.contains("the body did not arrive within --http-body-timeout (500ms)"), "{answer}");
        assert!(took < Duration::from_secs(3), "{took:?}");
        // A keep-alive connection with nothing in progress is closed after the idle timeout.
        let mut idle = TcpStream::connect(addr).await.unwrap();
        assert!(healthz(&mut idle).await.starts_with("HTTP/1.1 200"));
        let (_, took) = until_closed(&mut idle).await;
        assert!(took < Duration::from_secs(3), "the idle keep-alive was closed after {took:?}");
        stop.send(()).unwrap();
        tokio::time::timeout(PATIENCE, served).await.unwrap().unwrap().unwrap();
    }

    /// One request with `headers` on a blocking thread: (status, body).
    async fn send(method: &'static str, url: String, headers: Vec<(&'static str, String)>, body: &'static str) -> (u16, String) {
        tokio::task::spawn_blocking(move || {
            let agent = ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(PATIENCE)).build().new_agent();
            let mut request = ureq::http::Request::builder()
                .method(method)
                .uri(url)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json");
            for (name, value) in headers {
                request = request.header(name, value);
            }
            let response = agent.run(request.body(body.to_owned()).unwrap()).expect("a request to /mcp");
            (response.status().as_u16(), response.into_body().read_to_string().unwrap())
        })
        .await
        .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_repeated_header_is_refused_with_400_naming_it_in_both_eras() {
        let (addr, stop, served) = start(ConnectionSettings::default()).await;
        let url = format!("http://{addr}/mcp");
        let modern = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#;
        let version = ("mcp-protocol-version", "2026-07-28".to_owned());
        let (method, name) = (("mcp-method", "tools/call".to_owned()), ("mcp-name", "echo".to_owned()));
        let twice = |(key, value): (&'static str, String), other: &str| vec![(key, value), (key, other.to_owned())];
        let cases = [
            ("Mcp-Name", [twice(name.clone(), "delete_everything"), vec![version.clone(), method.clone()]].concat()),
            ("Mcp-Method", [twice(method.clone(), "tools/list"), vec![version.clone(), name.clone()]].concat()),
            ("MCP-Protocol-Version", [twice(version.clone(), "2025-11-25"), vec![method.clone(), name.clone()]].concat()),
            ("Origin", [twice(("origin", "http://localhost".into()), "http://evil.example.com"), vec![version, method, name]].concat()),
        ];
        for (header, headers) in cases {
            let (status, body) = send("POST", url.clone(), headers, modern).await;
            assert_eq!(status, 400, "two {header}: {body}");
            let answer: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(answer["error"]["message"], format!("more than one {header} header"), "{body}");
        }
        // The 2025-11-25 era: two Origin headers on initialize, two versions on a session's request.
        let origins = vec![("origin", "http://localhost".to_owned()), ("origin", "http://evil.example.com".to_owned())];
        let (status, body) = send("POST", url.clone(), origins, INIT).await;
        assert_eq!((status, body.contains("more than one Origin header")), (400, true), "{body}");
        let (_, session, _) = post(url.clone(), INIT).await;
        let versions = vec![(SESSION_HEADER, session.unwrap()), (VERSION_HEADER, "2025-11-25".to_owned()), (VERSION_HEADER, "2099-01-01".to_owned())];
        let (status, body) = send("POST", url.clone(), versions, r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await;
        assert_eq!((status, body.contains("more than one MCP-Protocol-Version header")), (400, true), "{body}");
        // One of each is served as before.
        let (status, body) = send("POST", url, vec![("origin", "http://localhost".to_owned())], INIT).await;
        assert_eq!(status, 200, "{body}");
        stop.send(()).unwrap();
        tokio::time::timeout(PATIENCE, served).await.unwrap().unwrap().unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn without_auth_a_sessions_tasks_are_cancelled_when_it_ends() {
        use crate::server::testing::fixture::{Fixture, TaskSupport, ToolDef};
        let plugin = Fixture::new().tool(ToolDef::new("spin").body("(loop $l (br $l)) unreachable").task_support(TaskSupport::Optional)).build();
        let host = testing::host(&[("fixture", plugin)], ServerOptions::default()).await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(serve_on(host.clone(), listener, settings("127.0.0.1:0".parse().unwrap()), async move {
            let _ = stopped.await;
        }));
        let (_, session, _) = post(url.clone(), INIT).await;
        let session = session.unwrap();
        let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"spin","arguments":{},"task":{}}}"#;
        let (status, body) = send("POST", url.clone(), vec![(SESSION_HEADER, session.clone())], call).await;
        assert_eq!(status, 200, "{body}");
        let created: Value = serde_json::from_str(&body).unwrap();
        let task = created["result"]["task"]["taskId"].as_str().unwrap().to_owned();
        let owner = format!("session:{session}");
        assert_eq!(host.engine().get(&owner, &task).await.unwrap().status.as_str(), "working");
        let (status, _) = send("DELETE", url, vec![(SESSION_HEADER, session)], "").await;
        assert_eq!(status, 200);
        // Nothing can reach the task any more: it was cancelled, not left running for no one.
        assert_eq!(host.engine().get(&owner, &task).await.unwrap().status.as_str(), "cancelled");
        let deadline = Instant::now() + PATIENCE;
        while host.engine().counts().running > 0 {
            assert!(Instant::now() < deadline, "the cancelled spin stops");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        stop.send(()).unwrap();
        tokio::time::timeout(PATIENCE, served).await.unwrap().unwrap().unwrap();
    }
}
