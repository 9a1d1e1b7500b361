//! Loading a directory of plugins: manifest, compile, `list-tools` (and, for 0.2.0 plugins,
//! `list-resources`, `list-resource-templates`, `list-prompts`), checks.
//!
//! A plugin either passes every step or is refused whole, with a [`Refusal`] saying why; the
//! other plugins load regardless.

// A `Refusal` is large, but it is made at most once per plugin load, far from any call path.
#![allow(clippy::result_large_err)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::catalog::{stamp, Catalog, Loaded, Plugin, PromptEntry, Refusal, RefusalKind, ResourceEntry, Stamp, TemplateEntry, ToolEntry};
use super::checks::{check_name, check_prompt, compile_schema, prepare_schema_checks};
use crate::config::{self, Limits, ManifestError};
use crate::runtime::{CallContext, Failure, LoadError, PluginCode, Prompt, Resource, ResourceTemplate, Runtime, Silent, Tool};
use crate::uri::{check_uri, UriTemplate};

/// `list-tools` should answer at once; this bounds a plugin that doesn't.
const LIST_TOOLS_TIMEOUT: Duration = Duration::from_secs(10);

/// What every plugin load needs from the host's flags.
pub struct LoadSettings {
    /// The limits of a plugin whose manifest sets none.
    pub defaults: Limits,
    /// The most memory a manifest may grant one instance (`--memory-ceiling`).
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
    Ok(load_files(&plugin_files(dir)?, runtime, settings).await)
}

/// Loads `files` into one catalog. What each file needs on its own (manifest, compile,
/// `list-*`) runs for all of them at once, the compiles on as many threads as there are
/// cores; the checks against the plugins before it then run in the order of `files`, so who
/// keeps a contested name does not depend on which compile finished first.
pub async fn load_files(files: &[PathBuf], runtime: &Runtime, settings: &LoadSettings) -> Catalog {
    prepare_schema_checks();
    let compiled: Vec<std::sync::Mutex<Option<Result<Compiled, Refusal>>>> = files.iter().map(|_| std::sync::Mutex::new(None)).collect();
    compile_each(files, runtime, settings, |i, c| *compiled[i].lock().unwrap() = Some(c));
    let staged = futures_util::future::join_all(compiled.into_iter().map(|c| stage(runtime, c.into_inner().unwrap().expect("every file was compiled")))).await;
    let staged: Vec<Option<Result<Staged, Refusal>>> = staged.into_iter().map(Some).collect();
    assemble(&staged, true)
}

/// [`load_files`] for the first load of a host that already serves: each plugin is served
/// as soon as it is compiled and listed, so a call of its tools need not wait for a slower
/// plugin. `serve_partly` gets the catalog of every plugin ready so far and the one of those
/// before the first plugin still loading (the part the rest cannot change). The catalog
/// of the whole load is returned, checked exactly as [`load_files`] checks it. Blocks the
/// calling thread, which must not be one of `handle`'s: the `list-*` calls run there.
pub fn load_files_serving(
    files: &[PathBuf],
    runtime: &Runtime,
    settings: &LoadSettings,
    handle: &tokio::runtime::Handle,
    serve_partly: impl FnMut(Catalog, Catalog) + Send,
) -> Catalog {
    prepare_schema_checks();
    let (compiled, mut arriving) = tokio::sync::mpsc::unbounded_channel();
    std::thread::scope(|scope| {
        let lists = scope.spawn(move || {
            handle.block_on(async move {
                let mut serve_partly = serve_partly;
                let mut slots: Vec<Option<Result<Staged, Refusal>>> = files.iter().map(|_| None).collect();
                let mut listing = futures_util::stream::FuturesUnordered::new();
                loop {
                    tokio::select! {
                        Some((i, c)) = arriving.recv() => listing.push(async move { (i, stage(runtime, c).await) }),
                        Some((i, staged)) = futures_util::StreamExt::next(&mut listing) => {
                            slots[i] = Some(staged);
                            let ready = slots.iter().filter(|s| s.is_some()).count();
                            if ready < slots.len() {
                                tracing::debug!(ready, of = slots.len(), "serving the plugins loaded so far while the others load");
                                let settled = slots.iter().position(Option::is_none).unwrap_or(slots.len());
                                serve_partly(assemble(&slots, false), assemble(&slots[..settled], false));
                            }
                        }
                        else => break,
                    }
                }
                assemble(&slots, true)
            })
        });
        compile_each(files, runtime, settings, |i, c| {
            // The receiver lives until every sender is gone.
            let _ = compiled.send((i, c));
        });
        drop(compiled);
        lists.join().expect("the listing thread does not panic")
    })
}

/// The catalog of the files staged so far, in the order of `files` (a `None` is still loading,
/// and skipped): each plugin is checked against the ones before it. `log` says what loaded
/// and what was refused, for the catalog that is served for good.
fn assemble(staged: &[Option<Result<Staged, Refusal>>], log: bool) -> Catalog {
    let mut catalog = Catalog::default();
    for staged in staged.iter().flatten() {
        match staged.as_ref().map_err(Refusal::clone).and_then(|s| s.admit(&catalog)) {
            Ok(loaded) => {
                if log {
                    let p = &loaded.plugin;
                    tracing::info!(
                        plugin = %p.name,
                        contract = p.code.contract().as_str(),
                        tools = loaded.tools.len(),
                        resources = loaded.resources.len(),
                        templates = loaded.templates.len(),
                        prompts = loaded.prompts.len(),
                        "loaded {}",
                        p.file.display()
                    );
                }
                catalog.add(loaded);
            }
            Err(refusal) => {
                if log {
                    tracing::error!(plugin = %refusal.plugin, kind = ?refusal.kind, "refused: {}", refusal.message);
                }
                catalog.refused.push(refusal);
            }
        }
    }
    catalog
}

/// [`compile`] of every file, on up to one thread per core (each compile also spreads its
/// functions over the cores); `done` gets each result with its file's index as it comes.
///
/// The largest files go first: the biggest compile is the load's critical path (an 18 MB
/// Python component takes seconds where a Rust one takes milliseconds), so it starts at once
/// and the small ones fill the cores beside it, instead of starting it behind them because its
/// name sorts later.
fn compile_each(files: &[PathBuf], runtime: &Runtime, settings: &LoadSettings, done: impl Fn(usize, Result<Compiled, Refusal>) + Sync) {
    let size = |f: &PathBuf| std::fs::metadata(f).map_or(0, |m| m.len());
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(size(&files[i])));
    // Two at least, so that one file that is slow to read (a manifest on a slow mount) does not
    // hold up the rest even on one core.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).max(2).min(files.len());
    if threads <= 1 {
        return order.into_iter().for_each(|i| done(i, compile(&files[i], runtime, settings)));
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let Some(&i) = order.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed)) else { return };
                done(i, compile(&files[i], runtime, settings));
            });
        }
    });
}

pub(super) fn plugin_name(file: &Path) -> String {
    file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default()
}

/// Loads one plugin file beside the plugins of `loaded`: manifest, compile, the `list-*`
/// exports, then the checks of what they declare. The first step that fails refuses it whole.
pub async fn load_plugin(file: &Path, runtime: &Runtime, settings: &LoadSettings, loaded: &Catalog) -> Result<Loaded, Refusal> {
    stage(runtime, compile(file, runtime, settings)).await?.admit(loaded)
}

/// One plugin file, compiled with its manifest: what it is before anything runs.
struct Compiled {
    name: String,
    file: PathBuf,
    stamp: Stamp,
    code: PluginCode,
    limits: Limits,
    names: Names,
    secrets: Arc<[config::SecretDecl]>,
    compile_time: std::time::Duration,
}

impl Compiled {
    fn refuser(&self) -> Refuser<'_> {
        Refuser { name: &self.name, file: &self.file, stamp: self.stamp }
    }
}

/// A compiled plugin and what its `list-*` exports declare: all of a load that does not
/// depend on the other plugins. The plugin is made once, so that every catalog it is checked
/// into (those served while the first load goes on, then the whole one) shares it, and its
/// concurrency permits.
struct Staged {
    plugin: Arc<Plugin>,
    declared: Declared,
    names: Names,
}

/// The `list-*` calls of a compiled plugin (or its refusal, passed on).
async fn stage(runtime: &Runtime, compiled: Result<Compiled, Refusal>) -> Result<Staged, Refusal> {
    let c = compiled?;
    let declared = declarations(runtime, &c.code, &c.limits, &c.refuser()).await?;
    let plugin = Arc::new(Plugin {
        name: c.name,
        file: c.file,
        stamp: c.stamp,
        code: c.code,
        permits: Arc::new(tokio::sync::Semaphore::new(c.limits.max_concurrency)),
        limits: c.limits,
        secrets: c.secrets.clone(),
        compile_time: c.compile_time,
    });
    Ok(Staged { plugin, declared, names: c.names })
}

impl Staged {
    /// The checks of what the plugin declares, against the plugins of `loaded`.
    fn admit(&self, loaded: &Catalog) -> Result<Loaded, Refusal> {
        let (plugin, declared) = (&self.plugin, self.declared.clone());
        let refuse = Refuser { name: &plugin.name, file: &plugin.file, stamp: plugin.stamp };
        let tools = check_tools(declared.tools, plugin, loaded, &refuse, &self.names)?;
        let templates = check_templates(declared.templates, plugin, loaded, &refuse)?;
        let resources = check_resources(declared.resources, plugin, loaded, &refuse)?;
        let prompts = check_prompts(declared.prompts, plugin, loaded, &refuse, &self.names)?;
        Ok(Loaded { plugin: plugin.clone(), tools, resources, templates, prompts })
    }
}

/// Makes the refusals of one plugin file; every message starts with `plugin `NAME`: `.
struct Refuser<'a> {
    name: &'a str,
    file: &'a Path,
    stamp: Stamp,
}

impl Refuser<'_> {
    /// A refusal about `subject` ("tool `x`", "resource `u`"), or about the plugin as a whole.
    fn about(&self, kind: RefusalKind, subject: Option<String>, tool: Option<&str>, message: String) -> Refusal {
        let name = self.name;
        Refusal {
            stamp: self.stamp,
            plugin: name.to_owned(),
            file: self.file.to_owned(),
            tool: tool.map(str::to_owned),
            kind,
            message: match subject {
                Some(s) => format!("plugin `{name}`: {s}: {message}"),
                None => format!("plugin `{name}`: {message}"),
            },
            key: None,
            line: None,
        }
    }

    fn plugin(&self, kind: RefusalKind, message: String) -> Refusal {
        self.about(kind, None, None, message)
    }

    fn tool(&self, kind: RefusalKind, tool: &str, message: String) -> Refusal {
        self.about(kind, Some(format!("tool `{tool}`")), Some(tool), message)
    }

    fn resource(&self, kind: RefusalKind, uri: &str, message: String) -> Refusal {
        self.about(kind, Some(format!("resource `{uri}`")), None, message)
    }

    fn prompt(&self, kind: RefusalKind, prompt: &str, message: String) -> Refusal {
        self.about(kind, Some(format!("prompt `{prompt}`")), None, message)
    }

    /// A refused manifest, pointing at the key (or line) at fault.
    fn manifest(&self, error: ManifestError) -> Refusal {
        let (key, line) = (error.key.map(|k| k.path()), error.line);
        Refusal { key, line, ..self.plugin(RefusalKind::InvalidManifest, error.to_string()) }
    }
}

/// How a plugin's own tool and prompt names become the served ones: `NAMESPACE_NAME` when its
/// manifest sets a namespace.
struct Names {
    namespace: Option<String>,
}

impl Names {
    fn served(&self, own: &str) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}_{own}"),
            None => own.to_owned(),
        }
    }

    /// What a refusal for a taken name adds: the way out, when the plugin has no namespace yet.
    fn taken_hint(&self) -> &'static str {
        match &self.namespace {
            Some(_) => "",
            None => "; give one of the two plugins a namespace (`namespace = \"NAME\"` in its manifest, or `corral pull --namespace NAME`)",
        }
    }
}

/// The manifest's limits and namespace, and the compiled code with the manifest's permissions.
/// A file pinned in `corral.lock` must still have the digest it was pulled with.
fn compile(file: &Path, runtime: &Runtime, settings: &LoadSettings) -> Result<Compiled, Refusal> {
    let name = plugin_name(file);
    let stamp = stamp(file);
    let refuse = Refuser { name: &name, file, stamp };
    let manifest = config::plugin_manifest(file, &settings.defaults, settings.memory_ceiling, &settings.protected).map_err(|e| refuse.manifest(e))?;
    let source = runtime.read_plugin(file).map_err(|e| refuse.plugin(RefusalKind::InvalidComponent, format!("cannot read {}: {e}", file.display())))?;
    super::lock::check_pinned(file, &source.digest()).map_err(|e| refuse.plugin(RefusalKind::DigestMismatch, e))?;
    let started = std::time::Instant::now();
    let code = runtime
        .compile_source(&name, &source)
        .map(|(code, _)| code)
        .map_err(|e| match e {
            LoadError::InvalidComponent(m) => refuse.plugin(RefusalKind::InvalidComponent, format!("not a valid component: {m}")),
            LoadError::MissingImport(m) => refuse.plugin(RefusalKind::MissingImport, format!("imports something the host does not provide: {m}")),
        })?
        .with_permissions(manifest.permissions);
    let compile_time = started.elapsed();
    Ok(Compiled {
        name: name.clone(),
        file: file.to_owned(),
        stamp,
        code,
        limits: manifest.limits,
        names: Names { namespace: manifest.namespace },
        secrets: manifest.secrets.into(),
        compile_time,
    })
}

/// What the plugin's `list-*` exports declare, before any check.
type Declared = crate::runtime::Lists;

/// Calls `list-tools`, and `list-resources`, `list-resource-templates` and `list-prompts` where
/// the plugin exports them, each under the plugin's limits and at most [`LIST_TOOLS_TIMEOUT`]
/// (or reads their answers from the compile cache, see [`Runtime::lists_cached`]).
async fn declarations(runtime: &Runtime, code: &PluginCode, limits: &Limits, refuse: &Refuser<'_>) -> Result<Declared, Refusal> {
    let mut list_limits = limits.clone();
    list_limits.timeout = list_limits.timeout.min(LIST_TOOLS_TIMEOUT);
    let list_ctx = || CallContext::new(list_limits.clone(), Arc::new(Silent));
    runtime.lists_cached(code, list_ctx).await.map_err(|(export, f): (&str, Failure)| {
        let kind = match export {
            "list-tools" => RefusalKind::ListToolsFailed,
            "list-prompts" => RefusalKind::ListPromptsFailed,
            _ => RefusalKind::ListResourcesFailed,
        };
        refuse.plugin(kind, f.describe_as(export))
    })
}

/// Tools: valid names (with the namespace too), listed once, not taken by another plugin, valid
/// schemas.
fn check_tools(declared: Vec<Tool>, plugin: &Arc<Plugin>, loaded: &Catalog, refuse: &Refuser<'_>, names: &Names) -> Result<Vec<ToolEntry>, Refusal> {
    let mut tools: Vec<ToolEntry> = Vec::with_capacity(declared.len());
    for mut tool in declared {
        let own_name = tool.name.clone();
        check_name(&own_name).map_err(|e| refuse.tool(RefusalKind::InvalidToolName, &own_name, e.to_string()))?;
        let tool_name = names.served(&own_name);
        check_name(&tool_name).map_err(|e| refuse.tool(RefusalKind::InvalidToolName, &tool_name, format!("with its namespace: {e}")))?;
        if tools.iter().any(|t| t.name == tool_name) {
            return Err(refuse.tool(RefusalKind::DuplicateTool, &tool_name, "the plugin lists this name twice".into()));
        }
        if let Some(owner) = loaded.tools.get(&tool_name) {
            let message = format!("the name is already taken by plugin `{}`{}", owner.plugin.name, names.taken_hint());
            return Err(refuse.tool(RefusalKind::DuplicateTool, &tool_name, message));
        }
        tool.name = tool_name.clone();
        tools.push(check_tool(tool, own_name, plugin).map_err(|e| refuse.tool(RefusalKind::InvalidSchema, &tool_name, e))?);
    }
    Ok(tools)
}

/// Resource templates: well formed, listed once, overlapping no other plugin's template or
/// resource.
fn check_templates(declared: Vec<ResourceTemplate>, plugin: &Arc<Plugin>, loaded: &Catalog, refuse: &Refuser<'_>) -> Result<Vec<TemplateEntry>, Refusal> {
    let mut templates: Vec<TemplateEntry> = Vec::with_capacity(declared.len());
    for template in declared {
        let text = template.uri_template.clone();
        let matcher = UriTemplate::parse(&text).map_err(|e| refuse.resource(RefusalKind::InvalidResource, &text, e))?;
        if templates.iter().any(|t| t.template.uri_template == text) {
            return Err(refuse.resource(RefusalKind::DuplicateResource, &text, "the plugin lists this template twice".into()));
        }
        if let Some(other) = loaded.templates.values().find(|t| t.matcher.overlaps(&matcher)) {
            let message = format!(
                "URIs it matches could also match template `{}` of plugin `{}`: give each plugin a URI prefix of its own",
                other.template.uri_template, other.plugin.name
            );
            return Err(refuse.resource(RefusalKind::DuplicateResource, &text, message));
        }
        if let Some(other) = loaded.resources.values().find(|r| matcher.matches(&r.resource.uri)) {
            let message = format!("it matches `{}`, a resource of plugin `{}`", other.resource.uri, other.plugin.name);
            return Err(refuse.resource(RefusalKind::DuplicateResource, &text, message));
        }
        templates.push(TemplateEntry { plugin: plugin.clone(), template, matcher });
    }
    Ok(templates)
}

/// Resources: absolute URIs with a name, listed once, owned by no other plugin.
fn check_resources(declared: Vec<Resource>, plugin: &Arc<Plugin>, loaded: &Catalog, refuse: &Refuser<'_>) -> Result<Vec<ResourceEntry>, Refusal> {
    let mut resources: Vec<ResourceEntry> = Vec::with_capacity(declared.len());
    for resource in declared {
        let uri = resource.uri.clone();
        check_uri(&uri).map_err(|e| refuse.resource(RefusalKind::InvalidResource, &uri, e))?;
        if resource.name.is_empty() {
            return Err(refuse.resource(RefusalKind::InvalidResource, &uri, "its name is empty".into()));
        }
        if resources.iter().any(|r| r.resource.uri == uri) {
            return Err(refuse.resource(RefusalKind::DuplicateResource, &uri, "the plugin lists this URI twice".into()));
        }
        if let Some(owner) = loaded.resource_owner(&crate::uri::canonical(&uri).unwrap_or_else(|_| uri.clone())) {
            return Err(refuse.resource(RefusalKind::DuplicateResource, &uri, format!("the URI belongs to plugin `{}`", owner.name)));
        }
        resources.push(ResourceEntry { plugin: plugin.clone(), resource });
    }
    Ok(resources)
}

/// Prompts: names like tools' (with the namespace too), distinct argument names, listed once,
/// not taken by another plugin.
fn check_prompts(declared: Vec<Prompt>, plugin: &Arc<Plugin>, loaded: &Catalog, refuse: &Refuser<'_>, names: &Names) -> Result<Vec<PromptEntry>, Refusal> {
    let mut prompts: Vec<PromptEntry> = Vec::with_capacity(declared.len());
    for mut prompt in declared {
        let own_name = prompt.name.clone();
        let prompt_name = names.served(&own_name);
        check_prompt(&prompt).map_err(|e| refuse.prompt(RefusalKind::InvalidPrompt, &prompt_name, e))?;
        prompt.name = prompt_name.clone();
        check_prompt(&prompt).map_err(|e| refuse.prompt(RefusalKind::InvalidPrompt, &prompt_name, format!("with its namespace: {e}")))?;
        if prompts.iter().any(|p| p.prompt.name == prompt.name) {
            return Err(refuse.prompt(RefusalKind::DuplicatePrompt, &prompt_name, "the plugin lists this name twice".into()));
        }
        if let Some(owner) = loaded.prompts.get(&prompt.name) {
            let message = format!("the name is already taken by plugin `{}`{}", owner.plugin.name, names.taken_hint());
            return Err(refuse.prompt(RefusalKind::DuplicatePrompt, &prompt_name, message));
        }
        prompts.push(PromptEntry { plugin: plugin.clone(), prompt, own_name });
    }
    Ok(prompts)
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
