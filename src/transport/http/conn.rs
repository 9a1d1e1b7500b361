//! Accepting HTTP connections: a cap with a reserve, a bound per address, a header read
//! timeout, an idle keep-alive timeout, and a graceful end.
//!
//! A connection is *fresh* from its accept until its first request's headers have arrived,
//! then *established*. Fresh connections may hold at most `max - reserve` slots, so idle or
//! slow sockets that never send a request (the cheapest attack there is) can never crowd out
//! the clients already being served. When a new connection finds the fresh slots full, the
//! oldest fresh one is closed to make room, so a new client that sends its request promptly
//! still gets in. When every slot is established, the oldest established connection with no
//! request in progress (a keep-alive between requests) is closed gracefully to make room; only
//! when every slot is busy answering is a new one refused, at once, with a 503 written before
//! it is closed.
//!
//! One address (an IPv6 /64 counts as one) may hold at most `per_address` connections: beyond
//! it, its own oldest idle connection is closed for the new one, and when all of its are busy
//! the new one is refused with 429. So one client's keep-alives or streams cannot take the
//! slots other clients and the orchestrator's probes need.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::Router;
use http_body_util::BodyExt;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// How connections are limited.
#[derive(Clone, Debug)]
pub struct ConnectionSettings {
    /// Connections open at once; a quarter of them is kept for established connections.
    pub max_connections: usize,
    /// How long a client gets to send a request's headers, from the first byte of the request
    /// (or from the connection's accept).
    pub header_timeout: Duration,
    /// How long a client gets to send a request's body once its headers are in.
    pub body_timeout: Duration,
    /// A keep-alive connection with no request in progress for this long is closed.
    pub idle_timeout: Duration,
    /// At shutdown: how long calls in flight get to finish and answer.
    pub shutdown_grace: Duration,
    /// Connections one address (an IPv6 /64) may hold at once; 0: no bound (behind a proxy,
    /// whose connections all come from its address).
    pub per_address: usize,
}

impl Default for ConnectionSettings {
    fn default() -> ConnectionSettings {
        ConnectionSettings {
            max_connections: 1024,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(60),
            shutdown_grace: Duration::from_secs(10),
            per_address: 256,
        }
    }
}

/// The connections open now.
struct Table {
    /// Fresh connections by accept order, each with the token that closes it.
    fresh: BTreeMap<u64, CancellationToken>,
    established: usize,
    /// Established connections with no request in progress, by accept order: where each comes
    /// from, and the token that asks it to close.
    idle: BTreeMap<u64, (Option<IpAddr>, CancellationToken)>,
    /// Connections open per address.
    per_address: HashMap<IpAddr, usize>,
    next: u64,
}

impl Table {
    /// Asks the oldest idle connection (of `from`, when given) to close; whether there was one.
    fn reclaim_idle(&mut self, from: Option<IpAddr>) -> bool {
        let found = self.idle.iter().find(|(_, (address, _))| from.is_none() || *address == from).map(|(id, _)| *id);
        match found.and_then(|id| self.idle.remove(&id)) {
            Some((_, close)) => {
                close.cancel();
                true
            }
            None => false,
        }
    }
}

/// Accepts connections for one server and tracks them until they close.
pub struct Acceptor {
    settings: ConnectionSettings,
    /// What sets the cap, as a refusal's log line names it.
    cap: &'static str,
    table: Arc<Mutex<Table>>,
    connections: TaskTracker,
    stopping: CancellationToken,
}

/// What to do with a new connection.
enum Admission {
    /// Serve it; `evict` closes it at once while fresh, `reclaim` gracefully once idle.
    Serve { id: u64, evict: CancellationToken, reclaim: CancellationToken },
    /// Every slot is busy answering.
    Refuse,
    /// Its address holds its bound, every one busy.
    RefuseAddress { held: usize },
}

impl Acceptor {
    /// An acceptor with no connection yet.
    pub fn new(settings: ConnectionSettings) -> Acceptor {
        let table = Table { fresh: BTreeMap::new(), established: 0, idle: BTreeMap::new(), per_address: HashMap::new(), next: 0 };
        Acceptor { settings, cap: "--max-connections", table: Arc::new(Mutex::new(table)), connections: TaskTracker::new(), stopping: CancellationToken::new() }
    }

    fn admit(&self, address: Option<IpAddr>) -> Admission {
        let max = self.settings.max_connections.max(1);
        let fresh_limit = (max - max / 4).max(1);
        let mut table = self.table.lock().unwrap();
        if let Some(address) = address.filter(|_| self.settings.per_address > 0) {
            let held = table.per_address.get(&address).copied().unwrap_or(0);
            if held >= self.settings.per_address && !table.reclaim_idle(Some(address)) {
                return Admission::RefuseAddress { held };
            }
        }
        if table.fresh.len() >= fresh_limit || table.fresh.len() + table.established >= max {
            match table.fresh.pop_first() {
                Some((_, oldest)) => oldest.cancel(),
                // A reclaimed connection keeps its slot until it has closed: for that moment
                // the table holds one more than `max`.
                None if table.reclaim_idle(None) => {}
                None => return Admission::Refuse,
            }
        }
        let (id, evict, reclaim) = (table.next, CancellationToken::new(), CancellationToken::new());
        table.next += 1;
        table.fresh.insert(id, evict.clone());
        if let Some(address) = address {
            *table.per_address.entry(address).or_insert(0) += 1;
        }
        Admission::Serve { id, evict, reclaim }
    }

    /// The same, its cap set by `cap` (what a refusal's log line names).
    pub fn capped_by(self, cap: &'static str) -> Acceptor {
        Acceptor { cap, ..self }
    }

    /// Serves `stream` with `router`, or refuses it at once when every slot is established.
    pub fn accept(&self, stream: TcpStream, router: Router) {
        let peer = stream.peer_addr().ok().map(super::PeerAddr);
        let address = peer.map(|super::PeerAddr(addr)| crate::principal::client_address(addr.ip()));
        let (id, evict, reclaim) = match self.admit(address) {
            Admission::Serve { id, evict, reclaim } => (id, evict, reclaim),
            Admission::Refuse => return refuse(stream, self.settings.max_connections, self.cap),
            Admission::RefuseAddress { held } => return refuse_address(stream, held, address),
        };
        let activity = Arc::new(Activity { in_progress: AtomicUsize::new(0), last: Mutex::new(Instant::now()) });
        let state =
            Arc::new(ConnState { id, address, reclaim: reclaim.clone(), table: self.table.clone(), established: std::sync::atomic::AtomicBool::new(false) });
        let service = {
            let (activity, state) = (activity.clone(), state.clone());
            hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
                state.establish();
                if let Some(peer) = peer {
                    request.extensions_mut().insert(peer);
                }
                let busy = Busy::new(activity.clone(), state.clone());
                let mut router = router.clone();
                async move {
                    let response = tower_service::Service::call(&mut router, request.map(Body::new)).await?;
                    // The request is in progress until its response body is done (an SSE
                    // stream included), so the idle timeout never closes a live answer.
                    Ok::<_, std::convert::Infallible>(response.map(move |body| {
                        Body::new(body.map_frame(move |frame| {
                            let _busy = &busy;
                            frame
                        }))
                    }))
                }
            })
        };
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder.timer(TokioTimer::new()).header_read_timeout(self.settings.header_timeout);
        let (idle, stopping) = (self.settings.idle_timeout, self.stopping.clone());
        self.connections.spawn(async move {
            let connection = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            let mut closing = false;
            loop {
                tokio::select! {
                    served = connection.as_mut() => {
                        if let Err(e) = served {
                            tracing::debug!("connection ended: {e}");
                        }
                        break;
                    }
                    _ = evict.cancelled() => {
                        tracing::debug!("closed a connection that sent no request, to make room for a new one");
                        break;
                    }
                    _ = reclaim.cancelled(), if !closing => {
                        tracing::debug!("closing a keep-alive connection between requests, to make room for a new one");
                        connection.as_mut().graceful_shutdown();
                        closing = true;
                    }
                    _ = stopping.cancelled(), if !closing => {
                        connection.as_mut().graceful_shutdown();
                        closing = true;
                    }
                    _ = activity.idle_for(idle), if !closing => {
                        tracing::debug!("closed a connection idle for {idle:?}");
                        connection.as_mut().graceful_shutdown();
                        closing = true;
                    }
                }
            }
            drop(state);
        });
    }

    /// Accepts connections from `listener` for `router` until `shutdown` resolves.
    pub async fn serve_until(&self, listener: &TcpListener, router: Router, shutdown: impl Future<Output = ()>) {
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => self.accept(stream, router.clone()),
                    // Out of file descriptors or the like: back off a moment rather than spin.
                    Err(e) => {
                        tracing::warn!("accepting a connection failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                _ = &mut shutdown => return,
            }
        }
    }

    /// Asks every connection to finish: each closes once its requests in progress have been
    /// answered.
    pub fn stop(&self) {
        self.stopping.cancel();
        self.connections.close();
    }

    /// Waits until every connection has closed.
    pub async fn closed(&self) {
        self.connections.wait().await;
    }
}

/// Writes a 503 to a connection over the cap and closes it, without reading a byte.
fn refuse(stream: TcpStream, max: usize, cap: &str) {
    tracing::warn!("refused a connection: {max} connections are open, every one serving a client ({cap})");
    let body = json!({ "jsonrpc": "2.0", "id": null, "error": { "code": crate::mcp::jsonrpc::INVALID_REQUEST, "message": format!("too many connections ({max}); try again later") } }).to_string();
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\nretry-after: 1\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    // The socket's send buffer is empty: one non-blocking write takes the whole answer.
    let _ = stream.try_write(response.as_bytes());
}

/// A connection over its address's bound: a 429 written before it is closed, unread.
fn refuse_address(stream: TcpStream, held: usize, address: Option<IpAddr>) {
    let from = address.map_or_else(String::new, |a| format!(" from {a}"));
    tracing::warn!("refused a connection{from}: that address holds {held} connections, every one serving it (--max-connections-per-address)");
    let message = format!("too many connections from your address ({held}, each busy); close one or try again later");
    let body = json!({ "jsonrpc": "2.0", "id": null, "error": { "code": crate::mcp::jsonrpc::INVALID_REQUEST, "message": message } }).to_string();
    let response = format!(
        "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nconnection: close\r\nretry-after: 1\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.try_write(response.as_bytes());
}

/// One connection's place in the [`Table`].
struct ConnState {
    id: u64,
    address: Option<IpAddr>,
    /// Asks it to close gracefully (it was idle when room was needed).
    reclaim: CancellationToken,
    table: Arc<Mutex<Table>>,
    established: std::sync::atomic::AtomicBool,
}

impl ConnState {
    /// The first request's headers arrived: the connection leaves the fresh slots.
    fn establish(&self) {
        if !self.established.swap(true, Ordering::AcqRel) {
            let mut table = self.table.lock().unwrap();
            table.fresh.remove(&self.id);
            table.established += 1;
        }
    }

    /// It has no request in progress now (`true`), or has one again.
    fn set_idle(&self, idle: bool) {
        let mut table = self.table.lock().unwrap();
        match idle {
            true if !self.reclaim.is_cancelled() => drop(table.idle.insert(self.id, (self.address, self.reclaim.clone()))),
            _ => drop(table.idle.remove(&self.id)),
        }
    }
}

impl Drop for ConnState {
    fn drop(&mut self) {
        let mut table = self.table.lock().unwrap();
        match self.established.load(Ordering::Acquire) {
            true => table.established -= 1,
            false => drop(table.fresh.remove(&self.id)),
        }
        table.idle.remove(&self.id);
        if let Some(address) = self.address {
            if let Some(held) = table.per_address.get_mut(&address) {
                *held -= 1;
                if *held == 0 {
                    table.per_address.remove(&address);
                }
            }
        }
    }
}

/// Whether a connection has a request in progress, and since when it has had none.
struct Activity {
    in_progress: AtomicUsize,
    last: Mutex<Instant>,
}

impl Activity {
    /// Resolves once the connection has had no request in progress for `idle`.
    async fn idle_for(&self, idle: Duration) {
        loop {
            let since = *self.last.lock().unwrap();
            let quiet = self.in_progress.load(Ordering::Acquire) == 0;
            if quiet && since.elapsed() >= idle {
                return;
            }
            let wake = if quiet { since + idle } else { Instant::now() + idle };
            tokio::time::sleep_until(wake.into()).await;
        }
    }
}

/// A request in progress, from its headers to the end of its response body.
struct Busy(Arc<Activity>, Arc<ConnState>);

impl Busy {
    fn new(activity: Arc<Activity>, state: Arc<ConnState>) -> Busy {
        if activity.in_progress.fetch_add(1, Ordering::AcqRel) == 0 {
            state.set_idle(false);
        }
        Busy(activity, state)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        *self.0.last.lock().unwrap() = Instant::now();
        if self.0.in_progress.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.1.set_idle(true);
        }
    }
}
