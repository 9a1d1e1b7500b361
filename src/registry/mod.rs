//! The loaded plugins and the index from tool name to plugin.
//!
//! A [`Catalog`] is immutable; the [`Registry`] hands out the current one, so a call keeps
//! the plugin version it started with even if the catalog is replaced meanwhile.

mod checks;
mod load;
mod reload;
mod watch;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use serde::Serialize;
use serde_json::Value;

use crate::config::Limits;
use crate::runtime::{Annotations, PluginCode, TaskSupport};

pub use checks::violations;
pub use load::{load_dir, load_plugin, LoadSettings};
pub use reload::reload;
pub use watch::{watch, Watcher};

/// One loaded plugin.
pub struct Plugin {
    pub name: String,
    pub file: PathBuf,
    /// The version of its files this was loaded from.
    pub stamp: Stamp,
    pub code: PluginCode,
    pub limits: Limits,
    /// Bounds the plugin's calls running at once to `limits.max_concurrency`.
    pub permits: Arc<tokio::sync::Semaphore>,
}

/// One tool, checked and ready to call.
pub struct ToolEntry {
    pub plugin: Arc<Plugin>,
    pub name: String,
    pub title: Option<String>,
    pub description: String,
    pub input_schema: Value,
    pub output_schema: Option<Value>,
    pub annotations: Annotations,
    pub task_support: TaskSupport,
    pub input_validator: jsonschema::Validator,
    pub output_validator: Option<jsonschema::Validator>,
}

/// Why a plugin was not loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefusalKind {
    InvalidManifest,
    InvalidComponent,
    MissingImport,
    ListToolsFailed,
    InvalidToolName,
    InvalidSchema,
    DuplicateTool,
}

/// A plugin the host refused, with the reason in words that name plugin, tool and cause.
#[derive(Clone, Debug, Serialize)]
pub struct Refusal {
    pub plugin: String,
    pub file: PathBuf,
    pub tool: Option<String>,
    pub kind: RefusalKind,
    pub message: String,
    /// The version of the plugin's files that was refused.
    #[serde(skip)]
    pub stamp: Stamp,
}

/// Size and modification time of a plugin's `.wasm` and manifest: what tells one version of
/// its files from the next without reading them (reading would itself wake the watcher).
pub type Stamp = [Option<(u64, std::time::SystemTime)>; 2];

pub fn stamp(wasm: &std::path::Path) -> Stamp {
    let of = |p: &std::path::Path| std::fs::metadata(p).ok().and_then(|m| Some((m.len(), m.modified().ok()?)));
    [of(wasm), of(&crate::config::manifest_path(wasm))]
}

/// The plugins and tools served at one moment.
#[derive(Default)]
pub struct Catalog {
    pub plugins: Vec<Arc<Plugin>>,
    /// Tools by name; the map's order is the order `tools/list` pages through.
    pub tools: BTreeMap<String, Arc<ToolEntry>>,
    pub refused: Vec<Refusal>,
}

impl Catalog {
    pub fn tool(&self, name: &str) -> Option<&Arc<ToolEntry>> {
        self.tools.get(name)
    }
}

/// The current catalog, replaceable as a whole.
pub struct Registry {
    current: RwLock<Arc<Catalog>>,
    /// Counts replacements, so that the server can tell sessions the tool list changed.
    generation: tokio::sync::watch::Sender<u64>,
}

impl Registry {
    pub fn new(catalog: Catalog) -> Registry {
        Registry { current: RwLock::new(Arc::new(catalog)), generation: tokio::sync::watch::Sender::new(0) }
    }

    pub fn snapshot(&self) -> Arc<Catalog> {
        self.current.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Swaps in `catalog`. Calls already running keep the plugin version they started with.
    pub fn replace(&self, catalog: Catalog) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(catalog);
        self.generation.send_modify(|g| *g += 1);
    }

    /// Swaps in `catalog` without waking subscribers: the tools served are the same.
    pub fn replace_quietly(&self, catalog: Catalog) {
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(catalog);
    }

    /// Wakes on every [`Registry::replace`].
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.generation.subscribe()
    }
}
