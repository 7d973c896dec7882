"""A coding battle through coderig.Rig: two scripted contestants (no model,
no network) try to fix a failing test in a freshly generated git
repository; the oracle applies each patch to a fresh checkout and runs the
repro and the suite, and the one whose patch passes both wins. Every event
is printed as it streams, then the winner, its diff and the leaderboard.

The same code runs real agents of a coderig.toml (Rig(config="coderig.toml")
with contestants such as {"identity": "claude", "model": "sonnet"}).

Run (with the module installed): python examples/battle.py
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import coderig

FIXED = "def add(a, b):\n    return a + b\n"

with tempfile.TemporaryDirectory() as tmp:
    root = Path(tmp).resolve()
    project = root / "calc"
    (project / "tests").mkdir(parents=True)
    (project / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (project / "tests" / "test_calc.py").write_text(
        "import sys\nsys.path.insert(0, '.')\nfrom calc import add\n"
        "assert add(2, 3) == 5, 'add(2, 3) = %r' % add(2, 3)\nprint('ok')\n")
    env = {"GIT_AUTHOR_NAME": "example", "GIT_AUTHOR_EMAIL": "example@example.com",
           "GIT_COMMITTER_NAME": "example", "GIT_COMMITTER_EMAIL": "example@example.com",
           "PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": tmp}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "buggy add"]):
        subprocess.run(["git", *args], cwd=project, env=env, check=True)

    rig = coderig.Rig(data_dir=root / "data", project_roots=[root], agents={
        "fixer": {"kind": "scripted", "scripts": {
            "careful": [{"reasoning": "the test expects 5"},
                        {"write": {"path": "calc.py", "content": FIXED}},
                        {"text": "add() adds now."}],
            "hasty": [{"write": {"path": "calc.py", "content": "def add(a, b):\n    return 5\n"}},
                      {"text": "Made the test pass."}],
        }},
        "judge": {"kind": "scripted", "script": [{"text": "WINNER: fixer/careful"}]},
    })
    battle = rig.start_battle(
        battle_type="coding",
        prompt="Fix add() in calc.py so that tests/test_calc.py passes",
        project=project,
        contestants=[{"identity": "fixer", "model": "careful"},
                     {"identity": "fixer", "model": "hasty"}],
        judge={"identity": "judge", "model": "any"},
        oracle={"repro": f"{sys.executable} tests/test_calc.py",
                "suite": f"{sys.executable} -c 'from calc import add; assert add(-1, 1) == 0'",
                "timeout": "60s"},
        contestant_timeout="2m",
    )
    print("battle", battle.id)
    for event in battle.events():
        print("event:", json.dumps(event, sort_keys=True))

    view = battle.wait(timeout="5m")
    winner = next(c for c in view["contestants"] if c["id"] == view["winner_contestant_id"])
    for c in view["contestants"]:
        print("%-14s %-5s tier=%-7s repro exit=%s" % (
            c["identity"] + "/" + c["model"], c["status"], c["tier"],
            (c["evidence"] or {}).get("repro", {}).get("exit_code")))
    print("winner: %s/%s (by %s)" % (winner["identity"], winner["model"], view["winner_source"]))
    assert (winner["model"], view["winner_source"]) == ("careful", "oracle")
    print(battle.diff(winner["id"]))
    print(battle.analysis())
    print("leaderboard:", json.dumps(rig.leaderboard(), indent=1))
