//! What the HTTP benchmarks share: a `corral serve --http` child that is killed on drop, and one
//! Streamable HTTP session on a keep-alive connection.
// Each bench uses the part it needs.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread;

use serde_json::{json, Value};

/// The example plugins, which must have been built.
pub fn example_dist() -> PathBuf {
    let dist = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("plugins/dist");
    assert!(dist.join("ticker.wasm").exists(), "build the example plugins first: scripts/build-plugins.sh");
    dist
}

/// The build under test: `CORRAL_BIN`, or the release binary of this tree.
pub fn corral_bin() -> PathBuf {
    std::env::var("CORRAL_BIN").map(PathBuf::from).unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/release/corral"))
}

/// A running `corral serve --http 127.0.0.1:0 …`, with whatever it must outlive (its database).
pub struct HttpHost {
    child: Child,
    /// The `/mcp` URL the host logged once it was listening.
    pub url: String,
    _keep: Option<tempfile::TempDir>,
}

impl HttpHost {
    /// Spawns `command` and waits for the address it serves on.
    pub fn spawn(mut command: Command, keep: Option<tempfile::TempDir>) -> HttpHost {
        let program = command.get_program().to_string_lossy().into_owned();
        let mut child = command
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let url = loop {
            line.clear();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "{program} exited before serving HTTP");
            if let Some(at) = line.find("serving MCP over HTTP at ") {
                break line[at + "serving MCP over HTTP at ".len()..].split_whitespace().next().unwrap().to_owned();
            }
        };
        // Keep draining the log so the host never blocks on a full pipe.
        thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        HttpHost { child, url, _keep: keep }
    }
}

impl HttpHost {
    /// The host's process id (for its CPU time in `/proc`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILLs the host, as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The host's `/metrics` text, presenting `token` (as bearer) when given.
    pub fn metrics(&self, token: Option<&str>) -> String {
        let url = format!("{}/metrics", self.url.trim_end_matches("/mcp"));
        let agent = ureq::Agent::config_builder().proxy(None).build().new_agent();
        let mut request = agent.get(&url);
        if let Some(token) = token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let mut response = request.call().expect("GET /metrics");
        response.body_mut().read_to_string().unwrap()
    }
}

impl Drop for HttpHost {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits (up to a minute) until the host at `url` lists `tool`: plugins load in the background,
/// so a host answers before its tools are there.
pub fn wait_for_tool(url: &str, token: Option<&str>, tool: &str) {
    let mut client = Client::connect_as(url, token);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !client.request("tools/list", json!({}))["result"]["tools"].as_array().is_some_and(|tools| tools.iter().any(|t| t["name"] == tool)) {
        assert!(std::time::Instant::now() < deadline, "{url} never listed `{tool}`");
        thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// One initialized 2025-11-25 Streamable HTTP session.
pub struct Client {
    agent: ureq::Agent,
    url: String,
    session: String,
    next_id: u64,
    /// `Authorization: Bearer …` on every request, when the host runs with auth.
    bearer: Option<String>,
}

impl Client {
    /// Initializes a session at `url`.
    pub fn connect(url: &str) -> Client {
        Client::connect_as(url, None)
    }

    /// Initializes a session at `url`, presenting `token` (as bearer) when given.
    pub fn connect_as(url: &str, token: Option<&str>) -> Client {
        let config = ureq::Agent::config_builder().http_status_as_error(false).proxy(None).build();
        let agent = ureq::Agent::new_with_config(config);
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}});
        let mut request = agent.post(url).header("Accept", "application/json, text/event-stream").header("Content-Type", "application/json");
        if let Some(token) = token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let response = request.send(init.to_string()).expect("initialize");
        let session = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).expect("a session id").to_owned();
        let mut client = Client { agent, url: url.to_owned(), session, next_id: 1, bearer: token.map(str::to_owned) };
        client.post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        client
    }

    /// POSTs `message` and returns the JSON-RPC answer (`None` for a notification).
    pub fn post(&mut self, message: &Value) -> Option<Value> {
        let mut request = self
            .agent
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .header("Mcp-Session-Id", &self.session)
            .header("MCP-Protocol-Version", "2025-11-25");
        if let Some(token) = &self.bearer {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let mut response = request.send(message.to_string()).expect("POST");
        let sse = response.headers().get("content-type").and_then(|v| v.to_str().ok()).is_some_and(|t| t.starts_with("text/event-stream"));
        let mut body = String::new();
        response.body_mut().as_reader().read_to_string(&mut body).unwrap();
        if body.trim().is_empty() {
            return None;
        }
        let text = if sse { body.lines().filter_map(|l| l.strip_prefix("data:")).next_back().expect("an SSE data line").trim().to_owned() } else { body };
        Some(serde_json::from_str(&text).expect("a JSON answer"))
    }

    /// Sends a request and returns its answer, an error included.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).expect("an answer")
    }

    /// Sends a request that must succeed.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        let answer = self.call(method, params);
        assert!(answer.get("error").is_none(), "{method} failed: {answer}");
        answer
    }
}
