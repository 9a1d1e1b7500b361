//! Connections to the database: a deadpool pool for the store's calls, and single connections
//! for the jobs that need one of their own (migrations, heartbeats). TLS is rustls with the
//! Mozilla roots, used as the URL's `sslmode` says (`disable`, `prefer` — the default — or
//! `require`).

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use tokio_postgres::Config;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::{describe, redacted};
use crate::tasks::store::{StoreError, StoreResult};

/// How long a new connection may take before the server counts as unreachable.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a call waits for a free pooled connection.
const WAIT_TIMEOUT: Duration = Duration::from_secs(10);

/// A parsed `--db` URL and the TLS connector for it.
#[derive(Clone)]
pub(super) struct Target {
    pub(super) config: Config,
    pub(super) tls: MakeRustlsConnect,
    /// The URL without its password, for every message that names the store.
    pub(super) shown: String,
}

impl Target {
    /// Parses `url`; a malformed one is an error naming it.
    pub(super) fn parse(url: &str) -> StoreResult<Target> {
        let shown = redacted(url);
        let mut config: Config = url.parse().map_err(|e: tokio_postgres::Error| StoreError::Connect { url: shown.clone(), problem: describe(&e) })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("corral");
        }
        Ok(Target { config, tls: tls(), shown })
    }

    /// One connection of its own, driven on a task of the current runtime until dropped.
    pub(super) async fn connect(&self) -> StoreResult<tokio_postgres::Client> {
        let (client, connection) =
            self.config.connect(self.tls.clone()).await.map_err(|e| StoreError::Connect { url: self.shown.clone(), problem: describe(&e) })?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!("task store connection ended: {}", describe(&e));
            }
        });
        Ok(client)
    }

    /// The pool for store calls; connections are made on demand. With `asynchronous`, every
    /// transaction on them commits with `synchronous_commit = off` unless its statement asks for
    /// the flush itself (see [`PgOptions::synchronous_commit`](super::options::PgOptions::synchronous_commit));
    /// the connections of [`Target::connect`] (migrations, `LISTEN`) keep the server's default.
    pub(super) fn pool(&self, max_size: usize, asynchronous: bool) -> StoreResult<Pool> {
        let mut config = self.config.clone();
        if asynchronous {
            let options = match config.get_options() {
                Some(given) => format!("{given} -c synchronous_commit=off"),
                None => "-c synchronous_commit=off".to_owned(),
            };
            config.options(options);
        }
        let manager = Manager::from_config(config, self.tls.clone(), ManagerConfig { recycling_method: RecyclingMethod::Fast });
        Pool::builder(manager)
            .max_size(max_size.max(1))
            .runtime(Runtime::Tokio1)
            .create_timeout(Some(CONNECT_TIMEOUT))
            .wait_timeout(Some(WAIT_TIMEOUT))
            .build()
            .map_err(|e| StoreError::Connect { url: self.shown.clone(), problem: e.to_string() })
    }
}

/// A pooled connection, or the error that says the store is unavailable.
pub(super) async fn get(pool: &Pool) -> StoreResult<Object> {
    pool.get().await.map_err(|e| {
        let problem = match &e {
            deadpool_postgres::PoolError::Backend(e) => describe(e),
            other => other.to_string(),
        };
        StoreError::Unavailable(problem)
    })
}

fn tls() -> MakeRustlsConnect {
    let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    MakeRustlsConnect::new(config)
}
