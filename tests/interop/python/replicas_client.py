"""PyPI `mcp` 2.x through a load balancer in front of several corral replicas, with a bearer token.
tests/replicas.rs starts the replicas (one PostgreSQL), nginx and this script:

    python replicas_client.py ROUND_ROBIN_URL BY_TOKEN_URL TOKEN

The 2026-07-28 client (`auto`: it probes `server/discover` and stays stateless) goes through plain
round robin, so its requests land on every replica in turn; the 2025-11-25 client (`legacy`:
`initialize`, then a session) goes through the upstream that hashes on the bearer token, since a
session lives in the memory of the replica that created it (docs/deploy.md).
"""

from __future__ import annotations

import sys

import anyio
from check import abort, check, equal, expect, finish, raises_code, set_suite, text
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

if len(sys.argv) != 4:
    abort(f"usage: replicas_client.py ROUND_ROBIN_URL BY_TOKEN_URL TOKEN (got {sys.argv[1:]!r})")
round_robin, by_token, token = sys.argv[1:4]
set_suite("python-mcp2/replicas")


def connect(url: str, mode: str) -> Client:
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(url, http_client=http), mode=mode)


async def run_checks(client: Client, era: str) -> None:
    async def negotiated():
        equal(client.protocol_version, era, "negotiated protocol version")

    async def tools():
        listed = {t.name: (t.execution.task_support if t.execution else None) for t in (await client.list_tools()).tools}
        equal({k: listed.get(k) for k in ("echo", "record", "record_once")}, {"echo": "forbidden", "record": "required", "record_once": "required"}, "task support")

    async def calls_on_every_replica():
        # Six calls: through round robin two on each of the three replicas, through the hash all on one.
        for i in range(6):
            equal(text(await client.call_tool("echo", {"text": f"call {i}"})), f"call {i}", f"echo {i}")

    async def required_tool_refused():
        if era == "2026-07-28":
            await raises_code(client.call_tool("record", {"label": "never"}), -32021, "record without the tasks extension")
        else:
            await raises_code(client.call_tool("record", {"label": "never"}), -32601, "record without a task")

    await check(f"{era}: negotiated through the balancer", negotiated)
    await check(f"{era}: tools/list names the replicas' tools and their task support", tools)
    await check(f"{era}: plain calls answered wherever the balancer sends them", calls_on_every_replica)
    await check(f"{era}: a required task tool called without a task is refused", required_tool_refused)


async def main() -> None:
    async with connect(round_robin, "auto") as client:
        await run_checks(client, "2026-07-28")
    async with connect(by_token, "legacy") as client:
        await run_checks(client, "2025-11-25")


if __name__ == "__main__":
    try:
        anyio.run(main)
    except Exception as e:  # noqa: BLE001 - a failed connect is one clear failure
        abort(f"connect failed: {e!r}")
    finish()
