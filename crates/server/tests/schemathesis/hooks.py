"""Schemathesis hooks of the schema fuzzing stage (scripts/test.sh).

JSON Schema describes one value at a time; a few of the core's rules relate
two fields, so the OpenAPI document states them in words and the core
refuses a request that breaks them as invalid_input (400), rightly:

- a hashline ref must name a line of its `content`, and a replace's `end`
  must not come before its `pos`;
- hashline edits whose (fresh) ranges overlap are refused;
- edits of one batch must not replace overlapping text of `content`, and a
  `replace_all` edit must not have overlapping occurrences.

For schema-valid (positive) cases this hook makes the generated request keep
those rules, changing as little as it can, so that the server has to answer
each with 200 or a 422 refusal — anything else is a finding. It also turns
some cases into ones that can succeed (the edit's `old` added to the
content, hashline refs made fresh), so the 200 answers are checked against
their schemas too. Negative cases are left alone.

The battle routes have rules no schema can state either: the identities must
be configured agents, a project must be the fuzz server's git repository (under
its --project-root), a base must resolve, ids must name a battle that exists.
scripts/test.sh starts the server with that repository (CODERIG_FUZZ_PROJECT)
and one completed battle (CODERIG_FUZZ_BATTLE); for positive cases this hook
points the generated request at them, keeping everything else as generated.
Oracle commands are replaced with `true` in every case: generated text is never
run as a shell command. Every battle the fuzzer creates is stopped at once
(after_call): the fuzzer tests the API, and a backlog of hundreds of running
contestants (a git worktree each) would starve the server on a small machine.

The run routes likewise: a registered flow must exist (the fuzz server's
--flows has `fuzz-gate`), agent steps must name configured agents, ids must name
a run that exists and steps a step of it. scripts/test.sh starts one run of
`fuzz-gate` waiting at its approval (CODERIG_FUZZ_RUN); for positive cases this
hook points about half the flow names, run ids and step ids at them. Command
steps of inline specs run `true` in every case (each non-blank `shell` and argv
element becomes `true`), and every run the fuzzer creates is cancelled at once
(after_call). A schema-valid spec may still break a rule no schema states (a
dependency on an unknown step, a cycle, a bad CEL expression, a `code` step):
the document says so, and POST /api/runs answers it 400.
"""

import os
import re
import urllib.error
import urllib.request

import schemathesis
from schemathesis import GenerationMode
from schemathesis.generation.meta import TestPhase

try:  # The Python face, installed by the earlier stages of scripts/test.sh.
    from coderig.hashline import line_hash
except ImportError:  # Without it refs stay as generated (mostly stale: 422).
    line_hash = None

# A ref as the document's pattern spells it: leading whitespace and > + -,
# the line number, then `#`, the hash and the rest.
REF = re.compile(r"^(?P<lead>[^0-9]*)(?P<line>[0-9]+)(?P<sep>[^#]*#[^A-Za-z]*)(?P<hash>[A-Za-z]{2})(?P<rest>.*)$", re.S)

HASHLINE_PATHS = {"/api/hashline/apply", "/api/hashline/validate"}


def succeeding(content):
    """Whether to turn this case into one that can succeed: about half of
    them, chosen by the generated data itself so that a seed replays."""
    return len(content) % 2 == 0


# --- hashline ---------------------------------------------------------------


def texts(content):
    """The lines as `hashline format` numbers them (a final newline opens one
    more), without their `\\r`."""
    return [line[:-1] if line.endswith("\r") else line for line in content.split("\n")]


def fix_ref(ref, lines, fresh):
    """`ref` with its line moved into `lines` and, when `fresh`, its hash
    made the line's own."""
    match = REF.match(ref) if isinstance(ref, str) else None
    if not match:
        return ref
    line = (int(match.group("line")) - 1) % len(lines) + 1
    hash_ = match.group("hash")
    if fresh and line_hash is not None:
        hash_ = line_hash(line, lines[line - 1])
    return f"{match.group('lead')}{line}{match.group('sep')}{hash_}{match.group('rest')}"


def line_of(ref):
    match = REF.match(ref) if isinstance(ref, str) else None
    return int(match.group("line")) if match else None


def with_line(ref, line):
    match = REF.match(ref)
    return f"{match.group('lead')}{line}{match.group('sep')}{match.group('hash')}{match.group('rest')}"


def fix_hashline(body):
    content = body.get("content")
    if not isinstance(content, str):
        return
    lines = texts(content)
    fresh = succeeding(content)
    if isinstance(body.get("refs"), list):
        body["refs"] = [fix_ref(ref, lines, fresh) for ref in body["refs"]]
    edits = body.get("edits")
    if not isinstance(edits, list):
        return
    if fresh and len(edits) > 1:
        # Fresh ranges of several edits may overlap; one edit cannot.
        del edits[1:]
    for edit in edits:
        if not isinstance(edit, dict):
            continue
        for key in ("pos", "end"):
            if isinstance(edit.get(key), str):
                edit[key] = fix_ref(edit[key], lines, fresh)
        pos, end = line_of(edit.get("pos")), line_of(edit.get("end"))
        if pos is not None and end is not None and end < pos:
            edit["pos"], edit["end"] = edit["end"], edit["pos"]


# --- search/replace edits ---------------------------------------------------


def parts(edit):
    """(old, replace_all, setter of replace_all) of an edit in either form."""
    if isinstance(edit, dict):
        key = "replaceAll" if "replaceAll" in edit else "replace_all"

        def set_flag(value):
            edit[key] = value

        return edit.get("old"), edit.get(key), set_flag
    if isinstance(edit, list) and edit:

        def set_list_flag(value):
            if len(edit) == 3:
                edit[2] = value

        return edit[0], edit[2] if len(edit) == 3 else None, set_list_flag
    return None, None, lambda value: None


def overlaps_itself(content, old):
    """Whether two occurrences of `old` in `content` overlap."""
    starts = [m.start() for m in re.finditer(f"(?={re.escape(old)})", content)]
    return any(b - a < len(old) for a, b in zip(starts, starts[1:]))


def fix_edits(body):
    content = body.get("content")
    if not isinstance(content, str):
        return
    if isinstance(body.get("edits"), list):
        edits = body["edits"]
        # Texts without a character in common cannot overlap in the content.
        kept, seen = [], set()
        for edit in edits:
            old, _, _ = parts(edit)
            if not isinstance(old, str) or (kept and seen & set(old)):
                continue
            kept.append(edit)
            seen |= set(old)
        edits[:] = kept or edits[:1]
        olds = [parts(edit)[0] for edit in edits]
        if succeeding(content):
            missing = [old for old in olds if isinstance(old, str) and old not in content]
            content = body["content"] = "\n".join([content, *missing])
        for edit in edits:
            old, replace_all, set_flag = parts(edit)
            if replace_all and isinstance(old, str) and overlaps_itself(content, old):
                set_flag(False)
    elif isinstance(body.get("old"), str):
        old = body["old"]
        if succeeding(content) and old not in content:
            content = body["content"] = content + old
        if body.get("replace_all") and overlaps_itself(content, old):
            body["replace_all"] = False


# --- battles -----------------------------------------------------------------

FUZZ_PROJECT = os.environ.get("CODERIG_FUZZ_PROJECT")
FUZZ_BATTLE = os.environ.get("CODERIG_FUZZ_BATTLE")
# The scripted agents of coderig.toml beside this file.
IDENTITIES = ["alice", "bob"]
BATTLE_ID = re.compile(r"^[0-9a-f]{32}$")


def defuse_oracle(body):
    """Generated text is never run as a shell command: a non-blank repro or
    suite becomes `true` (blank or non-string ones stay: the spec decoder
    refuses them before anything runs)."""
    oracle = body.get("oracle") if isinstance(body, dict) else None
    if isinstance(oracle, dict):
        for key in ("repro", "suite"):
            if isinstance(oracle.get(key), str) and oracle[key].strip():
                oracle[key] = "true"


def fix_spec(body):
    if FUZZ_PROJECT and body.get("project") is not None:
        body["project"] = FUZZ_PROJECT
    if body.get("base") is not None:
        body["base"] = "HEAD"
    contestants = body.get("contestants")
    if isinstance(contestants, list):
        for i, contestant in enumerate(contestants):
            if isinstance(contestant, dict):
                # Unique pairs with distinct results folders.
                contestant["identity"] = IDENTITIES[i % 2]
                contestant["model"] = f"m{i}"
    if isinstance(body.get("judge"), dict):
        body["judge"]["identity"] = "alice"
    # A positive duration may still round to zero nanoseconds: a sane one.
    if body.get("contestant_timeout") is not None:
        body["contestant_timeout"] = 30
    oracle = body.get("oracle")
    if isinstance(oracle, dict) and oracle.get("timeout") is not None:
        oracle["timeout"] = 30


def fix_battle_ids(case):
    """About half of the generated ids (chosen by the data, so a seed
    replays) become the completed battle's; the others stay as generated
    and name no battle (404). Pointing every case at one battle would make
    them all the same request."""
    params = case.path_parameters
    if not params or not FUZZ_BATTLE:
        return None
    battle = params.get("id")
    if not isinstance(battle, str) or not BATTLE_ID.match(battle):
        return battle
    # The stateful phase's ids (its own battles) are real: keep them.
    stateful = case.meta is not None and case.meta.phase.name == TestPhase.STATEFUL
    if battle != FUZZ_BATTLE and not stateful and int(battle[0], 16) % 2 == 0:
        params["id"] = battle = FUZZ_BATTLE
    cid = params.get("cid")
    if isinstance(cid, str) and not cid.startswith(battle):
        params["cid"] = f"{battle}{cid[32:]}"
    return battle


def fix_battle_case(case):
    path = case.operation.path
    battle = fix_battle_ids(case)
    query = case.query if isinstance(case.query, dict) else None
    if query is not None:
        if FUZZ_PROJECT and query.get("project") is not None:
            query["project"] = FUZZ_PROJECT
        # A cursor must be an earlier page's next_cursor, unchanged.
        query.pop("cursor", None)
    body = case.body
    if not isinstance(body, dict):
        return
    if path == "/api/battles":
        fix_spec(body)
    elif path.endswith("/winner") or path.endswith("/apply"):
        if isinstance(body.get("contestant_id"), str) and battle:
            body["contestant_id"] = f"{battle}-c1"
    elif path.endswith("/cross-examine"):
        body["identity"] = "alice"


# --- runs ----------------------------------------------------------------------

FUZZ_RUN = os.environ.get("CODERIG_FUZZ_RUN")
# The flow of crates/server/tests/schemathesis/flows/ and its approval step.
FUZZ_FLOW = "fuzz-gate"
FUZZ_STEP = "gate"
RUN_PATHS = ("/api/runs", "/api/flows")


def run_steps(body):
    spec = body.get("spec") if isinstance(body, dict) else None
    steps = spec.get("steps") if isinstance(spec, dict) else None
    return [step for step in steps if isinstance(step, dict)] if isinstance(steps, list) else []


def defuse_commands(body):
    """Generated text is never run as a command: a non-blank `shell` and each
    non-blank argv element become `true` (blank and non-string ones stay: the
    decoder refuses them before anything runs, and a case the server must
    refuse stays one it must refuse)."""
    for step in run_steps(body):
        if isinstance(step.get("shell"), str) and step["shell"].strip():
            step["shell"] = "true"
        argv = step.get("argv")
        if isinstance(argv, list):
            step["argv"] = ["true" if isinstance(a, str) and a.strip() else a for a in argv]


def fix_run_ids(case):
    """About half of the generated run ids (chosen by the data, so a seed
    replays) become the fuzz run's, with its approval as the step; the others
    name no run (404). The stateful phase's ids (its own runs and their
    steps, from the document's links) are real: they stay."""
    params = case.path_parameters
    if not params or not FUZZ_RUN:
        return
    if case.meta is not None and case.meta.phase.name == TestPhase.STATEFUL:
        return
    run = params.get("id")
    if isinstance(run, str) and BATTLE_ID.match(run) and int(run[0], 16) % 2 == 0:
        params["id"] = FUZZ_RUN
        if isinstance(params.get("step"), str):
            params["step"] = FUZZ_STEP


def fix_run_case(case):
    fix_run_ids(case)
    query = case.query if isinstance(case.query, dict) else None
    if query is not None:
        # A cursor must be an earlier page's next_cursor, unchanged.
        query.pop("cursor", None)
    body = case.body
    if case.operation.path != "/api/runs" or not isinstance(body, dict):
        return
    if isinstance(body.get("flow"), str) and len(body["flow"]) % 2 == 0:
        body["flow"] = FUZZ_FLOW
    for step in run_steps(body):
        if step.get("kind") == "agent" and isinstance(step.get("agent"), str):
            step["agent"] = IDENTITIES[0]


@schemathesis.hook
def map_case(context, case):
    if case.operation.path == "/api/battles":
        defuse_oracle(case.body)
    if case.operation.path == "/api/runs":
        defuse_commands(case.body)
    meta = case.meta
    if meta is None or meta.generation.mode != GenerationMode.POSITIVE:
        return case
    if case.operation.path.startswith("/api/battles") or case.operation.path == "/api/leaderboard":
        fix_battle_case(case)
        return case
    if case.operation.path.startswith(RUN_PATHS):
        fix_run_case(case)
        return case
    if not isinstance(case.body, dict):
        return case
    if case.operation.path in HASHLINE_PATHS:
        fix_hashline(case.body)
    elif case.operation.path == "/api/edit":
        fix_edits(case.body)
    return case


@schemathesis.hook
def after_call(context, case, response):
    if case.method.upper() != "POST" or response.status_code != 201:
        return
    if case.operation.path == "/api/battles":
        stop = f"{response.json().get('battle_id')}/stop"
    elif case.operation.path == "/api/runs":
        stop = f"{response.json().get('run_id')}/cancel"
    else:
        return
    request = urllib.request.Request(
        f"{response.request.url.rstrip('/')}/{stop}",
        method="POST",
        headers={"Authorization": f"Bearer {os.environ.get('CODERIG_FUZZ_TOKEN', '')}"},
    )
    try:
        urllib.request.urlopen(request, timeout=30).read()
    except urllib.error.HTTPError:
        pass  # 409: it finished already
