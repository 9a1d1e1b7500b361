"""`{{name}}`: a corral plugin in Python (built with componentize-py) on contract
corral:plugin@0.3.0 (wit/plugin.wit).

The class `Tools` implements the WIT interface `corral:plugin/tools`; the bindings, the
`wit_world` package, are generated at build time. corral_kit.py turns the tools of tools.py into
it over the host's functions: records are dataclasses, `option<T>` is a value or None, a variant
case is a class such as `Content_Text`, and a `result` error is raised as
`componentize_py_types.Err`.
"""

import json

import corral_kit
from tools import TOOLS

try:
    # Present only inside the component build; the tests import the tools without it.
    from componentize_py_types import Err
    from wit_world import exports
    from wit_world.imports import checkpoints, host
    from wit_world.imports.types import Annotations, CallResult, Content_Text, TaskSupport, Tool
except ImportError:
    exports = None


if exports is not None:

    class WitHost:
        """The host's functions as corral_kit wants them."""

        def log(self, level, message):
            host.log(host.LogLevel[level.upper()], message)

        def progress(self, done, total, message):
            host.progress(done, total, message)

        def cancelled(self):
            return host.cancelled()

        def checkpoint(self, state):
            try:
                checkpoints.checkpoint(state)
            except Err as e:
                raise ValueError(e.value) from None

        def resume(self):
            return checkpoints.resume()

    def _tool(spec):
        return Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=json.dumps(corral_kit.schema_of(spec.args)),
            output_schema=None if spec.output_schema is None else json.dumps(spec.output_schema),
            annotations=Annotations(title=None, read_only=spec.read_only, destructive=None, idempotent=spec.idempotent, open_world=False),
            task_support=TaskSupport[spec.task_support.upper()],
        )

    class Tools(exports.Tools):
        def list_tools(self):
            return [_tool(spec) for spec in TOOLS]

        def call_tool(self, name, arguments):
            out = corral_kit.call(TOOLS, WitHost(), name, arguments)
            structured = None if out.structured is None else json.dumps(out.structured)
            return CallResult(content=[Content_Text(out.text)], structured=structured, is_error=out.is_error)
