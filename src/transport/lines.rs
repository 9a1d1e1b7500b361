//! The stdio output: one JSON-RPC message per line, written in batches while the reader has
//! more requests queued behind the one it serves.
//!
//! Writing every answer on its own costs a pipe write per call, and each write wakes the
//! client, which then preempts the writer on its core (BENCHMARKS.md §10: 27 % of a pipelined
//! burst in `write_all`). So the reading thread may *hold* its own sends: while it has another
//! complete line waiting in its input buffer, what it answers inline stays in this outlet's
//! buffer, and the lot goes out in one write when it serves the last queued line (or must wait
//! for anything). Nothing else is ever held: a send from any other thread (an answer that
//! finished on a worker, a notification) writes the buffer out at once, the held lines first,
//! so the order of the lines is the order of the sends. A lone request, the sequential case, is
//! written as soon as it is answered, as before.
//!
//! Messages are serialized straight into the buffer under the lock (no line allocated per
//! message), so concurrent senders never interleave bytes.

use std::io::{BufWriter, Write};
use std::sync::Mutex;
use std::thread::{self, ThreadId};

use crate::mcp::jsonrpc::Outgoing;

use crate::server::Outlet;

/// Room for a burst of answers: 32 echo answers are about 6 KiB.
const BUFFER: usize = 64 << 10;

/// Writes each message as one line; see the module documentation for when.
pub(super) struct LineOutlet {
    out: Mutex<Output>,
}

struct Output {
    writer: BufWriter<Box<dyn Write + Send>>,
    /// The thread whose sends stay buffered until [`LineOutlet::release`]: the reader, while
    /// lines are queued behind the one it serves.
    holder: Option<ThreadId>,
}

impl LineOutlet {
    /// An outlet writing to `output`, holding nothing.
    pub(super) fn new(output: impl Write + Send + 'static) -> LineOutlet {
        let writer = BufWriter::with_capacity(BUFFER, Box::new(output) as Box<dyn Write + Send>);
        LineOutlet { out: Mutex::new(Output { writer, holder: None }) }
    }

    /// Keeps what the calling thread sends from now on in the buffer, until [`release`].
    ///
    /// [`release`]: LineOutlet::release
    pub(super) fn hold(&self) {
        self.out.lock().unwrap().holder = Some(thread::current().id());
    }

    /// Writes out whatever is buffered; every send after it is written at once again.
    pub(super) fn release(&self) {
        let mut out = self.out.lock().unwrap();
        out.holder = None;
        if let Err(e) = out.writer.flush() {
            tracing::debug!("output closed: {e}");
        }
    }
}

impl Outlet for LineOutlet {
    fn send(&self, message: Outgoing) {
        let mut out = self.out.lock().unwrap();
        let held = out.holder == Some(thread::current().id());
        let Output { writer, .. } = &mut *out;
        let written = writer.write_all(message.text().as_bytes()).and_then(|()| writer.write_all(b"\n"));
        if let Err(e) = written.and_then(|()| if held { Ok(()) } else { writer.flush() }) {
            tracing::debug!("output closed: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use crate::mcp::jsonrpc::notification;

    use super::*;

    /// An output that records each `write` it is given, so a test sees the batches.
    #[derive(Clone, Default)]
    struct Writes(Arc<Mutex<Vec<String>>>);

    impl Write for Writes {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().push(String::from_utf8(bytes.to_vec()).unwrap());
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Writes {
        fn taken(&self) -> Vec<String> {
            std::mem::take(&mut *self.0.lock().unwrap())
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
        let outlet = LineOutlet::new(writes.clone());
        outlet.send(message(1));
        assert_eq!(writes.taken(), [format!("{}\n", text(1))]);
        outlet.send(message(2));
        assert_eq!(writes.taken(), [format!("{}\n", text(2))]);
    }

    #[test]
    fn held_sends_go_out_together_at_release() {
        let writes = Writes::default();
        let outlet = LineOutlet::new(writes.clone());
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
        let outlet = Arc::new(LineOutlet::new(writes.clone()));
        outlet.hold();
        outlet.send(message(1));
        let other = outlet.clone();
        thread::spawn(move || other.send(message(2))).join().unwrap();
        assert_eq!(writes.taken(), [format!("{}\n{}\n", text(1), text(2))], "in the order sent, at once");
    }
}
