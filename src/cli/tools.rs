//! `corral tools`: the tools the plugins offer, with their task policy and limits, as a table or
//! as JSON (with the refused plugins and why).

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;

use super::args::ToolsArgs;
use super::host::build_local_host;
use crate::config;
use crate::registry::Catalog;
use crate::server;

/// Loads the plugins and prints what they offer.
pub async fn run(args: ToolsArgs) -> anyhow::Result<ExitCode> {
    let host = build_local_host(&args.host).await?;
    let catalog = host.registry().snapshot();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&tools_json(&catalog))?);
    } else {
        print_tools_table(&catalog, &mut std::io::stdout().lock())?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The catalog as `corral tools --json` prints it: each plugin with its limits, permissions and
/// tools, then the refused plugins.
pub fn tools_json(catalog: &Catalog) -> serde_json::Value {
    let plugins: Vec<serde_json::Value> = catalog
        .plugins
        .iter()
        .map(|p| {
            let tools: Vec<_> = catalog.tools.values().filter(|t| t.plugin.name == p.name).map(tool_json).collect();
            let resources: Vec<_> = catalog.resources.values().filter(|r| r.plugin.name == p.name).map(|r| &r.resource.uri).collect();
            let templates: Vec<_> = catalog.templates.values().filter(|r| r.plugin.name == p.name).map(|r| &r.template.uri_template).collect();
            let prompts: Vec<_> = catalog.prompts.values().filter(|r| r.plugin.name == p.name).map(|r| &r.prompt.name).collect();
            serde_json::json!({
                "name": p.name,
                "file": p.file,
                "contract": p.code.contract().as_str(),
                "resources": resources,
                "resourceTemplates": templates,
                "prompts": prompts,
                "limits": {
                    "timeoutMs": p.limits.timeout.as_millis() as u64,
                    "fuel": p.limits.fuel,
                    "memoryBytes": p.limits.memory,
                    "maxConcurrency": p.limits.max_concurrency,
                },
                "permissions": p.code.permissions().to_json(),
                "tools": tools,
            })
        })
        .collect();
    serde_json::json!({ "plugins": plugins, "refused": catalog.refused })
}

/// A tool as listed, plus the plugin's own name for it when a namespace changed it.
fn tool_json(t: &Arc<crate::registry::ToolEntry>) -> serde_json::Value {
    let mut value = serde_json::to_value(server::list_entry(t)).unwrap_or_default();
    if t.own_name != t.name {
        value["pluginToolName"] = serde_json::Value::String(t.own_name.clone());
    }
    value
}

/// The catalog as `corral tools` prints it: one aligned row per tool, then a line per plugin's
/// permissions and per refused plugin.
pub fn print_tools_table(catalog: &Catalog, out: &mut impl Write) -> std::io::Result<()> {
    let rows: Vec<[String; 7]> = catalog
        .tools
        .values()
        .map(|t| {
            let l = &t.plugin.limits;
            [
                // A namespaced tool shows the plugin's own name too.
                if t.own_name == t.name { t.name.clone() } else { format!("{} ({})", t.name, t.own_name) },
                t.plugin.name.clone(),
                server::list_entry(t).execution.task_support.as_str().to_owned(),
                humantime::format_duration(l.timeout).to_string(),
                l.fuel.to_string(),
                config::display_size(l.memory),
                l.max_concurrency.to_string(),
            ]
        })
        .collect();
    let header = ["TOOL", "PLUGIN", "TASKS", "TIMEOUT", "FUEL", "MEMORY", "CONCURRENCY"].map(String::from);
    let mut widths = header.clone().map(|h| h.len());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row.iter().zip(widths).map(|(c, w)| format!("{c:<w$}")).collect();
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    for p in &catalog.plugins {
        writeln!(out, "plugin {}: {}", p.name, p.code.permissions().summary())?;
    }
    for r in &catalog.refused {
        writeln!(out, "refused {}: {} ({})", r.file.display(), r.message, serde_json::to_value(r.kind).unwrap().as_str().unwrap_or(""))?;
    }
    Ok(())
}
