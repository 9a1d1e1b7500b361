//! `corral publish FILE.wasm oci://…`: the plugin author's side of `corral pull`, so that
//! publishing and signing need no other tool.

use std::process::ExitCode;

use super::args::PublishArgs;
use crate::oci::artifact::not_a_component;
use crate::oci::cosign::{PrivateKey, PASSWORD_VAR};
use crate::oci::publish::{push_artifact, push_signature, source_date, Artifact};
use crate::oci::{Connection, OciRef};

/// Runs `corral publish`.
pub async fn run(args: PublishArgs) -> anyhow::Result<ExitCode> {
    let reference = OciRef::parse(&args.reference)?;
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
            Some(PrivateKey::from_pem(&pem, password.as_deref(), &path.display().to_string())?)
        }
        None => None,
    };
    let file_name = args.file.file_name().unwrap_or_default().to_string_lossy().into_owned();
    // The time is the publisher's to state, never the clock's: the same files publish as the
    // same digest.
    let created = source_date(std::env::var("SOURCE_DATE_EPOCH").ok().as_deref())?;
    let conn = Connection::open(&reference, &args.registry.access(), true).await?;
    let digest = push_artifact(&conn, &reference, Artifact { file_name, wasm, manifest, created }).await?;
    println!("published {} as {reference} ({digest})", args.file.display());
    if let Some(key) = key {
        push_signature(&conn, &reference, &digest, &key).await?;
        println!("signed {digest} with key {}", key.fingerprint());
    }
    Ok(ExitCode::SUCCESS)
}
