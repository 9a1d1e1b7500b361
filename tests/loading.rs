//! Loading off the request path (issue 18): `corral serve` answers `initialize` and `ping` while
//! its plugins still load, and requests that need the plugins wait for them, up to
//! `--load-wait` (then they get the catalog as it stands, and `list_changed` once the load is
//! done); what was refused is still reported.
//!
//! A slow plugin is made deterministic here instead of merely big: its manifest is a FIFO, so
//! loading it blocks on reading the manifest until the test writes it. Until then the plugin
//! cannot have loaded, whatever the machine's speed.

#[macro_use]
mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{write_plugin, Fixture, McpProcess, ToolDef, TIMEOUT};
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
