//! Host settings and plugin manifests. Every error names the file and the key at fault.

mod build;
pub mod defaults;
mod limits;
mod manifest;
mod permissions;
mod secrets;
mod values;

pub use build::BuildSpec;
pub use limits::Limits;
pub use manifest::{build_spec, check_namespace, manifest_path, plugin_manifest, Manifest, ManifestError, ManifestKey};
pub use permissions::{DirGrant, EnvVar, HostPattern, NetPattern, Permissions};
pub use secrets::{check_help_url, check_secret_name, parse_scope, SecretDecl, SecretScope};
pub use values::{display_size, parse_duration, parse_memory, parse_positive, parse_size};
