//! `corral pull oci://…`: fetch a plugin from an OCI registry, verify it, and pin it in the
//! plugin directory's `corral.lock`.
//!
//! Everything is checked in memory first (digests, layout, signature, size, the manifest's
//! text); only then are the files staged beside their final names and renamed into place, so a
//! failed pull leaves the plugin directory as it was.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::config;
use crate::oci::client::Access;
use crate::oci::cosign::PublicKey;
use crate::oci::pull::{fetch, resolve, FetchOptions};
use crate::oci::{Connection, OciRef};
use crate::registry::lock::{Lock, LockEntry};

/// Flags shared by `pull` and `publish`: how registries are reached.
#[derive(clap::Args)]
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
#[derive(clap::Args)]
pub struct PullArgs {
    /// The plugin: oci://HOST[:PORT]/REPO:TAG or oci://HOST[:PORT]/REPO@sha256:DIGEST.
    #[arg(value_name = "REFERENCE")]
    pub reference: String,
    /// The plugin directory it is written to (NAME.wasm, NAME.toml, corral.lock).
    #[arg(long, env = "CORRAL_PLUGINS", value_name = "DIR")]
    pub plugins: PathBuf,
    /// Verify the cosign signature with this public key (PEM, ECDSA P-256, as `cosign
    /// generate-key-pair` writes cosign.pub); an unsigned artifact is then refused.
    #[arg(long, env = "CORRAL_COSIGN_KEY", value_name = "cosign.pub")]
    pub key: Option<PathBuf>,
    /// Refuse artifacts without a valid signature (needs --key).
    #[arg(long, env = "CORRAL_REQUIRE_SIGNATURES")]
    pub require_signatures: bool,
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
    #[arg(long, env = "CORRAL_MAX_PLUGIN_SIZE", default_value = "64MiB", value_parser = config::parse_size)]
    pub max_plugin_size: u64,
    // Undocumented on purpose: clap would show a doc comment on a flattened group as help text.
    #[allow(missing_docs)]
    #[command(flatten)]
    pub registry: RegistryArgs,
}

/// Runs `corral pull`.
pub async fn run(args: PullArgs) -> anyhow::Result<ExitCode> {
    let reference = OciRef::parse(&args.reference).map_err(anyhow::Error::msg)?;
    let name = args.name.clone().unwrap_or_else(|| reference.default_name().to_owned());
    check_plugin_name(&name)?;
    if let Some(ns) = &args.namespace {
        config::check_namespace(ns).map_err(|e| anyhow::anyhow!("--namespace: {e}"))?;
    }
    let key = match &args.key {
        Some(path) => {
            let pem = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("--key {}: {e}", path.display()))?;
            Some(PublicKey::from_pem(&pem, &path.display().to_string()).map_err(anyhow::Error::msg)?)
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
    let pinned = lock.entry(&name).cloned();
    match &pinned {
        None if wasm_path.exists() => anyhow::bail!(
            "{} exists and {} does not pin it (it was not pulled): remove it, or pull under another --name",
            wasm_path.display(),
            Lock::path(dir).display()
        ),
        Some(entry) if entry.reference != reference.to_string() && !args.update => {
            anyhow::bail!("plugin `{name}` is pinned to {} in {}; pass --update to replace it with {reference}", entry.reference, Lock::path(dir).display())
        }
        _ => {}
    }
    if let (Some(entry), None) = (&pinned, &key) {
        if let Some(fingerprint) = &entry.key {
            anyhow::bail!("plugin `{name}` was pulled with its signature verified by key {fingerprint}; pass that key with --key to pull it again");
        }
    }

    let conn = Connection::open(&reference, &args.registry.access(), false).await.map_err(anyhow::Error::msg)?;
    let current = match &reference.digest {
        Some(d) => d.clone(),
        None => resolve(&conn, &reference).await.map_err(anyhow::Error::msg)?.ok_or_else(|| anyhow::anyhow!("{reference}: not found in the registry"))?,
    };
    let mut target = current.clone();
    let mut notes = Vec::new();
    if let Some(entry) = pinned.as_ref().filter(|e| e.reference == reference.to_string()) {
        if entry.digest != current {
            if args.update {
                notes.push(format!("{reference} moved from {} to {current}: updated", entry.digest));
            } else {
                notes.push(format!("{reference} moved from {} to {current}: keeping the pinned {} (pass --update to move)", entry.digest, entry.digest));
                target = entry.digest.clone();
            }
        }
    }
    if let Some(entry) = pinned.as_ref().filter(|e| e.reference != reference.to_string()) {
        notes.push(format!("plugin `{name}` moved from {} ({}) to {reference} ({current})", entry.reference, entry.digest));
    }
    let options = FetchOptions { key: key.as_ref(), max_size: args.max_plugin_size };
    let fetched = fetch(&conn, &reference.at_digest(&target), &options).await.map_err(anyhow::Error::msg)?;

    let toml_path = config::manifest_path(&wasm_path);
    let toml = plugin_manifest_text(fetched.manifest.as_deref(), args.namespace.as_deref(), &toml_path)?;
    let entry = LockEntry {
        name: name.clone(),
        reference: reference.to_string(),
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
