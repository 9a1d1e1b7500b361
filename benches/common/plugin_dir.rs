//! A fresh plugin directory for a cold start: copies of the given plugins and their manifests.

use std::path::{Path, PathBuf};

/// Copies `plugins` (and each one's `.toml` manifest, when it has one) into `DIR/plugins`.
pub fn copy_plugins(dir: &Path, plugins: &[PathBuf]) -> PathBuf {
    let plugin_dir = dir.join("plugins");
    std::fs::create_dir(&plugin_dir).unwrap();
    for p in plugins {
        std::fs::copy(p, plugin_dir.join(p.file_name().unwrap())).unwrap();
        let manifest = p.with_extension("toml");
        if manifest.exists() {
            std::fs::copy(&manifest, plugin_dir.join(manifest.file_name().unwrap())).unwrap();
        }
    }
    plugin_dir
}
