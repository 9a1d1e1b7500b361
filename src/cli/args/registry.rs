//! `corral pull`, `publish`, `sign` and `verify`: plugins from and to OCI registries, and cosign
//! signatures of what a release ships.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::config::{self, defaults};
use crate::oci::client::Access;

/// Flags shared by `pull` and `publish`: how registries are reached.
#[derive(Args)]
pub struct RegistryArgs {
    /// A registry reached over plain HTTP (loopback registries always are); repeatable.
    #[arg(long = "insecure-registry", env = "CORRAL_INSECURE_REGISTRIES", value_delimiter = ',', value_name = "HOST:PORT")]
    pub insecure_registry: Vec<String>,
    /// A bearer token for the registry; without it the docker config file
    /// ($DOCKER_CONFIG/config.json or ~/.docker/config.json) is read. Never logged.
    #[arg(long, env = "CORRAL_REGISTRY_TOKEN", hide_env_values = true, value_name = "TOKEN")]
    pub registry_token: Option<String>,
}

impl RegistryArgs {
    /// The registry access these flags describe.
    pub fn access(&self) -> Access {
        Access { insecure: self.insecure_registry.clone(), token: self.registry_token.clone(), docker_config: None }
    }
}

/// `corral pull`'s flags.
#[derive(Args)]
pub struct PullArgs {
    /// The plugin: oci://HOST[:PORT]/REPO:TAG or oci://HOST[:PORT]/REPO@sha256:DIGEST.
    #[arg(value_name = "REFERENCE")]
    pub reference: String,
    /// The plugin directory it is written to (NAME.wasm, NAME.toml, corral.lock).
    #[arg(long, env = "CORRAL_PLUGINS", value_name = "DIR")]
    pub plugins: PathBuf,
    /// Verify the cosign signature with this public key (PEM, ECDSA P-256, as `cosign
    /// generate-key-pair` writes cosign.pub); an unsigned artifact is then refused, and so is one
    /// whose signature was made for another repository (see --signed-identity).
    #[arg(long, env = "CORRAL_COSIGN_KEY", value_name = "cosign.pub")]
    pub key: Option<PathBuf>,
    /// Refuse artifacts without a valid signature (needs --key).
    #[arg(long, env = "CORRAL_REQUIRE_SIGNATURES")]
    pub require_signatures: bool,
    /// The repository the signature must name, when REFERENCE is a mirror of where it was
    /// signed, e.g. ghcr.io/acme/search [default: REFERENCE's own repository].
    #[arg(long, env = "CORRAL_SIGNED_IDENTITY", value_name = "HOST[:PORT]/REPO", value_parser = parse_signed_identity, requires = "key")]
    pub signed_identity: Option<String>,
    /// The plugin's name in the directory [default: the repository's last path segment].
    #[arg(long)]
    pub name: Option<String>,
    /// Prefix the plugin's tool and prompt names (`NAMESPACE_tool`); written to NAME.toml.
    #[arg(long)]
    pub namespace: Option<String>,
    /// Move a pinned tag to the digest it names now (or re-pin NAME to another reference).
    #[arg(long)]
    pub update: bool,
    /// The largest component accepted, e.g. 64MiB.
    #[arg(long, env = "CORRAL_MAX_PLUGIN_SIZE", default_value = defaults::MAX_PLUGIN_SIZE, value_parser = config::parse_size)]
    pub max_plugin_size: u64,
    /// The largest OCI manifest accepted (the artifact's and its signature's), e.g. 4MiB.
    #[arg(long, env = "CORRAL_MAX_MANIFEST_SIZE", default_value = defaults::MAX_MANIFEST_SIZE, value_parser = config::parse_size)]
    pub max_manifest_size: u64,
    /// How long the whole pull may take, from connecting to the registry to the last byte.
    #[arg(long, env = "CORRAL_PULL_TIMEOUT", default_value = defaults::PULL_TIMEOUT, value_parser = config::parse_duration)]
    pub pull_timeout: Duration,
    // Undocumented on purpose: clap would show a doc comment on a flattened group as help text.
    #[allow(missing_docs)]
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// `corral publish`'s flags.
#[derive(Args)]
pub struct PublishArgs {
    /// The component to publish.
    #[arg(value_name = "FILE.wasm")]
    pub file: PathBuf,
    /// Where: oci://HOST[:PORT]/REPO:TAG.
    #[arg(value_name = "REFERENCE")]
    pub reference: String,
    /// The plugin manifest (limits, permissions, namespace) to publish with it.
    #[arg(long, value_name = "NAME.toml")]
    pub manifest: Option<PathBuf>,
    /// Sign with this private key (cosign's encrypted cosign.key, password in COSIGN_PASSWORD,
    /// or an unencrypted PEM ECDSA P-256 key).
    #[arg(long, value_name = "cosign.key")]
    pub sign_key: Option<PathBuf>,
    // Undocumented on purpose: clap would show a doc comment on a flattened group as help text.
    #[allow(missing_docs)]
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// `corral sign`'s flags.
#[derive(Args)]
pub struct SignArgs {
    /// What to sign: oci://HOST[:PORT]/REPO@sha256:DIGEST (an image or index, by digest), or a file.
    #[arg(value_name = "oci://…@sha256:DIGEST | FILE")]
    pub target: String,
    /// The private key (cosign's encrypted cosign.key, password in COSIGN_PASSWORD, or an
    /// unencrypted PEM ECDSA P-256 key).
    #[arg(long, value_name = "cosign.key")]
    pub key: PathBuf,
    /// Where a file's signature goes [default: FILE.sig].
    #[arg(long, value_name = "FILE.sig")]
    pub output_signature: Option<PathBuf>,
    /// How long the registry may take, from connecting to the last byte.
    #[arg(long, default_value = "2m", value_parser = config::parse_duration)]
    pub timeout: Duration,
    // Undocumented on purpose: clap would show a doc comment on a flattened group as help text.
    #[allow(missing_docs)]
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// `corral verify`'s flags.
#[derive(Args)]
pub struct VerifyArgs {
    /// What to verify: oci://HOST[:PORT]/REPO:TAG or …@sha256:DIGEST, or a file.
    #[arg(value_name = "oci://… | FILE")]
    pub target: String,
    /// The signer's public key (PEM, ECDSA P-256, as `cosign generate-key-pair` writes cosign.pub).
    #[arg(long, value_name = "cosign.pub")]
    pub key: PathBuf,
    /// A file's signature [default: FILE.sig].
    #[arg(long, value_name = "FILE.sig")]
    pub signature: Option<PathBuf>,
    /// The repository the signature must name, when the reference is a mirror of where it was
    /// signed, e.g. ghcr.io/acme/corral [default: the reference's own repository].
    #[arg(long, value_name = "HOST[:PORT]/REPO", value_parser = parse_signed_identity)]
    pub signed_identity: Option<String>,
    /// How long the registry may take, from connecting to the last byte.
    #[arg(long, default_value = "2m", value_parser = config::parse_duration)]
    pub timeout: Duration,
    // Undocumented on purpose: clap would show a doc comment on a flattened group as help text.
    #[allow(missing_docs)]
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// `--signed-identity`: `HOST[:PORT]/REPO`, no tag.
fn parse_signed_identity(text: &str) -> Result<String, String> {
    crate::oci::reference::parse_repository(text).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use clap::error::ErrorKind;
    use clap::Parser;

    use super::*;
    use crate::cli::args::{Cli, Command};

    fn pull(extra: &[&str]) -> Result<PullArgs, clap::Error> {
        let argv = ["corral", "pull", "oci://127.0.0.1:5000/corral/x:1", "--plugins", "p"].into_iter().chain(extra.iter().copied());
        match Cli::try_parse_from(argv)?.command {
            Command::Pull(args) => Ok(args),
            _ => unreachable!("the argv names `pull`"),
        }
    }

    #[test]
    fn pull_bounds_have_the_shared_defaults_and_refuse_zero() {
        let args = pull(&[]).unwrap();
        assert_eq!(args.max_plugin_size, defaults::size(defaults::MAX_PLUGIN_SIZE));
        assert_eq!(args.max_manifest_size, defaults::size(defaults::MAX_MANIFEST_SIZE));
        assert_eq!(args.pull_timeout, defaults::duration(defaults::PULL_TIMEOUT));
        for (flag, zero) in [("--max-plugin-size", "0B"), ("--max-manifest-size", "0B"), ("--pull-timeout", "0s")] {
            assert!(pull(&[flag, zero]).is_err(), "{flag} {zero} was accepted");
        }
    }

    #[test]
    fn signed_identity_is_a_repository_and_needs_a_key() {
        let args = pull(&["--key", "k.pub", "--signed-identity", "ghcr.io/acme/search"]).unwrap();
        assert_eq!(args.signed_identity.as_deref(), Some("ghcr.io/acme/search"));
        let e = pull(&["--key", "k.pub", "--signed-identity", "ghcr.io/acme/search:1"]).err().unwrap().to_string();
        assert!(e.contains("--signed-identity") && e.contains("names a tag"), "{e}");
        assert_eq!(pull(&["--signed-identity", "ghcr.io/acme/search"]).err().map(|e| e.kind()), Some(ErrorKind::MissingRequiredArgument));
    }
}
