//! A compiled plugin, ready to instantiate once per call, and why bytes could not become one.

use std::sync::Arc;

use wasmtime::component::InstancePre;

use super::call::CallState;
use super::exports::{Contract, Exports};
use crate::config::Permissions;

/// A compiled plugin and what its instances may reach, ready to instantiate.
#[derive(Clone)]
pub struct PluginCode {
    pub(super) name: Arc<str>,
    pub(super) pre: InstancePre<CallState>,
    pub(super) exports: Arc<Exports>,
    pub(super) permissions: Arc<Permissions>,
    pub(super) network: Arc<[crate::config::NetPattern]>,
    /// Its compile cache entry's key, when it came through the cache.
    pub(super) cache_key: Option<Arc<str>>,
    /// `sha256:` and the hex SHA-256 of the component's bytes.
    pub(super) digest: Arc<str>,
}

impl PluginCode {
    /// The same code, granted `permissions` (default: none).
    pub fn with_permissions(mut self, permissions: Permissions) -> PluginCode {
        self.network = permissions.network.clone().into();
        self.permissions = Arc::new(permissions);
        self
    }

    /// What the plugin is granted.
    pub fn permissions(&self) -> &Permissions {
        &self.permissions
    }

    /// `sha256:` and the hex SHA-256 of the component's bytes: which build of the plugin ran.
    pub fn digest(&self) -> Arc<str> {
        self.digest.clone()
    }

    /// The contract version the plugin was built against.
    pub fn contract(&self) -> Contract {
        self.exports.contract()
    }

    /// Whether it exports `resources` (0.2.0).
    pub fn has_resources(&self) -> bool {
        self.exports.has_resources()
    }

    /// Whether it exports `prompts` (0.2.0).
    pub fn has_prompts(&self) -> bool {
        self.exports.has_prompts()
    }

    /// Whether it exports `completions` (0.2.0).
    pub fn has_completions(&self) -> bool {
        self.exports.has_completions()
    }
}

/// Why a plugin's bytes could not become a [`PluginCode`].
#[derive(Debug)]
pub enum LoadError {
    /// Not a valid WebAssembly component.
    InvalidComponent(String),
    /// It imports something the host does not provide.
    MissingImport(String),
}
