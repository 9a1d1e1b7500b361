"""The small helper layer of a corral plugin in Python (contract corral:plugin@0.3.0).

It stands between the WIT export `Tools` and the tools you write, so that a tool is a function
with a declared shape of its arguments:

- typed arguments: `args` declares each field (`type`, `description`, `default`, `optional`,
  `minimum`, `maximum`, `enum`); the input schema the host publishes is made from it, and the
  arguments are checked against it again before the function sees them, so it gets the
  defaults filled in and a wrong value is an `is_error` result that names the field;
- `ctx.progress(done, total, message)`, `ctx.log(level, message)`, `ctx.cancelled()`;
- `ctx.checkpoint(state)` stores `state` (any JSON value) with the task, durably, before it
  returns; `ctx.resume()` gives the last one back when the task runs again after a crash (None
  otherwise). Each checkpoint is a safe retry boundary: what the tool did after its last
  checkpoint is done again, so checkpoint *after* the work the state records.

This module imports nothing of the component: app.py hands it the host's functions, and
`TestHost` below stands in for them, so `python3 -m unittest` runs the tools (a crash and its
resume included) without wasm.
"""

import json
from dataclasses import dataclass, field

TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)}


class ArgumentError(ValueError):
    """A mistake in the arguments, naming the field: the model reads it and can try again."""


@dataclass
class ToolSpec:
    """One tool: what the host publishes about it, and the function that runs it."""

    name: str
    description: str
    run: object
    args: dict = field(default_factory=dict)
    title: str = None
    task_support: str = "forbidden"
    read_only: bool = None
    idempotent: bool = None
    output_schema: dict = None


def tool(name, description, args=None, **options):
    """Declares the decorated `run(args, ctx)` as tool `name`; `options` are the other
    `ToolSpec` fields (`title`, `task_support` = "forbidden" | "optional" | "required", ...)."""

    def declare(run):
        for arg, decl in (args or {}).items():
            if decl.get("type") not in TYPES:
                raise TypeError(f"tool `{name}`: argument `{arg}` has type {decl.get('type')!r}; use one of {', '.join(TYPES)}")
        return ToolSpec(name=name, description=description, run=run, args=args or {}, **options)

    return declare


def schema_of(args):
    """The JSON Schema of a declared shape: what the host publishes and checks first."""
    properties = {arg: {k: v for k, v in decl.items() if k != "optional"} for arg, decl in args.items()}
    required = [arg for arg, decl in args.items() if not decl.get("optional") and "default" not in decl]
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def parse_args(args, value):
    """`value` (the parsed arguments) checked against the shape, with its defaults filled in."""
    if not isinstance(value, dict):
        raise ArgumentError("the arguments must be a JSON object")
    for arg in value:
        if arg not in args:
            known = ", ".join(f"`{a}`" for a in args) or "none"
            raise ArgumentError(f"unknown argument `{arg}`; this tool takes {known}")
    typed = {}
    for arg, decl in args.items():
        if arg not in value:
            if "default" in decl:
                typed[arg] = decl["default"]
            elif not decl.get("optional"):
                raise ArgumentError(f"argument `{arg}` is missing: {decl.get('description', 'a ' + decl['type'])}")
            continue
        typed[arg] = _checked(arg, decl, value[arg])
    return typed


def _checked(arg, decl, given):
    got = json.dumps(given)
    kind = decl["type"]
    # bool is an int in Python, but not in JSON Schema.
    if isinstance(given, bool) != (kind == "boolean") or not isinstance(given, TYPES[kind]):
        article = "an" if kind == "integer" else "a"
        raise ArgumentError(f"argument `{arg}` must be {article} {kind}, got {got}")
    if "enum" in decl and given not in decl["enum"]:
        raise ArgumentError(f"argument `{arg}` must be one of {json.dumps(decl['enum'])}, got {got}")
    if "minimum" in decl and given < decl["minimum"]:
        raise ArgumentError(f"argument `{arg}` must be at least {decl['minimum']}, got {got}")
    if "maximum" in decl and given > decl["maximum"]:
        raise ArgumentError(f"argument `{arg}` must be at most {decl['maximum']}, got {got}")
    return given


@dataclass
class Outcome:
    """What a call came to: a text, optional structured output (any JSON value), an error flag."""

    text: str
    structured: object = None
    is_error: bool = False


class Context:
    """What a tool's function gets besides its arguments."""

    def __init__(self, host):
        self._host = host

    def log(self, level, message):
        """`level`: "debug", "info", "notice", "warning" or "error"."""
        self._host.log(level, message)

    def progress(self, done, total=None, message=None):
        self._host.progress(float(done), None if total is None else float(total), message)

    def cancelled(self):
        return self._host.cancelled()

    def checkpoint(self, state):
        """Raises ValueError with the host's reason when the state is over the plugin's cap."""
        self._host.checkpoint(json.dumps(state).encode())

    def resume(self):
        state = self._host.resume()
        return None if state is None else json.loads(bytes(state).decode())


def call(tools, host, name, arguments):
    """Runs tool `name` of `tools` with `arguments` (JSON text) over `host`."""
    spec = next((t for t in tools if t.name == name), None)
    if spec is None:
        return Outcome(f"unknown tool `{name}`", is_error=True)
    try:
        out = spec.run(parse_args(spec.args, json.loads(arguments)), Context(host))
    except Crash:
        # A crash of the test double is the host dying: it must not become a result.
        raise
    except Exception as e:  # noqa: BLE001 - an isError result the model reads and may correct
        return Outcome(str(e), is_error=True)
    return out if isinstance(out, Outcome) else Outcome(str(out))


class Crash(Exception):
    """What `TestHost(crash_after=n)` raises at the `n`th checkpoint: the host died there."""


class TestHost:
    """The host's functions for tests, recording what a tool reports (`logs`, `reports` of
    progress, `checkpoints` as bytes). With `crash_after=n` the `n`th checkpoint is stored and
    then the call stops with a `Crash`, as if the host died right after it; call again on the
    same double and `resume()` returns the last checkpoint, as a task run again after a crash
    does."""

    __test__ = False

    def __init__(self, crash_after=None, cap_bytes=1 << 20):
        self.logs, self.reports, self.checkpoints = [], [], []
        self.crash_after, self.cap_bytes, self.resumed = crash_after, cap_bytes, None

    def log(self, level, message):
        self.logs.append((level, message))

    def progress(self, done, total, message):
        self.reports.append((done, total, message))

    def cancelled(self):
        return False

    def checkpoint(self, state):
        if len(state) > self.cap_bytes:
            raise ValueError(f"a checkpoint holds at most {self.cap_bytes} bytes; this one has {len(state)}")
        self.checkpoints.append(state)
        if len(self.checkpoints) == self.crash_after:
            self.crash_after, self.resumed = None, state
            raise Crash(f"crashed after checkpoint {len(self.checkpoints)}")

    def resume(self):
        return self.resumed
