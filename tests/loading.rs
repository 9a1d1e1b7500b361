//! Loading off the request path: `corral serve` answers `initialize` and `ping` while
//! its plugins still load; a call of a tool whose plugin has loaded goes on at once, while
//! lists wait for every plugin, up to `--load-wait` (then they get the catalog as it stands,
//! and `list_changed` once the load is done); a request waiting for the load can be cancelled;
//! tasks recovered at start run as soon as their own plugin is in; what was refused is still
//! reported.
//!
//! A slow plugin is made deterministic here instead of merely big: its manifest is a FIFO, so
//! loading it blocks on reading the manifest until the test writes it. Until then the plugin
//! cannot have loaded, whatever the machine's speed.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{test_guests, write_plugin, Annotations, Fixture, McpProcess, TaskSupport, ToolDef, TIMEOUT};
use serde_json::{json, Value};

/// A plugin directory with `quick` (tool `quick_tool`) and `gated` (tool `gated_tool`), whose
/// manifest `gated.toml` is a FIFO: `gated` loads only once [`open_gate`] has run.
fn gated_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    write_plugin(dir.path(), "quick", &Fixture::new().tool(ToolDef::new("quick_tool").returns_text("quick")).build());
    write_plugin(dir.path(), "gated", &Fixture::new().tool(ToolDef::new("gated_tool").returns_text("gated")).build());
    let fifo = dir.path().join("gated.toml");
    let status = std::process::Command::new("mkfifo").arg(&fifo).status().expect("running mkfifo");
    assert!(status.success(), "mkfifo {} failed", fifo.display());
    (dir, fifo)
}

/// Writes an empty manifest into the FIFO: the blocked load of `gated` goes on.
fn open_gate(fifo: &Path) {
    std::fs::write(fifo, "").unwrap_or_else(|e| panic!("writing {}: {e}", fifo.display()));
}

fn serve(dir: &Path, extra: &[&str]) -> McpProcess {
    let mut args = vec!["serve", "--no-cache", "--log-level", "info", "--plugins", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    McpProcess::spawn(&args)
}

fn names(list: &Value) -> Vec<&str> {
    list["result"]["tools"].as_array().unwrap_or_else(|| panic!("not a tools/list answer: {list}")).iter().map(|t| t["name"].as_str().unwrap()).collect()
}

#[test]
fn initialize_is_answered_while_a_plugin_loads_and_tools_list_waits_for_it() {
    let (dir, fifo) = gated_dir();
    let mut mcp = serve(dir.path(), &[]);
    let init = mcp.initialize();
    assert!(init["protocolVersion"].is_string(), "{init}");
    assert!(!mcp.stderr_text().contains("gated.wasm"), "gated cannot have loaded yet:\n{}", mcp.stderr_text());

    let list = mcp.send_request("tools/list", json!({}));
    let call = mcp.send_request("tools/call", json!({ "name": "gated_tool", "arguments": {} }));
    // Both wait for the plugins; a ping sent after them is answered meanwhile.
    assert_eq!(mcp.result("ping", json!({})), json!({}));
    mcp.assert_no_response(list, Duration::from_millis(300));

    open_gate(&fifo);
    let list = mcp.wait_response(list, TIMEOUT);
    assert_eq!(names(&list), ["gated_tool", "quick_tool"], "{list}");
    let call = mcp.wait_response(call, TIMEOUT);
    assert_eq!(call["result"]["content"][0]["text"], "gated", "the call waited for its plugin instead of `unknown tool`: {call}");
    // Nobody saw a partial list, so nobody is told it changed.
    assert!(mcp.notifications().iter().all(|n| n["method"] != "notifications/tools/list_changed"), "{:?}", mcp.notifications());
}

#[test]
fn a_request_that_outwaits_load_wait_gets_the_catalog_as_it_stands_and_list_changed_follows() {
    let (dir, fifo) = gated_dir();
    let mut mcp = serve(dir.path(), &["--load-wait", "200ms"]);
    mcp.initialize();
    // `gated` waits for the gate, past the 200 ms bound: the first load's catalog is served
    // whole, so until then the list is empty.
    let partial = mcp.request("tools/list", json!({}));
    assert_eq!(names(&partial), Vec::<&str>::new(), "{partial}");

    open_gate(&fifo);
    mcp.wait_notification("notifications/tools/list_changed", TIMEOUT);
    let full = mcp.request("tools/list", json!({}));
    assert_eq!(names(&full), ["gated_tool", "quick_tool"], "{full}");
}

#[test]
fn a_list_that_outwaits_load_wait_shows_the_plugins_before_the_first_one_still_loading() {
    let (dir, fifo) = gated_dir();
    // `early` sorts before `gated`, `quick` after it: only `early` is final while `gated` loads
    // (a name `gated` declares would be its, not a later plugin's).
    write_plugin(dir.path(), "early", &Fixture::new().tool(ToolDef::new("early_tool").returns_text("early")).build());
    let mut mcp = serve(dir.path(), &["--load-wait", "200ms"]);
    mcp.initialize();
    // `quick` is served to a call all the same.
    let quick = mcp.request("tools/call", json!({ "name": "quick_tool", "arguments": {} }));
    assert_eq!(quick["result"]["content"][0]["text"], "quick", "{quick}");
    let partial = mcp.request("tools/list", json!({}));
    assert_eq!(names(&partial), ["early_tool"], "{partial}");

    open_gate(&fifo);
    mcp.wait_notification("notifications/tools/list_changed", TIMEOUT);
    let full = mcp.request("tools/list", json!({}));
    assert_eq!(names(&full), ["early_tool", "gated_tool", "quick_tool"], "{full}");
}

#[test]
fn a_broken_plugin_is_still_reported_when_loading_runs_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    write_plugin(dir.path(), "broken", b"not a component");
    write_plugin(dir.path(), "quick", &Fixture::new().tool(ToolDef::new("quick_tool").returns_text("quick")).build());
    let mut mcp = serve(dir.path(), &[]);
    mcp.initialize();
    let list = mcp.request("tools/list", json!({}));
    assert_eq!(names(&list), ["quick_tool"], "{list}");
    let stderr = mcp.wait_stderr("the refusal of `broken`", TIMEOUT, |s| s.contains("refused"));
    assert!(stderr.contains("plugin `broken`: not a valid component"), "stderr:\n{stderr}");
}

#[test]
fn a_call_of_a_loaded_plugin_is_answered_while_another_plugin_still_loads() {
    let (dir, fifo) = gated_dir();
    let mut mcp = serve(dir.path(), &[]);
    mcp.initialize();
    let list = mcp.send_request("tools/list", json!({}));
    let gated = mcp.send_request("tools/call", json!({ "name": "gated_tool", "arguments": {} }));
    // `quick` is in (it is a few kilobytes), `gated` cannot be: its call does not wait for it.
    let quick = mcp.request("tools/call", json!({ "name": "quick_tool", "arguments": {} }));
    assert_eq!(quick["result"]["content"][0]["text"], "quick", "{quick}");
    assert!(!mcp.stderr_text().contains("gated.wasm"), "gated cannot have loaded yet:\n{}", mcp.stderr_text());
    // The list still waits for every plugin, and so does the call of the tool not yet served.
    mcp.assert_no_response(list, Duration::from_millis(300));
    mcp.assert_no_response(gated, Duration::from_millis(10));

    open_gate(&fifo);
    assert_eq!(names(&mcp.wait_response(list, TIMEOUT)), ["gated_tool", "quick_tool"]);
    let gated = mcp.wait_response(gated, TIMEOUT);
    assert_eq!(gated["result"]["content"][0]["text"], "gated", "{gated}");
    assert!(mcp.notifications().iter().all(|n| n["method"] != "notifications/tools/list_changed"), "{:?}", mcp.notifications());
}

/// Over stdio with one request in flight at most: `request` (sent with `params`) waits for the
/// gated plugin; a cancel ends it with no answer and frees its slot, so a ping after it is
/// answered before the plugin loads, and nothing answers the cancelled request after.
fn a_cancel_ends_a_request_waiting_for_the_load(mut mcp: McpProcess, fifo: &Path, params: Value) {
    let waiting = mcp.send_request("tools/call", params.clone());
    mcp.assert_no_response(waiting, Duration::from_millis(200));
    mcp.notify("notifications/cancelled", json!({ "requestId": waiting, "reason": "gave up" }));
    assert_eq!(mcp.result("ping", json!({})), json!({}), "the cancelled request let its slot go");
    mcp.wait_stderr("the cancel", TIMEOUT, |s| s.contains("cancelled while waiting for the plugins to load"));
    assert!(!mcp.stderr_text().contains("gated.wasm"), "gated cannot have loaded yet:\n{}", mcp.stderr_text());

    open_gate(fifo);
    // Once `gated` is in, a new call of its tool works; the cancelled one stays unanswered.
    let after = mcp.request("tools/call", params);
    assert_eq!(after["result"]["content"][0]["text"], "gated", "{after}");
    mcp.assert_no_response(waiting, Duration::from_millis(300));
}

#[test]
fn a_cancel_ends_a_2025_11_25_request_waiting_for_the_load_at_once() {
    let (dir, fifo) = gated_dir();
    let mut mcp = serve(dir.path(), &["--max-in-flight", "1"]);
    mcp.initialize();
    a_cancel_ends_a_request_waiting_for_the_load(mcp, &fifo, json!({ "name": "gated_tool", "arguments": {} }));
}

#[test]
fn a_cancel_ends_a_2026_07_28_request_waiting_for_the_load_at_once() {
    let (dir, fifo) = gated_dir();
    let mcp = serve(dir.path(), &["--max-in-flight", "1"]);
    let envelope = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} });
    a_cancel_ends_a_request_waiting_for_the_load(mcp, &fifo, json!({ "name": "gated_tool", "arguments": {}, "_meta": envelope }));
}

#[test]
fn over_http_a_cancel_ends_the_stream_of_a_request_waiting_for_the_load() {
    let (dir, fifo) = gated_dir();
    let mut server = common::HttpServe::spawn(common::serve_command(dir.path(), ":memory:", &["--no-cache"]), TIMEOUT);
    let post = |session: Option<&str>, body: Value| {
        let mut request = ureq::post(&server.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", common::PROTOCOL_VERSION);
        if let Some(id) = session {
            request = request.header("mcp-session-id", id);
        }
        request.send(body.to_string()).unwrap_or_else(|e| panic!("POST {body}: {e}"))
    };
    let init = post(
        None,
        json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": common::PROTOCOL_VERSION, "capabilities": {}, "clientInfo": { "name": "loading", "version": "0" } } }),
    );
    let session = init.headers().get("mcp-session-id").expect("a session id").to_str().unwrap().to_owned();
    post(Some(&session), json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));

    let (done, ended) = std::sync::mpsc::channel();
    let (url, id) = (server.url.clone(), session.clone());
    std::thread::spawn(move || {
        let call = json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": { "name": "gated_tool", "arguments": {} } });
        let reply = ureq::post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", common::PROTOCOL_VERSION)
            .header("mcp-session-id", &id)
            .send(call.to_string());
        let _ = done.send(reply.map(|mut r| r.body_mut().read_to_string().unwrap_or_default()).map_err(|e| e.to_string()));
    });
    assert!(ended.recv_timeout(Duration::from_millis(300)).is_err(), "the call waits for its plugin");
    post(Some(&session), json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 7, "reason": "gave up" } }));
    let body = ended.recv_timeout(TIMEOUT).expect("the cancelled call's stream ended while the plugin still loads").unwrap();
    assert!(!body.contains("\"result\"") && !body.contains("\"error\""), "a cancelled request is not answered: {body}");
    assert!(!server.stderr.lock().unwrap().contains("gated.wasm"), "gated cannot have loaded yet");
    open_gate(&fifo);
    let _ = server.child.kill();
    let _ = server.child.wait();
}

#[test]
fn a_task_recovered_at_start_runs_as_soon_as_its_own_plugin_is_in() {
    let db = tempfile::tempdir().unwrap();
    let db = db.path().join("tasks.db");
    let work = |body: Option<&str>| {
        let tool = ToolDef::new("work")
            .task_support(TaskSupport::Optional)
            .annotations(Annotations { idempotent: Some(true), ..Annotations::default() })
            .returns_text("done");
        Fixture::new().tool(match body {
            Some(body) => tool.body(body),
            None => tool,
        })
    };
    // The first host starts a task whose run never ends and dies under it.
    let first = tempfile::tempdir().unwrap();
    write_plugin(first.path(), "quick", &work(Some("(loop $l (br $l)) unreachable")).build());
    let mut mcp = serve(first.path(), &["--db", db.to_str().unwrap(), "--fuel", "1000000000000000"]);
    mcp.initialize();
    let created = mcp.result("tools/call", json!({ "name": "work", "arguments": {}, "task": {} }));
    let task = created["task"]["taskId"].as_str().unwrap_or_else(|| panic!("{created}")).to_owned();
    common::wait_until("a worker to start the task", TIMEOUT, || {
        let db = rusqlite::Connection::open(&db).unwrap();
        db.query_row("SELECT started_at IS NOT NULL FROM tasks WHERE id = ?1", [&task], |r| r.get::<_, bool>(0)).unwrap()
    });
    assert_eq!(mcp.result("tasks/get", json!({ "taskId": task }))["status"], "working");
    drop(mcp); // SIGKILL

    // The next host has the same tool, now quick, beside a plugin that cannot load yet.
    let (dir, fifo) = gated_dir();
    write_plugin(dir.path(), "quick", &work(None).build());
    let mut mcp = serve(dir.path(), &["--db", db.to_str().unwrap()]);
    mcp.initialize();
    let deadline = std::time::Instant::now() + TIMEOUT;
    let ended = loop {
        let got = mcp.result("tasks/get", json!({ "taskId": task }));
        if got["status"] != "working" {
            break got;
        }
        assert!(std::time::Instant::now() < deadline, "the recovered task never ended: {got}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(ended["status"], "completed", "work is idempotent, so it ran again: {ended}");
    let result = mcp.result("tasks/result", json!({ "taskId": task }));
    assert_eq!(result["content"][0]["text"], "done", "{result}");
    assert!(!mcp.stderr_text().contains("gated.wasm"), "gated cannot have loaded yet:\n{}", mcp.stderr_text());
    open_gate(&fifo);
}

/// `corral serve` over `dir` with the compile cache in `cache`, until `tools/list` answers: the
/// tool names and the host's stderr.
fn list_with_cache(dir: &Path, cache: &Path) -> (Vec<String>, String) {
    let mut mcp = McpProcess::spawn(&["serve", "--log-level", "debug", "--plugins", dir.to_str().unwrap(), "--cache-dir", cache.to_str().unwrap()]);
    mcp.initialize();
    let list = mcp.request("tools/list", json!({}));
    let tools = names(&list).into_iter().map(str::to_owned).collect();
    mcp.close_stdin();
    mcp.wait_exit(TIMEOUT);
    (tools, mcp.stderr_text())
}

#[test]
fn the_tool_list_is_cached_with_the_compiled_code_and_a_stale_entry_is_never_used() {
    const FROM_CACHE: &str = "tool list from the compile cache";
    let (dir, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let version = |tool: &str| Fixture::new().tool(ToolDef::new(tool).returns_text(tool)).build();
    write_plugin(dir.path(), "p", &version("one"));
    let (tools, stderr) = list_with_cache(dir.path(), cache.path());
    assert_eq!(tools, ["one"]);
    assert!(!stderr.contains(FROM_CACHE), "a cold cache has no tool list:\n{stderr}");
    let (tools, stderr) = list_with_cache(dir.path(), cache.path());
    assert_eq!(tools, ["one"]);
    assert!(stderr.contains(FROM_CACHE), "a warm start lists tools from the cache:\n{stderr}");

    // A new version of the component has another key: the old list is never used for it.
    write_plugin(dir.path(), "p", &version("two"));
    let (tools, stderr) = list_with_cache(dir.path(), cache.path());
    assert_eq!(tools, ["two"], "{stderr}");
    assert!(!stderr.contains(FROM_CACHE), "{stderr}");

    // A corrupt entry is ignored (and rewritten), never served.
    let entries: Vec<PathBuf> = walk(cache.path()).into_iter().filter(|p| p.to_string_lossy().ends_with(".tools.json")).collect();
    assert_eq!(entries.len(), 2, "one tool list per component: {entries:?}");
    for entry in &entries {
        std::fs::write(entry, "{\"format\":").unwrap();
    }
    let (tools, stderr) = list_with_cache(dir.path(), cache.path());
    assert_eq!(tools, ["two"], "{stderr}");
    assert!(!stderr.contains(FROM_CACHE), "{stderr}");
    let (_, stderr) = list_with_cache(dir.path(), cache.path());
    assert!(stderr.contains(FROM_CACHE), "the rewritten entry serves again:\n{stderr}");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// `corral serve` over `dir` with the compile cache in `cache`: `resources/list`,
/// `resources/templates/list` and `prompts/list` as answered, and the host's stderr.
fn surface_with_cache(dir: &Path, cache: &Path) -> ([Value; 3], String) {
    let mut mcp = McpProcess::spawn(&["serve", "--log-level", "debug", "--plugins", dir.to_str().unwrap(), "--cache-dir", cache.to_str().unwrap()]);
    mcp.initialize();
    let lists = ["resources/list", "resources/templates/list", "prompts/list"].map(|method| mcp.result(method, json!({})));
    mcp.close_stdin();
    mcp.wait_exit(TIMEOUT);
    (lists, mcp.stderr_text())
}

#[test]
fn resources_templates_and_prompts_are_cached_with_the_tool_list_and_a_warm_start_lists_them_from_there() {
    let (dir, cache) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::copy(test_guests().join("conformance.wasm"), dir.path().join("conformance.wasm")).unwrap();
    let (cold, stderr) = surface_with_cache(dir.path(), cache.path());
    assert!(!stderr.contains("tool list from the compile cache"), "{stderr}");
    let [resources, templates, prompts] = &cold;
    assert!(!resources["resources"].as_array().unwrap().is_empty(), "the guest lists resources: {resources}");
    assert!(!templates["resourceTemplates"].as_array().unwrap().is_empty(), "{templates}");
    assert!(!prompts["prompts"].as_array().unwrap().is_empty(), "{prompts}");

    // Mark the cached answers: a warm start that served the guest's own would not show the marks.
    let entries: Vec<PathBuf> = walk(cache.path()).into_iter().filter(|p| p.to_string_lossy().ends_with(".tools.json")).collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let mut entry: Value = serde_json::from_str(&std::fs::read_to_string(&entries[0]).unwrap()).unwrap();
    for (list, field) in [("resources", "name"), ("templates", "name"), ("prompts", "description")] {
        entry[list][0][field] = json!(format!("cached {list}"));
    }
    std::fs::write(&entries[0], entry.to_string()).unwrap();

    let (warm, stderr) = surface_with_cache(dir.path(), cache.path());
    assert!(stderr.contains("tool list from the compile cache"), "{stderr}");
    let [resources, templates, prompts] = &warm;
    assert!(resources["resources"].as_array().unwrap().iter().any(|r| r["name"] == "cached resources"), "listed from the cache: {resources}");
    assert!(templates["resourceTemplates"].as_array().unwrap().iter().any(|t| t["name"] == "cached templates"), "{templates}");
    assert!(prompts["prompts"].as_array().unwrap().iter().any(|p| p["description"] == "cached prompts"), "{prompts}");
    // Apart from the marks, the same lists.
    assert_eq!(resources["resources"].as_array().unwrap().len(), cold[0]["resources"].as_array().unwrap().len());
    assert_eq!(prompts["prompts"].as_array().unwrap().len(), cold[2]["prompts"].as_array().unwrap().len());
}
