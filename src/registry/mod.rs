//! The loaded plugins and the indexes from tool name, resource URI, resource template and
//! prompt name to plugin.
//!
//! A [`Catalog`] is immutable; the [`Registry`] hands out the current one, so a call keeps
//! the plugin version it started with even if the catalog is replaced meanwhile.
//!
//! Namespacing: tool names and prompt names are unique across the host, and every resource URI
//! belongs to one plugin (see [`crate::uri`]); a plugin that would break this is refused whole.

mod background;
mod catalog;
mod checks;
mod live;
mod load;
pub mod lock;
mod reload;
mod watch;

pub use background::load_in_background;
pub use catalog::{stamp, Catalog, Changes, Loaded, Plugin, PromptEntry, Refusal, RefusalKind, ResourceEntry, Stamp, TemplateEntry, ToolEntry};
pub use checks::violations;
pub use live::Registry;
pub use load::{load_dir, load_files, load_plugin, plugin_files, LoadSettings};
pub use reload::reload;
pub use watch::{watch, Watcher};
