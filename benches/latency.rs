//! Latency benchmarks for corral (see BENCHMARKS.md for results and how to read them).
//!
//! ```text
//! cargo bench --bench latency                  # every group
//! cargo bench --bench latency -- stdio         # one group: stdio | instantiate | cancel
//! cargo bench --bench latency -- whatif        # opt-in experiment, not run by default
//! ```
//!
//! * `stdio`: `tools/call` of `echo` (and `ping`) through the real `corral serve` binary, one
//!   request at a time, timed from writing the request line to reading the response line. Run
//!   three times: scheduler's choice of cores, everything pinned to cpu 0, and client and server
//!   pinned to different cpus (pinning uses `taskset`).
//! * `instantiate`: in-process `Runtime::call_tool` (fresh store + instance per call, as the host
//!   does) of `echo` in the example Rust plugin, and of a trivial WAT component for comparison.
//! * `cancel`: a guest spinning in `(loop $l (br $l))`: time from cancelling its token (+
//!   `Runtime::interrupt`, as the server does on `notifications/cancelled`) to the call future
//!   returning `Failure::Cancelled`; and how far past its deadline a timed-out call returns
//!   (next to how late tokio's timer alone is, the floor under that figure).
//! * `whatif` (only when named): the same per-call work in bare wasmtime, with the host's pool
//!   settings and with memories kept resident, and a deadline checked in the epoch callback.
//!   Evidence for BENCHMARKS.md, not a measurement of corral.
//!
//! Each figure is printed as n / p50 / p99 / mean / max, with the load average next to it: the
//! machine is shared, so read the figures together with the load.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use corral::config::Limits;
use corral::runtime::{CallContext, CallObserver, Content, Failure, PluginCode, Runtime, RuntimeSettings, Silent};
use serde_json::{json, Value};
use wasmtime::component::{Component, Linker, ResourceTable, Val};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, Store, Trap, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

#[allow(dead_code)]
#[path = "../tests/common/fixture.rs"]
mod fixture;

use fixture::{Fixture, ToolDef};

const STDIO_WARMUP: usize = 2_000;
const STDIO_N: usize = 20_000;
const CALL_WARMUP: usize = 2_000;
const CALL_N: usize = 20_000;
const CANCEL_N: usize = 300;
/// A call is cancelled this long after it started: 5..=20 ms, varied so that the cancel does
/// not always land at the same phase of the epoch tick.
const CANCEL_DELAYS_MS: std::ops::RangeInclusive<u64> = 5..=20;
const DEADLINE: Duration = Duration::from_millis(20);

/// Every group; the last one runs only when named.
const GROUPS: [&str; 4] = ["stdio", "instantiate", "cancel", "whatif"];

const ECHO_TEXT: &str = "hello, corral";
const SPIN: &str = "(loop $l (br $l)) unreachable";

fn main() {
    // `cargo bench` passes `--bench`; anything not starting with `-` selects groups by name.
    let filters: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let selected = |group: &str| filters.is_empty() || filters.iter().any(|f| group.contains(f.as_str()));
    if let Some(unknown) = filters.iter().find(|f| !GROUPS.iter().any(|g| g.contains(f.as_str()))) {
        eprintln!("no benchmark group matches `{unknown}`; groups: {}", GROUPS.join(", "));
        std::process::exit(2);
    }

    let dist = plugins_dist();
    println!("corral latency benchmarks (cpus {}, epoch tick {:?})", cpus_allowed(), RuntimeSettings::default().epoch_tick);
    if selected("stdio") {
        stdio_group(&dist);
    }
    if selected("instantiate") {
        instantiate_group(&dist);
    }
    if selected("cancel") {
        cancel_group();
    }
    // Opt-in: only when asked for by name.
    if filters.iter().any(|f| f == "whatif") {
        whatif_group(&dist);
    }
}

// ---------------------------------------------------------------------------------------------
// statistics

/// Nearest-rank percentile of sorted samples (`q` in 0..=1).
fn percentile(sorted: &[Duration], q: f64) -> Duration {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Prints a group's title and column heads; the returned snapshot reports the machine's state
/// over the group when the group ends.
fn print_header(title: &str) -> Machine {
    println!();
    println!("== {title}   [load average {}]", load_average());
    println!("{:<52} {:>6} {:>10} {:>10} {:>10} {:>10}", "measurement", "n", "p50", "p99", "mean", "max");
    Machine::now()
}

fn report(name: &str, mut samples: Vec<Duration>) {
    assert!(!samples.is_empty(), "{name}: no samples");
    samples.sort_unstable();
    let n = samples.len();
    let mean = samples.iter().sum::<Duration>() / n as u32;
    println!("{name:<52} {n:>6} {:>10} {:>10} {:>10} {:>10}", fmt(percentile(&samples, 0.50)), fmt(percentile(&samples, 0.99)), fmt(mean), fmt(samples[n - 1]),);
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1000.0 {
        format!("{us:.1} µs")
    } else {
        format!("{:.3} ms", us / 1000.0)
    }
}

fn load_average() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
}

/// CPU time of the whole machine since a snapshot, from `/proc/stat`: how busy the cpus were
/// (every process, this benchmark included) and how much the hypervisor stole.
struct Machine {
    start: CpuTicks,
}

#[derive(Clone, Copy, Default)]
struct CpuTicks {
    busy: u64,
    steal: u64,
    total: u64,
}

impl CpuTicks {
    fn read() -> CpuTicks {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let Some(line) = stat.lines().find(|l| l.starts_with("cpu ")) else { return CpuTicks::default() };
        // user nice system idle iowait irq softirq steal ...
        let v: Vec<u64> = line.split_whitespace().skip(1).take(8).filter_map(|x| x.parse().ok()).collect();
        if v.len() < 8 {
            return CpuTicks::default();
        }
        CpuTicks { busy: v[0] + v[1] + v[2] + v[5] + v[6], steal: v[7], total: v.iter().sum() }
    }
}

impl Machine {
    fn now() -> Machine {
        Machine { start: CpuTicks::read() }
    }

    fn summary(&self) -> String {
        let end = CpuTicks::read();
        let total = end.total.saturating_sub(self.start.total).max(1) as f64;
        let pct = |a: u64, b: u64| 100.0 * a.saturating_sub(b) as f64 / total;
        format!(
            "load average {}; during the group: cpus {:.0}% busy, {:.0}% stolen by the hypervisor",
            load_average(),
            pct(end.busy, self.start.busy),
            pct(end.steal, self.start.steal)
        )
    }
}

/// The cpus this process may run on, as `taskset` spells them (e.g. `0-1`).
fn cpus_allowed() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).map(|s| s.trim().to_string()).unwrap_or_else(|| "?".into())
}

// ---------------------------------------------------------------------------------------------
// fixtures

/// `plugins/dist`, built with `scripts/build-plugins.sh` if `text.wasm` is missing.
fn plugins_dist() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dist = root.join("plugins/dist");
    if !dist.join("text.wasm").exists() {
        println!("plugins/dist/text.wasm is missing: running scripts/build-plugins.sh");
        let status = Command::new(root.join("scripts/build-plugins.sh")).status().expect("running scripts/build-plugins.sh");
        assert!(status.success(), "scripts/build-plugins.sh failed: {status}");
    }
    dist
}

fn spin_component() -> Vec<u8> {
    Fixture::new().tool(ToolDef::new("spin").body(SPIN)).build()
}

fn multi_thread_runtime() -> tokio::runtime::Runtime {
    // The same runtime as `corral serve`: multi-threaded, one worker per cpu.
    tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("starting tokio")
}

fn silent() -> Arc<dyn CallObserver> {
    Arc::new(Silent)
}

// ---------------------------------------------------------------------------------------------
// 1. stdio round trip through the real binary

/// `corral serve` on piped stdio, driven synchronously from this thread (no reader thread, so
/// the client side adds no hop of its own).
struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

impl Server {
    /// Starts the server, under `taskset -c CPUS` if `cpus` is given, and initializes a session.
    fn start(dist: &Path, cpus: Option<&str>) -> Server {
        let exe = env!("CARGO_BIN_EXE_corral");
        let mut cmd = match cpus {
            Some(cpus) => {
                let mut c = Command::new("taskset");
                c.args(["-c", cpus, exe]);
                c
            }
            None => Command::new(exe),
        };
        cmd.arg("serve").arg("--plugins").arg(dist).args(["--log-level", "error"]);
        cmd.env_remove("RUST_LOG").env("NO_COLOR", "1");
        let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().expect("starting corral serve");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut server = Server { child, stdin, stdout, line: String::new() };

        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "latency-bench", "version": "0"}}});
        server.round_trip(&format!("{init}\n"));
        let answer = server.response();
        assert!(answer["result"]["protocolVersion"].is_string(), "initialize failed: {answer}");
        server.send(&format!("{}\n", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})));
        server
    }

    fn send(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).and_then(|_| self.stdin.flush()).expect("writing to corral");
    }

    /// Writes one request line and reads one response line; returns the time in between.
    fn round_trip(&mut self, request: &str) -> Duration {
        self.line.clear();
        let start = Instant::now();
        self.send(request);
        let n = self.stdout.read_line(&mut self.line).expect("reading from corral");
        let elapsed = start.elapsed();
        assert!(n > 0, "corral closed stdout");
        elapsed
    }

    /// The last response, parsed.
    fn response(&self) -> Value {
        serde_json::from_str(&self.line).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.line))
    }

    fn stop(self) {
        let Server { mut child, stdin, .. } = self;
        drop(stdin);
        let status = child.wait().expect("waiting for corral");
        assert!(status.success(), "corral exited with {status}");
    }
}

fn echo_request(id: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"{ECHO_TEXT}"}}}}}}"#) + "\n"
}

fn ping_request(id: usize) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#) + "\n"
}

fn check_echo(id: usize, answer: &Value) {
    assert_eq!(answer["id"], id, "{answer}");
    assert_ne!(answer["result"]["isError"], json!(true), "echo failed: {answer}");
    assert_eq!(answer["result"]["content"][0]["text"], ECHO_TEXT, "unexpected echo answer: {answer}");
}

/// Echo and ping, interleaved (so a change of load hits both alike), after a warm-up.
/// `server_cpus`/`client_cpus` pin the server process and this (main) thread with `taskset`.
fn stdio_placement(dist: &Path, label: &str, server_cpus: Option<&str>, client_cpus: Option<&str>) {
    let original = cpus_allowed();
    if let Some(cpus) = client_cpus {
        pin_this_thread(cpus);
    }
    let mut server = Server::start(dist, server_cpus);
    let mut id = 1;
    let (mut calls, mut pings) = (Vec::with_capacity(STDIO_N), Vec::with_capacity(STDIO_N));
    for i in 0..STDIO_WARMUP + STDIO_N {
        let call = echo_request(id);
        let t = server.round_trip(&call);
        check_echo(id, &server.response());
        let ping = ping_request(id + 1);
        let p = server.round_trip(&ping);
        assert_eq!(server.response()["id"], id + 1);
        id += 2;
        if i >= STDIO_WARMUP {
            calls.push(t);
            pings.push(p);
        }
    }
    server.stop();
    if client_cpus.is_some() {
        pin_this_thread(&original);
    }
    report(&format!("tools/call echo, {label}"), calls);
    report(&format!("ping, {label}"), pings);
}

/// Pins the calling thread (the main thread: its tid is the pid) with `taskset -p`.
fn pin_this_thread(cpus: &str) {
    let status = Command::new("taskset").args(["-p", "-c", cpus, &std::process::id().to_string()]).stdout(Stdio::null()).status().expect("running taskset");
    assert!(status.success(), "taskset -p -c {cpus} failed");
}

fn stdio_group(dist: &Path) {
    let machine = print_header(&format!("stdio round trip through `corral serve` (release), {STDIO_N} sequential requests each, after {STDIO_WARMUP} warm-up"));
    stdio_placement(dist, "cores: scheduler's choice", None, None);
    let have_taskset = Command::new("taskset").arg("-V").stdout(Stdio::null()).status().is_ok_and(|s| s.success());
    if !have_taskset {
        println!("(taskset not found: pinned placements skipped)");
        return;
    }
    stdio_placement(dist, "all on cpu 0", Some("0"), Some("0"));
    if cpus_allowed() != "0" {
        stdio_placement(dist, "server cpu 0, client cpu 1", Some("0"), Some("1"));
    }
    println!("target: tools/call p50 <= 40 µs   [{}]", machine.summary());
}

// ---------------------------------------------------------------------------------------------
// 2. in-process instantiate + call

/// `Runtime::call_tool` `CALL_N` times in a row after `CALL_WARMUP` calls; each is a fresh store
/// and instance. Timed around `call_tool` alone (the `CallContext` is made before the clock starts).
async fn time_calls(runtime: &Runtime, code: &PluginCode, tool: &str, arguments: &str) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(CALL_N);
    for i in 0..CALL_WARMUP + CALL_N {
        let ctx = CallContext::new(Limits::default(), silent());
        let start = Instant::now();
        let result = runtime.call_tool(code, tool, arguments, ctx).await;
        let elapsed = start.elapsed();
        let result = result.unwrap_or_else(|f| panic!("{tool} failed: {}", f.describe(tool)));
        if i == 0 {
            assert!(matches!(result.content.first(), Some(Content::Text(_))), "{tool} returned no text");
        }
        if i >= CALL_WARMUP {
            samples.push(elapsed);
        }
    }
    samples
}

fn instantiate_group(dist: &Path) {
    let machine = print_header(&format!("in-process Runtime::call_tool (fresh store + instance per call), {CALL_N} calls after {CALL_WARMUP} warm-up"));
    let tokio = multi_thread_runtime();
    let runtime = Runtime::new(RuntimeSettings::default()).expect("creating the runtime");
    let wasm = std::fs::read(dist.join("text.wasm")).expect("reading text.wasm");
    let text = runtime.compile("text", &wasm).unwrap_or_else(|e| panic!("compiling text.wasm: {e:?}"));
    let wat = runtime.compile("fixture", &Fixture::new().tool(ToolDef::new("echo")).build()).unwrap_or_else(|e| panic!("compiling the WAT fixture: {e:?}"));

    let arguments = json!({ "text": ECHO_TEXT }).to_string();
    let rust = tokio.block_on(time_calls(&runtime, &text, "echo", &arguments));
    report(&format!("echo, text.wasm (Rust wasip2, {} KB)", wasm.len() / 1000), rust);
    let trivial = tokio.block_on(time_calls(&runtime, &wat, "echo", "{}"));
    report("echo, WAT fixture (no WASI imports)", trivial);
    println!("target: text.wasm p50 <= 10 µs   [{}]", machine.summary());
}

// ---------------------------------------------------------------------------------------------
// 3. cancel and deadline latency for a spinning guest

/// Starts a spinning call, cancels it after a delay and returns cancel → completion times.
/// With `interrupt`, the call's handle comes from the runtime, so the cancel also advances the
/// epoch (what the server does); without it, the guest is only noticed at the next tick.
fn cancel_latency(tokio: &tokio::runtime::Runtime, runtime: &Arc<Runtime>, spin: &PluginCode, interrupt: bool) -> Vec<Duration> {
    let limits = Limits { timeout: Duration::from_secs(60), ..Limits::default() };
    let delays: Vec<u64> = CANCEL_DELAYS_MS.collect();
    let mut samples = Vec::with_capacity(CANCEL_N);
    for i in 0..CANCEL_N {
        let mut ctx = CallContext::new(limits.clone(), silent());
        if interrupt {
            ctx.cancel = runtime.cancel_handle();
        }
        let token = ctx.cancel.clone();
        let (rt, code) = (runtime.clone(), spin.clone());
        let call = tokio.spawn(async move {
            let outcome = rt.call_tool(&code, "spin", "{}", ctx).await;
            (outcome, Instant::now())
        });
        // Let the guest get going; make sure it did, so we never time an already-cancelled start.
        std::thread::sleep(Duration::from_millis(delays[(i * 7) % delays.len()]));
        while runtime.active_calls() == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        let cancelled_at = Instant::now();
        token.cancel();
        let (outcome, ended_at) = tokio.block_on(call).expect("the call task panicked");
        assert_eq!(outcome.err(), Some(Failure::Cancelled));
        samples.push(ended_at - cancelled_at);
    }
    samples
}

/// Runs spinning calls with a short timeout; returns how long after `start + timeout` each
/// returned `Failure::Timeout` (`start` is taken just before `call_tool`, so this is, if anything,
/// slightly overstated).
fn deadline_overshoot(tokio: &tokio::runtime::Runtime, runtime: &Arc<Runtime>, spin: &PluginCode) -> Vec<Duration> {
    let limits = Limits { timeout: DEADLINE, ..Limits::default() };
    let mut samples = Vec::with_capacity(CANCEL_N);
    for _ in 0..CANCEL_N {
        let ctx = CallContext::new(limits.clone(), silent());
        let (rt, code) = (runtime.clone(), spin.clone());
        let call = tokio.spawn(async move {
            let start = Instant::now();
            let outcome = rt.call_tool(&code, "spin", "{}", ctx).await;
            (outcome, start, Instant::now())
        });
        let (outcome, start, ended_at) = tokio.block_on(call).expect("the call task panicked");
        assert_eq!(outcome.err(), Some(Failure::Timeout { limit: DEADLINE }));
        samples.push(ended_at.saturating_duration_since(start + DEADLINE));
    }
    samples
}

/// The same measurement without any guest: how late tokio's timer alone wakes a task that
/// sleeps `DEADLINE` on this runtime. The floor under the deadline overshoot.
fn timer_overshoot(tokio: &tokio::runtime::Runtime) -> Vec<Duration> {
    let mut samples = Vec::with_capacity(CANCEL_N);
    for _ in 0..CANCEL_N {
        let task = tokio.spawn(async {
            let deadline = Instant::now() + DEADLINE;
            tokio::time::sleep_until(deadline.into()).await;
            Instant::now().saturating_duration_since(deadline)
        });
        samples.push(tokio.block_on(task).expect("the sleep task panicked"));
    }
    samples
}

fn cancel_group() {
    let machine = print_header(&format!("spinning guest `{SPIN}`: cancel / deadline → call returns, n = {CANCEL_N} each"));
    let tokio = multi_thread_runtime();
    let runtime = Arc::new(Runtime::new(RuntimeSettings::default()).expect("creating the runtime"));
    let spin = runtime.compile("spin", &spin_component()).unwrap_or_else(|e| panic!("compiling the spin fixture: {e:?}"));

    let delays = format!("{}-{} ms", CANCEL_DELAYS_MS.start(), CANCEL_DELAYS_MS.end());
    report(&format!("cancel through the runtime's handle (wakes the guest) → Cancelled (after {delays})"), cancel_latency(&tokio, &runtime, &spin, true));
    report(&format!("cancel only, next tick → Cancelled (after {delays})"), cancel_latency(&tokio, &runtime, &spin, false));
    report(&format!("deadline {DEADLINE:?} → Timeout, overshoot"), deadline_overshoot(&tokio, &runtime, &spin));
    report(&format!("(baseline: tokio sleep {DEADLINE:?}, no guest, overshoot)"), timer_overshoot(&tokio));
    let tick = RuntimeSettings::default().epoch_tick;
    println!("target: p99 <= epoch tick + 1 ms = {}   [{}]", fmt(tick + Duration::from_millis(1)), machine.summary());
}

// ---------------------------------------------------------------------------------------------
// 4. what-if (opt-in, `-- whatif`): the host's per-call work in bare wasmtime, with the host's
//    pooling configuration and with linear memories and tables kept resident between instances.
//    Not a measurement of corral itself: evidence for where the in-process time goes.

struct BareState {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for BareState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

/// A copy of `src/runtime/engine.rs` with `EngineSettings::default()` (keep in step with it),
/// optionally resetting memories and tables with `PAGEMAP_SCAN` + memset instead of `madvise`.
fn bare_engine(keep_resident: bool) -> Engine {
    let instances = 256;
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(instances)
        .total_core_instances(instances * 4)
        .total_memories(instances * 2)
        .total_tables(instances * 4)
        .total_stacks(instances)
        .max_memory_size(1 << 30)
        .max_core_instances_per_component(64)
        .max_memories_per_component(8)
        .max_tables_per_component(16)
        .table_elements(100_000)
        .max_core_instance_size(4 << 20)
        .max_component_instance_size(4 << 20);
    if keep_resident {
        pool.pagemap_scan(Enabled::Auto).linear_memory_keep_resident(4 << 20).table_keep_resident(1 << 20);
    }
    let mut config = Config::new();
    config.consume_fuel(true).epoch_interruption(true).wasm_component_model(true).allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config).expect("building the engine")
}

/// Fresh store (with a default-deny WASI context, fuel and an epoch deadline, like the host's),
/// instantiate, `call-tool`, drop: timed end to end, per call.
async fn bare_calls(engine: &Engine, wasm: &[u8], tool: &str, arguments: &str) -> Vec<Duration> {
    let mut linker = Linker::<BareState>::new(engine);
    wasmtime_wasi::p2::add_to_linker_async(&mut linker).expect("linking WASI");
    let component = Component::new(engine, wasm).expect("compiling");
    // The corral host interface is not needed by `echo`: stub it.
    linker.define_unknown_imports_as_traps(&component).expect("stubbing imports");
    let pre = linker.instantiate_pre(&component).expect("pre-instantiating");
    // text.wasm is on the SDK's contract (0.3.0), the WAT fixture on 0.1.0: take whichever it exports.
    let exports: Vec<String> = component.component_type().exports(engine).map(|(name, _)| name.to_owned()).collect();
    let tools_name = exports.iter().find(|n| n.starts_with("corral:plugin/tools@")).expect("tools export");
    let tools = component.get_export_index(None, tools_name).expect("tools export");
    let call_tool = component.get_export_index(Some(&tools), "call-tool").expect("call-tool export");

    let mut samples = Vec::with_capacity(CALL_N);
    for i in 0..CALL_WARMUP + CALL_N {
        let start = Instant::now();
        let state = BareState { wasi: WasiCtxBuilder::new().allow_tcp(false).allow_udp(false).build(), table: ResourceTable::new() };
        let mut store = Store::new(engine, state);
        store.set_fuel(Limits::default().fuel).unwrap();
        store.set_epoch_deadline(1);
        store.epoch_deadline_async_yield_and_update(1);
        let instance = pre.instantiate_async(&mut store).await.expect("instantiating");
        let func = instance.get_func(&mut store, call_tool).expect("call-tool func");
        let mut results = [Val::Bool(false)];
        func.call_async(&mut store, &[Val::String(tool.into()), Val::String(arguments.into())], &mut results).await.expect("calling");
        drop(store);
        let elapsed = start.elapsed();
        if i >= CALL_WARMUP {
            samples.push(elapsed);
        }
    }
    samples
}

/// Deadline what-if: the host stops a timed-out spinning guest through tokio's timer, which the
/// guest's task only observes at its next epoch yield. Here the epoch callback compares the clock
/// with the deadline at every tick and traps as soon as it has passed. Returns how long after
/// the deadline each call returned.
fn bare_deadline_overshoot(tokio: &tokio::runtime::Runtime) -> Vec<Duration> {
    let engine = bare_engine(false);
    let ticking = Arc::new(AtomicBool::new(true));
    let ticker = {
        let (engine, ticking) = (engine.clone(), ticking.clone());
        let tick = RuntimeSettings::default().epoch_tick;
        std::thread::spawn(move || {
            while ticking.load(Ordering::Relaxed) {
                std::thread::sleep(tick);
                engine.increment_epoch();
            }
        })
    };
    let linker = Linker::<BareState>::new(&engine);
    let component = Component::new(&engine, spin_component()).expect("compiling the spin fixture");
    let pre = linker.instantiate_pre(&component).expect("pre-instantiating");
    let tools = component.get_export_index(None, "corral:plugin/tools@0.1.0").expect("tools export");
    let call_tool = component.get_export_index(Some(&tools), "call-tool").expect("call-tool export");

    let mut samples = Vec::with_capacity(CANCEL_N);
    for _ in 0..CANCEL_N {
        let (engine, pre) = (engine.clone(), pre.clone());
        let call = tokio.spawn(async move {
            let deadline = Instant::now() + DEADLINE;
            let state = BareState { wasi: WasiCtxBuilder::new().build(), table: ResourceTable::new() };
            let mut store = Store::new(&engine, state);
            store.set_fuel(Limits::default().fuel).unwrap();
            store.set_epoch_deadline(1);
            store.epoch_deadline_callback(move |_| Ok(if Instant::now() >= deadline { UpdateDeadline::Interrupt } else { UpdateDeadline::Yield(1) }));
            let instance = pre.instantiate_async(&mut store).await.expect("instantiating");
            let func = instance.get_func(&mut store, call_tool).expect("call-tool func");
            let mut results = [Val::Bool(false)];
            let outcome = func.call_async(&mut store, &[Val::String("spin".into()), Val::String("{}".into())], &mut results).await;
            let trap = outcome.expect_err("a spinning guest cannot finish").downcast_ref::<Trap>().copied();
            assert_eq!(trap, Some(Trap::Interrupt));
            Instant::now().saturating_duration_since(deadline)
        });
        samples.push(tokio.block_on(call).expect("the call task panicked"));
    }
    ticking.store(false, Ordering::Relaxed);
    ticker.join().unwrap();
    samples
}

fn whatif_group(dist: &Path) {
    let machine = print_header(&format!("what-if, bare wasmtime: store + instantiate + call-tool `echo` + drop, {CALL_N} calls"));
    let tokio = multi_thread_runtime();
    let wasm = std::fs::read(dist.join("text.wasm")).expect("reading text.wasm");
    let wat = Fixture::new().tool(ToolDef::new("echo")).build();
    let arguments = json!({ "text": ECHO_TEXT }).to_string();
    for (label, keep_resident) in [("host pool config", false), ("+ pagemap_scan, keep_resident 4 MiB/1 MiB", true)] {
        let engine = bare_engine(keep_resident);
        report(&format!("text.wasm, {label}"), tokio.block_on(bare_calls(&engine, &wasm, "echo", &arguments)));
        report(&format!("WAT fixture, {label}"), tokio.block_on(bare_calls(&engine, &wat, "echo", "{}")));
    }
    report(&format!("spin, deadline {DEADLINE:?} checked in the epoch callback, overshoot"), bare_deadline_overshoot(&tokio));
    println!("[{}]", machine.summary());
}
