"""Rig.run_turn with the real pinned claude CLI (scripts/install-agents.sh;
CODERIG_AGENT_BIN names its .bin dir) against the project's scripted model
server (crates/scripted-model, run as its own process), configured as a
user would: the preset, the binary, and the provider settings in `env`.

Without CODERIG_AGENT_BIN the tests are skipped, unless
CODERIG_REQUIRE_AGENTS=1 (the test command sets both), which fails them.
"""

import asyncio
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import scripted_model_binary

import coderig

ROOT = Path(__file__).resolve().parents[3]
BIN = os.environ.get("CODERIG_AGENT_BIN")

if not BIN:
    if os.environ.get("CODERIG_REQUIRE_AGENTS") == "1":
        raise RuntimeError("CODERIG_REQUIRE_AGENTS=1 but CODERIG_AGENT_BIN is not set")
    pytest.skip("CODERIG_AGENT_BIN is not set (see scripts/install-agents.sh)", allow_module_level=True)


@pytest.fixture(scope="module")
def model_server():
    binary = scripted_model_binary()
    proc = subprocess.Popen([str(binary), "--port", "0"], stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
        match = re.match(r"listening on (http://\S+)", line)
        assert match, line
        yield match.group(1)
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture()
def claude_rig(model_server, tmp_path):
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    subprocess.run(git + ["commit", "-q", "--allow-empty", "-m", "init"], cwd=work, check=True)
    env = {
        "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "XDG_CONFIG_HOME": str(home / ".config"), "XDG_DATA_HOME": str(home / ".local/share"),
        "XDG_CACHE_HOME": str(home / ".cache"), "XDG_STATE_HOME": str(home / ".local/state"),
        "ANTHROPIC_BASE_URL": model_server, "ANTHROPIC_API_KEY": "sk-ant-dummy",
        "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_MAX_RETRIES": "0",
    }
    rig = coderig.Rig(agents={"claude": {"kind": "cli", "preset": "claude",
                                         "command": str(Path(BIN) / "claude"), "env": env}})
    return rig, work


def test_a_real_claude_turn_writes_the_file_and_streams_normalized_events(claude_rig):
    rig, work = claude_rig
    turn = rig.run_turn("claude", "scripted-model", "Create hello.txt containing hi",
                        workdir=work, access="edit", timeout="240s")
    events = list(turn.events())
    outcome = turn.wait()
    types = [e["type"] for e in events]
    for wanted in ("session_started", "tool_call", "tool_result", "usage", "finished"):
        assert wanted in types, types
    call = next(e for e in events if e["type"] == "tool_call")
    assert call["name"] == "Write" and call["input"]["file_path"].endswith("hello.txt"), call
    assert (work / "hello.txt").read_text().strip() == "hi"
    assert outcome["final_text"] == "done"
    assert outcome["exit_code"] == 0 and outcome["session_id"]


def test_a_real_read_only_claude_turn_writes_nothing_async(claude_rig):
    rig, work = claude_rig

    async def main():
        turn = rig.run_turn("claude", "scripted-model", "Create hello.txt containing hi",
                            workdir=work, timeout=240)
        types = [e["type"] async for e in turn.events()]
        return types, await turn.wait_async()

    types, outcome = asyncio.run(main())
    assert "session_started" in types and "finished" in types, types
    assert not (work / "hello.txt").exists()
    assert outcome["final_text"] == "done"


def test_agents_reports_the_real_binary_installed(claude_rig):
    rig, _ = claude_rig
    (info,) = rig.agents()
    assert (info["identity"], info["kind"], info["preset"], info["installed"]) == ("claude", "cli", "claude", True)
    assert info["command"] == str(Path(BIN) / "claude")
