//! Loading a directory of plugins: manifest, compile, `list-tools`, checks.
//!
//! A plugin either passes every step or is refused whole, with a [`Refusal`] saying why; the
//! other plugins load regardless.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::checks::{check_name, compile_schema};
use super::{stamp, Catalog, Plugin, Refusal, RefusalKind, ToolEntry};
use crate::config::{self, Limits};

use crate::runtime::{CallContext, LoadError, Runtime, Silent, Tool};

/// `list-tools` should answer at once; this bounds a plugin that doesn't.
const LIST_TOOLS_TIMEOUT: Duration = Duration::from_secs(10);

pub struct LoadSettings {
    pub defaults: Limits,
    pub memory_ceiling: u64,
    /// Directories no plugin may be granted write access to (the compile cache).
    pub protected: Vec<PathBuf>,
}

/// Loads every `*.wasm` in `dir`, in file-name order (which decides who keeps a duplicate name).
pub async fn load_dir(dir: &Path, runtime: &Runtime, settings: &LoadSettings) -> anyhow::Result<Catalog> {
    let entries = std::fs::read_dir(dir).map_err(|e| anyhow::anyhow!("cannot read plugin directory {}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "wasm") && p.is_file())
        .collect();
    files.sort();
    let mut catalog = Catalog::default();
    for file in files {
        match load_plugin(&file, runtime, settings, &catalog).await {
            Ok((plugin, tools)) => {
                tracing::info!(plugin = %plugin.name, tools = tools.len(), "loaded {}", file.display());
                for tool in tools {
                    catalog.tools.insert(tool.name.clone(), Arc::new(tool));
                }
                catalog.plugins.push(plugin);
            }
            Err(refusal) => {
                tracing::error!(plugin = %refusal.plugin, kind = ?refusal.kind, "refused: {}", refusal.message);
                catalog.refused.push(refusal);
            }
        }
    }
    Ok(catalog)
}

pub(super) fn plugin_name(file: &Path) -> String {
    file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

pub async fn load_plugin(file: &Path, runtime: &Runtime, settings: &LoadSettings, loaded: &Catalog) -> Result<(Arc<Plugin>, Vec<ToolEntry>), Refusal> {
    let name = plugin_name(file);
    let version = stamp(file);
    let refuse = |kind, tool: Option<&str>, message: String| Refusal {
        stamp: version,
        plugin: name.clone(),
        file: file.to_owned(),
        tool: tool.map(str::to_owned),
        kind,
        message: match tool {
            Some(t) => format!("plugin `{name}`: tool `{t}`: {message}"),
            None => format!("plugin `{name}`: {message}"),
        },
    };

    let manifest = config::plugin_manifest(file, &settings.defaults, settings.memory_ceiling, &settings.protected).map_err(|e| refuse(RefusalKind::InvalidManifest, None, e))?;
    let limits = manifest.limits;
    let bytes = std::fs::read(file).map_err(|e| refuse(RefusalKind::InvalidComponent, None, format!("cannot read {}: {e}", file.display())))?;
    let code = runtime
        .compile(&name, &bytes)
        .map_err(|e| match e {
            LoadError::InvalidComponent(m) => refuse(RefusalKind::InvalidComponent, None, format!("not a valid component: {m}")),
            LoadError::MissingImport(m) => refuse(RefusalKind::MissingImport, None, format!("imports something the host does not provide: {m}")),
        })?
        .with_permissions(manifest.permissions);

    let mut list_limits = limits.clone();
    list_limits.timeout = list_limits.timeout.min(LIST_TOOLS_TIMEOUT);
    let declared = runtime
        .list_tools(&code, CallContext::new(list_limits, Arc::new(Silent)))
        .await
        .map_err(|f| refuse(RefusalKind::ListToolsFailed, None, f.describe("list-tools").replacen("tool `list-tools`", "list-tools", 1)))?;

    let plugin = Arc::new(Plugin {
        name: name.clone(),
        file: file.to_owned(),
        stamp: version,
        code,
        permits: Arc::new(tokio::sync::Semaphore::new(limits.max_concurrency)),
        limits,
    });
    let mut tools: Vec<ToolEntry> = Vec::with_capacity(declared.len());
    for tool in declared {
        let tool_name = tool.name.clone();
        check_name(&tool.name).map_err(|e| refuse(RefusalKind::InvalidToolName, Some(&tool_name), e))?;
        if tools.iter().any(|t| t.name == tool.name) {
            return Err(refuse(RefusalKind::DuplicateTool, Some(&tool_name), "the plugin lists this name twice".into()));
        }
        if let Some(owner) = loaded.tools.get(&tool.name) {
            let message = format!("the name is already taken by plugin `{}`", owner.plugin.name);
            return Err(refuse(RefusalKind::DuplicateTool, Some(&tool_name), message));
        }
        tools.push(check_tool(tool, &plugin).map_err(|e| refuse(RefusalKind::InvalidSchema, Some(&tool_name), e))?);
    }
    Ok((plugin, tools))
}

fn check_tool(tool: Tool, plugin: &Arc<Plugin>) -> Result<ToolEntry, String> {
    let (input_schema, input_validator) = compile_schema(&tool.input_schema, "input")?;
    let (output_schema, output_validator) = match &tool.output_schema {
        Some(text) => {
            let (schema, validator) = compile_schema(text, "output")?;
            (Some(schema), Some(validator))
        }
        None => (None, None),
    };
    Ok(ToolEntry {
        plugin: plugin.clone(),
        name: tool.name,
        title: tool.title,
        description: tool.description,
        input_schema,
        output_schema,
        annotations: tool.annotations,
        task_support: tool.task_support,
        input_validator,
        output_validator,
    })
}
