//! The first load of a host's plugins, off the request path.
//!
//! Compiling a plugin takes from tens of milliseconds (Rust, C) to seconds (an 18 MB Python
//! component, when the compile cache is cold): a host that compiled everything before reading
//! its first message would leave an MCP client without an answer to `initialize` for that
//! long, and clients with a short start-up timeout give up. So the host serves at once from a
//! [`Registry::loading`] registry, and this loads the plugins on a thread of its own. Each
//! plugin is served as soon as it is ready, so a call of its tools goes on at once
//! ([`Registry::wait_for`]); lists wait for the whole load ([`Registry::wait_loaded`]).

use std::path::PathBuf;
use std::sync::Arc;

use super::live::Registry;
use super::load::{load_files_serving, LoadSettings};
use crate::runtime::Runtime;

/// Loads `files` (from `dir`, for the log) into `registry` on a new thread, which ends when the
/// catalog is served. Must be called inside a tokio runtime: the plugins' `list-*` calls run on
/// it.
pub fn load_in_background(
    dir: PathBuf,
    files: Vec<PathBuf>,
    runtime: Arc<Runtime>,
    settings: Arc<LoadSettings>,
    registry: Arc<Registry>,
) -> std::io::Result<()> {
    let handle = tokio::runtime::Handle::current();
    let load = move || {
        let catalog = load_files_serving(&files, &runtime, &settings, &handle, |ready, final_part| registry.serve_partly(ready, final_part));
        if catalog.plugins.is_empty() {
            tracing::warn!("no plugin loaded from {}", dir.display());
        }
        registry.finish_loading(catalog);
    };
    std::thread::Builder::new().name("corral-load".into()).spawn(load).map(drop)
}
