//! Traces against the real binary: an OTLP/HTTP receiver here decodes what corral exports with
//! the official protobuf definitions (`opentelemetry-proto`) and the tests read the span trees of
//! a plain call with a client's `traceparent` (over stdio and HTTP), a cancelled call, a
//! 2026-07-28 call that asked for input twice, a task admitted on one PostgreSQL replica and run
//! on another after the first was killed; the trace id in the JSON log and the audit trail;
//! nothing exported without the variables; a collector that fails or hangs slows no call; and
//! malformed, overlong or repeated contexts start a trace of their own.

mod common;
#[path = "../src/tasks/postgres/testing.rs"]
mod pg_cluster;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::client::{McpProcess, Transport, TIMEOUT};
use common::example_plugins;
use opentelemetry_proto::tonic::collector::trace::v1::{ExportTraceServiceRequest, ExportTraceServiceResponse};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use prost::Message;
use serde_json::{json, Value};

/// The client's context: trace `TRACE`, its span `PARENT`, sampled.
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// How the receiver answers an export.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Answer {
    Ok,
    Unavailable,
    /// Never: the request is held open.
    Hang,
}

/// One span as the receiver decoded it.
#[derive(Clone, Debug)]
struct Span {
    name: String,
    trace: String,
    id: String,
    parent: String,
    kind: i32,
    attributes: HashMap<String, Value>,
    events: Vec<(String, HashMap<String, Value>)>,
    status: i32,
    service: Option<String>,
}

impl Span {
    fn attr(&self, key: &str) -> Option<&Value> {
        self.attributes.get(key)
    }

    fn str(&self, key: &str) -> Option<&str> {
        self.attr(key).and_then(Value::as_str)
    }
}

/// An OTLP/HTTP receiver on 127.0.0.1 (`POST /v1/traces`, protobuf), on a runtime of its own.
struct Collector {
    base: String,
    spans: Arc<Mutex<Vec<Span>>>,
    requests: Arc<Mutex<usize>>,
    /// The `x-tenant` header of each export (`OTEL_EXPORTER_OTLP_HEADERS` in the tests that set it).
    tenants: Arc<Mutex<Vec<Option<String>>>>,
    _runtime: tokio::runtime::Runtime,
}

impl Collector {
    fn start(answer: Answer) -> Collector {
        Collector::on("127.0.0.1:0".parse().unwrap(), answer).expect("a free port")
    }

    fn on(addr: SocketAddr, answer: Answer) -> std::io::Result<Collector> {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let listener = runtime.block_on(tokio::net::TcpListener::bind(addr))?;
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (spans, requests, tenants) = (Arc::new(Mutex::new(Vec::new())), Arc::new(Mutex::new(0)), Arc::new(Mutex::new(Vec::new())));
        let (kept, counted, named) = (spans.clone(), requests.clone(), tenants.clone());
        let receive = move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
            let (kept, counted, named) = (kept.clone(), counted.clone(), named.clone());
            async move {
                *counted.lock().unwrap() += 1;
                named.lock().unwrap().push(headers.get("x-tenant").and_then(|v| v.to_str().ok()).map(str::to_owned));
                match answer {
                    Answer::Hang => std::future::pending::<()>().await,
                    Answer::Unavailable => return (axum::http::StatusCode::SERVICE_UNAVAILABLE, Vec::new()),
                    Answer::Ok => {}
                }
                let request = ExportTraceServiceRequest::decode(body).expect("an OTLP protobuf export");
                kept.lock().unwrap().extend(decode(request));
                (axum::http::StatusCode::OK, ExportTraceServiceResponse::default().encode_to_vec())
            }
        };
        let app = axum::Router::new().route("/v1/traces", axum::routing::post(receive));
        runtime.spawn(async move { axum::serve(listener, app).await });
        Ok(Collector { base, spans, requests, tenants, _runtime: runtime })
    }

    /// An OTLP/gRPC receiver on 127.0.0.1: the official `TraceService`, served by tonic.
    fn grpc() -> Collector {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let receiver = GrpcReceiver { spans: Arc::default(), tenants: Arc::default() };
        let (spans, tenants) = (receiver.spans.clone(), receiver.tenants.clone());
        let service = opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::TraceServiceServer::new(receiver);
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        runtime.spawn(tonic::transport::Server::builder().add_service(service).serve_with_incoming(incoming));
        Collector { base, spans, requests: Arc::default(), tenants, _runtime: runtime }
    }

    /// The variables that point corral at this receiver, exporting every 100 ms.
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![("OTEL_EXPORTER_OTLP_ENDPOINT", self.base.clone()), ("OTEL_BSP_SCHEDULE_DELAY", "100".into())]
    }

    fn spans(&self) -> Vec<Span> {
        self.spans.lock().unwrap().clone()
    }

    /// Waits until `done` holds for the spans received, and returns them.
    fn wait(&self, what: &str, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let spans = self.spans();
            if done(&spans) {
                return spans;
            }
            assert!(Instant::now() < deadline, "{what}: never came; received:\n{spans:#?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

struct GrpcReceiver {
    spans: Arc<Mutex<Vec<Span>>>,
    tenants: Arc<Mutex<Vec<Option<String>>>>,
}

#[tonic::async_trait]
impl opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::TraceService for GrpcReceiver {
    async fn export(&self, request: tonic::Request<ExportTraceServiceRequest>) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        let tenant = request.metadata().get("x-tenant").and_then(|v| v.to_str().ok()).map(str::to_owned);
        self.tenants.lock().unwrap().push(tenant);
        self.spans.lock().unwrap().extend(decode(request.into_inner()));
        Ok(tonic::Response::new(ExportTraceServiceResponse::default()))
    }
}

fn decode(request: ExportTraceServiceRequest) -> Vec<Span> {
    let mut spans = Vec::new();
    for resource in request.resource_spans {
        let service = resource.resource.as_ref().and_then(|r| attributes(&r.attributes).get("service.name").and_then(|v| v.as_str().map(str::to_owned)));
        for scope in resource.scope_spans {
            for span in scope.spans {
                spans.push(Span {
                    name: span.name,
                    trace: hex(&span.trace_id),
                    id: hex(&span.span_id),
                    parent: hex(&span.parent_span_id),
                    kind: span.kind,
                    attributes: attributes(&span.attributes),
                    events: span.events.iter().map(|e| (e.name.clone(), attributes(&e.attributes))).collect(),
                    status: span.status.map(|s| s.code).unwrap_or(0),
                    service: service.clone(),
                });
            }
        }
    }
    spans
}

fn attributes(list: &[opentelemetry_proto::tonic::common::v1::KeyValue]) -> HashMap<String, Value> {
    let value = |v: &Option<opentelemetry_proto::tonic::common::v1::AnyValue>| match v.as_ref().and_then(|v| v.value.clone()) {
        Some(Any::StringValue(s)) => json!(s),
        Some(Any::IntValue(i)) => json!(i),
        Some(Any::BoolValue(b)) => json!(b),
        Some(Any::DoubleValue(d)) => json!(d),
        other => json!(format!("{other:?}")),
    };
    list.iter().map(|kv| (kv.key.clone(), value(&kv.value))).collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// OTLP's span kinds.
const SERVER: i32 = 2;
const CONSUMER: i32 = 5;
/// OTLP's status codes.
const STATUS_ERROR: i32 = 2;

fn named<'a>(spans: &'a [Span], name: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.name == name).collect()
}

fn with_meta(mut params: Value, meta: Value) -> Value {
    params["_meta"] = meta;
    params
}

fn serve(collector: &Collector, transport: Transport, plugins: &std::path::Path, extra: &[&str]) -> McpProcess {
    let env = collector.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut args = vec!["serve", "--plugins", plugins.to_str().unwrap()];
    args.extend_from_slice(extra);
    McpProcess::spawn_env(transport, &args, &env)
}

#[test]
fn a_call_with_a_client_traceparent_is_one_server_span_with_the_conventions_and_its_guest_runs_figures() {
    let collector = Collector::start(Answer::Ok);
    let plugins = example_plugins(&["hash"]);
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.log");
    let mut mcp = serve(&collector, Transport::Stdio, plugins.path(), &["--log-format", "json", "--audit-log", audit.to_str().unwrap()]);
    mcp.initialize();
    let params = with_meta(json!({ "name": "hash_chain", "arguments": { "input": "a", "rounds": 3 } }), json!({ "traceparent": TRACEPARENT }));
    let id = mcp.send_request("tools/call", params);
    let answer = mcp.wait_response(id, TIMEOUT);
    assert!(answer["result"]["structuredContent"]["digest"].is_string(), "{answer}");
    // A call that runs out of fuel logs a warning inside the request: the JSON line names the trace.
    let params = with_meta(json!({ "name": "hash_chain", "arguments": { "input": "a", "rounds": 1_000_000 } }), json!({ "traceparent": TRACEPARENT }));
    let starved = mcp.result("tools/call", params);
    assert_eq!(starved["_meta"]["corral/error"]["kind"], "fuel-exhausted", "{starved}");

    let spans = collector.wait("two calls", |s| named(s, "tools/call hash_chain").len() == 2);
    let calls = named(&spans, "tools/call hash_chain");
    let call = calls.iter().find(|s| s.str("jsonrpc.request.id") == Some(&id.to_string())).expect("the first call's span");
    assert_eq!((call.trace.as_str(), call.parent.as_str(), call.kind), (TRACE, PARENT, SERVER), "a child of the client's span: {call:#?}");
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "hash_chain"),
        ("gen_ai.operation.name", "execute_tool"),
        ("network.transport", "pipe"),
        ("mcp.protocol.version", "2025-11-25"),
    ] {
        assert_eq!(call.str(key), Some(value), "{key}: {call:#?}");
    }
    assert_eq!(call.service.as_deref(), Some("corral"), "{call:#?}");
    assert!(call.attr("error.type").is_none(), "{call:#?}");
    // A plain call's guest run is its span: one span per traced call.
    assert!(spans.iter().all(|s| !s.name.starts_with("corral.guest")), "{spans:#?}");
    let guest = call;
    assert_eq!((guest.str("corral.plugin"), guest.str("corral.outcome")), (Some("hash"), Some("ok")), "{guest:#?}");
    assert!(guest.str("corral.digest").is_some_and(|d| d.starts_with("sha256:")) && guest.str("corral.contract").is_some(), "{guest:#?}");
    assert!(guest.attr("corral.fuel_consumed").and_then(Value::as_i64).is_some_and(|f| f > 0), "{guest:#?}");
    assert!(guest.attr("corral.peak_memory").and_then(Value::as_i64).is_some_and(|m| m > 0), "{guest:#?}");
    let starved = calls.iter().find(|s| s.str("corral.outcome") == Some("fuel-exhausted")).expect("the starved run");
    assert_eq!((starved.status, starved.str("error.type")), (STATUS_ERROR, Some("tool_error")), "{starved:#?}");

    // One id leads from the log line and the audit trail to the trace.
    mcp.close_stdin();
    assert!(mcp.wait_exit(TIMEOUT).success());
    let log = mcp.stderr_text();
    let warning = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["level"] == "WARN" && l["fields"]["kind"] == "fuel-exhausted")
        .unwrap_or_else(|| panic!("no JSON warning for the starved call:\n{log}"));
    assert_eq!(warning["trace_id"], TRACE, "{warning}");
    let records: Vec<Value> = std::fs::read_to_string(&audit).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(records.len(), 2, "{records:#?}");
    assert!(records.iter().all(|r| r["trace_id"] == TRACE), "{records:#?}");
}

#[test]
fn over_http_the_headers_carry_the_context_and_the_session_is_named() {
    let collector = Collector::start(Answer::Ok);
    let plugins = example_plugins(&["hash"]);
    let mut mcp = serve(&collector, Transport::Http, plugins.path(), &[]);
    mcp.initialize();
    let session = mcp.session_id().unwrap().to_owned();
    let url = mcp.http_url().unwrap().to_owned();
    let agent = common::modern_http::agent();
    let body = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": { "name": "hash_chain", "arguments": { "input": "h", "rounds": 1 } } });
    let request = ureq::http::Request::builder()
        .method("POST")
        .uri(&url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-11-25")
        .header("traceparent", TRACEPARENT)
        .body(body.to_string())
        .unwrap();
    let response = agent.run(request).unwrap();
    assert_eq!(response.status().as_u16(), 200);

    let spans = collector.wait("the call's span", |s| !named(s, "tools/call hash_chain").is_empty());
    let call = named(&spans, "tools/call hash_chain")[0];
    assert_eq!((call.trace.as_str(), call.parent.as_str()), (TRACE, PARENT), "{call:#?}");
    // The session is named by its digest, never by the id, which speaks as the session.
    assert_eq!(
        (call.str("network.transport"), call.str("mcp.session.id")),
        (Some("tcp"), Some(corral::telemetry::trace::session_digest(&session).as_str())),
        "{call:#?}"
    );
    assert!(call.str("mcp.session.id").unwrap().starts_with("sha256:") && !format!("{call:?}").contains(&session), "{call:#?}");
    // Without authentication the principal is the session: named by the same digest.
    assert_eq!(call.str("enduser.id").map(str::to_owned), Some(format!("session:{}", corral::telemetry::trace::session_digest(&session))), "{call:#?}");
    let initialize = spans.iter().find(|s| s.name == "initialize").expect("initialize has a span too");
    assert_ne!(initialize.trace, TRACE, "initialize sent no context: a trace of its own");
}

#[test]
fn a_cancelled_call_ends_its_span_as_cancelled() {
    let collector = Collector::start(Answer::Ok);
    let plugins = example_plugins(&["ticker"]);
    let mut mcp = serve(&collector, Transport::Stdio, plugins.path(), &[]);
    mcp.initialize();
    let meta = json!({ "traceparent": TRACEPARENT, "progressToken": "p" });
    let id = mcp.send_request("tools/call", with_meta(json!({ "name": "tick", "arguments": { "count": 10_000, "interval_ms": 10 } }), meta));
    // Cancelled once its guest runs (it has reported progress), however loaded the machine.
    mcp.wait_notification("notifications/progress", TIMEOUT);
    mcp.notify("notifications/cancelled", json!({ "requestId": id, "reason": "enough" }));
    mcp.assert_no_response(id, Duration::from_millis(500));
    let spans = collector.wait("the cancelled call", |s| !named(s, "tools/call tick").is_empty());
    let call = named(&spans, "tools/call tick")[0];
    assert_eq!((call.trace.as_str(), call.str("error.type")), (TRACE, Some("cancelled")), "{call:#?}");
    assert_eq!((call.str("corral.plugin"), call.str("corral.outcome")), (Some("ticker"), Some("cancelled")), "its guest stopped: {call:#?}");
}

#[test]
fn a_2026_07_28_call_that_asked_twice_is_three_requests_in_the_clients_trace_with_its_questions_as_events() {
    let collector = Collector::start(Answer::Ok);
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(common::test_guests().join("mrtr.wasm"), dir.path().join("mrtr.wasm")).unwrap();
    let secret = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    let mut mcp = serve(&collector, Transport::Stdio, dir.path(), &["--state-secret", secret]);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": { "elicitation": {} },
        "traceparent": TRACEPARENT,
    });
    let params = json!({ "name": "test_input_required_result_multi_round", "arguments": {}, "_meta": meta });
    let accept = |content: Value| json!({ "action": "accept", "content": content });
    let round1 = mcp.result("tools/call", params.clone());
    assert_eq!(round1["resultType"], "input_required", "{round1}");
    let mut retry = params.clone();
    retry["inputResponses"] = json!({ "step1": accept(json!({ "name": "Ada" })) });
    retry["requestState"] = round1["requestState"].clone();
    let round2 = mcp.result("tools/call", retry.clone());
    assert_eq!(round2["resultType"], "input_required", "{round2}");
    retry["inputResponses"] = json!({ "step2": accept(json!({ "color": "blue" })) });
    retry["requestState"] = round2["requestState"].clone();
    let done = mcp.result("tools/call", retry);
    assert_eq!(done["content"][0]["text"], "Ada likes blue", "{done}");

    let name = "tools/call test_input_required_result_multi_round";
    let spans = collector.wait("three rounds", |s| named(s, name).len() == 3);
    for call in named(&spans, name) {
        assert_eq!((call.trace.as_str(), call.parent.as_str()), (TRACE, PARENT), "{call:#?}");
        assert_eq!(call.str("mcp.protocol.version"), Some("2026-07-28"), "{call:#?}");
        assert!(call.attr("mcp.session.id").is_none(), "no session in this era: {call:#?}");
    }
    let asked: usize = named(&spans, name)
        .iter()
        .map(|guest| guest.events.iter().filter(|(_, attributes)| attributes.get("corral.host_call") == Some(&json!("ask"))).count())
        .sum();
    assert!(asked >= 2, "each round that asked has an `ask` event: {spans:#?}");
    assert!(spans.iter().all(|s| s.name != "corral.authorize"), "no policy, no decision to trace: {spans:#?}");
}

#[test]
fn on_postgres_a_task_admitted_on_one_replica_and_run_on_another_after_a_kill_stays_in_the_creators_trace() {
    let Some(db) = pg_cluster::database_or_skip() else { return };
    let collector = Collector::start(Answer::Ok);
    let plugins = example_plugins(&["ticker"]);
    let shared = ["--db", db.as_str(), "--host-expiry", "1s"];
    let mut first = serve(&collector, Transport::Stdio, plugins.path(), &shared);
    first.initialize();
    let params = with_meta(json!({ "name": "tick", "arguments": { "count": 100, "interval_ms": 50 }, "task": {} }), json!({ "traceparent": TRACEPARENT }));
    let task = first.result("tools/call", params)["task"]["taskId"].as_str().unwrap().to_owned();
    // The creating request's span is exported, and the task has started here, before the kill.
    let spans = collector.wait("the creating request", |s| !named(s, "tools/call tick").is_empty() && !named(s, "corral.store insert").is_empty());
    let created = named(&spans, "tools/call tick")[0].clone();
    assert_eq!((created.trace.as_str(), created.str("corral.task.id")), (TRACE, Some(task.as_str())), "{created:#?}");
    let admitted = named(&spans, "corral.task.admit").into_iter().find(|s| s.parent == created.id).expect("the admission under the request");
    assert!(spans.iter().any(|s| s.name == "corral.store insert" && s.parent == admitted.id), "the insert under the admission: {spans:#?}");
    // Killed once a worker here has started it (its status shows the first tick), so the other
    // replica runs it again as its second attempt.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let got = first.request("tasks/get", json!({ "taskId": task }));
        if got["result"]["statusMessage"].as_str().is_some_and(|m| m.starts_with("tick")) {
            break;
        }
        assert!(Instant::now() < deadline, "the task never started here: {got}");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(first); // SIGKILL

    let mut second = serve(&collector, Transport::Stdio, plugins.path(), &shared);
    second.initialize();
    let deadline = Instant::now() + TIMEOUT;
    loop {
        // Any answer but `completed` (an error included, while the replica recovers) is "not yet".
        let got = second.request("tasks/get", json!({ "taskId": task }));
        if got["result"]["status"] == "completed" {
            break;
        }
        assert!(Instant::now() < deadline, "the task never completed on the second replica: {got}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let rerun = |s: &Span| s.name == "corral.task.run tick" && s.attr("corral.task.attempt") == Some(&json!(2));
    let spans = collector.wait("the second replica's run", |s| s.iter().any(rerun) && !named(s, "corral.store finish").is_empty());
    let run = spans.iter().find(|s| rerun(s)).unwrap();
    assert_eq!((run.trace.as_str(), run.parent.as_str(), run.kind), (TRACE, created.id.as_str(), CONSUMER), "a child of the creating request: {run:#?}");
    assert_eq!((run.str("corral.task.id"), run.str("corral.outcome")), (Some(task.as_str()), Some("result")), "{run:#?}");
    if let Some(before) = spans.iter().find(|s| s.name == "corral.task.run tick" && s.attr("corral.task.attempt") == Some(&json!(1))) {
        assert_ne!(before.str("corral.replica"), run.str("corral.replica"), "another replica ran it again");
    }
    assert!(spans.iter().any(|s| s.name == "corral.guest tick" && s.parent == run.id), "its guest under the run: {spans:#?}");
    assert!(spans.iter().any(|s| s.name == "corral.store finish" && s.parent == run.id && s.trace == TRACE), "its end's write under the run: {spans:#?}");
}

#[test]
fn over_grpc_and_over_http_with_the_headers_variable_the_spans_arrive_with_their_headers() {
    let plugins = example_plugins(&["hash"]);
    for (protocol, collector) in [("grpc", Collector::grpc()), ("http/protobuf", Collector::start(Answer::Ok))] {
        let mut env = collector.env();
        env.push(("OTEL_EXPORTER_OTLP_PROTOCOL", protocol.into()));
        // Values are percent-decoded, as the specification says.
        env.push(("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=team%20a, x-other=1".into()));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut mcp = McpProcess::spawn_env(Transport::Stdio, &["serve", "--plugins", plugins.path().to_str().unwrap()], &env);
        mcp.initialize();
        let params = with_meta(json!({ "name": "hash_chain", "arguments": { "input": "a", "rounds": 1 } }), json!({ "traceparent": TRACEPARENT }));
        assert!(mcp.result("tools/call", params)["structuredContent"]["digest"].is_string());
        let spans = collector.wait(protocol, |spans| !named(spans, "tools/call hash_chain").is_empty());
        let call = named(&spans, "tools/call hash_chain")[0];
        assert_eq!((call.trace.as_str(), call.parent.as_str(), call.kind), (TRACE, PARENT, SERVER), "{protocol}: {call:#?}");
        assert_eq!(call.str("gen_ai.tool.name"), Some("hash_chain"), "{protocol}: {call:#?}");
        let tenants = collector.tenants.lock().unwrap().clone();
        assert!(!tenants.is_empty() && tenants.iter().all(|t| t.as_deref() == Some("team a")), "{protocol}: {tenants:?}");
    }
}

#[test]
fn without_the_variables_nothing_is_exported_even_to_the_default_endpoint() {
    // The SDK's default endpoint is localhost:4318: listen there if it is free, so an export
    // that ignored the missing variables would be seen.
    let default = Collector::on("127.0.0.1:4318".parse().unwrap(), Answer::Ok).ok();
    let plugins = example_plugins(&["hash"]);
    let mut mcp = McpProcess::spawn_env(Transport::Http, &["serve", "--plugins", plugins.path().to_str().unwrap()], &[("OTEL_SERVICE_NAME", "corral-test")]);
    mcp.initialize();
    let params = with_meta(json!({ "name": "hash_chain", "arguments": { "input": "a", "rounds": 1 } }), json!({ "traceparent": TRACEPARENT }));
    assert!(mcp.result("tools/call", params)["structuredContent"]["digest"].is_string());
    let metrics_url = mcp.http_url().unwrap().replace("/mcp", "/metrics");
    let metrics = ureq::get(&metrics_url).call().unwrap().into_body().read_to_string().unwrap();
    assert!(metrics.contains("corral_trace_spans_exported_total 0"), "{metrics}");
    assert!(!mcp.stderr_text().contains("exporting traces"), "{}", mcp.stderr_text());
    if let Some(default) = default {
        // An exporter sends what it holds at the latest as the host exits (the exit waits for the
        // last export): once the host is gone, nothing more can come.
        mcp.close_stdin();
        mcp.wait_exit(TIMEOUT);
        assert_eq!(*default.requests.lock().unwrap(), 0, "nothing reached the default endpoint");
    }
}

#[test]
fn a_collector_that_fails_or_hangs_slows_no_call_and_the_lost_spans_are_counted() {
    for answer in [Answer::Unavailable, Answer::Hang] {
        let collector = Collector::start(answer);
        let plugins = example_plugins(&["hash"]);
        let mut env = collector.env();
        env.push(("OTEL_BSP_MAX_QUEUE_SIZE", "16".into()));
        env.push(("OTEL_EXPORTER_OTLP_TIMEOUT", "600000".into()));
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut mcp = McpProcess::spawn_env(Transport::Http, &["serve", "--plugins", plugins.path().to_str().unwrap()], &env);
        mcp.initialize();
        // Every call is answered while the exporter is stuck or failing: none waits for it.
        for i in 0..200 {
            let result = mcp.call_tool("hash_chain", json!({ "input": format!("n{i}"), "rounds": 1 }));
            assert!(result["structuredContent"]["digest"].is_string(), "call {i}: {result}");
        }
        let metrics_url = mcp.http_url().unwrap().replace("/mcp", "/metrics");
        let deadline = Instant::now() + TIMEOUT;
        loop {
            let metrics = ureq::get(&metrics_url).call().unwrap().into_body().read_to_string().unwrap();
            let dropped = metrics.lines().find_map(|l| l.strip_prefix("corral_trace_spans_dropped_total ")).and_then(|n| n.trim().parse::<u64>().ok());
            if dropped.is_some_and(|n| n > 0) {
                break;
            }
            assert!(Instant::now() < deadline, "no dropped spans counted:\n{metrics}");
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(*collector.requests.lock().unwrap() > 0, "the exporter did try");
    }
}

#[test]
fn a_malformed_overlong_or_repeated_context_starts_a_trace_of_its_own() {
    let collector = Collector::start(Answer::Ok);
    let plugins = example_plugins(&["hash"]);
    let mut mcp = serve(&collector, Transport::Http, plugins.path(), &[]);
    let url = mcp.http_url().unwrap().to_owned();
    mcp.initialize();
    let agent = common::modern_http::agent();
    let post = |id: u64, input: &str, traceparents: &[&str], meta: Value| {
        let mut params = json!({ "name": "hash_chain", "arguments": { "input": input, "rounds": 1 } });
        params["_meta"] = meta;
        params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
        params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
        let mut request = ureq::http::Request::builder()
            .method("POST")
            .uri(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "hash_chain");
        for traceparent in traceparents {
            request = request.header("traceparent", *traceparent);
        }
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }).to_string();
        let response = agent.run(request.body(body).unwrap()).unwrap();
        let status = response.status().as_u16();
        let text = response.into_body().read_to_string().unwrap();
        assert_eq!(status, 200, "never an error: {text}");
        assert!(text.contains("digest"), "{text}");
    };
    let other = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    post(1, "repeated", &[TRACEPARENT, other], json!({}));
    post(2, "malformed", &["00-not-a-trace-01"], json!({}));
    post(3, "overlong-meta", &[], json!({ "traceparent": format!("{TRACEPARENT}-{}", "a".repeat(4096)) }));
    post(4, "wrong-type-meta", &[], json!({ "traceparent": 42 }));
    post(5, "zero-trace", &["00-00000000000000000000000000000000-00f067aa0ba902b7-01"], json!({}));

    let spans = collector.wait("five calls", |s| named(s, "tools/call hash_chain").len() == 5);
    for call in named(&spans, "tools/call hash_chain") {
        assert!(call.parent.is_empty(), "a root span: {call:#?}");
        assert!(call.trace != TRACE && call.trace != "0af7651916cd43dd8448eb211c80319c" && call.trace.len() == 32, "a trace of its own: {call:#?}");
    }
}

#[test]
fn under_a_policy_the_decision_is_a_span_of_the_request_naming_its_outcome() {
    let collector = Collector::start(Answer::Ok);
    let plugins = example_plugins(&["hash"]);
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, "[[allow]]\nwho = { local = true }\ntools = \"nothing\"\n").unwrap();
    let mut mcp = serve(&collector, Transport::Stdio, plugins.path(), &["--policy", policy.to_str().unwrap()]);
    mcp.initialize();
    let params = with_meta(json!({ "name": "hash_chain", "arguments": { "input": "a", "rounds": 1 } }), json!({ "traceparent": TRACEPARENT }));
    let denied = mcp.request("tools/call", params);
    let code = denied["error"]["code"].as_i64().unwrap_or_else(|| panic!("refused: {denied}"));

    let spans =
        collector.wait("the refused call and its decision", |s| !named(s, "tools/call hash_chain").is_empty() && !named(s, "corral.authorize").is_empty());
    let call = named(&spans, "tools/call hash_chain")[0];
    assert_eq!((call.trace.as_str(), call.str("rpc.response.status_code")), (TRACE, Some(code.to_string().as_str())), "{call:#?}");
    let decision = named(&spans, "corral.authorize")[0];
    assert_eq!(
        (decision.parent.as_str(), decision.str("corral.action"), decision.str("corral.decision")),
        (call.id.as_str(), Some("call-tool"), Some("denied")),
        "{decision:#?}"
    );
}

#[test]
fn a_protocol_corral_cannot_export_stops_the_start_naming_the_variable() {
    let plugins = example_plugins(&["hash"]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["serve", "--plugins", plugins.path().to_str().unwrap()])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL=http/json: corral exports traces over `http/protobuf` or `grpc`"), "{stderr}");
}
