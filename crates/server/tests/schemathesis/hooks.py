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
"""

import re

import schemathesis
from schemathesis import GenerationMode

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


@schemathesis.hook
def map_case(context, case):
    meta = case.meta
    if meta is None or meta.generation.mode != GenerationMode.POSITIVE:
        return case
    if not isinstance(case.body, dict):
        return case
    if case.operation.path in HASHLINE_PATHS:
        fix_hashline(case.body)
    elif case.operation.path == "/api/edit":
        fix_edits(case.body)
    return case
