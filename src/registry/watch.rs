//! `serve --watch`: reload a plugin when its `.wasm` or manifest changes on disk.
//!
//! File events are debounced: a path counts as changed once it has been quiet for
//! [`QUIET`], so a compiler or editor still writing is waited for (a path written to without
//! pause keeps being postponed). Loading happens on a tokio task, off every request path.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify_debouncer_mini::notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_mini::{new_debouncer, DebounceEventResult, DebouncedEventKind, Debouncer};

use super::live::Registry;
use super::load::{plugin_name, LoadSettings};
use super::reload::reload;
use crate::runtime::Runtime;

/// How long a file must stay unchanged before it is loaded.
pub const QUIET: Duration = Duration::from_millis(100);

/// Watching stops when this is dropped.
pub struct Watcher {
    _debouncer: Debouncer<RecommendedWatcher>,
    _task: tokio::task::JoinHandle<()>,
}

/// Starts watching `dir`; every batch of changed plugins is reloaded into `registry`.
pub fn watch(dir: &Path, registry: Arc<Registry>, runtime: Arc<Runtime>, settings: Arc<LoadSettings>) -> anyhow::Result<Watcher> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<BTreeSet<String>>();
    let mut debouncer = new_debouncer(QUIET, move |events: DebounceEventResult| match events {
        Ok(events) => {
            let names: BTreeSet<String> = events.iter().filter(|e| e.kind == DebouncedEventKind::Any).filter_map(|e| plugin_of(&e.path)).collect();
            if !names.is_empty() {
                let _ = tx.send(names);
            }
        }
        Err(e) => tracing::error!("watching the plugin directory: {e}"),
    })
    .map_err(|e| anyhow::anyhow!("cannot watch {}: {e}", dir.display()))?;
    debouncer.watcher().watch(dir, RecursiveMode::NonRecursive).map_err(|e| anyhow::anyhow!("cannot watch {}: {e}", dir.display()))?;

    tracing::info!("watching {} for plugin changes", dir.display());
    let dir: PathBuf = dir.to_owned();
    let task = tokio::spawn(async move {
        // Changes made while the plugins load at start are reloaded once that is done, against
        // the catalog it made (a file it already read as changed counts as unchanged).
        registry.loaded().await;
        while let Some(mut names) = rx.recv().await {
            while let Ok(more) = rx.try_recv() {
                names.extend(more);
            }
            tracing::debug!(plugins = ?names, "plugin files changed");
            reload(&registry, &dir, &names, &runtime, &settings).await;
        }
    });
    Ok(Watcher { _debouncer: debouncer, _task: task })
}

/// The plugin a changed path belongs to: `NAME.wasm` or its manifest `NAME.toml`; editors'
/// and compilers' temporary files (hidden, or with other extensions) are not plugins.
fn plugin_of(path: &Path) -> Option<String> {
    let hidden = path.file_name()?.to_str()?.starts_with('.');
    let ext = path.extension()?.to_str()?;
    (!hidden && (ext == "wasm" || ext == "toml")).then(|| plugin_name(path))
}
