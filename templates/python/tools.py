"""The tools of `{{name}}`, written on the helper layer (corral_kit.py). Nothing here imports
the component's bindings, so `python3 -m unittest` runs them as they are (test_app.py)."""

from corral_kit import Outcome, tool


@tool(
    "{{tool}}",
    "Greets someone by name.",
    args={"name": {"type": "string", "description": "Who to greet."}},
    title="Greet",
    read_only=True,
)
def greet(args, ctx):
    who = args["name"].strip()
    if not who:
        raise ValueError("`name` is empty: say who to greet")
    ctx.log("debug", f"greeting {who}")
    return f"Hello, {who}!"


# Work that survives a crash: run as a task (task_support "optional"), it checkpoints every
# `every` numbers, and a task that runs again after its host died resumes from the last
# checkpoint (the manifest says `resumable = true`). The state holds everything the run has
# learnt (the next number and the sum so far), and it is checkpointed *after* the work it
# records: each checkpoint is a safe retry boundary.
@tool(
    "{{tool}}_tally",
    "Adds up the numbers 1 to `to`, reporting progress and checkpointing every `every` numbers; "
    "as a task it resumes from its last checkpoint after a crash instead of starting over.",
    args={
        "to": {"type": "integer", "minimum": 1, "maximum": 100000000, "description": "The last number to add."},
        "every": {"type": "integer", "minimum": 1, "default": 1000, "description": "Numbers between two checkpoints."},
    },
    title="Tally",
    task_support="optional",
    read_only=True,
)
def tally(args, ctx):
    to, every = args["to"], args["every"]
    state = ctx.resume() or {"next": 1, "sum": 0}
    resumed_at = state["next"]
    while state["next"] <= to:
        end = min(to, state["next"] + every - 1)
        state = {"next": end + 1, "sum": state["sum"] + sum(range(state["next"], end + 1))}
        ctx.progress(end, to, f"added up to {end} of {to}")
        ctx.checkpoint(state)
    text = f"1 + 2 + ... + {to} = {state['sum']}" + (f" (resumed at {resumed_at})" if resumed_at > 1 else "")
    return Outcome(text, structured={"sum": state["sum"], "resumedAt": resumed_at})


TOOLS = [greet, tally]
