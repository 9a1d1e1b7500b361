//! `corral inspect FILE.wasm`: what a plugin is, what it imports, what tools it offers, and
//! whether the host would serve it.
//!
//! The verdict comes from the host's own loader ([`load_plugin`]), so inspect refuses exactly
//! what `corral serve` would refuse, with the same words.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use serde::Serialize;

use crate::config::{self, Limits};
use crate::mcp::types::Tool;
use crate::registry::{load_plugin, Catalog, LoadSettings, Refusal};
use crate::runtime::{EngineSettings, Interfaces, Runtime, RuntimeSettings};
use crate::server;

use super::args::InspectArgs;

/// The contract's package; the version follows the `@` in the export's name.
const CONTRACT_EXPORT: &str = "corral:plugin/tools@";

/// Everything `inspect` found out about one component.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The component inspected.
    pub file: PathBuf,
    /// Its size on disk.
    pub size_bytes: u64,
    /// `corral:plugin@X.Y.Z` when the component exports the contract's `tools` interface.
    pub contract: Option<String>,
    /// What it imports, each with the permission it needs.
    pub imports: Vec<Import>,
    /// The interfaces it exports.
    pub exports: Vec<String>,
    /// The permissions its imports could use, each once, sorted.
    pub permissions: Vec<&'static str>,
    /// Time to compile and load it (`list-tools` included), in milliseconds.
    pub load_ms: f64,
    /// The limits a call of it gets (manifest over the defaults); `None` when the manifest is refused.
    pub limits: Option<LimitsReport>,
    /// The secrets its manifest declares (`[secrets.NAME]`), by name; `[]` when the manifest is refused.
    pub secrets: Vec<SecretReport>,
    /// Its tools as `list-tools` declares them.
    pub tools: Vec<Tool>,
    /// What a 0.2.0 plugin offers besides tools.
    #[serde(flatten)]
    pub others: Others,
    /// Why the host would refuse it; `None` when it would serve it.
    pub refusal: Option<Refusal>,
}

/// How many resources, resource templates and prompts a 0.2.0 plugin declares.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Others {
    /// Resources with a fixed URI.
    pub resources: usize,
    /// Resource templates.
    pub resource_templates: usize,
    /// Prompts.
    pub prompts: usize,
}

/// One import of the component.
#[derive(Debug, Serialize)]
pub struct Import {
    /// The imported interface, e.g. `wasi:filesystem/types@0.2.6`.
    pub name: String,
    /// The manifest permission without which this import has nothing to work on.
    pub permission: Option<&'static str>,
}

/// One declared secret: what the plugin reads from its environment when the host resolves it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SecretReport {
    /// The variable's name.
    pub name: String,
    /// `caller` (each principal gives their own) or `host` (the operator's, from `--secrets-dir`).
    pub scope: &'static str,
    /// What it is for.
    pub description: String,
    /// Where a person gets one.
    pub help_url: Option<String>,
}

/// The limits of one call, in the units `--json` readers expect.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LimitsReport {
    /// Wall-clock limit of a plain call.
    pub timeout_ms: u64,
    /// Wall-clock limit of a call run as a task.
    pub task_timeout_ms: u64,
    /// Fuel per call.
    pub fuel: u64,
    /// Memory cap per instance.
    pub memory_bytes: u64,
    /// Calls of the plugin that may run at once.
    pub max_concurrency: usize,
    /// How long its `optional` tools run inline for a 2026-07-28 client that declares the tasks
    /// extension (`[limits] task-after`); `null`: the host's `--task-after` decides.
    pub task_after_ms: Option<u64>,
}

/// Runs the command: prints the report, exits 1 when the host would refuse the plugin.
pub async fn run(args: InspectArgs) -> anyhow::Result<ExitCode> {
    let cache_dir = super::host::compile_cache_dir(args.cache_dir.as_ref(), args.no_cache);
    let report = inspect(&args.file, cache_dir).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", render(&report));
    }
    Ok(if report.refusal.is_some() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Loads `file` as `corral serve` would (with the host's default limits, through the compile
/// cache in `cache_dir` when there is one) and reports on it.
pub async fn inspect(file: &std::path::Path, cache_dir: Option<std::path::PathBuf>) -> anyhow::Result<Report> {
    let bytes = std::fs::read(file).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
    let runtime = Runtime::new(RuntimeSettings { cache_dir: cache_dir.clone(), ..RuntimeSettings::default() })?;
    // As for `serve`: no manifest may grant write access to the cache (it exists now).
    let protected = cache_dir.iter().filter_map(|d| d.canonicalize().ok()).collect();
    let settings = LoadSettings { defaults: Limits::default(), memory_ceiling: EngineSettings::default().memory_ceiling, protected };
    let started = Instant::now();
    let loaded = load_plugin(file, &runtime, &settings, &Catalog::default()).await;
    let load_ms = started.elapsed().as_secs_f64() * 1000.0;

    let (interfaces, limits, secrets, tools, others, refusal) = match loaded {
        Ok(loaded) => {
            let tools = loaded.tools.iter().map(server::list_entry).collect();
            let others = Others { resources: loaded.resources.len(), resource_templates: loaded.templates.len(), prompts: loaded.prompts.len() };
            let secrets = loaded.plugin.secrets.iter().map(secret_report).collect();
            (runtime.interfaces_of_plugin(&loaded.plugin.code), Some(limits_report(&loaded.plugin.limits)), secrets, tools, others, None)
        }
        // Refused plugins are compiled again to read their imports, which is often the reason.
        Err(refusal) => (runtime.interfaces_of(&bytes).unwrap_or_default(), None, Vec::new(), Vec::new(), Others::default(), Some(refusal)),
    };
    let imports: Vec<Import> = interfaces.imports.iter().map(|name| Import { name: name.clone(), permission: permission_for(name) }).collect();
    let mut permissions: Vec<&'static str> = imports.iter().filter_map(|i| i.permission).collect();
    permissions.sort();
    permissions.dedup();
    Ok(Report {
        file: file.to_owned(),
        size_bytes: bytes.len() as u64,
        contract: contract_version(&interfaces),
        imports,
        exports: interfaces.exports,
        permissions,
        load_ms,
        limits,
        secrets,
        tools,
        others,
        refusal,
    })
}

/// The manifest permission an import needs before it can reach anything: the host links every
/// WASI 0.2 interface but grants no directory, environment variable or socket by default.
pub fn permission_for(import: &str) -> Option<&'static str> {
    let interface = import.split('@').next().unwrap_or(import);
    if interface.starts_with("wasi:filesystem/") {
        Some("dirs")
    } else if interface == "wasi:cli/environment" {
        Some("env")
    } else if interface.starts_with("wasi:sockets/") || interface.starts_with("wasi:http/") {
        Some("network")
    } else {
        None
    }
}

fn contract_version(interfaces: &Interfaces) -> Option<String> {
    interfaces.exports.iter().find_map(|e| e.strip_prefix(CONTRACT_EXPORT)).map(|v| format!("corral:plugin@{v}"))
}

fn secret_report(s: &config::SecretDecl) -> SecretReport {
    SecretReport { name: s.name.clone(), scope: s.scope.as_str(), description: s.description.clone(), help_url: s.help_url.clone() }
}

fn limits_report(l: &Limits) -> LimitsReport {
    LimitsReport {
        timeout_ms: l.timeout.as_millis() as u64,
        task_timeout_ms: l.task_timeout.as_millis() as u64,
        fuel: l.fuel,
        memory_bytes: l.memory,
        max_concurrency: l.max_concurrency,
        task_after_ms: l.task_after.map(|d| d.as_millis() as u64),
    }
}

/// The report as text for a terminal.
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "file         {} ({}, loaded in {:.0} ms)", r.file.display(), config::display_size(r.size_bytes), r.load_ms);
    let _ = writeln!(out, "contract     {}", r.contract.as_deref().unwrap_or("none: it does not export corral:plugin/tools"));
    for (i, import) in r.imports.iter().enumerate() {
        let label = if i == 0 { "imports" } else { "" };
        match import.permission {
            Some(p) => _ = writeln!(out, "{label:<12} {:<40} sees nothing without permission `{p}`", import.name),
            None => _ = writeln!(out, "{label:<12} {}", import.name),
        }
    }
    if r.imports.is_empty() {
        let _ = writeln!(out, "imports      none");
    }
    let permissions = match r.permissions.is_empty() {
        true => "none needed".to_string(),
        false => format!("{} (granted only by the manifest's [permissions]; the plugin loads and runs without them)", r.permissions.join(", ")),
    };
    let _ = writeln!(out, "permissions  {permissions}");
    if let Some(l) = &r.limits {
        let _ = writeln!(
            out,
            "limits       timeout {}, task timeout {}, fuel {}, memory {}, max concurrency {}, task after {}",
            humantime::format_duration(std::time::Duration::from_millis(l.timeout_ms)),
            humantime::format_duration(std::time::Duration::from_millis(l.task_timeout_ms)),
            l.fuel,
            config::display_size(l.memory_bytes),
            l.max_concurrency,
            match l.task_after_ms {
                Some(ms) => humantime::format_duration(std::time::Duration::from_millis(ms)).to_string(),
                None => "the host's --task-after".to_owned(),
            }
        );
    }
    for (i, secret) in r.secrets.iter().enumerate() {
        let label = if i == 0 { "secrets" } else { "" };
        let help = secret.help_url.as_deref().map(|u| format!(" (get one at {u})")).unwrap_or_default();
        let _ =
            writeln!(out, "{label:<12} {} from the {}: {}{help}", secret.name, if secret.scope == "caller" { "caller" } else { "host" }, secret.description);
    }
    let _ = writeln!(out, "tools        {}", r.tools.len());
    for tool in &r.tools {
        render_tool(&mut out, tool);
    }
    let o = &r.others;
    if o.resources + o.resource_templates + o.prompts > 0 {
        let _ = writeln!(
            out,
            "also         {} resources, {} resource templates, {} prompts (corral tools --json lists them)",
            o.resources, o.resource_templates, o.prompts
        );
    }
    match &r.refusal {
        None => _ = writeln!(out, "verdict      corral would serve it"),
        Some(refusal) => {
            let kind = serde_json::to_value(refusal.kind).ok().and_then(|k| k.as_str().map(str::to_owned)).unwrap_or_default();
            let _ = writeln!(out, "verdict      REFUSED ({kind}): {}", refusal.message);
        }
    }
    out
}

fn render_tool(out: &mut String, tool: &Tool) {
    let title = tool.title.as_deref().map(|t| format!(" \"{t}\"")).unwrap_or_default();
    let _ = writeln!(out, "  {}{title}  task support: {}", tool.name, tool.execution.task_support.as_str());
    let _ = writeln!(out, "    {}", tool.description);
    let a = &tool.annotations;
    let hints: Vec<&str> = [
        (a.read_only_hint, "read-only", "writes"),
        (a.destructive_hint, "destructive", "not destructive"),
        (a.idempotent_hint, "idempotent", "not idempotent"),
        (a.open_world_hint, "open world", "closed world"),
    ]
    .iter()
    .filter_map(|&(hint, yes, no)| hint.map(|h| if h { yes } else { no }))
    .collect();
    if !hints.is_empty() {
        let _ = writeln!(out, "    hints: {}", hints.join(", "));
    }
    let schema = |v: &serde_json::Value| serde_json::to_string_pretty(v).unwrap_or_default().replace('\n', "\n      ");
    let _ = writeln!(out, "    input schema:\n      {}", schema(&tool.input_schema));
    if let Some(output) = &tool.output_schema {
        let _ = writeln!(out, "    output schema:\n      {}", schema(output));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_map_to_the_permissions_they_need() {
        assert_eq!(permission_for("wasi:filesystem/preopens@0.2.9"), Some("dirs"));
        assert_eq!(permission_for("wasi:cli/environment@0.2.6"), Some("env"));
        assert_eq!(permission_for("wasi:sockets/tcp@0.2.0"), Some("network"));
        assert_eq!(permission_for("wasi:http/outgoing-handler@0.2.10"), Some("network"));
        assert_eq!(permission_for("wasi:cli/stdout@0.2.6"), None);
        assert_eq!(permission_for("corral:plugin/host@0.1.0"), None);
    }

    #[test]
    fn the_contract_version_comes_from_the_tools_export() {
        let with = Interfaces { imports: vec![], exports: vec!["corral:plugin/tools@0.1.0".into()] };
        assert_eq!(contract_version(&with).as_deref(), Some("corral:plugin@0.1.0"));
        assert_eq!(contract_version(&Interfaces::default()), None);
    }
}
