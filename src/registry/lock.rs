//! `corral.lock`: the plugins `corral pull` fetched, each pinned by digest.
//!
//! The lock is what makes a pulled plugin trustworthy after the pull: `corral serve` refuses a
//! listed plugin whose `.wasm` no longer hashes to the digest pinned here (a file swapped or
//! corrupted behind the operator's back), while a plugin the lock does not list loads as before.
//! The manifest beside it (`NAME.toml`) is not pinned: limits and grants are the operator's to
//! change.
//!
//! The pin policy lives here too, beside the pins it reads: what `corral pull` may write given
//! the lock ([`Lock::admit`]: a file it did not pull is never replaced, a name pinned to another
//! reference or verified with a key needs the operator to say so) and which digest it fetches
//! ([`target`]: a pinned tag stays where it was pinned until `--update`). `cli::pull` is the
//! command around it: flags, the registry, the files.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

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

/// What `corral pull` asks to write: plugin `name` from `reference`.
pub struct PullRequest<'a> {
    /// The plugin's name in the directory.
    pub name: &'a str,
    /// The reference as the operator wrote it (normalized: `OciRef`'s text).
    pub reference: &'a str,
    /// `--update`: move a pinned tag, or re-pin the name to another reference.
    pub update: bool,
    /// Whether the pull verifies a signature (`--key`).
    pub verifying: bool,
}

/// Why the lock does not let a pull write a plugin.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    /// `NAME.wasm` is there and the lock does not list it: the operator put it there.
    #[error("{file} exists and {lock} does not pin it (it was not pulled): remove it, or pull under another --name")]
    NotPulled {
        /// The plugin file.
        file: String,
        /// The lock file.
        lock: String,
    },
    /// The name is pinned to another reference.
    #[error("plugin `{name}` is pinned to {pinned} in {lock}; pass --update to replace it with {wanted}")]
    PinnedElsewhere {
        /// The plugin.
        name: String,
        /// The reference it is pinned to.
        pinned: String,
        /// The lock file.
        lock: String,
        /// The reference asked for.
        wanted: String,
    },
    /// It was pulled with a verified signature, and this pull verifies none.
    #[error("plugin `{name}` was pulled with its signature verified by key {fingerprint}; pass that key with --key to pull it again")]
    KeyRequired {
        /// The plugin.
        name: String,
        /// The key that verified it.
        fingerprint: String,
    },
}

/// The digest a pull fetches, and what the operator should hear about how it was chosen.
#[derive(Debug, PartialEq)]
pub struct Target {
    /// The manifest digest to fetch.
    pub digest: String,
    /// One line each: a moved tag kept or updated, a name re-pinned.
    pub notes: Vec<String>,
}

impl Lock {
    /// Whether `request` may write into plugin directory `dir` (before the registry is asked):
    /// returns the plugin's current pin, if any.
    pub fn admit(&self, dir: &Path, request: &PullRequest<'_>) -> Result<Option<LockEntry>, PinError> {
        let name = request.name;
        let wasm = dir.join(format!("{name}.wasm"));
        let pinned = self.entry(name).cloned();
        match &pinned {
            None if wasm.exists() => return Err(PinError::NotPulled { file: wasm.display().to_string(), lock: Lock::path(dir).display().to_string() }),
            Some(entry) if entry.reference != request.reference && !request.update => {
                return Err(PinError::PinnedElsewhere {
                    name: name.to_owned(),
                    pinned: entry.reference.clone(),
                    lock: Lock::path(dir).display().to_string(),
                    wanted: request.reference.to_owned(),
                });
            }
            _ => {}
        }
        if let Some(fingerprint) = pinned.as_ref().and_then(|e| e.key.as_ref()).filter(|_| !request.verifying) {
            return Err(PinError::KeyRequired { name: name.to_owned(), fingerprint: fingerprint.clone() });
        }
        Ok(pinned)
    }
}

/// The digest to fetch for `request`, given the plugin's pin and the digest its reference names
/// now: a pinned tag that moved stays pinned unless `--update`.
pub fn target(pinned: Option<&LockEntry>, request: &PullRequest<'_>, current: &str) -> Target {
    let reference = request.reference;
    let mut target = Target { digest: current.to_owned(), notes: Vec::new() };
    match pinned {
        Some(entry) if entry.reference == reference && entry.digest != current => {
            if request.update {
                target.notes.push(format!("{reference} moved from {} to {current}: updated", entry.digest));
            } else {
                target.notes.push(format!("{reference} moved from {} to {current}: keeping the pinned {} (pass --update to move)", entry.digest, entry.digest));
                target.digest = entry.digest.clone();
            }
        }
        Some(entry) if entry.reference != reference => {
            target.notes.push(format!("plugin `{}` moved from {} ({}) to {reference} ({current})", request.name, entry.reference, entry.digest));
        }
        _ => {}
    }
    target
}

/// Checks a plugin's digest (`sha256:<hex>` of its bytes) against the lock of its directory:
/// `Ok` when the lock does not list it or the digests match; otherwise the error names the file
/// and both digests.
pub fn check_pinned(file: &Path, actual: &str) -> Result<(), String> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let name = file.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    // An unreadable lock fails closed: the pins it holds cannot be checked.
    let lock = read_cached(dir).map_err(|e| format!("cannot check {} against its pin: {e}", file.display()))?;
    let Some(entry) = lock.entry(&name) else { return Ok(()) };
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
    use crate::oci::sha256_digest;

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
        let check = |file: &Path, bytes: &[u8]| check_pinned(file, &sha256_digest(bytes));
        assert!(check(&file, b"anything").is_ok(), "no lock: loads as before");
        let mut lock = Lock::default();
        lock.set(entry("echo", &sha256_digest(b"good")));
        std::fs::write(Lock::path(dir.path()), lock.to_text()).unwrap();
        assert!(check(&file, b"good").is_ok());
        assert!(check(&dir.path().join("other.wasm"), b"x").is_ok(), "not listed: loads as before");
        let e = check(&file, b"evil").unwrap_err();
        assert!(e.contains("echo.wasm") && e.contains(&sha256_digest(b"evil")) && e.contains(&sha256_digest(b"good")), "{e}");
        std::fs::write(Lock::path(dir.path()), "[[plugin]]\nname = 1\n").unwrap();
        assert!(check(&file, b"good").unwrap_err().contains("corral.lock"));
    }

    fn request<'a>(name: &'a str, reference: &'a str, update: bool, verifying: bool) -> PullRequest<'a> {
        PullRequest { name, reference, update, verifying }
    }

    #[test]
    fn admit_protects_files_it_did_not_pull_names_pinned_elsewhere_and_verified_pins() {
        let dir = tempfile::tempdir().unwrap();
        let mut lock = Lock::default();
        let r = "oci://127.0.0.1:5000/corral/echo:1";
        assert_eq!(lock.admit(dir.path(), &request("echo", r, false, false)).unwrap(), None);
        std::fs::write(dir.path().join("mine.wasm"), b"x").unwrap();
        let e = lock.admit(dir.path(), &request("mine", r, true, false)).unwrap_err().to_string();
        assert!(e.contains("mine.wasm exists") && e.contains("does not pin it"), "{e}");

        lock.set(entry("echo", "sha256:1"));
        assert_eq!(lock.admit(dir.path(), &request("echo", r, false, false)).unwrap().unwrap().wasm, "sha256:1");
        let other = "oci://127.0.0.1:5000/corral/other:1";
        let e = lock.admit(dir.path(), &request("echo", other, false, false)).unwrap_err().to_string();
        assert!(e.contains(&format!("pinned to {r}")) && e.contains("--update") && e.contains(other), "{e}");
        assert!(lock.admit(dir.path(), &request("echo", other, true, false)).is_ok());

        lock.set(LockEntry { key: Some("sha256:key".into()), ..entry("echo", "sha256:1") });
        let e = lock.admit(dir.path(), &request("echo", r, true, false)).unwrap_err().to_string();
        assert!(e.contains("sha256:key") && e.contains("--key"), "{e}");
        assert!(lock.admit(dir.path(), &request("echo", r, false, true)).is_ok());
    }

    #[test]
    fn a_moved_tag_stays_pinned_until_update() {
        let pinned = entry("echo", "sha256:w");
        let r = pinned.reference.clone();
        assert_eq!(target(None, &request("echo", &r, false, false), "sha256:new"), Target { digest: "sha256:new".into(), notes: vec![] });
        assert_eq!(target(Some(&pinned), &request("echo", &r, false, false), "sha256:00").notes, Vec::<String>::new());
        let kept = target(Some(&pinned), &request("echo", &r, false, false), "sha256:new");
        assert_eq!(kept.digest, "sha256:00");
        assert!(kept.notes[0].contains("moved from sha256:00 to sha256:new: keeping the pinned sha256:00"), "{kept:?}");
        let moved = target(Some(&pinned), &request("echo", &r, true, false), "sha256:new");
        assert_eq!(moved.digest, "sha256:new");
        assert!(moved.notes[0].ends_with(": updated"), "{moved:?}");
        let repinned = target(Some(&pinned), &request("echo", "oci://h/other:2", true, false), "sha256:o");
        assert_eq!(repinned.digest, "sha256:o");
        assert!(repinned.notes[0].contains("plugin `echo` moved from"), "{repinned:?}");
    }

    #[test]
    fn digest_is_oci_form() {
        assert_eq!(sha256_digest(b""), "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
}
