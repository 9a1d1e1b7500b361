//! Hostile plugins, end to end through the real binary.
//!
//! Each test writes WAT-built components into a temp dir, runs `corral serve --plugins DIR` (or
//! `corral tools --plugins DIR --json`) and checks the host's answer precisely: the error kind in
//! `_meta["corral/error"]`, `isError`, and that the host still answers `ping` and serves
//! well-behaved tools afterwards.

mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};
use tempfile::TempDir;

// ---------------------------------------------------------------------------------------------
// helpers

/// The well-behaved plugin every serving test has next to the hostile one: `good.wasm` with tool
/// `echo`, which answers "good ok".
fn write_good_plugin(dir: &Path) {
    write_plugin(dir, "good", &Fixture::new().tool(ToolDef::new("echo").returns_text("good ok")).build());
}

/// A hostile plugin `NAME.wasm` holding `tool` plus a well-behaved sibling tool `sibling`.
fn write_hostile_plugin(dir: &Path, name: &str, fixture: Fixture) {
    let fixture = fixture.tool(ToolDef::new("sibling").returns_text("sibling ok"));
    write_plugin(dir, name, &fixture.build());
}

fn plugin_dir() -> TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// `corral serve --plugins DIR EXTRA...`, initialized.
fn serve(dir: &Path, extra: &[&str]) -> McpProcess {
    let dir = dir.to_str().unwrap();
    let mut args = vec!["serve", "--plugins", dir];
    args.extend_from_slice(extra);
    let mut mcp = McpProcess::spawn(&args);
    mcp.initialize();
    mcp
}

/// Asserts a failed call's shape and kind; returns `_meta["corral/error"]`.
fn assert_call_error(mcp: &mut McpProcess, result: &Value, kind: &str) -> Value {
    assert_call_error_of(mcp, result, &[kind])
}

/// Like [`assert_call_error`], for a failure the spec allows to be any of `kinds`.
fn assert_call_error_of(mcp: &mut McpProcess, result: &Value, kinds: &[&str]) -> Value {
    let kind = kinds.join("` or `");
    let check = || -> Result<Value, String> {
        if result["isError"] != json!(true) {
            return Err("isError is not true".into());
        }
        let content = result["content"].as_array().ok_or("content is not an array")?;
        if content.len() != 1 {
            return Err(format!("expected exactly one content block, got {}", content.len()));
        }
        if content[0]["type"] != "text" {
            return Err("content[0].type is not \"text\"".into());
        }
        let text = content[0]["text"].as_str().ok_or("content[0].text is not a string")?;
        if text.trim().is_empty() {
            return Err("content[0].text is empty".into());
        }
        let error = result["_meta"]["corral/error"].clone();
        if !error.is_object() {
            return Err("_meta[\"corral/error\"] is not an object".into());
        }
        if !kinds.iter().any(|k| error["kind"] == *k) {
            return Err(format!("kind is {}, expected `{kind}`", error["kind"]));
        }
        Ok(error)
    };
    match check() {
        Ok(error) => error,
        Err(why) => mcp.fail(format!("tools/call result is not a `{kind}` error: {why}\nresult: {result:#}")),
    }
}

/// Asserts a successful call whose only content is one text block; returns the text.
fn assert_call_ok_text(mcp: &mut McpProcess, result: &Value) -> String {
    let ok = result.get("isError").is_none_or(|e| e == &json!(false))
        && result["content"].as_array().is_some_and(|c| c.len() == 1)
        && result["content"][0]["type"] == "text"
        && result["content"][0]["text"].is_string();
    if !ok {
        mcp.fail(format!("expected a successful tools/call result with one text block, got {result:#}"));
    }
    result["content"][0]["text"].as_str().unwrap().to_string()
}

/// `ping` answers `{}`, the hostile plugin's sibling tool (if `sibling`) and the good plugin's
/// `echo` still work.
fn assert_host_healthy(mcp: &mut McpProcess, sibling: bool) {
    let pong = mcp.request("ping", json!({}));
    if pong.get("result") != Some(&json!({})) {
        mcp.fail(format!("ping after the failure did not answer {{}}: {pong}"));
    }
    if sibling {
        let result = mcp.call_tool("sibling", json!({}));
        assert_eq!(assert_call_ok_text(mcp, &result), "sibling ok", "sibling tool in the same plugin");
    }
    let result = mcp.call_tool("echo", json!({}));
    assert_eq!(assert_call_ok_text(mcp, &result), "good ok", "tool of the good plugin");
}

/// Serves DIR (with the good plugin), calls `tool` with `{}`, asserts error `kind`, then health.
fn call_expecting_error(dir: &Path, extra: &[&str], tool: &str, kind: &str) -> Value {
    call_expecting_error_of(dir, extra, tool, &[kind])
}

/// Like [`call_expecting_error`], for a failure the spec allows to be any of `kinds`.
fn call_expecting_error_of(dir: &Path, extra: &[&str], tool: &str, kinds: &[&str]) -> Value {
    let mut mcp = serve(dir, extra);
    let result = mcp.call_tool(tool, json!({}));
    let error = assert_call_error_of(&mut mcp, &result, kinds);
    assert_host_healthy(&mut mcp, true);
    error
}

/// `corral tools --plugins DIR --json`, parsed.
fn tools_json(dir: &Path) -> Value {
    let exe = env!("CARGO_BIN_EXE_corral");
    let output = run_with_timeout(std::process::Command::new(exe).args(["tools", "--plugins", dir.to_str().unwrap(), "--json"]), TIMEOUT);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "corral tools --json failed: {}\nstdout:\n{stdout}\nstderr:\n{stderr}", output.status);
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("corral tools --json printed no JSON ({e}):\n{stdout}\nstderr:\n{stderr}"))
}

fn run_with_timeout(cmd: &mut std::process::Command, timeout: Duration) -> std::process::Output {
    use std::process::Stdio;
    let child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("spawn corral");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let out = child.wait_with_output();
        let _ = tx.send(());
        out
    });
    if rx.recv_timeout(timeout).is_err() {
        // Kill exactly the child we started.
        let _ = std::process::Command::new("kill").args(["-9", &pid.to_string()]).status();
        panic!("corral did not finish within {timeout:?}");
    }
    waiter.join().unwrap().expect("wait for corral")
}

/// The single refusal for `plugin`; panics (showing the whole report) unless there is exactly one.
fn refusal<'a>(report: &'a Value, plugin: &str) -> &'a Value {
    let refused = report["refused"].as_array().unwrap_or_else(|| panic!("no `refused` array in {report:#}"));
    let mine: Vec<&Value> = refused.iter().filter(|r| r["plugin"] == plugin).collect();
    assert_eq!(mine.len(), 1, "expected one refusal for plugin {plugin:?} in {report:#}");
    for key in ["plugin", "tool", "kind", "message"] {
        assert!(mine[0].get(key).is_some(), "refusal lacks {key:?}: {:#}", mine[0]);
    }
    assert!(mine[0]["message"].as_str().is_some_and(|m| !m.trim().is_empty()), "refusal without message: {:#}", mine[0]);
    mine[0]
}

fn plugin_names(report: &Value) -> Vec<String> {
    report["plugins"]
        .as_array()
        .unwrap_or_else(|| panic!("no `plugins` array in {report:#}"))
        .iter()
        .map(|p| p["name"].as_str().unwrap_or_else(|| panic!("plugin without name: {p:#}")).to_string())
        .collect()
}

fn listed_tool_names(mcp: &mut McpProcess) -> Vec<String> {
    let list = mcp.result("tools/list", json!({}));
    let mut names: Vec<String> = list["tools"].as_array().expect("tools array").iter().map(|t| t["name"].as_str().unwrap().to_string()).collect();
    names.sort();
    names
}

/// Asserts a refusal's kind, tool and that its message contains each of `needles`.
fn assert_refusal(report: &Value, plugin: &str, kind: &str, tool: Option<&str>, needles: &[&str]) {
    let r = refusal(report, plugin);
    assert_eq!(r["kind"], kind, "refusal kind for {plugin:?}: {r:#}");
    assert_eq!(r["tool"], json!(tool), "refusal `tool` for {plugin:?}: {r:#}");
    let message = r["message"].as_str().unwrap();
    for needle in needles {
        assert!(message.contains(needle), "refusal message for {plugin:?} should mention {needle:?}: {message:?}");
    }
    assert!(!plugin_names(report).iter().any(|n| n == plugin), "refused plugin {plugin:?} is also listed as loaded: {report:#}");
}

/// Loops forever without calling the host.
const SPIN: &str = "(loop $l (br $l)) unreachable";

/// Fuel so large that a spinning guest meets its deadline first (the default, 1e10, runs out
/// after about two seconds of spinning, which would race a 2 s timeout).
const HUGE_FUEL: &str = "1000000000000000";

/// Ten million loop iterations (some 5e7 fuel, tens of milliseconds), then returns normally:
/// well within the default fuel, far beyond a budget of 1e6.
const BUSY: &str = "(local.set $i (i32.const 10000000)) \
    (loop $l (local.set $i (i32.sub (local.get $i) (i32.const 1))) (br_if $l (local.get $i)))";

/// Grows memory by 512 pages (32 MiB) and traps if the host refuses, as an allocator would.
const GROW_32MIB: &str = "(if (i32.eq (memory.grow (i32.const 512)) (i32.const -1)) (then unreachable))";

/// Grows memory by 128 pages (8 MiB), trapping if refused.
const GROW_8MIB: &str = "(if (i32.eq (memory.grow (i32.const 128)) (i32.const -1)) (then unreachable))";

/// What a result the host cannot even read (a pointer outside guest memory) may be reported as.
/// The spec names no kind for it: wasmtime fails the lift with an error that is not a wasm trap,
/// so either "the result is unusable" or "any other trap" fits.
const BOGUS_RESULT_KINDS: &[&str] = &["invalid-output", "trap"];

/// Asserts the explanation a bogus-result failure carries (`trap` or `reason` text).
fn assert_bogus_result_explained(error: &Value) {
    let text = error["trap"].as_str().or(error["reason"].as_str()).unwrap_or("");
    assert!(!text.trim().is_empty(), "a bogus result should be explained in `trap` or `reason`: {error:#}");
}

/// A function that recurses without end (the stack overflows).
const RECURSE: &str = "(func $recurse (param $n i32) (result i32) \
    (i32.add (call $recurse (i32.add (local.get $n) (i32.const 1))) (i32.const 1)))";

// ---------------------------------------------------------------------------------------------
// the fixture builder itself (no host needed)

mod fixture_selftest {
    use super::*;
    use wasmtime::component::{Component, Linker, Val};
    use wasmtime::{Engine, Store};

    fn val_to_json(v: &Val) -> Value {
        match v {
            Val::Bool(b) => json!(b),
            Val::U8(n) => json!(n),
            Val::U32(n) => json!(n),
            Val::String(s) => json!(s),
            Val::List(items) => Value::Array(items.iter().map(val_to_json).collect()),
            Val::Record(fields) => Value::Object(fields.iter().map(|(k, v)| (k.clone(), val_to_json(v))).collect()),
            Val::Option(None) => Value::Null,
            Val::Option(Some(v)) => val_to_json(v),
            Val::Enum(case) => json!(case),
            Val::Variant(case, payload) => json!({ case: payload.as_deref().map(val_to_json) }),
            other => panic!("unexpected value {other:?}"),
        }
    }

    /// Instantiates the component in a bare wasmtime (host `cancelled` answers true) and returns
    /// (list-tools, call-tool for each name) lifted to JSON.
    fn run(bytes: &[u8], calls: &[&str]) -> (Value, Vec<Result<Value, String>>) {
        let engine = Engine::default();
        let component = Component::new(&engine, bytes).expect("component compiles");
        let mut linker = Linker::<()>::new(&engine);
        let mut host = linker.instance("corral:plugin/host@0.1.0").unwrap();
        host.func_new("cancelled", |_, _, _, results| {
            results[0] = Val::Bool(true);
            Ok(())
        })
        .unwrap();
        host.func_new("log", |_, _, _, _| Ok(())).unwrap();
        host.func_new("progress", |_, _, _, _| Ok(())).unwrap();

        let lifted_list = {
            let mut store = Store::new(&engine, ());
            let instance = linker.instantiate(&mut store, &component).expect("instantiate");
            let tools = instance.get_export_index(&mut store, None, "corral:plugin/tools@0.1.0").expect("tools export");
            let idx = instance.get_export_index(&mut store, Some(&tools), "list-tools").unwrap();
            let f = instance.get_func(&mut store, idx).unwrap();
            let mut results = [Val::Bool(false)];
            f.call(&mut store, &[], &mut results).expect("list-tools");
            val_to_json(&results[0])
        };
        let calls = calls
            .iter()
            .map(|name| {
                let mut store = Store::new(&engine, ());
                let instance = linker.instantiate(&mut store, &component).expect("instantiate");
                let tools = instance.get_export_index(&mut store, None, "corral:plugin/tools@0.1.0").unwrap();
                let idx = instance.get_export_index(&mut store, Some(&tools), "call-tool").unwrap();
                let f = instance.get_func(&mut store, idx).unwrap();
                let mut results = [Val::Bool(false)];
                f.call(&mut store, &[Val::String(name.to_string()), Val::String("{}".into())], &mut results)
                    .map(|_| val_to_json(&results[0]))
                    .map_err(|e| format!("{e:?}"))
            })
            .collect();
        (lifted_list, calls)
    }

    #[test]
    fn fixture_layout_round_trips_through_the_canonical_abi() {
        let full = ToolDef::new("full")
            .title("Full")
            .description("every field set")
            .input_schema(r#"{"type":"object","properties":{"n":{"type":"integer"}}}"#)
            .output_schema(r#"{"type":"object"}"#)
            .annotations(Annotations { title: Some("Ann".into()), read_only: Some(true), destructive: Some(false), idempotent: None, open_world: Some(true) })
            .task_support(TaskSupport::Required)
            .returns(CallResult::text("hello").structured(r#"{"a":1}"#).is_error(true));
        let bare = ToolDef::new("bare").task_support(TaskSupport::Optional);
        let two = ToolDef::new("two").returns(CallResult {
            content: vec![
                Content::Text("one".into()),
                Content::Text(Payload::Zeroed(3)),
                Content::Text(Payload::SharedZeroed(2)),
                Content::Text(Payload::Zeroed(1)),
                Content::Text(Payload::SharedZeroed(4)),
            ],
            structured: None,
            is_error: false,
        });
        let bytes = Fixture::new().tool(full).tool(bare).tool(two).build();
        let (list, calls) = run(&bytes, &["full", "bare", "two"]);

        let none_ann = json!({"title": null, "read-only": null, "destructive": null, "idempotent": null, "open-world": null});
        assert_eq!(
            list,
            json!([
                {
                    "name": "full", "title": "Full", "description": "every field set",
                    "input-schema": r#"{"type":"object","properties":{"n":{"type":"integer"}}}"#,
                    "output-schema": r#"{"type":"object"}"#,
                    "annotations": {"title": "Ann", "read-only": true, "destructive": false, "idempotent": null, "open-world": true},
                    "task-support": "required",
                },
                {
                    "name": "bare", "title": null, "description": "test tool bare",
                    "input-schema": r#"{"type":"object"}"#, "output-schema": null,
                    "annotations": none_ann, "task-support": "optional",
                },
                {
                    "name": "two", "title": null, "description": "test tool two",
                    "input-schema": r#"{"type":"object"}"#, "output-schema": null,
                    "annotations": none_ann, "task-support": "forbidden",
                },
            ])
        );
        assert_eq!(calls[0].as_ref().unwrap(), &json!({"content": [{"text": "hello"}], "structured": r#"{"a":1}"#, "is-error": true}));
        assert_eq!(calls[1].as_ref().unwrap(), &json!({"content": [{"text": "bare ok"}], "structured": null, "is-error": false}));
        assert_eq!(
            calls[2].as_ref().unwrap(),
            &json!({
                "content": [{"text": "one"}, {"text": "\0\0\0"}, {"text": "\0\0"}, {"text": "\0"}, {"text": "\0\0\0\0"}],
                "structured": null,
                "is-error": false,
            })
        );
    }

    #[test]
    fn fixture_bodies_run_before_the_canned_result() {
        let bytes = Fixture::new()
            .import_cancelled()
            .tool(ToolDef::new("trap").body("unreachable"))
            .tool(ToolDef::new("polite").body("(loop $l (br_if $l (i32.eqz (call $cancelled))))"))
            .funcs(RECURSE)
            .tool(ToolDef::new("recurse").body("(drop (call $recurse (i32.const 0)))"))
            .build();
        let (_, calls) = run(&bytes, &["trap", "polite", "recurse", "nope"]);
        assert!(calls[0].as_ref().unwrap_err().contains("unreachable"), "{:?}", calls[0]);
        assert_eq!(calls[1].as_ref().unwrap()["content"][0]["text"], "polite ok");
        assert!(calls[2].is_err(), "{:?}", calls[2]);
        assert!(calls[3].is_err(), "unknown tool name must trap: {:?}", calls[3]);
    }

    #[test]
    fn fixture_big_zeroed_output_and_invalid_utf8_build() {
        let big = 2 << 20;
        let bytes =
            Fixture::new().tool(ToolDef::new("big").returns_text(Payload::Zeroed(big))).tool(ToolDef::new("bad_utf8").returns_text(&b"\xff\xfe"[..])).build();
        assert!(bytes.len() < 64 * 1024, "zeroed output must not be in the data segment ({} bytes)", bytes.len());
        let (_, calls) = run(&bytes, &["big", "bad_utf8"]);
        let text = calls[0].as_ref().unwrap()["content"][0]["text"].as_str().unwrap().len();
        assert_eq!(text, big as usize);
        assert!(calls[1].is_err(), "wasmtime refuses to lift invalid UTF-8: {:?}", calls[1]);
    }

    #[test]
    fn fixture_unknown_import_and_list_trap_build() {
        let bytes = Fixture::new().import_unknown_interface().tool(ToolDef::new("x")).build();
        let engine = Engine::default();
        let component = Component::new(&engine, &bytes).unwrap();
        let imports: Vec<String> = component.component_type().imports(&engine).map(|(name, _)| name.to_string()).collect();
        assert!(imports.iter().any(|i| i == "other:thing/gizmo@0.1.0"), "imports: {imports:?}");
        let err = Linker::<()>::new(&engine).instantiate_pre(&component).err().expect("must not link");
        assert!(format!("{err:?}").contains("other:thing/gizmo"), "{err:?}");

        Fixture::new().list_body("unreachable").tool(ToolDef::new("y")).build();
        assert!(Component::new(&engine, random_bytes(4096)).is_err());
    }
}

// ---------------------------------------------------------------------------------------------
// limits: timeout, fuel, memory

#[test]
fn spinning_guest_that_never_calls_the_host_times_out() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "spin", Fixture::new().tool(ToolDef::new("spin").body(SPIN)));
    call_expecting_error(dir.path(), &["--timeout", "2s", "--fuel", HUGE_FUEL], "spin", "timeout");
}

#[test]
fn spinning_guest_that_ignores_cancelled_times_out() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(
        dir.path(),
        "spin",
        Fixture::new().import_cancelled().tool(ToolDef::new("spin").body("(loop $l (drop (call $cancelled)) (br $l)) unreachable")),
    );
    call_expecting_error(dir.path(), &["--timeout", "2s", "--fuel", HUGE_FUEL], "spin", "timeout");
}

#[test]
fn manifest_timeout_stops_a_spinning_guest_as_timeout() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "spin", Fixture::new().tool(ToolDef::new("spin").body(SPIN)));
    write_manifest(dir.path(), "spin", "[limits]\ntimeout = \"2s\"\n");
    let start = std::time::Instant::now();
    call_expecting_error(dir.path(), &["--timeout", "120s", "--fuel", HUGE_FUEL], "spin", "timeout");
    // 2 s from the manifest, not the 120 s default (generous slack for a loaded machine).
    assert!(start.elapsed() < Duration::from_secs(60), "took {:?}: the manifest's timeout was not applied", start.elapsed());
}

#[test]
fn fuel_flag_stops_a_busy_guest_as_fuel_exhausted() {
    // BUSY finishes within the default fuel, so only the flag can stop it.
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "busy", Fixture::new().tool(ToolDef::new("busy").body(BUSY)));
    call_expecting_error(dir.path(), &["--fuel", "1000000", "--timeout", "60s"], "busy", "fuel-exhausted");
}

#[test]
fn fuel_flag_stops_a_spinning_guest_as_fuel_exhausted() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "spin", Fixture::new().tool(ToolDef::new("spin").body(SPIN)));
    call_expecting_error(dir.path(), &["--fuel", "1000000", "--timeout", "60s"], "spin", "fuel-exhausted");
}

#[test]
fn manifest_fuel_stops_a_busy_guest_as_fuel_exhausted() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "busy", Fixture::new().tool(ToolDef::new("busy").body(BUSY)));
    write_manifest(dir.path(), "busy", "[limits]\nfuel = 1000000\n");
    // The same work in a plugin without a manifest finishes under the host defaults.
    write_plugin(dir.path(), "roomy", &Fixture::new().tool(ToolDef::new("roomy").body(BUSY)).build());
    let mut mcp = serve(dir.path(), &["--timeout", "60s"]);
    let result = mcp.call_tool("roomy", json!({}));
    assert_eq!(assert_call_ok_text(&mut mcp, &result), "roomy ok");
    let result = mcp.call_tool("busy", json!({}));
    assert_call_error(&mut mcp, &result, "fuel-exhausted");
    assert_host_healthy(&mut mcp, true);
}

#[test]
fn memory_flag_stops_a_growing_guest_as_memory_limit() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "hog", Fixture::new().tool(ToolDef::new("hog").body(GROW_32MIB)));
    call_expecting_error(dir.path(), &["--memory", "16MiB"], "hog", "memory-limit");
}

#[test]
fn manifest_memory_stops_a_growing_guest_as_memory_limit() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "hog", Fixture::new().tool(ToolDef::new("hog").body(GROW_8MIB)));
    write_manifest(dir.path(), "hog", "[limits]\nmemory = \"4MiB\"\n");
    // The same growth in a plugin without a manifest succeeds under the host defaults, so it is
    // the manifest that stops `hog`.
    write_plugin(dir.path(), "roomy", &Fixture::new().tool(ToolDef::new("roomy").body(GROW_8MIB)).build());
    let mut mcp = serve(dir.path(), &[]);
    let result = mcp.call_tool("roomy", json!({}));
    assert_eq!(assert_call_ok_text(&mut mcp, &result), "roomy ok");
    let result = mcp.call_tool("hog", json!({}));
    assert_call_error(&mut mcp, &result, "memory-limit");
    assert_host_healthy(&mut mcp, true);
}

#[test]
fn memory_growth_within_the_cap_succeeds() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "hog", Fixture::new().tool(ToolDef::new("hog").body(GROW_32MIB)));
    let mut mcp = serve(dir.path(), &["--memory", "64MiB"]);
    let result = mcp.call_tool("hog", json!({}));
    assert_eq!(assert_call_ok_text(&mut mcp, &result), "hog ok");
}

// ---------------------------------------------------------------------------------------------
// traps

#[test]
fn unreachable_is_a_trap_with_its_trap_text() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "crash", Fixture::new().tool(ToolDef::new("crash").body("unreachable")));
    let error = call_expecting_error(dir.path(), &[], "crash", "trap");
    let trap = error["trap"].as_str().unwrap_or_else(|| panic!("no trap text in {error:#}"));
    assert!(trap.contains("unreachable"), "trap text should name the unreachable instruction: {trap:?}");
}

#[test]
fn endless_recursion_is_a_trap_naming_the_stack() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "deep", Fixture::new().funcs(RECURSE).tool(ToolDef::new("deep").body("(drop (call $recurse (i32.const 0)))")));
    let error = call_expecting_error(dir.path(), &[], "deep", "trap");
    let trap = error["trap"].as_str().unwrap_or_else(|| panic!("no trap text in {error:#}"));
    // wasmtime says "call stack exhausted"; a host may also say "stack overflow".
    assert!(trap.to_lowercase().contains("stack"), "trap text should mention the stack: {trap:?}");
}

// ---------------------------------------------------------------------------------------------
// cancellation

#[test]
fn cancelled_call_gets_no_response_and_host_keeps_serving() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "spin", Fixture::new().tool(ToolDef::new("spin").body(SPIN)));
    let mut mcp = serve(dir.path(), &["--timeout", "60s", "--fuel", HUGE_FUEL]);

    let id = mcp.send_request("tools/call", json!({"name": "spin", "arguments": {}}));
    // Let the call get going before cancelling it.
    mcp.assert_no_response(id, Duration::from_millis(500));
    mcp.notify("notifications/cancelled", json!({"requestId": id, "reason": "test gave up"}));
    mcp.assert_no_response(id, Duration::from_millis(1500));

    assert_host_healthy(&mut mcp, true);
    mcp.wait_stderr("a mention of the cancellation", TIMEOUT, |s| s.to_lowercase().contains("cancel"));
    // Still nothing for the cancelled id after all that.
    mcp.assert_no_response(id, Duration::from_millis(200));
}

#[test]
fn cancelled_guest_that_notices_and_returns_still_gets_no_response() {
    // The guest polls `cancelled` and returns its normal result once it turns true; the client
    // has given up on the request, so no response may be sent.
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(
        dir.path(),
        "polite",
        Fixture::new().import_cancelled().tool(ToolDef::new("polite").body("(loop $l (br_if $l (i32.eqz (call $cancelled))))")),
    );
    let mut mcp = serve(dir.path(), &["--timeout", "60s", "--fuel", HUGE_FUEL]);
    let id = mcp.send_request("tools/call", json!({"name": "polite", "arguments": {}}));
    mcp.assert_no_response(id, Duration::from_millis(500));
    mcp.notify("notifications/cancelled", json!({"requestId": id}));
    mcp.assert_no_response(id, Duration::from_millis(1500));
    assert_host_healthy(&mut mcp, true);
}

#[test]
fn cancelling_an_unknown_request_is_ignored() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    let mut mcp = serve(dir.path(), &[]);
    mcp.notify("notifications/cancelled", json!({"requestId": 4242}));
    mcp.notify("notifications/cancelled", json!({"requestId": "no-such-request"}));
    mcp.notify("notifications/cancelled", json!({}));
    assert_host_healthy(&mut mcp, false);
}

#[test]
fn guest_returning_after_its_deadline_is_a_timeout() {
    // `cancelled` turns true once the time is up, and this guest returns its normal result as
    // soon as it sees that. The result comes after the deadline, so the call is a timeout
    // ("Exceeding one ends the call with a structured error of kind ... `timeout`",
    // wit-contract.md), whoever wins the race between the guest's return and the host's timer.
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(
        dir.path(),
        "polite",
        Fixture::new().import_cancelled().tool(ToolDef::new("polite").body("(loop $l (br_if $l (i32.eqz (call $cancelled))))")),
    );
    call_expecting_error(dir.path(), &["--timeout", "2s", "--fuel", HUGE_FUEL], "polite", "timeout");
}

#[test]
fn cancelled_guest_is_stopped_so_later_calls_still_run() {
    // Two cancelled spinners on a 2-core box: if the host left them running, the machine would be
    // busy, but the calls below must still finish quickly and correctly.
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "spin", Fixture::new().tool(ToolDef::new("spin").body(SPIN)));
    let mut mcp = serve(dir.path(), &["--timeout", "60s", "--fuel", HUGE_FUEL]);
    for _ in 0..2 {
        let id = mcp.send_request("tools/call", json!({"name": "spin", "arguments": {}}));
        mcp.assert_no_response(id, Duration::from_millis(300));
        mcp.notify("notifications/cancelled", json!({"requestId": id}));
        mcp.assert_no_response(id, Duration::from_millis(1000));
    }
    for _ in 0..3 {
        assert_host_healthy(&mut mcp, true);
    }
}

// ---------------------------------------------------------------------------------------------
// arguments and output

#[test]
fn arguments_violating_the_input_schema_are_invalid_arguments() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    // The body traps, so a result of kind `invalid-arguments` also shows the guest never ran.
    let schema = r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#;
    write_hostile_plugin(dir.path(), "strict", Fixture::new().tool(ToolDef::new("strict").input_schema(schema).body("unreachable")));
    let mut mcp = serve(dir.path(), &[]);

    for args in [json!({"n": "seven"}), json!({})] {
        let result = mcp.call_tool("strict", args.clone());
        let error = assert_call_error(&mut mcp, &result, "invalid-arguments");
        let violations = error["violations"].as_array().unwrap_or_else(|| panic!("no violations array: {error:#}"));
        assert!(!violations.is_empty(), "arguments {args}: empty violations: {error:#}");
        for v in violations {
            assert!(v["path"].is_string(), "violation without string path: {v}");
            assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "violation without message: {v}");
        }
        assert_host_healthy(&mut mcp, true);
    }
    // Matching arguments do reach the guest (whose body traps).
    let result = mcp.call_tool("strict", json!({"n": 7}));
    assert_call_error(&mut mcp, &result, "trap");
}

#[test]
fn non_utf8_text_is_invalid_output() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "garble", Fixture::new().tool(ToolDef::new("garble").returns_text(&b"ok \xff\xfe"[..])));
    call_expecting_error(dir.path(), &[], "garble", "invalid-output");
}

#[test]
fn non_utf8_structured_output_is_invalid_output() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(
        dir.path(),
        "garble",
        Fixture::new().tool(ToolDef::new("garble").returns(CallResult::text("fine").structured(&b"{\"a\":\"\xc3\x28\"}"[..]))),
    );
    call_expecting_error(dir.path(), &[], "garble", "invalid-output");
}

#[test]
fn structured_output_that_is_not_json_is_invalid_output() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "garble", Fixture::new().tool(ToolDef::new("garble").returns(CallResult::text("fine").structured("{not json"))));
    call_expecting_error(dir.path(), &[], "garble", "invalid-output");
}

#[test]
fn structured_output_not_matching_the_output_schema_is_invalid_output() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    let schema = r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#;
    write_hostile_plugin(
        dir.path(),
        "garble",
        Fixture::new().tool(ToolDef::new("garble").output_schema(schema).returns(CallResult::text("fine").structured(r#"{"n":"seven"}"#))),
    );
    call_expecting_error(dir.path(), &[], "garble", "invalid-output");
}

#[test]
fn missing_structured_output_despite_an_output_schema_is_invalid_output() {
    // wit/plugin.wit: "A tool that declares one must return `structured` in every successful result."
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "garble", Fixture::new().tool(ToolDef::new("garble").output_schema(r#"{"type":"object"}"#).returns_text("no structured")));
    call_expecting_error(dir.path(), &[], "garble", "invalid-output");
}

#[test]
fn structured_output_matching_the_output_schema_is_returned() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    let schema = r#"{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}"#;
    write_hostile_plugin(
        dir.path(),
        "shaped",
        Fixture::new().tool(ToolDef::new("shaped").output_schema(schema).returns(CallResult::text("n is 7").structured(r#"{"n":7}"#))),
    );
    let mut mcp = serve(dir.path(), &[]);
    let result = mcp.call_tool("shaped", json!({}));
    assert_eq!(assert_call_ok_text(&mut mcp, &result), "n is 7");
    assert_eq!(result["structuredContent"], json!({"n": 7}), "{result:#}");
}

#[test]
fn output_larger_than_max_output_is_output_too_large() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "flood", Fixture::new().tool(ToolDef::new("flood").returns_text(Payload::Zeroed(2 << 20))));
    call_expecting_error(dir.path(), &["--max-output", "1MiB"], "flood", "output-too-large");
}

#[test]
fn output_within_max_output_is_returned_whole() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    let size = 512 * 1024;
    write_hostile_plugin(dir.path(), "flood", Fixture::new().tool(ToolDef::new("flood").returns_text(Payload::Zeroed(size))));
    // Inline, not by reference (tests/results.rs): the result is within the inline limit too.
    let mut mcp = serve(dir.path(), &["--max-output", "1MiB", "--inline-result-limit", "1MiB"]);
    let result = mcp.call_tool("flood", json!({}));
    let text = assert_call_ok_text(&mut mcp, &result);
    assert_eq!(text.len(), size as usize);
    assert!(text.bytes().all(|b| b == 0));
}

#[test]
fn max_output_counts_all_content_blocks_together() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    let third = CallResult { content: vec![Content::Text(Payload::Zeroed(400 * 1024)); 3], structured: None, is_error: false };
    write_hostile_plugin(dir.path(), "flood", Fixture::new().tool(ToolDef::new("flood").returns(third)));
    call_expecting_error(dir.path(), &["--max-output", "1MiB"], "flood", "output-too-large");
}

#[test]
fn aliased_output_is_refused_before_the_host_copies_it() {
    // 1024 text blocks that all point at the same 1 MiB of guest memory: a 3 MiB guest whose
    // result is 1 GiB once the host has copied each string out. The host must notice the size
    // before it copies (a few thousand more blocks would take the host down).
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    let amplified = CallResult { content: vec![Content::Text(Payload::SharedZeroed(1 << 20)); 1024], structured: None, is_error: false };
    write_hostile_plugin(dir.path(), "amplify", Fixture::new().tool(ToolDef::new("amplify").returns(amplified)));
    let mut mcp = serve(dir.path(), &["--max-output", "1MiB"]);
    let result = mcp.call_tool("amplify", json!({}));
    assert_call_error(&mut mcp, &result, "output-too-large");
    assert_host_healthy(&mut mcp, true);
    if let Some(peak) = mcp.peak_rss() {
        assert!(peak < 512 << 20, "corral's peak RSS reached {} MiB: it copied the 1 GiB result out of the guest before checking its size", peak >> 20);
    }
}

#[test]
fn result_pointing_outside_guest_memory_is_an_error_not_a_crash() {
    // The call-result record at address 0 claims one content block at 0x7fff_fff0.
    let body = "(i32.store (i32.const 0) (i32.const 0x7ffffff0)) \
        (i32.store (i32.const 4) (i32.const 1)) \
        (i32.store8 (i32.const 8) (i32.const 0)) \
        (i32.store8 (i32.const 20) (i32.const 0)) \
        (return (i32.const 0))";
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "liar", Fixture::new().tool(ToolDef::new("liar").body(body)));
    let error = call_expecting_error_of(dir.path(), &[], "liar", BOGUS_RESULT_KINDS);
    assert_bogus_result_explained(&error);
}

#[test]
fn string_pointing_outside_guest_memory_is_an_error_not_a_crash() {
    // One text block whose string is (0xffff_fff0, 64): it wraps around the address space.
    let body = "(i32.store (i32.const 0) (i32.const 64)) \
        (i32.store (i32.const 4) (i32.const 1)) \
        (i32.store8 (i32.const 8) (i32.const 0)) \
        (i32.store8 (i32.const 20) (i32.const 0)) \
        (i32.store8 (i32.const 64) (i32.const 0)) \
        (i32.store (i32.const 68) (i32.const 0xfffffff0)) \
        (i32.store (i32.const 72) (i32.const 64)) \
        (return (i32.const 0))";
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "liar", Fixture::new().tool(ToolDef::new("liar").body(body)));
    let error = call_expecting_error_of(dir.path(), &[], "liar", BOGUS_RESULT_KINDS);
    assert_bogus_result_explained(&error);
}

#[test]
fn misaligned_result_pointer_is_an_error_not_a_crash() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "liar", Fixture::new().tool(ToolDef::new("liar").body("(return (i32.const 1))")));
    let error = call_expecting_error_of(dir.path(), &[], "liar", BOGUS_RESULT_KINDS);
    assert_bogus_result_explained(&error);
}

#[test]
fn tool_reported_error_is_passed_through_without_corral_error() {
    // is-error from the guest is the tool's own failure, not a host failure.
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "sulky", Fixture::new().tool(ToolDef::new("sulky").returns(CallResult::text("upstream said no").is_error(true))));
    let mut mcp = serve(dir.path(), &[]);
    let result = mcp.call_tool("sulky", json!({}));
    assert_eq!(result["isError"], json!(true), "{result:#}");
    assert_eq!(result["content"], json!([{"type": "text", "text": "upstream said no"}]), "{result:#}");
    assert!(result["_meta"].get("corral/error").is_none(), "a tool's own error is not a corral error: {result:#}");
}

// ---------------------------------------------------------------------------------------------
// tools/list and task policy

#[test]
fn tools_list_maps_every_tool_field() {
    let dir = plugin_dir();
    let input = r#"{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}"#;
    let output = r#"{"type":"object","properties":{"hits":{"type":"integer"}}}"#;
    let tool = ToolDef::new("search")
        .title("Search")
        .description("Finds things")
        .input_schema(input)
        .output_schema(output)
        .annotations(Annotations {
            title: Some("Search things".into()),
            read_only: Some(true),
            destructive: Some(false),
            idempotent: Some(true),
            open_world: Some(false),
        })
        .task_support(TaskSupport::Optional)
        .returns(CallResult::text("0 hits").structured(r#"{"hits":0}"#));
    write_plugin(dir.path(), "finder", &Fixture::new().tool(tool).build());
    let mut mcp = serve(dir.path(), &[]);
    let list = mcp.result("tools/list", json!({}));
    let tools = list["tools"].as_array().expect("tools array");
    assert_eq!(tools.len(), 1, "{list:#}");
    assert_eq!(
        tools[0],
        json!({
            "name": "search",
            "title": "Search",
            "description": "Finds things",
            "inputSchema": serde_json::from_str::<Value>(input).unwrap(),
            "outputSchema": serde_json::from_str::<Value>(output).unwrap(),
            "annotations": {
                "title": "Search things",
                "readOnlyHint": true,
                "destructiveHint": false,
                "idempotentHint": true,
                "openWorldHint": false,
            },
            "execution": {"taskSupport": "optional"},
        })
    );
}

#[test]
fn tools_list_omits_unset_optional_fields() {
    let dir = plugin_dir();
    write_plugin(dir.path(), "plain", &Fixture::new().tool(ToolDef::new("plain")).build());
    let mut mcp = serve(dir.path(), &[]);
    let list = mcp.result("tools/list", json!({}));
    let tool = &list["tools"][0];
    assert_eq!(tool["name"], "plain", "{list:#}");
    assert_eq!(tool["description"], "test tool plain");
    assert_eq!(tool["inputSchema"], json!({"type": "object"}));
    assert_eq!(tool["execution"], json!({"taskSupport": "forbidden"}));
    assert!(tool.get("title").is_none(), "{tool:#}");
    assert!(tool.get("outputSchema").is_none(), "{tool:#}");
    assert!(tool.get("annotations").is_none_or(|a| a == &json!({})), "no hints were stated, so annotations should be absent or empty: {tool:#}");
}

#[test]
fn required_task_tool_called_without_task_is_method_not_found() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_hostile_plugin(dir.path(), "batch", Fixture::new().tool(ToolDef::new("batch").task_support(TaskSupport::Required).body("unreachable")));
    let mut mcp = serve(dir.path(), &[]);
    let response = mcp.request("tools/call", json!({"name": "batch", "arguments": {}}));
    assert!(response.get("result").is_none(), "expected a JSON-RPC error: {response:#}");
    assert_eq!(response["error"]["code"], -32601, "{response:#}");
    assert!(response["error"]["message"].is_string(), "{response:#}");
    assert_host_healthy(&mut mcp, true);
}

#[test]
fn optional_task_tool_called_without_task_runs() {
    let dir = plugin_dir();
    write_plugin(dir.path(), "batch", &Fixture::new().tool(ToolDef::new("batch").task_support(TaskSupport::Optional)).build());
    let mut mcp = serve(dir.path(), &[]);
    let result = mcp.call_tool("batch", json!({}));
    assert_eq!(assert_call_ok_text(&mut mcp, &result), "batch ok");
}

// ---------------------------------------------------------------------------------------------
// load refusals

#[test]
fn good_plugin_is_listed_with_file_tools_and_limits() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    let report = tools_json(dir.path());
    assert_eq!(report["refused"], json!([]), "{report:#}");
    let plugins = report["plugins"].as_array().expect("plugins array");
    assert_eq!(plugins.len(), 1, "{report:#}");
    let p = &plugins[0];
    assert_eq!(p["name"], "good", "{report:#}");
    assert!(p["file"].as_str().is_some_and(|f| f.ends_with("good.wasm")), "{report:#}");
    let tools = p["tools"].as_array().expect("tools array");
    assert_eq!(tools.len(), 1, "{report:#}");
    let tool_name = if tools[0].is_string() { &tools[0] } else { &tools[0]["name"] };
    assert_eq!(tool_name, "echo", "{report:#}");
    assert!(p["limits"].is_object(), "{report:#}");
}

#[test]
fn unknown_manifest_key_is_refused_as_invalid_manifest() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_plugin(dir.path(), "typo", &Fixture::new().tool(ToolDef::new("typo")).build());
    let manifest = write_manifest(dir.path(), "typo", "[limits]\nfuel = 1000000\nmemroy = \"16MiB\"\n");
    let report = tools_json(dir.path());
    let file = manifest.file_name().unwrap().to_str().unwrap();
    assert_refusal(&report, "typo", "invalid-manifest", None, &["memroy", file]);
    assert_eq!(plugin_names(&report), ["good"]);
}

#[test]
fn random_bytes_are_refused_as_invalid_component() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_plugin(dir.path(), "noise", &random_bytes(4096));
    let report = tools_json(dir.path());
    assert_refusal(&report, "noise", "invalid-component", None, &[]);
    assert_eq!(plugin_names(&report), ["good"]);
}

#[test]
fn core_module_is_refused_as_invalid_component() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_plugin(dir.path(), "core", &wat::parse_str("(module (func (export \"f\")))").unwrap());
    let report = tools_json(dir.path());
    assert_refusal(&report, "core", "invalid-component", None, &[]);
}

#[test]
fn unknown_import_is_refused_as_missing_import_naming_it() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_plugin(dir.path(), "needy", &Fixture::new().import_unknown_interface().tool(ToolDef::new("needy")).build());
    let report = tools_json(dir.path());
    assert_refusal(&report, "needy", "missing-import", None, &["other:thing/gizmo"]);
    assert_eq!(plugin_names(&report), ["good"]);
}

#[test]
fn trapping_list_tools_is_refused_as_list_tools_failed() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_plugin(dir.path(), "shy", &Fixture::new().list_body("unreachable").tool(ToolDef::new("shy")).build());
    let report = tools_json(dir.path());
    assert_refusal(&report, "shy", "list-tools-failed", None, &[]);
    assert_eq!(plugin_names(&report), ["good"]);
}

#[test]
fn spinning_list_tools_is_refused_as_list_tools_failed() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_plugin(dir.path(), "slow", &Fixture::new().list_body(SPIN).tool(ToolDef::new("slow")).build());
    let exe = env!("CARGO_BIN_EXE_corral");
    let output = run_with_timeout(
        std::process::Command::new(exe).args(["tools", "--plugins", dir.path().to_str().unwrap(), "--json", "--timeout", "2s", "--fuel", HUGE_FUEL]),
        TIMEOUT,
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{}\n{stdout}\n{}", output.status, String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_str(&stdout).expect("JSON report");
    assert_refusal(&report, "slow", "list-tools-failed", None, &[]);
    assert_eq!(plugin_names(&report), ["good"]);
}

#[test]
fn invalid_tool_names_are_refused_as_invalid_tool_name() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    let too_long = "x".repeat(65);
    let cases = [("spaced", "has space"), ("dotted", "a.b"), ("empty", ""), ("long", too_long.as_str()), ("slashed", "a/b")];
    for (plugin, tool) in cases {
        write_plugin(dir.path(), plugin, &Fixture::new().tool(ToolDef::new(tool)).build());
    }
    let longest_ok = "y".repeat(64);
    write_plugin(dir.path(), "edge", &Fixture::new().tool(ToolDef::new(&longest_ok)).tool(ToolDef::new("A-z_0-9")).build());
    let report = tools_json(dir.path());
    for (plugin, tool) in cases {
        assert_refusal(&report, plugin, "invalid-tool-name", Some(tool), &[]);
    }
    assert_eq!(plugin_names(&report), ["edge", "good"], "64 chars of [A-Za-z0-9_-] are fine: {report:#}");
}

fn assert_schema_refused(schema: &str) {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_plugin(dir.path(), "shapeless", &Fixture::new().tool(ToolDef::new("vague").input_schema(schema)).build());
    let report = tools_json(dir.path());
    assert_refusal(&report, "shapeless", "invalid-schema", Some("vague"), &["shapeless", "vague"]);
    assert_eq!(plugin_names(&report), ["good"], "input schema {schema:?}");
}

#[test]
fn input_schema_that_is_not_json_is_refused_as_invalid_schema() {
    assert_schema_refused(r#"{"type":"object""#);
}

#[test]
fn input_schema_that_is_not_a_valid_json_schema_is_refused_as_invalid_schema() {
    assert_schema_refused(r#"{"type":"object","properties":{"n":{"type":"integr"}}}"#);
}

#[test]
fn input_schema_whose_root_is_not_an_object_schema_is_refused_as_invalid_schema() {
    assert_schema_refused(r#"{"type":"string"}"#);
}

#[test]
fn output_schema_that_is_not_json_is_refused_as_invalid_schema() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_plugin(
        dir.path(),
        "shapeless",
        &Fixture::new().tool(ToolDef::new("vague").output_schema("not json").returns(CallResult::text("x").structured("{}"))).build(),
    );
    let report = tools_json(dir.path());
    assert_refusal(&report, "shapeless", "invalid-schema", Some("vague"), &["shapeless", "vague"]);
}

#[test]
fn same_tool_in_two_plugins_refuses_the_second_in_file_order() {
    let dir = plugin_dir();
    write_plugin(dir.path(), "a_first", &Fixture::new().tool(ToolDef::new("same").returns_text("from a")).build());
    write_plugin(dir.path(), "b_second", &Fixture::new().tool(ToolDef::new("other")).tool(ToolDef::new("same").returns_text("from b")).build());
    let report = tools_json(dir.path());
    assert_refusal(&report, "b_second", "duplicate-tool", Some("same"), &["same"]);
    assert_eq!(plugin_names(&report), ["a_first"]);

    let mut mcp = serve(dir.path(), &[]);
    assert_eq!(listed_tool_names(&mut mcp), ["same"], "b_second is refused as a whole");
    let result = mcp.call_tool("same", json!({}));
    assert_eq!(assert_call_ok_text(&mut mcp, &result), "from a");
}

#[test]
fn same_tool_twice_in_one_plugin_is_refused_as_duplicate_tool() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_plugin(dir.path(), "echoes", &Fixture::new().tool(ToolDef::new("twice")).tool(ToolDef::new("twice")).build());
    let report = tools_json(dir.path());
    assert_refusal(&report, "echoes", "duplicate-tool", Some("twice"), &["twice"]);
    assert_eq!(plugin_names(&report), ["good"]);
}

#[test]
fn server_starts_despite_refused_plugins_and_lists_only_good_tools() {
    let dir = plugin_dir();
    write_good_plugin(dir.path());
    write_plugin(dir.path(), "noise", &random_bytes(1000));
    write_plugin(dir.path(), "needy", &Fixture::new().import_unknown_interface().tool(ToolDef::new("needy")).build());
    write_plugin(dir.path(), "shy", &Fixture::new().list_body("unreachable").tool(ToolDef::new("shy")).build());
    write_plugin(dir.path(), "spaced", &Fixture::new().tool(ToolDef::new("has space")).build());
    write_plugin(dir.path(), "shapeless", &Fixture::new().tool(ToolDef::new("vague").input_schema("[]")).build());
    write_plugin(dir.path(), "typo", &Fixture::new().tool(ToolDef::new("typo")).build());
    write_manifest(dir.path(), "typo", "colour = \"red\"\n");
    write_plugin(dir.path(), "zz_dup", &Fixture::new().tool(ToolDef::new("echo")).build());

    let mut mcp = serve(dir.path(), &[]);
    assert_eq!(listed_tool_names(&mut mcp), ["echo"]);
    let result = mcp.call_tool("echo", json!({}));
    assert_eq!(assert_call_ok_text(&mut mcp, &result), "good ok");
    let pong = mcp.request("ping", json!({}));
    assert_eq!(pong["result"], json!({}), "{pong}");
}
