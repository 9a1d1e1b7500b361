#!/usr/bin/env python3
"""Smoke test of a corral binary, as a release ships it: a plain `corral call`, then an MCP
session over stdio (initialize, a call, a task polled to its result) against the example plugins
`text` and `ticker`.

    scripts/smoke.py [--runner qemu-aarch64-static] BINARY PLUGINS_DIR

--runner runs a binary of another architecture (qemu-user). Only the standard library is used,
so the release script can run it anywhere. Every wait has a deadline; a failure prints what the
host wrote on stderr.
"""

import argparse
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

# Compiling the plugins under qemu-user takes a while; nothing here waits longer than this.
DEADLINE = 300


def fail(message, stderr=""):
    print(f"smoke: FAILED: {message}", file=sys.stderr)
    if stderr:
        print("--- corral's stderr ---\n" + stderr[-8000:], file=sys.stderr)
    sys.exit(1)


class Session:
    def __init__(self, command):
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.stderr = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr), daemon=True).start()
        self.next_id = 1

    def _read_stdout(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)  # corral closed stdout: it exited

    def send(self, message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        end = time.monotonic() + DEADLINE
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                fail(f"no answer to {method} within {DEADLINE} s", "".join(self.stderr))
            if line is None:
                fail(f"corral exited ({self.proc.wait()}) before answering {method}", "".join(self.stderr))
            message = json.loads(line)
            if message.get("id") == rid and "method" not in message:
                if "error" in message:
                    fail(f"{method} answered an error: {message['error']}", "".join(self.stderr))
                return message["result"]

    def close(self):
        self.proc.stdin.close()
        try:
            code = self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail("corral did not exit within 60 s of the end of stdin", "".join(self.stderr))
        if code != 0:
            fail(f"corral exited {code} at the end of stdin", "".join(self.stderr))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runner", default="", help="e.g. qemu-aarch64-static")
    parser.add_argument("binary")
    parser.add_argument("plugins_dir")
    args = parser.parse_args()
    runner = [args.runner] if args.runner else []

    with tempfile.TemporaryDirectory(prefix="corral-smoke-") as tmp:
        plugins = os.path.join(tmp, "plugins")
        os.mkdir(plugins)
        for name in ["text.wasm", "ticker.wasm", "ticker.toml"]:
            src = os.path.join(args.plugins_dir, name)
            if not os.path.exists(src):
                fail(f"{src} is missing: run scripts/build-plugins.sh first")
            shutil.copy(src, plugins)
        env = dict(os.environ, NO_COLOR="1", CORRAL_CACHE_DIR=os.path.join(tmp, "cache"), CORRAL_DB=os.path.join(tmp, "tasks.db"))
        env.pop("RUST_LOG", None)
        base = runner + [args.binary]

        version = subprocess.run(base + ["--version"], capture_output=True, text=True, env=env, timeout=DEADLINE)
        if version.returncode != 0 or not version.stdout.startswith("corral "):
            fail(f"--version printed {version.stdout!r}", version.stderr)

        call = subprocess.run(base + ["call", "--plugins", plugins, "--load-wait", f"{DEADLINE}s", "echo", '{"text":"smoke"}'],
                              capture_output=True, text=True, env=env, timeout=DEADLINE)
        if call.returncode != 0 or "smoke" not in call.stdout:
            fail(f"`corral call echo` exited {call.returncode} and printed {call.stdout!r}", call.stderr)

        session = Session(base + ["serve", "--plugins", plugins, "--load-wait", f"{DEADLINE}s"])
        init = session.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "smoke", "version": "0"}})
        if init.get("serverInfo", {}).get("name") != "corral":
            fail(f"initialize answered {init}", "".join(session.stderr))
        session.send({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}})
        echoed = session.request("tools/call", {"name": "echo", "arguments": {"text": "over stdio"}})
        if echoed.get("isError") or echoed["content"][0]["text"] != "over stdio":
            fail(f"echo answered {echoed}", "".join(session.stderr))
        created = session.request("tools/call", {"name": "tick", "arguments": {"count": 3, "interval_ms": 10}, "task": {}})
        task_id = created["task"]["taskId"]
        end = time.monotonic() + DEADLINE
        while True:
            task = session.request("tasks/get", {"taskId": task_id})
            if task["status"] != "working":
                break
            if time.monotonic() > end:
                fail(f"task {task_id} still working after {DEADLINE} s", "".join(session.stderr))
            time.sleep(0.1)
        if task["status"] != "completed":
            fail(f"task {task_id} ended {task}", "".join(session.stderr))
        result = session.request("tasks/result", {"taskId": task_id})
        if result["content"][0]["text"] != "ticked 3 times":
            fail(f"task result {result}", "".join(session.stderr))
        session.close()
    print(f"smoke: {' '.join(base)}: --version, call, initialize, tools/call and a task: ok")


if __name__ == "__main__":
    main()
