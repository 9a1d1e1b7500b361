//! MCP over stdio: one JSON-RPC message per line on stdin and stdout.
//!
//! stdin is read on its own thread so that a blocked read never holds a tokio worker; each
//! line goes to the session, which answers quick requests at once and runs tool calls on the
//! runtime. Answers are written whole, one line each, under a lock, so concurrent calls never
//! interleave bytes. stdout carries protocol messages only; logs go to stderr.

use std::io::{self, BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::mcp::jsonrpc::{error_message, PARSE_ERROR};
use crate::mcp::RpcError;
use crate::server::{Host, Outlet, Session};

/// The owner of every task created over stdio.
pub const LOCAL_OWNER: &str = "local";

/// How long calls cancelled at shutdown get to wind down before the process exits anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);

struct StdoutOutlet {
    out: Mutex<io::Stdout>,
}

impl Outlet for StdoutOutlet {
    fn send(&self, message: Value) {
        let mut line = serde_json::to_vec(&message).expect("JSON values serialize");
        line.push(b'\n');
        let mut out = self.out.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = out.write_all(&line).and_then(|_| out.flush()) {
            tracing::debug!("stdout closed: {e}");
        }
    }
}

/// Serves one session on stdin/stdout until stdin closes or the process is told to stop.
pub async fn serve(host: Arc<Host>) -> anyhow::Result<()> {
    let outlet = Arc::new(StdoutOutlet { out: Mutex::new(io::stdout()) });
    // Over stdio the one client is the local user, so its tasks survive a host restart.
    let session = Arc::new(Session::new(host, outlet.clone(), LOCAL_OWNER));
    let (eof_tx, eof_rx) = tokio::sync::oneshot::channel::<()>();
    let reader = session.clone();
    std::thread::Builder::new().name("corral-stdin".into()).spawn(move || {
        read_lines(io::stdin().lock(), &reader, outlet.as_ref());
        let _ = eof_tx.send(());
    })?;
    tokio::select! {
        _ = eof_rx => tracing::info!("stdin closed; shutting down"),
        _ = super::shutdown_signal() => tracing::info!("signal received; shutting down"),
    }
    session.cancel_all();
    if tokio::time::timeout(SHUTDOWN_GRACE, session.drained()).await.is_err() {
        tracing::warn!("calls still running after {SHUTDOWN_GRACE:?}; exiting anyway");
    }
    Ok(())
}

fn read_lines(mut input: impl BufRead, session: &Session, outlet: &dyn Outlet) {
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
        match std::str::from_utf8(&buf) {
            Ok(line) if line.trim().is_empty() => {}
            Ok(line) => session.handle(line.trim_end_matches(['\n', '\r'])),
            Err(e) => outlet.send(error_message(None, &RpcError::new(PARSE_ERROR, format!("parse error: the line is not UTF-8 ({e})")))),
        }
    }
}
