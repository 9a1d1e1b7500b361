//! The host's spans and the trace context they carry in and out.
//!
//! Span names and attributes follow the OpenTelemetry semantic conventions for MCP (a server
//! span `{mcp.method.name} {target}` with `mcp.method.name`, `jsonrpc.request.id`,
//! `gen_ai.tool.name`, `mcp.session.id`, `mcp.protocol.version`, `network.transport`,
//! `error.type`, …), and corral's own attributes under `corral.`. Every span here is a `tracing`
//! span of [`TARGET`], made only when traces are exported ([`super::switch::enabled`]); otherwise each
//! constructor returns a disabled span and costs a branch.
//!
//! Context comes in as W3C `traceparent`/`tracestate`, from `params._meta` (what the SDKs send,
//! in both eras and over stdio) or else the HTTP headers. One that is malformed, too long or
//! repeated is ignored: the request starts a trace of its own, never an error. A task keeps its
//! creating request's context ([`Carrier`], stored with the task), so its runs on any replica
//! are children of that request.

use serde_json::{Map, Value};
use tracing::field::Empty;
use tracing::{Metadata, Span};

pub use super::context::Carrier;

/// The `tracing` target of every span the host makes for its traces.
pub const TARGET: &str = "corral::trace";

/// Whether `metadata` is one of the host's trace spans (or an event inside one of its
/// constructors), which the log lines leave out.
pub fn is_host_span(metadata: &Metadata<'_>) -> bool {
    metadata.target() == TARGET
}

/// The filter of the exporting layer: the host's spans, and the host's own events at `info`
/// and above (a warning inside a call becomes an event of its span).
///
/// Everything here is at `info` or above, which also caps what the `log` records of the
/// dependencies cost: one below it stops at `log`'s own level check.
pub fn only_host_spans() -> tracing_subscriber::filter::Targets {
    tracing_subscriber::filter::Targets::new().with_target(TARGET, tracing::Level::INFO).with_target("corral", tracing::Level::INFO)
}

/// The id of the trace the current span belongs to, when traces are exported and there is one.
pub fn current_trace_id() -> Option<String> {
    if !super::switch::enabled() {
        return None;
    }
    trace_id(&Span::current())
}

/// The id of the trace `span` belongs to, when it is part of an exported trace.
pub fn trace_id(span: &Span) -> Option<String> {
    context(span).map(|context| context.trace_id().to_string())
}

/// The context of `span`, as it travels (what a task keeps to continue its creator's trace).
pub fn carrier(span: &Span) -> Option<Carrier> {
    context(span).map(|context| Carrier::of(&context))
}

fn context(span: &Span) -> Option<opentelemetry::trace::SpanContext> {
    if !super::switch::enabled() || span.is_disabled() {
        return None;
    }
    super::spans::context_of(span).filter(|context| context.is_valid())
}

/// How a request reached the host (`network.transport`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// stdio.
    Pipe,
    /// HTTP.
    Tcp,
}

impl Transport {
    fn as_str(self) -> &'static str {
        match self {
            Transport::Pipe => "pipe",
            Transport::Tcp => "tcp",
        }
    }
}

/// Where a session's requests come from, as their spans say: the transport, and over HTTP the
/// session's id (`mcp.session.id`).
#[derive(Clone, Debug)]
pub struct Inbound {
    /// `network.transport`.
    pub transport: Transport,
    /// The `Mcp-Session-Id` of a 2025-11-25 session over HTTP.
    pub session: Option<String>,
}

impl Inbound {
    /// A session on stdio.
    pub fn pipe() -> Inbound {
        Inbound { transport: Transport::Pipe, session: None }
    }
}

/// What a request's server span says of it when it starts.
pub struct Request<'a> {
    /// `mcp.method.name`.
    pub method: &'a str,
    /// The request's JSON-RPC id, as text.
    pub id: &'a dyn std::fmt::Display,
    /// The request's params (the span's target, the context in `_meta`).
    pub params: &'a Map<String, Value>,
    /// `network.transport`.
    pub transport: Transport,
    /// `mcp.protocol.version`.
    pub protocol_version: &'a str,
    /// The `Mcp-Session-Id` of a 2025-11-25 session over HTTP (never for 2026-07-28 traffic),
    /// exported as its digest (`mcp.session.id`): without authentication the id itself is the
    /// credential that speaks as the session, and a trace backend is read by more people.
    pub session: Option<&'a str>,
    /// `enduser.id`: the principal the request acts for (`token:ci`, `user:ISSUER SUBJECT`,
    /// `local`, `anonymous`).
    pub principal: &'a str,
    /// The context of the HTTP headers, which `_meta`'s overrides.
    pub headers: Option<Carrier>,
}

/// The server span of a request: a child of the caller's context when it sent a valid one.
pub fn request(request: Request<'_>) -> Span {
    if !super::switch::enabled() {
        return Span::none();
    }
    let params = request.params;
    let name = |key: &str| params.get(key).and_then(Value::as_str);
    let (tool, prompt, uri) = match request.method {
        "tools/call" => (name("name"), None, None),
        "prompts/get" => (None, name("name"), None),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => (None, None, name("uri")),
        _ => (None, None, None),
    };
    let span_name = match tool.or(prompt) {
        Some(target) => format!("{} {target}", request.method),
        None => request.method.to_owned(),
    };
    let parent = Carrier::from_meta(params).or(request.headers).map(|parent| parent.to_stored());
    let session = request.session.map(session_digest);
    tracing::info_span!(
        target: TARGET,
        "request",
        otel.name = %span_name,
        otel.kind = "server",
        otel.status_code = Empty,
        otel.status_description = Empty,
        mcp.method.name = request.method,
        jsonrpc.request.id = %request.id,
        gen_ai.tool.name = tool,
        gen_ai.prompt.name = prompt,
        gen_ai.operation.name = tool.map(|_| "execute_tool"),
        mcp.resource.uri = uri,
        mcp.protocol.version = request.protocol_version,
        mcp.session.id = session.as_deref(),
        enduser.id = request.principal,
        network.transport = request.transport.as_str(),
        error.type = Empty,
        rpc.response.status_code = Empty,
        corral.task.id = Empty,
        corral.plugin = Empty,
        corral.digest = Empty,
        corral.contract = Empty,
        corral.fuel_consumed = Empty,
        corral.peak_memory = Empty,
        corral.outcome = Empty,
        otel.parent = parent.as_deref(),
    )
}

/// What a trace says of a session id: `sha256:` and the first 16 hex digits of its SHA-256,
/// enough to follow one session's requests, and nothing to speak as it with.
pub fn session_digest(id: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(id.as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// Records on a request's span how it was answered: a JSON-RPC error (`code`, `message`), or
/// a tool's own error result (`error.type` `tool_error`). Only an internal or server error
/// marks the span as failed, as the conventions say: a client's mistake is not the server's.
pub fn answered(span: &Span, error: Option<(i64, &str)>, tool_error: bool) {
    if span.is_disabled() {
        return;
    }
    match error {
        Some((code, message)) => {
            span.record("error.type", code.to_string());
            span.record("rpc.response.status_code", code.to_string());
            if code == -32603 || (-32099..=-32000).contains(&code) {
                span.record("otel.status_code", "ERROR");
                span.record("otel.status_description", message);
            }
        }
        None if tool_error => {
            span.record("error.type", "tool_error");
        }
        None => {}
    }
}

/// Marks `span` as ended by its client's cancel (no answer was sent).
pub fn cancelled(span: &Span) {
    if !span.is_disabled() {
        span.record("error.type", "cancelled");
    }
}

/// Records on a request's span the task it created.
pub fn created_task(span: &Span, task: &str) {
    if !span.is_disabled() {
        span.record("corral.task.id", task);
    }
}

/// The span of a policy decision on a request (made only when a policy is in force: without
/// one there is nothing to decide).
pub fn authorize(action: &str) -> Span {
    tracing::info_span!(target: TARGET, "authorize", otel.name = "corral.authorize", corral.action = action, corral.decision = Empty)
}

/// Where a guest's run is traced: on a span of its own under a task's run, or, for a plain
/// call, on the request's own span (`current`), which then carries the guest's attributes and
/// events. A plain call's run is its request, less the parse and the answer: one span for both
/// keeps a traced call's cost to one span (its guest's attributes are recorded when the run
/// ends, by [`guest_ended`], in one trip).
pub fn guest(current: Span, in_task: bool, plugin: &str, digest: &str, contract: &str, tool: &str) -> Span {
    if !in_task {
        return current;
    }
    tracing::info_span!(
        target: TARGET,
        "guest",
        otel.name = %format!("corral.guest {tool}"),
        corral.plugin = plugin,
        corral.digest = digest,
        corral.contract = contract,
        gen_ai.tool.name = tool,
        corral.fuel_consumed = Empty,
        corral.peak_memory = Empty,
        corral.outcome = Empty,
        otel.status_code = Empty,
    )
}

/// What a guest's run came to, as its span records it.
pub struct GuestEnded<'a> {
    /// `ok`, `tool-error`, or the failure's kind.
    pub outcome: &'a str,
    /// Fuel the run consumed.
    pub fuel_consumed: u64,
    /// The most linear memory the run had, in bytes.
    pub peak_memory: u64,
    /// Whether the host failed the run (a limit, a trap), which fails the span.
    pub failed: bool,
    /// The plugin's name, digest and contract, for a plain call's run (its request's span has
    /// not recorded them; a task's guest span has).
    pub plugin: Option<(&'a str, &'a str, &'a str)>,
}

/// Records what a guest's run came to on its span.
pub fn guest_ended(span: &Span, ended: GuestEnded<'_>) {
    if span.is_disabled() {
        return;
    }
    // As signed integers: OTLP has no unsigned one, and a u64 would be exported as text.
    let fuel = i64::try_from(ended.fuel_consumed).unwrap_or(i64::MAX);
    let memory = i64::try_from(ended.peak_memory).unwrap_or(i64::MAX);
    let figures: [(&str, &dyn tracing::Value); 3] = [("corral.outcome", &ended.outcome), ("corral.fuel_consumed", &fuel), ("corral.peak_memory", &memory)];
    match ended.plugin {
        Some((plugin, digest, contract)) => {
            let [outcome, fuel, memory] = figures;
            record_all(span, [outcome, fuel, memory, ("corral.plugin", &plugin), ("corral.digest", &digest), ("corral.contract", &contract)]);
        }
        None => record_all(span, figures),
    }
    if ended.failed {
        span.record("otel.status_code", "ERROR");
    }
}

/// Records `fields` of `span` in one trip through the subscriber (each trip looks the span up
/// again in every layer that sees it). A field the span does not have is left out.
fn record_all<const N: usize>(span: &Span, fields: [(&str, &dyn tracing::Value); N]) {
    let Some(metadata) = span.metadata() else { return };
    let set = metadata.fields();
    let found: [Option<tracing::field::Field>; N] = std::array::from_fn(|i| set.field(fields[i].0));
    let Some(any) = found.iter().flatten().next() else { return };
    let values: [(&tracing::field::Field, Option<&dyn tracing::Value>); N] = std::array::from_fn(|i| match &found[i] {
        Some(field) => (field, Some(fields[i].1)),
        // A field of the span without a value, which records nothing.
        None => (any, None),
    });
    span.record_all(&set.value_set(&values));
}

/// The span of waiting for one of a plugin's instance slots (made only when none was free).
pub fn queue(plugin: &str) -> Span {
    tracing::info_span!(target: TARGET, "queue", otel.name = "corral.queue", corral.plugin = plugin)
}

/// The span of a task's admission: its row written, its place in the queue taken.
pub fn task_admit(tool: &str) -> Span {
    tracing::info_span!(target: TARGET, "task.admit", otel.name = "corral.task.admit", gen_ai.tool.name = tool, corral.task.id = Empty)
}

/// The span of one run of a task on `replica`, a child of the request that created it (its
/// stored context), whichever replica runs it and however many times.
pub fn task_run(parent: Option<&Carrier>, task: &str, tool: &str, attempt: u32, queue_wait_ms: i64, replica: &str) -> Span {
    if !super::switch::enabled() {
        return Span::none();
    }
    tracing::info_span!(
        target: TARGET,
        "task.run",
        otel.name = %format!("corral.task.run {tool}"),
        otel.kind = "consumer",
        corral.task.id = task,
        gen_ai.tool.name = tool,
        corral.task.attempt = i64::from(attempt),
        corral.queue_wait_ms = queue_wait_ms,
        corral.replica = replica,
        corral.outcome = Empty,
        otel.parent = parent.map(Carrier::to_stored).as_deref(),
    )
}

/// The span of a task's progress relayed to a client waiting on another replica.
pub fn task_relay(parent: Option<&Carrier>, task: &str, replica: &str) -> Span {
    if !super::switch::enabled() {
        return Span::none();
    }
    tracing::info_span!(
        target: TARGET,
        "task.relay",
        otel.name = "corral.task.relay",
        corral.task.id = task,
        corral.replica = replica,
        otel.parent = parent.map(Carrier::to_stored).as_deref(),
    )
}

/// The span of one write to the task store (`operation`: `insert`, `start`, `finish`, …).
pub fn store(operation: &'static str) -> Span {
    tracing::info_span!(target: TARGET, "store", otel.name = %format!("corral.store {operation}"), db.operation.name = operation)
}

/// An event on the current span: a host call the guest made (`elicit`, `sample`, `ask`,
/// `checkpoint`) or a sandbox denial, named by `what`.
pub fn host_call(name: &'static str, what: &str) {
    tracing::info!(target: TARGET, { corral.host_call = name }, "{what}");
}
