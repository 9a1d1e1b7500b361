//! MCP over stdio: one JSON-RPC message per line on the input and the output.
//!
//! The caller supplies the input, the output and the shutdown signal (`main` passes stdin,
//! stdout and [`super::shutdown_signal`]; tests pass pipes and a channel), as mini-redis's
//! `server::run(listener, shutdown)` does.
//!
//! The input is a blocking [`Read`] read on its own thread rather than a tokio `AsyncRead`,
//! for two reasons. A blocked read never holds a tokio worker (tokio's own stdin does the same
//! thing on its blocking pool). And each parsed line goes straight to the session *on that
//! thread*, so the first poll of a request, which finishes most tool calls, runs without a
//! hand-off to a worker (measured in BENCHMARKS.md); it also keeps quick answers in input
//! order. Answers are written whole, one line each, under a lock, so concurrent calls never
//! interleave bytes; while more lines are already queued in the input, the answers the reader
//! makes inline are written together in one write ([`super::lines`]). The output carries
//! protocol messages only; logs go to stderr.

use std::future::Future;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

use super::lines::{Blocking, LineOutlet, Sink};
use super::stdout::{Drain, Stdout, DRAIN_MARGIN};
use crate::mcp::jsonrpc::{self, Outgoing, PARSE_ERROR};
use crate::mcp::{Incoming, Rejected, RpcError};
use crate::principal::{Owner, Principal, Wire};
use crate::server::{Host, Outlet, Session};
use crate::telemetry::trace::Inbound;

/// How long calls cancelled at the end of the shutdown grace get to stop before `serve`
/// returns anyway.
const WIND_DOWN: Duration = Duration::from_secs(5);

/// Stdio settings from the flags.
#[derive(Clone, Debug)]
pub struct StdioSettings {
    /// The longest line accepted, in bytes (`--max-body`, as for an HTTP body). A longer line
    /// is refused and skipped without being buffered.
    pub max_line: usize,
    /// Requests of the session running at once. At the bound the input is not read until one
    /// of them answers, as HTTP back-pressure would do, so memory stays bounded.
    pub max_in_flight: usize,
    /// How long calls in flight get to finish and answer once the input ends or a shutdown
    /// signal arrives.
    pub shutdown_grace: Duration,
}

impl Default for StdioSettings {
    fn default() -> StdioSettings {
        StdioSettings { max_line: 4 << 20, max_in_flight: 256, shutdown_grace: Duration::from_secs(10) }
    }
}

/// Serves one session with the default [`StdioSettings`]; see [`serve_with`].
pub async fn serve<R, W>(host: Arc<Host>, input: R, output: W, shutdown: impl Future<Output = ()>) -> anyhow::Result<()>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    serve_with(host, input, output, StdioSettings::default(), shutdown).await
}

/// Serves one session, reading `input` and answering on `output`, until the input ends or
/// `shutdown` resolves. Then no further line is read; calls in flight get
/// `settings.shutdown_grace` to finish and answer, and those still running after it are
/// answered with a shutdown error and cancelled. Running tasks are left to the store's
/// recovery.
///
/// The reading thread is the one thing that may outlive this function: a blocking read cannot
/// be interrupted portably. It holds the session weakly and checks the stop flag, so once the
/// input ended or the signal came it serves no further line, and it ends at its next line or at
/// the end of the input.
pub async fn serve_with<R, W>(host: Arc<Host>, input: R, output: W, settings: StdioSettings, shutdown: impl Future<Output = ()>) -> anyhow::Result<()>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    serve_draining(host, input, Blocking(output), settings, shutdown, None).await
}

/// Serves one session on the process's own stdin and stdout, as [`serve_with`] does; once the
/// shutdown begins, output the client does not read is given up after the grace (and a
/// little), and a client that closes stdin while it does not read stdout ends the session too
/// (see [`super::stdout`]).
pub async fn serve_process(host: Arc<Host>, settings: StdioSettings, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
    let drain = Arc::new(Drain::new(settings.shutdown_grace));
    let output = Stdout::new(drain.clone());
    serve_draining(host, io::stdin(), output, settings, shutdown, Some(drain)).await
}

async fn serve_draining<R>(
    host: Arc<Host>,
    input: R,
    output: impl Sink,
    settings: StdioSettings,
    shutdown: impl Future<Output = ()>,
    drain: Option<Arc<Drain>>,
) -> anyhow::Result<()>
where
    R: Read + Send + 'static,
{
    let lines = Arc::new(LineOutlet::new(output)?);
    let outlet: Arc<dyn Outlet> = lines.clone();
    let last_lines = lines.clone();
    // Over stdio the one client is the local user, so its tasks survive a host restart.
    let session = Arc::new(Session::new(host, outlet.clone(), Owner::new(Principal::Local, Wire::Sessions), Inbound::pipe()));
    let (eof_tx, eof_rx) = tokio::sync::oneshot::channel::<()>();
    let stop = Arc::new(AtomicBool::new(false));
    let reader =
        Reader { session: Arc::downgrade(&session), outlet, lines, slots: Slots::new(settings.max_in_flight), max_line: settings.max_line, stop: stop.clone() };
    let ended = drain.clone();
    std::thread::Builder::new().name("corral-stdin".into()).spawn(move || {
        reader.run(BufReader::new(input));
        // Begun here, not only by `serve`: its task may wait for a worker that a write holds.
        if let Some(drain) = ended {
            drain.begin();
        }
        let _ = eof_tx.send(());
    })?;
    let hung_up = async {
        match &drain {
            Some(drain) => drain.hung_up.notified().await,
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        _ = eof_rx => tracing::info!("stdin closed; finishing the calls in flight"),
        _ = shutdown => tracing::info!("signal received; finishing the calls in flight"),
        _ = hung_up => tracing::info!("finishing the calls in flight"),
    }
    stop.store(true, Ordering::SeqCst);
    if let Some(drain) = &drain {
        drain.begin();
    }
    session.finish(settings.shutdown_grace, WIND_DOWN).await;
    // What the session wrote last goes out before the process exits, unless the client leaves
    // it unread past the deadline (the stdout gives up then; this waits for that, and an
    // embedder's blocking writer no longer than that either).
    let wait = settings.shutdown_grace + DRAIN_MARGIN * 2;
    let finishing = last_lines.clone();
    let deadline = std::time::Instant::now() + wait;
    let _ = tokio::time::timeout(wait + DRAIN_MARGIN, tokio::task::spawn_blocking(move || finishing.finish(deadline))).await;
    if let Some(given_up) = drain.as_ref().map(|d| d.given_up()).filter(|n| *n > 0) {
        tracing::warn!(
            "the client did not read its output: {given_up} writes to stdout were given up after the shutdown grace ({}) and {}",
            humantime::format_duration(settings.shutdown_grace),
            humantime::format_duration(DRAIN_MARGIN)
        );
    }
    if let Some(dropped) = Some(last_lines.dropped()).filter(|n| *n > 0) {
        tracing::warn!(
            "the client did not read its output: {dropped} notifications were dropped while more than {} MiB waited for it",
            super::lines::MAX_BACKLOG >> 20
        );
    }

    Ok(())
}

/// What JSON (RFC 8259) counts as whitespace.
const JSON_WHITESPACE: [char; 4] = [' ', '\t', '\n', '\r'];

/// The reading thread's state.
struct Reader {
    session: Weak<Session>,
    outlet: Arc<dyn Outlet>,
    /// The same outlet, for holding the answers made inline while lines are queued.
    lines: Arc<LineOutlet>,
    slots: Arc<Slots>,
    max_line: usize,
    /// Set once the input ended or a shutdown began: no further line is served.
    stop: Arc<AtomicBool>,
}

impl Reader {
    /// Hands each line to the session until the input ends, fails, or serving stops; nothing
    /// is left held in the output after it.
    fn run<R: Read>(&self, input: BufReader<R>) {
        self.serve_lines(input);
        self.lines.release();
    }

    fn serve_lines<R: Read>(&self, mut input: BufReader<R>) {
        let mut buf = Vec::new();
        loop {
            // A client that does not read its output gets no further request read: the
            // back-pressure a blocking write would have given.
            self.lines.wait_for_backlog();
            let message = match read_line(&mut input, &mut buf, self.max_line) {
                Ok(Line::End) => return,
                Ok(Line::TooLong(length)) => Err(Rejected {
                    id: None,
                    error: RpcError::invalid_request(format!("the line is {length} bytes, over --max-body ({} bytes)", self.max_line)),
                    answer: true,
                }),
                Ok(Line::Complete) => match std::str::from_utf8(&buf) {
                    // Only JSON's own whitespace makes a line blank; `\x0b`, `\x0c` or NBSP alone
                    // are a line that does not parse.
                    Ok(line) if line.trim_matches(JSON_WHITESPACE).is_empty() => continue,
                    Ok(line) => jsonrpc::parse(line.trim_end_matches(['\n', '\r'])),
                    Err(e) => Err(Rejected { id: None, error: RpcError::new(PARSE_ERROR, format!("parse error: the line is not UTF-8 ({e})")), answer: true }),
                },
                Err(e) => {
                    tracing::error!("reading stdin failed: {e}");
                    return;
                }
            };
            // A request waits for a free slot, and the input is not read meanwhile: at the
            // bound the client's writes back up. Notifications and responses (a cancel, the
            // answer to an elicitation) take none. Nothing stays held while it waits.
            let slot = matches!(message, Ok(Incoming::Request { .. })).then(|| {
                self.slots.try_acquire().unwrap_or_else(|| {
                    self.lines.release();
                    self.slots.acquire()
                })
            });
            if self.stop.load(Ordering::SeqCst) {
                return;
            }
            let Some(session) = self.session.upgrade() else { return };
            // The request holds its slot for as long as anything holds its outlet: until it
            // has answered.
            let reply: Arc<dyn Outlet> = match slot {
                Some(slot) => Arc::new(SlotOutlet { inner: self.outlet.clone(), _slot: slot }),
                None => self.outlet.clone(),
            };
            // Another whole line already read: what this one answers inline waits for the
            // answers of the next, to go out in one write. The last queued line releases them.
            let queued = input.buffer().contains(&b'\n');
            if queued {
                self.lines.hold();
            }
            session.handle(message, &reply);
            if !queued {
                self.lines.release();
            }
        }
    }
}

/// How [`read_line`] ended.
#[derive(Debug, PartialEq)]
enum Line {
    /// A whole line is in the buffer (its `\n` included, when it had one).
    Complete,
    /// The line had this many bytes (its `\n` excluded), over the limit; none were kept.
    TooLong(usize),
    /// The input ended before any byte.
    End,
}

/// Reads one line into `buf`, keeping at most `max` bytes besides the `\n`: a longer line is
/// read to its end and dropped, so memory never holds more than one allowed line.
fn read_line(input: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> io::Result<Line> {
    buf.clear();
    let (mut length, mut too_long) = (0usize, false);
    loop {
        let available = match input.fill_buf() {
            Ok(available) => available,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(match (length, too_long) {
                (0, _) => Line::End,
                (_, true) => Line::TooLong(length),
                (_, false) => Line::Complete,
            });
        }
        let newline = available.iter().position(|&b| b == b'\n');
        let taken = newline.map_or(available.len(), |i| i + 1);
        length += newline.unwrap_or(taken);
        too_long |= length > max;
        if !too_long {
            buf.extend_from_slice(&available[..taken]);
        }
        input.consume(taken);
        if newline.is_some() {
            return Ok(if too_long { Line::TooLong(length) } else { Line::Complete });
        }
    }
}

/// Counts the requests of a session in flight, and makes the reader wait at the bound.
struct Slots {
    used: Mutex<usize>,
    freed: Condvar,
    max: usize,
}

impl Slots {
    fn new(max: usize) -> Arc<Slots> {
        Arc::new(Slots { used: Mutex::new(0), freed: Condvar::new(), max: max.max(1) })
    }

    /// Takes a slot if one is free now.
    fn try_acquire(self: &Arc<Self>) -> Option<Slot> {
        let mut used = self.used.lock().unwrap();
        (*used < self.max).then(|| {
            *used += 1;
            Slot(self.clone())
        })
    }

    /// Blocks until fewer than `max` slots are taken, then takes one.
    fn acquire(self: &Arc<Self>) -> Slot {
        let mut used = self.used.lock().unwrap();
        while *used >= self.max {
            used = self.freed.wait(used).unwrap();
        }
        *used += 1;
        Slot(self.clone())
    }
}

/// One taken slot, given back when dropped.
struct Slot(Arc<Slots>);

impl Drop for Slot {
    fn drop(&mut self) {
        let mut used = self.0.used.lock().unwrap();
        // Only the reader waits, and only at the bound: a notify costs a futex call even with
        // nobody waiting, once per request.
        let reader_may_wait = *used >= self.0.max;
        *used -= 1;
        drop(used);
        if reader_may_wait {
            self.0.freed.notify_one();
        }
    }
}

/// The session's outlet as one line's request sees it: it holds the request's slot.
struct SlotOutlet {
    inner: Arc<dyn Outlet>,
    _slot: Slot,
}

impl Outlet for SlotOutlet {
    fn send(&self, message: Outgoing) {
        self.inner.send(message);
    }

    fn is_open(&self) -> bool {
        self.inner.is_open()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use serde_json::{json, Value};

    use super::*;
    use crate::server::testing::{self, PATIENCE};
    use crate::server::ServerOptions;

    /// An output a test can read while `serve` writes to it.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn lines(&self) -> Vec<Value> {
            let bytes = self.0.lock().unwrap().clone();
            String::from_utf8(bytes).unwrap().lines().map(|l| serde_json::from_str(l).expect("every output line is JSON")).collect()
        }
    }

    fn input(lines: &[Value]) -> Vec<u8> {
        lines.iter().map(|l| format!("{l}\n")).collect::<String>().into_bytes()
    }

    fn request(id: i64, method: &str, params: Value) -> Value {
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
    }

    fn initialize() -> Value {
        request(1, "initialize", json!({ "protocolVersion": "2025-11-25", "capabilities": {} }))
    }

    /// Serves `input` to its end, with no shutdown, and returns what was written.
    async fn serve_all(input: Vec<u8>) -> Vec<Value> {
        let host = testing::host(&[], ServerOptions::default()).await;
        let out = Shared::default();
        let served = serve(host, Cursor::new(input), out.clone(), std::future::pending());
        tokio::time::timeout(PATIENCE, served).await.expect("the end of the input ends serve").unwrap();
        out.lines()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_request_is_answered_once_and_the_end_of_input_ends_serve() {
        let lines = [
            initialize(),
            request(2, "ping", json!({})),
            request(3, "tools/list", json!({})),
            request(4, "tasks/list", json!({})),
            request(5, "tasks/get", json!({ "taskId": "nope" })),
            request(6, "ping", json!({})),
        ];
        let out = serve_all(input(&lines)).await;
        let answer = |id: i64| {
            let answers: Vec<&Value> = out.iter().filter(|m| m["id"] == json!(id)).collect();
            assert_eq!(answers.len(), 1, "request {id} must be answered exactly once: {out:?}");
            answers[0].clone()
        };
        assert_eq!(answer(3)["result"]["tools"], json!([]));
        assert_eq!(answer(4)["result"]["tasks"], json!([]));
        assert_eq!(answer(5)["error"]["message"], "Failed to retrieve task: Task not found");
        assert_eq!(out.len(), lines.len(), "nothing but the answers: {out:?}");
        // Methods that wait for nothing answer in order; the task methods wait for the store and
        // may answer after a later request.
        let quick: Vec<Value> = out.iter().map(|m| m["id"].clone()).filter(|id| [1, 2, 3, 6].iter().any(|q| id == &json!(q))).collect();
        assert_eq!(quick, [json!(1), json!(2), json!(3), json!(6)], "{out:?}");
    }

    /// An output that counts the writes it is given.
    #[derive(Clone, Default)]
    struct Counted(Shared, Arc<std::sync::atomic::AtomicUsize>);

    impl Write for Counted {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.1.fetch_add(1, Ordering::SeqCst);
            self.0.write(bytes)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn answers_to_lines_read_together_go_out_in_one_write_and_a_lone_line_at_once() {
        let host = testing::host(&[], ServerOptions::default()).await;
        let lines: Vec<Value> = std::iter::once(initialize()).chain((2..=20).map(|id| request(id, "ping", json!({})))).collect();
        let out = Counted::default();
        let served = serve(host.clone(), Cursor::new(input(&lines)), out.clone(), std::future::pending());
        tokio::time::timeout(PATIENCE, served).await.unwrap().unwrap();
        let ids: Vec<Value> = out.0.lines().iter().map(|m| m["id"].clone()).collect();
        assert_eq!(ids, (1..=20).map(|id| json!(id)).collect::<Vec<_>>(), "every answer, in order");
        assert_eq!(out.1.load(Ordering::SeqCst), 1, "the 20 answers of one read are one write");

        // A line with nothing behind it is answered at once, not held for the next.
        let (reader, mut writer) = io::pipe().unwrap();
        let out = Counted::default();
        let served = tokio::spawn(serve(host, reader, out.clone(), std::future::pending()));
        writer.write_all(format!("{}\n", initialize()).as_bytes()).unwrap();
        wait_lines(&out.0, "initialize is answered while the input stays open", |lines| lines.len() == 1).await;
        drop(writer);
        tokio::time::timeout(PATIENCE, served).await.unwrap().unwrap().unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_malformed_line_gets_a_parse_error_and_the_next_line_is_served() {
        let mut bytes = b"{nope\n\xff\xfe\n\n".to_vec();
        bytes.extend(input(&[initialize()]));
        let out = serve_all(bytes).await;
        assert_eq!(out.len(), 3, "{out:?}");
        for rejected in &out[..2] {
            assert_eq!((rejected["error"]["code"].as_i64(), &rejected["id"]), (Some(PARSE_ERROR as i64), &Value::Null), "{rejected}");
        }
        assert!(out[1]["error"]["message"].as_str().unwrap().starts_with("parse error: the line is not UTF-8"), "{}", out[1]);
        assert_eq!(out[2]["id"], 1);
        assert!(out[2]["result"]["protocolVersion"].is_string(), "{}", out[2]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn only_json_whitespace_is_a_blank_line_and_notifications_and_responses_get_no_answer() {
        let mut bytes = " \t\r\n\x0b\n\x0c\n\u{a0}\n".as_bytes().to_vec();
        bytes.extend(input(&[
            initialize(),
            json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": "soon" }),
            json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32700, "message": "Parse error" } }),
            request(2, "ping", json!({})),
        ]));
        let out = serve_all(bytes).await;
        // `\x0b`, `\x0c` and NBSP are not JSON whitespace: each such line is a parse error.
        let errors: Vec<&Value> = out.iter().filter(|m| m["error"]["code"] == json!(PARSE_ERROR)).collect();
        assert_eq!(errors.len(), 3, "{out:?}");
        assert!(errors.iter().all(|e| e["id"].is_null()), "{out:?}");
        // The refused notification and the client's id-less error response are not answered.
        let ids: Vec<&Value> = out.iter().filter(|m| m.get("error").is_none()).map(|m| &m["id"]).collect();
        assert_eq!(ids, [&json!(1), &json!(2)], "{out:?}");
        assert_eq!(out.len(), 5, "{out:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shutdown_ends_serve_and_nothing_is_served_after_it() {
        let host = testing::host(&[], ServerOptions::default()).await;
        let (reader, mut writer) = io::pipe().unwrap();
        let out = Shared::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let served = tokio::spawn(serve(host.clone(), reader, out.clone(), async move {
            let _ = stopped.await;
        }));
        writer.write_all(format!("{}\n", initialize()).as_bytes()).unwrap();
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while out.lines().is_empty() {
            assert!(tokio::time::Instant::now() < deadline, "no answer to initialize");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        stop.send(()).unwrap();
        tokio::time::timeout(PATIENCE, served).await.expect("shutdown ends serve").unwrap().unwrap();
        // The reading thread is still blocked in its read; its next line finds no session.
        writer.write_all(format!("{}\n", request(2, "ping", json!({}))).as_bytes()).unwrap();
        drop(writer);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(out.lines().len(), 1, "nothing is answered after shutdown: {:?}", out.lines());
        assert_eq!(host.announce_to_all(&crate::server::ListChanged::new("tools")), 0, "the session left the host");
    }

    /// A host whose one plugin has `spin` (computes until stopped) and `count` (a loop that
    /// takes a moment, then answers).
    async fn slow_host() -> Arc<Host> {
        use crate::server::testing::fixture::{Fixture, ToolDef};
        let count = "(local.set $i (i32.const 30000000)) (loop $l (local.set $i (i32.sub (local.get $i) (i32.const 1))) (br_if $l (local.get $i)))";
        let plugin = Fixture::new().tool(ToolDef::new("spin").body("(loop $l (br $l)) unreachable")).tool(ToolDef::new("count").body(count)).build();
        testing::host(&[("fixture", plugin)], ServerOptions::default()).await
    }

    fn call(id: i64, tool: &str) -> Value {
        request(id, "tools/call", json!({ "name": tool, "arguments": {} }))
    }

    async fn wait_lines(out: &Shared, what: &str, done: impl Fn(&[Value]) -> bool) {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while !done(&out.lines()) {
            assert!(tokio::time::Instant::now() < deadline, "{what}: {:?}", out.lines());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[test]
    fn a_line_over_the_limit_is_skipped_without_being_kept() {
        let mut text = vec![b'x'; 1 << 20];
        text.extend(b"\nnext\n");
        let mut input = BufReader::new(Cursor::new(text));
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut input, &mut buf, 1024).unwrap(), Line::TooLong(1 << 20));
        assert!(buf.is_empty() && buf.capacity() <= 4096, "the long line was not buffered: capacity {}", buf.capacity());
        assert_eq!(read_line(&mut input, &mut buf, 1024).unwrap(), Line::Complete);
        assert_eq!(buf, b"next\n");
        assert_eq!(read_line(&mut input, &mut buf, 4).unwrap(), Line::End);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_line_over_max_body_is_refused_and_the_next_line_is_served() {
        let host = testing::host(&[], ServerOptions::default()).await;
        let mut bytes = input(&[initialize()]);
        bytes.extend(format!("{}\n", json!({ "jsonrpc": "2.0", "id": 2, "method": "ping", "params": { "pad": "x".repeat(1 << 20) } })).as_bytes());
        bytes.extend(input(&[request(3, "ping", json!({}))]));
        let out = Shared::default();
        let settings = StdioSettings { max_line: 64 << 10, ..StdioSettings::default() };
        tokio::time::timeout(PATIENCE, serve_with(host, Cursor::new(bytes), out.clone(), settings, std::future::pending())).await.unwrap().unwrap();
        let out = out.lines();
        assert_eq!(out.len(), 3, "{out:?}");
        assert_eq!((out[1]["id"].clone(), out[1]["error"]["code"].clone()), (Value::Null, json!(jsonrpc::INVALID_REQUEST)), "{}", out[1]);
        assert_eq!(out[1]["error"]["message"], "the line is 1048636 bytes, over --max-body (65536 bytes)");
        assert_eq!((out[2]["id"].clone(), out[2]["result"].clone()), (json!(3), json!({})), "the next line is served");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_end_of_input_lets_calls_in_flight_finish_and_answer() {
        let out = Shared::default();
        let bytes = input(&[initialize(), call(2, "count"), call(3, "count"), request(4, "ping", json!({}))]);
        let served = serve_with(slow_host().await, Cursor::new(bytes), out.clone(), StdioSettings::default(), std::future::pending());
        tokio::time::timeout(PATIENCE, served).await.unwrap().unwrap();
        let out = out.lines();
        for id in [2, 3] {
            let answers: Vec<&Value> = out.iter().filter(|m| m["id"] == json!(id)).collect();
            assert_eq!(answers.len(), 1, "call {id} answered once after the input ended: {out:?}");
            assert!(answers[0]["result"]["content"].is_array(), "{}", answers[0]);
        }
        assert_eq!(out.len(), 4, "{out:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reader_waiting_at_the_in_flight_bound_goes_on_when_a_call_answers() {
        let out = Shared::default();
        // `count` computes past its first epoch tick, so it answers from a worker while the
        // reader waits for its slot; each answer must wake the reader for the next line.
        let bytes = input(&[initialize(), call(2, "count"), call(3, "count"), request(4, "ping", json!({}))]);
        let settings = StdioSettings { max_in_flight: 1, ..StdioSettings::default() };
        let served = serve_with(slow_host().await, Cursor::new(bytes), out.clone(), settings, std::future::pending());
        tokio::time::timeout(PATIENCE, served).await.expect("the reader is woken when a slot frees").unwrap();
        let ids: Vec<Value> = out.lines().iter().map(|m| m["id"].clone()).collect();
        assert_eq!(ids, [json!(1), json!(2), json!(3), json!(4)], "one at a time, in order: {:?}", out.lines());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn at_the_in_flight_bound_nothing_more_is_read_and_shutdown_answers_what_still_runs() {
        let (reader, mut writer) = io::pipe().unwrap();
        let out = Shared::default();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let settings = StdioSettings { max_in_flight: 1, shutdown_grace: Duration::from_millis(200), ..StdioSettings::default() };
        let served = tokio::spawn(serve_with(slow_host().await, reader, out.clone(), settings, async move {
            let _ = stopped.await;
        }));
        writer.write_all(&input(&[initialize(), call(2, "spin"), request(3, "ping", json!({}))])).unwrap();
        wait_lines(&out, "initialize is answered", |lines| lines.len() == 1).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(out.lines().len(), 1, "the ping waits behind the spin, unread: {:?}", out.lines());
        stop.send(()).unwrap();
        tokio::time::timeout(PATIENCE, served).await.expect("shutdown ends serve").unwrap().unwrap();
        let out = out.lines();
        assert_eq!(out.len(), 2, "the spin is answered and the unread ping is not: {out:?}");
        assert_eq!((out[1]["id"].clone(), out[1]["error"]["code"].clone()), (json!(2), json!(jsonrpc::INTERNAL_ERROR)), "{}", out[1]);
        assert_eq!(out[1]["error"]["message"], "corral is shutting down: the call was still running after the shutdown grace (200ms) and was cancelled");
        assert_eq!(out[1]["error"]["data"]["kind"], "shutdown");
    }
}
