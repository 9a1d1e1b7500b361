#!/usr/bin/env python3
"""Soak and crash suite for corral; `scripts/soak.sh` runs it. Not in CI.

Parts (all by default, or `--only a,b`):
  mixed    MINUTES of mixed load over stdio and HTTP at once (plain calls, tasks, cancels,
           hot reloads, elicitations); RSS and open files of both hosts sampled and asserted
           to plateau.
  kill9    five rounds of 1 000 tasks in flight, kill -9 at a different moment each round,
           restart on the same database: every task id accounted for.
  burst    10 000 task calls at once over HTTP against a full queue: the latency of the
           overload refusals (p50 / p99), and of one refusal in isolation, in the same run.
  attacks  1 100 idle connections, then slowloris headers and short bodies: a new client and
           an established session keep being served; slow senders are cut off.
  sigterm  SIGTERM with calls and tasks in flight: short calls answered, long ones answered
           with the shutdown error, tasks still in the store after a restart.

Each part prints its figures as `FIGURE part name value`; any broken guarantee fails the run.
"""

import argparse
import http.client
import json
import os
import queue
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FAILURES = []


def figure(part, name, value):
    print(f"FIGURE {part} {name} {value}", flush=True)


def check(ok, what):
    print(("ok     " if ok else "FAILED ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def pct(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def plugin_dir():
    d = tempfile.mkdtemp(prefix="corral-soak-")
    dist = os.path.join(ROOT, "plugins/dist")
    for name in ["text", "hash", "ticker"]:
        for ext in ["wasm", "toml"]:
            src = os.path.join(dist, f"{name}.{ext}")
            if os.path.exists(src):
                shutil.copy(src, d)
    guest = os.path.join(ROOT, "tests/guests/target/wasm32-wasip2/release/conformance.wasm")
    if os.path.exists(guest):
        shutil.copy(guest, d)
    return d


def proc_sample(pid):
    """(VmRSS in KiB, open files) of `pid`."""
    rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Host:
    """A `corral serve` child, over stdio or HTTP."""

    def __init__(self, binary, plugins, db, extra=(), over_http=False):
        self.port = free_port() if over_http else None
        args = [binary, "serve", "--plugins", plugins, "--db", db, *extra]
        if over_http:
            args += ["--http", f"127.0.0.1:{self.port}"]
        self.log = open(db + ".log", "ab")
        self.proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)
        if over_http:
            deadline = time.time() + 60
            while True:
                try:
                    c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                    c.request("GET", "/healthz")
                    c.getresponse().read()
                    break
                except OSError:
                    if time.time() > deadline:
                        raise RuntimeError("the HTTP host did not start")
                    time.sleep(0.1)

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class Stdio:
    """A JSON-RPC client over a host's stdin/stdout; answers elicitations."""

    def __init__(self, host):
        self.host = host
        self.lock = threading.Lock()
        self.next = 0
        self.waiting = {}
        self.answers = {}
        self.answer_counts = {}
        self.bad_lines = 0
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.host.proc.stdout:
            try:
                m = json.loads(line)
            except ValueError:
                self.bad_lines += 1
                continue
            if "method" in m and "id" in m:  # a request of the server's: elicitation
                self._send({"jsonrpc": "2.0", "id": m["id"], "result": {"action": "accept", "content": {"username": "soak", "email": "soak@example.com"}}})
                continue
            if "id" in m and "method" not in m:
                with self.lock:
                    self.answer_counts[m["id"]] = self.answer_counts.get(m["id"], 0) + 1
                    q = self.waiting.pop(m["id"], None)
                if q is not None:
                    q.put(m)

    def _send(self, m):
        data = (json.dumps(m) + "\n").encode()
        with self.lock:
            self.host.proc.stdin.write(data)
            self.host.proc.stdin.flush()

    def start(self, method, params):
        with self.lock:
            self.next += 1
            rid = self.next
            q = queue.Queue()
            self.waiting[rid] = q
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid, q

    def call(self, method, params, timeout=120):
        _, q = self.start(method, params)
        return q.get(timeout=timeout)

    def notify(self, method, params):
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def initialize(self):
        return self.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "soak", "version": "0"}})


class HttpSession:
    """One MCP session over HTTP on a keep-alive connection."""

    def __init__(self, port):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.session = None
        self.next = 0

    def post(self, message):
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if self.session:
            headers["mcp-session-id"] = self.session
        for attempt in range(2):
            try:
                self.conn.request("POST", "/mcp", json.dumps(message), headers)
                r = self.conn.getresponse()
                body = r.read().decode()
                break
            except (http.client.HTTPException, OSError):
                # The server closed an idle keep-alive: reconnect once.
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
                if attempt:
                    raise
        if self.session is None:
            self.session = r.getheader("mcp-session-id")
        if r.getheader("content-type", "").startswith("text/event-stream"):
            answer = None
            for line in body.splitlines():
                if line.startswith("data:"):
                    m = json.loads(line[5:])
                    if "method" in m and "id" in m:
                        HttpSession.answer_elicitation(self, m)
                    elif m.get("id") == message.get("id"):
                        answer = m
            return r.status, answer
        return r.status, (json.loads(body) if body else None)

    @staticmethod
    def answer_elicitation(session, m):
        # Answered on a connection of its own: this one is still reading the stream.
        other = http.client.HTTPConnection("127.0.0.1", session.port, timeout=30)
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream", "mcp-session-id": session.session}
        reply = {"jsonrpc": "2.0", "id": m["id"], "result": {"action": "accept", "content": {"username": "soak", "email": "soak@example.com"}}}
        other.request("POST", "/mcp", json.dumps(reply), headers)
        other.getresponse().read()
        other.close()

    def call(self, method, params):
        self.next += 1
        return self.post({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})

    def initialize(self):
        return self.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "soak", "version": "0"}})


# ------------------------------------------------------------------------------------------
# mixed


def mixed_round(call, i, tasks):
    """One round of mixed work through `call(method, params) -> answer`; returns problems."""
    problems = []

    def expect(answer, what):
        if answer is None or "result" not in answer:
            problems.append(f"{what}: {answer}")
        return (answer or {}).get("result", {})

    expect(call("tools/call", {"name": "echo", "arguments": {"text": f"hello {i}"}}), "echo")
    expect(call("tools/call", {"name": "word_count", "arguments": {"text": "a b c " * 50}}), "word_count")
    expect(call("tools/call", {"name": "hash_chain", "arguments": {"input": str(i), "rounds": 200}}), "hash_chain")
    created = expect(call("tools/call", {"name": "tick", "arguments": {"count": 2, "interval_ms": 10}, "task": {}}), "task")
    if "task" in created:
        tasks.append(created["task"]["taskId"])
    # A task cancelled while it runs.
    long = expect(call("tools/call", {"name": "tick", "arguments": {"count": 1000, "interval_ms": 20}, "task": {}}), "long task")
    if "task" in long:
        cancelled = call("tasks/cancel", {"taskId": long["task"]["taskId"]})
        if "result" not in cancelled and "error" not in cancelled:
            problems.append(f"cancel: {cancelled}")
    if i % 5 == 0:
        expect(call("tools/call", {"name": "test_elicitation", "arguments": {"message": "who are you?"}}), "elicitation")
    expect(call("tasks/list", {}), "tasks/list")
    return problems


def part_mixed(args, binary):
    plugins = plugin_dir()
    db = tempfile.mkdtemp(prefix="corral-soak-db-")
    stdio_host = Host(binary, plugins, os.path.join(db, "stdio.db"), ["--watch", "--max-tasks-per-client", "100000"])
    http_host = Host(binary, plugins, os.path.join(db, "http.db"), ["--watch", "--max-tasks-per-client", "100000"], over_http=True)
    stdio = Stdio(stdio_host)
    stdio.initialize()
    stop = time.time() + args.minutes * 60
    problems, rounds, lock = [], [0], threading.Lock()
    samples = {"stdio": [], "http": []}

    def stdio_worker():
        tasks, i = [], 0
        while time.time() < stop:
            found = mixed_round(lambda m, p: stdio.call(m, p), i, tasks)
            with lock:
                problems.extend(found)
                rounds[0] += 1
            i += 1

    def http_worker(n):
        tasks, i = [], 0
        s = HttpSession(http_host.port)
        s.initialize()
        while time.time() < stop:
            found = mixed_round(lambda m, p: s.call(m, p)[1], i, tasks)
            with lock:
                problems.extend(found)
                rounds[0] += 1
            i += 1
            if i % 50 == 0:  # sessions come and go
                s.conn.request("DELETE", "/mcp", headers={"mcp-session-id": s.session})
                s.conn.getresponse().read()
                s = HttpSession(http_host.port)
                s.initialize()

    def reloader():
        n = 0
        while time.time() < stop:
            time.sleep(20)
            # A hot reload: the text plugin rewritten in place.
            shutil.copy(os.path.join(ROOT, "plugins/dist/text.wasm"), os.path.join(plugins, "text.wasm"))
            n += 1
        figure("mixed", "hot_reloads", n)

    def sampler():
        while time.time() < stop:
            for name, host in [("stdio", stdio_host), ("http", http_host)]:
                samples[name].append(proc_sample(host.proc.pid))
            time.sleep(5)

    threads = [threading.Thread(target=stdio_worker), threading.Thread(target=reloader), threading.Thread(target=sampler)]
    threads += [threading.Thread(target=http_worker, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    figure("mixed", "minutes", args.minutes)
    figure("mixed", "rounds", rounds[0])
    check(not problems, f"mixed: every call answered with a result ({len(problems)} problems: {problems[:3]})")
    check(stdio.bad_lines == 0, "mixed: stdout carries only JSON")
    for name, series in samples.items():
        if len(series) < 6:
            check(False, f"mixed: enough {name} samples")
            continue
        third = len(series) // 3
        middle, last = series[third:2 * third], series[2 * third:]
        rss_mid, rss_last = max(r for r, _ in middle), max(r for r, _ in last)
        fd_mid, fd_last = max(f for _, f in middle), max(f for _, f in last)
        figure("mixed", f"{name}_rss_kib_start_mid_end", f"{series[0][0]}/{rss_mid}/{rss_last}")
        figure("mixed", f"{name}_fds_start_mid_end", f"{series[0][1]}/{fd_mid}/{fd_last}")
        check(rss_last <= rss_mid * 1.10 + 4096, f"mixed: {name} RSS plateaus ({rss_mid} -> {rss_last} KiB)")
        check(fd_last <= fd_mid + 16, f"mixed: {name} open files plateau ({fd_mid} -> {fd_last})")
    stdio_host.stop()
    http_host.stop()


# ------------------------------------------------------------------------------------------
# kill9


def all_tasks(stdio):
    """Every task of the stdio owner: id -> status."""
    found, cursor = {}, None
    while True:
        params = {"cursor": cursor} if cursor else {}
        page = stdio.call("tasks/list", params)["result"]
        for t in page["tasks"]:
            found[t["taskId"]] = t["status"]
        cursor = page.get("nextCursor")
        if not cursor:
            return found


def part_kill9(args, binary):
    plugins = plugin_dir()
    db = os.path.join(tempfile.mkdtemp(prefix="corral-soak-kill-"), "tasks.db")
    extra = ["--max-queued", "5000", "--max-tasks-per-client", "100000", "--max-running", "8"]
    recorded = set()
    # Kill after admitting this share of the round's tasks (1.0: all admitted, some running).
    moments = [0.1, 0.5, 1.0, 1.0, 0.75]
    for round_no, moment in enumerate(moments):
        host = Host(binary, plugins, db, extra)
        stdio = Stdio(host)
        stdio.initialize()
        pending = []
        for n in range(args.kill_tasks):
            pending.append(stdio.start("tools/call", {"name": "tick", "arguments": {"count": 3, "interval_ms": 20}, "task": {}}))
            if n + 1 == int(args.kill_tasks * moment) and moment < 1.0:
                break
        admitted = 0
        for rid, q in pending:
            try:
                answer = q.get(timeout=60)
            except queue.Empty:
                continue
            if "result" in answer:
                recorded.add(answer["result"]["task"]["taskId"])
                admitted += 1
        if moment == 1.0:
            time.sleep(0.3 if round_no == 2 else 1.5)  # mid-run
        host.kill9()
        figure("kill9", f"round{round_no + 1}_admitted_before_kill", admitted)
    # One last start: recovery, then let every task end.
    host = Host(binary, plugins, db, extra)
    stdio = Stdio(host)
    stdio.initialize()
    deadline = time.time() + 300
    while True:
        tasks = all_tasks(stdio)
        unfinished = [t for t in recorded if tasks.get(t) in ("working", "input_required")]
        if not unfinished or time.time() > deadline:
            break
        time.sleep(1)
    missing = [t for t in recorded if t not in tasks]
    statuses = {}
    for t in recorded:
        statuses[tasks.get(t, "missing")] = statuses.get(tasks.get(t, "missing"), 0) + 1
    figure("kill9", "task_ids_recorded", len(recorded))
    figure("kill9", "final_statuses", json.dumps(statuses, sort_keys=True).replace(" ", ""))
    check(not missing, f"kill9: every recorded task id is in the store ({len(missing)} missing)")
    check(not unfinished, f"kill9: every task ends after recovery ({len(unfinished)} unfinished)")
    host.stop()


# ------------------------------------------------------------------------------------------
# burst


def part_burst(args, binary):
    plugins = plugin_dir()
    db = os.path.join(tempfile.mkdtemp(prefix="corral-soak-burst-"), "tasks.db")
    host = Host(binary, plugins, db, ["--max-queued", "100", "--max-running", "2", "--max-tasks-per-client", "100000"], over_http=True)
    long = {"name": "tick", "arguments": {"count": 10000, "interval_ms": 100}, "task": {}}
    # Fill the queue, then time refusals one at a time: the isolated figure.
    filler = HttpSession(host.port)
    filler.initialize()
    for _ in range(120):
        filler.call("tools/call", long)
    alone = []
    for _ in range(300):
        t0 = time.perf_counter()
        _, answer = filler.call("tools/call", long)
        alone.append((time.perf_counter() - t0) * 1000)
        assert answer and "error" in answer, answer
    # The burst: 16 clients, 10 000 task calls in all, against the same full queue.
    latencies, lock = [], threading.Lock()
    per_client = args.burst // 16

    def client():
        s = HttpSession(host.port)
        s.initialize()
        mine = []
        for _ in range(per_client):
            t0 = time.perf_counter()
            _, answer = s.call("tools/call", long)
            took = (time.perf_counter() - t0) * 1000
            if answer and "error" in answer:
                mine.append(took)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client) for _ in range(16)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    figure("burst", "calls", per_client * 16)
    figure("burst", "seconds", f"{time.time() - t0:.1f}")
    figure("burst", "refused", len(latencies))
    figure("burst", "isolated_refusal_ms_p50_p99", f"{pct(alone, 50):.2f}/{pct(alone, 99):.2f}")
    figure("burst", "burst_refusal_ms_p50_p99", f"{pct(latencies, 50):.2f}/{pct(latencies, 99):.2f}")
    check(len(latencies) > 0, "burst: refusals measured")
    host.stop()


# ------------------------------------------------------------------------------------------
# attacks


def part_attacks(args, binary):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    plugins = plugin_dir()
    db = os.path.join(tempfile.mkdtemp(prefix="corral-soak-attack-"), "tasks.db")
    host = Host(binary, plugins, db, [], over_http=True)
    established = HttpSession(host.port)
    established.initialize()
    idle = []
    for _ in range(args.idle):
        try:
            idle.append(socket.create_connection(("127.0.0.1", host.port)))
        except OSError as e:
            figure("attacks", "idle_connect_error", repr(e))
            break
    figure("attacks", "idle_connections_opened", len(idle))
    t0 = time.perf_counter()
    newcomer = HttpSession(host.port)
    status, answer = newcomer.initialize()
    new_ms = (time.perf_counter() - t0) * 1000
    check(status == 200 and answer and "result" in answer, f"attacks: a new client initializes past {len(idle)} idle connections")
    t0 = time.perf_counter()
    status, answer = established.call("ping", {})
    old_ms = (time.perf_counter() - t0) * 1000
    check(status == 200 and answer and "result" in answer, "attacks: an established session keeps being served")
    figure("attacks", "new_client_initialize_ms", f"{new_ms:.1f}")
    figure("attacks", "established_ping_ms", f"{old_ms:.1f}")
    closed = 0
    for s in idle:
        s.setblocking(False)
        try:
            if s.recv(1) == b"":
                closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    figure("attacks", "idle_connections_closed_by_then", closed)
    for s in idle:
        s.close()
    # Slowloris: a header byte a second.
    def slowloris(out):
        s = socket.create_connection(("127.0.0.1", host.port))
        t0 = time.time()
        for b in b"POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\n\r\n":
            try:
                s.send(bytes([b]))
                s.settimeout(1)
                if s.recv(64) == b"":
                    break
            except socket.timeout:
                continue
            except OSError:
                break
        out.append(time.time() - t0)

    def short_body(out):
        s = socket.create_connection(("127.0.0.1", host.port))
        t0 = time.time()
        s.send(b"POST /mcp HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n0123456789")
        s.settimeout(120)
        data = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        out.append((time.time() - t0, data.split(b"\r\n", 1)[0].decode()))

    slow, short = [], []
    threads = [threading.Thread(target=slowloris, args=(slow,)) for _ in range(20)]
    threads += [threading.Thread(target=short_body, args=(short,)) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    figure("attacks", "slowloris_cut_after_s_max", f"{max(slow):.1f}")
    figure("attacks", "short_body_answer_after_s_max", f"{max(t for t, _ in short):.1f}")
    check(max(slow) < 20, "attacks: slow headers are cut off (--http-header-timeout 10s)")
    check(all(line.startswith("HTTP/1.1 408") for _, line in short), f"attacks: a short body gets 408 ({[l for _, l in short][:1]})")
    host.stop()


# ------------------------------------------------------------------------------------------
# sigterm


def part_sigterm(args, binary):
    plugins = plugin_dir()
    db = os.path.join(tempfile.mkdtemp(prefix="corral-soak-term-"), "tasks.db")
    host = Host(binary, plugins, db, ["--shutdown-grace", "3s"])
    stdio = Stdio(host)
    stdio.initialize()
    short = [stdio.start("tools/call", {"name": "tick", "arguments": {"count": 5, "interval_ms": 100}}) for _ in range(4)]
    long = [stdio.start("tools/call", {"name": "tick", "arguments": {"count": 10000, "interval_ms": 50}}) for _ in range(2)]
    tasks = []
    for _ in range(10):
        answer = stdio.call("tools/call", {"name": "tick", "arguments": {"count": 50, "interval_ms": 100}, "task": {}})
        tasks.append(answer["result"]["task"]["taskId"])
    time.sleep(0.2)
    t0 = time.time()
    host.proc.send_signal(signal.SIGTERM)
    code = host.proc.wait(timeout=60)
    figure("sigterm", "exit_after_s", f"{time.time() - t0:.1f}")
    check(code == 0, f"sigterm: clean exit ({code})")
    stdio.reader.join(timeout=5)
    ok_short = sum(1 for rid, q in short if not q.empty() and "result" in q.get())
    errors = [q.get() for rid, q in long if not q.empty()]
    check(ok_short == len(short), f"sigterm: calls that fit the grace are answered ({ok_short}/{len(short)})")
    check(len(errors) == len(long) and all(e.get("error", {}).get("data", {}).get("kind") == "shutdown" for e in errors), f"sigterm: the rest get the shutdown error ({errors[:1]})")
    check(all(n == 1 for n in stdio.answer_counts.values()), "sigterm: no request answered twice")
    host = Host(binary, plugins, db, [])
    again = Stdio(host)
    again.initialize()
    found = all_tasks(again)
    check(all(t in found for t in tasks), "sigterm: every task is in the store after the restart")
    figure("sigterm", "task_statuses_after_restart", json.dumps(sorted({found.get(t, "missing") for t in tasks})).replace(" ", ""))
    host.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bin", default=os.environ.get("CORRAL_BIN", os.path.join(ROOT, "target/debug/corral")))
    parser.add_argument("--only", default="mixed,kill9,burst,attacks,sigterm")
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--kill-tasks", type=int, default=1000)
    parser.add_argument("--burst", type=int, default=10000)
    parser.add_argument("--idle", type=int, default=1100)
    args = parser.parse_args()
    parts = {"mixed": part_mixed, "kill9": part_kill9, "burst": part_burst, "attacks": part_attacks, "sigterm": part_sigterm}
    for name in args.only.split(","):
        print(f"== {name}", flush=True)
        t0 = time.time()
        try:
            parts[name](args, args.bin)
        except Exception as e:  # a part that breaks is a failure, and the next part still runs
            check(False, f"{name}: {type(e).__name__}: {e}")
        figure(name, "wall_seconds", f"{time.time() - t0:.0f}")
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)", flush=True)
        sys.exit(1)
    print("all guarantees held", flush=True)


if __name__ == "__main__":
    main()
