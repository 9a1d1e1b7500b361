//! Names the commit corral is built from, for `corral --version`: `CORRAL_COMMIT` (the full hash,
//! or `unknown`), `CORRAL_COMMIT_SHORT` (12 digits and the commit date, `0123456789ab 2026-12-05`) and
//! `CORRAL_COMMIT_DATE` (empty when unknown; the man page's date).
//!
//! Where the commit comes from, first found wins:
//! 1. `CORRAL_BUILD_COMMIT` (a hash, optionally followed by a space and a date), for packagers
//!    who build from a tree without git metadata;
//! 2. git, when the crate is the top of a work tree (a clean clone, or a `git worktree`); not a
//!    repository the sources merely sit inside, which would name somebody else's commit;
//! 3. `.cargo_vcs_info.json`, which `cargo package` writes into the crate it packs;
//! 4. `.commit`, which `git archive` fills in (`export-subst` in `.gitattributes`), so a release
//!    tarball names its commit with no `.git` beside it.
//!
//! Nothing else goes in (no build time, no path, no host name), so two builds of one commit are
//! the same bytes. The script runs again only when the commit can have changed: the work tree's
//! `HEAD`, the branch it points to, `packed-refs` and the `HEAD` reflog, never on a change to a
//! source file. A new commit therefore recompiles the corral crate (and relinks its tests), not
//! its dependencies. Uncommitted changes are not marked: telling them would mean reading the whole
//! work tree at every build.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-env-changed=CORRAL_BUILD_COMMIT");
    let commit = from_env().or_else(|| from_git(&manifest_dir)).or_else(|| from_cargo_vcs_info(&manifest_dir)).or_else(|| from_archive(&manifest_dir));
    let commit = commit.unwrap_or_else(|| "unknown".to_owned());
    // "<hash> <date>", or a hash alone (from the environment), or "unknown".
    let (hash, date) = commit.split_once(' ').unwrap_or((&commit, ""));
    let short = if is_hash(hash) { &hash[..12] } else { hash };
    println!("cargo:rustc-env=CORRAL_COMMIT={hash}");
    println!("cargo:rustc-env=CORRAL_COMMIT_SHORT={}", format!("{short} {date}").trim_end());
    println!("cargo:rustc-env=CORRAL_COMMIT_DATE={date}");
}

fn from_env() -> Option<String> {
    let value = std::env::var("CORRAL_BUILD_COMMIT").ok()?;
    let value = value.trim();
    let hash = value.split(' ').next()?;
    if !is_hash(hash) {
        panic!("CORRAL_BUILD_COMMIT must start with a 40-hex-digit commit hash, not {value:?}");
    }
    Some(value.to_owned())
}

fn from_git(manifest_dir: &Path) -> Option<String> {
    let top = git(manifest_dir, &["rev-parse", "--show-toplevel"])?;
    if Path::new(&top).canonicalize().ok()? != manifest_dir.canonicalize().ok()? {
        return None;
    }
    // What moves when the commit does. A path that does not exist is left out: cargo would rerun
    // the script at every build for it.
    let mut watched = vec![git(manifest_dir, &["rev-parse", "--path-format=absolute", "--git-path", "HEAD"])?];
    if let Some(branch) = git(manifest_dir, &["symbolic-ref", "-q", "HEAD"]) {
        watched.extend(git(manifest_dir, &["rev-parse", "--path-format=absolute", "--git-path", &branch]));
    }
    for path in ["packed-refs", "logs/HEAD"] {
        watched.extend(git(manifest_dir, &["rev-parse", "--path-format=absolute", "--git-path", path]));
    }
    for path in watched.iter().filter(|path| Path::new(path).exists()) {
        println!("cargo:rerun-if-changed={path}");
    }
    git(manifest_dir, &["log", "-1", "--format=%H %cs"])
}

fn from_cargo_vcs_info(manifest_dir: &Path) -> Option<String> {
    let text = read_watched(&manifest_dir.join(".cargo_vcs_info.json"))?;
    // {"git": {"sha1": "<40 hex>", ...}, "path_in_vcs": ""}: the one field wanted, found without
    // a JSON parser in the build script.
    let after = &text[text.find("\"sha1\"")? + "\"sha1\"".len()..];
    let start = after.find('"')? + 1;
    let hash = &after[start..start + 40.min(after.len() - start)];
    is_hash(hash).then(|| hash.to_owned())
}

fn from_archive(manifest_dir: &Path) -> Option<String> {
    let text = read_watched(&manifest_dir.join(".commit"))?;
    let text = text.trim();
    // Unsubstituted (`$Format:...$`) outside a `git archive`.
    is_hash(text.split(' ').next()?).then(|| text.to_owned())
}

/// A file's text, watched for changes when it exists (a missing path would rerun the script at
/// every build).
fn read_watched(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    println!("cargo:rerun-if-changed={}", path.display());
    Some(text)
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let output = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    Some(text.trim().to_owned()).filter(|text| !text.is_empty())
}

fn is_hash(text: &str) -> bool {
    text.len() == 40 && text.bytes().all(|b| b.is_ascii_hexdigit())
}
