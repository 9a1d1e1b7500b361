//! Plugins from OCI registries (issue 15), against a real registry: Debian's `docker-registry`
//! (distribution 2.8) started on 127.0.0.1 for each test, with its own storage in a temp dir.
//! `corral publish` → `corral pull` → `corral serve` → a call; and each way a pull must fail
//! (a tampered blob, a manifest that lies about its digest, a wrong key, a missing signature,
//! a layer that is not a component, a layer over --max-plugin-size), each with its own error
//! and nothing written to the plugin directory. Then the lock at serve time, moved tags, a
//! registry that is gone after the pull, and tool namespaces. A signed artifact copied to
//! another repository is refused unless named as a mirror; publishing is reproducible; and a
//! registry of the test's own (`SlowRegistry`, a few lines of HTTP on a std listener) sends an
//! endless manifest and a trickling one, which the pull's bounds must stop.

mod common;
#[path = "common/registry.rs"]
mod registry;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::*;
use corral::oci::client::Access;
use corral::oci::publish::{push_artifact, Artifact};
use corral::oci::{Connection, OciRef};
use corral::registry::lock::Lock;
use p256::ecdsa::SigningKey;
use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
use registry::Registry;
use serde_json::{json, Value};

fn corral(args: &[&str]) -> Output {
    corral_with(args, &[])
}

fn corral_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_corral"));
    command.args(["--log-level", "error"]).args(args).env("CORRAL_DB", ":memory:").env_remove("SOURCE_DATE_EPOCH");
    command.envs(env.iter().copied()).output().expect("running corral")
}

fn text(out: &Output) -> String {
    format!("status {}\nstdout:\n{}\nstderr:\n{}", out.status, String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn ok(out: Output) -> String {
    assert!(out.status.success(), "corral failed:\n{}", text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The error `corral` printed; it must have failed.
fn fails(out: Output) -> String {
    assert!(!out.status.success(), "corral should have failed:\n{}", text(&out));
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A signing key pair written as PEM files: (private, public, fingerprint).
struct Keys {
    private: PathBuf,
    public: PathBuf,
    fingerprint: String,
    _dir: tempfile::TempDir,
}

fn keys(seed: u8) -> Keys {
    let dir = tempfile::tempdir().unwrap();
    let key = SigningKey::from_slice(&[seed; 32]).unwrap();
    let (private, public) = (dir.path().join("cosign.key"), dir.path().join("cosign.pub"));
    std::fs::write(&private, key.to_pkcs8_pem(LineEnding::LF).unwrap().as_bytes()).unwrap();
    std::fs::write(&public, key.verifying_key().to_public_key_pem(LineEnding::LF).unwrap()).unwrap();
    let fingerprint = corral::oci::sha256_digest(key.verifying_key().to_public_key_der().unwrap().as_bytes());
    Keys { private, public, fingerprint, _dir: dir }
}

fn example(name: &str) -> PathBuf {
    example_dist().join(format!("{name}.wasm"))
}

/// `corral publish` of an example plugin (with its manifest, if it has one); returns the digest.
fn publish(reference: &str, name: &str, key: Option<&Keys>) -> String {
    publish_with(reference, name, key, &[])
}

fn publish_with(reference: &str, name: &str, key: Option<&Keys>, env: &[(&str, &str)]) -> String {
    let file = example(name);
    let mut args = vec!["publish".to_owned(), file.display().to_string(), reference.to_owned()];
    let manifest = example_dist().join(format!("{name}.toml"));
    if manifest.exists() {
        args.extend(["--manifest".to_owned(), manifest.display().to_string()]);
    }
    if let Some(k) = key {
        args.extend(["--sign-key".to_owned(), k.private.display().to_string()]);
    }
    let out = ok(corral_with(&args.iter().map(String::as_str).collect::<Vec<_>>(), env));
    let digest = out.split("(sha256:").nth(1).and_then(|s| s.split(')').next()).unwrap_or_else(|| panic!("publish printed no digest: {out}"));
    format!("sha256:{digest}")
}

fn pull(dir: &Path, reference: &str, extra: &[&str]) -> Output {
    let mut args = vec!["pull", reference, "--plugins", dir.to_str().unwrap()];
    args.extend_from_slice(extra);
    corral(&args)
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

fn assert_untouched(dir: &Path) {
    assert_eq!(listing(dir), Vec::<String>::new(), "a failed pull wrote to the plugin directory");
}

fn tools_json(dir: &Path) -> Value {
    serde_json::from_str(&ok(corral(&["tools", "--json", "--plugins", dir.to_str().unwrap()]))).unwrap()
}

fn call(dir: &Path, tool: &str, arguments: Value) -> Value {
    serde_json::from_str(&ok(corral(&["call", "--plugins", dir.to_str().unwrap(), tool, &arguments.to_string()]))).unwrap()
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

#[test]
fn publish_pull_serve_call_and_serving_needs_no_registry_afterwards() {
    let mut registry = Registry::start();
    let k = keys(1);
    let reference = registry.reference("corral/hash:0.1.0");
    let digest = publish(&reference, "hash", Some(&k));

    let dir = tempfile::tempdir().unwrap();
    let out = ok(pull(dir.path(), &reference, &["--key", k.public.to_str().unwrap()]));
    assert!(out.contains(&digest) && out.contains(&k.fingerprint), "{out}");
    assert_eq!(listing(dir.path()), ["corral.lock", "hash.toml", "hash.wasm"]);
    assert_eq!(std::fs::read(dir.path().join("hash.wasm")).unwrap(), std::fs::read(example("hash")).unwrap());
    assert_eq!(std::fs::read(dir.path().join("hash.toml")).unwrap(), std::fs::read(example_dist().join("hash.toml")).unwrap());
    let lock = Lock::read(dir.path()).unwrap();
    let entry = lock.entry("hash").unwrap();
    assert_eq!(entry.reference, reference);
    assert_eq!(entry.digest, digest);
    assert_eq!(entry.wasm, corral::oci::sha256_digest(&std::fs::read(example("hash")).unwrap()));
    assert_eq!(entry.key.as_deref(), Some(k.fingerprint.as_str()));
    assert!(entry.pulled.ends_with('Z'), "{entry:?}");

    // Offline: the registry is gone, and the plugin serves from the lock as pulled.
    registry.stop();
    let result = call(dir.path(), "hash_chain", json!({"input": "corral", "rounds": 10}));
    assert_ne!(result["isError"], true, "{result}");
    assert!(result["structuredContent"]["digest"].is_string(), "{result}");
    let mut mcp = McpProcess::spawn(&["serve", "--plugins", dir.path().to_str().unwrap()]);
    mcp.initialize();
    let served = mcp.call_tool("hash_chain", json!({"input": "corral", "rounds": 10}));
    assert_ne!(served["isError"], true, "{served}");

    // Pulling again by digest is the same plugin, and needs the registry.
    let by_digest = format!("oci://{}/corral/hash@{digest}", registry.addr);
    let e = fails(pull(tempfile::tempdir().unwrap().path(), &by_digest, &[]));
    assert!(e.contains("cannot reach registry") && e.contains(&registry.addr), "{e}");
}

#[test]
fn a_plugin_that_changed_after_the_pull_is_refused_at_serve_time_and_others_load() {
    let registry = Registry::start();
    let reference = registry.reference("corral/text:1");
    publish(&reference, "text", None);
    let dir = tempfile::tempdir().unwrap();
    ok(pull(dir.path(), &reference, &[]));
    std::fs::copy(example("ticker"), dir.path().join("ticker.wasm")).unwrap();
    let pinned = Lock::read(dir.path()).unwrap().entry("text").unwrap().wasm.clone();

    // Same size, one byte different: only the digest can tell.
    let file = dir.path().join("text.wasm");
    let mut bytes = std::fs::read(&file).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&file, &bytes).unwrap();
    let tools = tools_json(dir.path());
    let refused = tools["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 1, "{tools:#}");
    assert_eq!(refused[0]["kind"], "digest-mismatch");
    let message = refused[0]["message"].as_str().unwrap();
    let actual = corral::oci::sha256_digest(&bytes);
    assert!(message.contains("text.wasm") && message.contains(&pinned) && message.contains(&actual) && message.contains(&reference), "{message}");
    // A plugin the lock does not list loads as before.
    assert!(tools["plugins"].as_array().unwrap().iter().any(|p| p["name"] == "ticker"), "{tools:#}");

    // Pulling again restores the pinned file.
    std::fs::remove_file(&file).unwrap();
    ok(pull(dir.path(), &reference, &[]));
    assert!(tools_json(dir.path())["refused"].as_array().unwrap().is_empty());
}

#[test]
fn a_tampered_blob_is_refused_and_nothing_is_written() {
    let registry = Registry::start();
    let reference = registry.reference("corral/text:1");
    publish(&reference, "text", None);
    let wasm_digest = corral::oci::sha256_digest(&std::fs::read(example("text")).unwrap());
    let blob = registry.blob_file(&wasm_digest);
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&blob, bytes).unwrap();

    let dir = tempfile::tempdir().unwrap();
    let e = fails(pull(dir.path(), &reference, &[]));
    assert!(e.contains("the component layer does not match its digest") && e.contains(&wasm_digest), "{e}");
    assert_untouched(dir.path());
}

#[test]
fn a_manifest_that_lies_about_its_digest_is_refused() {
    let registry = Registry::start();
    let reference = registry.reference("corral/text:1");
    let digest = publish(&reference, "text", None);
    // Rewrite the stored manifest: still valid JSON, but no longer the bytes its digest names.
    let blob = registry.blob_file(&digest);
    let mut manifest = std::fs::read(&blob).unwrap();
    manifest.push(b' ');
    std::fs::write(&blob, manifest).unwrap();

    let dir = tempfile::tempdir().unwrap();
    for r in [reference.clone(), format!("oci://{}/corral/text@{digest}", registry.addr)] {
        let e = fails(pull(dir.path(), &r, &[]));
        assert!(e.contains("the manifest does not match its digest") || e.contains("but its bytes are"), "{r}: {e}");
        assert!(e.contains(&digest), "{e}");
        assert_untouched(dir.path());
    }
}

#[test]
fn signatures_a_wrong_key_and_a_missing_signature_are_refused() {
    let registry = Registry::start();
    let (signer, stranger) = (keys(2), keys(3));
    let signed = registry.reference("corral/text:signed");
    let unsigned = registry.reference("corral/text:unsigned");
    let digest = publish(&signed, "text", Some(&signer));
    // Publishing is reproducible: the same files under another tag are the same manifest.
    assert_eq!(publish(&unsigned, "text", None), digest);
    let dir = tempfile::tempdir().unwrap();

    let e = fails(pull(dir.path(), &signed, &["--key", stranger.public.to_str().unwrap()]));
    assert!(e.contains(&format!("no valid signature by key {}", stranger.fingerprint)) && e.contains("a signature by another key"), "{e}");
    assert!(e.contains(&signed) && e.contains(&digest), "{e}");
    assert_untouched(dir.path());

    // The same manifest under another tag is signed too: the signature covers the digest.
    let e = fails(pull(dir.path(), &unsigned, &["--key", stranger.public.to_str().unwrap()]));
    assert!(e.contains("no valid signature"), "{e}");

    let e = fails(pull(dir.path(), &registry.reference("corral/hash:1").replace("hash:1", "text:unsigned"), &["--require-signatures"]));
    assert!(e.contains("--require-signatures needs --key"), "{e}");
    assert_untouched(dir.path());

    // An artifact nobody signed, with a key required.
    let other = registry.reference("corral/hash:1");
    publish(&other, "hash", None);
    let e = fails(pull(dir.path(), &other, &["--key", signer.public.to_str().unwrap(), "--require-signatures"]));
    assert!(e.contains(&other) && e.contains("is not signed: the registry has no cosign signature") && e.contains(".sig`"), "{e}");
    assert_untouched(dir.path());

    // A key file that is not a key.
    let e = fails(pull(dir.path(), &signed, &["--key", example("text").to_str().unwrap()]));
    assert!(e.contains("--key") || e.contains("PUBLIC KEY"), "{e}");

    ok(pull(dir.path(), &signed, &["--key", signer.public.to_str().unwrap()]));
    // Once pinned with a key, pulling again without it is refused.
    let e = fails(pull(dir.path(), &signed, &[]));
    assert!(e.contains(&signer.fingerprint), "{e}");
}

#[test]
fn a_layer_that_is_not_a_component_or_is_too_big_is_refused() {
    let registry = Registry::start();
    let module = wat::parse_str("(module)").unwrap();
    let reference = OciRef::parse(&registry.reference("corral/core:1")).unwrap();
    block_on(async {
        let conn = Connection::open(&reference, &Access::default(), true).await.unwrap();
        let artifact = Artifact { file_name: "core.wasm".into(), wasm: module.clone(), manifest: None, created: None };
        push_artifact(&conn, &reference, artifact).await.unwrap();
    });
    let dir = tempfile::tempdir().unwrap();
    let e = fails(pull(dir.path(), &reference.to_string(), &[]));
    assert!(e.contains("the `application/wasm` layer is not a component") && e.contains("core WebAssembly module"), "{e}");
    assert_untouched(dir.path());
    // `corral publish` refuses to publish it in the first place.
    let core = dir.path().join("core.wasm");
    std::fs::write(&core, &module).unwrap();
    let e = fails(corral(&["publish", core.to_str().unwrap(), &registry.reference("corral/core:2")]));
    assert!(e.contains("is not a component"), "{e}");
    std::fs::remove_file(&core).unwrap();

    let big = registry.reference("corral/stats:1");
    publish(&big, "stats", None);
    let e = fails(pull(dir.path(), &big, &["--max-plugin-size", "1MiB"]));
    assert!(e.contains("over the limit of 1048576") && e.contains("--max-plugin-size"), "{e}");
    assert_untouched(dir.path());
}

#[test]
fn a_moved_tag_is_reported_and_kept_until_update() {
    let registry = Registry::start();
    let reference = registry.reference("corral/tool:stable");
    let first = publish(&reference, "text", None);
    let dir = tempfile::tempdir().unwrap();
    ok(pull(dir.path(), &reference, &[]));
    let second = publish(&reference, "hash", None);
    assert_ne!(first, second);

    let out = pull(dir.path(), &reference, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    ok(out);
    assert!(stderr.contains(&format!("moved from {first} to {second}: keeping the pinned {first}")), "{stderr}");
    assert_eq!(Lock::read(dir.path()).unwrap().entry("tool").unwrap().digest, first);
    assert_eq!(std::fs::read(dir.path().join("tool.wasm")).unwrap(), std::fs::read(example("text")).unwrap());

    let out = pull(dir.path(), &reference, &["--update"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    ok(out);
    assert!(stderr.contains(&format!("moved from {first} to {second}: updated")), "{stderr}");
    assert_eq!(Lock::read(dir.path()).unwrap().entry("tool").unwrap().digest, second);
    assert_eq!(std::fs::read(dir.path().join("tool.wasm")).unwrap(), std::fs::read(example("hash")).unwrap());
    let result = call(dir.path(), "hash_chain", json!({"input": "x", "rounds": 1}));
    assert_ne!(result["isError"], true, "{result}");

    // A plugin file that was not pulled is not overwritten, nor is a name pinned elsewhere.
    std::fs::copy(example("text"), dir.path().join("mine.wasm")).unwrap();
    let e = fails(pull(dir.path(), &reference, &["--name", "mine"]));
    assert!(e.contains("mine.wasm exists") && e.contains("does not pin it"), "{e}");
    let e = fails(pull(dir.path(), &registry.reference("corral/other:1"), &["--name", "tool"]));
    assert!(e.contains("is pinned to") && e.contains("--update"), "{e}");
}

#[test]
fn namespaces_let_two_plugins_with_the_same_tool_names_serve() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a", "b"] {
        std::fs::copy(example("text"), dir.path().join(format!("{name}.wasm"))).unwrap();
    }
    // Without a namespace the second is refused, and the refusal suggests one.
    let tools = tools_json(dir.path());
    let refused = &tools["refused"][0];
    assert_eq!(refused["kind"], "duplicate-tool", "{tools:#}");
    let message = refused["message"].as_str().unwrap();
    assert!(message.contains("already taken by plugin `a`") && message.contains("namespace"), "{message}");

    write_manifest(dir.path(), "b", "namespace = \"acme\"\n");
    let tools = tools_json(dir.path());
    assert!(tools["refused"].as_array().unwrap().is_empty(), "{tools:#}");
    let b = tools["plugins"].as_array().unwrap().iter().find(|p| p["name"] == "b").unwrap();
    let names: Vec<&str> = b["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"acme_echo") && names.iter().all(|n| n.starts_with("acme_")), "{names:?}");
    let echo = b["tools"].as_array().unwrap().iter().find(|t| t["name"] == "acme_echo").unwrap();
    assert_eq!(echo["pluginToolName"], "echo");
    let table = ok(corral(&["tools", "--plugins", dir.path().to_str().unwrap()]));
    assert!(table.lines().any(|l| l.starts_with("acme_echo (echo)") && l.contains(" b ")), "{table}");

    let result = call(dir.path(), "acme_echo", json!({"text": "namespaced"}));
    assert_ne!(result["isError"], true, "{result}");
    assert!(result.to_string().contains("namespaced"), "{result}");
    let mut mcp = McpProcess::spawn(&["serve", "--plugins", dir.path().to_str().unwrap()]);
    mcp.initialize();
    assert_ne!(mcp.call_tool("echo", json!({"text": "plain"}))["isError"], true);
    assert_ne!(mcp.call_tool("acme_echo", json!({"text": "prefixed"}))["isError"], true);

    write_manifest(dir.path(), "b", "namespace = \"9lives\"\n");
    let tools = tools_json(dir.path());
    assert_eq!(tools["refused"][0]["kind"], "invalid-manifest", "{tools:#}");
}

#[test]
fn pull_namespace_is_written_to_the_manifest() {
    let registry = Registry::start();
    let reference = registry.reference("corral/hash:1");
    publish(&reference, "hash", None);
    let dir = tempfile::tempdir().unwrap();
    ok(pull(dir.path(), &reference, &["--namespace", "acme", "--name", "h"]));
    let toml = std::fs::read_to_string(dir.path().join("h.toml")).unwrap();
    assert!(toml.starts_with("namespace = \"acme\"\n") && toml.contains("[limits]"), "{toml}");
    let result = call(dir.path(), "acme_hash_chain", json!({"input": "x", "rounds": 1}));
    assert_ne!(result["isError"], true, "{result}");
    let e = fails(pull(dir.path(), &reference, &["--namespace", "a_b", "--name", "h2"]));
    assert!(e.contains("--namespace"), "{e}");
}

#[test]
fn a_namespace_prefixes_prompts_and_the_plugin_still_renders_them() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(test_guests().join("conformance.wasm"), dir.path().join("g.wasm")).unwrap();
    write_manifest(dir.path(), "g", "namespace = \"acme\"\n");
    let mut mcp = McpProcess::spawn(&["serve", "--plugins", dir.path().to_str().unwrap()]);
    mcp.initialize();
    let listed = mcp.result("prompts/list", json!({}));
    let names: Vec<&str> = listed["prompts"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"acme_test_simple_prompt") && names.iter().all(|n| n.starts_with("acme_")), "{names:?}");
    let simple = mcp.result("prompts/get", json!({ "name": "acme_test_simple_prompt" }));
    assert_eq!(simple["messages"][0]["content"]["text"], "This is a simple prompt for testing.", "{simple}");
    let unknown = mcp.request("prompts/get", json!({ "name": "test_simple_prompt" }));
    assert!(unknown["error"].is_object(), "the plugin's own name is not served: {unknown}");
}

/// Copies `repo:tag` and its cosign signature to `to` byte for byte, as a mirror (or an attacker
/// with push access to `to`) would: same manifest, same digest, same signature.
fn copy_with_signature(registry: &Registry, from: &str, to: &str, tag: &str, digest: &str) {
    use corral::oci::artifact::Manifest;
    use corral::oci::client::Bound;
    let bound = Bound { bytes: 64 << 20, flag: "test" };
    let source = OciRef::parse(&registry.reference(&format!("{from}:{tag}"))).unwrap();
    let target = OciRef::parse(&registry.reference(&format!("{to}:{tag}"))).unwrap();
    block_on(async {
        let src = Connection::open(&source, &Access::default(), false).await.unwrap();
        let dst = Connection::open(&target, &Access::default(), true).await.unwrap();
        let signature_tag = corral::oci::cosign::signature_tag(digest);
        for t in [tag, signature_tag.as_str()] {
            let (bytes, _) = src.manifest(&source.at_tag(t), bound).await.unwrap().unwrap();
            let manifest: Manifest = serde_json::from_slice(&bytes).unwrap();
            for d in std::iter::once(&manifest.config).chain(&manifest.layers) {
                dst.push_blob(d, src.blob(d, "a blob", bound).await.unwrap()).await.unwrap();
            }
            dst.push_manifest(&target.at_tag(t), bytes).await.unwrap();
        }
    });
}

#[test]
fn a_signed_artifact_copied_to_another_repository_is_refused_unless_named_as_its_mirror() {
    let registry = Registry::start();
    let k = keys(4);
    let evil = registry.reference("corral/evil:1");
    let digest = publish(&evil, "text", Some(&k));
    copy_with_signature(&registry, "corral/evil", "corral/search", "1", &digest);
    let search = registry.reference("corral/search:1");
    let (evil_repo, search_repo) = (format!("{}/corral/evil", registry.addr), format!("{}/corral/search", registry.addr));

    let dir = tempfile::tempdir().unwrap();
    let key = k.public.to_str().unwrap();
    let e = fails(pull(dir.path(), &search, &["--key", key]));
    assert!(e.contains(&format!("was made for {evil_repo}, not for {search_repo}")), "{e}");
    assert!(e.contains(&format!("--signed-identity {evil_repo}")) && e.contains(&digest), "{e}");
    assert_untouched(dir.path());

    // Naming another repository than the one signed is no better.
    let other = format!("{}/corral/other", registry.addr);
    let e = fails(pull(dir.path(), &search, &["--key", key, "--signed-identity", &other]));
    assert!(e.contains(&format!("not for {other}")), "{e}");
    assert_untouched(dir.path());

    // A mirror says where it mirrors from, and then the signature counts.
    let out = ok(pull(dir.path(), &search, &["--key", key, "--signed-identity", &evil_repo]));
    assert!(out.contains(&digest) && out.contains(&k.fingerprint), "{out}");
    assert_eq!(Lock::read(dir.path()).unwrap().entry("search").unwrap().reference, search);
    // The original repository needs no option.
    ok(pull(tempfile::tempdir().unwrap().path(), &evil, &["--key", key]));
}

#[test]
fn publishing_the_same_files_twice_gives_one_digest_and_source_date_epoch_is_the_only_time() {
    let registry = Registry::start();
    let a = publish(&registry.reference("corral/text:a"), "text", None);
    let b = publish(&registry.reference("corral/text:b"), "text", None);
    assert_eq!(a, b, "two publishes of one component must be one artifact");
    let manifest = std::fs::read_to_string(registry.blob_file(&a)).unwrap();
    assert!(!manifest.contains("org.opencontainers.image.created"), "{manifest}");

    let epoch = [("SOURCE_DATE_EPOCH", "1700000000")];
    let dated = publish_with(&registry.reference("corral/text:dated"), "text", None, &epoch);
    assert_ne!(dated, a);
    assert_eq!(publish_with(&registry.reference("corral/text:again"), "text", None, &epoch), dated);
    let manifest: Value = serde_json::from_str(&std::fs::read_to_string(registry.blob_file(&dated)).unwrap()).unwrap();
    assert_eq!(manifest["annotations"]["org.opencontainers.image.created"], "2023-11-14T22:13:20Z");
    let config = std::fs::read_to_string(registry.blob_file(manifest["config"]["digest"].as_str().unwrap())).unwrap();
    assert!(config.contains("\"created\":\"2023-11-14T22:13:20Z\""), "{config}");

    let e =
        fails(corral_with(&["publish", example("text").to_str().unwrap(), &registry.reference("corral/text:bad")], &[("SOURCE_DATE_EPOCH", "last tuesday")]));
    assert!(e.contains("SOURCE_DATE_EPOCH") && e.contains("whole number of seconds"), "{e}");
}

/// A registry that misbehaves on purpose: `/v2/` answers like a registry without auth,
/// `/v2/endless/manifests/*` streams a manifest that never ends (no length declared),
/// `/v2/huge/manifests/*` declares 1.2 GB, and `/v2/trickle/manifests/*` sends one byte every
/// 200 ms. Every response closes its connection.
struct SlowRegistry {
    addr: String,
}

impl SlowRegistry {
    fn start() -> SlowRegistry {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                std::thread::spawn(move || SlowRegistry::serve(stream));
            }
        });
        SlowRegistry { addr }
    }

    fn serve(mut stream: std::net::TcpStream) {
        use std::io::{Read, Write};
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match stream.read(&mut byte) {
                Ok(1) => head.push(byte[0]),
                _ => return,
            }
        }
        let head = String::from_utf8_lossy(&head).into_owned();
        let path = head.split_whitespace().nth(1).unwrap_or("").to_owned();
        let manifest_head =
            |length: &str| format!("HTTP/1.1 200 OK\r\nContent-Type: application/vnd.oci.image.manifest.v1+json\r\n{length}Connection: close\r\n\r\n");
        // Writes fail once corral hangs up: that ends the thread.
        let _ = if path == "/v2/" {
            stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
        } else if path.starts_with("/v2/endless/manifests/") {
            let chunk = vec![b' '; 64 << 10];
            stream.write_all(manifest_head("").as_bytes()).and_then(|()| loop {
                stream.write_all(&chunk)?;
            })
        } else if path.starts_with("/v2/huge/manifests/") {
            stream.write_all(manifest_head("Content-Length: 1200000000\r\n").as_bytes()).and_then(|()| stream.write_all(b"{"))
        } else if path.starts_with("/v2/trickle/manifests/") {
            stream.write_all(manifest_head("Content-Length: 1000\r\n").as_bytes()).and_then(|()| loop {
                stream.write_all(b" ")?;
                std::thread::sleep(std::time::Duration::from_millis(200));
            })
        } else {
            stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        };
    }
}

#[test]
fn a_manifest_over_its_bound_or_slower_than_the_pull_timeout_is_refused_and_nothing_is_written() {
    let registry = SlowRegistry::start();
    let dir = tempfile::tempdir().unwrap();
    let reference = |repo: &str| format!("oci://{}/{repo}:1", registry.addr);

    // Never ending, no length: refused once 64 KiB have arrived, not read on.
    let e = fails(pull(dir.path(), &reference("endless"), &["--max-manifest-size", "64KiB"]));
    assert!(e.contains("the manifest is more than 65536 bytes, over the limit of 65536 (--max-manifest-size)"), "{e}");
    assert_untouched(dir.path());
    // A declared length over the bound is refused before the body (the default bound: 4 MiB).
    let e = fails(pull(dir.path(), &reference("huge"), &[]));
    assert!(e.contains("the manifest is 1200000000 bytes, over the limit of 4194304 (--max-manifest-size)"), "{e}");
    assert_untouched(dir.path());

    // One byte every 200 ms would take 200 s; the pull gives up at its timeout. The bound on the
    // elapsed time only catches a pull that ignores the timeout altogether.
    let started = std::time::Instant::now();
    let e = fails(pull(dir.path(), &reference("trickle"), &["--pull-timeout", "2s"]));
    assert!(e.contains(&format!("{}: the pull did not finish within 2s (--pull-timeout)", reference("trickle"))), "{e}");
    assert!(started.elapsed() < std::time::Duration::from_secs(90), "the pull ran {:?}", started.elapsed());
    assert_untouched(dir.path());
}

/// A malformed `--state-secret` or `CORRAL_STATE_SECRET` is refused by name, never quoted.
#[test]
fn a_malformed_state_secret_is_refused_without_being_printed() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "0123456789abcdefSECRET-TEXT";
    let plugins = dir.path().to_str().unwrap();
    for out in
        [corral(&["serve", "--plugins", plugins, "--state-secret", secret]), corral_with(&["serve", "--plugins", plugins], &[("CORRAL_STATE_SECRET", secret)])]
    {
        let e = fails(out);
        assert!(!e.contains(secret) && !e.contains("SECRET-TEXT"), "the secret was printed: {e}");
        assert!(e.contains("--state-secret") && e.contains("CORRAL_STATE_SECRET") && e.contains("hexadecimal"), "{e}");
    }
}
