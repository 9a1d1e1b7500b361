//! The directory the host serves: each project's last good component and its manifest, put
//! there whole (a temporary file renamed over the old one) once its build has succeeded.
//!
//! The project's own output is not served in place: a build rewrites it as it goes, and a
//! failed build may leave it half written, while the staged copy only changes to a complete
//! component. A manifest's relative `[permissions] dirs` host paths are made absolute against
//! the project, where the author wrote them relative to.

use std::path::{Path, PathBuf};

use super::project::Project;

/// A directory of this process's own, removed when dropped.
pub struct Stage {
    dir: PathBuf,
}

impl Stage {
    /// Creates a fresh stage directory (owner-only) under the temporary directory.
    pub fn create() -> anyhow::Result<Stage> {
        let dir = std::env::temp_dir().join(format!("corral-dev-{}", std::process::id()));
        // Left by an earlier process with the same id.
        let _ = std::fs::remove_dir_all(&dir);
        std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
            .create(&dir)
            .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
        Ok(Stage { dir })
    }

    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Where `project`'s component is served from.
    pub fn component(&self, project: &Project) -> PathBuf {
        self.dir.join(format!("{}.wasm", project.name))
    }

    /// Puts `project`'s built component and its manifest in place; returns whether either
    /// differs from what was there (a build that changed nothing, such as a save of a comment in
    /// a compiled language, is not swapped in again).
    pub fn put(&self, project: &Project) -> anyhow::Result<bool> {
        let manifest = std::fs::read_to_string(&project.manifest).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", project.manifest.display()))?;
        let output = project.output();
        let bytes = std::fs::read(&output).map_err(|e| anyhow::anyhow!("the build succeeded but left no component at {}: {e}", output.display()))?;
        let manifest = absolute_dirs(&manifest, &project.dir);
        let staged_manifest = self.dir.join(format!("{}.toml", project.name));
        let same = |path: &Path, new: &[u8]| std::fs::read(path).is_ok_and(|old| old == new);
        if same(&staged_manifest, manifest.as_bytes()) && same(&self.component(project), &bytes) {
            return Ok(false);
        }
        replace(&staged_manifest, manifest.as_bytes())?;
        replace(&self.component(project), &bytes)?;
        Ok(true)
    }
}

impl Drop for Stage {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn replace(to: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let tmp = to.with_file_name(format!(".{}.tmp", to.file_name().unwrap_or_default().to_string_lossy()));
    std::fs::write(&tmp, bytes).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, to).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", to.display()))
}

/// The manifest with each relative `[[permissions.dirs]] host` joined to `project`. A manifest
/// that does not parse is left as it is: the host refuses it with the error it would give.
fn absolute_dirs(manifest: &str, project: &Path) -> String {
    let Ok(mut table) = manifest.parse::<toml::Table>() else { return manifest.to_owned() };
    let dirs = table.get_mut("permissions").and_then(|p| p.get_mut("dirs")).and_then(|d| d.as_array_mut());
    let Some(dirs) = dirs else { return manifest.to_owned() };
    for dir in dirs {
        if let Some(host) = dir.get_mut("host") {
            if let Some(path) = host.as_str().map(Path::new).filter(|p| p.is_relative()) {
                *host = toml::Value::String(project.join(path).to_string_lossy().into_owned());
            }
        }
    }
    toml::to_string(&table).unwrap_or_else(|_| manifest.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_granted_dirs_are_the_projects() {
        let text = "[limits]\ntimeout = \"5s\"\n\n[[permissions.dirs]]\nhost = \"data\"\nguest = \"/data\"\n\n[[permissions.dirs]]\nhost = \"/srv\"\nguest = \"/srv\"\n";
        let out: toml::Table = absolute_dirs(text, Path::new("/proj")).parse().unwrap();
        let dirs = out["permissions"]["dirs"].as_array().unwrap();
        assert_eq!(dirs[0]["host"].as_str(), Some("/proj/data"));
        assert_eq!(dirs[1]["host"].as_str(), Some("/srv"));
        assert_eq!(out["limits"]["timeout"].as_str(), Some("5s"));
        assert_eq!(absolute_dirs("not [ toml", Path::new("/p")), "not [ toml");
    }
}
