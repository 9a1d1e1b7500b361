//! `corral call TOOL [ARGUMENTS]`: one call through the same path a client's `tools/call` takes.

use std::process::ExitCode;
use std::sync::Arc;

use super::args::CallArgs;
use super::host::build_local_host;
use crate::runtime::{CallContext, Silent};
use crate::server;

/// Prints the tool's result as JSON; exits 1 when the tool reports an error.
pub async fn run(args: CallArgs) -> anyhow::Result<ExitCode> {
    let arguments: serde_json::Value = serde_json::from_str(&args.arguments).map_err(|e| anyhow::anyhow!("ARGUMENTS is not JSON: {e}"))?;
    let host = build_local_host(&args.host).await?;
    let result = server::call_tool_once(&host, &args.tool, arguments, |entry| CallContext::new(entry.plugin.limits.clone(), Arc::new(Silent)))
        .await
        .map_err(|e| anyhow::anyhow!("{}", e.message))?;
    println!("{}", serde_json::to_string_pretty(&result)?);
    Ok(if result.is_error { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
