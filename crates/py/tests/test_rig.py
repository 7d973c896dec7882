"""coderig.Rig, Turn and TurnEvents on scripted agents, real work dirs and
real threads: events, outcomes, failures, timeouts, cancellation, configs."""

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import coderig

WRITER = [
    {"text": "looking"},
    {"tool_call": {"name": "write_file", "input": {"path": "fix.py"}}},
    {"write": {"path": "fix.py", "content": "x = 1\n"}},
    {"usage": {"input": 10, "output": 5}},
    {"text": " done"},
]
WRITER_TYPES = ["session_started", "text_delta", "tool_call", "tool_call", "tool_result",
                "usage", "text_delta", "finished"]

AGENTS = {
    "alice": {"kind": "scripted", "script": WRITER},
    "broke": {"kind": "scripted", "script": [
        {"text": "hm"}, {"fail": {"message": "You exceeded your current quota", "class": "stop"}}]},
    "sleepy": {"kind": "scripted", "script": [{"text": "zz"}, {"hang": True}]},
    "by_model": {"kind": "scripted", "script": [{"text": "default"}],
                 "scripts": {"small": [{"text": "small one"}]}, "models": ["small"]},
}


@pytest.fixture
def rig():
    return coderig.Rig(agents=AGENTS)


def test_a_turn_streams_its_events_in_order_and_the_file_appears(rig, tmp_path):
    turn = rig.run_turn("alice", None, "fix it", workdir=tmp_path, access="edit")
    events = list(turn.events())
    assert [e["type"] for e in events] == WRITER_TYPES
    assert events[1] == {"type": "text_delta", "text": "looking"}
    assert events[2] == {"type": "tool_call", "id": events[2]["id"], "name": "write_file",
                         "input": {"path": "fix.py"}}
    assert events[4]["ok"] is True
    assert events[5] == {"type": "usage", "input": 10, "output": 5, "cache_read": 0,
                         "cache_write": 0, "reasoning": 0}
    assert (tmp_path / "fix.py").read_text() == "x = 1\n"
    outcome = turn.wait()
    assert outcome["final_text"] == "looking done"
    assert outcome["usage"] == {"input": 10, "output": 5, "cache_read": 0, "cache_write": 0,
                                "reasoning": 0}
    assert outcome["session_id"] == events[0]["session_id"]
    assert outcome["stop_reason"] == "end_turn"
    assert isinstance(outcome["duration_ms"], int)
    assert turn.outcome == outcome
    assert turn.identity == "alice" and turn.model is None
    assert "finished" in repr(turn)


def test_the_async_iterator_and_wait_async_give_the_same_stream(rig, tmp_path):
    async def main():
        turn = rig.run_turn("alice", "any", "fix it", workdir=tmp_path, access="edit")
        types = [e["type"] async for e in turn.events()]
        return types, await turn.wait_async()

    types, outcome = asyncio.run(main())
    assert types == WRITER_TYPES
    assert outcome["final_text"] == "looking done"
    assert outcome["model"] == "any"
    assert (tmp_path / "fix.py").is_file()


def test_wait_without_reading_drops_the_events_and_keeps_the_outcome(rig, tmp_path):
    turn = rig.run_turn("alice", None, "p", workdir=tmp_path, access="edit")
    assert turn.outcome is None
    outcome = turn.wait()
    assert list(turn.events()) == []
    assert turn.wait() == outcome  # the outcome is kept, not taken twice


def test_a_read_only_turn_cannot_write(rig, tmp_path):
    events = list(rig.run_turn("alice", None, "p", workdir=tmp_path).events())
    result = next(e for e in events if e["type"] == "tool_result")
    assert result["ok"] is False
    assert not (tmp_path / "fix.py").exists()


def test_the_model_picks_the_script(rig):
    assert rig.run_turn("by_model", "small", "p").wait()["final_text"] == "small one"
    assert rig.run_turn("by_model", None, "p").wait()["final_text"] == "default"


def test_a_failed_turn_raises_agent_error_with_its_class(rig):
    turn = rig.run_turn("broke", None, "p")
    with pytest.raises(coderig.AgentError) as raised:
        turn.wait()
    e = raised.value
    assert (e.kind, e.code) == ("agent", "AGENT")
    assert e.message == "You exceeded your current quota"
    assert e.details == {"agent_error": "provider", "class": "stop"}
    assert turn.outcome is None and "failed" in repr(turn)
    with pytest.raises(coderig.AgentError):  # again, the same error
        turn.wait()


def test_the_failed_turns_events_end_with_the_error_then_wait_raises(rig):
    turn = rig.run_turn("broke", None, "p")
    events = list(turn.events())
    assert events[-1]["type"] == "error" and events[-1]["class"] == "stop"

    async def main():
        with pytest.raises(coderig.AgentError) as raised:
            await turn.wait_async()
        return raised.value

    assert asyncio.run(main()).details["class"] == "stop"


def test_a_hang_ends_idle_after_idle_timeout(rig):
    started = time.monotonic()
    turn = rig.run_turn("sleepy", None, "p", idle_timeout=0.2)
    with pytest.raises(coderig.AgentError) as raised:
        turn.wait()
    assert raised.value.details["agent_error"] == "idle"
    assert raised.value.details["class"] == "retry"
    assert time.monotonic() - started < 5


@pytest.mark.parametrize("timeout", [0.2, "200ms"])
def test_a_hang_ends_with_timeout(rig, timeout):
    turn = rig.run_turn("sleepy", None, "p", timeout=timeout)
    with pytest.raises(coderig.AgentError) as raised:
        turn.wait()
    assert raised.value.details["agent_error"] == "timeout"


def test_cancel_from_another_thread_ends_a_hang(rig):
    turn = rig.run_turn("sleepy", None, "p")
    timer = threading.Timer(0.2, turn.cancel)
    timer.start()
    started = time.monotonic()
    with pytest.raises(coderig.AgentError) as raised:
        for _ in turn.events():
            pass
        turn.wait()
    timer.join()
    assert raised.value.details["agent_error"] == "cancelled"
    assert time.monotonic() - started < 5


def test_wait_with_a_timeout_gives_up_and_the_turn_goes_on(rig):
    turn = rig.run_turn("sleepy", None, "p")
    with pytest.raises(TimeoutError):
        turn.wait(timeout=0.1)
    assert "running" in repr(turn)
    turn.cancel()
    with pytest.raises(coderig.AgentError) as raised:
        turn.wait(timeout="5s")
    assert raised.value.details["agent_error"] == "cancelled"


def test_blocking_calls_release_the_gil(rig):
    turn = rig.run_turn("sleepy", None, "p", timeout=0.5)
    waiter = threading.Thread(target=lambda: pytest.raises(coderig.AgentError, turn.wait))
    waiter.start()
    spins = 0
    while waiter.is_alive():
        spins += 1
    waiter.join()
    assert spins > 1000


def test_agents_lists_every_identity(rig):
    infos = rig.agents()
    assert [i["identity"] for i in infos] == sorted(AGENTS)
    assert infos[0] == {"identity": "alice", "kind": "scripted", "lane": "cloud",
                        "installed": True, "reachable": True, "models": [],
                        "sandbox": "none"}
    assert next(i for i in infos if i["identity"] == "by_model")["models"] == ["small"]

    async def main():
        return await rig.agents_async(probe_timeout="1s")

    assert asyncio.run(main()) == infos
    assert repr(rig) == "Rig(agents=['alice', 'broke', 'by_model', 'sleepy'])"


def test_unknown_identity_is_not_found_id(rig):
    with pytest.raises(coderig.NotFoundIdError) as raised:
        rig.run_turn("bob", None, "p")
    assert raised.value.details == {"what": "agent", "id": "bob", "known": sorted(AGENTS)}
    assert raised.value.message == (
        'no agent "bob"; configured: alice, broke, by_model, sleepy')


def test_bad_options_are_invalid_input_with_the_cores_message_and_path(rig):
    # The same messages as Node's runTurn: both faces decode with TurnOptions.
    with pytest.raises(coderig.InvalidInputError) as raised:
        rig.run_turn("alice", None, "p", access="sudo")
    assert raised.value.message == (
        '`access`: unknown access level "sudo"; expected one of: read_only, edit, full')
    assert raised.value.details == {"path": "access"}
    assert rig.run_turn("alice", None, "p", access="Read-Only").wait()["final_text"]
    expected = 'expected a number of seconds or a number with a unit ("500ms", "90s", "20m", "2h")'
    for bad, message in [
        ("5 parsecs", f'bad duration "5 parsecs": {expected}'),
        (-1, "bad duration -1: expected a non-negative number of seconds"),
        (float("nan"), "must be a finite number, got NaN"),
        (float("-inf"), "must be a finite number, got -Infinity"),
        (True, 'invalid type: a boolean, expected a number of seconds or a duration string ("90s")'),
        ([1], 'invalid type: an array, expected a number of seconds or a duration string ("90s")'),
        ({}, 'invalid type: an object, expected a number of seconds or a duration string ("90s")'),
    ]:
        with pytest.raises(coderig.InvalidInputError) as raised:
            rig.run_turn("alice", None, "p", idle_timeout=bad)
        assert raised.value.message == f"`idle_timeout`: {message}"
        assert raised.value.details == {"path": "idle_timeout"}
    with pytest.raises(coderig.InvalidInputError, match="^`timeout`: invalid type: a boolean"):
        rig.run_turn("alice", None, "p", timeout=True)
    with pytest.raises(coderig.InvalidInputError, match="^`workdir`: invalid type: integer `1`"):
        rig.run_turn("alice", None, "p", workdir=1)
    with pytest.raises(coderig.InvalidInputError, match="^`system`: invalid type: integer `2`"):
        rig.run_turn("alice", None, "p", system=2)
    turn = rig.run_turn("sleepy", None, "p")
    with pytest.raises(coderig.InvalidInputError, match='^`timeout`: bad duration "soon"'):
        turn.wait(timeout="soon")
    with pytest.raises(coderig.InvalidInputError, match="^`timeout`: invalid type: a boolean"):
        turn.wait(timeout=False)
    turn.cancel()
    with pytest.raises(coderig.InvalidInputError, match="^`probe_timeout`: bad duration -2"):
        rig.agents(probe_timeout=-2)


TOML = """
[agents.alice]
kind = "scripted"
script = [ { write = { path = "a.txt", content = "from toml\\n" } }, { text = "ok" } ]
lane = "local"
timeout = "30s"
"""


def test_config_reads_a_coderig_toml(tmp_path):
    path = tmp_path / "coderig.toml"
    path.write_text(TOML)
    for config in (path, str(path)):
        rig = coderig.Rig(config=config, data_dir=tmp_path / "data", db="sqlite://x.db")
        assert rig.config == path
        assert rig.data_dir == tmp_path / "data" and rig.db == "sqlite://x.db"
        assert [(i["identity"], i["lane"]) for i in rig.agents()] == [("alice", "local")]
    work = tmp_path / "work"
    work.mkdir()
    assert rig.run_turn("alice", None, "p", workdir=work, access="edit").wait()["final_text"] == "ok"
    assert (work / "a.txt").read_text() == "from toml\n"


def test_without_config_the_current_directorys_coderig_toml_is_read(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert coderig.Rig().agents() == []
    (tmp_path / "coderig.toml").write_text(TOML)
    rig = coderig.Rig()
    assert rig.config == Path("coderig.toml")
    assert [i["identity"] for i in rig.agents()] == ["alice"]


def test_a_bad_config_names_the_key(tmp_path):
    path = tmp_path / "coderig.toml"
    path.write_text('[agents.x]\nkind = "robot"\n')
    expected = ('`agents.x.kind`: unknown agent kind "robot"; expected one of: cli, openai, '
                'scripted, native')
    with pytest.raises(coderig.InvalidInputError) as raised:
        coderig.Rig(config=path)
    assert raised.value.message == f"{path}: {expected}"
    with pytest.raises(coderig.InvalidInputError) as raised:
        coderig.Rig(agents={"x": {"kind": "robot"}})
    assert raised.value.message == expected
    assert raised.value.details == {"path": "agents.x.kind"}
    with pytest.raises(coderig.InvalidInputError) as raised:
        coderig.Rig(agents={"x": {"kind": "scripted", "script": [], "base_url": "http://h"}})
    assert "agents.x.base_url" in raised.value.message
    with pytest.raises(coderig.InvalidInputError) as raised:
        coderig.Rig(agents={"x": {"kind": "scripted", "script": [{"sing": "la"}]}})
    assert "agents.x.script[0]" in raised.value.message


def test_config_errors_of_other_kinds(tmp_path):
    with pytest.raises(coderig.IoError) as raised:
        coderig.Rig(config=tmp_path / "missing.toml")
    assert str(tmp_path / "missing.toml") in raised.value.message
    (tmp_path / "c.toml").write_text(TOML)
    with pytest.raises(coderig.InvalidInputError, match="not both"):
        coderig.Rig(config=tmp_path / "c.toml", agents=AGENTS)
    with pytest.raises(coderig.InvalidInputError) as raised:
        coderig.Rig(agents={"x": {"kind": "scripted", "script": [{"text": object()}]}})
    assert raised.value.details["path"] == "agents.x.script[0].text"
    for bad in [dict(data_dir=1), dict(db=2), dict(config=3)]:
        with pytest.raises(TypeError):
            coderig.Rig(**bad)


CTRL_C = textwrap.dedent("""
    import signal, sys, time, coderig
    # A process started with SIGINT ignored (a background job of a
    # non-interactive shell, as some CI runners start theirs) passes that on,
    # and Python then installs no KeyboardInterrupt handler: install it.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    rig = coderig.Rig(agents={"sleepy": {"kind": "scripted", "script": [{"hang": True}]}})
    turn = rig.run_turn("sleepy", None, "p")
    print("waiting", flush=True)
    try:
        turn.{call}
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    try:
        turn.wait(timeout=15)
    except coderig.AgentError as e:
        print(e.details["agent_error"], flush=True)
""")


@pytest.mark.parametrize("call", ["wait()", "events() and list(turn.events())"])
def test_ctrl_c_interrupts_a_blocking_call_and_cancels_the_turn(call, tmp_path):
    script = tmp_path / "ctrl_c.py"
    script.write_text(CTRL_C.replace("{call}", call))
    child = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "waiting\n"
        # Time for the child to enter the blocking call (generous: CI's two
        # cores are busy); the bound below only catches a child that hangs.
        time.sleep(1.0)
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=40)
    finally:
        if child.poll() is None:
            child.kill()
    assert out.split() == ["interrupted", "cancelled"]
    assert child.returncode == 0


def test_turn_and_events_are_typed_objects(rig):
    assert isinstance(rig, coderig.Rig)
    turn = rig.run_turn("alice", None, "p", system="be brief", env={"A": "1"})
    events = turn.events()
    assert isinstance(turn, coderig.Turn) and isinstance(events, coderig.TurnEvents)
    assert iter(events) is events and events.__aiter__() is events
    turn.wait()
    with pytest.raises(coderig.InvalidInputError, match="^`env.A`: invalid type: integer `1`"):
        rig.run_turn("alice", None, "p", env={"A": 1})
    assert os.environ.get("A") is None


EXIT_WHILE_RUNNING = textwrap.dedent("""
    import os, sys, time, coderig
    workdir = sys.argv[1]
    rig = coderig.Rig(agents={"hang": {
        "kind": "cli", "preset": "custom", "command": "sh",
        # Sandboxed, the sleeper runs in a PID namespace of its own: it
        # records its pid as the host sees it (the host's /proc/self/stat).
        "args": ["-c", "(read p _ < /proc/self/stat; echo $p > {workdir}/pid; exec sleep 300) & wait"],
        "format": "text", "enforces_read_only": True}})
    turn = rig.run_turn("hang", None, "p", workdir=workdir, access="edit")
    {drop}
    pid = os.path.join(workdir, "pid")
    for _ in range(500):
        if os.path.exists(pid) and open(pid).read().strip():
            break
        time.sleep(0.01)
    print("running", flush=True)
    sys.exit(3)
""")


def _gone(pid: int) -> bool:
    """Whether `pid` no longer runs (a zombie nobody reaped yet counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("drop", ["", "del turn, rig"])
def test_interpreter_exit_cancels_running_turns_and_their_processes_end(drop, tmp_path):
    # The atexit hook: cancel every running turn, wait until it ended (its
    # process group SIGTERMed, then SIGKILLed after the grace), then exit,
    # also for a turn whose Turn and Rig were dropped.
    script = tmp_path / "exit.py"
    script.write_text(EXIT_WHILE_RUNNING.replace("{drop}", drop))
    work = tmp_path / "work"
    work.mkdir()
    started = time.monotonic()
    child = subprocess.run([sys.executable, str(script), str(work)], capture_output=True,
                           text=True, timeout=30)
    assert child.stdout == "running\n", child.stderr
    assert child.returncode == 3
    assert time.monotonic() - started < 10
    pid = int((work / "pid").read_text())
    assert _gone(pid), f"the agent's child {pid} outlived the interpreter"


def _escaper(outside: Path) -> dict:
    """A custom CLI agent (plain `sh`) that writes inside its workdir and
    outside it, then prints what happened."""
    script = (f"echo in > ./inside; "
              f"if echo out > '{outside}/escaped' 2>/dev/null; then echo escaped; else echo refused; fi")
    return {"kind": "cli", "preset": "custom", "command": "sh", "args": ["-c", script],
            "format": "text", "enforces_read_only": True}


def test_sandbox_config_is_decoded_by_the_core(tmp_path):
    for good in ("enforce", "auto", "off", {"mode": "auto"}, {}, None):
        coderig.Rig(agents={}, sandbox=good)
    for bad, path in (("strict", "sandbox"), ({"mode": "never"}, "sandbox.mode"),
                      ({"network": "deny"}, "sandbox.network"), (3, "sandbox")):
        with pytest.raises(coderig.InvalidInputError) as raised:
            coderig.Rig(agents={}, sandbox=bad)
        assert raised.value.details["path"] == path, raised.value.message


def test_a_cli_turn_runs_sandboxed_and_reports_it(tmp_path):
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    rig = coderig.Rig(agents={"esc": _escaper(outside)})
    outcome = rig.run_turn("esc", None, "p", workdir=work, access="edit").wait()
    assert outcome["final_text"].strip() == "refused"
    assert (work / "inside").read_text() == "in\n"
    assert not (outside / "escaped").exists()
    report = outcome["sandbox"]
    assert report["mode"] == "enforce" and report["confined"] is True
    assert report["landlock_abi"] >= 3

    # Mode off, said explicitly: the same agent writes where it likes.
    rig = coderig.Rig(agents={"esc": _escaper(outside)}, sandbox="off")
    outcome = rig.run_turn("esc", None, "p", workdir=work, access="edit").wait()
    assert outcome["final_text"].strip() == "escaped"
    assert outcome["sandbox"]["mode"] == "off"
    assert (outside / "escaped").exists()
