//! The operator's listener (`corral serve --admin ADDR`): a JSON admin API, its OpenAPI
//! document, live updates as server-sent events, and the web console built on them, embedded
//! in the binary.
//!
//! It is a listener of its own, never the MCP one: its clients are people and their scripts,
//! its authentication is its own tokens file (`--admin-tokens-file`) or OAuth access tokens
//! issued for the console itself (`--admin-public-url`; one of the two is required: there is no
//! unauthenticated console), and a tool call cannot reach it.
//!
//! The console is a protected resource of its own: an access token must name
//! `--admin-public-url` in `aud`, checked by the same code as the MCP listener's (the transport's
//! `Guard` around a token verifier `cli` starts for the console, with the same trusted issuers),
//! and grant `--admin-oauth-scope`. A token
//! issued for the MCP endpoint is refused here whatever scopes it carries, so an MCP client
//! application, which holds such tokens, can never drive the console. It reads the host only through
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
mod throttle;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use crate::server::Host;
use crate::transport::http::{Acceptor, ConnectionSettings, Guard};

/// Connections the admin listener holds at once (a quarter kept for established ones): a
/// console is a few operators' browsers, each with an event stream and a request or two.
const MAX_CONNECTIONS: usize = 256;
/// Connections one address may hold on the admin listener: a quarter, so one client (or
/// someone without a token fetching the page's files) cannot lock the operators out.
const MAX_PER_ADDRESS: usize = 64;

pub use auth::AdminOAuth;
pub use filter::TaskQuery;

/// Reloads the plugins from where the host loaded them; true when what is served changed.
pub type Reload = Arc<dyn Fn() -> BoxFuture<'static, bool> + Send + Sync>;

/// The admin listener's settings, from the flags.
pub struct AdminSettings {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its request checks: `Host`/`Origin` (`--allowed-host`, `--allowed-origin`), the tokens of
    /// `--admin-tokens-file` and, with `--admin-public-url`, the OAuth token check for the
    /// console's audience and scope. It must authenticate somehow: see `cli::host`.
    pub guard: Guard,
    /// What an OAuth access token must grant besides, when the guard checks them.
    pub oauth: Option<AdminOAuth>,
    /// What `POST /api/plugins/reload` does.
    pub reload: Reload,
}

/// What every handler shares.
struct Admin {
    host: Arc<Host>,
    auth: auth::Auth,
    /// Addresses paused after failed sign-ins.
    throttle: throttle::SignInThrottle,
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
    anyhow::ensure!(settings.guard.auth_enabled(), "the admin listener needs a way in: --admin-tokens-file, or OAuth with --admin-public-url");
    let addr = listener.local_addr()?;
    let stopping = CancellationToken::new();
    let hub = Arc::new(events::Hub::default());
    let auth = auth::Auth::new(settings.guard, settings.oauth);
    let admin = Arc::new(Admin {
        host: host.clone(),
        auth,
        throttle: throttle::SignInThrottle::default(),
        hub: hub.clone(),
        reload: settings.reload,
        stopping: stopping.clone(),
    });
    let producer = tokio::spawn(events::produce(host, hub, stopping.clone()));
    if !addr.ip().is_loopback() {
        tracing::warn!("the admin console listens on {addr} over plain HTTP: put TLS in front of it (a reverse proxy) before reaching it over a network");
    }
    tracing::info!("serving the admin console at http://{addr}/");
    let router = api::router(admin);
    // The MCP listener's connection handling: a cap with a reserve, a header timeout, idle
    // keep-alives closed. Without it, sockets that never send a request would hold the admin
    // port's connections — and the process's file descriptors, which the MCP listener shares —
    // for as long as their senders liked.
    let acceptor = Acceptor::new(ConnectionSettings { max_connections: MAX_CONNECTIONS, per_address: MAX_PER_ADDRESS, ..ConnectionSettings::default() })
        .capped_by("the admin listener's cap");
    acceptor.serve_until(&listener, router, shutdown).await;
    drop(listener);
    // The event streams would hold their connections forever: end them, then let the
    // connections finish what they answer.
    stopping.cancel();
    acceptor.stop();
    if tokio::time::timeout(Duration::from_secs(5), acceptor.closed()).await.is_err() {
        tracing::warn!("admin connections still open 5 s after the shutdown began; exiting anyway");
    }
    producer.abort();
    Ok(())
}
