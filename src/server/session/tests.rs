//! A [`Session`] in process: messages in through [`Session::handle`], answers collected from
//! its outlet. The black-box suites drive the same paths through the binary; these reach the
//! lifecycle, dispatch and cancellation without a child process.

use std::sync::Arc;

use serde_json::{json, Value};

use super::Session;
use crate::mcp::jsonrpc::{self, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND};
use crate::mcp::{Incoming, Rejected};
use crate::principal::{Owner, Principal, Wire};
use crate::server::testing::fixture::{Fixture, TaskSupport, ToolDef};
use crate::server::testing::{self, Collect, PATIENCE};
use crate::server::{Outlet, ServerOptions};

/// A guest that computes until it is stopped.
const SPIN: &str = "(loop $l (br $l)) unreachable";

struct Client {
    session: Session,
    out: Arc<Collect>,
    reply: Arc<dyn Outlet>,
}

impl Client {
    /// A session on a host whose one plugin has the tools `echo`, `spin` and `zeta`.
    async fn new(page_size: usize) -> Client {
        let plugin = Fixture::new()
            .tool(ToolDef::new("echo").task_support(TaskSupport::Optional))
            .tool(ToolDef::new("spin").body(SPIN))
            .tool(ToolDef::new("zeta"))
            .build();
        let host = testing::host(&[("fixture", plugin)], ServerOptions { page_size, list_changed: false, ..ServerOptions::default() }).await;
        let out = Arc::new(Collect::default());
        let session = Session::new(host, out.clone(), Owner::new(Principal::Token("test".into()), Wire::Sessions), crate::telemetry::trace::Inbound::pipe());
        Client { session, reply: out.clone(), out }
    }

    fn send(&self, message: Value) {
        self.session.handle(parse(message), &self.reply);
    }

    fn request(&self, id: i64, method: &str, params: Value) {
        self.send(json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
    }

    /// Sends a request and waits for its answer.
    async fn ask(&self, id: i64, method: &str, params: Value) -> Value {
        self.request(id, method, params);
        self.out.answer(json!(id)).await
    }

    /// The error of a request that must fail: (code, message).
    async fn refused(&self, id: i64, method: &str, params: Value) -> (i64, String) {
        let answer = self.ask(id, method, params).await;
        let error = answer.get("error").unwrap_or_else(|| panic!("{method} should fail: {answer}"));
        (error["code"].as_i64().unwrap(), error["message"].as_str().unwrap().to_owned())
    }

    async fn initialize(&self) {
        let answer =
            self.ask(0, "initialize", json!({ "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } })).await;
        assert_eq!(answer["result"]["protocolVersion"], "2025-11-25", "{answer}");
        self.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    }
}

fn parse(message: Value) -> Result<Incoming, Rejected> {
    jsonrpc::parse(&message.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_initialize_and_ping_before_initialize() {
    let c = Client::new(100).await;
    assert_eq!(c.refused(1, "tools/list", json!({})).await, (INVALID_REQUEST as i64, "`tools/list` before `initialize`: initialize the session first".into()));
    assert_eq!(c.ask(2, "ping", json!({})).await["result"], json!({}));
    c.initialize().await;
    assert_eq!(c.ask(3, "ping", json!({})).await["result"], json!({}));
    assert!(c.ask(4, "tools/list", json!({})).await["result"]["tools"].is_array());
    assert_eq!(
        c.refused(5, "initialize", json!({ "protocolVersion": "2025-11-25" })).await,
        (INVALID_REQUEST as i64, "the session is already initialized".into())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_methods_are_not_found_before_and_after_initialize() {
    let c = Client::new(100).await;
    let expected = (METHOD_NOT_FOUND as i64, "method `frobnicate/now` not found".to_owned());
    assert_eq!(c.refused(1, "frobnicate/now", json!({})).await, expected);
    c.initialize().await;
    assert_eq!(c.refused(2, "frobnicate/now", json!({})).await, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn params_errors_say_exactly_what_is_wrong() {
    let c = Client::new(100).await;
    let invalid = |message: &str| (INVALID_PARAMS as i64, message.to_owned());
    assert_eq!(c.refused(1, "initialize", json!({})).await, invalid("missing `protocolVersion`"));
    assert_eq!(c.refused(2, "initialize", json!({ "protocolVersion": 1 })).await, invalid("`protocolVersion` must be a string"));
    let version = json!("2025-11-25");
    assert_eq!(c.refused(13, "initialize", json!({ "protocolVersion": version, "capabilities": [] })).await, invalid("`capabilities` must be an object"));
    assert_eq!(c.refused(14, "initialize", json!({ "protocolVersion": version, "clientInfo": "me" })).await, invalid("`clientInfo` must be an object"));
    let malformed = [
        (json!({ "capabilities": null }), "`capabilities` must be an object"),
        (json!({ "capabilities": { "elicitation": "x" } }), "`capabilities.elicitation` must be an object"),
        (json!({ "capabilities": { "sampling": 3 } }), "`capabilities.sampling` must be an object"),
        (json!({ "clientInfo": {} }), "missing `clientInfo.name`: the client's name, a string"),
        (json!({ "clientInfo": { "name": 5, "version": "1" } }), "`clientInfo.name` must be a string"),
        (json!({ "clientInfo": { "name": "me", "version": [] } }), "`clientInfo.version` must be a string"),
        (json!({ "clientInfo": { "name": "me" } }), "missing `clientInfo.version`: the client's version, a string"),
    ];
    for (n, (mut params, message)) in malformed.into_iter().enumerate() {
        params["protocolVersion"] = version.clone();
        assert_eq!(c.refused(20 + n as i64, "initialize", params.clone()).await, invalid(message), "{params}");
    }
    c.initialize().await;
    assert_eq!(c.refused(3, "tools/call", json!({})).await, invalid("missing `name`: tools/call needs the name of a tool"));
    assert_eq!(c.refused(4, "tools/call", json!({ "name": 3 })).await, invalid("`name` must be a string"));
    assert_eq!(c.refused(5, "tools/call", json!({ "name": "echo", "arguments": [] })).await, invalid("`arguments` must be an object"));
    assert_eq!(c.refused(6, "tools/call", json!({ "name": "nope" })).await, invalid("unknown tool `nope`"));
    assert_eq!(c.refused(15, "tools/call", json!({ "name": "echo", "_meta": 1 })).await, invalid("`_meta` must be an object"));
    assert_eq!(
        c.refused(16, "tools/call", json!({ "name": "echo", "_meta": { "progressToken": 1.5 } })).await,
        invalid("`_meta.progressToken` must be a string or an integer")
    );
    assert_eq!(c.refused(7, "resources/read", json!({})).await, invalid("missing `uri`: the URI of a resource"));
    assert_eq!(c.refused(8, "tasks/get", json!({})).await, invalid("missing `taskId`"));
    assert_eq!(c.refused(9, "tasks/get", json!({ "taskId": "t" })).await, invalid("Failed to retrieve task: Task not found"));
    assert_eq!(c.refused(10, "logging/setLevel", json!({})).await, invalid("missing `level`: a string such as \"info\""));
    assert_eq!(
        c.refused(11, "logging/setLevel", json!({ "level": "chatty" })).await,
        invalid("unknown log level `chatty`: use one of debug, info, notice, warning, error, critical, alert, emergency")
    );
    assert_eq!(c.refused(12, "tools/list", json!({ "cursor": 5 })).await, invalid("`cursor` must be a string"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_are_never_answered() {
    let c = Client::new(100).await;
    c.initialize().await;
    let before = c.out.messages().len();
    c.send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    c.send(json!({ "jsonrpc": "2.0", "method": "notifications/whatever", "params": { "x": 1 } }));
    c.send(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 99 } }));
    c.send(json!({ "jsonrpc": "2.0", "method": "tools/list" }));
    c.ask(1, "ping", json!({})).await;
    let after = c.out.messages();
    assert_eq!(after.len(), before + 1, "only the ping is answered: {after:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_call_answers_with_the_guests_result() {
    let c = Client::new(100).await;
    c.initialize().await;
    let answer = c.ask(1, "tools/call", json!({ "name": "echo", "arguments": {} })).await;
    assert_eq!(answer["result"]["content"][0]["text"], "echo ok", "{answer}");
    assert_ne!(answer["result"]["isError"], true, "{answer}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_id_in_flight_cannot_be_reused_and_cancelling_it_sends_no_answer() {
    let c = Client::new(100).await;
    c.initialize().await;
    c.request(7, "tools/call", json!({ "name": "spin" }));
    let (code, message) = c.refused(7, "tools/call", json!({ "name": "echo" })).await;
    assert_eq!((code, message.as_str()), (INVALID_REQUEST as i64, "request id 7 is already in use by a request in flight"));
    c.send(json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 7, "reason": "test" } }));
    tokio::time::timeout(PATIENCE, c.session.drained()).await.expect("the cancelled call stops");
    let answers: Vec<Value> = c.out.messages().into_iter().filter(|m| m["id"] == 7).collect();
    assert_eq!(answers.len(), 1, "the duplicate is refused and the cancelled call is not answered: {answers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_pages_with_a_cursor() {
    let c = Client::new(2).await;
    c.initialize().await;
    let first = c.ask(1, "tools/list", json!({})).await["result"].clone();
    let names = |page: &Value| page["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    assert_eq!(names(&first), ["echo", "spin"]);
    let cursor = first["nextCursor"].as_str().expect("a cursor to the rest").to_owned();
    let second = c.ask(2, "tools/list", json!({ "cursor": cursor })).await["result"].clone();
    assert_eq!(names(&second), ["zeta"]);
    assert!(second.get("nextCursor").is_none(), "the last page has no cursor: {second}");
    let (code, message) = c.refused(3, "tools/list", json!({ "cursor": "nonsense" })).await;
    assert_eq!((code, message.as_str()), (INVALID_PARAMS as i64, "invalid cursor \"nonsense\": pass back a `nextCursor` from an earlier tools/list"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_augmented_call_answers_with_its_task_and_tasks_result_with_the_call() {
    let c = Client::new(100).await;
    c.initialize().await;
    let created = c.ask(1, "tools/call", json!({ "name": "echo", "arguments": {}, "task": {} })).await;
    let task = created["result"]["task"]["taskId"].as_str().unwrap_or_else(|| panic!("a task: {created}")).to_owned();
    let result = c.ask(2, "tasks/result", json!({ "taskId": task })).await;
    assert_eq!(result["result"]["content"][0]["text"], "echo ok", "{result}");
    assert_eq!(result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], task.as_str(), "{result}");
    let got = c.ask(3, "tasks/get", json!({ "taskId": task })).await;
    assert_eq!(got["result"]["status"], "completed", "{got}");
    let (code, message) = c.refused(4, "tools/call", json!({ "name": "spin", "task": {} })).await;
    assert_eq!(
        (code, message.as_str()),
        (METHOD_NOT_FOUND as i64, "tool `spin` cannot run as a task (its execution.taskSupport is \"forbidden\"): call it without `task`")
    );
}
