//! An MCP client that drives the real `corral` binary over stdio or Streamable HTTP.
//!
//! Both transports feed one channel of received messages, so every wait works the same way.
//! Over stdio a message is a line on stdout; over HTTP each POST runs on its own thread and
//! pushes its answer (a JSON body, or the `data:` events of an SSE stream) into the channel, and
//! the session's GET stream (server-initiated messages) does the same.
//!
//! Every wait has a deadline and panics with what was received so far (and the host's stderr),
//! so no test can hang. Over stdio, stdout is protocol-only: a line that is not JSON panics the
//! test. Over HTTP, stdout must stay silent: any byte on it panics the test.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The generous default for every wait.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// The protocol version the client asks for.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// How the client talks to `corral serve`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// One JSON-RPC message per line on the child's stdin and stdout.
    Stdio,
    /// Streamable HTTP: `serve` gets `--http 127.0.0.1:0` and the client POSTs to the address
    /// the host logs.
    Http,
}

impl Transport {
    /// What `corral serve` needs on top of its other flags to serve this transport.
    pub fn serve_args(self) -> &'static [&'static str] {
        match self {
            Transport::Stdio => &[],
            Transport::Http => &["--http", "127.0.0.1:0"],
        }
    }
}

/// What the host logs on stderr once it listens; the URL follows.
const HTTP_READY: &str = "serving MCP over HTTP at ";

enum Line {
    Json(Value),
    /// Something that fails the test when it is read, with the complaint.
    Bad(String),
    /// Over HTTP: the child closed stdout (it exited).
    Eof,
}

pub struct McpProcess {
    child: Child,
    transport: Transport,
    args: Vec<String>,
    stdin: Option<ChildStdin>,
    /// Over HTTP: the endpoint and the session.
    http: Option<Http>,
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
        Self::spawn_with(Transport::Stdio, args)
    }

    /// Starts `corral ARGS...` speaking `transport` (over HTTP, `ARGS` must be `serve ...`: the
    /// client appends `--http 127.0.0.1:0` and waits until the host listens).
    pub fn spawn_with(transport: Transport, args: &[&str]) -> McpProcess {
        Self::spawn_exe_with(transport, env!("CARGO_BIN_EXE_corral"), args)
    }

    /// Starts `EXE ARGS...` with piped stdio.
    pub fn spawn_exe(exe: &str, args: &[&str]) -> McpProcess {
        Self::spawn_exe_with(Transport::Stdio, exe, args)
    }

    /// Starts `EXE ARGS...` speaking `transport`.
    pub fn spawn_exe_with(transport: Transport, exe: &str, args: &[&str]) -> McpProcess {
        Self::spawn_exe_env(transport, exe, args, &[])
    }

    /// Starts `corral ARGS...` speaking `transport`, with the variables `env` set.
    pub fn spawn_env(transport: Transport, args: &[&str], env: &[(&str, &str)]) -> McpProcess {
        Self::spawn_exe_env(transport, env!("CARGO_BIN_EXE_corral"), args, env)
    }

    /// Starts `EXE ARGS...` speaking `transport`, with the variables `env` set.
    pub fn spawn_exe_env(transport: Transport, exe: &str, args: &[&str], env: &[(&str, &str)]) -> McpProcess {
        let mut args = args.to_vec();
        args.extend_from_slice(transport.serve_args());
        let http = transport == Transport::Http;
        let mut child = Command::new(exe)
            .args(&args)
            .env("NO_COLOR", "1")
            // Tests never touch the user's task database unless they pass --db, and the log
            // level comes from the flags.
            .env("CORRAL_DB", ":memory:")
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            // An HTTP server runs detached from any terminal, as under a service manager.
            .stdin(if http { Stdio::null() } else { Stdio::piped() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {exe}: {e}"));

        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        let stdout_tx = tx.clone();
        thread::spawn(move || {
            let tx = stdout_tx;
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
                let line = if http {
                    Line::Bad(format!("corral wrote to stdout while serving HTTP (stdout should stay silent): {text:?}"))
                } else {
                    match serde_json::from_str::<Value>(text) {
                        Ok(v) => Line::Json(v),
                        Err(_) => Line::Bad(format!("corral wrote a non-JSON line to stdout (stdout is protocol-only): {text:?}")),
                    }
                };
                if tx.send(line).is_err() {
                    break;
                }
            }
            if http {
                let _ = tx.send(Line::Eof);
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
        let mut mcp = McpProcess {
            child,
            transport,
            args: args.iter().map(|s| s.to_string()).collect(),
            stdin,
            http: None,
            rx,
            stdout_closed: false,
            stderr,
            next_id: 1,
            inbox: VecDeque::new(),
            notifications: Vec::new(),
            log: Vec::new(),
            reported: false,
        };
        if http {
            // Over stdio the stdout reader holds the only sender, so the channel ends with
            // stdout; over HTTP the request threads feed it too, and `Line::Eof` marks the end.
            let url = mcp.wait_for_http_url();
            mcp.http = Some(Http::new(url, tx));
        } else {
            drop(tx);
        }
        mcp
    }

    /// Over HTTP: reads the URL from the host's "serving MCP over HTTP at URL" log line.
    fn wait_for_http_url(&mut self) -> String {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let text = self.stderr_text();
            if let Some(at) = text.find(HTTP_READY) {
                let rest = &text[at + HTTP_READY.len()..];
                if let Some(end) = rest.find(char::is_whitespace) {
                    return rest[..end].to_owned();
                }
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                self.fail(format!("corral exited ({status}) before serving HTTP"));
            }
            if Instant::now() >= deadline {
                self.fail(format!("corral never logged `{HTTP_READY}URL` within {TIMEOUT:?}"));
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// The transport this client speaks.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// Over HTTP: the endpoint URL (`http://127.0.0.1:PORT/mcp`).
    pub fn http_url(&self) -> Option<&str> {
        self.http.as_ref().map(|h| h.url.as_str())
    }

    /// Over HTTP: the `Mcp-Session-Id` minted at `initialize`, once it came back.
    pub fn session_id(&self) -> Option<&str> {
        self.http.as_ref().and_then(|h| h.session_id.as_deref())
    }

    /// Over HTTP, sends `Authorization: Bearer TOKEN` with every later request (the host must
    /// run with `--auth-tokens-file`). Stdio has no authentication: there it does nothing.
    pub fn set_bearer_token(&mut self, token: &str) {
        if let Some(http) = &mut self.http {
            http.bearer = Some(token.to_owned());
        }
    }

    /// Sends one message: a line over stdio, a POST over HTTP.
    pub fn send(&mut self, message: &Value) {
        let line = serde_json::to_string(message).unwrap();
        self.send_raw(&line);
    }

    /// Sends `text` as it is: over stdio as a line (plus a newline if it has none), over HTTP
    /// as a POST body. Over HTTP a request is answered on its own thread (its answer, or the
    /// JSON-RPC error of a refusal, reaches the same waits as over stdio); anything else has
    /// been answered when this returns.
    pub fn send_raw(&mut self, text: &str) {
        if self.http.is_some() {
            let result = self.http.as_mut().unwrap().post(text);
            if let Err(e) = result {
                self.fail(e);
            }
            return;
        }
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

    /// `initialize` declaring `capabilities` (e.g. `{"elicitation": {}, "sampling": {}}`), then
    /// `notifications/initialized`; returns the initialize result.
    pub fn initialize_with(&mut self, capabilities: Value) -> Value {
        let result = self.result(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": capabilities,
                "clientInfo": {"name": "corral-tests", "version": "0.0.0"},
            }),
        );
        self.notify("notifications/initialized", json!({}));
        result
    }

    /// [`McpProcess::initialize_with`] declaring each of `capabilities` (`"elicitation"`,
    /// `"sampling"`, `"roots"`) as `{}`.
    pub fn initialize_declaring(&mut self, capabilities: &[&str]) -> Value {
        let declared: serde_json::Map<String, Value> = capabilities.iter().map(|c| (c.to_string(), json!({}))).collect();
        self.initialize_with(Value::Object(declared))
    }

    /// Waits for a request from the server (`elicitation/create`, ...) with this method and
    /// takes it out of the buffer.
    pub fn wait_request(&mut self, method: &str, timeout: Duration) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(pos) = self.inbox.iter().position(|m| m["method"] == method && m.get("id").is_some()) {
                return self.inbox.remove(pos).unwrap();
            }
            match self.next_message(deadline) {
                Some(m) => self.stash(m),
                None => self.fail(format!("no {method} request from the server within {timeout:?}")),
            }
        }
    }

    /// Receives for `duration` and panics if a request with this method arrives; buffers the rest.
    pub fn assert_no_request(&mut self, method: &str, duration: Duration) {
        let deadline = Instant::now() + duration;
        while let Some(m) = self.next_message(deadline) {
            self.stash(m);
        }
        if let Some(m) = self.inbox.iter().find(|m| m["method"] == method && m.get("id").is_some()).cloned() {
            self.fail(format!("unexpected {method} request: {m}"));
        }
    }

    /// Answers the server's request `request` with `result`.
    pub fn respond(&mut self, request: &Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": request["id"], "result": result}));
    }

    /// Answers the server's request `request` with a JSON-RPC error.
    pub fn respond_error(&mut self, request: &Value, code: i64, message: &str) {
        self.send(&json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": code, "message": message}}));
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
                    let why = if self.stdout_closed && self.http.is_some() {
                        "corral exited"
                    } else if self.stdout_closed {
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
        let kib: u64 = line.trim_start_matches("VmHWM:").trim().trim_end_matches("kB").trim().parse().ok()?;
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

    /// Over HTTP: leaves the session (without ending it) and opens a new one, as a second client
    /// of the same host would; returns the new `initialize` result.
    pub fn new_session(&mut self) -> Value {
        if let Some(http) = &mut self.http {
            http.session_id = None;
            http.protocol_version = None;
        }
        self.initialize()
    }

    /// Sends SIGTERM, as a service manager stopping the host does.
    pub fn terminate(&mut self) {
        let pid = self.child.id().to_string();
        match Command::new("kill").args(["-TERM", &pid]).status() {
            Ok(status) if status.success() => {}
            other => self.fail(format!("kill -TERM {pid} failed: {other:?}")),
        }
    }

    /// Ends the conversation the way a client hangs up. Over stdio: closes stdin (the host
    /// exits when it sees the end). Over HTTP: DELETEs the session, then sends SIGTERM (what a
    /// service manager does), so `wait_exit` sees how the host shuts down.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
        let Some(http) = &mut self.http else { return };
        http.stop.store(true, Ordering::SeqCst);
        if let Err(e) = http.delete() {
            self.fail(e);
        }
        self.terminate();
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
        let mut s = format!("--- corral {}\n", self.args.join(" "));
        if let Some(http) = &self.http {
            s.push_str(&format!("--- over HTTP at {} (session {:?})\n", http.url, http.session_id));
            let notes = http.notes.lock().unwrap();
            if !notes.is_empty() {
                s.push_str(&format!("--- HTTP exchanges worth noting ({}):\n", notes.len()));
                for note in notes.iter() {
                    s.push_str(&clip(note));
                    s.push('\n');
                }
            }
        }
        s.push_str(&format!("--- received ({} messages):\n", self.log.len()));
        for m in &self.log {
            s.push_str(&clip(&m.to_string()));
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
            Line::Bad(complaint) => self.fail(complaint),
            Line::Eof => {
                self.stdout_closed = true;
                None
            }
        }
    }
}

impl Drop for McpProcess {
    fn drop(&mut self) {
        if let Some(http) = &self.http {
            http.stop.store(true, Ordering::SeqCst);
        }
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

/// `text`, cut to 2000 bytes for a report.
fn clip(text: &str) -> String {
    if text.len() <= 2000 {
        return text.to_owned();
    }
    let mut cut = 2000;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}...", &text[..cut])
}

// ---------------------------------------------------------------------------------------------
// Streamable HTTP

/// The client side of one HTTP endpoint and its session.
struct Http {
    agent: ureq::Agent,
    url: String,
    /// Where every received message goes: the channel the waits read.
    tx: Sender<Line>,
    session_id: Option<String>,
    /// Sent as `MCP-Protocol-Version` once `initialize` agreed on one.
    protocol_version: Option<String>,
    bearer: Option<String>,
    /// Refusals, broken connections and reconnections, for failure reports.
    notes: Arc<Mutex<Vec<String>>>,
    /// Tells the GET stream's thread not to reconnect (the session or the host is ending).
    stop: Arc<AtomicBool>,
}

/// The headers a 2026-07-28 request repeats its body in (its `_meta` names the version, so it is
/// one): the version, the method and, where the method has one, the name.
fn modern_headers(message: &Value) -> Vec<(&'static str, String)> {
    let params = &message["params"];
    let Some(version) = params["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str() else { return Vec::new() };
    let mut headers = vec![("MCP-Protocol-Version", version.to_owned())];
    if let Some(method) = message["method"].as_str() {
        headers.push(("Mcp-Method", method.to_owned()));
    }
    if let Some(name) = ["name", "uri", "taskId"].iter().find_map(|k| params[*k].as_str()) {
        headers.push(("Mcp-Name", name.to_owned()));
    }
    headers
}

/// What one exchange needs, movable to its thread.
struct Exchange {
    agent: ureq::Agent,
    url: String,
    headers: Vec<(&'static str, String)>,
    tx: Sender<Line>,
    notes: Arc<Mutex<Vec<String>>>,
}

/// What came back on a POST.
#[derive(Default)]
struct PostAnswer {
    status: u16,
    session_id: Option<String>,
    messages: Vec<Value>,
}

impl Http {
    fn new(url: String, tx: Sender<Line>) -> Http {
        let config = ureq::Agent::config_builder()
            // A 4xx carries a JSON-RPC error the tests look at.
            .http_status_as_error(false)
            // The host is on loopback; never ask a proxy from the environment.
            .proxy(None)
            .timeout_connect(Some(Duration::from_secs(10)))
            .build();
        Http {
            agent: ureq::Agent::new_with_config(config),
            url,
            tx,
            session_id: None,
            protocol_version: None,
            bearer: None,
            notes: Arc::new(Mutex::new(Vec::new())),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    fn exchange(&self) -> Exchange {
        let mut headers = Vec::new();
        if let Some(id) = &self.session_id {
            headers.push(("Mcp-Session-Id", id.clone()));
        }
        if let Some(version) = &self.protocol_version {
            headers.push(("MCP-Protocol-Version", version.clone()));
        }
        if let Some(token) = &self.bearer {
            headers.push(("Authorization", format!("Bearer {token}")));
        }
        Exchange { agent: self.agent.clone(), url: self.url.clone(), headers, tx: self.tx.clone(), notes: self.notes.clone() }
    }

    /// POSTs one message. A request is answered on its own thread, since it may take as long
    /// as a tool call; anything else (notifications, responses, text that is no request) and
    /// the first `initialize`, whose answer carries the session id, are answered before this
    /// returns, so the next message finds them done, as over stdio.
    fn post(&mut self, text: &str) -> Result<(), String> {
        let parsed = serde_json::from_str::<Value>(text).ok();
        let method = parsed.as_ref().and_then(|v| v.get("method")).and_then(Value::as_str);
        let is_request = method.is_some() && parsed.as_ref().is_some_and(|v| v.get("id").is_some());
        let opens_session = method == Some("initialize") && self.session_id.is_none();
        let mut exchange = self.exchange();
        if self.session_id.is_none() {
            exchange.headers.extend(parsed.as_ref().map(modern_headers).unwrap_or_default());
        }
        let body = text.to_owned();
        if is_request && !opens_session {
            thread::spawn(move || exchange.post(&body));
            return Ok(());
        }
        let answer = within(format!("POST {}", clip(text)), move || exchange.post(&body))?;
        if answer.status == 202 && !parsed.as_ref().is_some_and(Value::is_object) {
            self.notes.lock().unwrap().push(format!("POST {} answered 202 Accepted, yet it is no JSON-RPC message", clip(text)));
        }
        if opens_session {
            self.session_id = answer.session_id;
            let version = answer.messages.iter().find_map(|m| m["result"]["protocolVersion"].as_str());
            if let (Some(version), Some(_)) = (version, &self.session_id) {
                self.protocol_version = Some(version.to_owned());
                self.open_stream()?;
            }
        }
        Ok(())
    }

    /// Opens the session's GET stream on a thread that feeds its events into the channel and
    /// reconnects with `Last-Event-ID` when the stream ends. Returns once the host has
    /// answered the GET, so nothing the session sends afterwards is missed.
    fn open_stream(&mut self) -> Result<(), String> {
        let exchange = self.exchange();
        let stop = self.stop.clone();
        let (ready_tx, ready_rx) = mpsc::channel();
        thread::spawn(move || exchange.listen(&stop, ready_tx));
        match ready_rx.recv_timeout(TIMEOUT) {
            Ok(result) => result,
            Err(_) => Err(format!("the GET stream did not open within {TIMEOUT:?}")),
        }
    }

    /// DELETEs the session, if there is one.
    fn delete(&mut self) -> Result<(), String> {
        if self.session_id.is_none() {
            return Ok(());
        }
        let exchange = self.exchange();
        let status = within("DELETE".to_owned(), move || {
            let mut request = exchange.agent.delete(&exchange.url);
            for (name, value) in &exchange.headers {
                request = request.header(*name, value);
            }
            request.call().map(|r| r.status().as_u16()).map_err(|e| e.to_string())
        })?;
        match status {
            Ok(status) if (200..300).contains(&status) => Ok(()),
            Ok(status) => Err(format!("DELETE of the session answered HTTP {status}")),
            Err(e) => Err(format!("DELETE of the session failed: {e}")),
        }
    }
}

impl Exchange {
    fn note(&self, note: String) {
        self.notes.lock().unwrap().push(note);
    }

    /// Pushes one received message (an SSE event's data or a JSON body) into the channel.
    fn push(&self, data: &str, source: &str) -> Option<Value> {
        match serde_json::from_str::<Value>(data) {
            Ok(v) => {
                let _ = self.tx.send(Line::Json(v.clone()));
                Some(v)
            }
            Err(_) => {
                let _ = self.tx.send(Line::Bad(format!("{source} carried something that is not JSON: {data:?}")));
                None
            }
        }
    }

    /// POSTs `text` and pushes every message of the answer, as it arrives.
    fn post(&self, text: &str) -> PostAnswer {
        let mut request = self.agent.post(&self.url).header("Accept", "application/json, text/event-stream").header("Content-Type", "application/json");
        for (name, value) in &self.headers {
            request = request.header(*name, value);
        }
        let response = match request.send(text) {
            Ok(response) => response,
            Err(e) => {
                self.note(format!("POST {} failed: {e}", clip(text)));
                return PostAnswer::default();
            }
        };
        let status = response.status().as_u16();
        let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let session_id = header("mcp-session-id");
        let content_type = header("content-type").unwrap_or_default();
        let mut messages = Vec::new();
        let reader = response.into_body().into_reader();
        if content_type.starts_with("text/event-stream") {
            let source = format!("the SSE answer to POST {}", clip(text));
            let read = read_sse(reader, |_, data| messages.extend(self.push(data, &source)));
            if let Err(e) = read {
                self.note(format!("reading {source} failed: {e}"));
            }
        } else {
            let mut bytes = Vec::new();
            let mut reader = reader;
            if let Err(e) = reader.read_to_end(&mut bytes) {
                self.note(format!("reading the answer to POST {} failed: {e}", clip(text)));
            }
            let body = String::from_utf8_lossy(&bytes);
            let ok = (200..300).contains(&status);
            if !ok || (status != 200 && status != 202) {
                self.note(format!("POST {} answered HTTP {status}: {body}", clip(text)));
            }
            if !body.trim().is_empty() {
                // A refusal's body is a JSON-RPC error without an id; it goes to the waits too
                // (a parse error is answered that way).
                match serde_json::from_str::<Value>(&body) {
                    Ok(_) => messages.extend(self.push(&body, "")),
                    Err(_) if ok => {
                        let _ = self.tx.send(Line::Bad(format!("POST {} answered HTTP {status} with a body that is not JSON: {body:?}", clip(text))));
                    }
                    Err(_) => {}
                }
            }
        }
        PostAnswer { status, session_id, messages }
    }

    /// Reads the session's GET stream into the channel until `stop`, reconnecting with
    /// `Last-Event-ID` when it ends. Says on `ready` whether the first GET was accepted.
    fn listen(&self, stop: &AtomicBool, ready: Sender<Result<(), String>>) {
        let mut ready = Some(ready);
        let mut last_event_id: Option<String> = None;
        for attempt in 0..100 {
            if stop.load(Ordering::SeqCst) {
                break;
            }
            if attempt > 0 {
                thread::sleep(Duration::from_millis(50));
            }
            let mut request = self.agent.get(&self.url).header("Accept", "text/event-stream");
            for (name, value) in &self.headers {
                request = request.header(*name, value);
            }
            if let Some(id) = &last_event_id {
                request = request.header("Last-Event-ID", id);
            }
            let problem = match request.call() {
                Ok(response) if response.status().as_u16() == 200 => {
                    if let Some(ready) = ready.take() {
                        let _ = ready.send(Ok(()));
                    }
                    let read = read_sse(response.into_body().into_reader(), |id, data| {
                        if let Some(id) = id {
                            last_event_id = Some(id.to_owned());
                        }
                        self.push(data, "the GET stream");
                    });
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    self.note(format!("the GET stream ended ({read:?}); reconnecting after event {last_event_id:?}"));
                    continue;
                }
                Ok(response) => {
                    let status = response.status().as_u16();
                    let body = response.into_body().read_to_string().unwrap_or_default();
                    format!("GET answered HTTP {status}: {body}")
                }
                Err(e) => format!("GET failed: {e}"),
            };
            // Refused or unreachable: the session or the host is gone.
            self.note(problem.clone());
            if let Some(ready) = ready.take() {
                let _ = ready.send(Err(problem));
            }
            break;
        }
    }
}

/// Runs `work` on a thread and waits at most `TIMEOUT` for it.
fn within<T: Send + 'static>(what: String, work: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(work());
    });
    rx.recv_timeout(TIMEOUT).map_err(|_| format!("{what}: no HTTP answer within {TIMEOUT:?}"))
}

/// Reads server-sent events, calling `on_event(id, data)` for each event that has data.
fn read_sse(reader: impl Read, mut on_event: impl FnMut(Option<&str>, &str)) -> std::io::Result<()> {
    let mut reader = BufReader::new(reader);
    let mut buf = Vec::new();
    let (mut id, mut data, mut has_data) = (None::<String>, String::new(), false);
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            return Ok(());
        }
        let line = String::from_utf8_lossy(&buf);
        let line = line.trim_end_matches(['\n', '\r']);
        if line.is_empty() {
            if has_data {
                on_event(id.as_deref(), &data);
            }
            (id, has_data) = (None, false);
            data.clear();
            continue;
        }
        if line.starts_with(':') {
            continue; // a comment: keep-alive
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                if has_data {
                    data.push('\n');
                }
                data.push_str(value);
                has_data = true;
            }
            "id" => id = Some(value.to_owned()),
            _ => {}
        }
    }
}

/// The `(code, message)` of a JSON-RPC error answer; panics on any other answer.
pub fn error_of(response: &Value) -> (i64, String) {
    let e = response.get("error").unwrap_or_else(|| panic!("expected an error, got {response}"));
    (e["code"].as_i64().unwrap(), e["message"].as_str().unwrap().to_owned())
}
