//! `corral sign` and `corral verify`: cosign-compatible signatures of corral's own release
//! artifacts, with the signer `corral publish --sign-key` and `corral pull --key` already use.
//!
//! Two kinds of target, told apart by their form:
//! - `oci://HOST[:PORT]/REPO@sha256:…`: an image (or image index, or any manifest) in a registry,
//!   signed by digest as `cosign sign --key` does (a simple-signing payload under the
//!   `sha256-<hex>.sig` tag). Signing needs the digest, never a tag: a tag can move between
//!   reading it and signing what it names. Verifying takes a tag or a digest.
//! - a file (a binary, `SHA256SUMS`, an SBOM): the base64 DER signature of its bytes in
//!   `FILE.sig`, as `cosign sign-blob --key` writes and `cosign verify-blob` reads.
//!
//! So `cosign verify --key cosign.pub` accepts what `corral sign` made, and `corral verify`
//! accepts what cosign made with a key.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::args::{SignArgs, VerifyArgs};
use crate::oci::client::Bound;
use crate::oci::cosign::{PrivateKey, PublicKey, PASSWORD_VAR};
use crate::oci::publish::push_signature;
use crate::oci::pull::{resolve, verify_signature, PullError};
use crate::oci::{Connection, OciRef};

/// What the registry may send for one manifest (an image index of a few platforms, or a signature).
const MAX_MANIFEST: u64 = 4 << 20;

/// A target is a registry reference when it says so; anything else is a file.
fn is_registry(target: &str) -> bool {
    target.starts_with("oci://")
}

fn signature_path(file: &Path, given: Option<&Path>) -> PathBuf {
    given.map_or_else(|| PathBuf::from(format!("{}.sig", file.display())), Path::to_path_buf)
}

/// Runs `corral sign`.
pub async fn run_sign(args: SignArgs) -> anyhow::Result<ExitCode> {
    let pem = std::fs::read_to_string(&args.key).map_err(|e| anyhow::anyhow!("--key {}: {e}", args.key.display()))?;
    let password = std::env::var(PASSWORD_VAR).ok();
    let key = PrivateKey::from_pem(&pem, password.as_deref(), &args.key.display().to_string())?;
    if !is_registry(&args.target) {
        let file = Path::new(&args.target);
        let bytes = std::fs::read(file).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
        let out = signature_path(file, args.output_signature.as_deref());
        std::fs::write(&out, key.sign(&bytes)).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", out.display()))?;
        println!("signed {} with key {} into {}", file.display(), key.fingerprint(), out.display());
        return Ok(ExitCode::SUCCESS);
    }
    if args.output_signature.is_some() {
        anyhow::bail!("--output-signature is for files; a registry signature is stored in the registry");
    }
    let reference = OciRef::parse(&args.target)?;
    let Some(digest) = reference.digest.clone() else {
        anyhow::bail!(
            "sign {reference} by digest (oci://{}/{}@sha256:…), not by tag: a tag can move to other content between reading and signing it. \
             `buildah manifest push --digestfile` or `corral verify` print the digest",
            reference.registry,
            reference.repository
        );
    };
    let work = async {
        let conn = Connection::open(&reference, &args.registry.access(), true).await?;
        // Sign only what the registry holds: a signature of a digest nobody pushed helps no one.
        resolve(&conn, &reference, Bound { bytes: MAX_MANIFEST, flag: "a fixed limit" })
            .await?
            .ok_or_else(|| anyhow::anyhow!("{reference}: not found in the registry; push it before signing it"))?;
        push_signature(&conn, &reference, &digest, &key).await?;
        anyhow::Ok(())
    };
    tokio::time::timeout(args.timeout, work).await.map_err(|_| anyhow::anyhow!("{reference}: the registry did not finish within --timeout"))??;
    println!("signed {digest} of {} with key {}", reference.repository_path(), key.fingerprint());
    Ok(ExitCode::SUCCESS)
}

/// Runs `corral verify`: exits 0 when a valid signature by the key is there, 1 when none is,
/// 2 when it could not be told (unreadable key, unreachable registry).
pub async fn run_verify(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let pem = std::fs::read_to_string(&args.key).map_err(|e| anyhow::anyhow!("--key {}: {e}", args.key.display()))?;
    let key = PublicKey::from_pem(&pem, &args.key.display().to_string())?;
    if !is_registry(&args.target) {
        if args.signed_identity.is_some() {
            anyhow::bail!("--signed-identity is for registry references; a file's signature names no repository");
        }
        let file = Path::new(&args.target);
        let bytes = std::fs::read(file).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?;
        let sig_path = signature_path(file, args.signature.as_deref());
        let signature = std::fs::read_to_string(&sig_path).map_err(|e| anyhow::anyhow!("cannot read the signature {}: {e}", sig_path.display()))?;
        if !key.verifies(&bytes, &signature) {
            eprintln!("corral: {}: {} is not a signature of this file by key {}", file.display(), sig_path.display(), key.fingerprint);
            return Ok(ExitCode::FAILURE);
        }
        println!("verified {} ({}) signed by key {}", file.display(), crate::oci::sha256_digest(&bytes), key.fingerprint);
        return Ok(ExitCode::SUCCESS);
    }
    if args.signature.is_some() {
        anyhow::bail!("--signature is for files; a registry signature is read from the registry");
    }
    let reference = OciRef::parse(&args.target)?;
    let expected = args.signed_identity.clone().unwrap_or_else(|| reference.repository_path());
    let bound = Bound { bytes: MAX_MANIFEST, flag: "a fixed limit" };
    let work = async {
        let conn = Connection::open(&reference, &args.registry.access(), false).await?;
        let digest = resolve(&conn, &reference, bound).await?.ok_or_else(|| anyhow::anyhow!("{reference}: not found in the registry"))?;
        anyhow::Ok((verify_signature(&conn, &reference, &digest, &key, &expected, bound).await, digest))
    };
    let (verdict, digest) =
        tokio::time::timeout(args.timeout, work).await.map_err(|_| anyhow::anyhow!("{reference}: the registry did not answer within --timeout"))??;
    match verdict {
        Ok(()) => {
            println!("verified {digest} of {expected} signed by key {}", key.fingerprint);
            Ok(ExitCode::SUCCESS)
        }
        Err(e @ (PullError::NotSigned { .. } | PullError::NoValidSignature { .. } | PullError::SignedForAnother { .. })) => {
            eprintln!("corral: {e}");
            Ok(ExitCode::FAILURE)
        }
        Err(e) => Err(e.into()),
    }
}
