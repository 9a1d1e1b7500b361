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
//! interleave bytes. The output carries protocol messages only; logs go to stderr.

use std::future::Future;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::Value;

use crate::mcp::jsonrpc::{self, PARSE_ERROR};
use crate::mcp::{Rejected, RpcError};
use crate::server::{Host, Outlet, Session};

/// The owner of every task created over stdio.
pub const LOCAL_OWNER: &str = "local";

/// How long calls cancelled at shutdown get to wind down before `serve` returns anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

/// Writes each message as one line.
struct LineOutlet<W> {
    out: Mutex<W>,
}

impl<W: Write + Send + 'static> Outlet for LineOutlet<W> {
    fn send(&self, message: Value) {
        let mut line = serde_json::to_vec(&message).expect("JSON values serialize");
        line.push(b'\n');
        let mut out = self.out.lock().unwrap();
        if let Err(e) = out.write_all(&line).and_then(|_| out.flush()) {
            tracing::debug!("output closed: {e}");
        }
    }
}

/// Serves one session, reading `input` and answering on `output`, until the input ends or
/// `shutdown` resolves. Calls still running then are cancelled and get [`SHUTDOWN_GRACE`] to
/// end.
///
/// The reading thread is the one thing that may outlive this function: a blocking read cannot
/// be interrupted portably. It holds the session weakly, so once this returns it serves no
/// further line, and it ends at its next line or at the end of the input.
pub async fn serve<R, W>(host: Arc<Host>, input: R, output: W, shutdown: impl Future<Output = ()>) -> anyhow::Result<()>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    let outlet: Arc<dyn Outlet> = Arc::new(LineOutlet { out: Mutex::new(output) });
    // Over stdio the one client is the local user, so its tasks survive a host restart.
    let session = Arc::new(Session::new(host, outlet.clone(), LOCAL_OWNER));
    let (eof_tx, eof_rx) = tokio::sync::oneshot::channel::<()>();
    let reader = Arc::downgrade(&session);
    std::thread::Builder::new().name("corral-stdin".into()).spawn(move || {
        read_lines(BufReader::new(input), &reader, &outlet);
        let _ = eof_tx.send(());
    })?;
    tokio::select! {
        _ = eof_rx => tracing::info!("stdin closed; shutting down"),
        _ = shutdown => tracing::info!("signal received; shutting down"),
    }
    session.cancel_all();
    if tokio::time::timeout(SHUTDOWN_GRACE, session.drained()).await.is_err() {
        tracing::warn!("calls still running after {SHUTDOWN_GRACE:?}; exiting anyway");
    }
    Ok(())
}

/// What JSON (RFC 8259) counts as whitespace.
const JSON_WHITESPACE: [char; 4] = [' ', '\t', '\n', '\r'];

/// Hands each line to the session until the input ends, fails, or the session is gone.
fn read_lines(mut input: impl BufRead, session: &Weak<Session>, outlet: &Arc<dyn Outlet>) {
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match input.read_until(b'\n', &mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) => {
                tracing::error!("reading stdin failed: {e}");
                return;
            }
        }
        let message = match std::str::from_utf8(&buf) {
            // Only JSON's own whitespace makes a line blank; `\x0b`, `\x0c` or NBSP alone are a
            // line that does not parse.
            Ok(line) if line.trim_matches(JSON_WHITESPACE).is_empty() => continue,
            Ok(line) => jsonrpc::parse(line.trim_end_matches(['\n', '\r'])),
            Err(e) => Err(Rejected { id: None, error: RpcError::new(PARSE_ERROR, format!("parse error: the line is not UTF-8 ({e})")), answer: true }),
        };
        let Some(session) = session.upgrade() else { return };
        session.handle(message, outlet);
    }
}

#[cfg(test)]
mod tests {
    use std::io::{self, Cursor};

    use serde_json::json;

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
        assert_eq!(host.sessions.broadcast(&json!({})), 0, "the session left the host");
    }
}
