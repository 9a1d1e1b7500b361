//! The live policy and its hot reload: the file is watched (its directory, since editors replace
//! a file by renaming another over it), and a change that parses replaces the policy whole; one
//! that does not is logged with the file, line and key, and the last good policy stays.
//!
//! A policy must be taken only when it is complete: half a policy parses (its allows without
//! the denies that followed them). A file renamed over the old one (a new inode: the documented
//! way, write a new file then `mv` it) is complete once it reads the same twice, [`QUIET`]
//! apart. A file written in place (`>`, or an editor that truncates first) may be read between
//! two writes of a slow writer, so it must stay unchanged (its text, size, time and inode)
//! through a longer [`SETTLE`] window; and a file that changed while it was read is never taken.

use std::future::Future;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use notify_debouncer_mini::notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_mini::{new_debouncer, DebounceEventResult, Debouncer};

use super::file::{load, parse, PolicyError};
use super::rules::Policy;

/// How long a file renamed into place must stay unchanged before it is taken.
const QUIET: Duration = Duration::from_millis(100);

/// How long a file written in place must stay unchanged before it is taken: longer than a
/// writer pauses between the parts of one policy (the rename needs no such wait).
const SETTLE: Duration = Duration::from_secs(2);

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
                let (allow, deny, limit) = (policy.allows.len(), policy.denies.len(), policy.limits.len());
                *self.current.write().unwrap() = Some(Arc::new(policy));
                // Said once it is in force: whoever waits for the line (an operator's script, a
                // test) must find the new policy deciding the next request.
                tracing::info!(file = %path.display(), allow, deny, limit, "policy reloaded");
                self.reloads.send_replace(Reload::Applied(n));
            }
            Err(e) => {
                tracing::error!("policy not reloaded, the last good one stays in force: {e}");
                self.reloads.send_replace(Reload::Refused(n, e));
            }
        }
    }
}

/// What identifies one state of the file: its inode, size and modification time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    inode: u64,
    len: u64,
    modified_ns: i128,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::metadata(path).ok()?;
        Some(Stamp { inode: meta.ino(), len: meta.len(), modified_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()) })
    }
}

/// The file's text and stamp, if it did not change while it was read.
fn read_whole(path: &Path) -> Option<(std::io::Result<String>, Option<Stamp>)> {
    let before = Stamp::of(path);
    let text = std::fs::read_to_string(path);
    let after = Stamp::of(path);
    (before == after).then_some((text, after))
}

/// The file's text and inode once it is complete: it read the same, with the same stamp, before
/// and after `pause` of [`QUIET`] (a new inode: renamed into place) or [`SETTLE`] (the inode
/// `taken` last, written in place). `None` while it changes (the change brings another event,
/// and the file is looked at again then). A file that cannot be read either time is an answer
/// too: the reload says why. The reads are synchronous: a policy file is small, and read only
/// when it changed.
async fn settled<F: Future<Output = ()>>(path: &Path, taken: Option<u64>, pause: impl FnOnce(Duration) -> F) -> Option<std::io::Result<(String, u64)>> {
    let (before, stamp) = read_whole(path)?;
    let in_place = stamp.is_some_and(|s| Some(s.inode) == taken);
    pause(if in_place { SETTLE } else { QUIET }).await;
    let (after, again) = read_whole(path)?;
    match (before, after, stamp) {
        (Ok(before), Ok(after), Some(stamp)) if before == after && again == Some(stamp) => Some(Ok((after, stamp.inode))),
        (Err(_), Err(e), _) => Some(Err(e)),
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
    // The file in force, as read at start: a change to the same inode is a write in place.
    let mut taken = Stamp::of(&path).map(|s| s.inode);
    let task = tokio::spawn(async move {
        while rx.recv().await.is_some() {
            while rx.try_recv().is_ok() {}
            match settled(&path, taken, tokio::time::sleep).await {
                Some(Ok((text, inode))) => {
                    taken = Some(inode);
                    policies.take(&path, parse(&text, &path));
                }
                Some(Err(_)) => policies.reload(&path),
                None => tracing::info!(
                    file = %path.display(),
                    "the policy file is changing: not taken until it stays unchanged (replace it whole: write a new file, then rename it over this one)"
                ),
            }
        }
    });
    Ok(Watcher { _debouncer: debouncer, _task: task })
}

#[cfg(test)]
mod settle_tests {
    use super::*;

    fn text(found: Option<std::io::Result<(String, u64)>>) -> Option<String> {
        found.map(|r| r.unwrap().0)
    }

    #[tokio::test]
    async fn a_file_is_taken_only_once_it_reads_the_same_twice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.toml");
        std::fs::write(&path, "[[allow]]\n").unwrap();
        assert_eq!(text(settled(&path, None, |_| async {}).await).as_deref(), Some("[[allow]]\n"));
        // Written to while it is read (here, truncated the way `>` starts): not taken.
        let during = |_| async { std::fs::write(&path, "").unwrap() };
        assert!(settled(&path, None, during).await.is_none());
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(settled(&path, None, |_| async {}).await, Some(Err(_))), "a file gone is an answer: the reload says why");
    }

    /// A writer that writes the allows, pauses 0.6 s and writes the denies, in place: the half
    /// file is never taken, the whole one is once it stays unchanged for the settle window; a
    /// file renamed into place is taken after the short pause. On tokio's paused clock.
    #[tokio::test(start_paused = true)]
    async fn a_file_written_in_place_is_taken_only_once_it_stays_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.toml");
        std::fs::write(&path, "hide = false\n").unwrap();
        let inode = Stamp::of(&path).unwrap().inode;
        let (allows, denies) = ("[[allow]]\nwho = { anyone = true }\ntools = \"*\"\n", "[[deny]]\nwho = { anyone = true }\ntools = \"rm\"\n");
        std::fs::write(&path, allows).unwrap();
        assert_eq!(Stamp::of(&path).unwrap().inode, inode, "written in place");
        let writer = {
            let path = path.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(600)).await;
                use std::io::Write;
                std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(denies.as_bytes()).unwrap();
            })
        };
        let started = tokio::time::Instant::now();
        assert!(settled(&path, Some(inode), tokio::time::sleep).await.is_none(), "the half-written file is not taken");
        assert_eq!(started.elapsed(), SETTLE, "it waited the settle window");
        writer.await.unwrap();
        let whole = text(settled(&path, Some(inode), tokio::time::sleep).await).unwrap();
        assert_eq!(whole, format!("{allows}{denies}"));

        // Renamed into place: a new inode, taken after the short pause.
        let next = dir.path().join("policy.toml.new");
        std::fs::write(&next, allows).unwrap();
        std::fs::rename(&next, &path).unwrap();
        let started = tokio::time::Instant::now();
        let (taken, new_inode) = settled(&path, Some(inode), tokio::time::sleep).await.unwrap().unwrap();
        assert_eq!((taken.as_str(), started.elapsed()), (allows, QUIET));
        assert_ne!(new_inode, inode);
    }
}
