//! Reloading some plugins of a running host: the new catalog is built beside the old one and
//! swapped in whole, so no call ever sees half a reload.

use std::collections::BTreeSet;
use std::path::Path;

use super::catalog::{stamp, Catalog, Refusal};
use super::live::Registry;
use super::load::{load_plugin, LoadSettings};
use crate::runtime::Runtime;

/// Reloads the plugins named in `changed` (their `.wasm` or manifest changed, appeared or
/// went away) from `dir`, and swaps in the result. A plugin whose new version is refused
/// keeps serving its old version. Returns whether what is served (tools, resources, prompts)
/// changed.
pub async fn reload(registry: &Registry, dir: &Path, changed: &BTreeSet<String>, runtime: &Runtime, settings: &LoadSettings) -> bool {
    let old = registry.snapshot();
    // Reading a plugin wakes the watcher too; only files that really changed count.
    let changed: BTreeSet<String> = changed.iter().filter(|name| !unchanged(&old, &dir.join(format!("{name}.wasm")), name)).cloned().collect();
    if changed.is_empty() {
        return false;
    }
    // A plugin refused for a name another plugin held may load now that the other changed.
    let mut names = changed.clone();
    names.extend(old.refused.iter().filter(|r| r.kind.is_conflict()).map(|r| r.plugin.clone()));

    let mut next = Catalog::default();
    for plugin in old.plugins.iter().filter(|p| !names.contains(&p.name)) {
        next.keep(&old, plugin);
    }
    next.refused.extend(old.refused.iter().filter(|r| !names.contains(&r.plugin)).cloned());

    let mut served_changed = false;
    for name in &names {
        let file = dir.join(format!("{name}.wasm"));
        let previous = old.plugins.iter().find(|p| &p.name == name);
        if !file.is_file() {
            if let Some(p) = previous {
                tracing::info!(plugin = %name, "removed: its tools, resources and prompts are no longer served (running calls finish)");
                let kinds = old.kinds_of(p);
                served_changed |= kinds.tools || kinds.resources || kinds.prompts;
            }
            continue;
        }
        let before = stamp(&file);
        let loaded = load_plugin(&file, runtime, settings, &next).await;
        if stamp(&file) != before {
            // Still being written: the write's own change event brings us back here.
            tracing::debug!(plugin = %name, "changed while loading; waiting for the next change");
            if let Some(p) = previous {
                next.keep(&old, p);
            }
            continue;
        }
        match loaded {
            Ok(loaded) => {
                tracing::info!(
                    plugin = %name,
                    tools = loaded.tools.len(),
                    resources = loaded.resources.len() + loaded.templates.len(),
                    prompts = loaded.prompts.len(),
                    "reloaded {}",
                    file.display()
                );
                next.add(loaded);
                served_changed = true;
            }
            Err(refusal) => {
                match previous {
                    Some(p) => {
                        tracing::error!(plugin = %name, kind = ?refusal.kind, "new version refused, the old one keeps serving: {}", refusal.message);
                        next.keep(&old, p);
                    }
                    None => tracing::error!(plugin = %name, kind = ?refusal.kind, "refused: {}", refusal.message),
                }
                next.refused.push(refusal);
            }
        }
    }
    next.plugins.sort_by(|a, b| a.name.cmp(&b.name));
    if served_changed {
        registry.replace(next);
    } else if refusals_differ(&old.refused, &next.refused) {
        // Only the list of refusals changed: keep it current without telling clients.
        registry.replace_quietly(next);
    }
    served_changed
}

/// Whether `name`'s files are still the version that is served or was refused.
fn unchanged(old: &Catalog, file: &Path, name: &str) -> bool {
    let now = stamp(file);
    old.plugins.iter().any(|p| p.name == name && p.stamp == now) || old.refused.iter().any(|r| r.plugin == name && r.stamp == now)
}

fn refusals_differ(a: &[Refusal], b: &[Refusal]) -> bool {
    a.len() != b.len() || a.iter().zip(b).any(|(x, y)| x.plugin != y.plugin || x.message != y.message)
}
