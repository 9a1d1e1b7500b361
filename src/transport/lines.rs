//! The stdio output: one JSON-RPC message per line, written in batches while the reader has
//! more requests queued behind the one it serves, and never waited for on a runtime worker.
//!
//! Writing every answer on its own costs a pipe write per call, and each write wakes the
//! client, which then preempts the writer on its core (BENCHMARKS.md §10: 27 % of a pipelined
//! burst in `write_all`). So the reading thread may *hold* its own sends: while it has another
//! complete line waiting in its input buffer, what it answers inline stays in this outlet's
//! buffer, and the lot goes out in one write when it serves the last queued line (or must wait
//! for anything). Nothing else is ever held: a send from any other thread (an answer that
//! finished on a worker, a notification) writes the buffer out at once, the held lines first,
//! so the order of the lines is the order of the sends. A lone request, the sequential case, is
//! written as soon as it is answered.
//!
//! A send writes what the output takes *now* and never waits for room: most sends come from
//! tokio workers (a call that finished later, progress, a list change), and a worker waiting
//! for a client that does not read would stall every other session's work and the shutdown's
//! own timers. When the output is full, what is left goes to a writer thread of the outlet's
//! own, which waits for room (the sink says how: `poll` on a non-blocking stdout) while later
//! sends append behind it. Back-pressure then falls where it belongs: the reading thread reads
//! no further request while a backlog is waiting ([`LineOutlet::wait_for_backlog`]), as it would
//! have blocked in its own write; notifications beyond [`MAX_BACKLOG`] are dropped and counted,
//! since a guest logging in a loop would otherwise grow the backlog without bound. Responses and
//! requests to the client are always kept.
//!
//! Messages are appended straight into the buffer under the lock (no line allocated per
//! message), so concurrent senders never interleave bytes.

use std::io::{self, Write};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, ThreadId};
use std::time::Instant;

use crate::mcp::jsonrpc::Outgoing;

use crate::server::Outlet;

/// Room for a burst of answers: 32 echo answers are about 6 KiB. Past this much waiting for a
/// full output, the reader reads no further request.
const BUFFER: usize = 64 << 10;

/// Past this much waiting for a full output, notifications are dropped (and counted).
pub(super) const MAX_BACKLOG: usize = 16 << 20;

/// Where the lines go: written as far as they fit now, or waited for on the writer thread.
pub(super) trait Sink: Send + 'static {
    /// Writes a prefix of `bytes` without waiting; `WouldBlock` when nothing fits now.
    fn write_now(&mut self, bytes: &[u8]) -> io::Result<usize>;

    /// Waits, on the outlet's writer thread, until a write may make progress; an error gives up
    /// what was waiting.
    fn wait_for_room(&mut self) -> io::Result<()>;
}

/// Any [`Write`] as a sink: an embedder's writer or a test's pipe, whose writes may block the
/// thread that sends (the process's own stdout is [`super::stdout::Stdout`], which never does).
pub(super) struct Blocking<W>(pub(super) W);

impl<W: Write + Send + 'static> Sink for Blocking<W> {
    fn write_now(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let written = self.0.write(bytes)?;
        self.0.flush()?;
        Ok(written)
    }

    fn wait_for_room(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Writes each message as one line; see the module documentation for when.
pub(super) struct LineOutlet {
    shared: Arc<Shared>,
}

struct Shared {
    state: Mutex<State>,
    /// Wakes the writer thread: there is a backlog to write, or the outlet closed.
    to_writer: Condvar,
    /// Wakes whoever waits for the backlog to shrink (the reader, the final flush).
    written: Condvar,
}

struct State {
    /// Lines not written yet: held, or waiting for room.
    pending: Vec<u8>,
    /// The thread whose sends stay buffered until [`LineOutlet::release`]: the reader, while
    /// lines are queued behind the one it serves.
    holder: Option<ThreadId>,
    /// The sink, or `None` while the writer thread has it, waiting for room: sends then only
    /// append, and the writer thread takes what they appended after what it has.
    sink: Option<Box<dyn Sink>>,
    /// A send found the sink full: the writer thread writes until the backlog is gone, and
    /// sends only append meanwhile.
    stalled: bool,
    /// Bytes the writer thread has taken and not written yet.
    in_writer: usize,
    /// No further writes: the writer thread ends once it has nothing left.
    closed: bool,
    /// Notifications dropped because the client did not read.
    dropped: u64,
}

impl State {
    fn backlog(&self) -> usize {
        self.pending.len() + self.in_writer
    }
}

impl LineOutlet {
    /// An outlet writing to `sink`, holding nothing, with its writer thread started.
    pub(super) fn new(sink: impl Sink) -> io::Result<LineOutlet> {
        let state =
            State { pending: Vec::with_capacity(BUFFER), holder: None, sink: Some(Box::new(sink)), stalled: false, in_writer: 0, closed: false, dropped: 0 };
        let shared = Arc::new(Shared { state: Mutex::new(state), to_writer: Condvar::new(), written: Condvar::new() });
        let writer = shared.clone();
        thread::Builder::new().name("corral-stdout".into()).spawn(move || writer.write_backlogs())?;
        Ok(LineOutlet { shared })
    }

    /// Keeps what the calling thread sends from now on in the buffer, until [`release`].
    ///
    /// [`release`]: LineOutlet::release
    pub(super) fn hold(&self) {
        self.shared.state.lock().unwrap().holder = Some(thread::current().id());
    }

    /// Writes out whatever is buffered (what does not fit now goes to the writer thread); every
    /// send after it is written at once again.
    pub(super) fn release(&self) {
        let mut state = self.shared.state.lock().unwrap();
        state.holder = None;
        self.shared.push(&mut state);
    }

    /// Blocks the calling thread (the reader: never a runtime worker) while more than a buffer
    /// of output waits for a client that does not read; the reader reads no request meanwhile.
    pub(super) fn wait_for_backlog(&self) {
        let mut state = self.shared.state.lock().unwrap();
        while state.stalled && state.backlog() > BUFFER && !state.closed {
            state = self.shared.written.wait(state).unwrap();
        }
    }

    /// Writes what is held and waits until everything sent has been written (or given up by
    /// the sink), at most until `deadline`; then the writer thread ends once it has nothing
    /// left. Blocks: call it off the runtime's workers.
    pub(super) fn finish(&self, deadline: Instant) {
        let mut state = self.shared.state.lock().unwrap();
        state.holder = None;
        self.shared.push(&mut state);
        while state.backlog() > 0 {
            let Some(left) = deadline.checked_duration_since(Instant::now()).filter(|left| !left.is_zero()) else { break };
            state = self.shared.written.wait_timeout(state, left).unwrap().0;
        }
        state.closed = true;
        self.shared.to_writer.notify_one();
    }

    /// Notifications dropped so far because the client did not read its output.
    pub(super) fn dropped(&self) -> u64 {
        self.shared.state.lock().unwrap().dropped
    }
}

impl Drop for LineOutlet {
    /// The writer thread ends once it has written what it has.
    fn drop(&mut self) {
        self.shared.state.lock().unwrap().closed = true;
        self.shared.to_writer.notify_one();
    }
}

impl Shared {
    /// Writes the pending lines as far as the sink takes them now; hands the rest to the writer
    /// thread. Never waits for room.
    fn push(&self, state: &mut State) {
        if state.stalled {
            // The writer thread has (or is about to take) the sink and takes what is pending
            // after what it has.
            return;
        }
        let State { pending, sink, stalled, .. } = state;
        let out = sink.as_mut().expect("the sink is here while the output is not stalled");
        while !pending.is_empty() {
            match out.write_now(pending) {
                Ok(0) => return drop_output(pending, &io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    pending.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    *stalled = true;
                    self.to_writer.notify_one();
                    return;
                }
                Err(e) => return drop_output(pending, &e),
            }
        }
    }

    /// The writer thread: whenever a send found the output full, takes the sink and the
    /// backlog, waits for room and writes it out (what was sent meanwhile after it), then gives
    /// the sink back. Ends once the outlet is closed and nothing is left.
    fn write_backlogs(&self) {
        let mut state = self.state.lock().unwrap();
        loop {
            if state.stalled {
                let mut sink = state.sink.take().expect("only the writer thread takes the sink");
                while !state.pending.is_empty() {
                    let mut bytes = std::mem::take(&mut state.pending);
                    state.in_writer = bytes.len();
                    drop(state);
                    if let Err(e) = write_waiting(sink.as_mut(), &bytes) {
                        drop_output(&mut bytes, &e);
                    }
                    bytes.clear();
                    state = self.state.lock().unwrap();
                    state.in_writer = 0;
                    // The buffer's room is kept for the sends to come.
                    if state.pending.is_empty() {
                        state.pending = bytes;
                    }
                    self.written.notify_all();
                }
                state.sink = Some(sink);
                state.stalled = false;
                self.written.notify_all();
            }
            if state.closed {
                return;
            }
            state = self.to_writer.wait(state).unwrap();
        }
    }
}

/// Writes all of `bytes`, waiting for room whenever the sink is full.
fn write_waiting(sink: &mut dyn Sink, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        match sink.write_now(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => sink.wait_for_room()?,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The output failed (the client went away): what waited for it is dropped.
fn drop_output(pending: &mut Vec<u8>, e: &io::Error) {
    tracing::debug!("output closed: {e}");
    pending.clear();
}

impl Outlet for LineOutlet {
    fn send(&self, message: Outgoing) {
        let mut state = self.shared.state.lock().unwrap();
        if message.is_notification() && state.backlog() > MAX_BACKLOG {
            state.dropped += 1;
            return;
        }
        state.pending.extend_from_slice(message.text().as_bytes());
        state.pending.push(b'\n');
        if state.holder != Some(thread::current().id()) {
            self.shared.push(&mut state);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use crate::mcp::jsonrpc::{notification, result_message, RequestId};

    use super::*;

    /// How long a test waits for the writer thread before it fails.
    const PATIENCE: Duration = Duration::from_secs(30);

    /// A sink that records each write it is given, so a test sees the batches; while `full`, it
    /// takes nothing and its `wait_for_room` waits until the test makes room.
    #[derive(Clone, Default)]
    struct Writes {
        written: Arc<Mutex<Vec<String>>>,
        full: Arc<(Mutex<bool>, Condvar)>,
        /// Told each time the writer thread starts waiting for room.
        waiting: Arc<Mutex<Option<mpsc::Sender<()>>>>,
    }

    impl Sink for Writes {
        fn write_now(&mut self, bytes: &[u8]) -> io::Result<usize> {
            if *self.full.0.lock().unwrap() {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            self.written.lock().unwrap().push(String::from_utf8(bytes.to_vec()).unwrap());
            Ok(bytes.len())
        }

        fn wait_for_room(&mut self) -> io::Result<()> {
            if let Some(waiting) = &*self.waiting.lock().unwrap() {
                let _ = waiting.send(());
            }
            let (full, room) = &*self.full;
            let _unused = room.wait_while(full.lock().unwrap(), |full| *full).unwrap();
            Ok(())
        }
    }

    impl Writes {
        fn taken(&self) -> Vec<String> {
            std::mem::take(&mut *self.written.lock().unwrap())
        }

        fn fill(&self) -> mpsc::Receiver<()> {
            let (tx, rx) = mpsc::channel();
            *self.waiting.lock().unwrap() = Some(tx);
            *self.full.0.lock().unwrap() = true;
            rx
        }

        fn make_room(&self) {
            *self.full.0.lock().unwrap() = false;
            self.full.1.notify_all();
        }

        /// Waits until what was written, joined, is `expected`.
        fn wait_for(&self, expected: &str) {
            let start = Instant::now();
            loop {
                let written = self.written.lock().unwrap().concat();
                if written == expected {
                    return;
                }
                assert!(start.elapsed() < PATIENCE, "the writer thread never wrote {expected:?}; written: {written:?}");
                thread::yield_now();
            }
        }
    }

    fn message(n: u32) -> Outgoing {
        notification("n", &n)
    }

    fn text(n: u32) -> String {
        message(n).text().to_owned()
    }

    #[test]
    fn a_send_that_is_not_held_is_written_at_once_as_one_line() {
        let writes = Writes::default();
        let outlet = LineOutlet::new(writes.clone()).unwrap();
        outlet.send(message(1));
        assert_eq!(writes.taken(), [format!("{}\n", text(1))]);
        outlet.send(message(2));
        assert_eq!(writes.taken(), [format!("{}\n", text(2))]);
    }

    #[test]
    fn held_sends_go_out_together_at_release() {
        let writes = Writes::default();
        let outlet = LineOutlet::new(writes.clone()).unwrap();
        outlet.hold();
        outlet.send(message(1));
        outlet.send(message(2));
        assert!(writes.taken().is_empty(), "held lines wait for the release");
        outlet.release();
        assert_eq!(writes.taken(), [format!("{}\n{}\n", text(1), text(2))], "one write for the batch");
        outlet.send(message(3));
        assert_eq!(writes.taken(), [format!("{}\n", text(3))], "after the release sends are written at once");
    }

    #[test]
    fn a_send_from_another_thread_is_never_held_and_writes_the_held_lines_first() {
        let writes = Writes::default();
        let outlet = Arc::new(LineOutlet::new(writes.clone()).unwrap());
        outlet.hold();
        outlet.send(message(1));
        let other = outlet.clone();
        thread::spawn(move || other.send(message(2))).join().unwrap();
        assert_eq!(writes.taken(), [format!("{}\n{}\n", text(1), text(2))], "in the order sent, at once");
    }

    /// A full output never holds a sender: the writer thread waits for room and writes the
    /// backlog, in the order sent, once the client reads.
    #[test]
    fn a_send_to_a_full_output_returns_at_once_and_the_writer_thread_writes_it_in_order() {
        let writes = Writes::default();
        let outlet = LineOutlet::new(writes.clone()).unwrap();
        let waiting = writes.fill();
        outlet.send(message(1));
        waiting.recv_timeout(PATIENCE).expect("the writer thread waits for room");
        outlet.send(message(2));
        outlet.send(message(3));
        assert!(writes.taken().is_empty(), "nothing fits while the output is full");
        writes.make_room();
        writes.wait_for(&format!("{}\n{}\n{}\n", text(1), text(2), text(3)));
        // Back from the writer thread: sends are written inline again.
        let start = Instant::now();
        while outlet.shared.state.lock().unwrap().stalled {
            assert!(start.elapsed() < PATIENCE, "the writer thread never gave the sink back");
            thread::yield_now();
        }
        writes.taken();
        outlet.send(message(4));
        assert_eq!(writes.taken(), [format!("{}\n", text(4))]);
    }

    /// Past the backlog bound a notification is dropped and counted; answers are always kept.
    #[test]
    fn notifications_past_the_backlog_bound_are_dropped_and_answers_kept() {
        let writes = Writes::default();
        let outlet = LineOutlet::new(writes.clone()).unwrap();
        let waiting = writes.fill();
        let big = "x".repeat(MAX_BACKLOG);
        outlet.send(result_message(&RequestId::Int(1), &big));
        waiting.recv_timeout(PATIENCE).expect("the writer thread waits for room");
        outlet.send(message(7));
        outlet.send(result_message(&RequestId::Int(2), &"kept"));
        assert_eq!(outlet.dropped(), 1);
        writes.make_room();
        let answer = |id: i64, value: &str| result_message(&RequestId::Int(id), &value).text().to_owned();
        writes.wait_for(&format!("{}\n{}\n", answer(1, &big), answer(2, "kept")));
    }

    /// The final flush waits for the backlog, and gives up at its deadline when the client
    /// never reads.
    #[test]
    fn finish_waits_for_the_backlog_until_its_deadline() {
        let writes = Writes::default();
        let outlet = LineOutlet::new(writes.clone()).unwrap();
        let waiting = writes.fill();
        outlet.send(message(1));
        waiting.recv_timeout(PATIENCE).expect("the writer thread waits for room");
        outlet.finish(Instant::now() + Duration::from_millis(10));
        assert!(writes.taken().is_empty(), "the client never read");
        let room = writes.clone();
        let reader = thread::spawn(move || {
            room.make_room();
        });
        outlet.finish(Instant::now() + PATIENCE);
        reader.join().unwrap();
        assert_eq!(writes.taken().concat(), format!("{}\n", text(1)));
    }
}
