//! Shared helpers for the end-to-end tests: plugin fixtures and an MCP client for the binary.
#![allow(dead_code)]

pub mod client;
pub mod fixture;

use std::path::{Path, PathBuf};

// Each test crate uses only part of this.
#[allow(unused_imports)]
pub use client::*;
#[allow(unused_imports)]
pub use fixture::*;

/// Writes `DIR/NAME.wasm`; the host names the plugin after the file stem.
pub fn write_plugin(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(format!("{name}.wasm"));
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    path
}

/// Writes `DIR/NAME.toml`, the manifest of plugin `NAME`.
pub fn write_manifest(dir: &Path, name: &str, toml: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, toml).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
    path
}
