//! The compare bench's `instructions` group: the cost of a call counted in instructions under
//! callgrind, which gives the same count whatever else the machine runs (the timed groups
//! follow the load of a shared machine).
//!
//! ```text
//! cargo bench --bench compare -- instructions
//! ```
//!
//! Three programs answer the same `echo` of a text: the **null** server (`--null-server`,
//! serde_json and two pipes, no WASM), the **floor** (`floor.rs`: corral's engine and compile
//! cache, a fresh instance per call, no MCP) and **corral** (the release `corral serve`). Each
//! runs under `valgrind --tool=callgrind --separate-threads=no` (every thread in one count) once
//! with 1 010 calls and once with 2 010; the difference over 1 000 is one call, with the start,
//! the first calls and the exit cancelled out. Over HTTP the same is done with 2026-07-28 POSTs
//! on one keep-alive connection, against a null HTTP server of the same shape (`null_http.rs`).
//!
//! Spawn → first echo answered is the whole count of a process that gets `initialize` and one
//! call and then sees its stdin close: from `execve` to its exit, so it includes the exit too
//! (small beside the start: no calls are in flight). Toggling collection at the first answer
//! would need a symbol to toggle on in both servers; the whole process needs none.
//!
//! corral runs with `--max-instances 4`: valgrind cannot reserve the address space of the
//! default pool. Its compile cache (and the floor's) is warmed under valgrind first, because
//! valgrind shows the guest fewer CPU features, and cache entries are keyed by them.
//!
//! The callgrind files stay in `<target>/compare-instructions/` for `callgrind_annotate`; the
//! group also prints, for corral and the floor, the functions that take most of one call, from
//! `callgrind_annotate` of both files differenced the same way.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::json;

use super::null_http;
use super::{check_echo_of, load_average, Session, ECHO};

/// Instance slots of the pool under valgrind, for corral and the floor alike.
pub const MAX_INSTANCES: &str = "4";

/// A policy of the size an operator writes: rules for other principals first (each one looked at
/// and passed over), two denies that do not cover `echo`, the local user's allow last, and a
/// rate the calls never spend (so every call takes a token from a bucket and is let through).
const BENCH_POLICY: &str = r#"
[[deny]]
who = { anyone = true }
tools = ["*_delete", "shell*"]
[[deny]]
who = { group = "contractors" }
plugins = "internal-*"
[[allow]]
who = { token = "ci" }
plugins = ["calc", "hash"]
[[allow]]
who = { token = ["bot-1", "bot-2", "bot-3"] }
tools = ["echo", "word_count"]
[[allow]]
who = { issuer = "https://id.example", group = "ops" }
plugins = "*"
tasks = "any"
[[allow]]
who = { issuer = "https://id.example", scope = "tools:read" }
tools = ["*_get", "*_list"]
[[allow]]
who = { subject = ["alice", "bob", "carol"] }
plugins = "text"
[[allow]]
who = { client = "vscode" }
prompts = "*"
[[allow]]
who = { group = "analysts" }
resources = ["file:///reports/*"]
[[allow]]
who = { token = "staging" }
plugins = "stag*"
[[allow]]
who = { local = true }
plugins = ["calc", "hash", "text"]
[[limit]]
who = { token = "ci" }
rate = "10/s"
[[limit]]
who = { local = true }
rate = "1000000/s"
"#;

/// The two call counts differenced.
const FEW: usize = 1_010;
const MANY: usize = 2_010;

/// The large call: a 10 KB argument, echoed back as a 10 KB result.
const LARGE: usize = 10 * 1024;

/// Functions printed per profile.
const TOP: usize = 25;

/// `bytes` of text to echo: [`ECHO`] repeated.
pub fn echo_text(bytes: usize) -> String {
    ECHO.repeat(bytes / ECHO.len() + 1)[..bytes].to_owned()
}

/// Runs the group.
pub fn run(text_wasm: &Path, target: &Path) {
    if let Err(why) = Command::new("valgrind").arg("--version").output().map_err(|e| e.to_string()).and_then(|o| {
        if o.status.success() {
            Ok(())
        } else {
            Err(format!("valgrind --version exited with {}", o.status))
        }
    }) {
        eprintln!("the instructions group needs valgrind (its callgrind tool) and callgrind_annotate: {why}");
        eprintln!("install them first, e.g. `apt-get install valgrind`; nothing was measured");
        std::process::exit(1);
    }
    let dir = target.join("compare-instructions");
    std::fs::create_dir_all(dir.join("plugins")).expect("creating the work directory");
    std::fs::copy(text_wasm, dir.join("plugins/text.wasm")).expect("copying text.wasm");
    let corral = PathBuf::from(env!("CARGO_BIN_EXE_corral"));
    let me = std::env::current_exe().expect("this bench's own path");
    let setup = Setup { dir: dir.clone(), corral, me };

    println!("instructions group: callgrind, ({MANY} calls − {FEW} calls) / {}, every thread counted; files in {}", MANY - FEW, dir.display());
    println!("load average at start: {} (counts do not depend on it)", load_average());
    // Warm both compile caches under valgrind, so that no measured run compiles.
    setup.stdio(&setup.corral_stdio(), "warm-corral", 1, ECHO);
    setup.floor("warm-floor", 1, ECHO.len());

    let small = ECHO.to_owned();
    let large = echo_text(LARGE);
    let mut rows = Vec::new();
    for (label, text) in [("echo 100 B, stdio", &small), ("echo 10 KB in and out, stdio", &large)] {
        let size = text.len();
        let tag = if size == LARGE { "10k" } else { "100" };
        let null = setup.per_call(&format!("null-{tag}"), |name, n| setup.stdio(&setup.null_stdio(), name, n, text));
        let floor = setup.per_call(&format!("floor-{tag}"), |name, n| setup.floor(name, n, size));
        let corral = setup.per_call(&format!("corral-{tag}"), |name, n| setup.stdio(&setup.corral_stdio(), name, n, text));
        rows.push(Row { label: label.into(), null, floor: Some(floor), corral });
    }
    // The same small call under a policy: what deciding it costs (and taking a token from the
    // local user's bucket), beside the call without one.
    std::fs::write(dir.join("policy.toml"), BENCH_POLICY).expect("writing the bench's policy");
    let policed = setup.per_call("policy-100", |name, n| setup.stdio(&setup.corral_stdio_policed(), name, n, &small));
    // The same call with every span sampled and exported over OTLP/HTTP to a sink here: what
    // tracing on costs, the exporter's thread included.
    let sink = otlp_sink();
    let traced = setup.per_call("traces-100", |name, n| setup.stdio(&setup.corral_stdio_traced(&sink), name, n, &small));
    let plain = rows[0].corral;
    let null = setup.per_call("null-http", |name, n| setup.null_http(name, n));
    let corral = setup.per_call("corral-http", |name, n| setup.corral_http(name, n));
    rows.push(Row { label: "echo 100 B, HTTP 2026-07-28 (one keep-alive connection)".into(), null, floor: None, corral });
    let null_start = setup.stdio(&setup.null_stdio(), "start-null", 1, ECHO);
    let corral_start = setup.stdio(&setup.corral_stdio(), "start-corral", 1, ECHO);

    println!();
    println!("instructions per call; load average at end: {}", load_average());
    println!("| call | null | floor | corral | corral / null | (corral − floor) / null |");
    println!("|---|---|---|---|---|---|");
    for row in &rows {
        let floor = row.floor.map_or("—".into(), |f| group(f as u64));
        let over = row.floor.map_or("—".into(), |f| format!("{:.2}×", (row.corral - f) / row.null));
        println!("| {} | {} | {floor} | {} | {:.2}× | {over} |", row.label, group(row.null as u64), group(row.corral as u64), row.corral / row.null);
    }
    println!(
        "| spawn → first echo answered (execve to exit, cache warm) | {} | — | {} | {:.2}× | — |",
        group(null_start),
        group(corral_start),
        corral_start as f64 / null_start as f64
    );

    println!();
    println!("| echo 100 B, stdio | corral | corral --policy (13 rules, a rate) | difference | ratio |");
    println!("|---|---|---|---|---|");
    println!("| instructions per call | {} | {} | {} | {:.3}× |", group(plain as u64), group(policed as u64), (policed - plain) as i64, policed / plain);

    println!();
    println!("| echo 100 B, stdio | corral (no OTEL_* variables) | corral, every span sampled and exported | difference | ratio |");
    println!("|---|---|---|---|---|");
    println!("| instructions per call | {} | {} | {} | {:.3}× |", group(plain as u64), group(traced as u64), (traced - plain) as i64, traced / plain);

    for who in ["corral-100", "floor-100", "corral-10k", "policy-100", "traces-100"] {
        for inclusive in [false, true] {
            setup.profile(who, inclusive);
        }
    }
}

/// One line of the table: instructions per call.
struct Row {
    label: String,
    null: f64,
    floor: Option<f64>,
    corral: f64,
}

struct Setup {
    dir: PathBuf,
    corral: PathBuf,
    me: PathBuf,
}

impl Setup {
    /// `valgrind --tool=callgrind` running `program`, its counts in `<dir>/<name>.out`.
    fn callgrind(&self, name: &str, program: &Path) -> Command {
        let mut cmd = Command::new("valgrind");
        cmd.arg("--tool=callgrind").arg("--separate-threads=no");
        cmd.arg(format!("--callgrind-out-file={}", self.out(name).display()));
        cmd.arg(format!("--log-file={}", self.dir.join(format!("{name}.log")).display()));
        cmd.arg(program).env_remove("RUST_LOG").env("NO_COLOR", "1");
        cmd
    }

    fn out(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.out"))
    }

    /// `run(name, calls)` for [`FEW`] and [`MANY`] calls, and the difference per call.
    fn per_call(&self, name: &str, run: impl Fn(&str, usize) -> u64) -> f64 {
        let few = run(&format!("{name}-{FEW}"), FEW);
        let many = run(&format!("{name}-{MANY}"), MANY);
        let per_call = (many as f64 - few as f64) / (MANY - FEW) as f64;
        println!(
            "{name:<12} {FEW} calls {:>15}  {MANY} calls {:>15}  per call {:>9}   [load {}]",
            group(few),
            group(many),
            group(per_call as u64),
            load_average()
        );
        per_call
    }

    fn null_stdio(&self) -> Command {
        let mut cmd = self.callgrind("", &self.me);
        cmd.arg("--null-server");
        cmd
    }

    fn corral_stdio(&self) -> Command {
        let mut cmd = self.callgrind("", &self.corral);
        self.corral_args(&mut cmd, "error");
        cmd
    }

    /// [`Setup::corral_stdio`] under [`BENCH_POLICY`].
    fn corral_stdio_policed(&self) -> Command {
        let mut cmd = self.corral_stdio();
        cmd.arg("--policy").arg(self.dir.join("policy.toml"));
        cmd
    }

    /// [`Setup::corral_stdio`] exporting every span to `sink` (an OTLP/HTTP base URL).
    fn corral_stdio_traced(&self, sink: &str) -> Command {
        let mut cmd = self.corral_stdio();
        cmd.env("OTEL_EXPORTER_OTLP_ENDPOINT", sink).env("OTEL_TRACES_SAMPLER", "always_on");
        cmd
    }

    fn corral_args(&self, cmd: &mut Command, level: &str) {
        cmd.arg("serve").arg("--plugins").arg(self.dir.join("plugins")).arg("--cache-dir").arg(self.dir.join("cache"));
        cmd.args(["--db", ":memory:", "--max-instances", MAX_INSTANCES, "--log-level", level]);
    }

    /// A stdio server (`cmd`, whose output file is then named) given `initialize` and `calls`
    /// echoes of `text`, one at a time, then the end of its stdin: its instruction count.
    fn stdio(&self, cmd: &Command, name: &str, calls: usize, text: &str) -> u64 {
        let cmd = self.renamed(cmd, name);
        let mut s = Session::spawn(&cmd);
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "compare-bench", "version": "0"}}});
        s.send(&format!("{init}\n"));
        assert!(s.read().contains("protocolVersion"), "initialize failed: {}", s.line);
        s.send("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        for id in 1..=calls {
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": text}}});
            s.send(&format!("{call}\n"));
            check_echo_of(s.read(), text);
        }
        s.stop();
        total(&self.out(name))
    }

    /// The floor process making `calls` calls with a text of `bytes`: its instruction count.
    fn floor(&self, name: &str, calls: usize, bytes: usize) -> u64 {
        let mut cmd = self.callgrind(name, &self.me);
        cmd.arg("--floor").arg(self.dir.join("plugins/text.wasm")).arg(self.dir.join("floor-cache"));
        cmd.arg(calls.to_string()).arg(bytes.to_string());
        let status = cmd.stdin(Stdio::null()).status().expect("running the floor under valgrind");
        assert!(status.success(), "the floor exited with {status}");
        total(&self.out(name))
    }

    /// The null HTTP server answering `calls` POSTs on one connection.
    fn null_http(&self, name: &str, calls: usize) -> u64 {
        let mut cmd = self.callgrind(name, &self.me);
        let mut child = cmd.arg("--null-http-server").stdout(Stdio::piped()).spawn().expect("starting the null HTTP server");
        let mut port = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut port).unwrap();
        let mut client = null_http::Client::connect(port.trim().parse().expect("the null HTTP server's port"));
        for id in 1..=calls {
            check_echo_of(&client.echo(id, ECHO), ECHO);
        }
        drop(client);
        let status = child.wait().unwrap();
        assert!(status.success(), "the null HTTP server exited with {status}");
        total(&self.out(name))
    }

    /// `corral serve --http` answering `calls` POSTs on one connection, then stopped with
    /// SIGTERM (its ordinary shutdown, after which callgrind writes its counts).
    fn corral_http(&self, name: &str, calls: usize) -> u64 {
        let mut cmd = self.callgrind(name, &self.corral);
        self.corral_args(&mut cmd, "info");
        cmd.args(["--http", "127.0.0.1:0"]);
        let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("starting corral over HTTP");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        let port = loop {
            line.clear();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "corral exited before serving HTTP");
            if let Some(at) = line.find("serving MCP over HTTP at http://127.0.0.1:") {
                let rest = &line[at + "serving MCP over HTTP at http://127.0.0.1:".len()..];
                break rest[..rest.find('/').unwrap()].parse::<u16>().expect("a port");
            }
        };
        // Keep draining the log so that corral never blocks on a full pipe.
        let drain = std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        let mut client = null_http::Client::connect(port);
        for id in 1..=calls {
            check_echo_of(&client.echo(id, ECHO), ECHO);
        }
        drop(client);
        let status = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().expect("running kill");
        assert!(status.success(), "kill -TERM failed");
        let status = child.wait().unwrap();
        assert!(status.success(), "corral exited with {status}");
        let _ = drain.join();
        total(&self.out(name))
    }

    /// `cmd` with its callgrind and log files named `name`.
    fn renamed(&self, cmd: &Command, name: &str) -> Command {
        let mut copy = Command::new(cmd.get_program());
        for arg in cmd.get_args() {
            let arg = arg.to_string_lossy();
            if arg.starts_with("--callgrind-out-file=") {
                copy.arg(format!("--callgrind-out-file={}", self.out(name).display()));
            } else if arg.starts_with("--log-file=") {
                copy.arg(format!("--log-file={}", self.dir.join(format!("{name}.log")).display()));
            } else {
                copy.arg(&*arg);
            }
        }
        for (k, v) in cmd.get_envs() {
            match v {
                Some(v) => copy.env(k, v),
                None => copy.env_remove(k),
            };
        }
        copy
    }

    /// The [`TOP`] functions by instructions per call of `who` (`corral-100`, `floor-100`):
    /// `callgrind_annotate` of its two files, differenced.
    ///
    /// A function inlined from several files is listed once per file by `callgrind_annotate`:
    /// self counts are summed, inclusive ones the largest taken. Inclusive counts above 97 % of
    /// the call (the thread and runtime frames every call runs under) are left out.
    fn profile(&self, who: &str, inclusive: bool) {
        let few = annotate(&self.out(&format!("{who}-{FEW}")), inclusive);
        let many = annotate(&self.out(&format!("{who}-{MANY}")), inclusive);
        let mut by_name: HashMap<String, f64> = HashMap::new();
        for (function, n) in &many {
            let n = (*n as f64 - few.get(function).copied().unwrap_or(0) as f64) / (MANY - FEW) as f64;
            let entry = by_name.entry(shorten(function)).or_default();
            *entry = if inclusive { entry.max(n) } else { *entry + n };
        }
        let call = (total(&self.out(&format!("{who}-{MANY}"))) as f64 - total(&self.out(&format!("{who}-{FEW}"))) as f64) / (MANY - FEW) as f64;
        let mut per_call: Vec<(String, f64)> = by_name.into_iter().filter(|(_, n)| !inclusive || *n < 0.97 * call).collect();
        per_call.sort_by(|a, b| b.1.total_cmp(&a.1));
        println!();
        println!("{who}: top {TOP} functions by {} instructions per call", if inclusive { "inclusive" } else { "self" });
        println!("| instr/call | function |");
        println!("|---|---|");
        for (function, n) in per_call.iter().take(TOP) {
            println!("| {} | `{function}` |", group(*n as u64));
        }
    }
}

/// The program's total from a callgrind file (`summary:` or `totals:`).
fn total(out: &Path) -> u64 {
    let text = std::fs::read_to_string(out).unwrap_or_else(|e| panic!("reading {}: {e}", out.display()));
    let line = text.lines().find(|l| l.starts_with("summary:")).or_else(|| text.lines().find(|l| l.starts_with("totals:")));
    line.and_then(|l| l.split_whitespace().nth(1)?.parse().ok()).unwrap_or_else(|| panic!("no total in {}", out.display()))
}

/// Instructions by function from `callgrind_annotate` (every function: no threshold).
fn annotate(out: &Path, inclusive: bool) -> HashMap<String, u64> {
    let output = Command::new("callgrind_annotate")
        .arg(format!("--inclusive={}", if inclusive { "yes" } else { "no" }))
        .args(["--threshold=100", "--auto=no"])
        .arg(out)
        .output()
        .expect("running callgrind_annotate");
    assert!(output.status.success(), "callgrind_annotate failed: {}", String::from_utf8_lossy(&output.stderr));
    let mut functions = HashMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let line = line.trim();
        let Some((count, rest)) = line.split_once(' ') else { continue };
        let Ok(count) = count.replace(',', "").parse::<u64>() else { continue };
        // `1,234 (5.6%)  file:function [object]`, the percentage only in some versions.
        let rest = rest.trim_start();
        let rest = if rest.starts_with('(') { rest.split_once(')').map_or(rest, |(_, r)| r) } else { rest };
        let name = rest.trim();
        if name.is_empty() || name.contains("PROGRAM TOTALS") {
            continue;
        }
        *functions.entry(name.to_owned()).or_default() += count;
    }
    functions
}

/// A function's name without its file and object, and with long generic arguments cut.
fn shorten(function: &str) -> String {
    let name = function.split_once(':').map_or(function, |(file, f)| if file.contains(' ') { function } else { f });
    let name = name.rsplit_once(" [").map_or(name, |(f, _)| f);
    if name.chars().count() > 120 {
        name.chars().take(117).collect::<String>() + "…"
    } else {
        name.to_owned()
    }
}

/// `1234567` as `1 234 567`.
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

/// An OTLP/HTTP sink on 127.0.0.1 that takes every export and answers 200 with an empty
/// response (what a collector does), on threads of its own; its base URL.
fn otlp_sink() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binding the OTLP sink");
    let base = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().expect("cloning the sink's socket"));
                let mut writer = stream;
                loop {
                    let mut length = 0usize;
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 {
                            return;
                        }
                        let line = line.trim_end();
                        if line.is_empty() {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':') {
                            if name.eq_ignore_ascii_case("content-length") {
                                length = value.trim().parse().unwrap_or(0);
                            }
                        }
                    }
                    let mut body = vec![0; length];
                    if reader.read_exact(&mut body).is_err() {
                        return;
                    }
                    let answer = b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
                    if writer.write_all(answer).is_err() {
                        return;
                    }
                }
            });
        }
    });
    base
}
