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
mod digest;
pub mod publish;
pub mod pull;
pub mod reference;

pub use client::Connection;
pub use digest::sha256_digest;
pub use reference::OciRef;
