//! `corral serve`: build the host, watch the plugins if asked, and serve MCP over stdio or HTTP.

use std::process::ExitCode;

use super::args::ServeArgs;
use super::host::build_host;
use crate::registry::Watcher;
use crate::server::{self, ServerOptions};
use crate::transport;

/// Runs until the transport ends (stdin closes, or a shutdown signal arrives).
pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    raise_open_files();
    let durability = args.tasks.db_sync.into();
    let db = args.tasks.db_path()?;
    let state_secret = args.state_secret.clone().or_else(|| args.state_secret_file.clone()).unwrap_or_else(|| {
        tracing::debug!("2026-07-28 requestStates are signed with a random key of this process (--state-secret-file shares one across replicas)");
        server::StateSecret::random()
    });
    let options = ServerOptions { page_size: args.page_size, list_changed: args.watch, task_after: args.task_after, state_secret };
    let (host, load) = build_host(&args.host, options, &db, durability, args.tasks.settings()).await?;
    tracing::info!("tasks are kept in {}", crate::tasks::redacted(&db.display().to_string()));
    server::announce_changes(&host);
    let _watcher: Option<Watcher> = match args.watch {
        true => Some(crate::registry::watch(&args.host.plugins, host.registry().clone(), host.runtime().clone(), load)?),
        false => None,
    };
    let serving = host.clone();
    match args.http.http {
        Some(addr) => {
            let mut settings = args.http.settings(addr)?;
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
            transport::stdio::serve_with(serving, std::io::stdin(), std::io::stdout(), settings, transport::shutdown_signal()).await?
        }
    }
    host.shutdown().await;
    Ok(ExitCode::SUCCESS)
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
