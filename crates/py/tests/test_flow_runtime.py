"""coderig.Rig flow runs end to end on real parts: a real SQLite store in a
temporary data dir, scripted agents (no model, no network), real `sh`
commands, and Python callables (sync and async) as code steps."""

import asyncio
import json
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

AGENTS = {
    "writer": {"kind": "scripted", "script": [{"text": "no script for this model"}], "scripts": {
        "draft": [{"text": "Leases bring "}, {"text": "dead workers' tasks back."}],
    }},
}

FINAL = {"completed", "failed", "cancelled"}


@pytest.fixture
def rig(tmp_path):
    # The test's directory is the project root: commands' cwd and sandbox
    # paths lie under it (none given would be the current directory).
    return coderig.Rig(data_dir=tmp_path / "data", agents=AGENTS, project_roots=[tmp_path])


def until(read, ok, limit=60.0):
    """read() again until ok(value), for at most `limit` seconds (a bound on
    the wait, not an assertion about speed)."""
    deadline = time.monotonic() + limit
    while True:
        value = read()
        if ok(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def steps_of(view):
    return {s["id"]: s for s in view["steps"]}


# --- a flow of every kind of worker ------------------------------------------------

MIXED = {
    "name": "mixed",
    "steps": [
        {"id": "draft", "kind": "agent", "agent": "writer", "model": "draft",
         "prompt": "Explain {{ input.topic }}"},
        {"id": "count", "kind": "command", "deps": ["draft"],
         "shell": 'printf %s "$DRAFT" | wc -w', "env": {"DRAFT": "{{ results.draft }}"}},
        {"id": "shout", "kind": "code", "deps": ["draft"]},
        {"id": "judge", "kind": "code", "deps": ["count", "shout"]},
    ],
    "report": "{{ results.shout.text }} / {{ results.judge.words }} words",
}


def test_agent_command_and_code_steps_complete_with_their_outputs(rig):
    seen = {}

    def shout(ctx):
        seen["shout"] = ctx
        return {"text": ctx["results"]["draft"].upper(), "thread": threading.current_thread().name}

    async def judge(ctx):
        seen["judge"] = ctx
        await asyncio.sleep(0)
        words = int(ctx["results"]["count"].strip())
        return {"words": words, "short": words <= 20}

    run = rig.run_flow(MIXED, input={"topic": "leases"}, code={"shout": shout, "judge": judge})
    view = run.wait(timeout=120)
    assert view["status"] == "completed", view["error"]
    steps = steps_of(view)
    assert steps["draft"]["output"] == "Leases bring dead workers' tasks back."
    assert steps["count"]["output"].strip() == "6"
    assert steps["count"]["exit_code"] == 0
    assert steps["shout"]["output"]["text"] == "LEASES BRING DEAD WORKERS' TASKS BACK."
    assert steps["shout"]["output"]["thread"] != threading.main_thread().name
    assert steps["judge"]["output"] == {"words": 6, "short": True}
    assert all(s["status"] == "done" and s["attempt"] == 1 for s in view["steps"])
    assert [s["id"] for s in view["steps"]] == ["draft", "count", "shout", "judge"]
    # Each callable saw the input and its dependencies' results only.
    assert seen["shout"]["input"] == {"topic": "leases"}
    assert set(seen["shout"]["results"]) == {"draft"}
    assert set(seen["judge"]["results"]) == {"count", "shout"}
    assert seen["judge"]["steps"]["shout"]["status"] == "done"
    assert seen["judge"]["iteration"] == 0
    assert view["report"] == "LEASES BRING DEAD WORKERS' TASKS BACK. / 6 words"
    assert run.report == view["report"]
    assert run.status == "completed"
    assert run.info() == view
    assert run.steps() == view["steps"]
    assert view["input"] == {"topic": "leases"}
    assert view["name"] == "mixed"
    assert repr(run) == f'Run(id="{run.id}")'
    # The artifacts of the run.
    runs_dir = Path(rig.data_dir) / "runs" / run.id
    assert (runs_dir / "report.md").read_text() == view["report"]
    assert (runs_dir / "count" / "output.txt").read_text().strip() == "6"
    # Another handle on the same run, and the list of runs.
    assert rig.run(run.id).info() == view
    page = rig.runs()
    assert [r["id"] for r in page["runs"]] == [run.id]
    assert page["runs"][0]["status"] == "completed" and page["next_cursor"] is None
    assert [r["id"] for r in rig.runs(status="completed")["runs"]] == [run.id]
    assert rig.runs(status="running")["runs"] == []


def test_a_code_step_that_raises_twice_then_succeeds_is_retried(rig):
    calls = []

    def flaky(ctx):
        calls.append(ctx["input"]["n"])
        if len(calls) < 3:
            raise ValueError(f"not yet ({len(calls)})")
        return len(calls)

    spec = {"steps": [{"id": "flaky", "kind": "code",
                       "retry": {"max_attempts": 3, "initial": "10ms", "multiplier": 1}}]}
    view = rig.run_flow(spec, {"n": 7}, code={"flaky": flaky}).wait(timeout=60)
    assert view["status"] == "completed", view["error"]
    (step,) = view["steps"]
    assert (step["status"], step["attempt"], step["output"]) == ("done", 3, 3)
    assert calls == [7, 7, 7]
    failed = [a for a in step["attempts"] if a["outcome"] == "failed"]
    assert [a["attempt"] for a in failed] == [1, 2]
    assert [a["error"]["message"] for a in failed] == ["not yet (1)", "not yet (2)"]
    assert all(a["error"]["kind"] == "agent" for a in failed)
    assert failed[0]["error"]["exception"] == "ValueError"
    assert "raise ValueError" in failed[0]["error"]["traceback"]


def test_a_code_step_out_of_attempts_fails_the_run_with_its_exception(rig):
    class Boom(Exception):
        pass

    async def broken(ctx):
        raise Boom("the archive is unreachable")

    def not_json(ctx):
        return object()

    spec = {"steps": [{"id": "broken", "kind": "code"},
                      {"id": "odd", "kind": "code"},
                      {"id": "after", "kind": "command", "deps": ["broken"], "argv": ["true"]}]}
    view = rig.run_flow(spec, code={"broken": broken, "odd": not_json}).wait(timeout=60)
    assert view["status"] == "failed"
    steps = steps_of(view)
    assert steps["broken"]["status"] == "failed"
    error = steps["broken"]["error"]
    assert error["message"] == "the archive is unreachable"
    assert error["exception"].endswith("Boom")
    assert (steps["after"]["status"], steps["after"]["skip_reason"]) == ("skipped", "upstream_failed")
    # A value with no JSON form fails the attempt, as the bindings' other
    # arguments do.
    assert steps["odd"]["status"] == "failed"
    assert steps["odd"]["error"]["kind"] == "invalid_input"
    assert steps["odd"]["error"]["path"] == "result"
    assert set(view["error"]["failed_steps"]) >= {"odd"}


def test_a_coderig_error_raised_in_a_code_step_keeps_its_kind(rig):
    def edit(ctx):
        coderig.apply_edit("alpha\n", "beta", "gamma")

    view = rig.run_flow({"steps": [{"id": "edit", "kind": "code"}]}, code={"edit": edit}).wait(60)
    (step,) = view["steps"]
    assert step["status"] == "failed"
    assert step["error"]["kind"] == "not_found"


def test_a_switch_routes_on_a_code_steps_result(rig):
    spec = """
steps:
  - {id: grade, kind: code}
  - id: route
    kind: switch
    deps: [grade]
    cases:
      - {label: pass, condition: 'results.grade.score >= 50', steps: [celebrate]}
    default: [retake]
  - {id: celebrate, kind: command, deps: [route], shell: 'echo "passed with $SCORE"', env: {SCORE: "{{ results.grade.score }}"}}
  - {id: retake, kind: command, deps: [route], argv: [echo, retake]}
"""
    outcomes = {}
    for score in (80, 20):
        view = rig.run_flow(spec, code={"grade": lambda ctx, s=score: {"score": s}}).wait(60)
        assert view["status"] == "completed", view["error"]
        outcomes[score] = steps_of(view)
    passed, failed = outcomes[80], outcomes[20]
    assert passed["route"]["switch"] == {"chosen": "pass", "excluded": ["retake"]}
    assert passed["celebrate"]["output"] == "passed with 80\n"
    assert (passed["retake"]["status"], passed["retake"]["skip_reason"]) == ("skipped", "branch_not_taken")
    assert failed["route"]["switch"]["chosen"] is None
    assert failed["retake"]["output"] == "retake\n"
    assert failed["celebrate"]["skip_reason"] == "branch_not_taken"


# --- approvals ----------------------------------------------------------------------

APPROVAL = {
    "steps": [
        {"id": "build", "kind": "command", "argv": ["echo", "built"]},
        {"id": "ship-it", "kind": "approval", "deps": ["build"], "message": "Ship {{ input.what }}?"},
        {"id": "deploy", "kind": "command", "deps": ["ship-it"], "argv": ["echo", "deployed"]},
    ],
    "report": "{% if results['ship-it'] is defined %}by {{ results['ship-it'].by }}{% endif %}",
}


def waiting_for(run, step):
    return until(run.info, lambda v: steps_of(v)[step]["status"] == "waiting")


def test_an_approval_waits_until_approved_then_the_run_completes(rig):
    run = rig.run_flow(APPROVAL, {"what": "v2"})
    view = waiting_for(run, "ship-it")
    assert view["status"] == "waiting"
    step = steps_of(view)["ship-it"]
    assert step["message"] == "Ship v2?"
    assert steps_of(view)["deploy"]["status"] == "pending"
    with pytest.raises(TimeoutError):
        run.wait(timeout=0.2)
    with pytest.raises(coderig.ConflictError):
        run.approve("build")
    with pytest.raises(coderig.NotFoundIdError):
        run.approve("no-such-step")
    approved = run.approve("ship-it", by="ana", comment="looks good")
    assert approved["status"] == "done"
    assert approved["approval"]["approved"] is True
    assert (approved["approval"]["by"], approved["approval"]["comment"]) == ("ana", "looks good")
    view = run.wait(timeout=60)
    assert view["status"] == "completed"
    assert steps_of(view)["deploy"]["output"] == "deployed\n"
    assert view["report"] == "by ana"
    with pytest.raises(coderig.ConflictError) as raised:
        run.approve("ship-it")
    assert raised.value.details["status"] == "done"


def test_a_rejected_approval_fails_and_its_dependents_are_skipped(rig):
    run = rig.run_flow(APPROVAL, {"what": "v3"})
    waiting_for(run, "ship-it")
    rejected = run.reject("ship-it", by="bo", comment="not today")
    assert rejected["status"] == "failed"
    assert rejected["approval"]["approved"] is False
    assert "rejected by bo: not today" in rejected["error"]["message"]
    view = run.wait(timeout=60)
    assert view["status"] == "failed"
    assert steps_of(view)["deploy"]["skip_reason"] == "upstream_failed"


# --- events -------------------------------------------------------------------------

EVENTS_FLOW = {"steps": [
    {"id": "one", "kind": "command", "argv": ["echo", "1"]},
    {"id": "two", "kind": "code", "deps": ["one"]},
]}


def check_events(events, run_id):
    stored = [e for e in events if e["type"] != "agent_output"]
    assert all(e["run_id"] == run_id for e in events)
    assert (stored[0]["type"], stored[0]["status"]) == ("run_updated", "running")
    assert (stored[-1]["type"], stored[-1]["status"]) == ("run_updated", "completed")
    seqs = [e["seq"] for e in stored]
    assert seqs == sorted(set(seqs)), "stored events in seq order, each once"
    steps = [(e["step_id"], e["status"]) for e in stored if e["type"] == "step_updated"]
    assert steps.index(("one", "running")) < steps.index(("one", "done"))
    assert steps.index(("one", "done")) < steps.index(("two", "running"))
    assert steps.index(("two", "running")) < steps.index(("two", "done"))
    assert steps[-1] == ("two", "done")


def test_events_iterate_a_run_from_its_start_to_its_end(rig):
    run = rig.run_flow(EVENTS_FLOW, code={"two": lambda ctx: "ok"})
    events = list(run.events())
    check_events(events, run.id)
    assert run.info()["status"] == "completed"
    # A new stream of an ended run replays the same stored events.
    assert list(run.events()) == [e for e in events if e["type"] != "agent_output"]


def test_async_events_and_wait_async_follow_a_run(rig):
    async def two(ctx):
        await asyncio.sleep(0.01)
        return {"from": "async"}

    async def main():
        run = rig.run_flow(EVENTS_FLOW, code={"two": two})
        events = [e async for e in run.events()]
        return run, events, await run.wait_async(timeout=60)

    run, events, view = asyncio.run(main())
    assert view["status"] == "completed"
    assert steps_of(view)["two"]["output"] == {"from": "async"}
    check_events(events, run.id)


def test_agent_output_of_agent_steps_streams_live(rig):
    run = rig.run_flow({"steps": [{"id": "draft", "kind": "agent", "agent": "writer",
                                   "model": "draft", "prompt": "go"}]})
    events = list(run.events())
    assert events[-1]["type"] == "run_updated" and events[-1]["status"] == "completed"
    # Live output is never replayed: a stream started after the step may
    # have none, a stream started before it may; whatever came is the
    # step's text.
    text = "".join(e["text"] for e in events if e["type"] == "agent_output")
    assert text in ("", "Leases bring dead workers' tasks back.")


# --- cancel and timeouts ------------------------------------------------------------

def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_cancel_stops_a_hung_command_and_marks_the_rest_cancelled(rig, tmp_path):
    pid_file = tmp_path / "pid"
    # Sandbox off: the test reads the command's host pid, written outside its
    # cwd (a sandboxed command's pid is its PID namespace's).
    spec = {"steps": [
        {"id": "hang", "kind": "command", "sandbox": {"mode": "off"},
         "shell": f"echo $$ > {pid_file}; exec sleep 600"},
        {"id": "later", "kind": "code", "deps": ["hang"]},
    ]}
    run = rig.run_flow(spec, code={"later": lambda ctx: None})
    until(lambda: pid_file.exists() and pid_file.read_text().strip(), bool)
    pid = int(pid_file.read_text())
    assert alive(pid)
    assert run.status == "running"
    cancelled = run.cancel()
    assert cancelled["status"] == "cancelled"
    view = run.wait(timeout=60)
    assert view["status"] == "cancelled"
    steps = steps_of(view)
    assert steps["hang"]["status"] == "cancelled"
    assert steps["later"]["status"] == "cancelled"
    # The cancel is final in the store at once; the run's driver stops the
    # command's process group right after.
    assert not until(lambda: alive(pid), lambda up: not up, limit=30)
    events = list(run.events())
    # The one end rule: the steps' cancelled updates, then the run's, and
    # the stream ends there.
    assert (events[-1]["type"], events[-1]["status"]) == ("run_updated", "cancelled")
    assert sorted((e["step_id"], e["status"]) for e in events[-3:-1]) == [
        ("hang", "cancelled"), ("later", "cancelled")]
    with pytest.raises(coderig.ConflictError):
        run.cancel()


def test_an_async_code_step_past_its_timeout_is_cancelled(rig):
    state = {"started": threading.Event(), "cancelled": threading.Event()}

    async def forever(ctx):
        state["started"].set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            state["cancelled"].set()
            raise

    spec = {"steps": [{"id": "forever", "kind": "code", "timeout": "300ms"}]}
    view = rig.run_flow(spec, code={"forever": forever}).wait(timeout=60)
    assert view["status"] == "failed"
    (step,) = view["steps"]
    assert step["status"] == "timed_out"
    assert state["started"].is_set()
    assert state["cancelled"].wait(timeout=30), "the coroutine was cancelled"


def test_wait_with_a_timeout_raises_timeout_error_and_the_run_goes_on(rig, tmp_path):
    gate = threading.Event()

    def blocked(ctx):
        gate.wait(60)
        return "released"

    run = rig.run_flow({"steps": [{"id": "blocked", "kind": "code"}]}, code={"blocked": blocked})
    with pytest.raises(TimeoutError) as raised:
        run.wait(timeout=0.2)
    assert run.id in str(raised.value)

    async def wait_async():
        await run.wait_async(timeout="100ms")

    with pytest.raises(TimeoutError):
        asyncio.run(wait_async())
    assert run.status == "running"
    gate.set()
    view = run.wait(timeout=60)
    assert view["status"] == "completed"
    assert view["steps"][0]["output"] == "released"
    with pytest.raises(coderig.InvalidInputError):
        run.wait(timeout="soon")


# --- specs and bad input ------------------------------------------------------------

def test_the_spec_may_be_yaml_json_a_path_or_a_file_name(rig, tmp_path, monkeypatch):
    yaml_text = "name: hello\nsteps:\n  - {id: hi, kind: command, argv: [echo, '{{ input.who }}']}\n"
    json_text = json.dumps({"name": "hello", "steps": [
        {"id": "hi", "kind": "command", "argv": ["echo", "{{ input.who }}"]}]})
    (tmp_path / "hello.yaml").write_text(yaml_text)
    (tmp_path / "hello.json").write_text(json_text)
    monkeypatch.chdir(tmp_path)
    for spec in (yaml_text, json_text, tmp_path / "hello.yaml", str(tmp_path / "hello.json"),
                 "hello.yaml", json.loads(json_text)):
        view = rig.run_flow(spec, {"who": "ana"}).wait(timeout=60)
        assert (view["status"], view["name"], view["steps"][0]["output"]) == (
            "completed", "hello", "ana\n"), spec
    with pytest.raises(coderig.IoError):
        rig.run_flow("missing.yaml")
    with pytest.raises(coderig.IoError):
        rig.run_flow(tmp_path / "missing.yml")
    with pytest.raises(TypeError):
        rig.run_flow(42)


def problems_of(raised):
    return {p["path"]: p["message"] for p in raised.value.details["problems"]}


def test_bad_specs_raise_invalid_input_with_every_problem_and_create_nothing(rig):
    cases = [
        ({"steps": [{"id": "a", "kind": "command", "argv": ["true"], "colour": "red"}]},
         "steps[0].colour"),
        ({"steps": [{"id": "a", "kind": "command", "argv": ["true"], "deps": ["b"]},
                    {"id": "b", "kind": "command", "argv": ["true"], "deps": ["a"]}]}, None),
        ({"steps": [{"id": "a", "kind": "command", "argv": ["true"], "deps": ["nope"]}]}, None),
        ({"steps": [{"id": "a", "kind": "command", "argv": ["true"], "when": "input.x >"}]},
         "steps[0].when"),
        ({"steps": [{"id": "a", "kind": "command", "argv": ["true"]},
                    {"id": "a", "kind": "command", "argv": ["true"]}]}, None),
        ({"steps": [{"id": "a", "kind": "agent", "agent": "writer", "prompt": "{{ input.x "}]},
         "steps[0].prompt"),
        ({"steps": [{"id": "a", "kind": "agent", "agent": "nobody", "prompt": "hi"}]},
         "steps[0].agent"),
        ({"steps": [{"id": "a", "kind": "code"}]}, "steps[0]"),
        ("steps: [", None),
        ("{\"steps\": ", None),
    ]
    for spec, path in cases:
        with pytest.raises(coderig.InvalidInputError) as raised:
            rig.run_flow(spec)
        if path is not None:
            assert path in problems_of(raised), (spec, raised.value.details)
        elif isinstance(spec, dict):
            assert raised.value.details["problems"], (spec, raised.value.details)
    # Every problem of one spec at once.
    with pytest.raises(coderig.InvalidInputError) as raised:
        rig.run_flow({"steps": [{"id": "a", "kind": "command", "argv": ["true"], "colour": 1},
                                {"id": "b", "kind": "code", "timeout": "soon"}]})
    assert {"steps[0].colour", "steps[1].timeout"} <= set(problems_of(raised))
    # Code for a step that is none, and an input that is not a dict.
    spec = {"steps": [{"id": "a", "kind": "command", "argv": ["true"]}]}
    with pytest.raises(coderig.InvalidInputError) as raised:
        rig.run_flow(spec, code={"ghost": lambda ctx: 1})
    assert "code.ghost" in problems_of(raised)
    with pytest.raises(coderig.InvalidInputError) as raised:
        rig.run_flow(spec, input=[1, 2])
    assert raised.value.details["path"] == "input"
    with pytest.raises(TypeError):
        rig.run_flow({"steps": [{"id": "a", "kind": "code"}]}, code={"a": "not callable"})
    with pytest.raises(TypeError):
        rig.run_flow(spec, code=["a"])
    assert rig.runs() == {"runs": [], "next_cursor": None}
    with pytest.raises(coderig.NotFoundIdError):
        rig.run("no-such-run")
    with pytest.raises(coderig.InvalidInputError):
        rig.runs(status="sleeping")


def test_a_command_steps_sandbox_is_read_by_the_core_decoder(rig, tmp_path):
    # Accepted: the step writes only its cwd (here tmp_path/work, granted as
    # its cwd) and an extra writable path; the attempt records the sandbox.
    work, extra = tmp_path / "work", tmp_path / "extra"
    work.mkdir()
    extra.mkdir()
    spec = {"steps": [{"id": "w", "kind": "command", "cwd": str(work),
                       "shell": f"echo in > in.txt && echo out > {extra}/out.txt",
                       "sandbox": {"network": "deny", "writable": [str(extra)],
                                   "limits": {"open_files": 64}}}]}
    view = rig.run_flow(spec).wait(timeout=60)
    assert view["status"] == "completed", view
    (attempt,) = view["steps"][0]["attempts"]
    report = attempt["sandbox"]
    assert (report["mode"], report["network"], report["limits"]) == ("enforce", "deny", {"open_files": 64})
    assert str(extra) in report["writable"]
    assert (extra / "out.txt").read_text() == "out\n"
    assert view["spec"]["steps"][0]["sandbox"]["writable"] == [str(extra)]
    # Refused with their paths: an unknown network mode, a relative path, an
    # unknown key; nothing created.
    before = rig.runs()["runs"]
    with pytest.raises(coderig.InvalidInputError) as raised:
        rig.run_flow({"steps": [{"id": "a", "kind": "command", "argv": ["true"],
                                 "sandbox": {"network": "sometimes", "writable": ["rel/dir"],
                                             "colour": "red"}}]})
    problems = problems_of(raised)
    assert raised.value.details["path"] == "steps[0].sandbox.colour"
    assert "unknown network policy `sometimes`" in problems["steps[0].sandbox.network"]
    assert "relative path" in problems["steps[0].sandbox.writable[0]"]
    # A writable path that does not exist: refused when the run starts.
    with pytest.raises(coderig.InvalidInputError) as raised:
        rig.run_flow({"steps": [{"id": "a", "kind": "command", "argv": ["true"],
                                 "sandbox": {"writable": [str(tmp_path / "missing")]}}]})
    assert raised.value.details["path"] == "steps[0].sandbox.writable[0]"
    assert rig.runs()["runs"] == before


def test_runs_pages_newest_first(rig):
    spec = {"steps": [{"id": "a", "kind": "command", "argv": ["true"]}]}
    ids = [rig.run_flow(spec).id for _ in range(3)]
    for run_id in ids:
        rig.run(run_id).wait(timeout=60)
    first = rig.runs(limit=2)
    assert len(first["runs"]) == 2 and first["next_cursor"]
    rest = rig.runs(limit=2, cursor=first["next_cursor"])
    listed = [r["id"] for r in first["runs"] + rest["runs"]]
    assert sorted(listed) == sorted(ids) and len(set(listed)) == 3
    assert rest["next_cursor"] is None


# --- Ctrl-C and interpreter exit (child interpreters) -------------------------------

CTRL_C = textwrap.dedent("""
    import signal, sys, coderig
    # A child started with SIGINT ignored passes that on: install the handler.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    rig = coderig.Rig(data_dir=sys.argv[1])
    run = rig.run_flow({"steps": [{"id": "ok", "kind": "approval", "message": "go?"}]})
    print("waiting", flush=True)
    try:
        run.{call}
    except KeyboardInterrupt:
        print("interrupted", run.status, flush=True)
    run.approve("ok", by="ci")
    print(run.wait(timeout=30)["status"], flush=True)
""")


@pytest.mark.parametrize("call", ["wait()", "events() and list(run.events())"])
def test_ctrl_c_interrupts_a_blocking_call_and_the_run_goes_on(call, tmp_path):
    script = tmp_path / "ctrl_c.py"
    script.write_text(CTRL_C.replace("{call}", call))
    child = subprocess.Popen([sys.executable, str(script), str(tmp_path / "data")],
                             stdout=subprocess.PIPE, text=True)
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
    assert out.split() == ["interrupted", "waiting", "completed"]
    assert child.returncode == 0


EXIT_WHILE_RUNNING = textwrap.dedent("""
    import os, sys, threading, time, coderig
    work = sys.argv[1]
    rig = coderig.Rig(data_dir=os.path.join(work, "data"))
    pid = os.path.join(work, "pid")
    stuck = threading.Event()
    run = rig.run_flow({"steps": [
        {"id": "hang", "kind": "command", "sandbox": {"mode": "off"},
         "shell": "echo $$ > " + pid + "; exec sleep 300"},
        {"id": "block", "kind": "code"},
    ]}, code={"block": lambda ctx: stuck.set() or threading.Event().wait()})
    for _ in range(1000):
        if stuck.is_set() and os.path.exists(pid) and open(pid).read().strip():
            break
        time.sleep(0.01)
    print("running", run.id, flush=True)
    sys.exit(3)
""")


def test_interpreter_exit_stops_a_running_flow_and_leaves_it_in_the_store(tmp_path):
    # The atexit hook stops the engine: the command's process group is
    # killed and the run is left in the store (running, for the next
    # process on the store to rescue by lease). A sync code step blocked
    # forever does not hold the interpreter up.
    script = tmp_path / "exit.py"
    script.write_text(EXIT_WHILE_RUNNING)
    started = time.monotonic()
    child = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True,
                           text=True, timeout=60)
    assert child.stdout.startswith("running "), child.stderr
    assert child.returncode == 3
    assert time.monotonic() - started < 30
    pid = int((tmp_path / "pid").read_text())
    assert not alive(pid), f"the command {pid} outlived the interpreter"
    run_id = child.stdout.split()[1]
    view = coderig.Rig(data_dir=tmp_path / "data").run(run_id).info()
    assert view["status"] == "running"


def test_close_stops_the_rigs_work_and_a_closed_rig_refuses_more(tmp_path):
    # `with` closes the rig: the hung command's process group is killed and
    # the run is left in the store for the next rig, which resumes it.
    pid_file = tmp_path / "pid"
    spec = {"steps": [{"id": "hang", "kind": "command", "sandbox": {"mode": "off"},
                       "shell": f"echo $$ > {pid_file}; exec sleep 600"}]}
    with coderig.Rig(data_dir=tmp_path / "data", project_roots=[tmp_path]) as rig:
        run = rig.run_flow(spec)
        until(lambda: pid_file.exists() and pid_file.read_text().strip(), bool)
        pid = int(pid_file.read_text())
    assert not until(lambda: alive(pid), lambda up: not up, limit=30)
    with pytest.raises(coderig.UnavailableError, match="closed"):
        rig.run_flow(spec)
    # Following the run on the closed rig: its history, then the core's
    # refusal (as Node's iterator rejects with it).
    seen = []
    with pytest.raises(coderig.UnavailableError, match="shut down"):
        for event in run.events():
            seen.append(event["type"])
    assert seen[0] == "run_updated"
    rig.close()  # twice: nothing happens
    again = coderig.Rig(data_dir=tmp_path / "data", project_roots=[tmp_path])
    try:
        assert again.run(run.id).info()["status"] == "running"
    finally:
        again.close(grace="1s")
    with pytest.raises(coderig.InvalidInputError):
        again.close(grace="soon")
