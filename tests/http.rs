//! Streamable HTTP (MCP 2025-11-25) end to end: the real `corral serve --http` binary, driven
//! with raw HTTP requests. Helpers (server process, requests, SSE parsing) are at the bottom.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::reply::{Reply, SseEvent, SseParser};
use common::serve::{serve_command, HttpServe};
use common::{example_dist, example_plugins};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// Sessions and headers
// ---------------------------------------------------------------------------------------------

#[test]
fn session_id_is_minted_required_and_ends_with_delete() {
    let plugins = example_plugins(&["text"]);
    let server = Server::start(plugins.path(), &[]);

    let session = server.initialize(None);
    assert!(!session.id.is_empty(), "empty Mcp-Session-Id");
    assert!(session.id.bytes().all(|b| (0x21..=0x7e).contains(&b)), "Mcp-Session-Id {:?} is not visible ASCII", session.id);
    assert_eq!(session.result("ping", json!({})), json!({}));

    // No session header on a request other than initialize.
    let reply = server.post(&[("mcp-protocol-version", PROTOCOL_VERSION)], &rpc(7, "ping", json!({})).to_string());
    assert_eq!(reply.status, 400, "a request without Mcp-Session-Id: {reply:?}");

    // A session id the server never minted.
    let reply = server.post(&[("mcp-session-id", "no-such-session"), ("mcp-protocol-version", PROTOCOL_VERSION)], &rpc(8, "ping", json!({})).to_string());
    assert_eq!(reply.status, 404, "an unknown session id: {reply:?}");

    // DELETE ends it; the id is then unknown for every method.
    let reply = server.send("DELETE", "/mcp", &session.headers(), None);
    assert_eq!(reply.status, 200, "DELETE of a live session: {reply:?}");
    let reply = session.post_raw(&rpc(9, "ping", json!({})).to_string(), &[]);
    assert_eq!(reply.status, 404, "POST after DELETE: {reply:?}");
    let reply = server.send("GET", "/mcp", &with(&session.headers(), &[("accept", "text/event-stream")]), None);
    assert_eq!(reply.status, 404, "GET after DELETE: {reply:?}");
    let reply = server.send("DELETE", "/mcp", &session.headers(), None);
    assert_eq!(reply.status, 404, "a second DELETE: {reply:?}");

    // Another session is unaffected by the first one's end.
    let other = server.initialize(None);
    assert_ne!(other.id, session.id, "session ids must be unique");
    assert_eq!(other.result("ping", json!({})), json!({}));
}

#[test]
fn a_second_initialize_on_a_live_session_is_refused_and_the_session_survives() {
    let plugins = example_plugins(&["text"]);
    let server = Server::start(plugins.path(), &[]);
    let session = server.initialize(None);

    let reply = session.post_raw(&initialize_body().to_string(), &[]);
    assert_eq!(reply.status, 200, "a refused request is still answered on its POST: {reply:?}");
    let answer = reply.answer();
    assert_eq!(answer["error"]["code"], json!(-32600), "{answer}");
    assert_eq!(answer["error"]["message"], json!("the session is already initialized"), "{answer}");
    assert_eq!(reply.header("mcp-session-id"), None, "a refused initialize mints no session: {reply:?}");

    // The session, its id and its calls are untouched.
    assert_eq!(session.result("ping", json!({})), json!({}));
    let call = session.result("tools/call", json!({ "name": "echo", "arguments": { "text": "still here" } }));
    assert_eq!(call["content"][0]["text"], json!("still here"), "{call}");
}

#[test]
fn idle_sessions_expire() {
    let plugins = example_plugins(&["text"]);
    let server = Server::start(plugins.path(), &["--session-idle", "1s"]);
    let session = server.initialize(None);
    assert_eq!(session.result("ping", json!({})), json!({}));
    // Untouched until the host says it expired (any request, even one that fails, would count
    // as use, so only the host's log is watched meanwhile).
    let expired = "session expired after 1s idle";
    common::wait_until("the idle session to expire", TIMEOUT, || server.stderr().lines().any(|l| l.contains(&session.id) && l.contains(expired)));
    let reply = session.post_raw(&rpc(99, "ping", json!({})).to_string(), &[]);
    assert_eq!(reply.status, 404, "a session the host expired (--session-idle 1s): {reply:?}\n{}", server.stderr());
}

#[test]
fn older_protocol_versions_are_accepted_and_unknown_ones_refused() {
    let plugins = example_plugins(&["text"]);
    let server = Server::start(plugins.path(), &[]);
    let session = server.initialize(None);
    for version in ["2025-11-25", "2025-06-18", "2025-03-26"] {
        let reply = session.post_raw(&rpc(1, "ping", json!({})).to_string(), &[("mcp-protocol-version", version)]);
        assert_eq!(reply.status, 200, "MCP-Protocol-Version {version} on a 2025-11-25 session: {reply:?}");
        assert_eq!(reply.answer()["result"], json!({}), "{reply:?}");
    }
    let reply = session.post_raw(&rpc(2, "ping", json!({})).to_string(), &[("mcp-protocol-version", "1999-01-01")]);
    assert_eq!(reply.status, 400, "MCP-Protocol-Version 1999-01-01: {reply:?}");
    // The session itself is still fine.
    assert_eq!(session.result("ping", json!({})), json!({}));
}

#[test]
fn notifications_get_202_and_malformed_json_gets_400_parse_error() {
    let plugins = example_plugins(&["text"]);
    let server = Server::start(plugins.path(), &[]);
    let session = server.initialize(None);

    let reply = session.post_raw(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string(), &[]);
    assert_eq!(reply.status, 202, "a notification: {reply:?}");
    assert!(reply.body.is_empty(), "202 must have no body: {reply:?}");

    let reply = session.post_raw("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ", &[]);
    assert_eq!(reply.status, 400, "a body that is not JSON: {reply:?}");
    let error = reply.json();
    assert_eq!(error["error"]["code"], json!(-32700), "{reply:?}");
    assert_eq!(error["jsonrpc"], json!("2.0"), "{reply:?}");
}

#[test]

fn bodies_that_are_not_one_message_get_400_not_202() {
    let plugins = example_plugins(&["text"]);
    let server = Server::start(plugins.path(), &[]);
    let session = server.initialize(None);
    for body in [r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, r#"{"jsonrpc":"2.0","id":1}"#, "42"] {
        let reply = session.post_raw(body, &[]);
        assert_eq!(reply.status, 400, "POST {body}: the message was not accepted, so no 202: {reply:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Streams
// ---------------------------------------------------------------------------------------------

#[test]
fn a_call_with_progress_answers_with_sse_and_a_ping_with_json() {
    let plugins = example_plugins(&["ticker"]);
    let server = Server::start(plugins.path(), &[]);
    let session = server.initialize(None);

    let reply = session.post("tools/call", json!({ "name": "tick", "arguments": { "count": 3, "interval_ms": 20 }, "_meta": { "progressToken": "p-1" } }));
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.content_type().starts_with("text/event-stream"), "a call that reports progress should stream: {reply:?}");
    let messages = reply.messages();
    let (last, before) = messages.split_last().unwrap_or_else(|| panic!("an empty SSE stream: {reply:?}"));
    assert!(last.get("result").is_some(), "the stream must end with the response: {messages:#?}");
    assert_eq!(last["result"]["content"][0]["text"], json!("ticked 3 times"), "{messages:#?}");
    assert_ne!(last["result"]["isError"], json!(true), "{messages:#?}");
    let progress: Vec<&Value> = before.iter().filter(|m| m["method"] == "notifications/progress").collect();
    assert!(!progress.is_empty(), "no progress before the response: {messages:#?}");
    for p in &progress {
        assert_eq!(p["params"]["progressToken"], json!("p-1"), "{p}");
    }
    assert_eq!(progress.last().unwrap()["params"]["progress"].as_f64(), Some(3.0), "the final progress report is never thinned out: {messages:#?}");
    assert!(before.iter().all(|m| m.get("id").is_none()), "only notifications come before the response: {messages:#?}");

    let reply = session.post("ping", json!({}));
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.content_type().starts_with("application/json"), "a ping should be answered with plain JSON: {reply:?}");
    assert_eq!(reply.json()["result"], json!({}), "{reply:?}");
}

#[test]
fn the_get_stream_carries_task_status_and_resumes_with_last_event_id() {
    let plugins = example_plugins(&["ticker"]);
    let server = Server::start(plugins.path(), &[]);
    let session = server.initialize(None);

    let stream = session.open_stream(None);
    let created = session.result(
        "tools/call",
        json!({ "name": "tick", "arguments": { "count": 3, "interval_ms": 20 }, "task": {}, "_meta": { "progressToken": "task-progress" } }),
    );
    let task_id = created["task"]["taskId"].as_str().unwrap_or_else(|| panic!("no task in {created}")).to_owned();

    let is_final_status = |e: &SseEvent| {
        let m = e.json();
        m["method"] == "notifications/tasks/status" && m["params"]["taskId"] == json!(task_id) && m["params"]["status"] == json!("completed")
    };
    let seen = stream.until(is_final_status, "the task's final notifications/tasks/status on the GET stream");
    assert!(seen.len() >= 2, "expected the task's log and progress notifications before its status: {seen:#?}");
    for event in &seen {
        let id = event.id.as_deref().unwrap_or_else(|| panic!("an event on the GET stream without an id: {event:?}"));
        assert!(!id.is_empty(), "{event:?}");
        assert!(event.json().get("id").is_none(), "the GET stream carries no responses: {event:?}");
    }
    let ids: Vec<&str> = seen.iter().map(|e| e.id.as_deref().unwrap()).collect();
    let unique: std::collections::HashSet<&&str> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "event ids must be unique: {ids:?}");
    assert!(
        seen.iter().any(|e| e.json()["method"] == "notifications/progress" && e.json()["params"]["progressToken"] == json!("task-progress")),
        "a task's progress goes to the session stream: {seen:#?}"
    );
    drop(stream);

    // Reconnect as if the connection had dropped right after the first event.
    let first = seen[0].id.clone().unwrap();
    let resumed = session.open_stream(Some(&first));
    let replayed = resumed.until(is_final_status, "the replayed task status after Last-Event-ID");
    let expected: Vec<(Option<String>, Value)> = seen[1..].iter().map(|e| (e.id.clone(), e.json())).collect();
    let got: Vec<(Option<String>, Value)> = replayed.iter().map(|e| (e.id.clone(), e.json())).collect();
    assert_eq!(got, expected, "resuming after event {first} should replay exactly the later events, with their ids");
}

#[test]

fn each_server_message_goes_on_only_one_get_stream() {
    let plugins = example_plugins(&["ticker"]);
    let server = Server::start(plugins.path(), &[]);
    let session = server.initialize(None);
    let first = session.open_stream(None);
    let second = session.open_stream(None);
    let created = session.result("tools/call", json!({ "name": "tick", "arguments": { "count": 2, "interval_ms": 10 }, "task": {} }));
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    // Answers once the task has ended, after its status went out.
    session.result("tasks/result", json!({ "taskId": id }));
    // Ending the session ends its streams, so everything they carried can be collected.
    assert_eq!(server.send("DELETE", "/mcp", &session.headers(), None).status, 200);
    let a = first.until_end("the first GET stream to end after DELETE");
    let b = second.until_end("the second GET stream to end after DELETE");
    let status = |events: &[SseEvent]| events.iter().filter(|e| e.json()["method"] == "notifications/tasks/status").count();
    assert_eq!(status(&a) + status(&b), 1, "the task's status went out {} times:\nfirst: {a:#?}\nsecond: {b:#?}", status(&a) + status(&b));
    let mut ids: Vec<String> = a.iter().chain(&b).filter_map(|e| e.id.clone()).collect();
    let all = ids.len();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), all, "an event was sent on both streams:\nfirst: {a:#?}\nsecond: {b:#?}");
}

#[test]
fn progress_of_one_session_never_reaches_another_sessions_stream() {
    let plugins = example_plugins(&["ticker"]);
    let server = Server::start(plugins.path(), &[]);
    let a = server.initialize(None);
    let b = server.initialize(None);
    let b_stream = b.open_stream(None);
    let a_stream = a.open_stream(None);

    // A plain call in A: its progress rides on the POST's own stream.
    let reply = a.post("tools/call", json!({ "name": "tick", "arguments": { "count": 3, "interval_ms": 20 }, "_meta": { "progressToken": "a-call" } }));
    let messages = reply.messages();
    assert!(messages.iter().any(|m| m["params"]["progressToken"] == json!("a-call")), "A's call streamed no progress: {reply:?}");
    assert!(messages.last().unwrap().get("result").is_some(), "{reply:?}");

    // A task in A: its notifications go to A's GET stream.
    let created =
        a.result("tools/call", json!({ "name": "tick", "arguments": { "count": 2, "interval_ms": 20 }, "task": {}, "_meta": { "progressToken": "a-task" } }));
    let a_task = created["task"]["taskId"].as_str().unwrap().to_owned();
    a_stream.until(|e| e.json()["method"] == "notifications/tasks/status" && e.json()["params"]["taskId"] == json!(a_task), "A's task status on A's stream");

    // Then a marker in B: everything before it on B's stream would be a leak from A.
    let created =
        b.result("tools/call", json!({ "name": "tick", "arguments": { "count": 1, "interval_ms": 0 }, "task": {}, "_meta": { "progressToken": "b-marker" } }));
    let b_task = created["task"]["taskId"].as_str().unwrap().to_owned();
    let seen = b_stream
        .until(|e| e.json()["method"] == "notifications/tasks/status" && e.json()["params"]["taskId"] == json!(b_task), "B's marker task status on B's stream");
    for event in &seen {
        let m = event.json();
        let token = &m["params"]["progressToken"];
        assert!(token != "a-call" && token != "a-task", "session A's progress reached session B's GET stream: {event:?}");
        assert!(m["params"]["taskId"] != json!(a_task), "session A's task status reached session B: {event:?}");
        if m["method"] == "notifications/progress" {
            assert_eq!(*token, json!("b-marker"), "{event:?}");
        }
    }
}

#[test]
fn every_session_hears_that_the_tool_list_changed() {
    let plugins = example_plugins(&["text"]);
    let server = Server::start(plugins.path(), &["--watch"]);
    let a = server.initialize(None);
    let b = server.initialize(None);
    let a_stream = a.open_stream(None);
    let b_stream = b.open_stream(None);
    std::fs::copy(example_dist().join("hash.wasm"), plugins.path().join("hash.wasm")).unwrap();
    for (stream, who) in [(&a_stream, "session A"), (&b_stream, "session B")] {
        stream.until(|e| e.json()["method"] == "notifications/tools/list_changed", &format!("list_changed on {who}'s stream"));
    }
    let listed = b.result("tools/list", json!({}));
    assert!(listed["tools"].as_array().unwrap().iter().any(|t| t["name"] == "hash_chain"), "{listed}");
}

// ---------------------------------------------------------------------------------------------
// Security
// ---------------------------------------------------------------------------------------------

#[test]
fn foreign_host_and_origin_are_forbidden_loopback_origins_allowed() {
    let plugins = example_plugins(&["text"]);
    let server = Server::start(plugins.path(), &[]);
    let init = initialize_body().to_string();

    let reply = server.post(&[("host", "evil.example.com")], &init);
    assert_eq!(reply.status, 403, "Host: evil.example.com: {reply:?}");
    let reply = server.post(&[("origin", "http://evil.example.com")], &init);
    assert_eq!(reply.status, 403, "Origin: http://evil.example.com: {reply:?}");
    let reply = server.post(&[("host", "evil.example.com:80")], &init);
    assert_eq!(reply.status, 403, "Host: evil.example.com:80: {reply:?}");

    let reply = server.post(&[("origin", "http://localhost:1234")], &init);
    assert_eq!(reply.status, 200, "Origin: http://localhost:1234: {reply:?}");
    assert!(reply.header("mcp-session-id").is_some(), "{reply:?}");

    // The checks apply to GET and DELETE too, before the session is looked up.
    let session = server.initialize(None);
    let reply = server.send("GET", "/mcp", &with(&session.headers(), &[("accept", "text/event-stream"), ("origin", "http://evil.example.com")]), None);
    assert_eq!(reply.status, 403, "GET with a foreign Origin: {reply:?}");
    let reply = server.send("DELETE", "/mcp", &with(&session.headers(), &[("host", "evil.example.com")]), None);
    assert_eq!(reply.status, 403, "DELETE with a foreign Host: {reply:?}");
    assert_eq!(session.result("ping", json!({})), json!({}), "a refused DELETE must not end the session");
}

#[test]
fn allowed_origin_and_allowed_host_flags_extend_the_lists() {
    let plugins = example_plugins(&["text"]);
    let server = Server::start(plugins.path(), &["--allowed-origin", "https://app.example", "--allowed-host", "myhost"]);
    let init = initialize_body().to_string();

    let reply = server.post(&[("origin", "https://app.example")], &init);
    assert_eq!(reply.status, 200, "Origin: https://app.example with --allowed-origin https://app.example: {reply:?}");
    let reply = server.post(&[("host", "myhost:80")], &init);
    assert_eq!(reply.status, 200, "Host: myhost:80 with --allowed-host myhost: {reply:?}");

    let reply = server.post(&[("origin", "https://evil.example")], &init);
    assert_eq!(reply.status, 403, "other origins stay forbidden: {reply:?}");
    let reply = server.post(&[("host", "otherhost")], &init);
    assert_eq!(reply.status, 403, "other hosts stay forbidden: {reply:?}");
}

#[test]
fn bearer_tokens_are_required_when_configured() {
    let plugins = example_plugins(&["text"]);
    let tokens = tokens_file();
    let server = Server::start(plugins.path(), &["--auth-tokens-file", tokens.path().to_str().unwrap()]);
    let init = initialize_body().to_string();

    let reply = server.post(&[], &init);
    assert_eq!(reply.status, 401, "no token: {reply:?}");
    let challenge = reply.header("www-authenticate").unwrap_or_else(|| panic!("401 without WWW-Authenticate: {reply:?}"));
    assert!(challenge.starts_with("Bearer"), "WWW-Authenticate: {challenge}");

    let reply = server.post(&[("authorization", "Bearer wrongtoken")], &init);
    assert_eq!(reply.status, 401, "a wrong token: {reply:?}");
    assert!(reply.header("www-authenticate").is_some_and(|c| c.starts_with("Bearer")), "{reply:?}");
    let reply = server.post(&[("authorization", "Basic dG9rZW5BOg==")], &init);
    assert_eq!(reply.status, 401, "not a bearer token: {reply:?}");

    let reply = server.post(&[("authorization", "Bearer tokenA")], &init);
    assert_eq!(reply.status, 200, "alice's token: {reply:?}");
    let alice = server.initialize(Some("tokenA"));
    assert_eq!(alice.result("ping", json!({})), json!({}));

    // The session needs the token on every request, not just at initialize.
    let no_token = Session { auth: None, ..alice.clone() };
    let reply = no_token.post_raw(&rpc(5, "ping", json!({})).to_string(), &[]);
    assert_eq!(reply.status, 401, "a session request without the token: {reply:?}");

    let reply = server.send("GET", "/healthz", &[], None);
    assert_eq!(reply.status, 200, "/healthz needs no token: {reply:?}");
}

#[test]
fn tasks_are_invisible_to_other_sessions_without_auth() {
    let plugins = example_plugins(&["ticker"]);
    let server = Server::start(plugins.path(), &[]);
    let a = server.initialize(None);
    let b = server.initialize(None);

    // Long enough to still be running when B tries to cancel it.
    let created = a.result("tools/call", json!({ "name": "tick", "arguments": { "count": 10000, "interval_ms": 100 }, "task": {} }));
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(a.result("tasks/get", json!({ "taskId": id }))["taskId"], json!(id));

    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let answer = b.request(method, json!({ "taskId": id }));
        assert_task_not_found(&answer, method);
    }
    let listed = b.result("tasks/list", json!({}));
    assert!(!listed["tasks"].as_array().unwrap().iter().any(|t| t["taskId"] == json!(id)), "B's tasks/list shows A's task: {listed}");

    // Still A's, and still running: B's cancel did nothing.
    let task = a.result("tasks/get", json!({ "taskId": id }));
    assert_eq!(task["status"], json!("working"), "{task}");
    let listed = a.result("tasks/list", json!({}));
    assert!(listed["tasks"].as_array().unwrap().iter().any(|t| t["taskId"] == json!(id)), "A's tasks/list lacks its task: {listed}");
    assert_eq!(a.result("tasks/cancel", json!({ "taskId": id }))["status"], json!("cancelled"));
}

#[test]
fn tasks_belong_to_the_token_holder_with_auth() {
    let plugins = example_plugins(&["ticker"]);
    let tokens = tokens_file();
    let server = Server::start(plugins.path(), &["--auth-tokens-file", tokens.path().to_str().unwrap()]);
    let alice = server.initialize(Some("tokenA"));
    let bob = server.initialize(Some("tokenB"));

    let created = alice.result("tools/call", json!({ "name": "tick", "arguments": { "count": 10000, "interval_ms": 100 }, "task": {} }));
    let id = created["task"]["taskId"].as_str().unwrap().to_owned();

    for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
        let answer = bob.request(method, json!({ "taskId": id }));
        assert_task_not_found(&answer, method);
    }
    let listed = bob.result("tasks/list", json!({}));
    assert!(!listed["tasks"].as_array().unwrap().iter().any(|t| t["taskId"] == json!(id)), "bob's tasks/list shows alice's task: {listed}");

    // Bob cannot borrow alice's session either.
    let borrowed = Session { auth: Some("Bearer tokenB".into()), ..alice.clone() };
    let reply = borrowed.post_raw(&rpc(3, "tasks/get", json!({ "taskId": id })).to_string(), &[]);
    assert_eq!(reply.status, 404, "bob's token on alice's session: {reply:?}");

    // Alice sees it from a second session of hers.
    let alice2 = server.initialize(Some("tokenA"));
    assert_ne!(alice2.id, alice.id);
    let task = alice2.result("tasks/get", json!({ "taskId": id }));
    assert_eq!(task["taskId"], json!(id), "{task}");
    assert_eq!(task["status"], json!("working"), "bob's cancel must not have touched it: {task}");
    let listed = alice2.result("tasks/list", json!({}));
    assert!(listed["tasks"].as_array().unwrap().iter().any(|t| t["taskId"] == json!(id)), "alice's second session does not list her task: {listed}");
    assert_eq!(alice2.result("tasks/cancel", json!({ "taskId": id }))["status"], json!("cancelled"));
}

// ---------------------------------------------------------------------------------------------
// Concurrency and limits
// ---------------------------------------------------------------------------------------------

#[test]
fn concurrent_posts_on_one_session_all_succeed() {
    let plugins = example_plugins(&["text"]);
    let server = Server::start(plugins.path(), &[]);
    let session = server.initialize(None);
    let answers: Vec<(u64, Value)> = thread::scope(|s| {
        let handles: Vec<_> = (100..108u64)
            .map(|id| {
                let session = &session;
                s.spawn(move || {
                    let body = rpc(id, "tools/call", json!({ "name": "echo", "arguments": { "text": format!("message {id}") } }));
                    let reply = session.post_raw(&body.to_string(), &[]);
                    assert_eq!(reply.status, 200, "{reply:?}");
                    (id, reply.answer())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for (id, answer) in answers {
        assert_eq!(answer["id"], json!(id), "{answer}");
        assert_eq!(answer["result"]["content"][0]["text"], json!(format!("message {id}")), "{answer}");
        assert_ne!(answer["result"]["isError"], json!(true), "{answer}");
    }
}

#[test]
fn a_slow_call_does_not_block_a_ping_on_the_same_session() {
    let plugins = example_plugins(&["ticker"]);
    let server = Server::start(plugins.path(), &[]);
    let session = server.initialize(None);

    // Practically endless; it streams (its log line comes first), so once the stream is open the
    // call is running.
    let slow_id = 500;
    let body = rpc(slow_id, "tools/call", json!({ "name": "tick", "arguments": { "count": 10000, "interval_ms": 100 } }));
    let slow = session.post_stream(&body.to_string());
    let first = slow.next("the slow call's first notification");
    assert!(first.json().get("method").is_some(), "expected a notification first: {first:?}");

    let reply = session.post("ping", json!({}));
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.answer()["result"], json!({}), "{reply:?}");
    let pending = slow.drain();
    assert!(pending.iter().all(|e| e.json().get("id").is_none()), "the slow call answered already?! {pending:?}");

    // Cancel it: its stream ends without a response.
    let reply = session.post_raw(
        &json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": slow_id, "reason": "test over" } }).to_string(),
        &[],
    );
    assert_eq!(reply.status, 202, "{reply:?}");
    let rest = slow.until_end("the cancelled call's stream to end");
    assert!(rest.iter().all(|e| e.json().get("id").is_none()), "a cancelled call must not answer: {rest:?}");
}

#[test]
fn bodies_over_max_body_get_413() {
    let plugins = example_plugins(&["text"]);
    let server = Server::start(plugins.path(), &["--max-body", "1KiB"]);
    let session = server.initialize(None);

    let small = rpc(1, "tools/call", json!({ "name": "echo", "arguments": { "text": "x".repeat(200) } })).to_string();
    assert!(small.len() < 1024);
    let reply = session.post_raw(&small, &[]);
    assert_eq!(reply.status, 200, "a body under the limit: {reply:?}");

    let big = rpc(2, "tools/call", json!({ "name": "echo", "arguments": { "text": "x".repeat(4096) } })).to_string();
    assert!(big.len() > 4096);
    let reply = session.post_raw(&big, &[]);
    assert_eq!(reply.status, 413, "a 4 KiB body with --max-body 1KiB: {reply:?}");
}

#[test]
fn a_body_announced_over_max_body_is_refused_before_it_is_sent() {
    use std::io::{Read, Write};
    let plugins = example_plugins(&["text"]);
    let server = Server::start(plugins.path(), &["--max-body", "1KiB"]);
    let address = server.base.trim_start_matches("http://").to_owned();
    let mut tcp = std::net::TcpStream::connect(&address).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // Headers only: the 10 GB body never comes, so an answer proves nothing waited for it.
    let head =
        format!("POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nAccept: {ACCEPT_BOTH}\r\nContent-Length: 10000000000\r\n\r\n");
    tcp.write_all(head.as_bytes()).unwrap();
    let mut answer = Vec::new();
    let mut chunk = [0u8; 4096];
    while !String::from_utf8_lossy(&answer).contains("--max-body") {
        let n = tcp.read(&mut chunk).unwrap_or_else(|e| panic!("no answer before the body was sent: {e}; got {:?}", String::from_utf8_lossy(&answer)));
        assert!(n > 0, "closed without an answer: {:?}", String::from_utf8_lossy(&answer));
        answer.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("over --max-body (1024 bytes)"), "{text}");
    // The body stays unread on the connection, so the answer says the connection ends.
    assert!(text.to_ascii_lowercase().contains("connection: close"), "{text}");

    // A chunked body announces no length: it is cut off where it passes the limit.
    let mut tcp = std::net::TcpStream::connect(&address).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let chunk = "x".repeat(512);
    let mut request =
        format!("POST /mcp HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nAccept: {ACCEPT_BOTH}\r\nTransfer-Encoding: chunked\r\n\r\n");
    for _ in 0..4 {
        request.push_str(&format!("{:x}\r\n{chunk}\r\n", chunk.len()));
    }
    request.push_str("0\r\n\r\n");
    tcp.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = tcp.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("the body is over --max-body (1024 bytes)"), "{answer}");
}

#[test]
fn metrics_count_calls_by_tool_and_outcome_and_tasks_by_status() {
    let plugins = example_plugins(&["text", "hash"]);
    let server = Server::start(plugins.path(), &[]);
    let session = server.initialize(None);
    session.result("tools/call", json!({ "name": "echo", "arguments": { "text": "hi" } }));
    session.result("tools/call", json!({ "name": "echo", "arguments": { "text": 5 } }));
    session.result("tools/call", json!({ "name": "hash_chain", "arguments": { "input": "a", "rounds": 10_000_000 } }));
    let task = session.result("tools/call", json!({ "name": "hash_chain", "arguments": { "input": "a", "rounds": 1 }, "task": {} }));
    session.result("tasks/result", json!({ "taskId": task["task"]["taskId"] }));

    let reply = server.send("GET", "/metrics", &[], None);
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.content_type().starts_with("text/plain"), "{reply:?}");
    let text = reply.body.clone();
    for line in [
        r#"corral_tool_calls_total{tool="echo",outcome="ok"} 1"#,
        r#"corral_tool_calls_total{tool="echo",outcome="invalid-arguments"} 1"#,
        r#"corral_tool_calls_total{tool="hash_chain",outcome="fuel-exhausted"} 1"#,
        r#"corral_tool_calls_total{tool="hash_chain",outcome="ok"} 1"#,
        r#"corral_tasks{status="completed"} 1"#,
        r#"corral_task_queue_depth 0"#,
        r#"corral_task_ends_pending 0"#,
        r#"corral_task_ends_dropped_total 0"#,
        r#"corral_http_sessions 1"#,
    ] {
        assert!(text.lines().any(|l| l == line), "missing `{line}` in:\n{text}");
    }
    assert!(text.contains(r#"corral_tool_call_seconds_count{tool="echo"} 2"#), "{text}");
}

#[test]
fn a_tokens_file_changed_while_serving_takes_effect_and_an_empty_one_is_refused() {
    let plugins = example_plugins(&["text"]);
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "alice tokenA\n").unwrap();
    let server = Server::start(plugins.path(), &["--auth-tokens-file", tokens.to_str().unwrap()]);
    let init = initialize_body().to_string();
    let status = |token: &str| server.post(&[("authorization", &format!("Bearer {token}"))], &init).status;
    assert_eq!((status("tokenA"), status("tokenC")), (200, 401));
    // Replaced as an operator would (written beside, renamed over): carol in, alice out, with
    // no restart.
    let replace = |text: &str| {
        let next = dir.path().join("tokens.next");
        std::fs::write(&next, text).unwrap();
        std::fs::rename(&next, &tokens).unwrap();
    };
    replace("carol tokenC\n");
    common::wait_until("the new token to be taken", TIMEOUT, || status("tokenC") == 200);
    assert_eq!(status("tokenA"), 401, "the revoked token is refused");
    // A file with no token is refused, logged, and the tokens in force stay.
    replace("# nobody yet\n");
    common::wait_until("the empty file to be refused", TIMEOUT, || server.stderr().contains("holds no token (the tokens in force are kept"));
    assert_eq!(status("tokenC"), 200);
}

#[test]
fn metrics_show_the_build_and_the_process() {
    let plugins = example_plugins(&["text"]);
    let server = Server::start(plugins.path(), &[]);
    let text = server.send("GET", "/metrics", &[], None).body;
    let build = text.lines().find(|l| l.starts_with("corral_build_info{")).unwrap_or_else(|| panic!("no corral_build_info in:\n{text}"));
    assert!(build.contains(&format!(r#"version="{}""#, env!("CARGO_PKG_VERSION"))) && build.ends_with("} 1"), "{build}");
    let figure = |name: &str| -> f64 {
        let line = text.lines().find(|l| l.split(' ').next() == Some(name)).unwrap_or_else(|| panic!("no {name} in:\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    // The names every Prometheus client library uses, with figures a live process has.
    assert!(figure("process_resident_memory_bytes") > 1_000_000.0);
    assert!(figure("process_open_fds") >= 3.0);
    assert!(figure("process_max_fds") >= figure("process_open_fds"));
    assert!(figure("process_cpu_seconds_total") > 0.0);
    assert!(figure("process_start_time_seconds") > 1.7e9);
}

#[test]
fn metrics_take_their_own_tokens_which_cannot_call_tools() {
    let plugins = example_plugins(&["text"]);
    let clients = tokens_file();
    let scrapers = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(scrapers.path(), "prometheus scrape-token\n").unwrap();
    let server =
        Server::start(plugins.path(), &["--auth-tokens-file", clients.path().to_str().unwrap(), "--metrics-tokens-file", scrapers.path().to_str().unwrap()]);
    let scrape = server.send("GET", "/metrics", &[("authorization", "Bearer scrape-token")], None);
    assert_eq!(scrape.status, 200, "{scrape:?}");
    assert!(scrape.body.contains("corral_build_info"), "{scrape:?}");
    // A client's token does not scrape; the scraper's does not call tools.
    assert_eq!(server.send("GET", "/metrics", &[("authorization", "Bearer tokenA")], None).status, 401);
    assert_eq!(server.send("GET", "/metrics", &[], None).status, 401);
    let reply = server.post(&[("authorization", "Bearer scrape-token")], &initialize_body().to_string());
    assert_eq!(reply.status, 401, "a scraper's token is no MCP client's: {reply:?}");
    // Host/Origin are checked as on /mcp.
    assert_eq!(server.send("GET", "/metrics", &[("authorization", "Bearer scrape-token"), ("origin", "https://evil.example")], None).status, 403);

    // A token in both files is refused at start, naming the flags.
    let shared = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(shared.path(), "prometheus tokenA\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["serve", "--plugins", plugins.path().to_str().unwrap(), "--http", "127.0.0.1:0", "--db", ":memory:"])
        .args(["--auth-tokens-file", clients.path().to_str().unwrap(), "--metrics-tokens-file", shared.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("shares a token with --auth-tokens-file"), "{out:?}");
}

#[test]
fn the_open_file_limit_is_raised_to_its_hard_limit_at_start() {
    // Issue 17, finding 1: under the common soft limit of 1024, idle connections took every file
    // descriptor. The host is started with its soft limit lowered, as a login shell would.
    let plugins = example_plugins(&["text"]);
    let exe = env!("CARGO_BIN_EXE_corral");
    let mut command = Command::new("sh");
    command.args([
        "-c",
        r#"ulimit -Sn 1024 && exec "$0" "$@""#,
        exe,
        "serve",
        "--plugins",
        plugins.path().to_str().unwrap(),
        "--http",
        "127.0.0.1:0",
        "--db",
        ":memory:",
    ]);
    let host = HttpServe::spawn(command, STARTUP);
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", host.child.id())).unwrap();
    drop(host);
    let open_files = limits.lines().find(|l| l.starts_with("Max open files")).unwrap_or_else(|| panic!("{limits}"));
    let fields: Vec<&str> = open_files.split_whitespace().collect();
    let (soft, hard) = (fields[3], fields[4]);
    assert_eq!(soft, hard, "the soft limit was raised from 1024 to the hard limit: {open_files}");
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The generous default for every wait.
const TIMEOUT: Duration = Duration::from_secs(60);
/// How long the host may take to load the plugins and bind.
const STARTUP: Duration = Duration::from_secs(120);
const PROTOCOL_VERSION: &str = "2025-11-25";
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

fn rpc(id: u64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

fn initialize_body() -> Value {
    rpc(0, "initialize", json!({ "protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": { "name": "corral-http-tests", "version": "0" } }))
}

/// `alice tokenA`, `bob tokenB`.
fn tokens_file() -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), "alice tokenA\nbob tokenB\n").unwrap();
    file
}

fn with<'a>(base: &[(&'a str, &'a str)], extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    base.iter().chain(extra).copied().collect()
}

fn assert_task_not_found(answer: &Value, method: &str) {
    let error = answer.get("error").unwrap_or_else(|| panic!("{method} of another owner's task should fail, got {answer}"));
    assert_eq!(error["code"], json!(-32602), "{method}: {answer}");
    let message = error["message"].as_str().unwrap_or("").to_ascii_lowercase();
    assert!(message.contains("not found"), "{method} should say the task is not found: {answer}");
}

/// `corral serve --http 127.0.0.1:0`, killed on drop.
struct Server {
    host: HttpServe,
    /// `http://127.0.0.1:PORT`
    base: String,
    stderr: Arc<Mutex<String>>,
    agent: ureq::Agent,
    /// For streams: no overall deadline (the reader thread's channel has one).
    stream_agent: ureq::Agent,
}

impl Server {
    fn start(plugins: &Path, extra: &[&str]) -> Server {
        let host = HttpServe::spawn(serve_command(plugins, ":memory:", extra), STARTUP);
        let (url, stderr) = (host.url.clone(), host.stderr.clone());
        let base = url.strip_suffix("/mcp").unwrap_or_else(|| panic!("unexpected endpoint {url}")).to_owned();
        let agent = ureq::Agent::config_builder().http_status_as_error(false).timeout_global(Some(TIMEOUT)).build().new_agent();
        let stream_agent = ureq::Agent::config_builder().http_status_as_error(false).timeout_connect(Some(TIMEOUT)).build().new_agent();
        Server { host, base, stderr, agent, stream_agent }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    fn build(&self, method: &str, path: &str, headers: &[(&str, &str)]) -> ureq::http::request::Builder {
        let mut request = ureq::http::Request::builder().method(method).uri(format!("{}{path}", self.base));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request
    }

    /// One request, its whole answer read.
    fn send(&self, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&str>) -> Reply {
        let request = self.build(method, path, headers);
        let result = match body {
            Some(body) => self.agent.run(request.body(body.to_owned()).unwrap()),
            None => self.agent.run(request.body(()).unwrap()),
        };
        let response = result.unwrap_or_else(|e| panic!("{method} {path} failed: {e}\nstderr:\n{}", self.stderr()));
        Reply::read(response).unwrap_or_else(|e| panic!("reading the answer to {method} {path}: {e}\nstderr:\n{}", self.stderr()))
    }

    /// POST /mcp with the MCP Accept and Content-Type headers plus `headers`.
    fn post(&self, headers: &[(&str, &str)], body: &str) -> Reply {
        let all = with(&[("accept", ACCEPT_BOTH), ("content-type", "application/json")], headers);
        self.send("POST", "/mcp", &all, Some(body))
    }

    /// A request whose answer is read as an SSE stream, event by event, on a thread.
    fn stream(&self, method: &str, headers: &[(&str, &str)], body: Option<&str>) -> EventStream {
        let request = self.build(method, "/mcp", headers);
        let result = match body {
            Some(body) => self.stream_agent.run(request.body(body.to_owned()).unwrap()),
            None => self.stream_agent.run(request.body(()).unwrap()),
        };
        let response = result.unwrap_or_else(|e| panic!("{method} /mcp (stream) failed: {e}\nstderr:\n{}", self.stderr()));
        let status = response.status().as_u16();
        let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_owned();
        if status != 200 || !content_type.starts_with("text/event-stream") {
            let body = response.into_body().read_to_string().unwrap_or_default();
            panic!("{method} /mcp: expected an SSE stream, got {status} `{content_type}`: {body}");
        }
        let (tx, rx) = mpsc::channel();
        let reader = response.into_body().into_reader();
        thread::spawn(move || {
            let mut parser = SseParser::default();
            let mut reader = BufReader::new(reader);
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                if let Some(event) = parser.line(&line) {
                    if tx.send(event).is_err() {
                        break;
                    }
                }
            }
        });
        EventStream { rx, stderr: self.stderr.clone() }
    }

    /// `initialize` + `notifications/initialized`, with an optional bearer token.
    fn initialize(&self, token: Option<&str>) -> Session<'_> {
        let auth = token.map(|t| format!("Bearer {t}"));
        let mut headers = vec![];
        if let Some(auth) = &auth {
            headers.push(("authorization", auth.as_str()));
        }
        let reply = self.post(&headers, &initialize_body().to_string());
        assert_eq!(reply.status, 200, "initialize: {reply:?}");
        let answer = reply.answer();
        assert_eq!(answer["result"]["protocolVersion"], json!(PROTOCOL_VERSION), "{answer}");
        let id = reply.header("mcp-session-id").unwrap_or_else(|| panic!("initialize returned no Mcp-Session-Id: {reply:?}")).to_owned();
        let session = Session { server: self, id, auth, next_id: Arc::new(AtomicU64::new(1)) };
        let reply = session.post_raw(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string(), &[]);
        assert_eq!(reply.status, 202, "notifications/initialized: {reply:?}");
        session
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.host.child.kill();
        let _ = self.host.child.wait();
        if thread::panicking() {
            eprintln!("--- corral stderr ---\n{}", self.stderr());
        }
    }
}

/// An initialized MCP session; cloning shares the request id counter.
#[derive(Clone)]
struct Session<'a> {
    server: &'a Server,
    id: String,
    /// `Bearer TOKEN` when authenticating.
    auth: Option<String>,
    next_id: Arc<AtomicU64>,
}

impl Session<'_> {
    /// The headers every request of the session carries.
    fn headers(&self) -> Vec<(&str, &str)> {
        let mut headers = vec![("mcp-session-id", self.id.as_str()), ("mcp-protocol-version", PROTOCOL_VERSION)];
        if let Some(auth) = &self.auth {
            headers.push(("authorization", auth.as_str()));
        }
        headers
    }

    /// POSTs `body` with the session headers; `overrides` replace headers of the same name.
    fn post_raw(&self, body: &str, overrides: &[(&str, &str)]) -> Reply {
        let mut headers: Vec<(&str, &str)> = self.headers().into_iter().filter(|(k, _)| !overrides.iter().any(|(o, _)| o.eq_ignore_ascii_case(k))).collect();
        headers.extend_from_slice(overrides);
        self.server.post(&headers, body)
    }

    /// A request with a fresh id; the whole HTTP answer.
    fn post(&self, method: &str, params: Value) -> Reply {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let reply = self.post_raw(&rpc(id, method, params).to_string(), &[]);
        if reply.status == 200 {
            let answer = reply.answer();
            assert_eq!(answer["id"], json!(id), "the answer to {method} has the wrong id: {reply:?}");
        }
        reply
    }

    /// A request's JSON-RPC response (result or error).
    fn request(&self, method: &str, params: Value) -> Value {
        let reply = self.post(method, params);
        assert_eq!(reply.status, 200, "{method}: {reply:?}");
        reply.answer()
    }

    /// A request's result; panics on an error response.
    fn result(&self, method: &str, params: Value) -> Value {
        let answer = self.request(method, params);
        answer.get("result").cloned().unwrap_or_else(|| panic!("{method} failed: {answer}"))
    }

    /// POST whose answer is read as a stream.
    fn post_stream(&self, body: &str) -> EventStream {
        let headers = with(&[("accept", ACCEPT_BOTH), ("content-type", "application/json")], &self.headers());
        self.server.stream("POST", &headers, Some(body))
    }

    /// GET /mcp: the session's stream of server-initiated messages.
    fn open_stream(&self, last_event_id: Option<&str>) -> EventStream {
        let mut headers = with(&self.headers(), &[("accept", "text/event-stream")]);
        if let Some(last) = last_event_id {
            headers.push(("last-event-id", last));
        }
        self.server.stream("GET", &headers, None)
    }
}

/// Events of an SSE answer as they arrive; every wait has a deadline.
struct EventStream {
    rx: Receiver<SseEvent>,
    stderr: Arc<Mutex<String>>,
}

impl EventStream {
    fn next(&self, what: &str) -> SseEvent {
        match self.rx.recv_timeout(TIMEOUT) {
            Ok(event) => event,
            Err(RecvTimeoutError::Timeout) => panic!("timed out waiting for {what}\nstderr:\n{}", self.stderr.lock().unwrap()),
            Err(RecvTimeoutError::Disconnected) => panic!("the stream ended while waiting for {what}\nstderr:\n{}", self.stderr.lock().unwrap()),
        }
    }

    /// Events up to and including the first that matches.
    fn until(&self, matches: impl Fn(&SseEvent) -> bool, what: &str) -> Vec<SseEvent> {
        let deadline = Instant::now() + TIMEOUT;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(event) => {
                    let done = matches(&event);
                    seen.push(event);
                    if done {
                        return seen;
                    }
                }
                Err(e) => panic!("{e:?} waiting for {what}; seen so far: {seen:#?}\nstderr:\n{}", self.stderr.lock().unwrap()),
            }
        }
    }

    /// Events that have arrived already, without waiting.
    fn drain(&self) -> Vec<SseEvent> {
        let mut events = Vec::new();
        loop {
            match self.rx.try_recv() {
                Ok(event) => events.push(event),
                Err(_) => return events,
            }
        }
    }

    /// Every remaining event, until the server ends the stream.
    fn until_end(&self, what: &str) -> Vec<SseEvent> {
        let deadline = Instant::now() + TIMEOUT;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(event) => seen.push(event),
                Err(RecvTimeoutError::Disconnected) => return seen,
                Err(RecvTimeoutError::Timeout) => panic!("timed out waiting for {what}; seen: {seen:#?}\nstderr:\n{}", self.stderr.lock().unwrap()),
            }
        }
    }
}
