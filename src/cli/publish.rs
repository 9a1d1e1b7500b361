//! `corral publish FILE.wasm oci://…`: the plugin author's side of `corral pull`, so that
//! publishing and signing need no other tool.

use std::path::PathBuf;
use std::process::ExitCode;

use super::pull::RegistryArgs;
use crate::oci::artifact::not_a_component;
use crate::oci::cosign::{PrivateKey, PASSWORD_VAR};
use crate::oci::publish::{push_artifact, push_signature, Artifact};
use crate::oci::{Connection, OciRef};

/// `corral publish`'s flags.
#[derive(clap::Args)]
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

/// Runs `corral publish`.
pub async fn run(args: PublishArgs) -> anyhow::Result<ExitCode> {
    let reference = OciRef::parse(&args.reference).map_err(anyhow::Error::msg)?;
    if reference.tag.is_none() || reference.digest.is_some() {
        anyhow::bail!("publish needs a tag to publish under, e.g. oci://{}/{}:1.0.0", reference.registry, reference.repository);
    }
    let wasm = std::fs::read(&args.file).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", args.file.display()))?;
    if let Some(why) = not_a_component(&wasm) {
        anyhow::bail!("{} is not a component: {why}", args.file.display());
    }
    let manifest = match &args.manifest {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("--manifest {}: {e}", path.display()))?;
            text.parse::<toml::Table>().map_err(|e| anyhow::anyhow!("--manifest {}: not TOML: {}", path.display(), e.message()))?;
            Some(text.into_bytes())
        }
        None => None,
    };
    let key = match &args.sign_key {
        Some(path) => {
            let pem = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("--sign-key {}: {e}", path.display()))?;
            let password = std::env::var(PASSWORD_VAR).ok();
            Some(PrivateKey::from_pem(&pem, password.as_deref(), &path.display().to_string()).map_err(anyhow::Error::msg)?)
        }
        None => None,
    };
    let file_name = args.file.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let created = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let conn = Connection::open(&reference, &args.registry.access(), true).await.map_err(anyhow::Error::msg)?;
    let digest = push_artifact(&conn, &reference, Artifact { file_name, wasm, manifest, created }).await.map_err(anyhow::Error::msg)?;
    println!("published {} as {reference} ({digest})", args.file.display());
    if let Some(key) = key {
        push_signature(&conn, &reference, &digest, &key).await.map_err(anyhow::Error::msg)?;
        println!("signed {digest} with key {}", key.fingerprint());
    }
    Ok(ExitCode::SUCCESS)
}
