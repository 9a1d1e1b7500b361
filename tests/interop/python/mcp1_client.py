"""PyPI `mcp` 1.30.x (ClientSession and its experimental task API, `session.experimental`)
against corral and the example plugins.

    python mcp1_client.py stdio CORRAL PLUGINS_DIR   starts `CORRAL serve --plugins PLUGINS_DIR --db :memory: ...`
    python mcp1_client.py http URL                   talks to a running `corral serve --http` at URL (.../mcp)
"""

from __future__ import annotations

import sys
import tempfile
import warnings

import anyio
from check import abort, check, equal, error_kind, expect, finish, raises_code, set_suite, text
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamablehttp_client

# 1.30 marks the 2025-11-25 task API deprecated (tasks move to an extension in 2026-07-28).
warnings.filterwarnings("ignore", "The experimental tasks API is deprecated", DeprecationWarning)

mode = sys.argv[1] if len(sys.argv) > 1 else ""
set_suite(f"python-mcp1/{mode}")

progress: dict[str, list[float]] = {}  # progress token -> the progress values received
first_progress: dict[str, anyio.Event] = {}
logs: list[types.LoggingMessageNotificationParams] = []


async def on_message(message) -> None:
    if isinstance(message, types.ServerNotification) and isinstance(message.root, types.ProgressNotification):
        token = str(message.root.params.progressToken)
        progress.setdefault(token, []).append(message.root.params.progress)
        first_progress.setdefault(token, anyio.Event()).set()


async def on_log(params: types.LoggingMessageNotificationParams) -> None:
    logs.append(params)


async def run_checks(session: ClientSession) -> None:
    try:
        init = await session.initialize()
    except Exception as e:  # noqa: BLE001
        abort(f"initialize failed: {e!r}")
    x = session.experimental
    ends: dict[str, str] = {}  # taskId -> the status this script expects it to end in

    async def initialized():
        equal(init.serverInfo.name, "corral", "serverInfo.name")
        equal(init.protocolVersion, "2025-11-25", "negotiated protocol version")
        tasks = init.capabilities.tasks
        expect(tasks and tasks.requests and tasks.requests.tools and tasks.requests.tools.call, f"tasks capability: {tasks!r}")
        expect(tasks.list is not None and tasks.cancel is not None, f"tasks.list/cancel: {tasks!r}")

    async def list_tools():
        tools = (await session.list_tools()).tools
        support = {t.name: (t.execution.taskSupport if t.execution else "forbidden") for t in tools}
        equal(support, {"countdown": "required", "echo": "forbidden", "hash_chain": "optional", "tick": "optional", "word_count": "forbidden"}, "task support")

    async def plain_calls():
        equal(text(await session.call_tool("echo", {"text": "hello, corral"})), "hello, corral", "echo")
        # call_tool checks structuredContent against the tool's outputSchema itself.
        result = await session.call_tool("word_count", {"text": "one two\nthree"})
        equal(result.structuredContent, {"words": 3, "lines": 2, "chars": 13}, "word_count structuredContent")
        bad = await session.call_tool("echo", {"text": 42})
        expect(bad.isError and error_kind(bad) == "invalid-arguments", f"invalid arguments: {bad!r}")
        await raises_code(session.call_tool("no_such_tool", {}), -32602, "unknown tool")

    async def plain_progress():
        await session.set_logging_level("debug")
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(p: float, total: float | None, message: str | None) -> None:
            seen.append((p, total, message))

        # corral thins out progress reports less than 20 ms apart (all but the last): tick slower.
        result = await session.call_tool("tick", {"count": 3, "interval_ms": 40}, progress_callback=on_progress)
        equal(text(result), "ticked 3 times", "tick result")
        equal(seen, [(1, 3, "tick 1/3"), (2, 3, "tick 2/3"), (3, 3, "tick 3/3")], "progress of a plain call")
        expect(any(l.logger == "ticker" and "ticked 3 times" in str(l.data) for l in logs), f"log messages: {logs!r}")

    async def run_task(name, arguments, token, **kw) -> tuple[str, list[str]]:
        created = await x.call_tool_as_task(name, arguments, meta={"progressToken": token}, **kw)
        equal(created.task.status, "working", "status of a new task")
        statuses = [s.status async for s in x.poll_task(created.task.taskId)]
        return created.task.taskId, statuses

    async def task_completes():
        created = await x.call_tool_as_task("tick", {"count": 3, "interval_ms": 50}, ttl=60_000, meta={"progressToken": "py-tick"})
        equal(created.task.ttl, 60_000, "ttl of the new task")
        task_id = created.task.taskId
        ends[task_id] = "completed"
        statuses = [s.status async for s in x.poll_task(task_id)]
        equal(statuses[-1], "completed", "last polled status")
        result = await x.get_task_result(task_id, types.CallToolResult)
        equal(text(result), "ticked 3 times", "tasks/result")
        equal(progress.get("py-tick"), [1, 2, 3], "progress notifications of the task")

    async def required_tool():
        await raises_code(session.call_tool("countdown", {"from": 1}), -32601, "countdown without a task")
        task_id, statuses = await run_task("countdown", {"from": 2, "interval_ms": 20}, "py-countdown")
        ends[task_id] = "completed"
        equal(statuses[-1], "completed", "last polled status")
        equal(text(await x.get_task_result(task_id, types.CallToolResult)), "counted down from 2", "tasks/result")

    async def forbidden_tool():
        await raises_code(x.call_tool_as_task("echo", {"text": "x"}), -32601, "echo as a task")

    async def task_fails():
        task_id, statuses = await run_task("hash_chain", {"input": "x", "rounds": 100_000_000}, "py-hash")
        ends[task_id] = "failed"
        equal(statuses[-1], "failed", "last polled status")
        result = await x.get_task_result(task_id, types.CallToolResult)
        expect(result.isError and error_kind(result) == "fuel-exhausted", f"tasks/result: {result!r}")

    async def task_cancelled():
        started = first_progress.setdefault("py-cancel", anyio.Event())
        created = await x.call_tool_as_task("tick", {"count": 100, "interval_ms": 100}, meta={"progressToken": "py-cancel"})
        task_id = created.task.taskId
        ends[task_id] = "cancelled"
        await started.wait()  # the plugin is ticking
        answer = await x.cancel_task(task_id)
        equal(answer.status, "cancelled", "tasks/cancel answer")
        count = len(progress["py-cancel"])
        await anyio.sleep(0.4)
        equal(len(progress["py-cancel"]), count, "progress notifications after the cancel")
        equal((await x.get_task(task_id)).status, "cancelled", "tasks/get after the cancel")
        result = await x.get_task_result(task_id, types.CallToolResult)
        expect(result.isError and error_kind(result) == "cancelled", f"tasks/result: {result!r}")

    async def list_tasks():
        found: dict[str, str] = {}
        cursor = None
        while True:
            page = await x.list_tasks(cursor)
            found.update({t.taskId: t.status for t in page.tasks})
            cursor = page.nextCursor
            if not cursor:
                break
        equal(len(ends), 4, f"tasks this script made ({ends})")
        for task_id, status in ends.items():
            equal(found.get(task_id), status, f"task {task_id} in tasks/list")

    async def task_errors():
        await raises_code(x.get_task("no-such-task"), -32602, "tasks/get of an unknown id")
        done = next(t for t, s in ends.items() if s == "completed")
        await raises_code(x.cancel_task(done), -32602, "tasks/cancel of a completed task")

    await check("initialize: corral, 2025-11-25, tools and tasks capabilities", initialized)
    await check("tools/list: the example tools with their task support", list_tools)
    await check("plain calls: echo, word_count (output schema), invalid arguments, unknown tool", plain_calls)
    await check("plain call with progress and log messages (tick)", plain_progress)
    await check("task that completes, with progress (call_tool_as_task, poll_task, get_task_result)", task_completes)
    await check("required tool: -32601 without a task, completes as a task", required_tool)
    await check("forbidden tool as a task: -32601", forbidden_tool)
    await check("task that fails: isError ends it `failed`", task_fails)
    await check("task cancelled mid-run", task_cancelled)
    await check("list_tasks: every task of this session, in its final status", list_tasks)
    await check("task errors: unknown task -32602, cancelling a finished task -32602", task_errors)


async def main() -> str:
    """Runs the checks; returns corral's stderr when this script started it."""
    kw = dict(message_handler=on_message, logging_callback=on_log)
    if mode == "stdio":
        corral, plugins = sys.argv[2:4]
        # stdio_client passes the server only HOME, LOGNAME, PATH, SHELL, TERM and USER.
        params = StdioServerParameters(command=corral, args=["serve", "--plugins", plugins, "--db", ":memory:", "--task-poll-interval", "100ms"])
        with tempfile.TemporaryFile("w+") as errlog:
            try:
                async with stdio_client(params, errlog=errlog) as (read, write):
                    async with ClientSession(read, write, **kw) as session:
                        await run_checks(session)
            finally:
                errlog.seek(0)
                server_log = errlog.read()
        return server_log
    elif mode == "http":
        async with streamablehttp_client(sys.argv[2]) as (read, write, _):
            async with ClientSession(read, write, **kw) as session:
                await run_checks(session)
        return ""
    abort(f"usage: mcp1_client.py stdio CORRAL PLUGINS | http URL (got {mode!r})")


if __name__ == "__main__":
    try:
        log = anyio.run(main)
    except Exception as e:  # noqa: BLE001 - a failed connect is one clear failure
        abort(f"connect failed: {e!r}")
    finish(log)
