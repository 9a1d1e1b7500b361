//! `corral serve`: build the host, watch the plugins if asked, and serve MCP over stdio or HTTP.

use std::process::ExitCode;
use std::sync::Arc;

use super::args::ServeArgs;
use super::host::build_host;
use crate::policy::Policies;
use crate::registry::Watcher;
use crate::server::{self, ServerOptions};
use crate::transport;

/// One line that says what is starting: the build, how callers are authenticated, the policy
/// and whether traces leave the process; what an operator checks first in a log.
fn starting(args: &ServeArgs) {
    let http = &args.http;
    let auth = match (http.http.is_some(), http.auth_tokens_file.is_some(), !http.oauth_issuers.is_empty()) {
        (false, _, _) => "the local user (stdio)",
        (true, true, true) => "bearer tokens and OAuth",
        (true, true, false) => "bearer tokens",
        (true, false, true) => "OAuth",
        (true, false, false) => "none",
    };
    let policy = args.policy.as_ref().map_or_else(|| "none".to_owned(), |file| file.path.display().to_string());
    let traces = if crate::telemetry::enabled() { "exported" } else { "off" };
    tracing::info!(
        version = env!("CARGO_PKG_VERSION"),
        commit = env!("CORRAL_COMMIT"),
        auth,
        policy = %policy,
        traces,
        "corral {} starting: authentication {auth}, policy {policy}, traces {traces}",
        super::version::SHORT
    );
}

/// Runs until the transport ends (stdin closes, or a shutdown signal arrives).
pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    raise_open_files();
    let durability = args.tasks.db_sync.into();
    let db = args.tasks.db_path()?;
    let state_secret = args.state_secret.clone().or_else(|| args.state_secret_file.clone()).unwrap_or_else(|| {
        tracing::debug!("2026-07-28 requestStates are signed with a random key of this process (--state-secret-file shares one across replicas)");
        server::StateSecret::random()
    });
    let audit = args.audit.open()?;
    let policy = Arc::new(Policies::new(args.policy.as_ref().map(|file| file.policy.clone())));
    let options = ServerOptions {
        page_size: args.page_size,
        list_changed: args.watch,
        task_after: args.task_after,
        state_secret,
        audit: audit.clone(),
        policy: policy.clone(),
        secrets: Arc::new(args.secrets.resolver(args.http.public_url.as_deref())),
    };
    let tasks = crate::tasks::TaskSettings { audit: audit.clone(), shutdown_grace: args.shutdown_grace, ..args.tasks.settings() };
    let (host, load) = build_host(&args.host, options, &db, durability, tasks).await?;
    if let Some(destination) = &args.audit.audit_log {
        tracing::info!("audit trail: {destination}");
        reopen_on_hangup(&host)?;
    }
    tracing::info!("tasks are kept in {}", crate::tasks::redacted(&db.display().to_string()));
    starting(&args);
    server::announce_changes(&host);
    let _watcher: Option<Watcher> = match args.watch {
        true => Some(crate::registry::watch(&args.host.plugins, host.registry().clone(), host.runtime().clone(), load.clone())?),
        false => None,
    };
    let _policy_watcher = match &args.policy {
        Some(file) => Some(crate::policy::watch(&file.path, policy)?),
        None => None,
    };
    // The console stops when the transport has returned (a signal, or the end of stdin).
    let admin_stop = tokio_util::sync::CancellationToken::new();
    let reload = super::host::reloader(args.host.plugins.clone(), &host, load.clone());
    let mut token_watches = Vec::new();
    let admin = match args.admin.settings(&args.http, reload)? {
        Some(settings) => {
            if let Some(path) = &args.admin.admin_tokens_file {
                token_watches.push(super::token_files::watch(path, "--admin-tokens-file", settings.guard.tokens().clone())?);
            }
            let stop = admin_stop.clone();
            let listener =
                tokio::net::TcpListener::bind(settings.addr).await.map_err(|e| anyhow::anyhow!("--admin: cannot listen on {}: {e}", settings.addr))?;
            Some(tokio::spawn(crate::admin::serve_on(host.clone(), listener, settings, async move { stop.cancelled().await })))
        }
        None => None,
    };
    let serving = host.clone();
    match args.http.http {
        Some(addr) => {
            let mut settings = args.http.settings(addr)?;
            if let Some(path) = &args.http.auth_tokens_file {
                token_watches.push(super::token_files::watch(path, "--auth-tokens-file", settings.tokens.clone())?);
            }
            if let Some(path) = &args.http.metrics_tokens_file {
                token_watches.push(super::token_files::watch(path, "--metrics-tokens-file", settings.metrics_tokens.clone())?);
            }
            settings.connections.shutdown_grace = args.shutdown_grace;
            settings.connections.max_connections = fit_open_files(settings.connections.max_connections);
            transport::http::serve(serving, settings, transport::shutdown_signal()).await?
        }
        None => {
            if !args.http.oauth_issuers.is_empty() {
                anyhow::bail!("--oauth-issuer needs --http: over stdio the local user is the only principal");
            }
            let max_line = usize::try_from(args.http.max_body).unwrap_or(usize::MAX);
            let settings = transport::stdio::StdioSettings { max_line, max_in_flight: args.max_in_flight, shutdown_grace: args.shutdown_grace };
            transport::stdio::serve_process(serving, settings, transport::shutdown_signal()).await?
        }
    }
    admin_stop.cancel();
    if let Some(admin) = admin {
        admin.await.map_err(|e| anyhow::anyhow!("the admin listener panicked: {e}"))??;
    }
    host.shutdown().await;
    // Last: the engine's final transitions are in the trail too.
    host.close_audit();
    Ok(ExitCode::SUCCESS)
}

/// Reopens the audit log on every SIGHUP, so a rotated file is let go (logrotate's `create`
/// mode: rename, then signal). Only with `--audit-log`: otherwise SIGHUP keeps its default.
fn reopen_on_hangup(host: &std::sync::Arc<server::Host>) -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hangups = signal(SignalKind::hangup()).map_err(|e| anyhow::anyhow!("cannot install a SIGHUP handler: {e}"))?;
    let host = std::sync::Arc::downgrade(host);
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            let Some(host) = host.upgrade() else { return };
            host.reopen_audit();
        }
    });
    Ok(())
}

/// Raises the open-file soft limit to its hard limit: the common default of 1024 is what a
/// burst of idle connections exhausted.
fn raise_open_files() {
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) => tracing::debug!("open-file limit: {limit}"),
        Err(e) => tracing::warn!("cannot raise the open-file limit: {e}"),
    }
}

/// Files kept for everything but connections: the task store, plugins, the watcher, logs.
const OTHER_FILES: u64 = 128;

/// `max` connections, lowered when the open-file limit could not hold them and the other files.
fn fit_open_files(max: usize) -> usize {
    let Ok((soft, _)) = rlimit::getrlimit(rlimit::Resource::NOFILE) else { return max };
    let room = usize::try_from(soft.saturating_sub(OTHER_FILES).max(1)).unwrap_or(usize::MAX);
    if room < max {
        tracing::warn!("--max-connections {max} lowered to {room}: the open-file limit is {soft}");
    }
    max.min(room)
}
