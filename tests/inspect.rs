//! `corral inspect`: contract, imports and their permissions, tools, and the host's verdict,
//! on real example plugins and on WAT fixtures the host refuses.

mod common;

use std::path::Path;
use std::process::Output;

use common::*;
use serde_json::Value;

fn inspect(file: &Path, json: bool) -> Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_corral"));
    cmd.args(["--log-level", "error", "inspect"]).arg(file);
    if json {
        cmd.arg("--json");
    }
    cmd.output().expect("running corral inspect")
}

fn inspect_json(file: &Path) -> (Value, i32) {
    let out = inspect(file, true);
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("inspect --json printed no JSON ({e}):\n{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    });
    (report, out.status.code().unwrap_or(-1))
}

#[test]
fn a_good_plugin_shows_its_contract_imports_tools_limits_and_verdict() {
    let dir = example_plugins(&["hash"]);
    let file = dir.path().join("hash.wasm");
    let (report, code) = inspect_json(&file);
    assert_eq!(code, 0, "{report:#}");
    // The example plugins are built with the SDK, which is on the newest contract.
    assert_eq!(report["contract"], "corral:plugin@0.3.0");
    assert_eq!(report["exports"], serde_json::json!(["corral:plugin/tools@0.3.0"]));
    let imports = report["imports"].as_array().unwrap();
    assert!(imports.iter().any(|i| i["name"] == "corral:plugin/host@0.3.0" && i["permission"].is_null()), "{imports:#?}");
    // A Rust wasm32-wasip2 build imports wasi:cli/environment (std reads it for env::var).
    assert!(imports.iter().any(|i| i["name"].as_str().unwrap().starts_with("wasi:cli/environment@") && i["permission"] == "env"), "{imports:#?}");
    assert!(report["permissions"].as_array().unwrap().contains(&Value::from("env")));
    let tool = &report["tools"][0];
    assert_eq!(tool["name"], "hash_chain");
    assert_eq!(tool["execution"]["taskSupport"], "optional");
    assert_eq!(tool["inputSchema"]["required"], serde_json::json!(["input", "rounds"]));
    assert_eq!(tool["outputSchema"]["properties"]["digest"]["pattern"], "^[0-9a-f]{64}$");
    assert_eq!(report["limits"]["fuel"], 2_000_000_000u64, "hash.toml beside the file is read");
    assert!(report["refusal"].is_null());
    assert!(report["sizeBytes"].as_u64().unwrap() > 0 && report["loadMs"].as_f64().unwrap() > 0.0);

    let out = inspect(&file, false);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for line in [
        "contract     corral:plugin@0.3.0",
        "sees nothing without permission `env`",
        "hash_chain \"SHA-256 hash chain\"  task support: optional",
        "hints: read-only, not destructive, idempotent, closed world",
        "\"pattern\": \"^[0-9a-f]{64}$\"",
        "fuel 2000000000",
        "verdict      corral would serve it",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
}

#[test]
fn a_plugin_on_the_first_contract_is_still_served() {
    // The SDK and the examples moved to 0.3.0; `tests/guests/probe` stays on 0.1.0 (bindings of
    // its own), so the oldest contract keeps a real component that inspects and serves.
    let file = common::test_guests().join("probe.wasm");
    let (report, code) = inspect_json(&file);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["contract"], "corral:plugin@0.1.0");
    assert_eq!(report["exports"], serde_json::json!(["corral:plugin/tools@0.1.0"]));
    assert!(report["refusal"].is_null(), "{report:#}");
    assert!(!report["tools"].as_array().unwrap().is_empty(), "{report:#}");
}

#[test]
fn a_plugin_with_a_bad_tool_name_is_refused_with_the_hosts_words_and_exit_one() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_plugin(dir.path(), "dotty", &Fixture::new().tool(ToolDef::new("has.dot")).build());
    let (report, code) = inspect_json(&file);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["refusal"]["kind"], "invalid-tool-name");
    assert_eq!(report["refusal"]["tool"], "has.dot");
    assert_eq!(report["contract"], "corral:plugin@0.1.0", "the contract is read from a refused plugin too");
    let text = String::from_utf8_lossy(&inspect(&file, false).stdout).into_owned();
    assert!(text.contains("verdict      REFUSED (invalid-tool-name): plugin `dotty`: tool `has.dot`"), "{text}");
}

#[test]
fn a_missing_import_is_listed_and_named_in_the_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_plugin(dir.path(), "needy", &Fixture::new().import_unknown_interface().tool(ToolDef::new("needy")).build());
    let (report, code) = inspect_json(&file);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["refusal"]["kind"], "missing-import");
    assert!(report["refusal"]["message"].as_str().unwrap().contains("other:thing/gizmo"), "{report:#}");
    let imports: Vec<&str> = report["imports"].as_array().unwrap().iter().map(|i| i["name"].as_str().unwrap()).collect();
    assert!(imports.iter().any(|i| i.starts_with("other:thing/gizmo")), "{imports:?}");
}

#[test]
fn a_bad_manifest_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_plugin(dir.path(), "good", &Fixture::new().tool(ToolDef::new("good")).build());
    write_manifest(dir.path(), "good", "[limits]\nfuel = \"lots\"\n");
    let (report, code) = inspect_json(&file);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["refusal"]["kind"], "invalid-manifest");
}

#[test]
fn a_refused_manifest_points_at_its_key_or_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_plugin(dir.path(), "good", &Fixture::new().tool(ToolDef::new("good")).build());
    write_manifest(dir.path(), "good", "[limits]\ntimeout = \"soon\"\n");
    let (report, code) = inspect_json(&file);
    assert_eq!(code, 1, "{report:#}");
    assert_eq!(report["refusal"]["kind"], "invalid-manifest");
    assert_eq!(report["refusal"]["key"], "limits.timeout", "{report:#}");
    assert!(report["refusal"]["message"].as_str().unwrap().contains("[limits] timeout: `soon` is not a duration"), "{report:#}");
    write_manifest(dir.path(), "good", "[limits]\nfuel = \"lots\"\n");
    let (report, _) = inspect_json(&file);
    assert_eq!((report["refusal"]["line"].as_u64(), report["refusal"].get("key")), (Some(2), None), "{report:#}");
}

#[test]
fn a_file_that_is_not_a_component_is_refused_and_a_missing_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_plugin(dir.path(), "junk", b"not wasm at all");
    let (report, code) = inspect_json(&file);
    assert_eq!(code, 1);
    assert_eq!(report["refusal"]["kind"], "invalid-component");
    assert!(report["contract"].is_null());

    let out = inspect(&dir.path().join("absent.wasm"), false);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("absent.wasm"));
}

#[test]
fn a_0_2_plugin_shows_its_contract_and_what_it_offers_besides_tools() {
    // The conformance fixture (tests/guests/conformance), built from source.
    let (report, code) = inspect_json(&common::test_guests().join("conformance.wasm"));
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(report["contract"], "corral:plugin@0.2.0");
    assert!(report["tools"].as_array().is_some_and(|t| !t.is_empty()), "{report:#}");
    assert!(report["resources"].as_u64() > Some(0) && report["prompts"].as_u64() > Some(0), "{report:#}");
}

#[test]
fn the_task_after_of_a_manifest_is_shown_and_its_absence_names_the_host_flag() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_plugin(dir.path(), "adaptive", &Fixture::new().tool(ToolDef::new("adaptive")).build());
    let (report, _) = inspect_json(&file);
    assert!(report["limits"]["taskAfterMs"].is_null(), "no manifest: the host decides: {report:#}");
    assert!(String::from_utf8_lossy(&inspect(&file, false).stdout).contains("task after the host's --task-after"));
    write_manifest(dir.path(), "adaptive", "[limits]\ntask-after = \"250ms\"\n");
    let (report, code) = inspect_json(&file);
    assert_eq!((code, report["limits"]["taskAfterMs"].as_u64()), (0, Some(250)), "{report:#}");
    assert!(String::from_utf8_lossy(&inspect(&file, false).stdout).contains("task after 250ms"));
}

#[test]
fn inspect_reads_through_the_compile_cache_so_a_second_inspect_maps_instead_of_compiling() {
    let dir = example_plugins(&["hash"]);
    let cache = tempfile::tempdir().unwrap();
    let run = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_corral"))
            .args(["--log-level", "error", "inspect", "--json", "--cache-dir"])
            .arg(cache.path())
            .arg(dir.path().join("hash.wasm"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let entries = |p: &Path| walk(p).len();
    let first = run();
    let cached = entries(cache.path());
    assert!(cached > 0, "the first inspect compiled the plugin into the cache");
    let second = run();
    assert_eq!(entries(cache.path()), cached, "the second found it there and stored nothing new");
    assert_eq!((first["tools"].clone(), first["contract"].clone()), (second["tools"].clone(), second["contract"].clone()));
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[test]
fn the_secrets_a_manifest_declares_are_shown_by_name_scope_and_help() {
    let dir = tempfile::tempdir().unwrap();
    let file = write_plugin(dir.path(), "tracker", &Fixture::new().tool(ToolDef::new("issues")).build());
    let (report, _) = inspect_json(&file);
    assert_eq!(report["secrets"], serde_json::json!([]), "none declared: {report:#}");
    write_manifest(
        dir.path(),
        "tracker",
        "[secrets.TRACKER_TOKEN]\nscope = \"caller\"\ndescription = \"Your tracker API token\"\nhelp_url = \"https://tracker.example/tokens\"\n\
         [secrets.WEBHOOK_KEY]\nscope = \"host\"\ndescription = \"The team's webhook key\"\n",
    );
    let (report, code) = inspect_json(&file);
    assert_eq!(code, 0, "{report:#}");
    assert_eq!(
        report["secrets"],
        serde_json::json!([
            {"name": "TRACKER_TOKEN", "scope": "caller", "description": "Your tracker API token", "helpUrl": "https://tracker.example/tokens"},
            {"name": "WEBHOOK_KEY", "scope": "host", "description": "The team's webhook key", "helpUrl": null},
        ])
    );
    let text = String::from_utf8_lossy(&inspect(&file, false).stdout).into_owned();
    assert!(text.contains("secrets      TRACKER_TOKEN from the caller: Your tracker API token (get one at https://tracker.example/tokens)"), "{text}");
    assert!(text.contains("WEBHOOK_KEY from the host: The team's webhook key"), "{text}");

    write_manifest(dir.path(), "tracker", "[secrets.TRACKER_TOKEN]\nscope = \"everyone\"\ndescription = \"x\"\n");
    let (report, code) = inspect_json(&file);
    assert_eq!((code, report["refusal"]["kind"].as_str()), (1, Some("invalid-manifest")), "{report:#}");
    assert!(report["refusal"]["message"].as_str().unwrap().contains("[secrets] scope: TRACKER_TOKEN"), "{report:#}");
}
