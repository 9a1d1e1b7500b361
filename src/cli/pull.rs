//! `corral pull oci://…`: fetch a plugin from an OCI registry, verify it, and pin it in the
//! plugin directory's `corral.lock`.
//!
//! Everything is checked in memory first (digests, layout, signature, size, the manifest's
//! text); only then are the files staged beside their final names and renamed into place, so a
//! failed pull leaves the plugin directory as it was. What the lock allows (a file not pulled, a
//! name pinned elsewhere, a moved tag) is decided by `registry::lock`; this is the command around
//! it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::args::PullArgs;
use crate::config;
use crate::oci::client::Bound;
use crate::oci::cosign::PublicKey;
use crate::oci::pull::{fetch, resolve, FetchOptions, Fetched};
use crate::oci::{Connection, OciRef};
use crate::registry::lock::{self, Lock, LockEntry, PullRequest};

/// Runs `corral pull`.
pub async fn run(args: PullArgs) -> anyhow::Result<ExitCode> {
    let reference = OciRef::parse(&args.reference)?;
    let name = args.name.clone().unwrap_or_else(|| reference.default_name().to_owned());
    check_plugin_name(&name)?;
    if let Some(ns) = &args.namespace {
        config::check_namespace(ns).map_err(|e| anyhow::anyhow!("--namespace: {e}"))?;
    }
    let key = match &args.key {
        Some(path) => {
            let pem = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("--key {}: {e}", path.display()))?;
            Some(PublicKey::from_pem(&pem, &path.display().to_string())?)
        }
        None if args.require_signatures => {
            anyhow::bail!("--require-signatures needs --key FILE: a signature of {reference} can only be verified with its signer's public key")
        }
        None => None,
    };
    let dir = &args.plugins;
    if !dir.is_dir() {
        anyhow::bail!("plugin directory {} does not exist", dir.display());
    }
    let mut lock = Lock::read(dir).map_err(anyhow::Error::msg)?;
    let wasm_path = dir.join(format!("{name}.wasm"));
    let reference_text = reference.to_string();
    let request = PullRequest { name: &name, reference: &reference_text, update: args.update, verifying: key.is_some() };
    let pinned = lock.admit(dir, &request)?;

    // Everything that talks to the registry runs under one deadline: a registry that answers
    // slowly (or a byte at a time) must not hold the pull past it.
    let network = async {
        let conn = Connection::open(&reference, &args.registry.access(), false).await?;
        let max_manifest = Bound { bytes: args.max_manifest_size, flag: "--max-manifest-size" };
        let current = match &reference.digest {
            Some(d) => d.clone(),
            None => resolve(&conn, &reference, max_manifest).await?.ok_or_else(|| anyhow::anyhow!("{reference}: not found in the registry"))?,
        };
        let target = lock::target(pinned.as_ref(), &request, &current);
        let options = FetchOptions {
            key: key.as_ref(),
            identity: args.signed_identity.as_deref(),
            max_size: Bound { bytes: args.max_plugin_size, flag: "--max-plugin-size" },
            max_manifest,
        };
        let fetched = fetch(&conn, &reference.at_digest(&target.digest), &options).await?;
        anyhow::Ok((fetched, target.notes))
    };
    let (fetched, notes): (Fetched, Vec<String>) = tokio::time::timeout(args.pull_timeout, network).await.map_err(|_| {
        anyhow::anyhow!(
            "{reference}: the pull did not finish within {} (--pull-timeout); nothing was written. Raise --pull-timeout for a slow registry",
            humantime::format_duration(args.pull_timeout)
        )
    })??;

    let toml_path = config::manifest_path(&wasm_path);
    let toml = plugin_manifest_text(fetched.manifest.as_deref(), args.namespace.as_deref(), &toml_path)?;
    let entry = LockEntry {
        name: name.clone(),
        reference: reference_text.clone(),
        digest: fetched.digest.clone(),
        wasm: fetched.wasm_digest.clone(),
        key: fetched.key.clone(),
        pulled: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
    };
    lock.set(entry);
    // The lock goes first and the .wasm last: `serve --watch` reloads on the .wasm, and by then
    // the lock already pins it.
    let mut files: Vec<(PathBuf, Vec<u8>)> = vec![(Lock::path(dir), lock.to_text().into_bytes())];
    if let Some(toml) = toml {
        files.push((toml_path, toml.into_bytes()));
    }
    files.push((wasm_path.clone(), fetched.wasm));
    install(&files)?;

    for note in &notes {
        eprintln!("corral: {note}");
    }
    let signed = match &fetched.key {
        Some(fp) => format!("signature verified with key {fp}"),
        None => "signature not checked (no --key)".to_owned(),
    };
    println!("pulled {reference} ({}) into {}; {signed}", fetched.digest, wasm_path.display());
    Ok(ExitCode::SUCCESS)
}

/// A plugin name becomes a file name: kept to what is safe there and in messages.
fn check_plugin_name(name: &str) -> anyhow::Result<()> {
    let ok = !name.is_empty() && name.len() <= 64 && !name.starts_with('.') && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if !ok {
        anyhow::bail!("plugin name {name:?} must be 1-64 characters of A-Z, a-z, 0-9, `.`, `_` and `-`, not starting with `.`");
    }
    Ok(())
}

/// The `NAME.toml` to write, if any: the artifact's manifest layer, with `namespace` set when
/// `--namespace` was given. `None` leaves an existing `NAME.toml` alone.
fn plugin_manifest_text(layer: Option<&str>, namespace: Option<&str>, path: &Path) -> anyhow::Result<Option<String>> {
    let text = layer.unwrap_or("");
    let parsed: toml::Table =
        text.parse().map_err(|e: toml::de::Error| anyhow::anyhow!("the artifact's plugin manifest ({}) is not TOML: {}", path.display(), e.message()))?;
    let Some(ns) = namespace else { return Ok(layer.map(str::to_owned)) };
    if parsed.get("namespace").is_some_and(|v| v.as_str() == Some(ns)) {
        return Ok(Some(text.to_owned()));
    }
    // Top-level keys must precede the first table, so the author's own `namespace` line (if
    // any) is dropped and ours leads the file.
    let mut out = format!("namespace = {}\n", toml::Value::String(ns.to_owned()));
    let mut in_table = false;
    for line in text.lines() {
        in_table |= line.trim_start().starts_with('[');
        let is_namespace = !in_table && line.split('=').next().is_some_and(|k| k.trim() == "namespace");
        if !is_namespace {
            out.push_str(line);
            out.push('\n');
        }
    }
    Ok(Some(out))
}

/// Writes every file beside its final name, then renames them into place in order; on any
/// failure the staged files are removed and nothing was replaced.
fn install(files: &[(PathBuf, Vec<u8>)]) -> anyhow::Result<()> {
    let staged: Vec<PathBuf> = files
        .iter()
        .map(|(path, _)| {
            let file = path.file_name().unwrap_or_default().to_string_lossy();
            path.with_file_name(format!(".{file}.pulling"))
        })
        .collect();
    let cleanup = || {
        for s in &staged {
            let _ = std::fs::remove_file(s);
        }
    };
    for ((path, bytes), stage) in files.iter().zip(&staged) {
        if let Err(e) = write_synced(stage, bytes) {
            cleanup();
            anyhow::bail!("cannot write {}: {e}", path.display());
        }
    }
    for ((path, _), stage) in files.iter().zip(&staged) {
        if let Err(e) = std::fs::rename(stage, path) {
            cleanup();
            anyhow::bail!("cannot move {} into place: {e}", path.display());
        }
    }
    Ok(())
}

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::File::create(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_leads_the_manifest() {
        let p = Path::new("x.toml");
        assert_eq!(plugin_manifest_text(None, None, p).unwrap(), None);
        assert_eq!(plugin_manifest_text(None, Some("acme"), p).unwrap().unwrap(), "namespace = \"acme\"\n");
        let text = "namespace = \"old\"\n[limits]\ntimeout = \"1s\"\n";
        let out = plugin_manifest_text(Some(text), Some("acme"), p).unwrap().unwrap();
        assert_eq!(out, "namespace = \"acme\"\n[limits]\ntimeout = \"1s\"\n");
        assert!(plugin_manifest_text(Some("[limits"), None, p).unwrap_err().to_string().contains("not TOML"));
    }

    #[test]
    fn plugin_names_are_file_names() {
        assert!(check_plugin_name("echo-2.x").is_ok());
        for bad in ["", ".hidden", "a/b", "a b"] {
            assert!(check_plugin_name(bad).is_err(), "{bad}");
        }
    }
}
