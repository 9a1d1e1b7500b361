//! Knowing that a file has not changed without reading it: what `stat` says about it, kept
//! beside the digest of its bytes, so a warm start does not hash every byte of every plugin and
//! of every precompiled artifact (two SHA-256 passes were most of a warm start's instructions).
//!
//! A [`Stamp`] is the file's device, inode, size, modification time and change time, to the
//! nanosecond. Writing to a file, truncating it, renaming another file over it or changing its
//! times all move its change time (`ctime`), which no unprivileged call can set back; replacing
//! it changes the inode. So a file whose stamp equals the one recorded when its digest was
//! computed still has those bytes.
//!
//! What could still fool it, and what is done about it:
//! - **A change within the clock's resolution.** File times advance in ticks (a few milliseconds
//!   on Linux, two seconds on FAT), so a write in the same tick as the recording, keeping the
//!   size, would keep the stamp. A stamp is therefore trusted only when the file had been left
//!   alone for [`SETTLED`] before it was recorded (git's "racily clean" rule): any later change
//!   lands in a later tick. A file recorded too soon is hashed again next time, and recorded then.
//! - **The clock stepped back** by more than [`SETTLED`] and a same-size write landing on the very
//!   same nanoseconds as before: not guarded against beyond the odds of it.
//! - **A file system without stable inode numbers or times** (some FUSE and network mounts) could
//!   show an old stamp for new bytes. Keep plugins and the cache on a local file system, or pass
//!   `--no-cache` (which hashes nothing and compiles everything).
//! - **Bytes that rot on the medium** without a write keep their stamp. The cache's own entries
//!   are verified in full when written and whenever their stamp moved; silent media corruption
//!   after that is for the file system's checksums (btrfs, ZFS) to catch.
//! - **Someone who can write the cache directory** could forge a record, but could as well
//!   replace the precompiled code itself: the directory is the trust boundary either way (owner
//!   only, and no plugin may be granted it).

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// How long a file must have been left alone before its stamp is recorded as proof of its bytes.
pub(super) const SETTLED: Duration = Duration::from_secs(2);

/// What `stat` says about one version of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Stamp {
    pub(super) fn of(meta: &std::fs::Metadata) -> Stamp {
        let ns = |secs: i64, nanos: i64| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime_ns: ns(meta.mtime(), meta.mtime_nsec()),
            ctime_ns: ns(meta.ctime(), meta.ctime_nsec()),
        }
    }

    /// A name for records about this file (whatever its path): its device and inode.
    pub(super) fn file_name(&self) -> String {
        format!("{}-{}", self.dev, self.ino)
    }

    /// Whether the file had been left alone for [`SETTLED`] at `now`, so that any change after
    /// it must move the stamp.
    fn settled_at(&self, now: SystemTime) -> bool {
        let Ok(now) = now.duration_since(SystemTime::UNIX_EPOCH) else { return false };
        let last_change = self.mtime_ns.max(self.ctime_ns);
        i128::try_from(now.as_nanos()).is_ok_and(|now| now - last_change >= SETTLED.as_nanos() as i128)
    }

    /// The line a record keeps: the five numbers, space-separated.
    fn to_line(self) -> String {
        format!("{} {} {} {} {}", self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns)
    }

    fn from_line(line: &str) -> Option<Stamp> {
        let mut fields = line.split(' ');
        let mut next = || fields.next()?.parse::<i128>().ok();
        let (dev, ino, size, mtime_ns, ctime_ns) = (next()?, next()?, next()?, next()?, next()?);
        Some(Stamp { dev: u64::try_from(dev).ok()?, ino: u64::try_from(ino).ok()?, size: u64::try_from(size).ok()?, mtime_ns, ctime_ns })
    }
}

/// A file's bytes, with its stamp when the file did not change while it was read (the same
/// stamp before and after).
pub(super) fn read_stamped(path: &Path) -> std::io::Result<(Vec<u8>, Option<Stamp>)> {
    Ok(read_stamped_if(path, |_| false)?.expect("never skipped"))
}

/// Like [`read_stamped`], unless `known` says the file's stamp (taken on the open file) vouches
/// for bytes already checked: then `None`, and nothing is read.
pub(super) fn read_stamped_if(path: &Path, known: impl FnOnce(Stamp) -> bool) -> std::io::Result<Option<(Vec<u8>, Option<Stamp>)>> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?;
    let before = Stamp::of(&file.metadata()?);
    if known(before) {
        return Ok(None);
    }
    let mut bytes = Vec::with_capacity(usize::try_from(before.size).unwrap_or(0));
    file.read_to_end(&mut bytes)?;
    let after = Stamp::of(&file.metadata()?);
    Ok(Some((bytes, (before == after).then_some(before))))
}

/// The digest recorded for `stamp` in the record at `path`, if the record is for that stamp.
/// A record is `<stamp line>\n<digest>\n`.
pub(super) fn recalled(path: &Path, stamp: Stamp) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let (line, digest) = text.split_once('\n')?;
    (Stamp::from_line(line)? == stamp).then(|| digest.trim_end().to_owned()).filter(|d| !d.is_empty())
}

/// The record for `stamp` and `digest`, or `None` while the file is too fresh to be recorded.
pub(super) fn record(stamp: Stamp, digest: &str, now: SystemTime) -> Option<String> {
    stamp.settled_at(now).then(|| format!("{}\n{digest}\n", stamp.to_line()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp_of(path: &Path) -> Stamp {
        Stamp::of(&std::fs::metadata(path).unwrap())
    }

    #[test]
    fn any_write_moves_the_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"aaaa").unwrap();
        let first = stamp_of(&path);
        // Same size, same modification time put back: the change time still moves.
        let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
        std::fs::write(&path, b"bbbb").unwrap();
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
        let second = stamp_of(&path);
        assert_eq!(first.size, second.size);
        assert_eq!(first.mtime_ns, second.mtime_ns);
        // The change time has the clock's resolution: wait (bounded) for a tick if both writes
        // landed in one, as the SETTLED rule assumes.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let mut second = second;
        while second == first && std::time::Instant::now() < deadline {
            std::fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
            second = stamp_of(&path);
        }
        assert_ne!(first, second, "a write and a restored mtime still change the stamp");
        // Replaced by a rename: another inode.
        let other = dir.path().join("g");
        std::fs::write(&other, b"bbbb").unwrap();
        std::fs::rename(&other, &path).unwrap();
        assert_ne!(stamp_of(&path).ino, first.ino);
    }

    #[test]
    fn a_record_is_made_only_for_a_settled_file_and_recalled_only_for_its_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"code").unwrap();
        let stamp = stamp_of(&path);
        assert_eq!(record(stamp, "abc", SystemTime::now()), None, "just written: too fresh to vouch for");
        let later = SystemTime::now() + SETTLED;
        let text = record(stamp, "abc", later).expect("settled");
        let memo = dir.path().join("memo");
        std::fs::write(&memo, &text).unwrap();
        assert_eq!(recalled(&memo, stamp).as_deref(), Some("abc"));
        let moved = Stamp { ctime_ns: stamp.ctime_ns + 1, ..stamp };
        assert_eq!(recalled(&memo, moved), None);
        std::fs::write(&memo, "1 2 3\nabc\n").unwrap();
        assert_eq!(recalled(&memo, stamp), None, "a damaged record is no record");
        assert_eq!(Stamp::from_line(&stamp.to_line()), Some(stamp));
    }

    #[test]
    fn read_stamped_gives_the_bytes_and_their_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"code").unwrap();
        let (bytes, stamp) = read_stamped(&path).unwrap();
        assert_eq!(bytes, b"code");
        assert_eq!(stamp, Some(stamp_of(&path)));
    }
}
