//! End to end over both transports: the real `corral` binary serving the example plugins
//! (built from `plugins/` by `scripts/build-plugins.sh`) to an MCP client over stdio
//! (line-delimited JSON-RPC) and over Streamable HTTP (`serve --http 127.0.0.1:0`).
//!
//! Each scenario is written once in `scenarios!` and runs as `stdio::NAME` and `http::NAME`;
//! the few that only mean something over stdio are in `stdio_only`, and the CLI commands,
//! which speak no transport, in `cli`. Every test copies the plugins it needs into its own temp
//! dir (so it can add or change manifests), starts `corral serve --plugins DIR`, and checks one
//! piece of the MCP surface. Every wait has a deadline; over stdio, stdout must carry nothing
//! but JSON, and over HTTP nothing at all (the client panics otherwise).

#[allow(unused_imports)] // the WAT fixtures are for tests/hostile.rs
#[macro_use]
mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};
use tempfile::TempDir;

const ALL: &[&str] = &["text", "ticker", "hash"];
const ALL_TOOLS: [&str; 5] = ["countdown", "echo", "hash_chain", "tick", "word_count"];

scenarios! {
    // -----------------------------------------------------------------------------------------
    // initialize

    fn initialize_echoes_each_supported_protocol_version(t: Transport) {
        let dir = plugins(&["text"]);
        for version in ["2025-11-25", "2025-06-18", "2025-03-26"] {
            let mut mcp = spawn_serve(t, dir.path(), &[]);
            let result = mcp.result("initialize", initialize_params(json!(version)));
            assert_eq!(result["protocolVersion"], version, "negotiated version: {result:#}");
        }
    }

    fn initialize_answers_an_unknown_version_with_the_latest(t: Transport) {
        let dir = plugins(&["text"]);
        let mut mcp = spawn_serve(t, dir.path(), &[]);
        let result = mcp.result("initialize", initialize_params(json!("1999-01-01")));
        assert_eq!(result["protocolVersion"], "2025-11-25", "{result:#}");
    }

    fn initialize_advertises_tools_logging_and_tasks(t: Transport) {
        let dir = plugins(&["text"]);
        let mut mcp = spawn_serve(t, dir.path(), &[]);
        let result = mcp.initialize();
        let caps = &result["capabilities"];
        assert!(caps["tools"].is_object(), "capabilities.tools: {result:#}");
        assert!(caps["logging"].is_object(), "capabilities.logging: {result:#}");
        assert_eq!(caps["tasks"]["requests"]["tools"]["call"], json!({}), "capabilities.tasks: {result:#}");
        assert_eq!(result["serverInfo"]["name"], "corral", "{result:#}");
        assert!(result["serverInfo"]["version"].is_string(), "{result:#}");
    }

    fn initialize_without_protocol_version_is_invalid_params_naming_it(t: Transport) {
        let dir = plugins(&["text"]);
        let mut mcp = spawn_serve(t, dir.path(), &[]);
        let mut params = initialize_params(json!(null));
        params.as_object_mut().unwrap().remove("protocolVersion");
        let response = mcp.request("initialize", params);
        let (code, message) = rpc_error(&mut mcp, &response);
        assert_eq!(code, -32602, "{response}");
        assert!(message.contains("protocolVersion"), "message should name the field: {message:?}");
    }

    fn second_initialize_is_invalid_request(t: Transport) {
        let dir = plugins(&["text"]);
        let mut mcp = serve(t, dir.path(), &[]);
        let response = mcp.request("initialize", initialize_params(json!("2025-11-25")));
        assert_eq!(rpc_error(&mut mcp, &response).0, -32600, "{response}");
    }

    // -----------------------------------------------------------------------------------------
    // bad input

    fn malformed_json_is_parse_error_with_null_id_and_connection_stays_up(t: Transport) {
        let dir = plugins(&["text"]);
        let mut mcp = serve(t, dir.path(), &[]);
        mcp.send_raw(r#"{"jsonrpc": "2.0", "id": 7, "method": "#);
        let response = wait_raw_response(&mut mcp, &Value::Null);
        assert_eq!(rpc_error(&mut mcp, &response).0, -32700, "{response}");
        assert_eq!(mcp.result("ping", json!({})), json!({}));
    }

    fn json_array_is_invalid_request(t: Transport) {
        let dir = plugins(&["text"]);
        let mut mcp = serve(t, dir.path(), &[]);
        mcp.send_raw(r#"[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]"#);
        let response = wait_raw_response(&mut mcp, &Value::Null);
        assert_eq!(rpc_error(&mut mcp, &response).0, -32600, "{response}");
        assert_eq!(mcp.result("ping", json!({})), json!({}));
    }

    fn unknown_method_is_method_not_found_naming_it(t: Transport) {
        let dir = plugins(&["text"]);
        let mut mcp = serve(t, dir.path(), &[]);
        let response = mcp.request("frobnicate/now", json!({}));
        let (code, message) = rpc_error(&mut mcp, &response);
        assert_eq!(code, -32601, "{response}");
        assert!(message.contains("frobnicate/now"), "message should name the method: {message:?}");
    }

    fn tools_call_without_name_is_invalid_params_naming_name(t: Transport) {
        let dir = plugins(&["text"]);
        let mut mcp = serve(t, dir.path(), &[]);
        let response = mcp.request("tools/call", json!({"arguments": {"text": "hi"}}));
        let (code, message) = rpc_error(&mut mcp, &response);
        assert_eq!(code, -32602, "{response}");
        assert!(message.contains("name"), "message should name `name`: {message:?}");
    }

    fn tools_call_with_non_object_arguments_is_invalid_params(t: Transport) {
        let dir = plugins(&["text"]);
        let mut mcp = serve(t, dir.path(), &[]);
        let response = mcp.request("tools/call", json!({"name": "echo", "arguments": "hi"}));
        let (code, message) = rpc_error(&mut mcp, &response);
        assert_eq!(code, -32602, "{response}");
        assert!(message.contains("arguments"), "message should name `arguments`: {message:?}");
    }

    fn unknown_tool_is_invalid_params_naming_it(t: Transport) {
        let dir = plugins(&["text"]);
        let mut mcp = serve(t, dir.path(), &[]);
        let response = mcp.request("tools/call", json!({"name": "no_such_tool", "arguments": {}}));
        let (code, message) = rpc_error(&mut mcp, &response);
        assert_eq!(code, -32602, "{response}");
        assert!(message.contains("no_such_tool"), "message should name the tool: {message:?}");
    }

    fn integer_zero_and_string_ids_are_answered_with_the_same_id(t: Transport) {
        let dir = plugins(&["text"]);
        let mut mcp = serve(t, dir.path(), &[]);
        for id in [json!(0), json!("string-id")] {
            mcp.send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}));
            let response = wait_raw_response(&mut mcp, &id);
            assert_eq!(response["result"], json!({}), "ping with id {id}: {response}");
        }
        // Tool calls are answered from their own task: the id must survive that path too.
        for id in [json!(-5), json!("call-id")] {
            let call = json!({"name": "echo", "arguments": {"text": "same id"}});
            mcp.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": call}));
            let response = wait_raw_response(&mut mcp, &id);
            assert_eq!(text_of(&mut mcp, &response["result"]), "same id", "echo with id {id}: {response}");
        }
    }

    // -----------------------------------------------------------------------------------------
    // tools/list

    fn tools_list_is_in_name_order_and_stable(t: Transport) {
        let dir = plugins(ALL);
        let mut mcp = serve(t, dir.path(), &[]);
        let first = mcp.result("tools/list", json!({}));
        assert_eq!(tool_names(&first), ALL_TOOLS, "{first:#}");
        assert!(first.get("nextCursor").is_none(), "one page holds every tool: {first:#}");
        assert_eq!(mcp.result("tools/list", json!({})), first, "a second listing differs");
    }

    fn tools_list_entries_carry_schemas_task_support_and_annotations(t: Transport) {
        let dir = plugins(ALL);
        let mut mcp = serve(t, dir.path(), &[]);
        let list = mcp.result("tools/list", json!({}));
        let tool = |name: &str| list["tools"].as_array().unwrap().iter().find(|t| t["name"] == name).unwrap().clone();
        for name in ALL_TOOLS {
            let t = tool(name);
            assert_eq!(t["inputSchema"]["type"], "object", "inputSchema of {name}: {t:#}");
            assert!(t["description"].as_str().is_some_and(|d| !d.is_empty()), "description of {name}: {t:#}");
            assert_eq!(t["annotations"]["readOnlyHint"], true, "annotations of {name}: {t:#}");
            assert_eq!(t["annotations"]["destructiveHint"], false, "annotations of {name}: {t:#}");
        }
        for (name, policy) in [("echo", "forbidden"), ("word_count", "forbidden"), ("tick", "optional"), ("hash_chain", "optional"), ("countdown", "required")] {
            assert_eq!(tool(name)["execution"]["taskSupport"], policy, "taskSupport of {name}");
        }
        assert_eq!(tool("echo")["inputSchema"]["required"], json!(["text"]));
        for name in ["word_count", "hash_chain"] {
            assert_eq!(tool(name)["outputSchema"]["type"], "object", "outputSchema of {name}");
        }
        for name in ["echo", "tick", "countdown"] {
            assert!(tool(name).get("outputSchema").is_none(), "{name} declares no output schema");
        }
    }

    fn tools_list_pages_chain_through_every_tool_once(t: Transport) {
        let dir = plugins(ALL);
        let mut mcp = serve(t, dir.path(), &["--page-size", "2"]);
        let (mut names, mut cursor, mut pages) = (Vec::new(), None::<Value>, 0);
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = mcp.result("tools/list", params);
            pages += 1;
            let page_names = tool_names(&page);
            assert!(!page_names.is_empty() && page_names.len() <= 2, "page {pages}: {page:#}");
            names.extend(page_names.into_iter().map(String::from));
            match page.get("nextCursor") {
                Some(next) => cursor = Some(next.clone()),
                None => break,
            }
            assert!(pages < 10, "nextCursor never ends: {names:?}");
        }
        assert_eq!(names, ALL_TOOLS, "tools over {pages} pages");
        assert_eq!(pages, 3);
    }

    fn tools_list_with_an_invalid_cursor_is_invalid_params(t: Transport) {
        let dir = plugins(ALL);
        let mut mcp = serve(t, dir.path(), &["--page-size", "2"]);
        let response = mcp.request("tools/list", json!({"cursor": "this is not a cursor!"}));
        assert_eq!(rpc_error(&mut mcp, &response).0, -32602, "{response}");
    }

    // -----------------------------------------------------------------------------------------
    // tools/call

    fn echo_returns_its_text(t: Transport) {
        let dir = plugins(&["text"]);
        let mut mcp = serve(t, dir.path(), &[]);
        let result = mcp.call_tool("echo", json!({"text": "hello, corral"}));
        assert_eq!(text_of(&mut mcp, &result), "hello, corral");
        assert!(result.get("isError").is_none_or(|e| e == false), "{result:#}");
    }

    fn word_count_returns_structured_content_and_a_text_block(t: Transport) {
        let dir = plugins(&["text"]);
        let mut mcp = serve(t, dir.path(), &[]);
        let result = mcp.call_tool("word_count", json!({"text": "one two\nthree"}));
        assert_eq!(result["structuredContent"], json!({"words": 3, "lines": 2, "chars": 13}), "{result:#}");
        let text: Value = serde_json::from_str(&text_of(&mut mcp, &result)).expect("the text block holds JSON");
        assert_eq!(text, result["structuredContent"], "text block mirrors structuredContent");
    }

    fn arguments_violating_the_input_schema_are_invalid_arguments_results(t: Transport) {
        let dir = plugins(&["text"]);
        let mut mcp = serve(t, dir.path(), &[]);
        let cases = [(json!({"text": 5}), "text"), (json!({}), "text"), (json!({"text": "ok", "extra": 1}), "extra")];
        for (arguments, named) in cases {
            let result = mcp.call_tool("echo", arguments.clone());
            let error = corral_error(&mut mcp, &result, "invalid-arguments");
            let violations = error["violations"].as_array().filter(|v| !v.is_empty());
            let violations = violations.unwrap_or_else(|| panic!("no violations for {arguments}: {result:#}"));
            for v in violations {
                assert!(v["path"].is_string() && v["message"].as_str().is_some_and(|m| !m.is_empty()), "violation shape: {v}");
            }
            let all = violations.iter().map(|v| format!("{} {}", v["path"], v["message"])).collect::<String>();
            assert!(all.contains(named), "violations for {arguments} should mention {named:?}: {all}");
        }
    }

    fn required_task_tool_without_task_is_method_not_found(t: Transport) {
        let dir = plugins(&["ticker"]);
        let mut mcp = serve(t, dir.path(), &[]);
        let response = mcp.request("tools/call", json!({"name": "countdown", "arguments": {"from": 3}}));
        let (code, message) = rpc_error(&mut mcp, &response);
        assert_eq!(code, -32601, "{response}");
        assert!(message.contains("countdown"), "message should name the tool: {message:?}");
    }

    fn hash_chain_within_its_fuel_returns_a_hex_digest(t: Transport) {
        let dir = plugins(&["hash"]);
        let mut mcp = serve(t, dir.path(), &[]);
        let result = mcp.call_tool("hash_chain", json!({"input": "corral", "rounds": 1000}));
        let digest = result["structuredContent"]["digest"].as_str().unwrap_or_else(|| panic!("no digest: {result:#}"));
        assert!(digest.len() == 64 && digest.bytes().all(|b| b.is_ascii_hexdigit()), "digest {digest:?}");
        assert_eq!(result["structuredContent"]["rounds"], 1000);
        let again = mcp.call_tool("hash_chain", json!({"input": "corral", "rounds": 1000}));
        assert_eq!(again["structuredContent"]["digest"], digest, "same input, same digest");
    }

    fn hash_chain_beyond_its_manifest_fuel_is_fuel_exhausted(t: Transport) {
        let dir = plugins(&["hash"]);
        let mut mcp = serve(t, dir.path(), &[]);
        let result = mcp.call_tool("hash_chain", json!({"input": "corral", "rounds": 1_000_000}));
        let error = corral_error(&mut mcp, &result, "fuel-exhausted");
        assert_eq!(error["fuel"], 2_000_000_000u64, "the manifest's budget: {result:#}");
        assert_eq!(mcp.result("ping", json!({})), json!({}));
    }

    // -----------------------------------------------------------------------------------------
    // progress and logging

    fn progress_with_a_string_token_arrives_increasing_before_the_response(t: Transport) {
        assert_progress_before_response(t, json!("progress-1"));
    }

    fn progress_with_an_integer_token_arrives_increasing_before_the_response(t: Transport) {
        assert_progress_before_response(t, json!(42));
    }

    fn no_progress_without_a_progress_token(t: Transport) {
        let dir = plugins(&["ticker"]);
        let mut mcp = serve(t, dir.path(), &[]);
        let id = mcp.send_request("tools/call", json!({"name": "tick", "arguments": {"count": 4, "interval_ms": 30}}));
        let messages = messages_until_response(&mut mcp, &json!(id));
        assert_eq!(text_of(&mut mcp, &messages.last().unwrap()["result"]), "ticked 4 times");
        assert!(of_method(&messages, "notifications/progress").is_empty(), "progress without a token: {messages:#?}");
    }

    fn plugin_logs_arrive_as_info_messages_from_its_logger(t: Transport) {
        let dir = plugins(&["ticker"]);
        let mut mcp = serve(t, dir.path(), &[]);
        let messages = tick_messages(&mut mcp, 2);
        let logs = of_method(&messages, "notifications/message");
        assert!(!logs.is_empty(), "no notifications/message before the response: {messages:#?}");
        for log in &logs {
            assert_eq!(log["params"]["logger"], "ticker", "{log}");
            assert!(log["params"]["data"].is_string(), "{log}");
        }
        assert!(logs.iter().any(|l| l["params"]["level"] == "info"), "no info message: {logs:#?}");
    }

    fn set_level_warning_silences_info_messages(t: Transport) {
        let dir = plugins(&["ticker"]);
        let mut mcp = serve(t, dir.path(), &[]);
        assert_eq!(mcp.result("logging/setLevel", json!({"level": "warning"})), json!({}));
        let messages = tick_messages(&mut mcp, 2);
        let logs = of_method(&messages, "notifications/message");
        assert!(logs.is_empty(), "info logs passed a warning filter: {logs:#?}");
    }

    fn set_level_debug_lets_debug_messages_through(t: Transport) {
        let dir = plugins(&["ticker"]);
        let mut mcp = serve(t, dir.path(), &[]);
        assert_eq!(mcp.result("logging/setLevel", json!({"level": "debug"})), json!({}));
        let messages = tick_messages(&mut mcp, 2);
        let logs = of_method(&messages, "notifications/message");
        assert!(logs.iter().any(|l| l["params"]["level"] == "debug"), "no debug message: {logs:#?}");
    }

    fn set_level_with_an_unknown_level_is_invalid_params(t: Transport) {
        let dir = plugins(&["ticker"]);
        let mut mcp = serve(t, dir.path(), &[]);
        let response = mcp.request("logging/setLevel", json!({"level": "chatty"}));
        let (code, message) = rpc_error(&mut mcp, &response);
        assert_eq!(code, -32602, "{response}");
        assert!(message.contains("chatty"), "message should name the level: {message:?}");
    }

    // -----------------------------------------------------------------------------------------
    // cancellation, concurrency, limits

    fn cancelled_call_never_answers_and_the_host_keeps_serving(t: Transport) {
        let dir = plugins(&["text", "ticker"]);
        let mut mcp = serve(t, dir.path(), &[]);
        let id = mcp.send_request("tools/call", json!({"name": "tick", "arguments": {"count": 10000, "interval_ms": 50}}));
        mcp.wait_notification("notifications/message", TIMEOUT); // the tick is running
        mcp.notify("notifications/cancelled", json!({"requestId": id, "reason": "test"}));
        mcp.assert_no_response(id, Duration::from_millis(1500));
        assert_eq!(mcp.result("ping", json!({})), json!({}));
        let result = mcp.call_tool("echo", json!({"text": "after cancel"}));
        assert_eq!(text_of(&mut mcp, &result), "after cancel");
        mcp.assert_no_response(id, Duration::from_millis(100));
    }

    fn quick_requests_are_answered_while_a_slow_call_runs(t: Transport) {
        let dir = plugins(&["text", "ticker"]);
        let mut mcp = serve(t, dir.path(), &[]);
        let slow = mcp.send_request("tools/call", json!({"name": "tick", "arguments": {"count": 20, "interval_ms": 100}}));
        let ping = mcp.send_request("ping", json!({}));
        let echo = mcp.send_request("tools/call", json!({"name": "echo", "arguments": {"text": "fast"}}));
        let messages = messages_until_response(&mut mcp, &json!(slow));
        let at = |id: u64| messages.iter().position(|m| is_response(m, &json!(id)));
        let slow_at = at(slow).unwrap();
        assert!(at(ping).is_some_and(|p| p < slow_at), "ping answered after the slow tick: {messages:#?}");
        assert!(at(echo).is_some_and(|e| e < slow_at), "echo answered after the slow tick: {messages:#?}");
        assert_eq!(text_of(&mut mcp, &messages[slow_at]["result"]), "ticked 20 times");
    }

    fn calls_beyond_max_concurrency_wait_their_turn_and_succeed(t: Transport) {
        let dir = plugins(&["ticker"]);
        write_manifest(dir.path(), "ticker", "[limits]\nmax-concurrency = 1\n");
        let mut mcp = serve(t, dir.path(), &[]);
        let args = json!({"name": "tick", "arguments": {"count": 5, "interval_ms": 50}});
        let first = mcp.send_request("tools/call", args.clone());
        let second = mcp.send_request("tools/call", args);
        let messages = messages_until_responses(&mut mcp, &[json!(first), json!(second)]);
        for id in [first, second] {
            let response = messages.iter().find(|m| is_response(m, &json!(id))).unwrap();
            assert_eq!(text_of(&mut mcp, &response["result"]), "ticked 5 times", "call {id}: {response}");
        }
        // One at a time: the second call starts only after the first has finished. The host's
        // log has one writer, so its order is the order things happened (over HTTP the two
        // calls' notifications travel on two streams and may arrive interleaved).
        let (start, done) = ("tick: 5 ticks, 50 ms apart", "tick: ticked 5 times");
        let log = mcp.wait_stderr("both calls' logs", TIMEOUT, |s| s.matches(done).count() == 2);
        let order: Vec<&str> = log.lines().filter_map(|l| [start, done].into_iter().find(|m| l.contains(m))).collect();
        assert_eq!(order, [start, done, start, done], "the calls overlapped:\n{log}");
    }

    fn call_over_the_timeout_flag_is_a_timeout_error(t: Transport) {
        let dir = plugins(&["ticker"]);
        std::fs::remove_file(dir.path().join("ticker.toml")).unwrap(); // its 120 s would win
        let mut mcp = serve(t, dir.path(), &["--timeout", "300ms"]);
        let result = mcp.call_tool("tick", json!({"count": 100, "interval_ms": 100}));
        let error = corral_error(&mut mcp, &result, "timeout");
        assert_eq!(error["timeoutMs"], 300, "{result:#}");
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("time limit") && text.contains("tick"), "plain words: {text:?}");
        assert_eq!(mcp.result("ping", json!({})), json!({}));
    }

    // -----------------------------------------------------------------------------------------
    // process: shutdown and output channels

    /// Over HTTP, "closing stdin" is hanging up as a client and its service manager do:
    /// DELETE the session, then SIGTERM.
    fn closing_stdin_exits_cleanly_even_with_a_call_in_flight(t: Transport) {
        let dir = plugins(&["ticker"]);
        // The tick outlasts the shutdown grace (calls in flight get it to answer).
        let mut mcp = serve(t, dir.path(), &["--shutdown-grace", "1s"]);
        mcp.send_request("tools/call", json!({"name": "tick", "arguments": {"count": 10000, "interval_ms": 50}}));
        mcp.wait_notification("notifications/message", TIMEOUT); // the tick is running
        mcp.close_stdin();
        let status = mcp.wait_exit(Duration::from_secs(10));
        assert!(status.success(), "exit status {status}");
    }

    /// SIGTERM (a service manager stopping the host) cancels what runs and exits cleanly, even
    /// while the client is still connected.
    fn a_signal_exits_cleanly_even_with_a_call_in_flight(t: Transport) {
        let dir = plugins(&["ticker"]);
        // The tick outlasts the shutdown grace (calls in flight get it to answer).
        let mut mcp = serve(t, dir.path(), &["--shutdown-grace", "1s"]);
        mcp.send_request("tools/call", json!({"name": "tick", "arguments": {"count": 10000, "interval_ms": 50}}));
        mcp.wait_notification("notifications/message", TIMEOUT); // the tick is running
        mcp.terminate();
        let status = mcp.wait_exit(Duration::from_secs(10));
        assert!(status.success(), "exit status {status}");
    }

    fn logs_go_to_stderr_and_stdout_carries_only_protocol(t: Transport) {
        let dir = plugins(ALL);
        let mut mcp = serve(t, dir.path(), &["--log-level", "debug"]);
        // Work that logs a lot on the host side; any stray stdout line would fail the client
        // (over HTTP, any stdout output at all).
        tick_messages(&mut mcp, 3);
        mcp.call_tool("hash_chain", json!({"input": "x", "rounds": 10}));
        assert_eq!(mcp.result("ping", json!({})), json!({}));
        let stderr = mcp.wait_stderr("a `loaded` line per plugin", TIMEOUT, |s| {
            s.lines().filter(|l| l.contains("loaded")).count() >= 3
        });
        assert!(stderr.lines().any(|l| l.contains("loaded") && l.contains("text.wasm")), "stderr:\n{stderr}");
    }
}

// ---------------------------------------------------------------------------------------------
// stdio only: before `initialize`. Over HTTP there is no session before `initialize` (it mints
// the Mcp-Session-Id), so a request without one is refused with HTTP 400 and never reaches a
// session: "before initialize" has no meaning there.

mod stdio_only {
    use super::*;

    #[test]
    fn ping_works_before_initialize() {
        let dir = plugins(&["text"]);
        let mut mcp = spawn_serve(Transport::Stdio, dir.path(), &[]);
        assert_eq!(mcp.result("ping", json!({})), json!({}));
    }

    #[test]
    fn tools_list_before_initialize_is_invalid_request() {
        let dir = plugins(&["text"]);
        let mut mcp = spawn_serve(Transport::Stdio, dir.path(), &[]);
        let response = mcp.request("tools/list", json!({}));
        assert_eq!(rpc_error(&mut mcp, &response).0, -32600, "{response}");
    }

    #[test]
    fn server_discover_before_initialize_is_method_not_found_then_initialize_works() {
        let dir = plugins(&["text"]);
        let mut mcp = spawn_serve(Transport::Stdio, dir.path(), &[]);
        let response = mcp.request("server/discover", json!({}));
        assert_eq!(rpc_error(&mut mcp, &response).0, -32601, "{response}");
        let result = mcp.initialize();
        assert_eq!(result["protocolVersion"], "2025-11-25");
        assert!(mcp.result("tools/list", json!({}))["tools"].is_array());
    }
}

// ---------------------------------------------------------------------------------------------
// CLI: no transport involved

mod cli {
    use super::*;

    #[test]
    fn tools_command_prints_a_table() {
        let dir = plugins(ALL);
        let out = cli(&["tools", "--plugins", path_str(dir.path())], &[]);
        assert!(out.status.success(), "{out:?}");
        let header = out.stdout.lines().next().unwrap_or_default();
        for column in ["TOOL", "PLUGIN", "TASKS"] {
            assert!(header.contains(column), "header {header:?}");
        }
        let echo = out.stdout.lines().find(|l| l.split_whitespace().next() == Some("echo"));
        let echo = echo.unwrap_or_else(|| panic!("no row for echo:\n{}", out.stdout));
        assert!(echo.contains("text") && echo.contains("forbidden"), "echo row {echo:?}");
    }

    #[test]
    fn tools_command_json_lists_plugins_tools_and_no_refusals() {
        let dir = plugins(ALL);
        let out = cli(&["tools", "--plugins", path_str(dir.path()), "--json"], &[]);
        assert!(out.status.success(), "{out:?}");
        let report: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {out:?}"));
        assert_eq!(report["refused"], json!([]), "{report:#}");
        let mut names: Vec<&str> = Vec::new();
        for plugin in report["plugins"].as_array().expect("plugins array") {
            names.extend(plugin["tools"].as_array().expect("tools array").iter().map(|t| t["name"].as_str().unwrap()));
        }
        names.sort();
        assert_eq!(names, ALL_TOOLS, "{report:#}");
    }

    #[test]
    fn call_command_prints_the_result_and_exits_zero() {
        let dir = plugins(&["text"]);
        let out = cli(&["call", "--plugins", path_str(dir.path()), "echo", r#"{"text":"hi from the cli"}"#], &[]);
        assert!(out.status.success(), "{out:?}");
        let result: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {out:?}"));
        assert_eq!(result["content"][0]["text"], "hi from the cli", "{result:#}");
    }

    #[test]
    fn call_command_with_invalid_arguments_exits_one() {
        let dir = plugins(&["text"]);
        let out = cli(&["call", "--plugins", path_str(dir.path()), "echo", r#"{"text":5}"#], &[]);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let result: Value = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {out:?}"));
        assert_eq!(result["_meta"]["corral/error"]["kind"], "invalid-arguments", "{result:#}");
    }

    #[test]
    fn call_command_with_an_unknown_tool_exits_two_naming_it() {
        let dir = plugins(&["text"]);
        let out = cli(&["call", "--plugins", path_str(dir.path()), "nope", "{}"], &[]);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(out.stderr.contains("nope"), "stderr should name the tool: {out:?}");
    }

    #[test]
    fn compile_command_fills_the_cache_that_serving_then_uses() {
        let dir = plugins(&["text", "hash"]);
        let cache = tempfile::tempdir().unwrap();
        let with_cache = |args: &[&str]| {
            let mut all = args.to_vec();
            all.extend(["--plugins", path_str(dir.path()), "--cache-dir", path_str(cache.path())]);
            cli(&all, &[])
        };
        let first = with_cache(&["compile"]);
        assert!(first.status.success(), "{first:?}");
        assert_eq!(first.stdout.matches("compiled and cached").count(), 2, "{first:?}");
        let second = with_cache(&["compile"]);
        assert_eq!(second.stdout.matches("already cached").count(), 2, "{second:?}");

        // A damaged entry is found, discarded and rebuilt; the plugin loads regardless.
        let entries = std::fs::read_dir(cache.path()).unwrap().next().unwrap().unwrap().path();
        for entry in std::fs::read_dir(&entries).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "cwasm") {
                let bytes = std::fs::read(&path).unwrap();
                std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
            }
        }
        let tools = with_cache(&["tools", "--log-level", "warn"]);
        assert!(tools.status.success(), "{tools:?}");
        assert_eq!(tools.stderr.matches("discarded a cache entry").count(), 2, "{tools:?}");
        assert!(tools.stdout.lines().any(|l| l.starts_with("echo ")), "{tools:?}");
        assert_eq!(with_cache(&["compile"]).stdout.matches("already cached").count(), 2);

        // Something that is not a component fails `compile` with a non-zero exit.
        std::fs::write(dir.path().join("broken.wasm"), b"not wasm").unwrap();
        let broken = with_cache(&["compile"]);
        assert_eq!(broken.status.code(), Some(1), "{broken:?}");
        assert!(broken.stdout.contains("broken.wasm: refused"), "{broken:?}");
    }

    #[test]
    fn flags_are_read_from_the_environment() {
        let dir = plugins(&["text"]);
        let out = cli(&["tools"], &[("CORRAL_PLUGINS", path_str(dir.path()))]);
        assert!(out.status.success(), "{out:?}");
        assert!(out.stdout.lines().any(|l| l.starts_with("echo ")), "no echo row:\n{}", out.stdout);
    }
}

// ---------------------------------------------------------------------------------------------
// helpers

/// A temp dir with the named example plugins and their manifests.
fn plugins(names: &[&str]) -> TempDir {
    example_plugins(names)
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("UTF-8 temp path")
}

/// `corral serve --plugins DIR EXTRA...` over `transport`, not yet initialized.
fn spawn_serve(transport: Transport, dir: &Path, extra: &[&str]) -> McpProcess {
    let mut args = vec!["serve", "--plugins", path_str(dir)];
    args.extend_from_slice(extra);
    McpProcess::spawn_with(transport, &args)
}

/// `corral serve --plugins DIR EXTRA...` over `transport`, initialized.
fn serve(transport: Transport, dir: &Path, extra: &[&str]) -> McpProcess {
    let mut mcp = spawn_serve(transport, dir, extra);
    mcp.initialize();
    mcp
}

fn initialize_params(version: Value) -> Value {
    json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "stdio-tests", "version": "0"}})
}

/// The `(code, message)` of an error response; fails the test on a result.
fn rpc_error(mcp: &mut McpProcess, response: &Value) -> (i64, String) {
    match (response["error"]["code"].as_i64(), response["error"]["message"].as_str()) {
        (Some(code), Some(message)) => (code, message.to_string()),
        _ => mcp.fail(format!("expected a JSON-RPC error, got {response}")),
    }
}

/// The only text block of a successful CallToolResult.
fn text_of(mcp: &mut McpProcess, result: &Value) -> String {
    let ok = result.get("isError").is_none_or(|e| e == false);
    match (ok, result["content"].as_array().map(Vec::as_slice)) {
        (true, Some([block])) if block["type"] == "text" => block["text"].as_str().unwrap_or_default().to_string(),
        _ => mcp.fail(format!("expected a successful result with one text block, got {result:#}")),
    }
}

/// Asserts an `isError` result with a text block and `_meta["corral/error"].kind == kind`.
fn corral_error(mcp: &mut McpProcess, result: &Value, kind: &str) -> Value {
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    let error = &result["_meta"]["corral/error"];
    if result["isError"] != true || text.trim().is_empty() || error["kind"] != kind {
        mcp.fail(format!("expected an isError result of kind {kind:?}, got {result:#}"));
    }
    error.clone()
}

fn tool_names(list: &Value) -> Vec<&str> {
    list["tools"].as_array().expect("tools array").iter().map(|t| t["name"].as_str().expect("tool name")).collect()
}

fn is_response(message: &Value, id: &Value) -> bool {
    message.get("method").is_none() && message.get("id") == Some(id) && (message.get("result").is_some() || message.get("error").is_some())
}

fn of_method(messages: &[Value], method: &str) -> Vec<Value> {
    messages.iter().filter(|m| m["method"] == method).cloned().collect()
}

/// Every message in arrival order, up to and including the response to `id`.
fn messages_until_response(mcp: &mut McpProcess, id: &Value) -> Vec<Value> {
    messages_until_responses(mcp, std::slice::from_ref(id))
}

/// Every message in arrival order, until the responses to all `ids` have arrived.
fn messages_until_responses(mcp: &mut McpProcess, ids: &[Value]) -> Vec<Value> {
    let deadline = Instant::now() + TIMEOUT;
    let mut seen: Vec<Value> = Vec::new();
    while !ids.iter().all(|id| seen.iter().any(|m| is_response(m, id))) {
        match mcp.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Some(m) => seen.push(m),
            None => mcp.fail(format!("no response to all of {ids:?} within {TIMEOUT:?}")),
        }
    }
    seen
}

/// The response to a request sent by hand with `id` (for ids the client does not mint).
fn wait_raw_response(mcp: &mut McpProcess, id: &Value) -> Value {
    messages_until_response(mcp, id).pop().unwrap()
}

/// Runs a quick `tick` of `count` and returns what arrived up to its (successful) response.
fn tick_messages(mcp: &mut McpProcess, count: u64) -> Vec<Value> {
    let id = mcp.send_request("tools/call", json!({"name": "tick", "arguments": {"count": count, "interval_ms": 10}}));
    let messages = messages_until_response(mcp, &json!(id));
    assert_eq!(text_of(mcp, &messages.last().unwrap()["result"]), format!("ticked {count} times"));
    messages
}

fn assert_progress_before_response(transport: Transport, token: Value) {
    let dir = plugins(&["ticker"]);
    let mut mcp = serve(transport, dir.path(), &[]);
    let params = json!({"name": "tick", "arguments": {"count": 5, "interval_ms": 50}, "_meta": {"progressToken": token}});
    let id = mcp.send_request("tools/call", params);
    let messages = messages_until_response(&mut mcp, &json!(id));
    assert_eq!(text_of(&mut mcp, &messages.last().unwrap()["result"]), "ticked 5 times");
    let progress = of_method(&messages, "notifications/progress");
    assert!(!progress.is_empty(), "no progress before the response: {messages:#?}");
    let mut last = f64::NEG_INFINITY;
    for p in &progress {
        assert_eq!(p["params"]["progressToken"], token, "{p}");
        let value = p["params"]["progress"].as_f64().unwrap_or_else(|| panic!("no progress number: {p}"));
        assert!(value > last, "progress must increase: {progress:#?}");
        last = value;
    }
    // Nothing for this token after the response either.
    while let Some(m) = mcp.recv_timeout(Duration::from_millis(300)) {
        assert!(m["method"] != "notifications/progress", "progress after the response: {m}");
    }
}

#[derive(Debug)]
struct CliOutput {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// Runs `corral ARGS...` to completion (killing it after `TIMEOUT`).
fn cli(args: &[&str], env: &[(&str, &str)]) -> CliOutput {
    let mut child = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(args)
        .envs(env.iter().copied())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting corral");
    let read_all = |mut pipe: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut text = String::new();
            let _ = pipe.read_to_string(&mut text);
            text
        })
    };
    let stdout = read_all(Box::new(child.stdout.take().unwrap()));
    let stderr = read_all(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("corral {} did not finish within {TIMEOUT:?}", args.join(" "));
        }
        thread::sleep(Duration::from_millis(20));
    };
    CliOutput { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() }
}
