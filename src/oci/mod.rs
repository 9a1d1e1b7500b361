//! Plugins as OCI artifacts: fetching and publishing a component in the CNCF Wasm artifact
//! layout, with every digest checked and cosign signatures made and verified with an ECDSA
//! P-256 key.
//!
//! This module knows registries, not plugin directories: [`pull::fetch`] returns verified bytes
//! and what was verified; `corral pull` (in `cli`) decides what lands in the plugin directory and
//! the lock. It imports nothing else of corral. Each concern has its own error type
//! (`ReferenceError`, `LayoutError`, `KeyError`, `RegistryError`, `PullError`), so that callers
//! can tell one refusal from another without reading its text.

pub mod artifact;
pub mod client;
pub mod cosign;
pub mod publish;
pub mod pull;
pub mod reference;

pub use client::Connection;
pub use reference::OciRef;

/// `sha256:` and the hex SHA-256 of `bytes`: the OCI digest form.
pub fn sha256_digest(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    use std::fmt::Write;
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in Sha256::digest(bytes) {
        let _ = write!(out, "{b:02x}");
    }
    out
}
