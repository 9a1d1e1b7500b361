//! `corral.lock`: the plugins `corral pull` fetched, each pinned by digest.
//!
//! The lock is what makes a pulled plugin trustworthy after the pull: `corral serve` refuses a
//! listed plugin whose `.wasm` no longer hashes to the digest pinned here (a file swapped or
//! corrupted behind the operator's back), while a plugin the lock does not list loads as before.
//! The manifest beside it (`NAME.toml`) is not pinned: limits and grants are the operator's to
//! change.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::oci::sha256_digest;

/// The lock file's name inside a plugin directory.
pub const LOCK_FILE: &str = "corral.lock";

const HEADER: &str = "# Written by `corral pull`: every plugin below is pinned by digest, and `corral serve`\n\
# refuses one whose .wasm no longer matches. Edit with `corral pull` (--update moves a tag).\n\n";

/// The pinned plugins of one directory.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lock {
    /// One entry per pulled plugin, in name order.
    #[serde(default, rename = "plugin")]
    pub plugins: Vec<LockEntry>,
}

/// One pulled plugin.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct LockEntry {
    /// The plugin's name: its files are `NAME.wasm` and `NAME.toml`.
    pub name: String,
    /// What the operator asked for, e.g. `oci://ghcr.io/acme/search:1.2`.
    pub reference: String,
    /// The manifest digest the reference resolved to (`sha256:…`).
    pub digest: String,
    /// The digest of the component itself: what `corral serve` checks `NAME.wasm` against.
    pub wasm: String,
    /// Fingerprint (`sha256:` of the DER public key) of the key that verified the signature;
    /// absent when the artifact was pulled without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// When it was pulled (RFC 3339, UTC).
    pub pulled: String,
}

impl Lock {
    /// The lock file of plugin directory `dir`.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(LOCK_FILE)
    }

    /// Reads the lock of `dir`; a directory without one has an empty lock.
    pub fn read(dir: &Path) -> Result<Lock, String> {
        let path = Lock::path(dir);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lock::default()),
            Err(e) => return Err(format!("{}: cannot read: {e}", path.display())),
        };
        toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), e.message()))
    }

    /// The entry of plugin `name`, if it was pulled.
    pub fn entry(&self, name: &str) -> Option<&LockEntry> {
        self.plugins.iter().find(|e| e.name == name)
    }

    /// Adds `entry`, replacing the plugin's previous one.
    pub fn set(&mut self, entry: LockEntry) {
        self.plugins.retain(|e| e.name != entry.name);
        self.plugins.push(entry);
        self.plugins.sort_by(|a, b| a.name.cmp(&b.name));
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        format!("{HEADER}{}", toml::to_string(self).expect("a lock always serializes"))
    }
}

/// Checks a plugin's bytes against the lock of its directory: `Ok` when the lock does not list
/// it or its digest matches; otherwise the error names the file and both digests.
pub fn check_pinned(file: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let name = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    // An unreadable lock fails closed: the pins it holds cannot be checked.
    let lock = read_cached(dir).map_err(|e| format!("cannot check {} against its pin: {e}", file.display()))?;
    let Some(entry) = lock.entry(&name) else { return Ok(()) };
    let actual = sha256_digest(bytes);
    if actual == entry.wasm {
        return Ok(());
    }
    Err(format!(
        "{} has digest {actual} but {} pins {} (pulled from {}): the file changed since it was pulled; pull it again with `corral pull {}`",
        file.display(),
        Lock::path(dir).display(),
        entry.wasm,
        entry.reference,
        entry.reference
    ))
}

/// [`Lock::read`], parsed once per version of the file: loading a directory checks every plugin
/// against the same lock, and a start should not parse it once per plugin.
fn read_cached(dir: &Path) -> Result<std::sync::Arc<Lock>, String> {
    use std::sync::{Arc, Mutex};
    type Cached = (PathBuf, Option<(u64, std::time::SystemTime)>, Arc<Lock>);
    static LAST: Mutex<Option<Cached>> = Mutex::new(None);
    let path = Lock::path(dir);
    let version = std::fs::metadata(&path).ok().and_then(|m| Some((m.len(), m.modified().ok()?)));
    let Some(version) = version else { return Lock::read(dir).map(Arc::new) };
    if let Some((p, v, lock)) = LAST.lock().unwrap().as_ref() {
        if *p == path && *v == Some(version) {
            return Ok(lock.clone());
        }
    }
    let lock = Arc::new(Lock::read(dir)?);
    *LAST.lock().unwrap() = Some((path, Some(version), lock.clone()));
    Ok(lock)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, wasm: &str) -> LockEntry {
        LockEntry {
            name: name.into(),
            reference: format!("oci://127.0.0.1:5000/corral/{name}:1"),
            digest: "sha256:00".into(),
            wasm: wasm.into(),
            key: None,
            pulled: "2026-12-01T12:00:00Z".into(),
        }
    }

    #[test]
    fn round_trips_and_replaces_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let mut lock = Lock::default();
        lock.set(entry("b", "sha256:1"));
        lock.set(entry("a", "sha256:2"));
        lock.set(entry("b", "sha256:3"));
        std::fs::write(Lock::path(dir.path()), lock.to_text()).unwrap();
        let back = Lock::read(dir.path()).unwrap();
        assert_eq!(back, lock);
        assert_eq!(back.plugins.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(back.entry("b").unwrap().wasm, "sha256:3");
    }

    #[test]
    fn check_pinned_names_file_and_both_digests() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("echo.wasm");
        assert!(check_pinned(&file, b"anything").is_ok(), "no lock: loads as before");
        let mut lock = Lock::default();
        lock.set(entry("echo", &sha256_digest(b"good")));
        std::fs::write(Lock::path(dir.path()), lock.to_text()).unwrap();
        assert!(check_pinned(&file, b"good").is_ok());
        assert!(check_pinned(&dir.path().join("other.wasm"), b"x").is_ok(), "not listed: loads as before");
        let e = check_pinned(&file, b"evil").unwrap_err();
        assert!(e.contains("echo.wasm") && e.contains(&sha256_digest(b"evil")) && e.contains(&sha256_digest(b"good")), "{e}");
        std::fs::write(Lock::path(dir.path()), "[[plugin]]\nname = 1\n").unwrap();
        assert!(check_pinned(&file, b"good").unwrap_err().contains("corral.lock"));
    }

    #[test]
    fn digest_is_oci_form() {
        assert_eq!(sha256_digest(b""), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
