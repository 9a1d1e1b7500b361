//! `indexer`: a long task that survives a crash of its host.
//!
//! `index` walks a directory the manifest grants read-only, counts each text file's bytes, lines
//! and words, builds a small inverted index (word → files) and writes it as JSON to a directory
//! granted read-write. It reports progress per file and checkpoints every `every` files, so a
//! task interrupted by a crash runs again (its manifest says `resumable = true`) from its last
//! checkpoint rather than from the first file.
//!
//! Shows how to write a safe retry boundary:
//! - everything the run has learnt so far lives in the checkpoint state ([`State`]), which the
//!   host stores durably and replaces whole: a file processed after the last checkpoint is
//!   simply processed again, and never counted twice;
//! - the only output, the index, is written once at the end, atomically
//!   ([`corral_plugin::write_atomically`]): a crash mid-write leaves the old file or the new;
//! - the files are visited in a fixed (sorted) order, so "the next file" means the same after a
//!   restart.
//!
//! Manifest (`indexer.toml` beside `indexer.wasm`):
//!
//! ```toml
//! resumable = true
//! retries = 3
//! [limits]
//! task-timeout = "1h"
//! checkpoint = "8MiB"
//! [permissions]
//! dirs = [{ host = "docs", guest = "/data" }, { host = "index", guest = "/out", mode = "rw" }]
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use corral_plugin::{checkpoint, export, progress, resume, write_atomically, Json, TaskSupport, Tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct IndexArgs {
    /// The directory to index (a read-only grant), default `/data`.
    #[serde(default = "default_root")]
    root: String,
    /// Where `index.json` goes (a read-write grant), default `/out`.
    #[serde(default = "default_out")]
    out: String,
    /// Files between two checkpoints, default 100.
    #[serde(default = "default_every")]
    #[schemars(range(min = 1))]
    every: usize,
    /// Milliseconds to wait after each file (to watch progress, or to test a crash), default 0.
    #[serde(default)]
    pause_ms: u64,
}

fn default_root() -> String {
    "/data".into()
}
fn default_out() -> String {
    "/out".into()
}
fn default_every() -> usize {
    100
}

/// One file's counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
struct FileStats {
    bytes: u64,
    lines: u64,
    words: u64,
}

/// Everything the run knows; the checkpoint. `next` is the index (in sorted order) of the first
/// file not yet counted.
#[derive(Debug, Default, PartialEq, Serialize, Deserialize)]
struct State {
    next: usize,
    files: BTreeMap<String, FileStats>,
    /// Word → the files it occurs in, in file order.
    index: BTreeMap<String, Vec<String>>,
}

/// What `index.json` holds.
#[derive(Serialize)]
struct IndexFile<'a> {
    files: &'a BTreeMap<String, FileStats>,
    index: &'a BTreeMap<String, Vec<String>>,
}

#[derive(Serialize, JsonSchema)]
struct IndexOutput {
    /// Text files indexed in all.
    files: usize,
    /// Of them, counted in this run (fewer than `files` after a resume).
    processed_this_run: usize,
    /// The file this run started from (0: the first).
    resumed_at: usize,
    /// Distinct words.
    words: usize,
    /// SHA-256 of `index.json`.
    digest: String,
}

/// Every regular file under `root`, sorted, as paths relative to it.
fn walk(root: &Path) -> Result<Vec<String>, String> {
    let mut found = Vec::new();
    let mut dirs = vec![PathBuf::new()];
    while let Some(rel) = dirs.pop() {
        let entries = std::fs::read_dir(root.join(&rel)).map_err(|e| format!("cannot list {}: {e}", root.join(&rel).display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| e.to_string())?;
            let path = rel.join(entry.file_name());
            let kind = entry.file_type().map_err(|e| e.to_string())?;
            if kind.is_dir() {
                dirs.push(path);
            } else if kind.is_file() {
                found.push(path.to_string_lossy().into_owned());
            }
        }
    }
    found.sort();
    Ok(found)
}

fn count(state: &mut State, name: &str, text: &str) {
    let mut stats = FileStats { bytes: text.len() as u64, lines: text.lines().count() as u64, words: 0 };
    let mut seen = std::collections::BTreeSet::new();
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        stats.words += 1;
        seen.insert(word.to_lowercase());
    }
    for word in seen {
        state.index.entry(word).or_default().push(name.to_owned());
    }
    state.files.insert(name.to_owned(), stats);
}

fn index(args: IndexArgs) -> Result<(String, Json<IndexOutput>), String> {
    let root = Path::new(&args.root);
    let names = walk(root)?;
    let mut state: State = resume().unwrap_or_default();
    let resumed_at = state.next.min(names.len());
    let total = names.len() as f64;
    for (i, name) in names.iter().enumerate().skip(resumed_at) {
        // Not UTF-8: not a text file; skipped (and the same on every run).
        if let Ok(text) = std::fs::read_to_string(root.join(name)) {
            count(&mut state, name, &text);
        }
        state.next = i + 1;
        progress(state.next as f64, Some(total), Some(&format!("indexed {} of {} files", state.next, names.len())));
        if state.next % args.every == 0 && state.next < names.len() {
            checkpoint(&state)?;
        }
        if args.pause_ms > 0 {
            std::thread::sleep(std::time::Duration::from_millis(args.pause_ms));
        }
    }
    let json = serde_json::to_vec(&IndexFile { files: &state.files, index: &state.index }).map_err(|e| e.to_string())?;
    let out = Path::new(&args.out).join("index.json");
    write_atomically(&out, &json).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    let digest: String = Sha256::digest(&json).iter().map(|b| format!("{b:02x}")).collect();
    let output = IndexOutput { files: state.files.len(), processed_this_run: names.len() - resumed_at, resumed_at, words: state.index.len(), digest };
    let text = format!("indexed {} files ({} in this run), {} distinct words, into {}", output.files, output.processed_this_run, output.words, out.display());
    Ok((text, Json(output)))
}

fn tools() -> Vec<Tool> {
    vec![Tool::new("index", "Indexes the text files of a directory (counts and an inverted index), as a task that resumes after a crash.", index)
        .title("Index a directory")
        .task_support(TaskSupport::Required)]
}

export!(tools);

#[cfg(test)]
mod tests {
    use super::*;
    use corral_plugin::testing;
    use serde_json::json;

    fn corpus(n: usize) -> (tempfile::TempDir, tempfile::TempDir) {
        let (data, out) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for i in 0..n {
            std::fs::write(data.path().join(format!("f{i:04}.txt")), format!("alpha beta{}\ngamma {}\n", i % 7, i % 3)).unwrap();
        }
        (data, out)
    }

    fn args(data: &Path, out: &Path) -> serde_json::Value {
        json!({ "root": data.to_str().unwrap(), "out": out.to_str().unwrap(), "every": 10 })
    }

    #[test]
    fn a_crash_resumes_from_the_last_checkpoint_and_counts_nothing_twice() {
        testing::check(&tools());
        let (data, out) = corpus(95);
        let clean = testing::call(&tools(), "index", args(data.path(), out.path()));
        let clean_index = std::fs::read(out.path().join("index.json")).unwrap();
        assert_eq!(clean.structured.as_deref().map(|s| serde_json::from_str::<serde_json::Value>(s).unwrap()["files"].clone()), Some(json!(95)));

        testing::reset();
        std::fs::remove_file(out.path().join("index.json")).unwrap();
        testing::crash_after(4);
        assert!(testing::run_until_crash(|| testing::call(&tools(), "index", args(data.path(), out.path()))).is_none(), "it crashed");
        assert!(!out.path().join("index.json").exists(), "nothing written before the end");
        let resumed = testing::call(&tools(), "index", args(data.path(), out.path()));
        let output: serde_json::Value = serde_json::from_str(resumed.structured.as_deref().unwrap()).unwrap();
        assert_eq!((output["resumed_at"].clone(), output["processed_this_run"].clone(), output["files"].clone()), (json!(40), json!(55), json!(95)));
        assert_eq!(std::fs::read(out.path().join("index.json")).unwrap(), clean_index, "the same index as a clean run");
    }
}
