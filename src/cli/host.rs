//! From validated flags to a running host: the settings each part takes, then the [`Host`].
//!
//! This is the second step of argument handling (ripgrep's `hiargs`): [`super::args`] has
//! checked every flag on its own; what needs several flags at once (`--memory` against
//! `--memory-ceiling`, the default TTL against the longest one, the default cache directory)
//! is decided here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::args::{AdminArgs, AuditArgs, HostArgs, HttpArgs, SecretsFlags, TaskArgs};
use crate::audit::Audit;
use crate::config::{self, Limits};
use crate::identity::{ClientSecret, IntrospectionSettings, IssuerSettings, OAuthSettings, Verifier};
use crate::registry::{load_in_background, plugin_files, LoadSettings, Registry};
use crate::runtime::{EngineSettings, Runtime, RuntimeSettings};
use crate::secrets::Resolver;
use crate::server::{self, Host, ServerOptions, ToolRunner};
use crate::tasks::{is_postgres_url, Durability, Engine, PgOptions, PgStore, ResultQuota, Runners, SqliteStore, TaskSettings, TaskStore};
use crate::transport;

impl HostArgs {
    /// The compile cache directory: `None` with `--no-cache`, or when the default one cannot be
    /// made (a warning says so).
    pub fn cache_dir(&self) -> anyhow::Result<Option<PathBuf>> {
        Ok(compile_cache_dir(self.cache_dir.as_ref(), self.no_cache))
    }

    /// The runtime's settings, with the compile cache in `cache_dir`.
    pub fn runtime_settings(&self, cache_dir: Option<PathBuf>) -> RuntimeSettings {
        RuntimeSettings {
            engine: EngineSettings { memory_ceiling: self.memory_ceiling, max_instances: self.max_instances, compiler: self.compiler },
            epoch_tick: self.epoch_tick,
            max_output: self.max_output,
            cache_dir,
        }
    }

    /// The limits of a plugin whose manifest sets none; refused when `--memory` is above
    /// `--memory-ceiling`.
    pub fn default_limits(&self) -> anyhow::Result<Limits> {
        let limits = Limits {
            timeout: self.timeout,
            task_timeout: self.task_timeout,
            fuel: self.fuel,
            memory: self.memory,
            max_concurrency: self.max_concurrency,
            task_after: None,
            inline_result: self.inline_result_limit,
            ..Limits::default()
        };
        if limits.memory > self.memory_ceiling {
            anyhow::bail!("--memory {} is above --memory-ceiling {}", config::display_size(limits.memory), config::display_size(self.memory_ceiling));
        }
        Ok(limits)
    }
}

impl TaskArgs {
    /// The task engine's settings. A default TTL above the longest allowed is lowered to it.
    pub fn settings(&self) -> TaskSettings {
        TaskSettings {
            max_running: self.max_running,
            max_queued: self.max_queued,
            max_per_owner: self.max_tasks_per_client,
            default_ttl: self.task_ttl.min(self.task_max_ttl),
            max_ttl: self.task_max_ttl,
            poll_interval: self.task_poll_interval,
            reap_every: self.task_reap_every,
            host_expiry: self.host_expiry,
            result_quota: ResultQuota { per_owner: self.max_result_bytes_per_client, total: self.max_result_bytes },
            audit: Audit::off(),
            ..TaskSettings::default()
        }
    }

    /// The task database: `--db`, or `tasks.db` in the per-user data directory.
    pub fn db_path(&self) -> anyhow::Result<PathBuf> {
        super::task_db::task_db(self.db.as_deref())
    }
}

impl SecretsFlags {
    /// What the host resolves secrets with; its vault is opened with the task store. With
    /// `public_url` (`--public-url`), a caller who has not set a secret is sent to a link there.
    pub fn resolver(&self, public_url: Option<&str>) -> Resolver {
        let resolver = Resolver::new(self.secrets_key_file.clone(), self.secrets_dir.clone());
        match public_url {
            Some(url) => resolver.connecting(url, Arc::default()),
            None => resolver,
        }
    }
}

impl AuditArgs {
    /// The audit trail `--audit-log` names (opened now: a path that cannot be written is an
    /// error at start), or none.
    pub fn open(&self) -> anyhow::Result<Audit> {
        match &self.audit_log {
            None => Ok(Audit::off()),
            Some(destination) => Audit::open(destination.clone(), self.audit_arguments).map_err(|e| anyhow::anyhow!("--audit-log {destination}: {e}")),
        }
    }
}

impl HttpArgs {
    /// The OAuth resource server's settings, `None` without `--oauth-issuer`. The OAuth flags
    /// are checked against each other here: each needs an issuer, the issuers they name must be
    /// trusted, and the protected resource needs `--public-url`.
    pub fn oauth_settings(&self) -> anyhow::Result<Option<OAuthSettings>> {
        if self.oauth_issuers.is_empty() {
            let stray = [
                (self.oauth_audience.is_some(), "--oauth-audience"),
                (!self.oauth_extra_audiences.is_empty(), "--oauth-extra-audience"),
                (!self.oauth_relax_typ.is_empty(), "--oauth-relax-typ"),
                (!self.oauth_scopes.is_empty(), "--oauth-scope"),
                (self.oauth_introspection_client.is_some(), "--oauth-introspection-client"),
                (self.oauth_introspection_secret_file.is_some(), "--oauth-introspection-secret-file"),
                (self.oauth_introspection_endpoint.is_some(), "--oauth-introspection-endpoint"),
            ];
            if let Some((_, flag)) = stray.iter().find(|(set, _)| *set) {
                anyhow::bail!("{flag} needs --oauth-issuer (the authorization server whose tokens to trust)");
            }
            return Ok(None);
        }
        let Some(public_url) = &self.public_url else {
            anyhow::bail!("--oauth-issuer needs --public-url: the URL clients reach this host at, which tokens must be issued for");
        };
        let named = self
            .oauth_extra_audiences
            .iter()
            .map(|(issuer, _)| (issuer, "--oauth-extra-audience"))
            .chain(self.oauth_relax_typ.iter().map(|i| (i, "--oauth-relax-typ")));
        for (issuer, flag) in named {
            if !self.oauth_issuers.contains(issuer) {
                anyhow::bail!("{flag} names {issuer}, which is not an --oauth-issuer");
            }
        }
        let resource = format!("{public_url}/mcp");
        let mut issuers: Vec<IssuerSettings> = Vec::new();
        for issuer in &self.oauth_issuers {
            if issuers.iter().any(|known| &known.issuer == issuer) {
                continue;
            }
            issuers.push(IssuerSettings {
                issuer: issuer.clone(),
                extra_audiences: self.oauth_extra_audiences.iter().filter(|(i, _)| i == issuer).map(|(_, a)| a.clone()).collect(),
                relax_typ: self.oauth_relax_typ.contains(issuer),
            });
        }
        let mut required_scopes = self.oauth_scopes.clone();
        required_scopes.dedup();
        let introspection = self.introspection_settings()?;
        Ok(Some(OAuthSettings {
            audience: self.oauth_audience.clone().unwrap_or_else(|| resource.clone()),
            resource,
            issuers,
            required_scopes,
            leeway: self.oauth_leeway,
            fetch_timeout: self.oauth_fetch_timeout,
            refetch_cooldown: self.oauth_refetch_cooldown,
            introspection,
        }))
    }

    /// How opaque tokens are introspected (`None` without `--oauth-introspection-client`): the
    /// client names a trusted issuer and comes with its secret file, read now.
    fn introspection_settings(&self) -> anyhow::Result<Option<IntrospectionSettings>> {
        let Some((issuer, client_id)) = &self.oauth_introspection_client else {
            for (set, flag) in [
                (self.oauth_introspection_secret_file.is_some(), "--oauth-introspection-secret-file"),
                (self.oauth_introspection_endpoint.is_some(), "--oauth-introspection-endpoint"),
            ] {
                if set {
                    anyhow::bail!("{flag} needs --oauth-introspection-client ISSUER=CLIENT_ID (whose tokens to introspect, as which client)");
                }
            }
            return Ok(None);
        };
        if !self.oauth_issuers.contains(issuer) {
            anyhow::bail!("--oauth-introspection-client names {issuer}, which is not an --oauth-issuer");
        }
        let Some(path) = &self.oauth_introspection_secret_file else {
            anyhow::bail!("--oauth-introspection-client needs --oauth-introspection-secret-file: the file holding {client_id}'s client secret");
        };
        super::secret_files::warn_if_others_may_read(path, "--oauth-introspection-secret-file");
        let secret = ClientSecret::read(path).map_err(|e| anyhow::anyhow!("--oauth-introspection-secret-file: {e}"))?;
        Ok(Some(IntrospectionSettings {
            issuer: issuer.clone(),
            client_id: client_id.clone(),
            secret,
            endpoint: self.oauth_introspection_endpoint.clone(),
            max_age: self.oauth_introspection_max_age,
            capacity: self.oauth_introspection_cache,
            rate: self.oauth_introspection_rate,
        }))
    }

    /// The HTTP transport's settings for `addr`, with the tokens read from `--auth-tokens-file`.
    pub fn settings(&self, addr: std::net::SocketAddr) -> anyhow::Result<transport::http::HttpSettings> {
        let mut tokens = Vec::new();
        if let Some(path) = &self.auth_tokens_file {
            super::secret_files::warn_if_others_may_read(path, "--auth-tokens-file");
            let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("--auth-tokens-file {}: {e}", path.display()))?;
            tokens = transport::http::parse_tokens(&text, &path.display().to_string());
            if tokens.is_empty() {
                anyhow::bail!("--auth-tokens-file {} holds no token", path.display());
            }
        }
        let metrics_tokens = match &self.metrics_tokens_file {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("--metrics-tokens-file {}: {e}", path.display()))?;
                let scrapers = transport::http::parse_tokens(&text, &path.display().to_string());
                if scrapers.is_empty() {
                    anyhow::bail!("--metrics-tokens-file {} holds no token", path.display());
                }
                if scrapers.iter().any(|(_, scraper)| tokens.iter().any(|(_, client)| client == scraper)) {
                    anyhow::bail!(
                        "--metrics-tokens-file {} shares a token with --auth-tokens-file: a scraper's token must not be able to call tools",
                        path.display()
                    );
                }
                scrapers
            }
            None => Vec::new(),
        };
        Ok(transport::http::HttpSettings {
            addr,
            allowed_hosts: self.allowed_hosts.clone(),
            allowed_origins: self.allowed_origins.clone(),
            tokens: Arc::new(transport::http::Tokens::new(tokens)),
            metrics_tokens: Arc::new(transport::http::Tokens::new(metrics_tokens)),
            oauth: self.oauth_settings()?,
            max_body: usize::try_from(self.max_body).unwrap_or(usize::MAX),
            session_idle: self.session_idle,
            event_buffer: self.event_buffer,
            max_sessions: self.max_sessions,
            connections: transport::http::ConnectionSettings {
                max_connections: self.max_connections,
                header_timeout: self.http_header_timeout,
                body_timeout: self.http_body_timeout,
                idle_timeout: self.http_idle_timeout,
                per_address: self.max_connections_per_address,
                ..transport::http::ConnectionSettings::default()
            },
            streams: transport::http::StreamSettings { per_client: self.max_streams_per_client, max_lifetime: self.max_stream_lifetime },
        })
    }
}

impl AdminArgs {
    /// The admin listener's settings (`None` without `--admin`): its tokens read from
    /// `--admin-tokens-file`, its OAuth checks from `--admin-public-url` and the MCP listener's
    /// issuers (the token verifier started now: call inside the runtime); `--allowed-host` and
    /// `--allowed-origin` as on the MCP listener.
    pub fn settings(&self, http: &HttpArgs, reload: crate::admin::Reload) -> anyhow::Result<Option<crate::admin::AdminSettings>> {
        let Some(addr) = self.admin else { return Ok(None) };
        let oauth = self.oauth_settings(http)?;
        let tokens = match &self.admin_tokens_file {
            Some(path) => self.read_tokens(path, http)?,
            None if oauth.is_some() => Vec::new(),
            None => anyhow::bail!("--admin needs --admin-tokens-file or --admin-public-url (OAuth): there is no console without authentication"),
        };
        let (verifier, needs) = match oauth {
            Some((checks, needs)) => (Some(Verifier::start(checks).map_err(|e| anyhow::anyhow!("the admin console's OAuth: {e}"))?), Some(needs)),
            None => (None, None),
        };
        let guard = transport::http::Guard::new(&http.allowed_hosts, &http.allowed_origins, tokens, verifier);
        Ok(Some(crate::admin::AdminSettings { addr, guard, oauth: needs, reload }))
    }

    /// How the console checks OAuth access tokens (`None` without `--admin-public-url`): the MCP
    /// listener's issuers and checks, but its own audience, the console's URL, with no extra
    /// audiences (those exist for servers that put a client id in `aud`, which would let an MCP
    /// client's token in), and the console's scope required.
    fn oauth_settings(&self, http: &HttpArgs) -> anyhow::Result<Option<(OAuthSettings, crate::admin::AdminOAuth)>> {
        let Some(url) = &self.admin_public_url else { return Ok(None) };
        let Some(mcp) = http.oauth_settings()? else {
            anyhow::bail!("--admin-public-url needs --oauth-issuer: the authorization servers whose tokens the console trusts");
        };
        let issuers = mcp.issuers.iter().map(|issuer| IssuerSettings { extra_audiences: Vec::new(), ..issuer.clone() }).collect();
        let checks = OAuthSettings { resource: url.clone(), audience: url.clone(), issuers, required_scopes: vec![self.admin_oauth_scope.clone()], ..mcp };
        Ok(Some((checks, crate::admin::AdminOAuth { scope: self.admin_oauth_scope.clone(), group: self.admin_oauth_group.clone() })))
    }

    /// The tokens of `--admin-tokens-file`: at least one, none shared with MCP clients.
    fn read_tokens(&self, path: &Path, http: &HttpArgs) -> anyhow::Result<Vec<(String, String)>> {
        super::secret_files::warn_if_others_may_read(path, "--admin-tokens-file");
        let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("--admin-tokens-file {}: {e}", path.display()))?;
        let tokens = transport::http::parse_tokens(&text, &path.display().to_string());
        if tokens.is_empty() {
            anyhow::bail!("--admin-tokens-file {} holds no token", path.display());
        }
        if let Some(mcp) = &http.auth_tokens_file {
            let shared = std::fs::read_to_string(mcp).map(|t| transport::http::parse_tokens(&t, "")).unwrap_or_default();
            if tokens.iter().any(|(_, admin)| shared.iter().any(|(_, client)| client == admin)) {
                anyhow::bail!(
                    "--admin-tokens-file {} shares a token with --auth-tokens-file: an MCP client must not be able to run the console",
                    path.display()
                );
            }
        }
        Ok(tokens)
    }
}

/// What the console's reload button does: reloads every plugin of `dir` whose files changed
/// (and those that appeared or went away), as the watcher would; one reload at a time.
pub fn reloader(dir: PathBuf, host: &Arc<Host>, load: Arc<LoadSettings>) -> crate::admin::Reload {
    let (registry, runtime) = (host.registry().clone(), host.runtime().clone());
    let one_at_a_time = Arc::new(tokio::sync::Mutex::new(()));
    Arc::new(move || {
        let (dir, registry, runtime, load, lock) = (dir.clone(), registry.clone(), runtime.clone(), load.clone(), one_at_a_time.clone());
        let reload: futures_util::future::BoxFuture<'static, bool> = Box::pin(async move {
            let _turn = lock.lock().await;
            let catalog = registry.snapshot();
            let mut names: std::collections::BTreeSet<String> = catalog.plugins.iter().map(|p| p.name.clone()).collect();
            names.extend(catalog.refused.iter().map(|r| r.plugin.clone()));
            match plugin_files(&dir) {
                Ok(files) => names.extend(files.iter().filter_map(|f| f.file_stem()).map(|s| s.to_string_lossy().into_owned())),
                Err(e) => tracing::warn!("reload: {e:#}"),
            }
            crate::registry::reload(&registry, &dir, &names, &runtime, &load).await
        });
        reload
    })
}

/// A host for one local command (`tools`, `call`): its tasks, if any, live in memory. Its
/// plugins are loaded when this returns.
pub async fn build_local_host(args: &HostArgs) -> anyhow::Result<Arc<Host>> {
    let host = build_host(args, ServerOptions::default(), Path::new(":memory:"), Durability::Process, TaskSettings::default()).await?.0;
    host.registry().loaded().await;
    Ok(host)
}

/// The task store `--db` names (a PostgreSQL URL, or a SQLite file), and this host as one of
/// its runners.
async fn open_store(db: &Path, durability: Durability, tasks: &TaskSettings) -> anyhow::Result<(Arc<dyn TaskStore>, Runners)> {
    if let Some(url) = db.to_str().filter(|db| is_postgres_url(db)) {
        let runners = Runners::shared();
        // A connection per worker, plus room for admissions and polls.
        let max_connections = (tasks.max_running * 2).clamp(8, 64);
        let options = PgOptions {
            host_expiry: tasks.host_expiry,
            max_connections,
            // Counted in the database too, so the caps hold across replicas.
            max_queued: Some(tasks.max_queued),
            max_per_owner: Some(tasks.max_per_owner),
            // `--db-sync process` (the default): admissions as durable as the SQLite store's default.
            synchronous_commit: durability == Durability::Power,
            ..PgOptions::new(url, runners.id())
        };
        let store = PgStore::open(options).await.map_err(|e| anyhow::anyhow!("{e:#}"))?;
        return Ok((Arc::new(store), runners));
    }
    let store = SqliteStore::open(db, durability)
        .map_err(|e| anyhow::anyhow!("{e:#} (choose another file with --db PATH, or --db :memory: to keep tasks in memory)"))?;
    let runners = Runners::register(db).map_err(|e| anyhow::anyhow!("task store {}: cannot register this host: {e}", db.display()))?;
    Ok((Arc::new(store), runners))
}

/// Starts loading the plugin directory and starts the task engine: everything a session needs.
/// The plugins load in the background (`registry::load_in_background`), so the host can answer
/// `initialize` at once; an unreadable plugin directory is still an error here.
pub async fn build_host(
    args: &HostArgs,
    options: ServerOptions,
    db: &Path,
    durability: Durability,
    tasks: TaskSettings,
) -> anyhow::Result<(Arc<Host>, Arc<LoadSettings>)> {
    let files = plugin_files(&args.plugins)?;
    let (host, load) = build_host_unloaded(args, options, db, durability, tasks).await?;
    load_in_background(args.plugins.clone(), files, host.runtime().clone(), load.clone(), host.registry().clone())
        .map_err(|e| anyhow::anyhow!("cannot start a thread to load the plugins: {e}"))?;
    Ok((host, load))
}

/// A host whose registry is still loading: requests that need the plugins wait (`--load-wait`)
/// until the caller starts the first load (`registry::load_in_background`), e.g. once
/// `corral dev` has built them.
pub async fn build_host_unloaded(
    args: &HostArgs,
    options: ServerOptions,
    db: &Path,
    durability: Durability,
    tasks: TaskSettings,
) -> anyhow::Result<(Arc<Host>, Arc<LoadSettings>)> {
    let defaults = args.default_limits()?;
    let cache_dir = args.cache_dir()?;
    let runtime = Runtime::new(args.runtime_settings(cache_dir.clone()))?;
    // The cache exists now (the runtime created it), so it can be canonicalized.
    let protected = cache_dir.iter().filter_map(|d| d.canonicalize().ok()).collect();
    let load = Arc::new(LoadSettings { defaults, memory_ceiling: args.memory_ceiling, protected });
    let runtime = Arc::new(runtime);
    let registry = Arc::new(Registry::loading(args.load_wait));
    let (store, runners) = open_store(db, durability, &tasks).await?;
    // Caller secrets live in the task store: opened here, where the store is, and refused when
    // it holds secrets another key sealed.
    let secrets = Arc::new((*options.secrets).clone().over(store.clone().secret_rows()).await.map_err(|e| anyhow::anyhow!("--secrets-key-file: {e}"))?);
    let options = ServerOptions { secrets: secrets.clone(), ..options };
    let metrics = Arc::new(server::Metrics::default());
    metrics.set_build(env!("CARGO_PKG_VERSION"), env!("CORRAL_COMMIT"));
    let runner = ToolRunner::new(registry.clone(), runtime.clone(), metrics.clone()).auditing(options.audit.clone()).resolving(secrets);
    // Stopped by `Engine::shutdown` once the transport has returned (or when the host is dropped).
    let engine = Engine::start(store, runners, tasks, Arc::new(runner.clone()), runtime.waker(), tokio_util::sync::CancellationToken::new()).await?;
    let host = Arc::new(Host::new(registry, runtime, engine, options, metrics, runner));
    Ok((host, load))
}

/// The compile cache of `--cache-dir DIR` / `--no-cache`: the directory given, none, or the
/// per-user default (created owner-only; none, with a warning, where it cannot be made).
pub fn compile_cache_dir(dir: Option<&PathBuf>, no_cache: bool) -> Option<PathBuf> {
    if no_cache {
        return None;
    }
    match dir {
        Some(dir) => Some(dir.clone()),
        // The default is a convenience: where it cannot be made, corral compiles every time.
        None => match dirs::cache_dir().map(|base| base.join("corral")) {
            Some(dir) => match std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700).create(&dir) {
                Ok(()) => Some(dir),
                Err(e) => {
                    tracing::warn!("no compile cache: cannot create {}: {e} (pass --cache-dir DIR)", dir.display());
                    None
                }
            },
            None => {
                tracing::warn!("no compile cache: no per-user cache directory is known here (pass --cache-dir DIR)");
                None
            }
        },
    }
}
