//! The operator's listener (`corral serve --admin ADDR`): a JSON admin API, its OpenAPI
//! document, live updates as server-sent events, and the web console built on them, embedded
//! in the binary.
//!
//! It is a listener of its own, never the MCP one: its clients are people and their scripts,
//! its authentication is its own tokens file (`--admin-tokens-file`, required: there is no
//! unauthenticated console), and a tool call cannot reach it. It reads the host only through
//! the views `server::operator` builds, and its one action outside tasks (reloading plugins)
//! is the closure the command that started the host gives it.
//!
//! Every request passes, in order: one copy of each routing header, `Host` and `Origin`
//! (loopback names, `--allowed-host`, `--allowed-origin`: DNS rebinding and cross-site
//! requests), then authentication ([`auth`]), then, for a request that changes something, the
//! CSRF token of a cookie sign-in and a JSON body. The page and its static files are the only
//! things served without a caller, and they hold no data (`/` answers 401 with the sign-in page
//! when there is no sign-in).

mod api;
mod assets;
mod auth;
mod events;
mod filter;
mod refusal;
mod tasks;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::server::Host;
use crate::transport::http::Guard;

pub use filter::TaskFilter;

/// Reloads the plugins from where the host loaded them; true when what is served changed.
pub type Reload = Arc<dyn Fn() -> BoxFuture<'static, bool> + Send + Sync>;

/// The admin listener's settings, from the flags.
#[derive(Clone)]
pub struct AdminSettings {
    /// Where it listens.
    pub addr: SocketAddr,
    /// (name, token) pairs from `--admin-tokens-file`; never empty.
    pub tokens: Vec<(String, String)>,
    /// `Host` names allowed besides the loopback names (`--allowed-host`).
    pub allowed_hosts: Vec<String>,
    /// `Origin`s allowed besides loopback origins (`--allowed-origin`).
    pub allowed_origins: Vec<String>,
    /// What `POST /api/plugins/reload` does.
    pub reload: Reload,
}

/// What every handler shares.
struct Admin {
    host: Arc<Host>,
    auth: auth::Auth,
    hub: Arc<events::Hub>,
    reload: Reload,
    /// Fires at shutdown: ends the event streams, which would hold their connections forever.
    stopping: CancellationToken,
}

/// Listens on `settings.addr` and serves until `shutdown` resolves.
pub async fn serve(host: Arc<Host>, settings: AdminSettings, shutdown: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(settings.addr).await.map_err(|e| anyhow::anyhow!("--admin: cannot listen on {}: {e}", settings.addr))?;
    serve_on(host, listener, settings, shutdown).await
}

/// Serves on a listener the caller bound until `shutdown` resolves.
pub async fn serve_on(
    host: Arc<Host>,
    listener: tokio::net::TcpListener,
    settings: AdminSettings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    anyhow::ensure!(!settings.tokens.is_empty(), "the admin listener needs at least one token (--admin-tokens-file)");
    let addr = listener.local_addr()?;
    let guard = Guard::new(&settings.allowed_hosts, &settings.allowed_origins, settings.tokens.clone(), None);
    let stopping = CancellationToken::new();
    let hub = Arc::new(events::Hub::default());
    let admin = Arc::new(Admin { host: host.clone(), auth: auth::Auth::new(guard), hub: hub.clone(), reload: settings.reload, stopping: stopping.clone() });
    let producer = tokio::spawn(events::produce(host, hub, stopping.clone()));
    if !addr.ip().is_loopback() {
        tracing::warn!("the admin console listens on {addr} over plain HTTP: put TLS in front of it (a reverse proxy) before reaching it over a network");
    }
    tracing::info!("serving the admin console at http://{addr}/");
    let router = api::router(admin);
    let stop = stopping.clone();
    let served = axum::serve(listener, router).with_graceful_shutdown(async move {
        shutdown.await;
        stop.cancel();
    });
    let result = served.await.map_err(|e| anyhow::anyhow!("the admin listener failed: {e}"));
    stopping.cancel();
    producer.abort();
    result
}
