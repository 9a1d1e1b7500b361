//! Hot reload (`serve --watch`): plugins replaced, broken, removed and added on disk while
//! sessions and tasks are live, over both transports.

#[macro_use]
mod common;

use std::path::Path;

use common::{example_dist, example_plugins, McpProcess, Transport, TIMEOUT};
use serde_json::json;

const LIST_CHANGED: &str = "notifications/tools/list_changed";

fn serve_watched(t: Transport, dir: &Path) -> McpProcess {
    let mut mcp = McpProcess::spawn_with(t, &["serve", "--watch", "--log-level", "debug", "--plugins", dir.to_str().unwrap()]);
    let init = mcp.initialize();
    assert_eq!(init["capabilities"]["tools"]["listChanged"], true, "--watch announces list changes: {init}");
    // `initialize` is answered while the plugins load; `tools/list` waits for the first load, so
    // what a test writes next is a reload, never a file the first load reads half-written.
    mcp.result("tools/list", json!({}));
    mcp
}

fn tool_names(mcp: &mut McpProcess) -> Vec<String> {
    let list = mcp.result("tools/list", json!({}));
    list["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

/// Replaces `to` the way a build tool does: write a temporary file, then rename it over.
fn replace_with(to: &Path, bytes: &[u8]) {
    let tmp = to.with_file_name(format!(".{}.tmp", to.file_name().unwrap().to_str().unwrap()));
    std::fs::write(&tmp, bytes).unwrap();
    std::fs::rename(&tmp, to).unwrap();
}

fn example_bytes(name: &str) -> Vec<u8> {
    std::fs::read(example_dist().join(format!("{name}.wasm"))).unwrap()
}

fn start_countdown(mcp: &mut McpProcess, from: u64) -> String {
    let created = mcp.result("tools/call", json!({ "name": "countdown", "arguments": { "from": from, "interval_ms": 100 }, "task": {} }));
    created["task"]["taskId"].as_str().unwrap().to_owned()
}

fn list_changes(mcp: &mut McpProcess) -> usize {
    mcp.notifications().iter().filter(|n| n["method"] == LIST_CHANGED).count()
}

scenarios! {
    fn without_watch_the_tool_list_is_fixed(t: Transport) {
        let dir = example_plugins(&["text"]);
        let mut mcp = McpProcess::spawn_with(t, &["serve", "--plugins", dir.path().to_str().unwrap()]);
        let init = mcp.initialize();
        assert_eq!(init["capabilities"]["tools"]["listChanged"], false);
    }

    fn a_replaced_plugin_serves_new_calls_while_its_running_task_finishes_on_the_old_version(t: Transport) {
        let dir = example_plugins(&["ticker"]);
        let mut mcp = serve_watched(t, dir.path());
        let task = start_countdown(&mut mcp, 15);

        // The new version of `ticker` is a different component with different tools.
        replace_with(&dir.path().join("ticker.wasm"), &example_bytes("text"));
        mcp.wait_notification(LIST_CHANGED, TIMEOUT);
        let tools = tool_names(&mut mcp);
        assert_eq!(tools, ["echo", "word_count"], "the new version's tools replace the old ones");
        let echoed = mcp.call_tool("echo", json!({ "text": "new version" }));
        assert_eq!(echoed["content"][0]["text"], "new version");

        assert_eq!(mcp.result("tasks/get", json!({ "taskId": task }))["status"], "working", "the old version is still running the task");
        let result = mcp.result("tasks/result", json!({ "taskId": task }));
        assert_eq!(result["content"][0]["text"], "counted down from 15", "the task finished on the version it started on: {result}");
    }

    fn a_broken_replacement_keeps_the_old_version_serving(t: Transport) {
        let dir = example_plugins(&["ticker"]);
        let mut mcp = serve_watched(t, dir.path());
        let good = example_bytes("ticker");
        let file = dir.path().join("ticker.wasm");

        // Half a component, as an interrupted compiler leaves it.
        std::fs::write(&file, &good[..good.len() / 2]).unwrap();
        let log = mcp.wait_stderr("the refusal of the broken version", TIMEOUT, |log| log.contains("new version refused"));
        let line = log.lines().find(|l| l.contains("new version refused")).unwrap();
        assert!(line.contains("plugin=ticker") && line.contains("not a valid component"), "the log names plugin and cause: {line}");
        assert_eq!(tool_names(&mut mcp), ["countdown", "tick"]);
        let ticked = mcp.call_tool("tick", json!({ "count": 1, "interval_ms": 1 }));
        assert_eq!(ticked["content"][0]["text"], "ticked 1 times", "the old version still serves: {ticked}");
        assert_eq!(list_changes(&mut mcp), 0, "nothing changed for clients");

        // A manifest the host cannot accept is refused the same way.
        std::fs::write(dir.path().join("ticker.toml"), "[limits]\ntimeout = \"soon\"\n").unwrap();
        mcp.wait_stderr("the refusal of the broken manifest", TIMEOUT, |log| log.contains("[limits] timeout"));
        assert_eq!(tool_names(&mut mcp), ["countdown", "tick"]);

        // Once both are whole again, the plugin reloads and clients hear of it.
        std::fs::write(dir.path().join("ticker.toml"), "[limits]\ntimeout = \"60s\"\n").unwrap();
        replace_with(&file, &good);
        mcp.wait_notification(LIST_CHANGED, TIMEOUT);
        assert_eq!(tool_names(&mut mcp), ["countdown", "tick"]);
    }

    fn a_removed_plugin_loses_its_tools_and_its_running_task_stays_retrievable(t: Transport) {
        let dir = example_plugins(&["ticker", "text"]);
        let mut mcp = serve_watched(t, dir.path());
        let task = start_countdown(&mut mcp, 10);

        std::fs::remove_file(dir.path().join("ticker.wasm")).unwrap();
        mcp.wait_notification(LIST_CHANGED, TIMEOUT);
        assert_eq!(tool_names(&mut mcp), ["echo", "word_count"]);
        let refused = mcp.request("tools/call", json!({ "name": "tick", "arguments": {} }));
        assert!(refused["error"]["message"].as_str().unwrap().contains("unknown tool `tick`"), "{refused}");

        let result = mcp.result("tasks/result", json!({ "taskId": task }));
        assert_eq!(result["content"][0]["text"], "counted down from 10");
        assert_eq!(mcp.result("tasks/get", json!({ "taskId": task }))["status"], "completed");
        let listed = mcp.result("tasks/list", json!({}));
        assert!(listed["tasks"].as_array().unwrap().iter().any(|t| t["taskId"] == task.as_str()), "{listed}");
    }

    fn a_new_plugin_file_is_served_and_announced(t: Transport) {
        let dir = example_plugins(&["text"]);
        let mut mcp = serve_watched(t, dir.path());
        std::fs::copy(example_dist().join("hash.wasm"), dir.path().join("hash.wasm")).unwrap();
        mcp.wait_notification(LIST_CHANGED, TIMEOUT);
        assert_eq!(tool_names(&mut mcp), ["echo", "hash_chain", "word_count"]);
        // Files that are not plugins (an editor's backup, a hidden temporary) change nothing,
        // and neither does the host reading the plugin it just loaded.
        std::fs::write(dir.path().join("notes.txt"), "x").unwrap();
        std::fs::write(dir.path().join(".hash.wasm.swp"), "x").unwrap();
        // A barrier: a change that is announced, after anything the writes above caused (the
        // watcher reloads one batch after the other, and announces in that order).
        std::fs::remove_file(dir.path().join("hash.wasm")).unwrap();
        mcp.wait_notification(LIST_CHANGED, TIMEOUT);
        assert_eq!(tool_names(&mut mcp), ["echo", "word_count"], "the announced change was the barrier's");
        assert_eq!(list_changes(&mut mcp), 0, "no further change was announced: {:?}", mcp.notifications());
    }

    fn a_plugin_refused_for_a_taken_name_loads_once_the_other_is_removed(t: Transport) {
        let dir = example_plugins(&[]);
        std::fs::write(dir.path().join("a.wasm"), example_bytes("text")).unwrap();
        std::fs::write(dir.path().join("b.wasm"), example_bytes("text")).unwrap();
        let mut mcp = serve_watched(t, dir.path());
        assert_eq!(tool_names(&mut mcp), ["echo", "word_count"], "b is refused: a took the names first");

        // Another plugin arriving gives b another chance (still refused); reading b for that
        // retry must not wake the watcher into retrying forever.
        std::fs::copy(example_dist().join("hash.wasm"), dir.path().join("hash.wasm")).unwrap();
        mcp.wait_notification(LIST_CHANGED, TIMEOUT);
        // A barrier: a change of its own, reloaded after anything reading b caused (the watcher
        // reloads one batch after the other); it too gives b a chance.
        std::fs::write(dir.path().join("hash.toml"), "[limits]\ntimeout = \"20s\"\n").unwrap();
        mcp.wait_notification(LIST_CHANGED, TIMEOUT);
        let refusals = mcp.stderr_text().matches("plugin `b`: tool `echo`: the name is already taken").count();
        assert_eq!(refusals, 3, "at start and once on each change:\n{}", mcp.stderr_text());

        std::fs::remove_file(dir.path().join("a.wasm")).unwrap();
        mcp.wait_notification(LIST_CHANGED, TIMEOUT);
        let echoed = mcp.call_tool("echo", json!({ "text": "served by b" }));
        assert_eq!(echoed["content"][0]["text"], "served by b");
        // Loading b reads it, which the watcher sees; that is not a change. The barrier again.
        std::fs::remove_file(dir.path().join("hash.toml")).unwrap();
        mcp.wait_notification(LIST_CHANGED, TIMEOUT);
        assert_eq!(list_changes(&mut mcp), 0, "{:?}", mcp.notifications());
        let reloads = mcp.stderr_text().matches("reloaded").count();
        assert_eq!(reloads, 4, "hash, its manifest, b, its manifest gone: each loaded once:\n{}", mcp.stderr_text());
    }
}
