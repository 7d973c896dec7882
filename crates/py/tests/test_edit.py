import os
import stat
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import coderig

# Non-ASCII (and astral, 2 UTF-16 units, 4 UTF-8 bytes) text before every
# match, so byte, UTF-16 and code-point offsets all differ.
PREFIX = "# héllo 🎉 ünïcode ✓\n"

CODE = PREFIX + (
    "def greet(name):\n"
    "    message = \u201chello\u201d + name\n"
    "    if name:\n"
    "        print(message)\n"
    "    return message\n"
    "\n"
    "def farewell(name):\n"
    "    return 'bye ' + name\n"
)

# (case id, needle, expected kind, expected matched text)
TIERS = [
    ("exact", "        print(message)", "exact", "        print(message)"),
    ("exact-multiline", "    if name:\n        print(message)", "exact",
     "    if name:\n        print(message)"),
    ("whitespace-reindented", "if name:\n    print(message)", "whitespace",
     "    if name:\n        print(message)"),
    ("whitespace-collapsed", "    return   'bye '  +  name", "whitespace",
     "    return 'bye ' + name"),
    ("unicode-straight-quotes", '    message = "hello" + name', "unicode",
     "    message = \u201chello\u201d + name"),
    ("fuzzy-typo", "def farewell(name):\n    return 'by ' + name", "fuzzy",
     "def farewell(name):\n    return 'bye ' + name"),
]


@pytest.mark.parametrize("needle,kind,matched", [t[1:] for t in TIERS], ids=[t[0] for t in TIERS])
def test_each_tier_reports_code_point_offsets(needle, kind, matched):
    m = coderig.locate(CODE, needle)
    assert m.kind == kind
    assert CODE[m.start:m.end] == matched
    assert m.start >= len(PREFIX)
    assert m.count == 1
    assert m.candidates == []
    assert m.nearest is None
    if kind == "fuzzy":
        assert 0.85 <= m.score < 1.0
    else:
        assert m.score == 1.0


def test_offsets_count_astral_characters_once():
    content = "🎉🎉é=x\n"
    m = coderig.locate(content, "x")
    assert (m.kind, m.start, m.end) == ("exact", 4, 5)
    assert len(content[: m.start].encode("utf-8")) == 11


def test_ambiguous_locations_are_refused_with_candidates():
    content = PREFIX + "x = 1\ny = 2\nx = 1\n"
    m = coderig.locate(content, "x = 1")
    assert m.kind == "ambiguous"
    assert (m.start, m.end, m.score) == (None, None, None)
    assert m.count == 2
    assert m.candidates == [(2, 2), (4, 4)]
    with pytest.raises(coderig.AmbiguousError) as raised:
        coderig.apply_edit(content, "x = 1", "x = 3")
    assert raised.value.code == "AMBIGUOUS"
    assert (raised.value.count, raised.value.lines) == (2, [(2, 2), (4, 4)])


def test_replace_all_replaces_every_occurrence():
    content = PREFIX + "x = 1\ny = 2\nx = 1\n"
    r = coderig.apply_edit(content, "x = 1", "x = 3", replace_all=True)
    assert r.content == PREFIX + "x = 3\ny = 2\nx = 3\n"
    assert (r.tier, r.replacements) == ("exact", 2)


def test_not_found_carries_the_nearest_window():
    content = PREFIX + "alpha beta gamma\nsecond line of text here\nthird\n"
    m = coderig.locate(content, "second line of txet hree")
    assert m.kind == "not_found"
    assert (m.start, m.end, m.score, m.count) == (None, None, None, 0)
    first, last, score = m.nearest
    assert (first, last) == (3, 3)
    assert 0.5 <= score < 0.85
    with pytest.raises(coderig.NotFoundError) as raised:
        coderig.apply_edit(content, "second line of txet hree", "x")
    assert raised.value.code == "NOT_FOUND"
    assert raised.value.nearest == m.nearest
    assert "3" in raised.value.message


def test_not_found_without_anything_close_has_no_nearest():
    m = coderig.locate(PREFIX + "abc\n", "completely unrelated zzz qqq")
    assert (m.kind, m.nearest) == ("not_found", None)
    with pytest.raises(coderig.NotFoundError) as raised:
        coderig.apply_edit(PREFIX + "abc\n", "completely unrelated zzz qqq", "x")
    assert raised.value.nearest is None


def test_an_empty_needle_is_invalid_input_in_locate_and_apply_edit():
    for call in (lambda: coderig.locate("abc", ""), lambda: coderig.apply_edit("abc", "", "x")):
        with pytest.raises(coderig.InvalidInputError) as raised:
            call()
        assert raised.value.code == "INVALID_INPUT"
        assert "empty" in raised.value.message
        assert isinstance(raised.value, ValueError)


# (case id, positional arguments, message, details["path"]): the server's
# message for the same body, since the arguments are decoded as one.
BAD_ARGUMENTS = [
    ("old-int", ("a", 1, "b"), "`old`: invalid type: integer `1`, expected a string", "old"),
    ("content-none", (None, "a", "b"), "`content`: invalid type: null, expected a string",
     "content"),
    ("replace-all-int", ("a", "a", "b", 1),
     "`replace_all`: invalid type: integer `1`, expected a boolean", "replace_all"),
    ("path-int", ("a", "a", "b", False, 5), "`path`: invalid type: integer `5`, expected a string",
     "path"),
    ("new-not-json", ("a", "a", object()),
     "`new`: not JSON-like (unsupported type object); use dicts with str keys, lists, tuples, "
     "sets, str, int, float, bool and None", "new"),
]


@pytest.mark.parametrize("args,message,path", [b[1:] for b in BAD_ARGUMENTS],
                         ids=[b[0] for b in BAD_ARGUMENTS])
def test_apply_edit_wrong_types_get_the_servers_message(args, message, path):
    with pytest.raises(coderig.InvalidInputError) as raised:
        coderig.apply_edit(*args)
    assert raised.value.message == message
    assert raised.value.details == {"path": path}
    assert raised.value.path == path


def test_locate_wrong_types_get_the_servers_message():
    with pytest.raises(coderig.InvalidInputError) as raised:
        coderig.locate("abc", 3)
    assert raised.value.message == "`needle`: invalid type: integer `3`, expected a string"


def test_reprs():
    assert repr(coderig.locate(PREFIX + "x\n", "x")) == (
        f"Match(kind='exact', start={len(PREFIX)}, end={len(PREFIX) + 1}, score=1.000)"
    )
    assert "count=2" in repr(coderig.locate("a\na\n", "a"))
    assert repr(coderig.locate("a\n", "zzz")) == "Match(kind='not_found', nearest=None)"
    r = coderig.apply_edit("héllo\n", "héllo", "hi")
    assert repr(r) == "Applied(tier='exact', replacements=1, content=<3 chars>)"
    assert type(r).__module__ == "coderig" and type(r).__name__ == "Applied"
    assert coderig.Match.__module__ == "coderig"


# (case id, content, old, new, expected content, expected tier)
APPLY = [
    ("crlf-kept", "a = 1\r\nb = 2\r\n", "a = 1\nb = 2", "a = 10\nb = 20",
     "a = 10\r\nb = 20\r\n", "exact"),
    ("bom-kept", "\ufeffa = 1\nb = 2\n", "a = 1", "a = 9", "\ufeffa = 9\nb = 2\n", "exact"),
    ("no-final-newline-kept", "a = 1\nb = 2", "b = 2", "b = 3", "a = 1\nb = 3", "exact"),
    ("dollar-is-literal", "x = 1\n", "x = 1", "x = '$1 $& $$ \\1'", "x = '$1 $& $$ \\1'\n",
     "exact"),
    ("reindented-by-the-delta", PREFIX + "class A:\n    def f(self):\n        return 1\n",
     "def f(self):\n    return 1", "def f(self):\n    x = 2\n    return x",
     PREFIX + "class A:\n    def f(self):\n        x = 2\n        return x\n", "whitespace"),
    ("curly-quotes-stay-curly", PREFIX + "s = \u201chello\u201d\n", 's = "hello"', 's = "bye"',
     PREFIX + "s = \u201cbye\u201d\n", "unicode"),
    ("non-ascii-replacement", PREFIX + "name = 'x'\n", "name = 'x'", "name = '🎉é'",
     PREFIX + "name = '🎉é'\n", "exact"),
    ("escaped-old-plain-new-keeps-backslashes", 'print("x")\ny = 1\n', 'print(\\"x\\")',
     'print("x\\n")', 'print("x\\n")\ny = 1\n', "unicode"),
    ("blank-line-left-out-of-old-is-kept", "def f():\n    a = 1\n\n    b = 2\n",
     "def f():\n    a = 1\n    b = 2", "def f():\n    a = 1\n    b = 3",
     "def f():\n    a = 1\n\n    b = 3\n", "whitespace"),
]


@pytest.mark.parametrize("content,old,new,expected,tier", [a[1:] for a in APPLY],
                         ids=[a[0] for a in APPLY])
def test_apply_edit_keeps_the_files_bytes(content, old, new, expected, tier):
    r = coderig.apply_edit(content, old, new)
    assert r.content == expected
    assert (r.tier, r.replacements) == (tier, 1)


def test_keyword_arguments_match_the_design():
    r = coderig.apply_edit(content="a\n", old="a", new="b", replace_all=False, path=None,
                           guards=True)
    assert r.content == "b\n"


def test_no_op_is_an_error_not_a_success():
    with pytest.raises(coderig.NoOpError) as raised:
        coderig.apply_edit("x = 1\n", "x = 1", "x = 1")
    assert raised.value.code == "NO_OP"
    assert isinstance(raised.value, coderig.EditError)


# apply_edits ----------------------------------------------------------------

BATCH = PREFIX + "one = 1\ntwo = 2\nthree = 3\n"


@pytest.mark.parametrize("edits", [
    [("one = 1", "one = 10"), ("three = 3", "three = 30")],
    [("one = 1", "one = 10", False), ["three = 3", "three = 30"]],
    [{"old": "one = 1", "new": "one = 10"},
     {"old": "three = 3", "new": "three = 30", "replace_all": False}],
    iter([("one = 1", "one = 10"), ("three = 3", "three = 30")]),
], ids=["pairs", "triples-and-lists", "dicts", "iterator"])
def test_apply_edits_accepts_every_edit_shape(edits):
    r = coderig.apply_edits(BATCH, edits)
    assert r.content == PREFIX + "one = 10\ntwo = 2\nthree = 30\n"
    assert (r.tier, r.replacements) == ("exact", 2)


def test_apply_edits_reports_the_weakest_tier_and_replace_all():
    content = "a = 1\na = 1\n    b = 2\n"
    r = coderig.apply_edits(content, [("a = 1", "a = 5", True), ("b  =  2", "b = 3")])
    assert r.content == "a = 5\na = 5\n    b = 3\n"
    assert (r.tier, r.replacements) == ("whitespace", 3)


def test_apply_edits_refuses_overlapping_targets():
    with pytest.raises(coderig.InvalidInputError) as raised:
        coderig.apply_edits(BATCH, [("one = 1\ntwo", "x"), ("two = 2", "y")])
    assert "overlap" in raised.value.message


def test_apply_edits_is_all_or_nothing():
    # The first edit is fine; the second targets text only the first one creates.
    with pytest.raises(coderig.NotFoundError):
        coderig.apply_edits(BATCH, [("one = 1", "four = 4"), ("four = 4", "five = 5")])
    with pytest.raises(coderig.AmbiguousError):
        coderig.apply_edits(BATCH + "one = 1\n", [("two = 2", "x"), ("one = 1", "y")])


def test_apply_edits_passes_path_and_guards():
    content = "import os\nimport sys\n\nprint(os, sys)\n"
    # `sys` stays in use, so dropping its import is what the guard catches.
    edits = [("import sys\n", ""), ("print(os, sys)", "print(os, sys, 1)")]
    with pytest.raises(coderig.GuardError):
        coderig.apply_edits(content, edits, path="m.py")
    r = coderig.apply_edits(content, edits, path="m.py", guards=False)
    assert r.content == "import os\n\nprint(os, sys, 1)\n"
    # Removing an import together with its last use is not a drop.
    unused = [("import sys\n", ""), ("print(os, sys)", "print(os)")]
    assert coderig.apply_edits(content, unused, path="m.py").content == "import os\n\nprint(os)\n"


AN_EDIT = 'an edit: {"old", "new", "replace_all"?} or [old, new] or [old, new, replace_all]'
NOT_JSON = ("not JSON-like (unsupported type object); use dicts with str keys, lists, tuples, "
            "sets, str, int, float, bool and None")

# (case id, edits, message, details["path"] or None): the core's paths, edits
# numbered from 0, exactly as POST /api/edit answers.
BAD_EDITS = [
    ("empty", [], "no edits were given: send at least one {old, new} pair", None),
    ("a-str", "old", '`edits`: invalid type: string "old", expected an array', "edits"),
    ("a-single-dict", {"old": "a", "new": "b"}, "`edits`: invalid type: object, expected an array",
     "edits"),
    ("none", None, "`edits`: invalid type: null, expected an array", "edits"),
    ("not-iterable", 5, "`edits`: invalid type: integer `5`, expected an array", "edits"),
    ("item-int", [5], f"`edits[0]`: invalid type: integer `5`, expected {AN_EDIT}", "edits[0]"),
    ("item-str", ["ab"], f'`edits[0]`: invalid type: string "ab", expected {AN_EDIT}', "edits[0]"),
    ("one-item", [("a",)], "`edits[0]`: an edit given as a list is [old, new] or "
     "[old, new, replace_all], got 1 element", "edits[0]"),
    ("four-items", [("a", "b", True, 1)], "`edits[0]`: an edit given as a list is [old, new] or "
     "[old, new, replace_all], got 4 elements", "edits[0]"),
    ("old-not-str", [(1, "b")], "`edits[0][0]`: invalid type: integer `1`, expected a string",
     "edits[0][0]"),
    ("dict-old-not-str", [{"old": 1, "new": "b"}],
     "`edits[0].old`: invalid type: integer `1`, expected a string", "edits[0].old"),
    ("new-none", [("a", None)], "`edits[0][1]`: invalid type: null, expected a string",
     "edits[0][1]"),
    ("replace-all-int", [("a", "b", 1)],
     "`edits[0][2]`: invalid type: integer `1`, expected a boolean", "edits[0][2]"),
    ("dict-lacks-new", [("a", "b"), {"old": "a"}], "`edits[1]`: missing field `new`", "edits[1]"),
    ("dict-unknown-field", [{"old": "a", "new": "b", "x": 1}],
     "`edits[0].x`: unknown field `x`, expected one of `old`, `new`, `replaceAll`, `replace_all`",
     "edits[0].x"),
    ("not-json", [("a", object())], f"`edits[0][1]`: {NOT_JSON}", "edits[0][1]"),
]


@pytest.mark.parametrize("edits,message,path", [b[1:] for b in BAD_EDITS],
                         ids=[b[0] for b in BAD_EDITS])
def test_apply_edits_bad_shapes_name_the_field(edits, message, path):
    with pytest.raises(coderig.InvalidInputError) as raised:
        coderig.apply_edits("a\n", edits)
    assert raised.value.message == message
    assert raised.value.code == "INVALID_INPUT"
    assert raised.value.details == ({} if path is None else {"path": path})


def test_the_js_spelling_of_replace_all_is_accepted():
    r = coderig.apply_edits("a a\n", [{"old": "a", "new": "b", "replaceAll": True}])
    assert (r.content, r.replacements) == ("b b\n", 2)


# guards ---------------------------------------------------------------------

ORIGINAL_PY = "import os\nimport sys\n\n\ndef cwd():\n    return os.getcwd(), sys.argv\n"

GUARDS = [
    ("safe", ORIGINAL_PY.replace("cwd", "here"), []),
    ("dropped-import", ORIGINAL_PY.replace("import sys\n", ""), ["dropped_imports"]),
    ("unused-import-removed", ORIGINAL_PY.replace("import sys\n", "").replace(", sys.argv", ""), []),
    ("marker-leak", ORIGINAL_PY.replace("    return", "    # ... existing code ...\n    return"),
     ["marker_leak"]),
    ("conflict-marker", ORIGINAL_PY + "<<<<<<< HEAD\nx = 1\n=======\nx = 2\n>>>>>>> other\n",
     ["conflict_marker"]),
    ("truncation", "import os\nimport sys\n", ["truncation"]),
]


@pytest.mark.parametrize("updated,kinds", [g[1:] for g in GUARDS], ids=[g[0] for g in GUARDS])
def test_check_guards_kinds(updated, kinds):
    violations = coderig.check_guards(ORIGINAL_PY, updated, "tool.py")
    assert [v.kind for v in violations] == kinds
    assert all(isinstance(v, coderig.Violation) and v.message for v in violations)


def test_check_guards_accepts_no_path_and_path_like():
    updated = ORIGINAL_PY.replace("import sys\n", "")
    assert [v.kind for v in coderig.check_guards(ORIGINAL_PY, updated, Path("t.py"))] == [
        "dropped_imports"
    ]
    assert coderig.check_guards(ORIGINAL_PY, ORIGINAL_PY) == []


def test_truncation_is_checked_only_when_both_texts_are_non_empty():
    prose = "a long paragraph of plain prose\n" * 20
    assert [v.kind for v in coderig.check_guards(prose, "a\n")] == ["truncation"]
    assert coderig.check_guards(prose, "") == []
    assert coderig.check_guards("", prose) == []


def test_apply_edit_runs_the_guards_unless_disabled():
    with pytest.raises(coderig.GuardError) as raised:
        coderig.apply_edit(ORIGINAL_PY, "import sys\n", "", path="tool.py")
    assert raised.value.code == "GUARD"
    assert [v.kind for v in raised.value.violations] == ["dropped_imports"]
    r = coderig.apply_edit(ORIGINAL_PY, "import sys\n", "", path="tool.py", guards=False)
    assert "import sys" not in r.content


# file helpers -----------------------------------------------------------------


def _write(path: Path, data: bytes, mode: int = 0o640) -> None:
    path.write_bytes(data)
    os.chmod(path, mode)


@pytest.mark.parametrize("as_str", [False, True], ids=["pathlike", "str"])
def test_edit_file_writes_atomically_and_keeps_permissions(tmp_path, as_str):
    path = tmp_path / "m.py"
    _write(path, (PREFIX + "x = 1\r\n").encode("utf-8"))
    r = coderig.edit_file(str(path) if as_str else path, "x = 1", "x = 2")
    assert r.content == PREFIX + "x = 2\r\n"
    assert path.read_bytes() == (PREFIX + "x = 2\r\n").encode("utf-8")
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py"]


def test_edit_file_replace_all_and_guards(tmp_path):
    path = tmp_path / "m.py"
    _write(path, ORIGINAL_PY.encode())
    with pytest.raises(coderig.GuardError):
        coderig.edit_file(path, "import sys\n", "")
    assert path.read_bytes() == ORIGINAL_PY.encode()
    r = coderig.edit_file(path, "import sys\n", "", guards=False)
    assert path.read_text() == r.content
    r = coderig.edit_file(path, "os.getcwd", "os.getcwdb", replace_all=True)
    assert (r.replacements, path.read_text()) == (1, r.content)


@pytest.mark.parametrize("old,error", [
    ("not in the file at all zzz", coderig.NotFoundError),
    ("x = 1", coderig.AmbiguousError),
    ("", coderig.InvalidInputError),
], ids=["not-found", "ambiguous", "empty"])
def test_failed_file_edit_leaves_the_file_untouched(tmp_path, old, error):
    path = tmp_path / "m.py"
    data = "\ufeffx = 1\r\nx = 1\r\n".encode("utf-8")
    _write(path, data, 0o600)
    before = path.stat().st_mtime_ns
    with pytest.raises(error):
        coderig.edit_file(path, old, "y")
    assert path.read_bytes() == data
    assert path.stat().st_mtime_ns == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.py"]


def test_missing_file_is_an_io_error(tmp_path):
    with pytest.raises(coderig.IoError) as raised:
        coderig.edit_file(tmp_path / "missing.py", "a", "b")
    assert isinstance(raised.value, OSError) and isinstance(raised.value, coderig.Error)
    assert coderig.EditIOError is coderig.IoError  # the former name still catches it
    assert raised.value.code == "IO"
    assert "missing.py" in raised.value.message


def test_non_utf8_file_is_invalid_input_and_untouched(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"caf\xe9\n")
    with pytest.raises(coderig.InvalidInputError):
        coderig.edit_file(path, "caf", "tea")
    assert path.read_bytes() == b"caf\xe9\n"


def test_edits_file_is_all_or_nothing(tmp_path):
    path = tmp_path / "m.txt"
    path.write_text("one\ntwo\n")
    with pytest.raises(coderig.NotFoundError):
        coderig.edits_file(path, [("one", "uno"), ("missing line zzz", "x")])
    assert path.read_text() == "one\ntwo\n"
    r = coderig.edits_file(path, [{"old": "one", "new": "uno"}, ("two", "dos")])
    assert path.read_text() == r.content == "uno\ndos\n"


def test_hashline_edit_file(tmp_path):
    path = tmp_path / "m.txt"
    path.write_bytes(b"a\r\nb\r\n")
    ref = f"2#{coderig.hashline.line_hash(2, 'b')}"
    assert coderig.hashline_edit_file(path, [{"op": "replace", "pos": ref, "lines": ["B"]}]) == (
        "a\r\nB\r\n"
    )
    assert path.read_bytes() == b"a\r\nB\r\n"
    with pytest.raises(coderig.HashlineMismatchError):
        coderig.hashline_edit_file(path, [{"op": "replace", "pos": ref, "lines": ["C"]}])
    assert path.read_bytes() == b"a\r\nB\r\n"


def test_calls_from_threads_agree():
    """The core runs with the GIL released; results must not mix up."""
    contents = [PREFIX + f"value = {i}\ntail\n" for i in range(32)]

    def edit(i):
        return coderig.apply_edit(contents[i], f"value = {i}", f"value = {i + 100}").content

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(edit, range(32)))
    assert results == [PREFIX + f"value = {i + 100}\ntail\n" for i in range(32)]
