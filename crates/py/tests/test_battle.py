"""coderig.Rig battles end to end on real parts: a generated git repository
with a failing test, scripted contestants and judges (they write files in
their own worktrees), the oracle's real runs of the repro and the suite, a
real SQLite store in a temporary data dir."""

import asyncio
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import coderig

CALC_BUGGY = "def add(a, b):\n    return a - b\n"
CALC_FIXED = "def add(a, b):\n    return a + b\n"
CALC_WRONG = "def add(a, b):\n    return 0\n"
TEST_ADD = textwrap.dedent("""\
    import sys
    sys.path.insert(0, ".")
    from calc import add
    assert add(2, 3) == 5, "add(2, 3) = %r" % add(2, 3)
    print("test_add ok")
""")
TEST_ZERO = textwrap.dedent("""\
    import sys
    sys.path.insert(0, ".")
    from calc import add
    assert add(0, 0) == 0
    print("test_zero ok")
""")

AGENTS = {
    "fixer": {"kind": "scripted", "script": [{"text": "no script for this model"}], "scripts": {
        "good": [{"text": "fixing add"}, {"write": {"path": "calc.py", "content": CALC_FIXED}},
                 {"text": " - done"}],
        "wrong": [{"write": {"path": "calc.py", "content": CALC_WRONG}}, {"text": "changed it"}],
        "hang": [{"text": "thinking"}, {"hang": True}],
    }},
    "judge": {"kind": "scripted", "scripts": {
        "j": [{"text": "The first is cleaner.\nWINNER: fixer/good"}],
        "examiner": [{"text": "I checked the evidence.\nVERDICT: fixer/good"}],
    }},
}

FINAL = {"completed", "failed", "cancelled"}


def git(cwd, *args):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={
        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
        "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(cwd)})


def make_project(root: Path) -> Path:
    project = root / "projects" / "calc"
    (project / "tests").mkdir(parents=True)
    (project / "calc.py").write_text(CALC_BUGGY)
    (project / "tests" / "test_add.py").write_text(TEST_ADD)
    (project / "tests" / "test_zero.py").write_text(TEST_ZERO)
    git(project, "init", "-q", "-b", "main")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "buggy add")
    return project


def spec(project, *contestants, judge="judge/j", oracle=True, **extra):
    out = {
        "battle_type": "coding",
        "prompt": "Fix add in calc.py so that tests/test_add.py passes",
        "project": project,
        "contestants": [dict(zip(("identity", "model"), c.split("/"))) for c in contestants],
        "judge": dict(zip(("identity", "model"), judge.split("/"))),
        "contestant_timeout": "60s",
    }
    if oracle:
        py = sys.executable
        out["oracle"] = {"repro": f"{py} tests/test_add.py",
                         "suite": f"{py} tests/test_add.py && {py} tests/test_zero.py",
                         "timeout": "60s"}
    out.update(extra)
    return out


@pytest.fixture
def world(tmp_path):
    root = tmp_path.resolve()
    project = make_project(root)
    rig = coderig.Rig(data_dir=root / "data", agents=AGENTS, project_roots=[root / "projects"])
    return rig, project


def until(read, ok, limit=60.0):
    """read() again until ok(value), for at most `limit` seconds (a bound on
    the wait, not an assertion about speed)."""
    deadline = time.monotonic() + limit
    while True:
        value = read()
        if ok(value) or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


def by_model(view, model):
    (found,) = [c for c in view["contestants"] if c["model"] == model]
    return found


@pytest.fixture(scope="module")
def won(tmp_path_factory):
    """One finished battle (good vs wrong, with an oracle), its events read
    live while it ran, shared by the read-only tests."""
    root = tmp_path_factory.mktemp("won").resolve()
    project = make_project(root)
    rig = coderig.Rig(data_dir=root / "data", agents=AGENTS, project_roots=[root / "projects"])
    battle_spec = spec(project, "fixer/good", "fixer/wrong")
    battle_spec["contestants"][0]["instruction"] = "Keep the diff to one line."
    battle = rig.start_battle(**battle_spec)
    events = list(battle.events())
    view = battle.wait(timeout=120)
    return rig, project, battle, view, events


def test_the_oracle_names_the_contestant_whose_patch_passes(won):
    rig, project, battle, view, _ = won
    assert view["status"] == "completed"
    good, wrong = by_model(view, "good"), by_model(view, "wrong")
    assert view["winner_contestant_id"] == good["id"]
    assert view["winner_source"] == "oracle"
    assert view["analysis_ready"] is True
    assert [c["model"] for c in view["contestants"]] == ["good", "wrong"]
    assert good["status"] == wrong["status"] == "done"
    assert (good["tier"], wrong["tier"]) == ("full", "none")
    # A contestant's own instruction, kept with it (and in manifest.json).
    assert good["instruction"] == "Keep the diff to one line."
    assert wrong["instruction"] is None
    assert view["spec"]["contestants"][0]["instruction"] == "Keep the diff to one line."
    manifest = json.loads(Path(view["results_dir"], "manifest.json").read_text())
    assert [c["instruction"] for c in manifest["contestants"]] == ["Keep the diff to one line.", None]
    assert good["evidence"]["patch_applied"] is True
    assert good["evidence"]["repro"]["exit_code"] == 0
    assert wrong["evidence"]["repro"]["exit_code"] != 0
    assert view["base_run"]["repro"]["exit_code"] != 0
    assert view["project"] == str(project)
    assert view["id"] == battle.id
    assert battle.info() == view
    assert rig.battle(battle.id).info() == view
    assert Path(view["results_dir"], "analysis.md").is_file()
    # The contestants worked in their worktrees: the project is untouched.
    assert (project / "calc.py").read_text() == CALC_BUGGY
    assert repr(battle) == f'Battle(id="{battle.id}")'


def test_events_run_from_battle_started_to_the_final_battle_updated(won):
    _, _, battle, view, events = won
    assert events[0]["type"] == "battle_started"
    assert events[0]["battle_id"] == battle.id
    assert [c["model"] for c in events[0]["contestants"]] == ["good", "wrong"]
    assert events[-1]["type"] == "battle_updated"
    assert events[-1]["status"] == "completed"
    assert events[-1]["winner_contestant_id"] == view["winner_contestant_id"]
    assert all(e.get("battle_id") == battle.id for e in events)
    stored = [e for e in events if e["type"] != "agent_output"]
    seqs = [e["seq"] for e in stored]
    assert seqs == sorted(set(seqs)), "stored events in seq order, each once"
    assert all("seq" not in e for e in events if e["type"] == "agent_output")
    settled = {(e["contestant_id"], e["status"]) for e in stored if e["type"] == "contestant_updated"}
    assert {(c["id"], "done") for c in view["contestants"]} <= settled
    assert any(e["type"] == "battle_updated" and e["status"] == "judging" for e in stored)
    # A new stream of a finished battle replays the same stored events.
    again = list(battle.events())
    assert [e for e in again if e["type"] != "agent_output"] == stored


def test_the_async_iterator_and_wait_async_follow_a_battle(world):
    rig, project = world

    async def main():
        battle = rig.start_battle(spec(project, "fixer/good", "fixer/wrong"))
        events = [e async for e in battle.events()]
        return battle, events, await battle.wait_async(timeout=120)

    battle, events, view = asyncio.run(main())
    assert view["status"] == "completed"
    assert view["winner_contestant_id"] == by_model(view, "good")["id"]
    assert events[0]["type"] == "battle_started"
    assert (events[-1]["type"], events[-1]["status"]) == ("battle_updated", "completed")
    assert all(e["battle_id"] == battle.id for e in events)


def test_diff_and_analysis_show_what_the_contestants_did(won):
    _, _, battle, view, _ = won
    good = by_model(view, "good")
    diff = battle.diff(good["id"])
    assert "-    return a - b" in diff and "+    return a + b" in diff
    assert good["patch_bytes"] == len(diff.encode())
    assert "return 0" in battle.diff(by_model(view, "wrong")["id"])
    text = battle.analysis()
    assert "fixer/good" in text and "fixer/wrong" in text
    with pytest.raises(coderig.NotFoundIdError):
        battle.diff("no-such-contestant")
    result = battle.result(good["id"])
    assert result.startswith("# fixer/good") and "Status: done" in result
    with pytest.raises(coderig.NotFoundIdError):
        battle.result("no-such-contestant")


def test_apply_puts_the_winners_patch_into_the_project(world):
    rig, project = world
    battle = rig.start_battle(**spec(project, "fixer/good", "fixer/wrong"))
    view = battle.wait(timeout=120)
    applied = battle.apply()
    assert applied["contestant_id"] == view["winner_contestant_id"]
    assert applied["project"] == str(project)
    assert applied["patch_bytes"] > 0
    assert (project / "calc.py").read_text() == CALC_FIXED


def test_a_human_winner_survives_a_reanalysis_unless_forced(world):
    rig, project = world
    battle = rig.start_battle(**spec(project, "fixer/good", "fixer/wrong"))
    view = battle.wait(timeout=120)
    wrong = by_model(view, "wrong")["id"]
    named = battle.set_winner(wrong)
    assert (named["winner_contestant_id"], named["winner_source"]) == (wrong, "human")
    assert battle.analyze()["status"] == "judging"
    kept = battle.wait(timeout=120)
    assert (kept["status"], kept["winner_contestant_id"], kept["winner_source"]) == (
        "completed", wrong, "human")
    battle.analyze(force=True)
    redone = battle.wait(timeout=120)
    assert (redone["winner_contestant_id"], redone["winner_source"]) == (
        by_model(view, "good")["id"], "oracle")
    cleared = battle.set_winner(None)
    assert cleared["winner_contestant_id"] is None
    with pytest.raises(coderig.NotFoundIdError):
        battle.set_winner("no-such-contestant")


def test_without_an_oracle_the_judge_decides_and_a_cross_examination_runs(world):
    rig, project = world
    battle = rig.start_battle(**spec(project, "fixer/good", "fixer/wrong", oracle=False))
    view = battle.wait(timeout=120)
    assert (view["winner_contestant_id"], view["winner_source"]) == (
        by_model(view, "good")["id"], "judge")
    exam = battle.cross_examine("judge", "examiner")
    assert isinstance(exam, str) and exam
    (pending,) = battle.info()["cross_exams"]
    assert (pending["id"], pending["identity"], pending["model"]) == (exam, "judge", "examiner")
    done = until(lambda: battle.info()["cross_exams"][0],
                 lambda x: x["status"] in ("done", "error"))
    assert (done["id"], done["status"], done["verdict"]) == (exam, "done", "fixer/good")
    with pytest.raises(coderig.InvalidInputError):
        battle.cross_examine("nobody", "m")


def test_stop_cancels_a_running_battle_and_a_finished_one_is_a_conflict(tmp_path):
    root = tmp_path.resolve()
    project = make_project(root)
    # The agents from a coderig.toml this time.
    config = root / "coderig.toml"
    config.write_text(textwrap.dedent(f"""\
        [agents.fixer]
        kind = "scripted"
        scripts.hang = [ {{ text = "thinking" }}, {{ hang = true }} ]
        scripts.good = [ {{ write = {{ path = "calc.py", content = {CALC_FIXED!r} }} }}, {{ text = "ok" }} ]
        [agents.judge]
        kind = "scripted"
        scripts.j = [ {{ text = "WINNER: fixer/good" }} ]
    """).replace("'", '"'))
    rig = coderig.Rig(data_dir=root / "data", config=config, project_roots=[root])
    battle = rig.start_battle(**spec(project, "fixer/hang", "fixer/good"))
    with pytest.raises(TimeoutError):
        battle.wait(timeout=0.5)
    assert battle.info()["status"] in ("running", "judging")
    stopped = battle.stop()
    assert stopped["status"] == "cancelled"
    view = battle.wait(timeout=60)
    assert view["status"] == "cancelled"
    assert by_model(view, "hang")["status"] == "cancelled"
    events = list(battle.events())
    # The one end rule: the stream ends right after the battle's final
    # update, every contestant's final update before it.
    assert (events[-1]["type"], events[-1]["status"]) == ("battle_updated", "cancelled")
    assert ("contestant_updated", by_model(view, "hang")["id"], "cancelled") in [
        (e["type"], e.get("contestant_id"), e.get("status")) for e in events[:-1]]
    with pytest.raises(coderig.ConflictError) as raised:
        battle.stop()
    assert raised.value.details["status"] == "cancelled"
    with pytest.raises(coderig.ConflictError):
        battle.analyze()


def test_bad_specs_raise_invalid_input_with_a_path_and_create_nothing(world, tmp_path):
    rig, project = world
    not_git = tmp_path / "projects" / "plain"
    not_git.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    good = spec(project, "fixer/good", "fixer/wrong")
    cases = [
        ({**good, "prompt": None}, "prompt"),
        ({**good, "contestants": good["contestants"][:1]}, "contestants"),
        ({**good, "contestants": [good["contestants"][0]] * 2}, "contestants[1]"),
        ({**good, "battle_type": "chess"}, "battle_type"),
        ({**good, "contestant_timeout": "soon"}, "contestant_timeout"),
        ({**good, "colour": "red"}, "colour"),
        ({**good, "contestants": [{**good["contestants"][0], "instruction": 7}, good["contestants"][1]]},
         "contestants[0].instruction"),
        ({**good, "contestants": [good["contestants"][0],
                                  {**good["contestants"][1], "instruction": "x" * 16385}]},
         "contestants[1].instruction"),
        ({**good, "contestants": [{"identity": "fixer"}, {"identity": "fixer", "model": "x"}]},
         "contestants[0].model"),
        ({**good, "project": not_git}, "project"),
        ({**good, "project": outside}, "project"),
        ({**good, "judge": {"identity": "nobody", "model": "m"}}, None),
    ]
    for bad, path in cases:
        with pytest.raises(coderig.InvalidInputError) as raised:
            rig.start_battle(bad)
        if path is not None:
            assert raised.value.details.get("path") == path, (bad, raised.value.details)
    with pytest.raises(coderig.InvalidInputError):
        rig.start_battle(**{k: v for k, v in good.items() if k != "project"})
    with pytest.raises(TypeError):
        rig.start_battle(good, prompt="twice")
    with pytest.raises(TypeError):
        rig.start_battle(["not", "a", "dict"])
    assert rig.battles() == {"battles": [], "next_cursor": None}
    with pytest.raises(coderig.NotFoundIdError):
        rig.battle("no-such-battle")


def test_project_roots_must_exist(tmp_path):
    with pytest.raises(coderig.InvalidInputError) as raised:
        coderig.Rig(agents=AGENTS, project_roots=[tmp_path, tmp_path / "missing"])
    assert raised.value.details["path"] == "project_roots[1]"
    with pytest.raises(TypeError):
        coderig.Rig(agents=AGENTS, project_roots=str(tmp_path))
    assert coderig.Rig(project_roots=[tmp_path]).project_roots == [tmp_path.resolve()]
    # None given: the current directory (the core's policy, as in every
    # face), never "any path".
    assert coderig.Rig().project_roots == [Path.cwd().resolve()]
    assert coderig.Rig(project_roots=[]).project_roots == [Path.cwd().resolve()]
    # A root must be a directory.
    (tmp_path / "file").write_text("")
    with pytest.raises(coderig.InvalidInputError) as raised:
        coderig.Rig(project_roots=[tmp_path / "file"])
    assert raised.value.details["path"] == "project_roots[0]"


def test_battles_lists_and_filters(won):
    rig, project, battle, _, _ = won
    page = rig.battles()
    assert [b["id"] for b in page["battles"]] == [battle.id]
    assert page["next_cursor"] is None
    assert [b["id"] for b in rig.battles(project=project, status="completed")["battles"]] == [battle.id]
    assert rig.battles(status="running")["battles"] == []
    with pytest.raises(coderig.InvalidInputError):
        rig.battles(status="sleeping")


def test_the_leaderboard_rates_the_winner_first(won):
    rig, project, _, _, _ = won
    boards = {b["battle_type"]: b for b in rig.leaderboard()}
    board = boards["coding"]
    assert board["n_battles"] == 1
    assert all(not b["entries"] for t, b in boards.items() if t != "coding")
    names = [e["name"] for e in board["entries"]]
    assert names == ["fixer/good", "fixer/wrong"]
    assert board["entries"][0]["score"] > board["entries"][1]["score"]
    assert all(e["n_battles"] == 1 for e in board["entries"])
    assert rig.leaderboard(battle_type="coding", project=project) == [board]
    assert all(not b["entries"] for b in rig.leaderboard(battle_type="qa"))
    with pytest.raises(coderig.InvalidInputError):
        rig.leaderboard(battle_type="chess")
