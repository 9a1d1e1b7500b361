//! What every fuzz target runs, shared with `tests/fuzz_corpus.rs`, which replays the committed
//! corpora through the same functions in a plain `cargo test`.
//!
//! Each entry point asserts the invariants of its parser: no panic, and for a session, every
//! request answered exactly once, notifications never, error codes from the JSON-RPC set, every
//! message valid JSON.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use corral::config::Limits;
use corral::mcp::jsonrpc::{self, Incoming};
use corral::principal::{Owner, Principal, Wire};
use corral::registry::{load_dir, LoadSettings, Registry};
use corral::runtime::{EngineSettings, Runtime, RuntimeSettings};
use corral::server::{Host, Metrics, Outlet, ServerOptions, Session, ToolRunner};
use corral::tasks::{Durability, Engine, Runners, SqliteStore, TaskSettings};
use corral::transport::http::{serve_on, ConnectionSettings, HttpSettings, StreamSettings};
use corral::uri::UriTemplate;
use serde_json::Value;

/// The error codes corral may answer with: JSON-RPC's own, MCP's and corral's server range.
fn known_code(code: i64) -> bool {
    matches!(code, -32700 | -32600 | -32601 | -32602 | -32603) || (-32099..=-32000).contains(&code)
}

/// `jsonrpc::parse` over any text: a message or a refusal, never a panic; a refusal is
/// answered only when it is not a notification, with a known code.
pub fn jsonrpc_parse(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Err(rejected) = jsonrpc::parse(text) {
        assert!(known_code(rejected.error.code.into()), "code {} for {text:?}", rejected.error.code);
        let answer = jsonrpc::error_message(rejected.id.as_ref(), &rejected.error);
        serde_json::from_str::<Value>(answer.text()).expect("an answer is JSON");
    }
}

/// The URI template parser and matcher over any text.
pub fn uri_template(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (template, uri) = text.split_once('\n').unwrap_or((text, text));
    if let Ok(parsed) = UriTemplate::parse(template) {
        let _ = parsed.matches(uri);
        let _ = parsed.prefix();
        let _ = parsed.overlaps(&parsed);
    }
    let _ = corral::uri::check_uri(uri);
}

/// A plugin manifest (TOML) over any text: a manifest or an error naming the file.
pub fn manifest(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let dir = tempfile::tempdir().expect("a temporary directory");
    let wasm = dir.path().join("p.wasm");
    std::fs::write(corral::config::manifest_path(&wasm), text).expect("writing the manifest");
    if let Err(e) = corral::config::plugin_manifest(&wasm, &Limits::default(), 1 << 30, &[]) {
        assert!(e.to_string().contains("p.toml"), "the error names the file: {e}");
    }
}

/// One host and runtime for every session input: building them is the slow part.
fn host() -> &'static (tokio::runtime::Runtime, Arc<Host>) {
    static HOST: OnceLock<(tokio::runtime::Runtime, Arc<Host>)> = OnceLock::new();
    HOST.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a tokio runtime");
        let host = rt.block_on(async {
            let dir = tempfile::tempdir().expect("a plugin directory");
            let memory_ceiling = 64 << 20;
            let settings =
                RuntimeSettings { engine: EngineSettings { memory_ceiling, max_instances: 4, ..EngineSettings::default() }, ..RuntimeSettings::default() };
            let runtime = Runtime::new(settings).expect("a runtime");
            let load = LoadSettings { defaults: Limits::default(), memory_ceiling, protected: Vec::new() };
            let catalog = load_dir(dir.path(), &runtime, &load).await.expect("an empty plugin directory loads");
            let (registry, runtime) = (Arc::new(Registry::new(catalog)), Arc::new(runtime));
            let memory = Path::new(":memory:");
            let store = Arc::new(SqliteStore::open(memory, Durability::Process).expect("an in-memory store"));
            let metrics = Arc::new(Metrics::default());
            let runner = ToolRunner::new(registry.clone(), runtime.clone(), metrics.clone());
            let runners = Runners::register(memory).expect("the runner");
            let engine =
                Engine::start(store, runners, TaskSettings::default(), Arc::new(runner.clone()), runtime.waker(), tokio_util::sync::CancellationToken::new())
                    .await
                    .expect("the task engine");
            Arc::new(Host::new(registry, runtime, engine, ServerOptions::default(), metrics, runner))
        });
        (rt, host)
    })
}

/// One HTTP server for every HTTP input, on a loopback port, with short timeouts so an
/// incomplete request cannot hold the run.
fn http_server() -> std::net::SocketAddr {
    static ADDR: OnceLock<std::net::SocketAddr> = OnceLock::new();
    *ADDR.get_or_init(|| {
        let (rt, host) = host();
        let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("a loopback port");
        let addr = listener.local_addr().unwrap();
        let connections = ConnectionSettings {
            header_timeout: std::time::Duration::from_secs(1),
            body_timeout: std::time::Duration::from_secs(1),
            ..ConnectionSettings::default()
        };
        let settings = HttpSettings {
            addr,
            allowed_hosts: Vec::new(),
            allowed_origins: Vec::new(),
            tokens: Default::default(),
            metrics_tokens: Default::default(),
            max_body: 1 << 20,
            session_idle: std::time::Duration::from_secs(60),
            event_buffer: 16,
            max_sessions: 64,
            connections,
            streams: StreamSettings::default(),
            oauth: None,
        };
        rt.spawn(serve_on(host.clone(), listener, settings, std::future::pending()));
        addr
    })
}

/// Raw bytes as one HTTP/1.1 exchange with the real server: it answers with an HTTP status
/// line or closes the connection, never hangs or dies, and still serves `/healthz` after.
pub fn http_request(data: &[u8]) {
    use std::io::{Read, Write};
    let addr = http_server();
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    let _ = stream.write_all(data);
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let mut answer = Vec::new();
    match stream.read_to_end(&mut answer) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("the server neither answered nor closed: {e}"),
    }
    // An HTTP/1.0 request is answered in HTTP/1.0.
    let status_line = answer.starts_with(b"HTTP/1.1 ") || answer.starts_with(b"HTTP/1.0 ");
    assert!(answer.is_empty() || status_line, "not an HTTP answer: {:?}", String::from_utf8_lossy(&answer));
    let mut probe = std::net::TcpStream::connect(addr).expect("the server still accepts");
    probe.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
    probe.write_all(b"GET /healthz HTTP/1.1\r\nhost: localhost\r\nconnection: close\r\n\r\n").unwrap();
    let mut health = Vec::new();
    probe.read_to_end(&mut health).expect("the health check answers");
    assert!(health.starts_with(b"HTTP/1.1 200"), "the server still serves: {:?}", String::from_utf8_lossy(&health));
}

/// Collects what a session sends, as the text a client would read.
#[derive(Default)]
struct Collect(Mutex<Vec<String>>);

impl Outlet for Collect {
    fn send(&self, message: jsonrpc::Outgoing) {
        self.0.lock().unwrap().push(message.into_text());
    }
}

/// The text of a message's `id`, as sent. Ids are compared as text: parsing a fractional id back
/// into a float may move it by one unit in the last place, and a client matches the text it sent.
fn sent_id(text: &str) -> String {
    let fields: HashMap<String, Box<serde_json::value::RawValue>> = serde_json::from_str(text).expect("every message is an object");
    fields.get("id").expect("the message has an id").get().to_owned()
}

/// A session fed the input's lines, one message each; then the invariants on what came back.
pub fn session(data: &[u8]) {
    let (rt, host) = host();
    let out = Arc::new(Collect::default());
    let mut expected: HashMap<String, usize> = HashMap::new();
    let mut unidentified = 0usize;
    // A call the client cancels gets no answer (MCP): its id may be answered once or not at all.
    let mut cancelled: Vec<String> = Vec::new();
    rt.block_on(async {
        let outlet: Arc<dyn Outlet> = out.clone();
        let session = Session::new(host.clone(), outlet.clone(), Owner::new(Principal::Local, Wire::Sessions), corral::telemetry::trace::Inbound::pipe());
        for line in data.split(|b| *b == b'\n') {
            let Ok(text) = std::str::from_utf8(line) else { continue };
            if text.trim_matches([' ', '\t', '\r']).is_empty() {
                continue;
            }
            let message = jsonrpc::parse(text);
            match &message {
                Ok(Incoming::Request { id, .. }) => *expected.entry(serde_json::to_string(id).unwrap()).or_default() += 1,
                Err(rejected) if rejected.answer => match &rejected.id {
                    Some(id) => *expected.entry(serde_json::to_string(id).unwrap()).or_default() += 1,
                    None => unidentified += 1,
                },
                Ok(Incoming::Notification { params, .. }) => cancelled.extend(params.get("requestId").map(Value::to_string)),
                _ => {}
            }
            session.handle(message, &outlet);
        }
        session.finish(std::time::Duration::from_secs(5), std::time::Duration::from_secs(5)).await;
        session.cancel_all();
    });
    let messages = out.0.lock().unwrap().clone();
    let mut answered: HashMap<String, usize> = HashMap::new();
    let mut null_answers = 0usize;
    for text in &messages {
        let m: Value = serde_json::from_str(text).expect("every message is JSON");
        if m.get("method").is_some() {
            continue; // a notification or a request of the server's
        }
        if let Some(code) = m.pointer("/error/code") {
            assert!(code.as_i64().is_some_and(known_code), "unknown code in {m}");
        }
        match m.get("id") {
            Some(Value::Null) => null_answers += 1,
            Some(_) => *answered.entry(sent_id(text)).or_default() += 1,
            None => panic!("an answer without an id: {m}"),
        }
    }
    for id in &cancelled {
        if let (Some(sent), Some(got)) = (expected.remove(id), answered.remove(id)) {
            assert!(got <= sent, "a cancelled id is answered at most as often as it was sent: {messages:?}");
        }
        answered.remove(id);
    }
    // A request whose id repeats one in flight is refused under that id: each is answered once.
    assert_eq!(answered, expected, "every request is answered exactly once: {messages:?}");
    assert_eq!(null_answers, unidentified, "refusals without an id: {messages:?}");
}
