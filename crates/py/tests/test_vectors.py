"""Every shared vector of tests/vectors/, through the Python binding.

hashline.json keeps its own layout (the first tests below). Every other file
is {"description", "cases": [{"name", "op", "input", "expect" | "error"}]}
as tests/vectors/README.md defines: each case calls the binding with the
input's fields as keyword arguments and compares the answer (only the
fields `expect` lists; numbers to 1e-9) or the raised coderig.Error (`kind`
and `code` always, `message` exactly when given, `details` key by key).
A case this runner cannot read (unknown op, unknown field) fails.
"""

import json
import math
import re
from pathlib import Path

import pytest

import coderig
from coderig import arena, flow, hashline, model

ROOT = next(p for p in Path(__file__).resolve().parents if (p / "tests" / "vectors").is_dir())
VECTORS = ROOT / "tests" / "vectors"
TOLERANCE = 1e-9

# --- hashline.json (its own layout) -----------------------------------------


def test_xxhash32_vectors(vectors):
    cases = vectors["xxhash32"]
    assert cases
    failures = [
        case
        for case in cases
        if coderig.xxhash32(case["input"], case["seed"]) != case["hash"]
        or coderig.xxhash32(case["input"].encode("utf-8"), case["seed"]) != case["hash"]
    ]
    assert failures == []


def test_line_hash_vectors_current_and_legacy(vectors):
    cases = vectors["line_hash"]
    assert cases
    got = [
        (case["line"], case["content"], hashline.line_hash(case["line"], case["content"]),
         hashline.legacy_line_hash(case["line"], case["content"]))
        for case in cases
    ]
    expected = [(case["line"], case["content"], case["hash"], case["legacy"]) for case in cases]
    assert got == expected


def test_format_vectors(vectors):
    cases = vectors["format"]
    assert cases
    for case in cases:
        assert hashline.format(case["content"]) == case["formatted"]


def test_line_hash_vectors_validate_and_their_legacy_form_too(vectors):
    """A ref built from a vector's hash (or its legacy hash) is fresh for a
    file whose line at that number is the vector's content."""
    for case in vectors["line_hash"]:
        if "\n" in case["content"]:
            continue
        content = "\n" * (case["line"] - 1) + case["content"]
        for letters in (case["hash"], case["legacy"]):
            hashline.validate(content, [f"{case['line']}#{letters}"])


# --- the common format ---------------------------------------------------------


def _applied(r):
    return {"content": r.content, "tier": r.tier, "replacements": r.replacements}


def _pair(pair):
    return None if pair is None else list(pair)


def _locate(content, needle):
    m = coderig.locate(content, needle)
    return {
        "kind": m.kind,
        "text": None if m.start is None else content[m.start:m.end],
        "count": m.count,
        "nearest": None if m.nearest is None else list(m.nearest[:2]),
        "score": m.score,
        "start": m.start,
        "end": m.end,
        "candidates": [list(c) for c in m.candidates],
    }


class VectorBug(AssertionError):
    """The vector cannot be run as the README defines it."""


def _flow(spec):
    """The spec as a Flow; a vector flow must hold no conditions (they have
    no face-neutral form, and Flow.from_spec would set them aside)."""
    steps = spec.get("steps") if isinstance(spec, dict) else None
    for i, step in enumerate(steps if isinstance(steps, list) else []):
        if not isinstance(step, dict):
            continue
        found = [key for key in ("when", "loop_condition") if key in step]
        cases = step.get("cases")
        found += [f"cases[{k}].condition" for k, case in enumerate(cases if isinstance(cases, list) else [])
                  if isinstance(case, dict) and "condition" in case]
        if found:
            raise VectorBug(f"a vector flow must hold no conditions, found steps[{i}].{found[0]}")
    return flow.Flow.from_spec(spec)


def _validate(spec):
    codes = [problem["code"] for problem in flow.validate(_flow(spec))]
    return {"valid": not codes, "codes": codes}


def _spec_state(function):
    return lambda spec, state: {"result": function(_flow(spec), flow.State.from_dict(state))}


def _scheduler(spec, events):
    """The ready ids of every event, and the error that stopped the
    sequence (building the scheduler counts as the step before the first
    event); an error may only come from the last event."""
    ready = []
    try:
        s = flow.Scheduler(_flow(spec))
    except coderig.Error as e:
        return ready, e
    arity = {"start": 0, "complete": 1, "fail": 1, "skip": 1}
    for k, event in enumerate(events):
        name, args = event[0], event[1:]
        if arity.get(name) != len(args):
            raise VectorBug(f"events[{k}] is {event!r}; an event is [\"start\"], "
                            "[\"complete\", id], [\"fail\", id] or [\"skip\", id]")
        try:
            ready.append(getattr(s, name)(*args))
        except coderig.Error as e:
            if k + 1 != len(events):
                raise VectorBug(f"events[{k}] failed ({e.kind}: {e.message}), but an error "
                                "may only come from the last event") from e
            return ready, e
    return ready, None


# op -> (fields that are optional: a null one counts as absent, the call)
OPS = {
    "apply_edit": ({"replace_all", "path", "guards"},
                   lambda **a: _applied(coderig.apply_edit(**a))),
    "apply_edits": ({"path", "guards"}, lambda **a: _applied(coderig.apply_edits(**a))),
    "locate": (set(), _locate),
    "check_guards": ({"path"}, lambda **a: {
        "violations": [v.kind for v in coderig.check_guards(**a)]}),
    "hashline_format": (set(), lambda content: {"formatted": hashline.format(content)}),
    "hashline_apply": (set(), lambda content, edits: {"content": hashline.apply(content, edits)}),
    "hashline_validate": (set(), lambda content, refs: hashline.validate(content, refs) or {}),
    "hashline_parse_ref": (set(), lambda ref: dict(zip(("line", "hash"), hashline.parse_ref(ref)))),
    "xxhash32": ({"seed"}, lambda **a: {"hash": coderig.xxhash32(**a)}),
    "flow_validate": (set(), _validate),
    "flow_ready_steps": (set(), lambda spec, state: {
        "ready": flow.ready_steps(_flow(spec), flow.State.from_dict(state))}),
    "flow_evaluate_trigger_rule": (set(), lambda deps, state, rule: {
        "result": flow.evaluate_trigger_rule(deps, flow.State.from_dict(state), rule)}),
    "flow_is_run_complete": (set(), _spec_state(flow.is_run_complete)),
    "flow_is_stuck": (set(), _spec_state(flow.is_stuck)),
    "flow_scheduler": (set(), _scheduler),
    "flow_should_retry": (set(), lambda max_retries, retry_count: {
        "result": flow.should_retry(max_retries, retry_count)}),
    "flow_reconcile_resume_step": ({"retry_count", "max_retries"}, lambda **a: {
        "action": flow.reconcile_resume_step(**a)}),
    "arena_classify_lane": (set(), lambda **a: {"lane": arena.classify_lane(**a)}),
    # A row is a tuple in Python; JSON has only lists.
    "arena_dispatch_now": ({"local_capacity", "cloud_capacity"}, lambda rows, **a: {
        "ids": arena.dispatch_now([tuple(r) for r in rows], **a)}),
    "arena_is_battle_complete": (set(), lambda statuses: {
        "result": arena.is_battle_complete(statuses)}),
    "arena_compute_benchmark": (set(), lambda **a: dict(zip(
        ("duration_ms", "tokens_per_sec"), arena.compute_benchmark(**a)))),
    "arena_sanitize_slug": (set(), lambda text: {"slug": arena.sanitize_slug(text)}),
    "arena_contestant_dir": (set(), lambda identity, model: {
        "dir": arena.contestant_dir(identity, model)}),
    "arena_reconcile_contestant_resume": (set(), lambda **a: {
        "action": arena.reconcile_contestant_resume(**a)}),
    "arena_extract_winner": (set(), lambda text: {"winner": _pair(arena.extract_winner(text))}),
    "arena_extract_verdict": (set(), lambda text: {"verdict": _pair(arena.extract_verdict(text))}),
    "arena_should_name_winner": (set(), lambda succeeded: {
        "result": arena.should_name_winner(succeeded)}),
    "match_model": ({"providers"}, lambda **a: {"model": model.match_model(**a)}),
    "classify_error": ({"name", "message", "http_status"}, lambda **a: {
        "class": model.classify_error(**a)}),
}


def differs(expected, actual, at):
    """Where two JSON values differ (numbers within TOLERANCE, bools and
    everything else exactly, objects key by key both ways), or None."""
    if isinstance(expected, bool) or isinstance(actual, bool):
        return None if expected is actual else f"{at}: expected {expected!r}, got {actual!r}"
    if isinstance(expected, (int, float)) and isinstance(actual, (int, float)):
        ok = math.isclose(expected, actual, rel_tol=0, abs_tol=TOLERANCE)
        return None if ok else f"{at}: expected {expected!r}, got {actual!r}"
    if isinstance(expected, list) and isinstance(actual, (list, tuple)):
        if len(expected) != len(actual):
            return f"{at}: expected {len(expected)} items {expected!r}, got {actual!r}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            where = differs(e, a, f"{at}[{i}]")
            if where:
                return where
        return None
    if isinstance(expected, dict) and isinstance(actual, dict):
        if set(expected) != set(actual):
            return f"{at}: expected keys {sorted(expected)}, got {sorted(actual)}"
        for key in expected:
            where = differs(expected[key], actual[key], f"{at}.{key}")
            if where:
                return where
        return None
    return None if expected == actual else f"{at}: expected {expected!r}, got {actual!r}"


def run_case(case):
    """Runs one case; raises AssertionError saying what differs."""
    answers = {"expect", "error"} & set(case)
    both_allowed = case.get("op") == "flow_scheduler"
    if set(case) - answers != {"name", "op", "input"} or not answers or (
            len(answers) == 2 and not both_allowed):
        raise VectorBug("a case has exactly name, op, input and one of expect / error "
                        f"(both only for flow_scheduler); got {sorted(case)}")
    if case["op"] not in OPS:
        raise VectorBug(f"unknown op {case['op']!r}")
    optional, call = OPS[case["op"]]
    kwargs = {k: v for k, v in case["input"].items() if not (k in optional and v is None)}
    error = None
    try:
        answer = call(**kwargs)
    except coderig.Error as e:
        answer, error = None, e
    except TypeError as e:  # an input field the op does not take, or of a type it refuses
        raise VectorBug(f"{case['op']} cannot be called with {sorted(kwargs)}: {e}") from e
    if case["op"] == "flow_scheduler" and answer is not None:
        answer, error = {"ready": answer[0]}, answer[1]
    if "error" not in case:
        assert error is None, f"expected {case['expect']}, got {type(error).__name__}: {error.message}"
    if "expect" in case:
        for key, value in case["expect"].items():
            assert key in answer, f"the answer has no field {key!r}: {answer}"
            where = differs(value, answer[key], key)
            assert where is None, where
    if "error" in case:
        expected = case["error"]
        assert error is not None, f"expected the error {expected}, got {answer}"
        unknown = set(expected) - {"kind", "code", "message", "details"}
        if unknown or not {"kind", "code"} <= set(expected):
            raise VectorBug(f"an error has kind, code, message?, details?; got {sorted(expected)}")
        got = (error.kind, error.code)
        assert got == (expected["kind"], expected["code"]), f"{got}: {error.message}"
        if "message" in expected:
            assert error.message == expected["message"]
        for key, value in expected.get("details", {}).items():
            assert key in error.details, f"no detail {key!r} in {error.details}"
            where = differs(value, error.details[key], f"details.{key}")
            assert where is None, where


def common_files(directory):
    return sorted(p for p in directory.glob("*.json") if p.name != "hashline.json")


def load_cases(directory):
    """pytest params, one per case of every common-format file, id = case
    name (names are unique across the files); every case of errors.json is
    an error with a message."""
    params = []
    for path in common_files(directory):
        document = json.loads(path.read_text("utf-8"))
        assert set(document) <= {"description", "cases"} and document.get("cases"), path.name
        for case in document["cases"]:
            if path.name == "errors.json":
                assert "message" in case.get("error", {}), f"errors.json: {case.get('name')}"
            params.append(pytest.param(case, id=case.get("name", "?")))
    names = [p.id for p in params]
    assert len(set(names)) == len(names), sorted(n for n in names if names.count(n) > 1)
    return params


CASES = load_cases(VECTORS)


@pytest.mark.parametrize("case", CASES)
def test_vector(case):
    run_case(case)


def test_every_file_of_the_readme_is_there_and_run():
    listed = set(re.findall(r"`(\w+\.json)`", (VECTORS / "README.md").read_text("utf-8")))
    listed -= {"hashline.json"}
    assert {p.name for p in common_files(VECTORS)} == listed
    assert len(CASES) >= len(listed)


# --- the runner itself -----------------------------------------------------------

OWN = {"description": "the runner's own check", "cases": [
    {"name": "apply", "op": "apply_edit", "input": {"content": "a = 1\n", "old": "a = 1",
                                                   "new": "a = 2", "path": None},
     "expect": {"content": "a = 2\n", "tier": "exact", "replacements": 1}},
    {"name": "batch error", "op": "apply_edits", "input": {"content": "a", "edits": [{"old": 1, "new": "b"}]},
     "error": {"kind": "invalid_input", "code": "INVALID_INPUT",
               "message": "`edits[0].old`: invalid type: integer `1`, expected a string",
               "details": {"path": "edits[0].old"}}},
    {"name": "locate", "op": "locate", "input": {"content": "x\ny\n", "needle": "y"},
     "expect": {"kind": "exact", "text": "y", "start": 2, "end": 3, "score": 1.0, "nearest": None}},
    {"name": "empty needle", "op": "locate", "input": {"content": "x", "needle": ""},
     "error": {"kind": "invalid_input", "code": "INVALID_INPUT"}},
    {"name": "ready", "op": "flow_ready_steps",
     "input": {"spec": {"steps": [{"id": "a", "kind": "code"}, {"id": "b", "kind": "code", "deps": ["a"]}]},
               "state": {"done": ["a"]}},
     "expect": {"ready": ["b"]}},
    {"name": "scheduler conflict", "op": "flow_scheduler",
     "input": {"spec": {"steps": [{"id": "a", "kind": "code"}]},
               "events": [["start"], ["complete", "a"], ["complete", "a"]]},
     "expect": {"ready": [["a"], []]},
     "error": {"kind": "conflict", "code": "CONFLICT", "details": {"reason": "invalid_transition"}}},
    {"name": "no retry policy", "op": "flow_should_retry", "input": {"max_retries": None, "retry_count": 0},
     "expect": {"result": False}},
    {"name": "resume completed", "op": "flow_reconcile_resume_step",
     "input": {"status": "completed", "task_id": None, "task_state": None, "retry_count": None},
     "expect": {"action": "keep"}},
    {"name": "dispatch", "op": "arena_dispatch_now",
     "input": {"rows": [["a", "local", "queued"], ["b", "local", "queued"]], "local_capacity": None},
     "expect": {"ids": ["a"]}},
    {"name": "benchmark", "op": "arena_compute_benchmark",
     "input": {"started_ms": 0, "ended_ms": 3000, "cost_tokens": 100, "lane": "local"},
     "expect": {"duration_ms": 3000, "tokens_per_sec": 33.333333333333336}},
    {"name": "winner", "op": "arena_extract_winner", "input": {"text": "WINNER: a/b"},
     "expect": {"winner": ["a", "b"]}},
]}


def test_the_runner_passes_sound_cases_and_fails_wrong_ones(tmp_path):
    (tmp_path / "own.json").write_text(json.dumps(OWN), "utf-8")
    (tmp_path / "hashline.json").write_text("{}", "utf-8")  # its own layout: not read here
    params = load_cases(tmp_path)
    assert [p.id for p in params] == [c["name"] for c in OWN["cases"]]
    for param in params:
        run_case(param.values[0])
    wrong = [
        {"name": "wrong answer", "op": "apply_edit", "input": {"content": "a", "old": "a", "new": "b"},
         "expect": {"content": "c"}},
        {"name": "wrong message", "op": "locate", "input": {"content": "x", "needle": ""},
         "error": {"kind": "invalid_input", "code": "INVALID_INPUT", "message": "nope"}},
        {"name": "no error", "op": "locate", "input": {"content": "x", "needle": "x"},
         "error": {"kind": "invalid_input", "code": "INVALID_INPUT"}},
        {"name": "a bool is no number", "op": "flow_should_retry",
         "input": {"max_retries": 1, "retry_count": 0}, "expect": {"result": 1}},
        {"name": "unknown op", "op": "frobnicate", "input": {}, "expect": {}},
        {"name": "unknown field", "op": "locate", "input": {"content": "x", "needle": "x"},
         "expect": {}, "extra": 1},
        {"name": "unknown input field", "op": "locate",
         "input": {"content": "x", "needle": "x", "extra": 1}, "expect": {}},
        {"name": "both", "op": "locate", "input": {"content": "x", "needle": "x"}, "expect": {},
         "error": {"kind": "invalid_input", "code": "INVALID_INPUT"}},
        {"name": "a condition", "op": "flow_validate",
         "input": {"spec": {"steps": [{"id": "a", "kind": "code", "when": "x"}]}},
         "expect": {"valid": True}},
        {"name": "early error", "op": "flow_scheduler",
         "input": {"spec": {"steps": [{"id": "a", "kind": "code"}]}, "events": [["complete", "a"], ["start"]]},
         "expect": {"ready": []}},
    ]
    for case in wrong:
        with pytest.raises(AssertionError):
            run_case(case)
