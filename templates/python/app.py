"""`{{name}}`: a corral plugin in Python (built with componentize-py).

The class `Tools` implements the WIT interface `corral:plugin/tools` (wit/plugin.wit); the
bindings, the `wit_world` package, are generated at build time. Records are dataclasses,
`option<T>` is a value or None, a variant case is a class such as `Content_Text`. Host functions
(`log`, `progress`, `cancelled`) come from `wit_world.imports.host`.

The logic lives in plain functions that `python3 -m unittest` tests without wasm.
"""

import json


def greet(name):
    who = name.strip()
    if not who:
        raise ValueError("`name` is empty: say who to greet")
    return f"Hello, {who}!"


INPUT_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Who to greet."}},
    "required": ["name"],
    "additionalProperties": False,
}

try:
    # Present only inside the component build; the tests import this file without it.
    from wit_world import exports
    from wit_world.imports import host
    from wit_world.imports.types import Annotations, CallResult, Content_Text, TaskSupport, Tool
except ImportError:
    exports = None


if exports is not None:

    def _text(message, is_error):
        return CallResult(content=[Content_Text(message)], structured=None, is_error=is_error)

    class Tools(exports.Tools):
        def list_tools(self):
            return [
                Tool(
                    name="{{tool}}",
                    title="Greet",
                    description="Greets someone by name.",
                    input_schema=json.dumps(INPUT_SCHEMA),
                    output_schema=None,
                    annotations=Annotations(
                        title=None, read_only=True, destructive=None, idempotent=None, open_world=False
                    ),
                    task_support=TaskSupport.FORBIDDEN,
                )
            ]

        # `arguments` is the JSON text the client sent, already checked against the input schema.
        def call_tool(self, name, arguments):
            if name != "{{tool}}":
                return _text(f"unknown tool `{name}`", True)
            try:
                greeting = greet(json.loads(arguments)["name"])
            except ValueError as e:
                # An isError result: the model reads the message and can try again.
                return _text(str(e), True)
            host.log(host.LogLevel.DEBUG, f"greeted: {greeting}")
            return _text(greeting, False)
