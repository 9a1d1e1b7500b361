//! Watching a project's sources: a debounced signal that something a build reads changed.
//!
//! What a build writes is not a source: `target/`, `dist/` (and the directory of the `[build]`
//! output), `node_modules/`, `__pycache__/`, hidden files and directories (`.git`, `.venv`,
//! editors' swap files) and backups (`file~`) are ignored, or every build would start the next.
//! The project's top level is watched on its own and each other directory recursively, so a
//! Rust project's `target/` costs no inotify watches. Only writes count: inotify also reports
//! every file a build opens to read, which would make each build start the next. Events are
//! debounced: a batch is sent once the tree has been quiet for the debounce time, so an
//! editor's write-rename-chmod is one change.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use notify_debouncer_mini::notify::{self, EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use tokio::sync::mpsc;

use super::project::Project;

/// Directories no build reads from (as well as every hidden one).
const IGNORED_DIRS: &[&str] = &["target", "dist", "node_modules", "__pycache__"];

/// Watching stops when this is dropped.
pub struct Sources {
    _watcher: RecommendedWatcher,
}

/// Starts watching `project`: each debounced batch of relevant changes is sent as the changed
/// paths.
pub fn watch(project: &Project, quiet: Duration) -> anyhow::Result<(Sources, mpsc::UnboundedReceiver<Vec<PathBuf>>)> {
    let (changed, mut raw) = mpsc::unbounded_channel();
    let filter = Filter::new(project);
    let name = project.name.clone();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| match event {
        // Opening a file to read it is no change.
        Ok(event) if matches!(event.kind, EventKind::Access(_)) => {}
        Ok(event) => event.paths.into_iter().filter(|p| filter.is_source(p)).for_each(|p| drop(changed.send(p))),
        Err(e) => tracing::error!(plugin = %name, "watching the sources: {e}"),
    })
    .map_err(|e| anyhow::anyhow!("cannot watch {}: {e}", project.dir.display()))?;
    for (path, mode) in roots(project)? {
        watcher.watch(&path, mode).map_err(|e| anyhow::anyhow!("cannot watch {}: {e}", path.display()))?;
    }
    let (tx, rx) = mpsc::unbounded_channel();
    // Ends when the watcher (and with it `changed`) is dropped, or nobody listens any more.
    tokio::spawn(async move {
        while let Some(first) = raw.recv().await {
            let mut batch = vec![first];
            let open = loop {
                match tokio::time::timeout(quiet, raw.recv()).await {
                    Ok(Some(path)) => batch.push(path),
                    Ok(None) => break false,
                    Err(_quiet) => break true,
                }
            };
            batch.sort();
            batch.dedup();
            if tx.send(batch).is_err() || !open {
                return;
            }
        }
    });
    Ok((Sources { _watcher: watcher }, rx))
}

/// What to watch: the `[build] watch` paths (a file through its directory, which survives an
/// editor replacing the file), or the project's top level and each of its source directories.
fn roots(project: &Project) -> anyhow::Result<Vec<(PathBuf, RecursiveMode)>> {
    let mut roots = vec![(project.dir.clone(), RecursiveMode::NonRecursive)];
    let filter = Filter::new(project);
    if project.build.watch.is_empty() {
        let entries = std::fs::read_dir(&project.dir).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", project.dir.display()))?;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() && filter.is_source(&path) {
                roots.push((path, RecursiveMode::Recursive));
            }
        }
    } else {
        for watched in &project.build.watch {
            let path = project.dir.join(watched);
            if path.is_dir() {
                roots.push((path, RecursiveMode::Recursive));
            } else if let Some(parent) = path.parent().filter(|p| *p != project.dir) {
                roots.push((parent.to_owned(), RecursiveMode::NonRecursive));
            }
        }
    }
    Ok(roots)
}

/// Which changed paths are the project's sources.
struct Filter {
    dir: PathBuf,
    /// `[build] watch`, absolute; empty: everything not ignored.
    watched: Vec<PathBuf>,
    /// The directory the build writes its component to.
    output_dir: Option<PathBuf>,
    /// The project manifest: it holds the limits, so a change to it is a reload too.
    manifest: PathBuf,
}

impl Filter {
    fn new(project: &Project) -> Filter {
        let output_dir = project.build.output.parent().filter(|p| !p.as_os_str().is_empty()).map(|p| project.dir.join(p));
        Filter {
            dir: project.dir.clone(),
            watched: project.build.watch.iter().map(|w| project.dir.join(w)).collect(),
            output_dir,
            manifest: project.manifest.clone(),
        }
    }

    fn is_source(&self, path: &Path) -> bool {
        if path == self.manifest {
            return true;
        }
        let Ok(inside) = path.strip_prefix(&self.dir) else { return false };
        let ignored = inside.components().any(|c| match c {
            Component::Normal(part) => {
                let part = part.to_string_lossy();
                part.starts_with('.') || part.ends_with('~') || IGNORED_DIRS.contains(&part.as_ref())
            }
            _ => true,
        });
        if ignored || self.output_dir.as_ref().is_some_and(|out| path.starts_with(out)) {
            return false;
        }
        self.watched.is_empty() || self.watched.iter().any(|w| path.starts_with(w))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BuildSpec;

    fn project(dir: &Path, watch: &[&str]) -> Project {
        Project {
            name: "p".into(),
            dir: dir.to_owned(),
            manifest: dir.join("p.toml"),
            build: BuildSpec { command: "true".into(), output: "out/p.wasm".into(), watch: watch.iter().map(PathBuf::from).collect() },
        }
    }

    #[test]
    fn build_products_and_hidden_files_are_not_sources() {
        let dir = Path::new("/proj");
        let filter = Filter::new(&project(dir, &[]));
        for source in ["src/lib.rs", "app.js", "Cargo.toml", "p.toml", "lib/deep/x.c"] {
            assert!(filter.is_source(&dir.join(source)), "{source}");
        }
        for product in ["target/debug/x", "dist/p.wasm", "out/p.wasm", "node_modules/a/b.js", ".git/index", "src/.lib.rs.swp", "app.js~", "x/__pycache__/a.pyc"]
        {
            assert!(!filter.is_source(&dir.join(product)), "{product}");
        }
        assert!(!filter.is_source(Path::new("/elsewhere/a.rs")));
    }

    #[test]
    fn a_watch_list_narrows_the_sources_but_keeps_the_manifest() {
        let dir = Path::new("/proj");
        let filter = Filter::new(&project(dir, &["src", "Cargo.toml"]));
        assert!(filter.is_source(&dir.join("src/lib.rs")));
        assert!(filter.is_source(&dir.join("Cargo.toml")));
        assert!(filter.is_source(&dir.join("p.toml")));
        assert!(!filter.is_source(&dir.join("README.md")));
    }

    #[tokio::test]
    async fn a_saved_source_is_reported_once_and_a_build_product_never() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::create_dir_all(dir.join("target")).unwrap();
        let (_sources, mut changes) = watch(&project(&dir, &[]), Duration::from_millis(50)).unwrap();
        // A build product first: had it been reported, it would come before the source.
        std::fs::write(dir.join("target/out.o"), "x").unwrap();
        std::fs::write(dir.join("src/lib.rs"), "fn main() {}").unwrap();
        let paths = tokio::time::timeout(Duration::from_secs(60), changes.recv()).await.expect("a change").unwrap();
        assert!(paths.contains(&dir.join("src/lib.rs")), "{paths:?}");
        assert!(paths.iter().all(|p| !p.starts_with(dir.join("target"))), "{paths:?}");
    }

    #[tokio::test]
    async fn reading_a_source_is_no_change() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path().canonicalize().unwrap();
        std::fs::write(dir.join("read.rs"), "a").unwrap();
        let (_sources, mut changes) = watch(&project(&dir, &[]), Duration::from_millis(50)).unwrap();
        // A read, then a write: had the read been reported, it would come first, alone.
        std::fs::read(dir.join("read.rs")).unwrap();
        std::fs::write(dir.join("written.rs"), "b").unwrap();
        let paths = tokio::time::timeout(Duration::from_secs(60), changes.recv()).await.expect("a change").unwrap();
        assert_eq!(paths, [dir.join("written.rs")]);
    }
}
