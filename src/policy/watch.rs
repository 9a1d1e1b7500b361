//! The live policy and its hot reload: the file is watched (its directory, since editors replace
//! a file by renaming another over it), and a change that parses replaces the policy whole; one
//! that does not is logged with the file, line and key, and the last good policy stays. A file
//! is taken only once it reads the same twice, [`QUIET`] apart: one written in place (`>`, or a
//! write that truncates first) can be read half done, and half a policy parses — its allows
//! without the denies that followed them.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use notify_debouncer_mini::notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_mini::{new_debouncer, DebounceEventResult, Debouncer};

use super::file::{load, parse, PolicyError};
use super::rules::Policy;

/// How long the file must stay unchanged before it is read again.
const QUIET: Duration = Duration::from_millis(100);

/// What the last reload did, for whoever waits on it (tests, a console).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reload {
    /// Nothing reloaded yet.
    Started,
    /// The file's `n`th reload took effect.
    Applied(u64),
    /// The file's `n`th reload was refused: the last good policy stays.
    Refused(u64, PolicyError),
}

/// The policy in force: none (everything allowed) or the last good one read from the file.
#[derive(Debug)]
pub struct Policies {
    current: RwLock<Option<Arc<Policy>>>,
    reloads: tokio::sync::watch::Sender<Reload>,
}

impl Default for Policies {
    fn default() -> Policies {
        Policies::new(None)
    }
}

impl Policies {
    /// `policy` in force (`None`: no policy, everything allowed).
    pub fn new(policy: Option<Policy>) -> Policies {
        Policies { current: RwLock::new(policy.map(Arc::new)), reloads: tokio::sync::watch::channel(Reload::Started).0 }
    }

    /// The policy now, `None` when there is no policy file.
    pub fn current(&self) -> Option<Arc<Policy>> {
        self.current.read().unwrap().clone()
    }

    /// Tells what each reload did, from the next one on.
    pub fn reloads(&self) -> tokio::sync::watch::Receiver<Reload> {
        self.reloads.subscribe()
    }

    /// Reads `path` again: the new policy if it parses, else the old one stays and the error
    /// is logged.
    pub fn reload(&self, path: &Path) {
        self.take(path, load(path));
    }

    /// `loaded` (the policy read from `path`, or why it was not) in force if it is one.
    fn take(&self, path: &Path, loaded: Result<Policy, PolicyError>) {
        let n = match *self.reloads.borrow() {
            Reload::Started => 1,
            Reload::Applied(n) | Reload::Refused(n, _) => n + 1,
        };
        match loaded {
            Ok(policy) => {
                tracing::info!(file = %path.display(), allow = policy.allows.len(), deny = policy.denies.len(), limit = policy.limits.len(), "policy reloaded");
                *self.current.write().unwrap() = Some(Arc::new(policy));
                self.reloads.send_replace(Reload::Applied(n));
            }
            Err(e) => {
                tracing::error!("policy not reloaded, the last good one stays in force: {e}");
                self.reloads.send_replace(Reload::Refused(n, e));
            }
        }
    }
}

/// The file's text if it reads the same before and after `pause`; `None` while it changes (the
/// change brings another event, and the file is read again then). A file that cannot be read
/// either time is an answer too: the reload says why.
async fn settled(path: &Path, pause: impl Future<Output = ()>) -> Option<std::io::Result<String>> {
    let before = tokio::fs::read_to_string(path).await;
    pause.await;
    let after = tokio::fs::read_to_string(path).await;
    match (before, after) {
        (Ok(before), Ok(after)) if before == after => Some(Ok(after)),
        (Err(_), Err(e)) => Some(Err(e)),
        _ => None,
    }
}

/// Watching stops when this is dropped.
pub struct Watcher {
    _debouncer: Debouncer<RecommendedWatcher>,
    _task: tokio::task::JoinHandle<()>,
}

/// Watches the policy file at `path` and reloads `policies` when it changes. Must be called
/// inside a tokio runtime.
pub fn watch(path: &Path, policies: Arc<Policies>) -> anyhow::Result<Watcher> {
    let path: PathBuf = std::path::absolute(path).map_err(|e| anyhow::anyhow!("--policy {}: {e}", path.display()))?;
    let dir = path.parent().map(Path::to_owned).unwrap_or_else(|| PathBuf::from("/"));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let name = path.file_name().map(|n| n.to_owned());
    let mut debouncer = new_debouncer(QUIET, move |events: DebounceEventResult| match events {
        Ok(events) => {
            if events.iter().any(|e| e.path.file_name() == name.as_deref()) {
                let _ = tx.send(());
            }
        }
        Err(e) => tracing::error!("watching the policy file: {e}"),
    })
    .map_err(|e| anyhow::anyhow!("cannot watch {}: {e}", dir.display()))?;
    debouncer.watcher().watch(&dir, RecursiveMode::NonRecursive).map_err(|e| anyhow::anyhow!("cannot watch {}: {e}", dir.display()))?;
    tracing::info!("watching {} for policy changes", path.display());
    let task = tokio::spawn(async move {
        while rx.recv().await.is_some() {
            while rx.try_recv().is_ok() {}
            match settled(&path, tokio::time::sleep(QUIET)).await {
                Some(Ok(text)) => policies.take(&path, parse(&text, &path)),
                Some(Err(_)) => policies.reload(&path),
                None => tracing::debug!(file = %path.display(), "the policy file is still changing; read again at its next change"),
            }
        }
    });
    Ok(Watcher { _debouncer: debouncer, _task: task })
}

#[cfg(test)]
mod settle_tests {
    use super::*;

    #[tokio::test]
    async fn a_file_is_taken_only_once_it_reads_the_same_twice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.toml");
        std::fs::write(&path, "[[allow]]\n").unwrap();
        assert_eq!(settled(&path, async {}).await.map(Result::unwrap).as_deref(), Some("[[allow]]\n"));
        // Written to while it is read (here, truncated the way `>` starts): not taken.
        let during = async { std::fs::write(&path, "").unwrap() };
        assert!(settled(&path, during).await.is_none());
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(settled(&path, async {}).await, Some(Err(_))), "a file gone is an answer: the reload says why");
    }
}
