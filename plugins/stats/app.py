"""`stats`: a corral plugin in Python (built with componentize-py).

The class `Tools` implements the WIT interface `corral:plugin/tools` (the generated bindings
live in the `wit_world` package, made at build time). Records are dataclasses, `option<T>` is a
value or None, a variant case is a class such as `Content_Text`. Host functions come from
`wit_world.imports.host`. The logic lives in plain functions (`describe`) that `python3 -m
unittest` tests without any wasm.
"""

import json
import math
import statistics

INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "numbers": {
            "type": "array",
            "items": {"type": "number"},
            "minItems": 1,
            "maxItems": 100000,
            "description": "The numbers to describe.",
        }
    },
    "required": ["numbers"],
    "additionalProperties": False,
}

OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {
        key: {"type": "number"} for key in ("count", "mean", "median", "stdev", "min", "max")
    },
    "required": ["count", "mean", "median", "stdev", "min", "max"],
}


def describe(numbers):
    """Count, mean, median, sample standard deviation (0 for one number), min and max."""
    if not numbers:
        raise ValueError("`numbers` is empty: give at least one number")
    if not all(math.isfinite(x) for x in numbers):
        raise ValueError("`numbers` must be finite")
    return {
        "count": len(numbers),
        "mean": statistics.fmean(numbers),
        "median": statistics.median(numbers),
        "stdev": statistics.stdev(numbers) if len(numbers) > 1 else 0.0,
        "min": min(numbers),
        "max": max(numbers),
    }


try:
    # Present only inside the component build; the tests import this file without it.
    from wit_world import exports
    from wit_world.imports import host
    from wit_world.imports.types import (
        Annotations, CallResult, Content_Text, TaskSupport, Tool,
    )
except ImportError:
    exports = None


def _text(message, is_error):
    return CallResult(content=[Content_Text(message)], structured=None, is_error=is_error)


if exports is not None:

    class Tools(exports.Tools):
        def list_tools(self):
            return [
                Tool(
                    name="describe_numbers",
                    title="Describe numbers",
                    description="Summary statistics of `numbers`: count, mean, median, "
                    "sample standard deviation, min and max.",
                    input_schema=json.dumps(INPUT_SCHEMA),
                    output_schema=json.dumps(OUTPUT_SCHEMA),
                    annotations=Annotations(
                        title=None, read_only=True, destructive=False, idempotent=True, open_world=False
                    ),
                    task_support=TaskSupport.FORBIDDEN,
                )
            ]

        def call_tool(self, name, arguments):
            if name != "describe_numbers":
                return _text(f"unknown tool `{name}`; this plugin has `describe_numbers`", True)
            try:
                summary = describe(json.loads(arguments)["numbers"])
            except (ValueError, statistics.StatisticsError) as e:
                # A failure the model can fix: it reads this text.
                return _text(str(e), True)
            host.log(host.LogLevel.DEBUG, f"described {summary['count']} numbers")
            text = json.dumps(summary)
            return CallResult(content=[Content_Text(text)], structured=text, is_error=False)
