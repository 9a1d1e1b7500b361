//! `corral sign` and `corral verify`, the signer of corral's own release artifacts: a manifest in
//! a real registry (Debian's `docker-registry` on 127.0.0.1) signed by digest, and files signed
//! as `cosign sign-blob` does. A signature made by `sign` is what `corral pull --key` accepts,
//! and each way verification must fail exits 1 with the reason.

mod common;
#[path = "common/registry.rs"]
mod registry;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use corral::oci::client::Access;
use corral::oci::publish::{push_artifact, Artifact};
use corral::oci::{Connection, OciRef};
use p256::ecdsa::SigningKey;
use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
use registry::Registry;

fn corral(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_corral")).args(["--log-level", "error"]).args(args).env("CORRAL_DB", ":memory:").output().expect("running corral")
}

fn text(out: &Output) -> String {
    format!("status {}\nstdout:\n{}\nstderr:\n{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "corral failed:\n{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The reason printed by a verification that found no valid signature (exit code 1).
fn refused(out: Output) -> String {
    assert_eq!(out.status.code(), Some(1), "expected exit 1 (not verified):\n{}", text(&out));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A signing key pair as PEM files: (private, public).
fn keys(dir: &Path, seed: u8) -> (PathBuf, PathBuf) {
    let key = SigningKey::from_slice(&[seed; 32]).unwrap();
    let (private, public) = (dir.join(format!("cosign-{seed}.key")), dir.join(format!("cosign-{seed}.pub")));
    std::fs::write(&private, key.to_pkcs8_pem(LineEnding::LF).unwrap().as_bytes()).unwrap();
    std::fs::write(&public, key.verifying_key().to_public_key_pem(LineEnding::LF).unwrap()).unwrap();
    (private, public)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Pushes a small component to `at` and returns its manifest digest.
fn push(at: &str) -> String {
    let reference = OciRef::parse(at).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let conn = Connection::open(&reference, &Access::default(), true).await.unwrap();
        let wasm = std::fs::read(common::example_dist().join("text.wasm")).unwrap();
        push_artifact(&conn, &reference, Artifact { file_name: "text.wasm".into(), wasm, manifest: None, created: None }).await.unwrap()
    })
}

#[test]
fn a_manifest_signed_by_digest_verifies_by_tag_and_digest_and_pull_accepts_it() {
    let registry = Registry::start();
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = keys(dir.path(), 1);
    let (_, stranger) = keys(dir.path(), 2);
    let tagged = registry.reference("tools/text:1.0.0");
    let digest = push(&tagged);
    let pinned = format!("oci://{}/tools/text@{digest}", registry.addr);

    let unsigned = refused(corral(&["verify", &tagged, "--key", s(&public)]));
    assert!(unsigned.contains("sha256-") && unsigned.contains(".sig"), "{unsigned}");

    let by_tag = corral(&["sign", &tagged, "--key", s(&key)]);
    assert_eq!(by_tag.status.code(), Some(2), "{}", text(&by_tag));
    assert!(String::from_utf8_lossy(&by_tag.stderr).contains("by digest"), "{}", text(&by_tag));
    let absent = format!("oci://{}/tools/text@sha256:{}", registry.addr, "0".repeat(64));
    let nothing = corral(&["sign", &absent, "--key", s(&key)]);
    assert!(String::from_utf8_lossy(&nothing.stderr).contains("not found"), "{}", text(&nothing));

    let signed = ok(corral(&["sign", &pinned, "--key", s(&key)]));
    assert!(signed.contains(&digest), "{signed}");
    for target in [&tagged, &pinned] {
        let verified = ok(corral(&["verify", target, "--key", s(&public)]));
        assert!(verified.contains(&digest) && verified.contains("tools/text"), "{verified}");
    }
    let other_key = refused(corral(&["verify", &pinned, "--key", s(&stranger)]));
    assert!(other_key.contains("no valid signature") && other_key.contains("another key"), "{other_key}");
    let elsewhere = refused(corral(&["verify", &pinned, "--key", s(&public), "--signed-identity", &format!("{}/tools/other", registry.addr)]));
    assert!(elsewhere.contains("tools/other"), "{elsewhere}");

    // The same signature is the one `corral pull --key` checks.
    let plugins = tempfile::tempdir().unwrap();
    ok(corral(&["pull", &tagged, "--plugins", s(plugins.path()), "--key", s(&public), "--require-signatures"]));
    assert!(plugins.path().join("text.wasm").exists());
}

#[test]
fn a_file_signature_is_cosign_sign_blob_s_and_any_change_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (key, public) = keys(dir.path(), 3);
    let (_, stranger) = keys(dir.path(), 4);
    let sums = dir.path().join("SHA256SUMS");
    std::fs::write(&sums, "0123  corral-x86_64-linux-musl\n").unwrap();

    ok(corral(&["sign", s(&sums), "--key", s(&key)]));
    let signature = std::fs::read_to_string(dir.path().join("SHA256SUMS.sig")).unwrap();
    // cosign sign-blob's form: the base64 of a DER ECDSA signature, nothing else.
    let der = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, signature.trim()).expect("base64");
    assert_eq!(der[0], 0x30, "a DER SEQUENCE");
    let verified = ok(corral(&["verify", s(&sums), "--key", s(&public)]));
    assert!(verified.contains("SHA256SUMS"), "{verified}");

    let stranger_says = refused(corral(&["verify", s(&sums), "--key", s(&stranger)]));
    assert!(stranger_says.contains("not a signature of this file"), "{stranger_says}");
    std::fs::write(&sums, "0124  corral-x86_64-linux-musl\n").unwrap();
    let changed = refused(corral(&["verify", s(&sums), "--key", s(&public)]));
    assert!(changed.contains("SHA256SUMS.sig"), "{changed}");

    let elsewhere = dir.path().join("sums.sig");
    ok(corral(&["sign", s(&sums), "--key", s(&key), "--output-signature", s(&elsewhere)]));
    ok(corral(&["verify", s(&sums), "--key", s(&public), "--signature", s(&elsewhere)]));
    let missing = corral(&["verify", s(&dir.path().join("absent")), "--key", s(&public)]);
    assert_eq!(missing.status.code(), Some(2), "{}", text(&missing));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("absent"), "{}", text(&missing));
}
