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
            Ok(line) if line.trim().is_empty() => continue,
            Ok(line) => jsonrpc::parse(line.trim_end_matches(['\n', '\r'])),
            Err(e) => Err(Rejected { id: None, error: RpcError::new(PARSE_ERROR, format!("parse error: the line is not UTF-8 ({e})")) }),
        };
        let Some(session) = session.upgrade() else { return };
        session.handle(message, outlet);
    }
}
