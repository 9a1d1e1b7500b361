//! A plugin file as read for compiling: its bytes, and their digest remembered by the compile
//! cache (see `stamp`) or computed once when first asked for.

use super::cache;

/// A plugin file's bytes and their SHA-256, remembered by the compile cache or computed once
/// when first asked for.
pub struct PluginSource {
    bytes: Vec<u8>,
    key: std::sync::OnceLock<String>,
}

impl PluginSource {
    pub(super) fn new(bytes: Vec<u8>, key: Option<String>) -> PluginSource {
        PluginSource { bytes, key: key.map(std::sync::OnceLock::from).unwrap_or_default() }
    }

    /// The file's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The SHA-256 of the bytes, in hex (the compile cache's key).
    pub(super) fn key(&self) -> &str {
        self.key.get_or_init(|| cache::hex(&<sha2::Sha256 as sha2::Digest>::digest(&self.bytes)))
    }

    /// `sha256:<hex>` of the bytes, as OCI and `corral.lock` write a digest.
    pub fn digest(&self) -> String {
        format!("sha256:{}", self.key())
    }
}
