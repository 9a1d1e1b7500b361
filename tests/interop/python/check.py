"""A tiny harness for the Python interop clients: named checks with a deadline each, a clear line
per failure, and a closing "N passed, N failed" line (exit status 1 if any check failed)."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

_counts = {"passed": 0, "failed": 0}
_suite = ["python"]


def set_suite(name: str) -> None:
    _suite[0] = name


async def check(name: str, fn: Callable[[], Awaitable[Any]], seconds: float = 30) -> bool:
    """Runs `fn` as one named check; an exception or more than `seconds` fails it."""
    try:
        with anyio.fail_after(seconds):
            await fn()
    except BaseException as e:  # noqa: BLE001 - every failure is reported, then the run goes on
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        _counts["failed"] += 1
        what = "no outcome within %ss" % seconds if isinstance(e, TimeoutError) else _describe(e)
        print(f"FAIL {_suite[0]}: {name}\n     " + what.replace("\n", "\n     "), flush=True)
        return False
    _counts["passed"] += 1
    print(f"ok   {_suite[0]}: {name}", flush=True)
    return True


def _describe(e: BaseException) -> str:
    if isinstance(e, AssertionError) and str(e):
        return str(e)
    frames = traceback.format_exception(type(e), e, e.__traceback__)
    return "".join(frames[-3:]).rstrip()


def expect(condition: Any, message: str) -> None:
    if not condition:
        raise AssertionError(message)


def equal(actual: Any, expected: Any, what: str) -> None:
    if actual != expected:
        raise AssertionError(f"{what}: expected {expected!r}, got {actual!r}")


async def raises_code(awaitable: Awaitable[Any], code: int, what: str) -> Exception:
    """Awaits `awaitable`, which must fail with a JSON-RPC error of `code`."""
    try:
        result = await awaitable
    except Exception as e:  # noqa: BLE001 - the SDKs name their error classes differently
        got = getattr(getattr(e, "error", None), "code", None)
        if got is None:
            got = getattr(e, "code", None)
        equal(got, code, f"{what}: JSON-RPC error code of {e!r}")
        return e
    raise AssertionError(f"{what}: expected JSON-RPC error {code}, got a result: {result!r}")


def text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


def error_kind(result: Any) -> str | None:
    meta = result.meta or {}
    return (meta.get("corral/error") or {}).get("kind")


def finish(server_log: str = "") -> None:
    if server_log and _counts["failed"]:
        print("corral's stderr (last lines):\n" + "\n".join(server_log.splitlines()[-20:]), flush=True)
    print(f"{_suite[0]}: {_counts['passed']} passed, {_counts['failed']} failed", flush=True)
    sys.exit(1 if _counts["failed"] else 0)


def abort(message: str) -> None:
    _counts["failed"] += 1
    print(f"FAIL {_suite[0]}: {message}", flush=True)
    finish()
