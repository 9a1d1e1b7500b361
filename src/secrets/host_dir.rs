//! Host secrets: one file per `PLUGIN/NAME` under `--secrets-dir`, the layout of a mounted
//! Kubernetes Secret (whose files are symlinks through `..data`, swapped at once on an update).
//!
//! Each file is read when a call needs it, so an updated Secret is seen by the next call and a
//! half-written file never is (Kubernetes swaps a whole directory; an operator renames a file
//! into place). Nothing is taken from corral's own environment.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::value::{Secret, ValueError, MAX_VALUE};

/// The operator's secrets directory.
#[derive(Clone, Debug)]
pub struct HostSecrets {
    dir: PathBuf,
}

/// Why a host secret is not there (paths and names, never content).
#[derive(Debug, thiserror::Error)]
pub enum HostSecretError {
    /// No file for it.
    #[error("the operator has not given secret {name} of plugin {plugin} (no file {path})")]
    Missing {
        /// The plugin.
        plugin: String,
        /// The secret's name.
        name: String,
        /// The file looked for.
        path: String,
    },
    /// The file cannot be read.
    #[error("secret {name} of plugin {plugin}: cannot read {path}: {source}")]
    Unreadable {
        /// The plugin.
        plugin: String,
        /// The secret's name.
        name: String,
        /// The file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file holds no usable value.
    #[error("secret {name} of plugin {plugin} in {path}: {problem}")]
    Invalid {
        /// The plugin.
        plugin: String,
        /// The secret's name.
        name: String,
        /// The file.
        path: String,
        /// What is wrong with the value.
        problem: ValueError,
    },
}

impl HostSecrets {
    /// The directory `dir`, which must exist.
    pub fn new(dir: &Path) -> Result<HostSecrets, String> {
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => Ok(HostSecrets { dir: dir.to_owned() }),
            Ok(_) => Err(format!("--secrets-dir {}: not a directory", dir.display())),
            Err(e) => Err(format!("--secrets-dir {}: {e}", dir.display())),
        }
    }

    /// The value of `plugin`'s `name`, read now. Plugin and secret names are checked at load
    /// (no `/`, no `..`), so the path stays inside the directory.
    pub fn get(&self, plugin: &str, name: &str) -> Result<Secret, HostSecretError> {
        let path = self.dir.join(plugin).join(name);
        let shown = || path.display().to_string();
        let file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(HostSecretError::Missing { plugin: plugin.to_owned(), name: name.to_owned(), path: shown() })
            }
            Err(source) => return Err(HostSecretError::Unreadable { plugin: plugin.to_owned(), name: name.to_owned(), path: shown(), source }),
        };
        let mut bytes = Vec::new();
        // One byte past the bound tells a file too long from one just long enough.
        file.take(MAX_VALUE as u64 + 2).read_to_end(&mut bytes).map_err(|source| HostSecretError::Unreadable {
            plugin: plugin.to_owned(),
            name: name.to_owned(),
            path: shown(),
            source,
        })?;
        Secret::from_input(bytes).map_err(|problem| HostSecretError::Invalid { plugin: plugin.to_owned(), name: name.to_owned(), path: shown(), problem })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// Writes `files` the way the kubelet does: into a fresh timestamped directory, then swaps
    /// the `..data` symlink to it; each top-level entry is a symlink through `..data`.
    fn kubelet_write(dir: &Path, generation: u32, files: &[(&str, &str)]) {
        let version = dir.join(format!("..2026_12_05_{generation}"));
        for (path, value) in files {
            let file = version.join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, value).unwrap();
        }
        let tmp = dir.join("..data_tmp");
        symlink(version.file_name().unwrap(), &tmp).unwrap();
        std::fs::rename(&tmp, dir.join("..data")).unwrap();
        for (path, _) in files {
            let top = path.split('/').next().unwrap();
            let link = dir.join(top);
            if link.symlink_metadata().is_err() {
                symlink(Path::new("..data").join(top), link).unwrap();
            }
        }
    }

    #[test]
    fn a_mounted_kubernetes_secret_is_read_through_its_symlinks_and_its_update_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        kubelet_write(dir.path(), 1, &[("tracker/WEBHOOK_KEY", "first\n")]);
        let host = HostSecrets::new(dir.path()).unwrap();
        assert_eq!(host.get("tracker", "WEBHOOK_KEY").unwrap().expose(), "first");
        kubelet_write(dir.path(), 2, &[("tracker/WEBHOOK_KEY", "second")]);
        assert_eq!(host.get("tracker", "WEBHOOK_KEY").unwrap().expose(), "second", "the update is read at the next call");

        let e = host.get("tracker", "OTHER").unwrap_err().to_string();
        assert!(e.contains("has not given secret OTHER of plugin tracker"), "{e}");
        std::fs::write(dir.path().join("..2026_12_05_2/tracker/EMPTY"), "").unwrap();
        let e = host.get("tracker", "EMPTY").unwrap_err().to_string();
        assert!(e.contains("the value is empty"), "{e}");
        assert!(HostSecrets::new(&dir.path().join("nowhere")).is_err());
    }
}
