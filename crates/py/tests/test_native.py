"""The native agent from Python with no Python-specific code: a battle of
two native contestants (one fixes the exercise, one changes nothing) and a
flow whose fixer is native, on real parts — the project's scripted model
server as its own process (tool scripts by model name), the bowling
exercise of tests/agentbench in a real git repository, real python3 test
runs by the oracle and by the agent's sandboxed `run` tool."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import scripted_model_binary

import coderig

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / "tests" / "agentbench" / "polyglot-python" / "bowling"
TESTS = f"{sys.executable} -m unittest -q bowling_test"


def call(name, arguments):
    return {"name": name, "arguments": arguments}


@pytest.fixture(scope="module")
def model_server(tmp_path_factory):
    answer = (BENCH / ".meta" / "example.py").read_text()
    scripts = {
        "fix": {"steps": [
            {"calls": [call("list_files", {})]},
            {"calls": [call("read_file", {"path": "bowling.py"})]},
            {"calls": [call("write_file", {"path": "bowling.py", "content": answer})]},
            {"calls": [call("run", {"command": TESTS})]},
            {"calls": [call("finish", {"summary": "Implemented BowlingGame; the tests pass."})]},
        ]},
        "idle": {"steps": [
            {"calls": [call("list_files", {})]},
            {"say": "I would need more time to do this."},
        ]},
    }
    dir = tmp_path_factory.mktemp("scripts")
    args = []
    for name, script in scripts.items():
        path = dir / f"{name}.json"
        path.write_text(json.dumps(script))
        args += ["--script", f"{name}={path}"]
    binary = scripted_model_binary()
    proc = subprocess.Popen([str(binary), "--port", "0", *args], stdout=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
        match = re.match(r"listening on (http://\S+)", line)
        assert match, line
        yield match.group(1)
    finally:
        proc.kill()
        proc.wait()


def git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
        "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(cwd)})


def passes(project):
    return subprocess.run(TESTS.split(), cwd=project, capture_output=True).returncode == 0


@pytest.fixture
def world(tmp_path, model_server):
    root = tmp_path.resolve()
    project = root / "projects" / "bowling"
    project.mkdir(parents=True)
    for f in ("bowling.py", "bowling_test.py"):
        shutil.copy(BENCH / f, project / f)
    (project / ".gitignore").write_text("__pycache__/\n")
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "bowling stub")
    agents = {
        "local": {"kind": "native", "base_url": f"{model_server}/v1", "max_steps": 12},
        "judge": {"kind": "scripted", "script": [{"text": "never asked about a lone result"}]},
    }
    rig = coderig.Rig(data_dir=root / "data", agents=agents, project_roots=[root / "projects"])
    return rig, project


def test_native_agents_are_listed_on_the_local_lane(world):
    rig, _ = world
    (local,) = [a for a in rig.agents() if a["identity"] == "local"]
    assert local["kind"] == "native"
    assert local["lane"] == "local"
    assert local["reachable"] is True


def test_a_battle_of_two_native_contestants_is_won_by_the_one_that_fixes(world):
    rig, project = world
    battle = rig.start_battle(
        battle_type="coding",
        prompt="Implement bowling.py so that bowling_test.py passes.",
        project=project,
        contestants=[{"identity": "local", "model": "fix", "instruction": "Run the tests first."},
                     {"identity": "local", "model": "idle"}],
        judge={"identity": "judge", "model": "j"},
        contestant_timeout="60s",
        oracle={"repro": TESTS, "suite": TESTS, "timeout": "60s"},
    )
    events = list(battle.events())
    view = battle.wait(timeout=120)
    assert view["status"] == "completed", view
    (fix,) = [c for c in view["contestants"] if c["model"] == "fix"]
    assert view["winner_contestant_id"] == fix["id"], view
    assert view["winner_source"] == "oracle"
    assert fix["instruction"] == "Run the tests first."
    agent_types = {e.get("kind") for e in events}
    assert {"tool_call", "tool_result"} <= agent_types, agent_types


def test_a_flow_whose_fixer_is_native(world):
    rig, project = world
    spec = {"name": "fix-and-test", "steps": [
        {"id": "fix", "kind": "agent", "agent": "local", "model": "fix", "access": "edit",
         "workdir": str(project), "prompt": "Implement bowling.py so that bowling_test.py passes."},
        {"id": "tests", "kind": "command", "deps": ["fix"], "cwd": str(project), "shell": TESTS},
    ]}
    view = rig.run_flow(spec).wait(timeout=120)
    assert view["status"] == "completed", view
    assert passes(project)


def test_run_turn_reports_the_native_outcome(world):
    rig, project = world
    records = project.parent / "records"
    turn = rig.run_turn("local", "fix", "Implement bowling.py", workdir=str(project), access="edit",
                        artifacts=records)
    kinds = [e["type"] for e in turn.events()]
    outcome = turn.wait()
    assert outcome["stop_reason"] == "finished"
    assert outcome["requests"] == 5 and outcome["tool_calls"] == 5
    assert outcome["calls_read"]["structured"] == 5
    assert kinds.count("tool_call") == 5 and kinds.count("tool_result") == 5
    assert passes(project)
    lines = [json.loads(l) for l in (records / "transcript.jsonl").read_text().splitlines()]
    assert lines[0]["type"] == "start" and lines[0]["model"] == "fix"
    assert sum(1 for l in lines if l["type"] == "message" and l["message"]["role"] == "tool") == 5
