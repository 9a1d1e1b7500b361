//! Shutdown through the binary: `printf … | corral serve` gets every
//! answer, and SIGTERM answers the calls in flight (or ends them with a precise error) before
//! the process exits.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(30);

fn spawn(dir: &std::path::Path, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["serve", "--plugins", dir.to_str().unwrap(), "--db", ":memory:"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting corral")
}

fn line(id: i64, method: &str, params: Value) -> String {
    format!("{}\n", json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }))
}

fn initialize() -> String {
    line(1, "initialize", json!({ "protocolVersion": "2025-11-25", "capabilities": {} }))
}

fn tick(id: i64, count: u64, interval_ms: u64) -> String {
    line(id, "tools/call", json!({ "name": "tick", "arguments": { "count": count, "interval_ms": interval_ms } }))
}

/// Waits for the child to exit, then parses every stdout line (each must be JSON).
fn exit_and_read(mut child: Child) -> Vec<Value> {
    let deadline = Instant::now() + TIMEOUT;
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "corral did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(child.wait().unwrap().success());
    let mut text = String::new();
    child.stdout.take().unwrap().read_to_string(&mut text).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {l}"))).collect()
}

fn answers(out: &[Value], id: i64) -> Vec<&Value> {
    out.iter().filter(|m| m["id"] == json!(id) && (m.get("result").is_some() || m.get("error").is_some())).collect()
}

#[test]
fn piped_input_gets_every_answer_after_stdin_closes() {
    let dir = example_plugins(&["ticker"]);
    let mut child = spawn(dir.path(), &[]);
    let input = [initialize(), tick(2, 3, 100), tick(3, 2, 150), line(4, "ping", json!({}))].concat();
    // As `printf … | corral serve`: everything at once, then the end of the input.
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = exit_and_read(child);
    for id in [1, 2, 3, 4] {
        let found = answers(&out, id);
        assert_eq!(found.len(), 1, "request {id} is answered once: {out:?}");
        assert!(found[0].get("result").is_some(), "request {id}: {}", found[0]);
    }
}

#[test]
fn sigterm_answers_calls_in_flight_and_ends_the_rest_with_a_shutdown_error() {
    let dir = example_plugins(&["ticker"]);
    let mut child = spawn(dir.path(), &["--shutdown-grace", "2s"]);
    let mut stdin = child.stdin.take().unwrap();
    // A call that ends within the grace, and one that cannot; each reports progress under its id.
    let reporting = |id: i64, count: u64, interval_ms: u64| {
        line(id, "tools/call", json!({ "name": "tick", "arguments": { "count": count, "interval_ms": interval_ms }, "_meta": { "progressToken": id } }))
    };
    stdin.write_all([initialize(), reporting(2, 5, 100), reporting(3, 10000, 50)].concat().as_bytes()).unwrap();
    let received = read_lines(child.stdout.take().unwrap());
    // Both calls are running once each has reported progress (or, for the short one, ended).
    let mut out = Vec::new();
    let mut running = std::collections::HashSet::new();
    while running.len() < 2 {
        let message = received.recv_timeout(TIMEOUT).unwrap_or_else(|e| panic!("both calls never ran ({e}); received: {out:?}"));
        if message["method"] == "notifications/progress" {
            running.insert(message["params"]["progressToken"].as_i64());
        } else if message["id"] == 2 {
            running.insert(Some(2));
        }
        out.push(message);
    }
    let started = Instant::now();
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    exits_within_a_minute(&mut child, "SIGTERM");
    assert!(child.wait().unwrap().success());
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "the grace is 2s: exited after {took:?}");
    out.extend(received.iter());
    let short = answers(&out, 2);
    assert_eq!(short.len(), 1, "{out:?}");
    assert!(short[0].get("result").is_some(), "the short call finished within the grace: {}", short[0]);
    let long = answers(&out, 3);
    assert_eq!(long.len(), 1, "{out:?}");
    assert_eq!(long[0]["error"]["code"], -32603, "{}", long[0]);
    assert_eq!(long[0]["error"]["message"], "corral is shutting down: the call was still running after the shutdown grace (2s) and was cancelled");
    drop(stdin);
}

/// The lines of `stdout` (each must be JSON) as they come, read on a thread; the channel ends
/// with stdout.
fn read_lines(stdout: std::process::ChildStdout) -> std::sync::mpsc::Receiver<Value> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(stdout).lines().map_while(Result::ok) {
            let message = serde_json::from_str(&l).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {l}"));
            if tx.send(message).is_err() {
                return;
            }
        }
    });
    rx
}

/// Bytes written to the pipe `unread` reads and not read yet, and the pipe's capacity.
fn pipe_fill(unread: &std::process::ChildStdout) -> (usize, usize) {
    use std::os::fd::AsRawFd;
    let fd = unread.as_raw_fd();
    let mut pending: libc::c_int = 0;
    // SAFETY: `fd` is an open pipe for as long as `unread` lives; FIONREAD writes one c_int.
    assert_eq!(unsafe { libc::ioctl(fd, libc::FIONREAD, &mut pending) }, 0, "FIONREAD on stdout's pipe");
    // SAFETY: as above; F_GETPIPE_SZ takes no argument.
    let capacity = unsafe { libc::fcntl(fd, libc::F_GETPIPE_SZ) };
    assert!(capacity > 0, "F_GETPIPE_SZ on stdout's pipe");
    (pending as usize, capacity as usize)
}

/// Starts corral, as `spawn` does, with its stderr read on a thread: the log, once it exits.
fn spawn_logged(dir: &std::path::Path, extra: &[&str]) -> (Child, std::thread::JoinHandle<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_corral"))
        .args(["serve", "--plugins", dir.to_str().unwrap(), "--db", ":memory:"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting corral");
    let mut stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    (child, log)
}

/// Waits up to a minute for the child to exit; kills it and fails otherwise.
fn exits_within_a_minute(child: &mut Child, why: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("corral was still running a minute after {why}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_client_that_closes_stdin_and_never_reads_stdout_cannot_hold_the_exit_past_the_grace() {
    let dir = example_plugins(&["ticker"]);
    let (mut child, log) = spawn_logged(dir.path(), &["--shutdown-grace", "2s"]);
    // Fewer bytes than a pipe holds, whose answers are many times more: corral's writes block
    // with requests still unread, and the client never reads a byte.
    let mut input = initialize();
    for id in 2..600 {
        input.push_str(&line(id, "tools/list", json!({})));
    }
    assert!(input.len() < 60_000);
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let closed = Instant::now();
    let unread = child.stdout.take();
    exits_within_a_minute(&mut child, "stdin closed with its stdout unread");
    let took = closed.elapsed();
    assert!(took < Duration::from_secs(20), "the grace is 2s: exited {took:?} after stdin closed");
    let log = log.join().unwrap();
    assert!(log.contains("the client did not read its output"), "the log says what was given up: {log}");
    drop(unread);
}

#[test]
fn sigterm_with_calls_in_flight_and_stdout_unread_exits_after_the_grace() {
    let dir = example_plugins(&["ticker"]);
    let (mut child, log) = spawn_logged(dir.path(), &["--shutdown-grace", "2s"]);
    let mut stdin = child.stdin.take().unwrap();
    // Calls that report progress every millisecond, to a client that reads nothing: the pipe
    // fills and the writes of the calls' notifications block.
    let mut input = initialize();
    for id in 2..6 {
        input.push_str(&line(id, "tools/call", json!({ "name": "tick", "arguments": { "count": 10000, "interval_ms": 1 }, "_meta": { "progressToken": id } })));
    }
    stdin.write_all(input.as_bytes()).unwrap();
    let unread = child.stdout.take().unwrap();
    // The pipe is full once what waits in it is within one atomic write (PIPE_BUF) of its size:
    // corral's next notification blocks.
    let (pending, capacity) =
        common::wait_on("corral's unread stdout to fill its pipe", TIMEOUT, || pipe_fill(&unread), |(pending, capacity)| pending + 4096 >= *capacity);
    assert!(pending > 0 && capacity > 0);
    let signalled = Instant::now();
    Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    exits_within_a_minute(&mut child, "SIGTERM with its stdout unread");
    let took = signalled.elapsed();
    assert!(took < Duration::from_secs(20), "the grace is 2s: exited {took:?} after SIGTERM");
    let log = log.join().unwrap();
    assert!(log.contains("the client did not read its output"), "the log says what was given up: {log}");
    drop((stdin, unread));
}
