#!/usr/bin/env python3
"""Quality gate on shared/editbench: generate cases for a few seeds, run the
`coderig` engine (the installed Python binding), and fail unless the issue's
targets hold: >= 99 % strictly correct on the should-apply families, 0
CORRUPT on every family, >= 99 % of adversarial cases refused with the right
kind.

    python scripts/editbench_gate.py EDITBENCH_DIR [--seeds 1,2] [--count 600]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

POSITIVE = ["exact", "indent", "trailing_ws", "unicode", "typo", "crlf", "escaped"]
ADVERSARIAL = ["dup_block", "near_miss", "multi_exact"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("editbench")
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--count", type=int, default=600)
    args = ap.parse_args()
    sys.path.insert(0, args.editbench)
    import run as editbench_run  # the scorer's own reason classifier

    tmp = tempfile.mkdtemp(prefix="editbench-")
    pos = {"n": 0, "correct": 0}
    adv = {"n": 0, "right_kind": 0}
    corrupt = {}
    for seed in [s.strip() for s in args.seeds.split(",") if s.strip()]:
        cases_path = os.path.join(tmp, "s%s.jsonl" % seed)
        details_path = os.path.join(tmp, "s%s.details.jsonl" % seed)
        subprocess.run([sys.executable, os.path.join(args.editbench, "gen.py"), "--seed", seed,
                        "--count", str(args.count), "--out", cases_path], check=True)
        subprocess.run([sys.executable, os.path.join(args.editbench, "run.py"), cases_path,
                        "--engines", "coderig", "--details", details_path], check=True)
        cases = {}
        with open(cases_path, encoding="utf-8") as fh:
            for line in fh:
                c = json.loads(line)
                cases[c["id"]] = c
        seen = 0
        with open(details_path, encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                if d["engine"] != "coderig":
                    continue
                seen += 1
                fam, outcome = d["family"], d["outcome"]
                if outcome == "CORRUPT":
                    corrupt.setdefault(fam, []).append(d["id"])
                if fam in POSITIVE:
                    pos["n"] += 1
                    pos["correct"] += outcome == "correct"
                elif fam in ADVERSARIAL:
                    adv["n"] += 1
                    want = cases[d["id"]]["expected_refusal"]
                    got = editbench_run.classify_reason(d["reason"])
                    adv["right_kind"] += outcome == "refused_ok" and got == want
        if seen == 0:
            sys.exit("editbench gate: the coderig engine ran no case (is `import coderig` available?)")
    correct = pos["correct"] / max(pos["n"], 1)
    right_kind = adv["right_kind"] / max(adv["n"], 1)
    print("editbench gate: should-apply strictly correct %.2f %% (%d/%d), adversarial refused "
          "with the right kind %.2f %% (%d/%d), CORRUPT %d"
          % (100 * correct, pos["correct"], pos["n"], 100 * right_kind, adv["right_kind"], adv["n"],
             sum(len(v) for v in corrupt.values())))
    failed = []
    if correct < 0.99:
        failed.append("strictly correct below 99 %")
    if right_kind < 0.99:
        failed.append("right-kind refusals below 99 %")
    if corrupt:
        failed.append("CORRUPT outputs: %s" % json.dumps(corrupt))
    if failed:
        sys.exit("editbench gate FAILED: " + "; ".join(failed))
    print("editbench gate: ok")


if __name__ == "__main__":
    main()
