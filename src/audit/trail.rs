//! The sink records go into, and the thread that writes them.
//!
//! [`Audit`] is cheap to clone and to call: off, it builds nothing; on, it moves the record
//! into a bounded channel with `try_send` and returns. The writer thread formats and writes each
//! line, flushing once the channel is empty (a burst costs one write, not one per record), then
//! rests [`REST`] before it waits again: under load the records of that time make one burst, so
//! neither the callers nor the writer pay a wake-up and a write for every record. A
//! record that finds the channel full, or whose write fails (a full disk), is dropped and
//! counted, with a warning at most every [`WARN_EVERY`].

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::line::{call_line, operator_line, task_line};
use super::operator::OperatorRecord;
use super::record::{CallRecord, TaskRecord};

/// Records waiting for the writer; beyond this they are dropped. A few seconds of a busy host.
const CAPACITY: usize = 4096;

/// How long [`Audit::close`] waits for the writer to write what it holds.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// The shortest time between two warnings about dropped records.
const WARN_EVERY: Duration = Duration::from_secs(10);

/// Where the trail goes (`--audit-log PATH`, or `-`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Destination {
    /// The host's stderr, beside its log.
    Stderr,
    /// A file, appended to and created owner-only; reopened on [`Audit::reopen`] (SIGHUP), so
    /// a rotated file is let go.
    File(PathBuf),
}

impl Destination {
    /// `-` is stderr; anything else a path.
    pub fn parse(s: &str) -> Destination {
        match s {
            "-" => Destination::Stderr,
            path => Destination::File(PathBuf::from(path)),
        }
    }

    fn open(&self) -> io::Result<Box<dyn Write + Send>> {
        Ok(match self {
            Destination::Stderr => Box::new(io::stderr()),
            Destination::File(path) => {
                let file: File = OpenOptions::new().create(true).append(true).mode(0o600).open(path)?;
                Box::new(file)
            }
        })
    }
}

impl fmt::Display for Destination {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Destination::Stderr => f.write_str("stderr"),
            Destination::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// The audit trail's sink; off by default. See the module doc.
#[derive(Clone, Default)]
pub struct Audit(Option<Arc<Trail>>);

struct Trail {
    sender: SyncSender<Entry>,
    counters: Arc<Counters>,
    /// Whether records carry arguments and results (`--audit-arguments`).
    arguments: bool,
    writer: Mutex<Option<JoinHandle<()>>>,
}

/// What the request path and the writer share.
struct Counters {
    dropped: AtomicU64,
    /// Set by [`Audit::reopen`]: the writer reopens before its next write.
    reopen: AtomicBool,
    /// When the last warning about drops was logged, in ms since `epoch` (`u64::MAX`: never).
    warned_at: AtomicU64,
    epoch: Instant,
}

enum Entry {
    Call(CallRecord),
    Task(TaskRecord),
    Operator(OperatorRecord),
    /// Wakes the writer to reopen (the flag says so; this only wakes it when idle).
    Reopen,
    /// Write what came before, then stop.
    Close,
}

impl Audit {
    /// No trail: records are never built.
    pub fn off() -> Audit {
        Audit(None)
    }

    /// A trail written to `destination` (opened now, so a path that cannot be written is an
    /// error at start), with arguments and results when `arguments`.
    pub fn open(destination: Destination, arguments: bool) -> io::Result<Audit> {
        let out = destination.open()?;
        let (sender, receiver) = sync_channel(CAPACITY);
        let counters =
            Arc::new(Counters { dropped: AtomicU64::new(0), reopen: AtomicBool::new(false), warned_at: AtomicU64::new(u64::MAX), epoch: Instant::now() });
        let writer = Writer { destination, out: BufWriter::new(out), buffered: 0, counters: counters.clone() };
        let thread = std::thread::Builder::new().name("corral-audit".into()).spawn(move || writer.run(receiver))?;
        Ok(Audit(Some(Arc::new(Trail { sender, counters, arguments, writer: Mutex::new(Some(thread)) }))))
    }

    /// Whether records are kept (else the caller need not gather what they would say).
    pub fn is_on(&self) -> bool {
        self.0.is_some()
    }

    /// Whether records carry the call's arguments and result.
    pub fn with_arguments(&self) -> bool {
        self.0.as_ref().is_some_and(|t| t.arguments)
    }

    /// Keeps the call `record` makes (made only when the trail is on).
    pub fn call(&self, record: impl FnOnce() -> CallRecord) {
        if let Some(trail) = &self.0 {
            trail.send(Entry::Call(record()));
        }
    }

    /// Keeps the transition `record` makes (made only when the trail is on).
    pub fn task(&self, record: impl FnOnce() -> TaskRecord) {
        if let Some(trail) = &self.0 {
            trail.send(Entry::Task(record()));
        }
    }

    /// Keeps an operator's action.
    pub fn operator(&self, record: OperatorRecord) {
        if let Some(trail) = &self.0 {
            trail.send(Entry::Operator(record));
        }
    }

    /// Reopens the file before the next record (log rotation: SIGHUP).
    pub fn reopen(&self) {
        if let Some(trail) = &self.0 {
            trail.counters.reopen.store(true, Ordering::Release);
            // Full: the writer is busy and sees the flag at its next record.
            let _ = trail.sender.try_send(Entry::Reopen);
        }
    }

    /// Records dropped so far (the writer could not keep up, or a write failed).
    pub fn dropped(&self) -> u64 {
        self.0.as_ref().map_or(0, |t| t.counters.dropped.load(Ordering::Relaxed))
    }

    /// Writes every record sent so far and stops the writer (at shutdown), waiting at most
    /// [`CLOSE_WAIT`]: a writer stuck on a full pipe or a hung disk must not keep the host
    /// from exiting (what it still holds is lost then, and said so). Later records are dropped.
    pub fn close(&self) {
        let Some(trail) = &self.0 else { return };
        let Some(writer) = trail.writer.lock().unwrap().take() else { return };
        let deadline = Instant::now() + CLOSE_WAIT;
        // A full channel means a busy (or stuck) writer: retry until the deadline.
        loop {
            match trail.sender.try_send(Entry::Close) {
                Ok(()) => break,
                Err(TrySendError::Disconnected(_)) => return,
                Err(TrySendError::Full(_)) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
                Err(TrySendError::Full(_)) => return tracing::warn!("the audit log's writer is stuck; the records it still holds are lost"),
            }
        }
        while !writer.is_finished() {
            if Instant::now() >= deadline {
                return tracing::warn!("the audit log's writer is stuck; the records it still holds are lost");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = writer.join();
    }
}

impl fmt::Debug for Audit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            None => f.write_str("Audit(off)"),
            Some(trail) => write!(f, "Audit(on, arguments: {})", trail.arguments),
        }
    }
}

impl Trail {
    fn send(&self, entry: Entry) {
        match self.sender.try_send(entry) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => self.counters.dropped(1, "the audit log's writer cannot keep up"),
            // Closed at shutdown: nothing more is written.
            Err(TrySendError::Disconnected(_)) => {}
        }
    }
}

impl Counters {
    /// Counts `n` dropped records, and warns unless a warning went out lately.
    fn dropped(&self, n: u64, why: &str) {
        let total = self.dropped.fetch_add(n, Ordering::Relaxed) + n;
        let now = self.epoch.elapsed().as_millis() as u64;
        let last = self.warned_at.load(Ordering::Relaxed);
        let due = last == u64::MAX || now.saturating_sub(last) >= WARN_EVERY.as_millis() as u64;
        if due && self.warned_at.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            tracing::warn!(dropped = total, "audit records dropped: {why} (counted in corral_audit_records_dropped_total)");
        }
    }
}

/// How long the writer rests after each burst: a line reaches the file at most this much later,
/// and the channel ([`CAPACITY`] records) holds what comes meanwhile up to some 400 000
/// records/s.
const REST: Duration = Duration::from_millis(10);

/// The writer thread's side.
struct Writer {
    destination: Destination,
    out: BufWriter<Box<dyn Write + Send>>,
    /// Lines in `out`'s buffer, lost if its flush fails.
    buffered: u64,
    counters: Arc<Counters>,
}

impl Writer {
    fn run(mut self, receiver: Receiver<Entry>) {
        while let Ok(entry) = receiver.recv() {
            if !self.take(entry) {
                break;
            }
            // A burst is written in one go, then flushed once the channel is empty.
            let mut open = true;
            while let Ok(entry) = receiver.try_recv() {
                if !self.take(entry) {
                    open = false;
                    break;
                }
            }
            self.flush();
            if !open {
                return;
            }
            std::thread::sleep(REST);
        }
        self.flush();
    }

    /// Writes one entry; false at `Close`.
    fn take(&mut self, entry: Entry) -> bool {
        if self.counters.reopen.swap(false, Ordering::AcqRel) {
            self.reopen();
        }
        let line = match entry {
            Entry::Call(record) => call_line(&record),
            Entry::Task(record) => task_line(&record),
            Entry::Operator(record) => operator_line(&record),
            Entry::Reopen => return true,
            Entry::Close => {
                self.flush();
                return false;
            }
        };
        match self.out.write_all(line.as_bytes()).and_then(|()| self.out.write_all(b"\n")) {
            Ok(()) => self.buffered += 1,
            Err(e) => self.lost(1, &e),
        }
        true
    }

    fn flush(&mut self) {
        match self.out.flush() {
            Ok(()) => self.buffered = 0,
            Err(e) => {
                // What the buffer held is lost; the next write starts afresh.
                let out = std::mem::replace(&mut self.out, BufWriter::new(Box::new(io::sink())));
                let (inner, _) = out.into_parts();
                self.out = BufWriter::new(inner);
                let lost = std::mem::take(&mut self.buffered);
                self.lost(lost, &e);
            }
        }
    }

    fn lost(&self, n: u64, e: &io::Error) {
        self.counters.dropped(n.max(1), &format!("writing to {} failed: {e}", self.destination));
    }

    fn reopen(&mut self) {
        self.flush();
        match self.destination.open() {
            Ok(out) => {
                self.out = BufWriter::new(out);
                tracing::info!("audit log {} reopened", self.destination);
            }
            Err(e) => tracing::warn!("cannot reopen the audit log {}: {e}; still writing to the old file", self.destination),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::{CallOutcome, Subject};

    fn record(tool: &str) -> CallRecord {
        CallRecord::new("local".into(), Subject::Tool(tool.into()), CallOutcome::Result)
    }

    #[test]
    fn a_reopen_after_a_rename_writes_to_the_new_file() {
        let dir = tempfile::tempdir().unwrap();
        let (path, rotated) = (dir.path().join("audit.log"), dir.path().join("audit.log.1"));
        let audit = Audit::open(Destination::File(path.clone()), false).unwrap();
        audit.call(|| record("before"));
        // A reopen applies from the next record the writer takes: rename once it is written.
        let deadline = Instant::now() + Duration::from_secs(20);
        while !std::fs::read_to_string(&path).unwrap().contains("\"before\"") {
            assert!(Instant::now() < deadline, "the first record was never written");
            std::thread::sleep(Duration::from_millis(5));
        }
        std::fs::rename(&path, &rotated).unwrap();
        audit.reopen();
        audit.call(|| record("after"));
        audit.close();
        let old = std::fs::read_to_string(&rotated).unwrap();
        let new = std::fs::read_to_string(&path).unwrap();
        assert_eq!((old.lines().count(), new.lines().count()), (1, 1), "{old}\n{new}");
        assert!(old.contains("\"before\"") && new.contains("\"after\""), "{old}\n{new}");
        assert_eq!(audit.dropped(), 0);
    }

    #[test]
    fn a_full_disk_drops_and_counts_without_stopping_the_sender() {
        let audit = Audit::open(Destination::File("/dev/full".into()), false).unwrap();
        for _ in 0..3 {
            audit.call(|| record("echo"));
        }
        audit.close();
        assert_eq!(audit.dropped(), 3, "every write to /dev/full fails");
    }

    #[test]
    fn off_builds_nothing() {
        let audit = Audit::off();
        audit.call(|| unreachable!("an audit that is off never builds a record"));
        assert_eq!(audit.dropped(), 0);
    }
}
