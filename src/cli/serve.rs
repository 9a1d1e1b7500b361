//! `corral serve`: build the host, watch the plugins if asked, and serve MCP over stdio or HTTP.

use std::process::ExitCode;

use super::args::ServeArgs;
use super::host::build_host;
use crate::registry::Watcher;
use crate::server::{self, ServerOptions};
use crate::transport;

/// Runs until the transport ends (stdin closes, or a shutdown signal arrives).
pub async fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let durability = args.tasks.db_sync.into();
    let db = args.tasks.db_path()?;
    let options = ServerOptions { page_size: args.page_size, list_changed: args.watch, task_after: args.task_after };
    let (host, load) = build_host(&args.host, options, &db, durability, args.tasks.settings()).await?;
    tracing::info!("tasks are kept in {}", crate::tasks::redacted(&db.display().to_string()));
    server::announce_changes(&host);
    let _watcher: Option<Watcher> = match args.watch {
        true => Some(crate::registry::watch(&args.host.plugins, host.registry.clone(), host.runtime.clone(), load)?),
        false => None,
    };
    let serving = host.clone();
    match args.http.http {
        Some(addr) => transport::http::serve(serving, args.http.settings(addr)?, transport::shutdown_signal()).await?,
        None => transport::stdio::serve(serving, std::io::stdin(), std::io::stdout(), transport::shutdown_signal()).await?,
    }
    host.engine.shutdown().await;
    Ok(ExitCode::SUCCESS)
}
