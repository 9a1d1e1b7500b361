//! The token files, watched while the host serves: a change that parses to at least one token
//! replaces the listener's tokens at once (a token added works, a revoked one is refused from
//! the next request on, and a console sign-in made with it ends); one that holds none is logged
//! and the tokens in force stay, so a half-saved file never turns authentication off.
//!
//! As for the policy file, the directory is watched (editors replace a file by renaming another
//! over it), and a file is read only once it reads the same twice [`QUIET`] apart, so a token
//! file written in place is never taken half written.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify_debouncer_mini::notify::{RecommendedWatcher, RecursiveMode};
use notify_debouncer_mini::{new_debouncer, DebounceEventResult, Debouncer};

use crate::transport::http::{parse_tokens, Tokens};

/// How long a file must stay unchanged before it is read again.
const QUIET: Duration = Duration::from_millis(100);

/// A token file being watched; dropping it stops the watch.
pub struct TokenWatch {
    _debouncer: Debouncer<RecommendedWatcher>,
    _task: tokio::task::JoinHandle<()>,
}

/// Watches `path` (the file of `flag`) and replaces `tokens` with what it holds whenever it
/// changes. Call inside the runtime.
pub fn watch(path: &Path, flag: &'static str, tokens: Arc<Tokens>) -> anyhow::Result<TokenWatch> {
    let path: PathBuf = std::path::absolute(path).map_err(|e| anyhow::anyhow!("{flag} {}: {e}", path.display()))?;
    let dir = path.parent().map(Path::to_owned).unwrap_or_else(|| PathBuf::from("/"));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let name = path.file_name().map(|n| n.to_owned());
    let mut debouncer = new_debouncer(QUIET, move |events: DebounceEventResult| match events {
        Ok(events) => {
            if events.iter().any(|e| e.path.file_name() == name.as_deref()) {
                let _ = tx.send(());
            }
        }
        Err(e) => tracing::error!("watching the tokens file of {flag}: {e}"),
    })
    .map_err(|e| anyhow::anyhow!("cannot watch {}: {e}", dir.display()))?;
    debouncer.watcher().watch(&dir, RecursiveMode::NonRecursive).map_err(|e| anyhow::anyhow!("cannot watch {}: {e}", dir.display()))?;
    let task = tokio::spawn(async move {
        while rx.recv().await.is_some() {
            while rx.try_recv().is_ok() {}
            reload(&path, flag, &tokens).await;
        }
    });
    Ok(TokenWatch { _debouncer: debouncer, _task: task })
}

/// Reads `path` once it has settled and replaces `tokens` with what it holds.
async fn reload(path: &Path, flag: &str, tokens: &Tokens) {
    let first = tokio::fs::read_to_string(path).await;
    tokio::time::sleep(QUIET).await;
    let text = match (first, tokio::fs::read_to_string(path).await) {
        (Ok(first), Ok(second)) if first == second => second,
        (Ok(_), Ok(_)) => return tracing::debug!(file = %path.display(), "the tokens file is still changing; read again at its next change"),
        (_, Err(e)) | (Err(e), _) => return tracing::error!("{flag} {}: {e}; the tokens in force stay", path.display()),
    };
    match tokens.replace(parse_tokens(&text, &path.display().to_string())) {
        Ok(()) => tracing::info!("{flag} {}: reloaded, {} token(s) in force", path.display(), tokens.len()),
        Err(why) => tracing::error!("{flag} {}: {why}", path.display()),
    }
}
