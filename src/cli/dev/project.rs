//! Finding plugin projects: a directory whose manifest (`NAME.toml`) has a `[build]` table, or
//! one `corral new` made before manifests had one (`NAME.toml` and an executable `build.sh`,
//! which writes `dist/NAME.wasm`).
//!
//! Each directory named on the command line is a project, or holds projects one level down.

use std::path::{Path, PathBuf};

use crate::config::{build_spec, BuildSpec};

/// One plugin project.
#[derive(Clone, Debug)]
pub struct Project {
    /// The plugin's name: its manifest's and its component's file name.
    pub name: String,
    /// The project directory, absolute.
    pub dir: PathBuf,
    /// `NAME.toml`, which the built component is served with.
    pub manifest: PathBuf,
    /// How it builds.
    pub build: BuildSpec,
}

impl Project {
    /// The component the build writes.
    pub fn output(&self) -> PathBuf {
        self.dir.join(&self.build.output)
    }
}

/// Files named `*.toml` that belong to tools, never plugin manifests.
const NOT_MANIFESTS: &[&str] =
    &[super::fixtures::FILE, "Cargo.toml", "pyproject.toml", "rust-toolchain.toml", "config.toml", "rustfmt.toml", "clippy.toml", "deny.toml"];

/// The projects in `dirs`, each directory being a project or holding some; an error names a
/// directory with none, a broken `[build]` table, or a plugin name found twice.
pub fn find(dirs: &[PathBuf]) -> anyhow::Result<Vec<Project>> {
    let mut projects: Vec<Project> = Vec::new();
    for dir in dirs {
        let dir = dir.canonicalize().map_err(|e| anyhow::anyhow!("{}: {e}", dir.display()))?;
        let found = match in_dir(&dir)? {
            Some(project) => vec![project],
            None => {
                let mut found = Vec::new();
                let mut entries: Vec<PathBuf> =
                    std::fs::read_dir(&dir).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", dir.display()))?.flatten().map(|e| e.path()).collect();
                entries.sort();
                for sub in entries.into_iter().filter(|p| p.is_dir()) {
                    found.extend(in_dir(&sub)?);
                }
                found
            }
        };
        if found.is_empty() {
            anyhow::bail!(
                "no plugin project in {}: a project's manifest NAME.toml names its build command in a [build] table \
                 (`corral new NAME` makes one)",
                dir.display()
            );
        }
        for project in found {
            if let Some(other) = projects.iter().find(|p| p.name == project.name) {
                anyhow::bail!("two projects build plugin `{}`: {} and {}", project.name, other.dir.display(), project.dir.display());
            }
            projects.push(project);
        }
    }
    Ok(projects)
}

/// The project `dir` is, if it is one.
fn in_dir(dir: &Path) -> anyhow::Result<Option<Project>> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(None) };
    let mut manifests: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml") && p.is_file())
        .filter(|p| !p.file_name().is_some_and(|n| NOT_MANIFESTS.iter().any(|m| n == *m)))
        .collect();
    manifests.sort();
    let mut found: Vec<Project> = Vec::new();
    for manifest in manifests {
        let name = manifest.file_stem().unwrap_or_default().to_string_lossy().into_owned();
        let project = |build| Project { name: name.clone(), dir: dir.to_owned(), manifest: manifest.clone(), build };
        match build_spec(&manifest, &name) {
            Ok(Some(build)) => found.push(project(build)),
            // A project of `corral new` from before `[build]`.
            Ok(None) if is_executable(&dir.join("build.sh")) => {
                let output = PathBuf::from(format!("dist/{name}.wasm"));
                found.push(project(BuildSpec { command: "./build.sh".into(), output, watch: Vec::new() }))
            }
            Ok(None) => {}
            // Named after its directory, as `corral new` names them: a manifest, if broken.
            Err(e) if dir.file_name().is_some_and(|d| d.to_string_lossy() == name) => return Err(e.into()),
            Err(_) => {}
        }
    }
    match found.len() {
        0 | 1 => Ok(found.pop()),
        _ => anyhow::bail!(
            "{} holds several plugin manifests with a [build] table ({}); give each plugin a directory of its own",
            dir.display(),
            found.iter().map(|p| p.manifest.file_name().unwrap_or_default().to_string_lossy().into_owned()).collect::<Vec<_>>().join(", ")
        ),
    }
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_directory_is_a_project_or_holds_projects() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path().canonicalize().unwrap();
        write(&root.join("a/a.toml"), "[build]\ncommand = \"make\"\noutput = \"out/a.wasm\"\n");
        write(&root.join("a/Cargo.toml"), "[package]\nname = \"a\"\n");
        write(&root.join("b/b.toml"), "[limits]\ntimeout = \"5s\"\n");
        write(&root.join("b/build.sh"), "#!/bin/sh\n");
        std::fs::set_permissions(root.join("b/build.sh"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        write(&root.join("notes/readme.txt"), "not a project");

        let projects = find(std::slice::from_ref(&root)).unwrap();
        let names: Vec<&str> = projects.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(projects[0].output(), root.join("a/out/a.wasm"));
        assert_eq!(projects[1].build.command, "./build.sh");
        assert_eq!(projects[1].output(), root.join("b/dist/b.wasm"));

        let one = find(&[root.join("a")]).unwrap();
        assert_eq!(one.len(), 1);
        let twice = find(&[root.join("a"), root.clone()]).unwrap_err().to_string();
        assert!(twice.contains("two projects build plugin `a`"), "{twice}");
        let none = find(&[root.join("notes")]).unwrap_err().to_string();
        assert!(none.contains("no plugin project in"), "{none}");
    }

    #[test]
    fn a_broken_build_table_is_named() {
        let root = tempfile::tempdir().unwrap();
        write(&root.path().join("c/c.toml"), "[build]\ncommand = \"make\"\noutput = \"../c.wasm\"\n");
        let e = find(&[root.path().join("c")]).unwrap_err().to_string();
        assert!(e.contains("c.toml: [build] output: ../c.wasm must be relative"), "{e}");
    }
}
