//! The catalog: every loaded plugin and the indexes from tool name, resource URI, resource
//! template and prompt name to plugin, immutable once made, and the plugins refused with why.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::config::{self, Limits};
use crate::runtime::{Annotations, PluginCode, Prompt, Resource, ResourceTemplate, TaskSupport};

use crate::uri::UriTemplate;

/// What one plugin brings to a catalog, checked against the catalog it was loaded beside.
pub struct Loaded {
    /// The plugin.
    pub plugin: Arc<Plugin>,
    /// Its tools, checked.
    pub tools: Vec<ToolEntry>,
    /// Its resources with a fixed URI, checked.
    pub resources: Vec<ResourceEntry>,
    /// Its resource templates, checked.
    pub templates: Vec<TemplateEntry>,
    /// Its prompts, checked.
    pub prompts: Vec<PromptEntry>,
}

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
    /// Resources by URI, in its canonical form (`crate::uri::canonical`).
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

    /// The plugin a resource URI (in its canonical form, `crate::uri::canonical`) belongs to:
    /// the one that lists it, else the one with a template that matches it.
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
            // Keyed by the canonical form, which is what a read or a subscription asks for.
            let key = crate::uri::canonical(&resource.resource.uri).unwrap_or_else(|_| resource.resource.uri.clone());
            self.resources.insert(key, Arc::new(resource));
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
