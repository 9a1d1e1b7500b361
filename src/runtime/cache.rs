//! The AOT compile cache: precompiled components on disk, so a warm start maps code instead of
//! running Cranelift (milliseconds to seconds per plugin).
//!
//! An entry is `<dir>/<engine fingerprint>/<sha256 of the component>.cwasm`, plus a `.sum`
//! file holding the SHA-256 of the artifact. The fingerprint covers the wasmtime version and
//! every engine setting that changes generated code, so another engine never even looks at an
//! entry; the sum is checked before a load, because `deserialize_file` trusts its input
//! completely and a flipped bit in machine code must never run. Entries are written to a
//! temporary file and renamed into place, so readers see whole files or none.
//!
//! Hashing is what a warm start would spend most of its instructions on (every byte of every
//! plugin for its key, every byte of every artifact for its sum), so both digests are
//! remembered beside the file's [`Stamp`] once the file has settled: `<dev>-<ino>.source` says
//! which key a plugin file's bytes have, `<key>.seen` that the artifact was checked whole in the
//! state it is still in. A file whose stamp moved (any write does) is hashed again.
//! [`super::stamp`] says what could fool a stamp.

use std::hash::Hasher;
use std::io::Write;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::Engine;

use super::stamp::{self, Stamp};

/// Bumped when the layout of the cache changes.
const FORMAT: &str = "v1";

/// Precompiled components of one engine configuration, kept on disk under the digest of their bytes.
pub struct CompileCache {
    dir: PathBuf,
}

/// How a component was obtained, for logs and `corral compile`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Found in the cache and its checksum matched: mapped, not compiled.
    Hit,
    /// Not in the cache: compiled and stored.
    Stored,
    /// An entry was there but unusable (named why): discarded, compiled and stored again.
    Replaced(String),
    /// Compiled, but the cache could not store it (named why); the component still loads.
    NotStored(String),
}

impl CompileCache {
    /// Opens (creating, owner-only) the part of `root` that belongs to `engine`'s configuration.
    pub fn open(root: &Path, engine: &Engine) -> std::io::Result<CompileCache> {
        CompileCache::open_for(root, engine, super::Compiler::Cranelift)
    }

    /// As [`CompileCache::open`], for an engine that compiles with `compiler`: code of one
    /// compiler is never served to an engine of the other.
    pub fn open_for(root: &Path, engine: &Engine, compiler: super::Compiler) -> std::io::Result<CompileCache> {
        let dir = root.join(format!("{FORMAT}-{}", fingerprint(engine, compiler)));
        create_private_dir(&dir)?;
        Ok(CompileCache { dir })
    }

    /// The directory entries of this engine go to.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The component for `bytes`, from the cache when a sound entry exists, else compiled.
    #[cfg(test)]
    pub fn load(&self, engine: &Engine, bytes: &[u8]) -> wasmtime::Result<(Component, CacheOutcome)> {
        self.load_keyed(engine, bytes).map(|(component, outcome, _)| (component, outcome))
    }

    /// Like `load`, also giving the entry's key (the SHA-256 of `bytes`, in hex), which names
    /// what else is cached about this component (its tool list, [`super::tool_list`]).
    pub fn load_keyed(&self, engine: &Engine, bytes: &[u8]) -> wasmtime::Result<(Component, CacheOutcome, String)> {
        self.load_with_key(engine, bytes, hex(&Sha256::digest(bytes)))
    }

    /// The key of a plugin file's `bytes` (their SHA-256, in hex): remembered from an earlier
    /// start when the file's `stamp` (taken as it was read, `None` if it changed meanwhile) is
    /// the one recorded then, else computed and, once the file has settled, recorded.
    pub(super) fn key_of(&self, bytes: &[u8], stamp: Option<Stamp>) -> String {
        let Some(stamp) = stamp else { return hex(&Sha256::digest(bytes)) };
        let record = self.dir.join(format!("{}.source", stamp.file_name()));
        if let Some(key) = stamp::recalled(&record, stamp).filter(|key| is_hex_digest(key)) {
            return key;
        }
        let key = hex(&Sha256::digest(bytes));
        if let Some(text) = stamp::record(stamp, &key, std::time::SystemTime::now()) {
            // A record that cannot be written costs the next start a hash, nothing more.
            let _ = write_atomically(&self.dir, &record, text.as_bytes());
        }
        key
    }

    /// Like `load_keyed` for a key the caller has (from [`CompileCache::key_of`]).
    pub(super) fn load_with_key(&self, engine: &Engine, bytes: &[u8], key: String) -> wasmtime::Result<(Component, CacheOutcome, String)> {
        let artifact = self.dir.join(format!("{key}.cwasm"));
        let sum = self.dir.join(format!("{key}.sum"));
        let seen = self.dir.join(format!("{key}.seen"));
        let problem = match verify(&artifact, &sum, &seen) {
            Ok(true) => match unsafe { Component::deserialize_file(engine, &artifact) } {
                // SAFETY: the artifact was written by `Engine::precompile_component` into a
                // directory only this user can write, and its digest was checked just now.
                Ok(component) => return Ok((component, CacheOutcome::Hit, key)),
                Err(e) => Some(format!("wasmtime refused it: {e}")),
            },
            Ok(false) => None,
            Err(why) => Some(why),
        };
        if problem.is_some() {
            let _ = std::fs::remove_file(&seen);
            let _ = std::fs::remove_file(&sum);
            let _ = std::fs::remove_file(&artifact);
        }
        let code = engine.precompile_component(bytes)?;
        // SAFETY: `code` was produced by this engine a moment ago.
        let component = unsafe { Component::deserialize(engine, &code)? };
        let outcome = match self.store(&code, &artifact, &sum) {
            Err(e) => CacheOutcome::NotStored(e.to_string()),
            Ok(()) => match problem {
                Some(why) => CacheOutcome::Replaced(why),
                None => CacheOutcome::Stored,
            },
        };
        Ok((component, outcome, key))
    }

    fn store(&self, code: &[u8], artifact: &Path, sum: &Path) -> std::io::Result<()> {
        write_atomically(&self.dir, artifact, code)?;
        write_atomically(&self.dir, sum, hex(&Sha256::digest(code)).as_bytes())
    }
}

/// `Ok(false)`: no entry. `Err`: an entry that must not be used, and why. An artifact whose
/// stamp is the one `seen` recorded after its last whole check is not read again; one checked
/// whole is recorded there once it has settled.
fn verify(artifact: &Path, sum: &Path, seen: &Path) -> Result<bool, String> {
    let expected = match std::fs::read_to_string(sum) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return if artifact.exists() { Err("its checksum file is missing".into()) } else { Ok(false) };
        }
        Err(e) => return Err(format!("cannot read its checksum: {e}")),
    };
    let expected = expected.trim();
    let (code, stamp) = match stamp::read_stamped_if(artifact, |stamp| stamp::recalled(seen, stamp).is_some_and(|sum| sum == expected)) {
        Ok(None) => return Ok(true),
        Ok(Some(read)) => read,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err("its artifact is missing".into()),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    if hex(&Sha256::digest(&code)) != expected {
        return Err("its contents do not match their checksum (corrupt or truncated)".into());
    }
    if let Some(text) = stamp.and_then(|stamp| stamp::record(stamp, expected, std::time::SystemTime::now())) {
        let _ = write_atomically(seen.parent().unwrap_or(Path::new(".")), seen, text.as_bytes());
    }
    Ok(true)
}

fn is_hex_digest(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| b.is_ascii_hexdigit())
}

pub(super) fn write_atomically(dir: &Path, path: &Path, data: &[u8]) -> std::io::Result<()> {
    let mut tmp = tempfile_in(dir)?;
    tmp.1.write_all(data)?;
    tmp.1.sync_all()?;
    std::fs::rename(&tmp.0, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp.0);
    })
}

fn tempfile_in(dir: &Path) -> std::io::Result<(PathBuf, std::fs::File)> {
    let path = dir.join(format!(".tmp-{}", uuid::Uuid::new_v4().simple()));
    let file = std::fs::OpenOptions::new().write(true).create_new(true).open(&path)?;
    Ok((path, file))
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// A stable name for everything about `engine` that decides whether an artifact can run in it.
fn fingerprint(engine: &Engine, compiler: super::Compiler) -> String {
    struct ShaHasher(Sha256);
    impl Hasher for ShaHasher {
        fn write(&mut self, bytes: &[u8]) {
            self.0.update(bytes);
        }
        fn finish(&self) -> u64 {
            unreachable!("only the digest is read")
        }
    }
    let mut hasher = ShaHasher(Sha256::new());
    std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut hasher);
    // wasmtime's hash may or may not tell the compilers apart; this does. Cranelift's
    // fingerprint stays what it was before there was a choice, so existing caches stay valid.
    if compiler != super::Compiler::Cranelift {
        hasher.0.update(compiler.name().as_bytes());
    }
    hex(&hasher.0.finalize()[..12])
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ECHO: &str = r#"(component (core module (func (export "f"))) )"#;

    fn engine(fuel: bool) -> Engine {
        let mut config = wasmtime::Config::new();
        config.consume_fuel(fuel);
        Engine::new(&config).unwrap()
    }

    fn entries(cache: &CompileCache) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(cache.dir()).unwrap().map(|e| e.unwrap().path()).collect();
        v.sort();
        v
    }

    #[test]
    fn miss_then_hit() {
        let root = tempfile::tempdir().unwrap();
        let engine = engine(true);
        let cache = CompileCache::open(root.path(), &engine).unwrap();
        let bytes = wat::parse_str(ECHO).unwrap();
        assert_eq!(cache.load(&engine, &bytes).unwrap().1, CacheOutcome::Stored);
        assert_eq!(entries(&cache).len(), 2, "an artifact and its checksum");
        assert_eq!(cache.load(&engine, &bytes).unwrap().1, CacheOutcome::Hit);
    }

    #[test]
    fn corrupt_and_truncated_entries_are_rebuilt() {
        let root = tempfile::tempdir().unwrap();
        let engine = engine(true);
        let cache = CompileCache::open(root.path(), &engine).unwrap();
        let bytes = wat::parse_str(ECHO).unwrap();
        cache.load(&engine, &bytes).unwrap();
        let artifact = entries(&cache).into_iter().find(|p| p.extension().is_some_and(|e| e == "cwasm")).unwrap();
        let good = std::fs::read(&artifact).unwrap();

        let mut flipped = good.clone();
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0x40;
        std::fs::write(&artifact, &flipped).unwrap();
        assert!(matches!(cache.load(&engine, &bytes).unwrap().1, CacheOutcome::Replaced(why) if why.contains("checksum")));
        assert_eq!(std::fs::read(&artifact).unwrap(), good, "the entry was rebuilt");

        std::fs::write(&artifact, &good[..good.len() / 3]).unwrap();
        assert!(matches!(cache.load(&engine, &bytes).unwrap().1, CacheOutcome::Replaced(_)));
        assert_eq!(cache.load(&engine, &bytes).unwrap().1, CacheOutcome::Hit);
    }

    /// Waits (bounded) until `path` has been left alone long enough for its stamp to be recorded.
    fn settle(path: &Path) {
        let deadline = std::time::Instant::now() + stamp::SETTLED * 5;
        loop {
            let meta = std::fs::metadata(path).unwrap();
            let ctime = std::time::UNIX_EPOCH + std::time::Duration::new(meta.ctime() as u64, meta.ctime_nsec() as u32);
            if std::time::SystemTime::now().duration_since(ctime).is_ok_and(|age| age > stamp::SETTLED) {
                return;
            }
            assert!(std::time::Instant::now() < deadline, "{} never settled", path.display());
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_settled_plugin_is_not_hashed_again_until_it_changes() {
        let root = tempfile::tempdir().unwrap();
        let engine = engine(true);
        let cache = CompileCache::open(root.path(), &engine).unwrap();
        let file = root.path().join("echo.wasm");
        std::fs::write(&file, wat::parse_str(ECHO).unwrap()).unwrap();
        let key = |cache: &CompileCache| {
            let (bytes, stamp) = stamp::read_stamped(&file).unwrap();
            (cache.key_of(&bytes, stamp), hex(&Sha256::digest(&bytes)))
        };
        let (fresh, actual) = key(&cache);
        assert_eq!(fresh, actual);
        let sources = || entries(&cache).into_iter().filter(|p| p.extension().is_some_and(|e| e == "source")).collect::<Vec<_>>();
        assert!(sources().is_empty(), "a file just written is not vouched for by its stamp");

        settle(&file);
        assert_eq!(key(&cache).0, actual);
        let [record] = &sources()[..] else { panic!("one record: {:?}", entries(&cache)) };
        // Recalled, not recomputed: a record naming another key is believed while the stamp holds
        // (which is why only the cache's owner may write there).
        let text = std::fs::read_to_string(record).unwrap().replace(&actual, &"0".repeat(64));
        std::fs::write(record, text).unwrap();
        assert_eq!(key(&cache).0, "0".repeat(64));

        // The same number of bytes written in place: the stamp moves, the new bytes are hashed.
        let mut changed = std::fs::read(&file).unwrap();
        let last = changed.len() - 1;
        changed[last] ^= 1;
        std::fs::write(&file, &changed).unwrap();
        assert_eq!(key(&cache).0, hex(&Sha256::digest(&changed)), "never the old file's key");
    }

    #[test]
    fn a_settled_artifact_is_not_read_again_until_it_changes() {
        let root = tempfile::tempdir().unwrap();
        let engine = engine(true);
        let cache = CompileCache::open(root.path(), &engine).unwrap();
        let bytes = wat::parse_str(ECHO).unwrap();
        assert_eq!(cache.load(&engine, &bytes).unwrap().1, CacheOutcome::Stored);
        let find = |ext: &str| entries(&cache).into_iter().find(|p| p.extension().is_some_and(|e| e == ext));
        let artifact = find("cwasm").unwrap();
        assert_eq!(cache.load(&engine, &bytes).unwrap().1, CacheOutcome::Hit);
        assert!(find("seen").is_none(), "an artifact just written is checked whole each time");

        settle(&artifact);
        assert_eq!(cache.load(&engine, &bytes).unwrap().1, CacheOutcome::Hit);
        assert!(find("seen").is_some(), "checked whole once settled, and recorded");
        assert_eq!(cache.load(&engine, &bytes).unwrap().1, CacheOutcome::Hit);

        // A bit flipped in place (same size): the stamp moved, so it is read, caught and rebuilt.
        let good = std::fs::read(&artifact).unwrap();
        let mut flipped = good.clone();
        let middle = flipped.len() / 2;
        flipped[middle] ^= 0x40;
        std::fs::write(&artifact, &flipped).unwrap();
        assert!(matches!(cache.load(&engine, &bytes).unwrap().1, CacheOutcome::Replaced(why) if why.contains("checksum")));
        assert_eq!(std::fs::read(&artifact).unwrap(), good);
        assert!(find("seen").is_none(), "the record went with the entry");
    }

    #[test]
    fn another_engine_configuration_never_uses_the_entry() {
        let root = tempfile::tempdir().unwrap();
        let (with_fuel, without_fuel) = (engine(true), engine(false));
        let a = CompileCache::open(root.path(), &with_fuel).unwrap();
        let b = CompileCache::open(root.path(), &without_fuel).unwrap();
        let winch = CompileCache::open_for(root.path(), &with_fuel, crate::runtime::Compiler::Winch).unwrap();
        assert_ne!(winch.dir(), a.dir(), "each compiler has its own entries");
        assert_ne!(a.dir(), b.dir(), "the fingerprint covers code-changing settings");
        let bytes = wat::parse_str(ECHO).unwrap();
        a.load(&with_fuel, &bytes).unwrap();
        assert_eq!(b.load(&without_fuel, &bytes).unwrap().1, CacheOutcome::Stored);

        // An artifact of the wrong engine under the right name (a copied cache, say) is caught
        // by wasmtime's own check and replaced.
        let take = |c: &CompileCache, ext: &str| entries(c).into_iter().find(|p| p.extension().is_some_and(|e| e == ext)).unwrap();
        std::fs::copy(take(&a, "cwasm"), take(&b, "cwasm")).unwrap();
        std::fs::copy(take(&a, "sum"), take(&b, "sum")).unwrap();
        assert!(matches!(b.load(&without_fuel, &bytes).unwrap().1, CacheOutcome::Replaced(why) if why.contains("wasmtime")));
        assert_eq!(b.load(&without_fuel, &bytes).unwrap().1, CacheOutcome::Hit);
    }
}
