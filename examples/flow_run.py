"""A flow run through coderig.Rig: a command step lists some files, a Python
function (a code step) picks the largest, an async one summarizes, and the
run's report is rendered from their results. Every state change lands in
the Rig's store (SQLite here) with its event; the events are printed as
they stream.

Agent steps run the agents of a coderig.toml the same way
(Rig(config="coderig.toml") and `kind: agent` steps naming them).

Run (with the module installed): python examples/flow_run.py
"""
import asyncio
import tempfile
from pathlib import Path

import coderig

FLOW = """
name: largest-file
steps:
  - id: list
    kind: command
    shell: 'for f in "$DIR"/*; do printf "%s %s\\n" "$(wc -c < "$f")" "$(basename "$f")"; done'
    env: { DIR: "{{ input.dir }}" }
  - id: pick
    kind: code
    deps: [list]
    retry: { max_attempts: 2, initial: 100ms }
  - id: summarize
    kind: code
    deps: [pick]
report: |
  Largest of {{ input.dir }}: {{ results.pick.name }} ({{ results.pick.bytes }} bytes)
  {{ results.summarize }}
"""


def pick(ctx):
    """A sync code step: ctx["results"] holds its dependencies' results."""
    sizes = [line.split(" ", 1) for line in ctx["results"]["list"].splitlines()]
    size, name = max((int(size), name) for size, name in sizes)
    return {"name": name, "bytes": size}


async def summarize(ctx):
    """An async code step: it runs on the Rig's asyncio loop."""
    await asyncio.sleep(0)
    return f"picked {ctx['results']['pick']['name']}"


with tempfile.TemporaryDirectory() as tmp:
    files = Path(tmp, "files")
    files.mkdir()
    for name, text in {"a.txt": "short", "b.txt": "a little longer", "c.txt": "mid size"}.items():
        (files / name).write_text(text)

    rig = coderig.Rig(data_dir=Path(tmp, "data"))
    run = rig.run_flow(FLOW, input={"dir": str(files)}, code={"pick": pick, "summarize": summarize})
    print("run", run.id)
    for event in run.events():
        if event["type"] == "step_updated":
            print(f"  {event['step_id']:<10} {event['status']} (attempt {event['attempt']})")
        else:
            print(f"{event['type']}: {event['status']}")

    view = run.wait(timeout="60s")
    assert view["status"] == "completed", view["error"]
    print()
    print(run.report)
    assert "b.txt (15 bytes)" in run.report
