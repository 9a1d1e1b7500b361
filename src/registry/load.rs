//! Loading a directory of plugins: manifest, compile, `list-tools` (and, for 0.2.0 plugins,
//! `list-resources`, `list-resource-templates`, `list-prompts`), checks.
//!
//! A plugin either passes every step or is refused whole, with a [`Refusal`] saying why; the
//! other plugins load regardless.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::checks::{check_name, check_prompt, compile_schema};
use super::uri::{check_uri, UriTemplate};
use super::{stamp, Catalog, Plugin, PromptEntry, Refusal, RefusalKind, ResourceEntry, TemplateEntry, ToolEntry};
use crate::config::{self, Limits};

use crate::runtime::{CallContext, LoadError, Runtime, Silent, Tool};

/// What one plugin brings to a catalog, checked against the catalog it was loaded beside.
pub struct Loaded {
    pub plugin: Arc<Plugin>,
    pub tools: Vec<ToolEntry>,
    pub resources: Vec<ResourceEntry>,
    pub templates: Vec<TemplateEntry>,
    pub prompts: Vec<PromptEntry>,
}

/// `list-tools` should answer at once; this bounds a plugin that doesn't.
const LIST_TOOLS_TIMEOUT: Duration = Duration::from_secs(10);

pub struct LoadSettings {
    pub defaults: Limits,
    pub memory_ceiling: u64,
    /// Directories no plugin may be granted write access to (the compile cache).
    pub protected: Vec<PathBuf>,
}

/// The plugin files of `dir`: every `*.wasm`, in file-name order.
pub fn plugin_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).map_err(|e| anyhow::anyhow!("cannot read plugin directory {}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> =
        entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "wasm") && p.is_file()).collect();
    files.sort();
    Ok(files)
}

/// Loads every `*.wasm` in `dir`, in file-name order (which decides who keeps a duplicate name).
pub async fn load_dir(dir: &Path, runtime: &Runtime, settings: &LoadSettings) -> anyhow::Result<Catalog> {
    let mut catalog = Catalog::default();
    for file in plugin_files(dir)? {
        match load_plugin(&file, runtime, settings, &catalog).await {
            Ok(loaded) => {
                let p = &loaded.plugin;
                tracing::info!(
                    plugin = %p.name,
                    contract = p.code.contract().as_str(),
                    tools = loaded.tools.len(),
                    resources = loaded.resources.len(),
                    templates = loaded.templates.len(),
                    prompts = loaded.prompts.len(),
                    "loaded {}",
                    file.display()
                );
                catalog.add(loaded);
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

pub async fn load_plugin(file: &Path, runtime: &Runtime, settings: &LoadSettings, loaded: &Catalog) -> Result<Loaded, Refusal> {
    let name = plugin_name(file);
    let version = stamp(file);
    let refuse_about = |kind, subject: Option<String>, tool: Option<&str>, message: String| Refusal {
        stamp: version,
        plugin: name.clone(),
        file: file.to_owned(),
        tool: tool.map(str::to_owned),
        kind,
        message: match subject {
            Some(s) => format!("plugin `{name}`: {s}: {message}"),
            None => format!("plugin `{name}`: {message}"),
        },
    };
    let refuse = |kind, tool: Option<&str>, message: String| refuse_about(kind, tool.map(|t| format!("tool `{t}`")), tool, message);

    let manifest = config::plugin_manifest(file, &settings.defaults, settings.memory_ceiling, &settings.protected)
        .map_err(|e| refuse(RefusalKind::InvalidManifest, None, e))?;
    let limits = manifest.limits;
    let bytes = std::fs::read(file).map_err(|e| refuse(RefusalKind::InvalidComponent, None, format!("cannot read {}: {e}", file.display())))?;
    super::lock::check_pinned(file, &bytes).map_err(|e| refuse(RefusalKind::DigestMismatch, None, e))?;
    let namespaced = |own: &str| match &manifest.namespace {
        Some(ns) => format!("{ns}_{own}"),
        None => own.to_owned(),
    };
    let taken_hint = match &manifest.namespace {
        Some(_) => "",
        None => "; give one of the two plugins a namespace (`namespace = \"NAME\"` in its manifest, or `corral pull --namespace NAME`)",
    };
    let code = runtime
        .compile(&name, &bytes)
        .map_err(|e| match e {
            LoadError::InvalidComponent(m) => refuse(RefusalKind::InvalidComponent, None, format!("not a valid component: {m}")),
            LoadError::MissingImport(m) => refuse(RefusalKind::MissingImport, None, format!("imports something the host does not provide: {m}")),
        })?
        .with_permissions(manifest.permissions);

    let mut list_limits = limits.clone();
    list_limits.timeout = list_limits.timeout.min(LIST_TOOLS_TIMEOUT);
    let list_ctx = || CallContext::new(list_limits.clone(), Arc::new(Silent));
    let declared = runtime.list_tools(&code, list_ctx()).await.map_err(|f| refuse(RefusalKind::ListToolsFailed, None, f.describe_as("list-tools")))?;
    let (declared_resources, declared_templates) = match code.has_resources() {
        false => (Vec::new(), Vec::new()),
        true => {
            let failed = |export: &'static str| move |f: crate::runtime::Failure| refuse(RefusalKind::ListResourcesFailed, None, f.describe_as(export));
            let resources = runtime.list_resources(&code, list_ctx()).await.map_err(failed("list-resources"))?;
            let templates = runtime.list_resource_templates(&code, list_ctx()).await.map_err(failed("list-resource-templates"))?;
            (resources, templates)
        }
    };
    let declared_prompts = match code.has_prompts() {
        false => Vec::new(),
        true => runtime.list_prompts(&code, list_ctx()).await.map_err(|f| refuse(RefusalKind::ListPromptsFailed, None, f.describe_as("list-prompts")))?,
    };

    let plugin = Arc::new(Plugin {
        name: name.clone(),
        file: file.to_owned(),
        stamp: version,
        code,
        permits: Arc::new(tokio::sync::Semaphore::new(limits.max_concurrency)),
        limits,
    });
    let mut tools: Vec<ToolEntry> = Vec::with_capacity(declared.len());
    for mut tool in declared {
        let own_name = tool.name.clone();
        check_name(&own_name).map_err(|e| refuse(RefusalKind::InvalidToolName, Some(&own_name), e))?;
        let tool_name = namespaced(&own_name);
        check_name(&tool_name).map_err(|e| refuse(RefusalKind::InvalidToolName, Some(&tool_name), format!("with its namespace: {e}")))?;
        if tools.iter().any(|t| t.name == tool_name) {
            return Err(refuse(RefusalKind::DuplicateTool, Some(&tool_name), "the plugin lists this name twice".into()));
        }
        if let Some(owner) = loaded.tools.get(&tool_name) {
            let message = format!("the name is already taken by plugin `{}`{taken_hint}", owner.plugin.name);
            return Err(refuse(RefusalKind::DuplicateTool, Some(&tool_name), message));
        }
        tool.name = tool_name.clone();
        tools.push(check_tool(tool, own_name, &plugin).map_err(|e| refuse(RefusalKind::InvalidSchema, Some(&tool_name), e))?);
    }

    let resource_refusal = |kind, uri: &str, message: String| refuse_about(kind, Some(format!("resource `{uri}`")), None, message);
    let mut templates: Vec<TemplateEntry> = Vec::with_capacity(declared_templates.len());
    for template in declared_templates {
        let text = template.uri_template.clone();
        let matcher = UriTemplate::parse(&text).map_err(|e| resource_refusal(RefusalKind::InvalidResource, &text, e))?;
        if templates.iter().any(|t| t.template.uri_template == text) {
            return Err(resource_refusal(RefusalKind::DuplicateResource, &text, "the plugin lists this template twice".into()));
        }
        if let Some(other) = loaded.templates.values().find(|t| t.matcher.overlaps(&matcher)) {
            let message = format!(
                "URIs it matches could also match template `{}` of plugin `{}`: give each plugin a URI prefix of its own",
                other.template.uri_template, other.plugin.name
            );
            return Err(resource_refusal(RefusalKind::DuplicateResource, &text, message));
        }
        if let Some(other) = loaded.resources.values().find(|r| matcher.matches(&r.resource.uri)) {
            let message = format!("it matches `{}`, a resource of plugin `{}`", other.resource.uri, other.plugin.name);
            return Err(resource_refusal(RefusalKind::DuplicateResource, &text, message));
        }
        templates.push(TemplateEntry { plugin: plugin.clone(), template, matcher });
    }
    let mut resources: Vec<ResourceEntry> = Vec::with_capacity(declared_resources.len());
    for resource in declared_resources {
        let uri = resource.uri.clone();
        check_uri(&uri).map_err(|e| resource_refusal(RefusalKind::InvalidResource, &uri, e))?;
        if resource.name.is_empty() {
            return Err(resource_refusal(RefusalKind::InvalidResource, &uri, "its name is empty".into()));
        }
        if resources.iter().any(|r| r.resource.uri == uri) {
            return Err(resource_refusal(RefusalKind::DuplicateResource, &uri, "the plugin lists this URI twice".into()));
        }
        if let Some(owner) = loaded.resource_owner(&uri) {
            return Err(resource_refusal(RefusalKind::DuplicateResource, &uri, format!("the URI belongs to plugin `{}`", owner.name)));
        }
        resources.push(ResourceEntry { plugin: plugin.clone(), resource });
    }

    let mut prompts: Vec<PromptEntry> = Vec::with_capacity(declared_prompts.len());
    for mut prompt in declared_prompts {
        let own_name = prompt.name.clone();
        let prompt_name = namespaced(&own_name);
        let prompt_refusal = |kind, message: String| refuse_about(kind, Some(format!("prompt `{prompt_name}`")), None, message);
        check_prompt(&prompt).map_err(|e| prompt_refusal(RefusalKind::InvalidPrompt, e))?;
        prompt.name = prompt_name.clone();
        check_prompt(&prompt).map_err(|e| prompt_refusal(RefusalKind::InvalidPrompt, format!("with its namespace: {e}")))?;
        if prompts.iter().any(|p| p.prompt.name == prompt.name) {
            return Err(prompt_refusal(RefusalKind::DuplicatePrompt, "the plugin lists this name twice".into()));
        }
        if let Some(owner) = loaded.prompts.get(&prompt.name) {
            return Err(prompt_refusal(RefusalKind::DuplicatePrompt, format!("the name is already taken by plugin `{}`{taken_hint}", owner.plugin.name)));
        }
        prompts.push(PromptEntry { plugin: plugin.clone(), prompt, own_name });
    }
    Ok(Loaded { plugin, tools, resources, templates, prompts })
}

fn check_tool(tool: Tool, own_name: String, plugin: &Arc<Plugin>) -> Result<ToolEntry, String> {
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
        own_name,
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
