"""PyPI `mcp` 2.x (`mcp.client.Client`) against corral and the example plugins.

mcp 2.x speaks 2026-07-28 first: in its default `auto` mode it probes `server/discover` before
anything else and falls back to `initialize` on an error. corral serves both eras, so the probe
succeeds and the client stays on the stateless 2026-07-28 wire: logs come only at the level the
client names per request (`log_level`), and a `required` tool (the client declares no tasks
extension) is refused with -32021 naming the extension, while `optional` ones run as plain calls.

    python mcp2_client.py stdio CORRAL PLUGINS_DIR   starts `CORRAL serve --plugins PLUGINS_DIR --db :memory:`
    python mcp2_client.py http URL                   talks to a running `corral serve --http` at URL (.../mcp)
"""

from __future__ import annotations

import sys
import tempfile
import warnings

import anyio
from check import abort, check, equal, error_kind, expect, finish, raises_code, set_suite, text
from mcp.client.client import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

# logging/setLevel is deprecated in 2026-07-28; it is the way to get log messages in 2025-11-25.
warnings.filterwarnings("ignore", "The logging capability is deprecated")

mode = sys.argv[1] if len(sys.argv) > 1 else ""
set_suite(f"python-mcp2/{mode}")

# A spy on the era probe: what the client sent and what came back.
probes: list[tuple[str, object]] = []
_send_discover = ClientSession.send_discover


async def _spy(self, version):
    try:
        raw = await _send_discover(self, version)
    except Exception as e:
        probes.append((version, getattr(e, "code", repr(e))))
        raise
    probes.append((version, raw))
    return raw


ClientSession.send_discover = _spy
logs: list = []


async def on_log(params) -> None:
    logs.append(params)


async def run_checks(client: Client) -> None:
    async def probed_and_stayed_modern():
        expect(probes, "the client sent no server/discover probe")
        version, answer = probes[0]
        expect(not isinstance(answer, int), f"server/discover ({version}) failed with {answer!r}")
        expect(client.session.discover_result is not None, "the client did not adopt the discover result")
        expect(client.session.initialize_result is None, "the client sent initialize after a successful probe")
        equal(client.protocol_version, "2026-07-28", "negotiated protocol version")

    async def list_tools():
        tools = (await client.list_tools()).tools
        support = {t.name: (t.execution.task_support if t.execution else None) for t in tools}
        equal(support, {"countdown": "required", "echo": "forbidden", "hash_chain": "optional", "tick": "optional", "word_count": "forbidden"}, "task support")

    async def plain_calls():
        equal(text(await client.call_tool("echo", {"text": "hello, corral"})), "hello, corral", "echo")
        result = await client.call_tool("word_count", {"text": "one two\nthree"})
        equal(result.structured_content, {"words": 3, "lines": 2, "chars": 13}, "word_count structured_content")
        bad = await client.call_tool("echo", {"text": 42})
        expect(bad.is_error and error_kind(bad) == "invalid-arguments", f"invalid arguments: {bad!r}")
        await raises_code(client.call_tool("no_such_tool", {}), -32602, "unknown tool")

    async def optional_tool_plain():
        seen: list[tuple[float, float | None]] = []

        async def on_progress(p, total, message) -> None:
            seen.append((p, total))

        # corral thins out progress reports less than 20 ms apart (all but the last): tick slower.
        result = await client.call_tool("tick", {"count": 3, "interval_ms": 40}, progress_callback=on_progress)
        equal(text(result), "ticked 3 times", "tick")
        equal(seen, [(1, 3), (2, 3), (3, 3)], "progress of the call")
        expect(any(getattr(l, "logger", None) == "ticker" for l in logs), f"log messages: {logs!r}")

    async def required_tool_refused():
        await raises_code(client.call_tool("countdown", {"from": 1}), -32021, "countdown without the tasks extension")

    await check("server/discover probe succeeds, the client stays on 2026-07-28 (no initialize)", probed_and_stayed_modern)
    await check("tools/list: task support as the 2025-11-25 `execution` field", list_tools)
    await check("plain calls: echo, word_count (structured), invalid arguments, unknown tool", plain_calls)
    await check("optional tool as a plain call, with progress and log messages (per-request log level)", optional_tool_plain)
    await check("required tool from a client without the tasks extension: -32021", required_tool_refused)


async def main() -> str:
    """Runs the checks; returns corral's stderr when this script started it."""
    if mode == "stdio":
        corral, plugins = sys.argv[2:4]
        params = StdioServerParameters(command=corral, args=["serve", "--plugins", plugins, "--db", ":memory:"])
        with tempfile.TemporaryFile("w+") as errlog:
            try:
                async with Client(stdio_client(params, errlog=errlog), logging_callback=on_log, log_level="debug") as client:
                    await run_checks(client)
            finally:
                errlog.seek(0)
                server_log = errlog.read()
        return server_log
    if mode == "http":
        async with Client(sys.argv[2], logging_callback=on_log, log_level="debug") as client:
            await run_checks(client)
        return ""
    abort(f"usage: mcp2_client.py stdio CORRAL PLUGINS | http URL (got {mode!r})")


if __name__ == "__main__":
    try:
        log = anyio.run(main)
    except Exception as e:  # noqa: BLE001 - a failed connect is one clear failure
        abort(f"connect failed: {e!r}")
    finish(log)
