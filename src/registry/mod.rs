//! The loaded plugins and the indexes from tool name, resource URI, resource template and
//! prompt name to plugin.
//!
//! A [`Catalog`] is immutable; the [`Registry`] hands out the current one, so a call keeps
//! the plugin version it started with even if the catalog is replaced meanwhile.
//!
//! Namespacing: tool names and prompt names are unique across the host, and every resource URI
//! belongs to one plugin (see [`uri`]); a plugin that would break this is refused whole.

mod background;
mod checks;
mod load;
pub mod lock;
mod reload;
pub mod uri;
mod watch;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use serde::Serialize;
use serde_json::Value;

use crate::config::{self, Limits};
use crate::runtime::{Annotations, PluginCode, Prompt, Resource, ResourceTemplate, TaskSupport};

pub use background::load_in_background;
pub use checks::violations;
pub use load::{load_dir, load_files, load_plugin, plugin_files, LoadSettings, Loaded};
pub use reload::reload;
use uri::UriTemplate;
pub use watch::{watch, Watcher};

/// One loaded plugin.
pub struct Plugin {
    /// The file's stem: `text` for `text.wasm`.
    pub name: String,
    /// Where it was loaded from.
    pub file: PathBuf,
    /// The version of its files this was loaded from.
    pub stamp: Stamp,
    /// The compiled component, with its manifest's permissions.
    pub code: PluginCode,
    /// The limits its calls run under (manifest over the host's defaults).
    pub limits: Limits,
    /// Bounds the plugin's calls running at once to `limits.max_concurrency`.
    pub permits: Arc<tokio::sync::Semaphore>,
    /// The secrets its manifest declares (`[secrets.NAME]`): names and scopes, never values.
    pub secrets: Arc<[config::SecretDecl]>,
    /// How long compiling took (a compile cache hit is quick).
    pub compile_time: std::time::Duration,
}

/// One tool, checked and ready to call.
pub struct ToolEntry {
    /// The plugin that serves it.
    pub plugin: Arc<Plugin>,
    /// The name served: the plugin's own, prefixed with its namespace if it has one.
    pub name: String,
    /// The name the plugin itself gave the tool: what `call-tool` is asked for.
    pub own_name: String,
    /// A human-readable title, if the plugin gave one.
    pub title: Option<String>,
    /// What the tool does, for the model.
    pub description: String,
    /// The JSON Schema its arguments must match.
    pub input_schema: Value,
    /// The JSON Schema its structured output must match, if it has one.
    pub output_schema: Option<Value>,
    /// Behaviour hints (read-only, idempotent, ...); idempotent tools re-run after a crash.
    pub annotations: Annotations,
    /// Whether it may, must or must not run as a task.
    pub task_support: TaskSupport,
    /// `input_schema`, compiled once.
    pub input_validator: jsonschema::Validator,
    /// `output_schema`, compiled once.
    pub output_validator: Option<jsonschema::Validator>,
}

/// A resource with a fixed URI (contract 0.2.0).
pub struct ResourceEntry {
    /// The plugin that serves it.
    pub plugin: Arc<Plugin>,
    /// The resource as the plugin lists it.
    pub resource: Resource,
}

/// A resource template (contract 0.2.0).
pub struct TemplateEntry {
    /// The plugin that serves it.
    pub plugin: Arc<Plugin>,
    /// The template as the plugin lists it.
    pub template: ResourceTemplate,
    /// The template, parsed for matching URIs.
    pub matcher: UriTemplate,
}

/// A prompt (contract 0.2.0).
pub struct PromptEntry {
    /// The plugin that serves it.
    pub plugin: Arc<Plugin>,
    /// The prompt as served (its name prefixed with the plugin's namespace, if any).
    pub prompt: Prompt,
    /// The name the plugin itself gave the prompt: what `get-prompt` is asked for.
    pub own_name: String,
}

/// Why a plugin was not loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefusalKind {
    /// Its manifest (`NAME.toml`) is refused.
    InvalidManifest,
    /// Not a valid WebAssembly component (or unreadable).
    InvalidComponent,
    /// It imports something the host does not provide.
    MissingImport,
    /// `list-tools` failed (trapped, ran out of time or fuel).
    ListToolsFailed,
    /// A tool name that is not a valid MCP tool name.
    InvalidToolName,
    /// A tool's input or output schema is not a valid JSON Schema.
    InvalidSchema,
    /// A tool name another plugin already serves (or the plugin lists twice).
    DuplicateTool,
    /// `list-resources` or `list-resource-templates` failed.
    ListResourcesFailed,
    /// A resource URI or template that is not well formed.
    InvalidResource,
    /// A resource URI or template another plugin already claims (or the plugin lists twice).
    DuplicateResource,
    /// `list-prompts` failed.
    ListPromptsFailed,
    /// A prompt name or argument list that breaks the rules.
    InvalidPrompt,
    /// A prompt name another plugin already serves (or the plugin lists twice).
    DuplicatePrompt,
    /// A plugin `corral.lock` pins whose `.wasm` no longer matches the pinned digest.
    DigestMismatch,
}

impl RefusalKind {
    /// Refusals that may go away when another plugin changes (it held the name or URI).
    pub fn is_conflict(self) -> bool {
        matches!(self, RefusalKind::DuplicateTool | RefusalKind::DuplicateResource | RefusalKind::DuplicatePrompt)
    }
}

/// A plugin the host refused, with the reason in words that name plugin, tool and cause.
#[derive(Clone, Debug, Serialize)]
pub struct Refusal {
    /// The plugin's name (its file's stem).
    pub plugin: String,
    /// Its `.wasm` file.
    pub file: PathBuf,
    /// The tool at fault, when one is.
    pub tool: Option<String>,
    /// The kind of refusal, a stable machine name.
    pub kind: RefusalKind,
    /// The reason in a sentence that names the plugin, the thing at fault and the fix.
    pub message: String,
    /// For a refused manifest, the key at fault as a dotted path (`limits.timeout`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// For a manifest that is not valid TOML (or has an unknown key), the line at fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// The version of the plugin's files that was refused.
    #[serde(skip)]
    pub stamp: Stamp,
}

/// Size and modification time of a plugin's `.wasm` and manifest: what tells one version of
/// its files from the next without reading them (reading would itself wake the watcher).
pub type Stamp = [Option<(u64, std::time::SystemTime)>; 2];

/// The current version of the plugin file `wasm` and its manifest.
pub fn stamp(wasm: &std::path::Path) -> Stamp {
    let of = |p: &std::path::Path| std::fs::metadata(p).ok().and_then(|m| Some((m.len(), m.modified().ok()?)));
    [of(wasm), of(&crate::config::manifest_path(wasm))]
}

/// The plugins, tools, resources and prompts served at one moment.
#[derive(Default)]
pub struct Catalog {
    /// The plugins loaded, in file-name order.
    pub plugins: Vec<Arc<Plugin>>,
    /// Tools by name; the map's order is the order `tools/list` pages through.
    pub tools: BTreeMap<String, Arc<ToolEntry>>,
    /// Resources by URI.
    pub resources: BTreeMap<String, Arc<ResourceEntry>>,
    /// Resource templates by URI template.
    pub templates: BTreeMap<String, Arc<TemplateEntry>>,
    /// Prompts by name.
    pub prompts: BTreeMap<String, Arc<PromptEntry>>,
    /// The plugins refused, with why.
    pub refused: Vec<Refusal>,
}

/// Which kinds of served things differ between two catalogs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// The tools differ.
    pub tools: bool,
    /// The resources or resource templates differ.
    pub resources: bool,
    /// The prompts differ.
    pub prompts: bool,
}

impl Catalog {
    /// The tool served as `name`.
    pub fn tool(&self, name: &str) -> Option<&Arc<ToolEntry>> {
        self.tools.get(name)
    }

    /// The prompt served as `name`.
    pub fn prompt(&self, name: &str) -> Option<&Arc<PromptEntry>> {
        self.prompts.get(name)
    }

    /// The plugin a resource URI belongs to: the one that lists it, else the one with a
    /// template that matches it.
    pub fn resource_owner(&self, uri: &str) -> Option<&Arc<Plugin>> {
        if let Some(entry) = self.resources.get(uri) {
            return Some(&entry.plugin);
        }
        self.templates.values().find(|t| t.matcher.matches(uri)).map(|t| &t.plugin)
    }

    /// Adds what a plugin brought; its names were checked against this catalog when it loaded.
    pub fn add(&mut self, loaded: Loaded) {
        for tool in loaded.tools {
            self.tools.insert(tool.name.clone(), Arc::new(tool));
        }
        for resource in loaded.resources {
            self.resources.insert(resource.resource.uri.clone(), Arc::new(resource));
        }
        for template in loaded.templates {
            self.templates.insert(template.template.uri_template.clone(), Arc::new(template));
        }
        for prompt in loaded.prompts {
            self.prompts.insert(prompt.prompt.name.clone(), Arc::new(prompt));
        }
        self.plugins.push(loaded.plugin);
    }

    /// Carries `plugin` over from `old` unchanged: the same entries, shared.
    pub fn keep(&mut self, old: &Catalog, plugin: &Arc<Plugin>) {
        let mine = |p: &Arc<Plugin>| Arc::ptr_eq(p, plugin);
        self.tools.extend(old.tools.iter().filter(|(_, e)| mine(&e.plugin)).map(|(k, e)| (k.clone(), e.clone())));
        self.resources.extend(old.resources.iter().filter(|(_, e)| mine(&e.plugin)).map(|(k, e)| (k.clone(), e.clone())));
        self.templates.extend(old.templates.iter().filter(|(_, e)| mine(&e.plugin)).map(|(k, e)| (k.clone(), e.clone())));
        self.prompts.extend(old.prompts.iter().filter(|(_, e)| mine(&e.plugin)).map(|(k, e)| (k.clone(), e.clone())));
        self.plugins.push(plugin.clone());
    }

    /// Whether `plugin` serves anything of each kind here.
    pub fn kinds_of(&self, plugin: &Arc<Plugin>) -> Changes {
        let mine = |p: &Arc<Plugin>| Arc::ptr_eq(p, plugin);
        Changes {
            tools: self.tools.values().any(|e| mine(&e.plugin)),
            resources: self.resources.values().any(|e| mine(&e.plugin)) || self.templates.values().any(|e| mine(&e.plugin)),
            prompts: self.prompts.values().any(|e| mine(&e.plugin)),
        }
    }

    /// What a client listing each kind would see differently in `self` than in `old`: an
    /// entry added, removed, or served by another version of its plugin.
    pub fn changes_from(&self, old: &Catalog) -> Changes {
        fn differ<K: Ord, V>(a: &BTreeMap<K, Arc<V>>, b: &BTreeMap<K, Arc<V>>) -> bool {
            a.len() != b.len() || a.iter().zip(b).any(|((ka, va), (kb, vb))| ka != kb || !Arc::ptr_eq(va, vb))
        }
        Changes {
            tools: differ(&self.tools, &old.tools),
            resources: differ(&self.resources, &old.resources) || differ(&self.templates, &old.templates),
            prompts: differ(&self.prompts, &old.prompts),
        }
    }
}

/// The current catalog, replaceable as a whole.
pub struct Registry {
    current: RwLock<Arc<Catalog>>,
    /// While the first load goes on: what lists show ([`Registry::listing`]).
    listed: RwLock<Option<Arc<Catalog>>>,
    /// Counts replacements, so that the server can tell sessions the tool list changed.
    generation: tokio::sync::watch::Sender<u64>,
    /// Whether the first load is done: `false` only between [`Registry::loading`] and
    /// [`Registry::finish_loading`], while the host already answers `initialize` and `ping`.
    loaded: tokio::sync::watch::Sender<bool>,
    /// Bumped each time the first load serves more of its plugins ([`Registry::serve_partly`],
    /// and its end), so that a request waiting for one tool wakes when that tool's plugin is in.
    arrivals: tokio::sync::watch::Sender<u64>,
    /// How long a request that needs the catalog waits for the first load.
    load_wait: std::time::Duration,
    /// Set when a request stopped waiting before the first load finished: it saw part of the
    /// catalog, so the sessions are told the lists changed once the rest arrives.
    waited_out: std::sync::atomic::AtomicBool,
    /// The generation [`Registry::finish_loading`] made (0: none yet, or never loading).
    first_load: std::sync::atomic::AtomicU64,
}

impl Registry {
    /// A registry serving `catalog`.
    pub fn new(catalog: Catalog) -> Registry {
        Registry::with_state(catalog, true, std::time::Duration::ZERO)
    }

    /// A registry whose plugins are still loading: empty until [`Registry::finish_loading`].
    /// Requests that read the catalog wait for that up to `load_wait` ([`Registry::wait_loaded`]).
    pub fn loading(load_wait: std::time::Duration) -> Registry {
        Registry::with_state(Catalog::default(), false, load_wait)
    }

    fn with_state(catalog: Catalog, loaded: bool, load_wait: std::time::Duration) -> Registry {
        Registry {
            current: RwLock::new(Arc::new(catalog)),
            listed: RwLock::new(None),
            generation: tokio::sync::watch::Sender::new(0),
            loaded: tokio::sync::watch::Sender::new(loaded),
            arrivals: tokio::sync::watch::Sender::new(0),
            load_wait,
            waited_out: std::sync::atomic::AtomicBool::new(false),
            first_load: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The catalog now; a call keeps it to its end, whatever replaces it meanwhile.
    pub fn snapshot(&self) -> Arc<Catalog> {
        self.current.read().unwrap().clone()
    }

    /// The catalog a list shows: [`Registry::snapshot`], except during the first load, when it
    /// is the part of the load that is final (see [`Registry::serve_partly`]).
    pub fn listing(&self) -> Arc<Catalog> {
        match &*self.listed.read().unwrap() {
            Some(final_part) => final_part.clone(),
            None => self.snapshot(),
        }
    }

    /// Swaps in `catalog`. Calls already running keep the plugin version they started with.
    pub fn replace(&self, catalog: Catalog) {
        *self.current.write().unwrap() = Arc::new(catalog);
        self.generation.send_modify(|g| *g += 1);
    }

    /// Swaps in `catalog` without waking subscribers: the tools served are the same.
    pub fn replace_quietly(&self, catalog: Catalog) {
        *self.current.write().unwrap() = Arc::new(catalog);
    }

    /// Wakes on every [`Registry::replace`].
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// Serves the plugins of the first load that are ready while others still load, and wakes
    /// the requests waiting for one of them ([`Registry::wait_for`]). Subscribers are not woken:
    /// lists wait for the whole load, so nobody has been told anything yet.
    ///
    /// `ready` has every plugin ready; `final_part` only those before the first one still
    /// loading (in file-name order), which is what the end of the load cannot change: a name
    /// two plugins claim goes to the first in file order, which may be one still loading. A
    /// call finds a tool in `ready`; a list that stopped waiting shows `final_part`, so that
    /// no client is shown a tool that the end of the load then gives to another plugin.
    pub fn serve_partly(&self, ready: Catalog, final_part: Catalog) {
        *self.listed.write().unwrap() = Some(Arc::new(final_part));
        *self.current.write().unwrap() = Arc::new(ready);
        self.arrivals.send_modify(|n| *n += 1);
    }

    /// Serves the first load's catalog and wakes every request waiting for it. Subscribers are
    /// woken too, but [`Registry::is_first_load`] tells them this replacement is news to no one
    /// (unless [`Registry::waited_out`]).
    pub fn finish_loading(&self, catalog: Catalog) {
        *self.current.write().unwrap() = Arc::new(catalog);
        *self.listed.write().unwrap() = None;
        self.generation.send_modify(|g| {
            *g += 1;
            self.first_load.store(*g, std::sync::atomic::Ordering::SeqCst);
        });
        self.loaded.send_replace(true);
        self.arrivals.send_modify(|n| *n += 1);
    }

    /// Whether `generation` (a value of [`Registry::subscribe`]) is the first load's catalog,
    /// which no client has been told anything about unless one stopped waiting for it.
    pub fn is_first_load(&self, generation: u64) -> bool {
        generation == self.first_load.load(std::sync::atomic::Ordering::SeqCst) && !self.waited_out()
    }

    /// Whether the first load is done (always, for a registry made with [`Registry::new`]).
    pub fn is_loaded(&self) -> bool {
        *self.loaded.borrow()
    }

    /// Waits until the first load is done, however long it takes.
    pub async fn loaded(&self) {
        let mut loaded = self.loaded.subscribe();
        // The sender lives as long as `self`, so this only returns once the flag is set.
        let _ = loaded.wait_for(|done| *done).await;
    }

    /// Waits for the first load, at most the registry's `load_wait`; `false` if it gave up
    /// (and then [`Registry::waited_out`] is set).
    pub async fn wait_loaded(&self) -> bool {
        if self.is_loaded() {
            return true;
        }
        match tokio::time::timeout(self.load_wait, self.loaded()).await {
            Ok(()) => true,
            Err(_) => {
                self.waited_out.store(true, std::sync::atomic::Ordering::SeqCst);
                false
            }
        }
    }

    /// Waits until the catalog serves what `ready` looks for, or the first load is done, however
    /// long it takes: a task recovered at start needs its own plugin, not all of them.
    pub async fn serving(&self, ready: impl Fn(&Catalog) -> bool) {
        // Subscribed before the first look, so an arrival between the look and the wait wakes it.
        let mut arrivals = self.arrivals.subscribe();
        while !self.is_loaded() && !ready(&self.snapshot()) {
            // The sender lives as long as `self`.
            let _ = arrivals.changed().await;
        }
    }

    /// [`Registry::serving`], at most the registry's `load_wait`: a call of a tool whose plugin
    /// has loaded goes on at once, whatever else still loads. `false` if it gave up (and then
    /// [`Registry::waited_out`] is set).
    pub async fn wait_for(&self, ready: impl Fn(&Catalog) -> bool) -> bool {
        if self.is_loaded() || ready(&self.snapshot()) {
            return true;
        }
        match tokio::time::timeout(self.load_wait, self.serving(ready)).await {
            Ok(()) => true,
            Err(_) => {
                self.waited_out.store(true, std::sync::atomic::Ordering::SeqCst);
                false
            }
        }
    }

    /// Whether a request was answered from a partial catalog during the first load.
    pub fn waited_out(&self) -> bool {
        self.waited_out.load(std::sync::atomic::Ordering::SeqCst)
    }
}
