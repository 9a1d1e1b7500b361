//! The process's stdout as the stdio transport writes it: a client that stops reading its
//! output cannot hold corral past the shutdown grace.
//!
//! A write to a full pipe blocks until the client reads. While serving that is back-pressure,
//! as it should be. But once a shutdown has begun (the end of stdin, a signal) a writer blocked
//! on a pipe nobody reads held the process, and the threads it blocked (tokio workers among
//! them) held the grace timer too: 46 s past a 10 s grace in one run, forever if the client
//! never reads. So a stdout that is a pipe or a socket is made non-blocking, and a write that
//! finds it full waits in `poll` for room: for as long as it takes while serving, until the
//! shutdown's deadline ([`Drain::begin`]: the grace and [`DRAIN_MARGIN`], time for the calls
//! cut off at the end of the grace to be answered with the shutdown error) once it has begun.
//! Past the deadline a write fails at once, and what it carried is dropped and counted.
//!
//! The waiting happens on the output's writer thread ([`super::lines`]), never on a runtime
//! worker: a send writes what fits and leaves the rest to that thread.
//!
//! While it waits it also watches stdin: a client that closed its end while corral was blocked
//! writing to it (lines still unread) begins the shutdown itself ([`Drain::hung_up`]); the
//! reading thread, blocked in that write, could not see the end of its input.

use std::io;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::lines::Sink;

/// How long past the shutdown grace the output may still take to be written.
pub(super) const DRAIN_MARGIN: Duration = Duration::from_secs(1);

/// How often a write waiting for room looks whether a shutdown has begun meanwhile.
const LOOK_EVERY: Duration = Duration::from_millis(200);

const STDIN: RawFd = 0;
const STDOUT: RawFd = 1;
const STDERR: RawFd = 2;

/// When the output stops waiting for the client; see the module doc.
pub(super) struct Drain {
    grace: Duration,
    deadline: Mutex<Option<Instant>>,
    /// Told when a write found stdin closed while it waited: the shutdown begins.
    pub(super) hung_up: tokio::sync::Notify,
    /// Writes given up because the deadline passed.
    given_up: AtomicU64,
}

impl Drain {
    /// A drain bounded by `grace` (and [`DRAIN_MARGIN`]) once it begins.
    pub(super) fn new(grace: Duration) -> Drain {
        Drain { grace, deadline: Mutex::new(None), hung_up: tokio::sync::Notify::new(), given_up: AtomicU64::new(0) }
    }

    /// The shutdown began now: writes wait for the client until the grace and the margin are
    /// spent. A second call changes nothing.
    pub(super) fn begin(&self) {
        self.deadline.lock().unwrap().get_or_insert_with(|| Instant::now() + self.grace + DRAIN_MARGIN);
    }

    fn deadline(&self) -> Option<Instant> {
        *self.deadline.lock().unwrap()
    }

    /// Writes given up so far because the client did not read before the deadline.
    pub(super) fn given_up(&self) -> u64 {
        self.given_up.load(Ordering::Relaxed)
    }
}

/// File descriptor 1, written as the module doc says.
pub(super) struct Stdout {
    drain: std::sync::Arc<Drain>,
    /// Whether stdin is still watched for the client closing it (not once it did: `poll`
    /// would report that at once, every time).
    watch_input: bool,
}

impl Stdout {
    /// The process's stdout, made non-blocking when it is a pipe or a socket of its own (not
    /// shared with stderr, whose writes must not start failing with `EAGAIN`).
    pub(super) fn new(drain: std::sync::Arc<Drain>) -> Stdout {
        if is_pipe_or_socket(STDOUT) && !same_file(STDOUT, STDERR) {
            // SAFETY: fcntl on a descriptor this process holds; flags are read, then written back with one more bit.
            unsafe {
                let flags = libc::fcntl(STDOUT, libc::F_GETFL);
                if flags >= 0 {
                    libc::fcntl(STDOUT, libc::F_SETFL, flags | libc::O_NONBLOCK);
                }
            }
        }
        Stdout { drain, watch_input: true }
    }
}

impl Sink for Stdout {
    /// One `write(2)`: on a pipe or socket it never waits, and says `WouldBlock` when full.
    fn write_now(&mut self, bytes: &[u8]) -> io::Result<usize> {
        // SAFETY: writes from a live slice of the given length.
        let written = unsafe { libc::write(STDOUT, bytes.as_ptr().cast(), bytes.len()) };
        match written {
            n if n >= 0 => Ok(n as usize),
            _ => Err(io::Error::last_os_error()),
        }
    }

    /// Waits until stdout has room (or has failed: the write that follows says how), or fails
    /// with `TimedOut` once the shutdown's deadline has passed.
    fn wait_for_room(&mut self) -> io::Result<()> {
        loop {
            let wait = match self.drain.deadline() {
                Some(deadline) => match deadline.checked_duration_since(Instant::now()).filter(|left| !left.is_zero()) {
                    Some(left) => left.min(LOOK_EVERY),
                    None => {
                        self.drain.given_up.fetch_add(1, Ordering::Relaxed);
                        return Err(io::Error::new(io::ErrorKind::TimedOut, "the client did not read its output before the shutdown grace was spent"));
                    }
                },
                None => LOOK_EVERY,
            };
            let mut fds = [
                libc::pollfd { fd: STDOUT, events: libc::POLLOUT, revents: 0 },
                // A negative descriptor is skipped by poll.
                libc::pollfd { fd: if self.watch_input { STDIN } else { -1 }, events: 0, revents: 0 },
            ];
            // SAFETY: two valid pollfd entries, and their count.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, wait.as_millis().max(1) as libc::c_int) };
            if ready < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if fds[1].revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
                self.watch_input = false;
                if self.drain.deadline().is_none() {
                    tracing::warn!("stdin closed while the client was not reading stdout; shutting down");
                    self.drain.begin();
                    self.drain.hung_up.notify_one();
                }
            }
            if fds[0].revents != 0 {
                return Ok(());
            }
        }
    }
}

fn stat(fd: RawFd) -> Option<libc::stat> {
    let mut stat = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: fstat fills the buffer when it returns 0, and only then is it read.
    unsafe { (libc::fstat(fd, stat.as_mut_ptr()) == 0).then(|| stat.assume_init()) }
}

fn is_pipe_or_socket(fd: RawFd) -> bool {
    stat(fd).is_some_and(|s| matches!(s.st_mode & libc::S_IFMT, libc::S_IFIFO | libc::S_IFSOCK))
}

fn same_file(a: RawFd, b: RawFd) -> bool {
    match (stat(a), stat(b)) {
        (Some(a), Some(b)) => (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino),
        _ => false,
    }
}
