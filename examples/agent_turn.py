"""One agent turn through coderig.Rig: a scripted agent (no model, no
network) fixes a file in a scratch work dir; every normalized event is
printed as it streams, then the outcome. A second turn shows a failure
(raised as coderig.AgentError, with what to do about it in .details), and
the async twins run the same turn on asyncio.

The same code runs any agent of a coderig.toml (Rig(config="coderig.toml")):
CLI agents (claude, codex, qwen, opencode) and OpenAI-compatible servers
stream the same event dicts.

Run (with the module installed): python examples/agent_turn.py
"""
import asyncio
import json
import tempfile
from pathlib import Path

import coderig

rig = coderig.Rig(agents={
    "fixer": {"kind": "scripted", "script": [
        {"reasoning": "the test expects 2"},
        {"text": "Fixing add()."},
        {"write": {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}},
        {"usage": {"input": 120, "output": 30}},
    ]},
    "quota": {"kind": "scripted", "script": [
        {"fail": {"message": "You exceeded your current quota, please check your plan and billing details."}},
    ]},
})
print("agents:", [(a["identity"], a["kind"], a["installed"]) for a in rig.agents()])

with tempfile.TemporaryDirectory() as work:
    (Path(work) / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    turn = rig.run_turn("fixer", None, "make add() add", workdir=work, access="edit",
                        timeout="30s", idle_timeout=5)
    for event in turn.events():
        print("event:", json.dumps(event, sort_keys=True))
    outcome = turn.wait()
    print("outcome:", json.dumps(outcome, sort_keys=True))
    assert outcome["final_text"] == "Fixing add()."
    assert "a + b" in (Path(work) / "calc.py").read_text()

    async def main():
        turn = rig.run_turn("fixer", "any-model", "again", workdir=work, access="edit")
        types = [event["type"] async for event in turn.events()]
        print("async events:", types)
        return await turn.wait_async()

    assert asyncio.run(main())["model"] == "any-model"

try:
    rig.run_turn("quota", None, "hello").wait()
    raise SystemExit("the quota turn must fail")
except coderig.AgentError as e:
    # class "stop": no other model of this account will work either.
    print("failed (%s): %s %s" % (e.code, e.message, e.details))
    assert e.details["class"] == "stop"
