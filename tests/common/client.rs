//! A stdio MCP client that drives the real `corral` binary.
//!
//! Every wait has a deadline and panics with what was received so far (and the host's stderr),
//! so no test can hang. Stdout is protocol-only: a line that is not JSON panics the test.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The generous default for every wait.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// The protocol version the client asks for.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

enum Line {
    Json(Value),
    NotJson(String),
}

pub struct McpProcess {
    child: Child,
    args: Vec<String>,
    stdin: Option<ChildStdin>,
    rx: Receiver<Line>,
    stdout_closed: bool,
    stderr: Arc<Mutex<String>>,
    next_id: u64,
    /// Messages received while waiting for something else (responses to other ids, server
    /// requests), oldest first.
    inbox: VecDeque<Value>,
    /// Notifications received so far that no `wait_notification` has taken yet.
    notifications: Vec<Value>,
    /// Every message received, for failure reports.
    log: Vec<Value>,
    /// A panic message already carried the report.
    reported: bool,
}

impl McpProcess {
    /// Starts `corral ARGS...` with piped stdio.
    pub fn spawn(args: &[&str]) -> McpProcess {
        Self::spawn_exe(env!("CARGO_BIN_EXE_corral"), args)
    }

    /// Starts `EXE ARGS...` with piped stdio.
    pub fn spawn_exe(exe: &str, args: &[&str]) -> McpProcess {
        let mut child = Command::new(exe)
            .args(args)
            .env("NO_COLOR", "1")
            // Tests never touch the user's task database unless they pass --db, and the log
            // level comes from the flags.
            .env("CORRAL_DB", ":memory:")
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {exe}: {e}"));

        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let text = String::from_utf8_lossy(&buf);
                let text = text.trim_end_matches(['\n', '\r']);
                let line = match serde_json::from_str::<Value>(text) {
                    Ok(v) => Line::Json(v),
                    Err(_) => Line::NotJson(text.to_string()),
                };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });

        let stderr = Arc::new(Mutex::new(String::new()));
        let mut pipe = child.stderr.take().unwrap();
        let sink = stderr.clone();
        thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            loop {
                match pipe.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => sink.lock().unwrap().push_str(&String::from_utf8_lossy(&chunk[..n])),
                }
            }
        });

        let stdin = child.stdin.take();
        McpProcess {
            child,
            args: args.iter().map(|s| s.to_string()).collect(),
            stdin,
            rx,
            stdout_closed: false,
            stderr,
            next_id: 1,
            inbox: VecDeque::new(),
            notifications: Vec::new(),
            log: Vec::new(),
            reported: false,
        }
    }

    /// Writes one message as a line.
    pub fn send(&mut self, message: &Value) {
        let line = serde_json::to_string(message).unwrap();
        self.send_raw(&line);
    }

    /// Writes `text` as it is, plus a newline if it has none.
    pub fn send_raw(&mut self, text: &str) {
        let mut data = text.as_bytes().to_vec();
        if !text.ends_with('\n') {
            data.push(b'\n');
        }
        let stdin = self.stdin.as_mut().expect("stdin was closed");
        if let Err(e) = stdin.write_all(&data).and_then(|_| stdin.flush()) {
            self.fail(format!("writing to corral's stdin failed: {e}"));
        }
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request without waiting; returns its id.
    pub fn send_request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        id
    }

    /// Sends a request and returns the whole response message (`result` or `error`).
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.send_request(method, params);
        self.wait_response(id, TIMEOUT)
    }

    /// Sends a request and returns its `result`; panics on an error response.
    pub fn result(&mut self, method: &str, params: Value) -> Value {
        let response = self.request(method, params);
        match response.get("result") {
            Some(result) => result.clone(),
            None => self.fail(format!("{method} failed: {response}")),
        }
    }

    /// `tools/call` with `arguments`; returns the CallToolResult.
    pub fn call_tool(&mut self, name: &str, arguments: Value) -> Value {
        self.result("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// `initialize` + `notifications/initialized`; returns the initialize result.
    pub fn initialize(&mut self) -> Value {
        let result = self.result(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "corral-tests", "version": "0.0.0"},
            }),
        );
        self.notify("notifications/initialized", json!({}));
        result
    }

    /// Waits for the response to request `id`, buffering everything else it sees.
    pub fn wait_response(&mut self, id: u64, timeout: Duration) -> Value {
        if let Some(pos) = self.inbox.iter().position(|m| is_response_to(m, id)) {
            return self.inbox.remove(pos).unwrap();
        }
        let deadline = Instant::now() + timeout;
        loop {
            match self.next_message(deadline) {
                Some(m) if is_response_to(&m, id) => return m,
                Some(m) => self.stash(m),
                None => {
                    let why = if self.stdout_closed {
                        "stdout closed"
                    } else {
                        "timed out"
                    };
                    self.fail(format!("no response to request {id} ({why} after {timeout:?})"));
                }
            }
        }
    }

    /// Receives for `duration` and panics if a response to `id` arrives; buffers the rest.
    pub fn assert_no_response(&mut self, id: u64, duration: Duration) {
        if let Some(m) = self.inbox.iter().find(|m| is_response_to(m, id)).cloned() {
            self.fail(format!("unexpected response to request {id}: {m}"));
        }
        let deadline = Instant::now() + duration;
        while let Some(m) = self.next_message(deadline) {
            if is_response_to(&m, id) {
                self.fail(format!("unexpected response to request {id}: {m}"));
            }
            self.stash(m);
        }
    }

    /// The next message from stdout, or `None` on timeout or end of stdout. Not buffered.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Option<Value> {
        self.next_message(Instant::now() + timeout)
    }

    /// Notifications received so far that `wait_notification` has not taken.
    pub fn notifications(&mut self) -> Vec<Value> {
        self.pump();
        self.notifications.clone()
    }

    /// Waits for a notification with this method and takes it out of the buffer.
    pub fn wait_notification(&mut self, method: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(pos) = self.notifications.iter().position(|n| n["method"] == method) {
                return self.notifications.remove(pos);
            }
            match self.next_message(deadline) {
                Some(m) => self.stash(m),
                None => self.fail(format!("no {method} notification within {timeout:?}")),
            }
        }
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The child's peak resident memory in bytes (`VmHWM`), where /proc tells it.
    pub fn peak_rss(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kib: u64 = line
            .trim_start_matches("VmHWM:")
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kib * 1024)
    }

    /// The host's stderr so far.
    pub fn stderr_text(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Waits until stderr satisfies `pred`; returns it. Panics with the text on timeout.
    pub fn wait_stderr(&mut self, what: &str, timeout: Duration, pred: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let text = self.stderr_text();
            if pred(&text) {
                return text;
            }
            if Instant::now() >= deadline {
                self.fail(format!("stderr never showed {what} within {timeout:?}"));
            }
            thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the process to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() >= deadline {
                self.fail(format!("corral did not exit within {timeout:?}"));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// What this process was started with, what it sent, and its stderr (for panic messages).
    pub fn report(&self) -> String {
        let mut s = format!(
            "--- corral {}\n--- received ({} messages):\n",
            self.args.join(" "),
            self.log.len()
        );
        for m in &self.log {
            let mut text = m.to_string();
            if text.len() > 2000 {
                let mut cut = 2000;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
                text.push_str("...");
            }
            s.push_str(&text);
            s.push('\n');
        }
        s.push_str("--- stderr:\n");
        s.push_str(&self.stderr_text());
        s
    }

    /// Panics with `message` and the report.
    pub fn fail(&mut self, message: String) -> ! {
        self.reported = true;
        panic!("{message}\n{}", self.report());
    }

    fn stash(&mut self, message: Value) {
        if message.get("method").is_some() && message.get("id").is_none() {
            self.notifications.push(message);
        } else {
            self.inbox.push_back(message);
        }
    }

    /// Buffers whatever has already arrived.
    fn pump(&mut self) {
        while let Some(m) = self.next_message(Instant::now()) {
            self.stash(m);
        }
    }

    fn next_message(&mut self, deadline: Instant) -> Option<Value> {
        if self.stdout_closed {
            return None;
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        let line = match self.rx.recv_timeout(wait) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => return None,
            Err(RecvTimeoutError::Disconnected) => {
                self.stdout_closed = true;
                return None;
            }
        };
        match line {
            Line::Json(v) => {
                self.log.push(v.clone());
                Some(v)
            }
            Line::NotJson(text) => self.fail(format!(
                "corral wrote a non-JSON line to stdout (stdout is protocol-only): {text:?}"
            )),
        }
    }
}

impl Drop for McpProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if thread::panicking() && !self.reported {
            eprintln!("{}", self.report());
        }
    }
}

fn is_response_to(message: &Value, id: u64) -> bool {
    message.get("method").is_none()
        && message.get("id").and_then(Value::as_u64) == Some(id)
        && (message.get("result").is_some() || message.get("error").is_some())
}
