import pytest

import coderig
from coderig import hashline

CONTENT = "import x from 'y';\n\nfunction f() {\n  return 'héllo 🎉';\n}\n"


def refs(content):
    """{line number: "N#HH"} as format() shows them."""
    shown = hashline.format(content).split("\n")
    return {i: line.split("|", 1)[0] for i, line in enumerate(shown, start=1)}


R = refs(CONTENT)


def test_both_import_styles_work():
    import coderig.hashline as imported

    assert imported is hashline is coderig.hashline
    assert hashline.__all__ == [
        "apply", "format", "legacy_line_hash", "line_hash", "parse_ref", "validate"
    ]


def test_format_agrees_with_line_hash():
    for number, line in enumerate(CONTENT.split("\n"), start=1):
        assert R[number] == f"{number}#{hashline.line_hash(number, line)}"


def test_format_shows_crlf_lines_without_the_cr():
    assert hashline.format("a\r\nb") == f"1#{hashline.line_hash(1, 'a')}|a\n2#{hashline.line_hash(2, 'b')}|b"


@pytest.mark.parametrize("line_no", [0, -1, 2**70])
def test_line_numbers_start_at_one(line_no):
    with pytest.raises(coderig.InvalidInputError) as raised:
        hashline.line_hash(line_no, "x")
    assert "1-based" in raised.value.message
    with pytest.raises(coderig.InvalidInputError):
        hashline.legacy_line_hash(line_no, "x")


def test_a_non_integer_line_number_is_a_type_error():
    with pytest.raises(TypeError):
        hashline.line_hash("1", "x")


def test_legacy_hash_ignores_all_whitespace():
    assert hashline.legacy_line_hash(1, "  a b") == hashline.line_hash(1, "ab")
    assert hashline.line_hash(1, "  a b") != hashline.line_hash(1, "ab")


@pytest.mark.parametrize("text,expected", [
    ("12#VK", (12, "VK")),
    (">>> 12 # VK|text", (12, "VK")),
    ("+12#vk", (12, "VK")),
    ("  7#ZP  ", (7, "ZP")),
    ("-3#HH|  x = 1", (3, "HH")),
])
def test_parse_ref_is_lenient(text, expected):
    assert hashline.parse_ref(text) == expected


@pytest.mark.parametrize("text", ["", "VK", "0#VK", "12VK", "12#", "12#AA", "12#VKX", "12#VK junk"])
def test_parse_ref_rejects_malformed_refs(text):
    with pytest.raises(coderig.InvalidInputError) as raised:
        hashline.parse_ref(text)
    assert "LINE#HH" in raised.value.message
    assert isinstance(raised.value, ValueError)


def test_validate_accepts_fresh_refs():
    assert hashline.validate(CONTENT, [R[1], R[4], ">>> " + R[5] + "|}"]) is None
    assert hashline.validate(CONTENT, []) is None


def test_validate_lists_every_stale_ref_with_remaps():
    stale = [f"1#{'ZZ' if R[1][-2:] != 'ZZ' else 'PP'}", f"4#{'ZZ' if R[4][-2:] != 'ZZ' else 'PP'}"]
    with pytest.raises(coderig.HashlineMismatchError) as raised:
        hashline.validate(CONTENT, stale + [R[3]])
    error = raised.value
    assert error.code == "HASHLINE_MISMATCH"
    assert error.remaps == {stale[0]: R[1], stale[1]: R[4]}
    assert ">>> " + R[4] in error.message


@pytest.mark.parametrize("refs_arg,message", [
    (["99#ZZ"], "line 99 does not exist"),
    (["nope"], "LINE#HH"),
    ("1#ZZ", '`refs`: invalid type: string "1#ZZ", expected an array'),
    ([1], "`refs[0]`: invalid type: integer `1`, expected a string"),
    (5, "`refs`: invalid type: integer `5`, expected an array"),
])
def test_validate_bad_refs_are_invalid_input(refs_arg, message):
    with pytest.raises(coderig.InvalidInputError) as raised:
        hashline.validate(CONTENT, refs_arg)
    assert message in raised.value.message


# apply -------------------------------------------------------------------------

SMALL = "a\nb\nc\n"
S = refs(SMALL)

APPLY = [
    ("replace-one", [{"op": "replace", "pos": S[2], "lines": ["B"]}], "a\nB\nc\n"),
    ("replace-range", [{"op": "replace", "pos": S[1], "end": S[2], "lines": "x\ny\nz"}],
     "x\ny\nz\nc\n"),
    ("replace-end-none", [{"op": "replace", "pos": S[3], "end": None, "lines": ("C",)}],
     "a\nb\nC\n"),
    ("delete", [{"op": "replace", "pos": S[1], "end": S[2], "lines": []}], "c\n"),
    ("append-after", [{"op": "append", "pos": S[1], "lines": "a2"}], "a\na2\nb\nc\n"),
    ("append-at-end", [{"op": "append", "lines": ["d", "e"]}], "a\nb\nc\nd\ne\n"),
    ("append-pos-none", [{"op": "append", "pos": None, "lines": "d\n"}], "a\nb\nc\nd\n"),
    ("prepend-before", [{"op": "prepend", "pos": S[3], "lines": "b2"}], "a\nb\nb2\nc\n"),
    ("prepend-at-start", [{"op": "prepend", "lines": ["0"]}], "0\na\nb\nc\n"),
    ("echoed-prefix-stripped", [{"op": "replace", "pos": S[2], "lines": ["2#XH|B"]}], "a\nB\nc\n"),
    ("several-against-one-snapshot", [
        {"op": "replace", "pos": S[1], "lines": ["A1", "A2"]},
        {"op": "replace", "pos": S[3], "lines": ["C"]},
    ], "A1\nA2\nb\nC\n"),
]


@pytest.mark.parametrize("edits,expected", [a[1:] for a in APPLY], ids=[a[0] for a in APPLY])
def test_apply_ops(edits, expected):
    assert hashline.apply(SMALL, edits) == expected


def test_apply_keeps_crlf_and_a_missing_final_newline():
    content = "a\r\nb\r\nc"
    r = refs(content)
    assert hashline.apply(content, [{"op": "replace", "pos": r[2], "lines": ["B"]}]) == "a\r\nB\r\nc"
    assert hashline.apply(content, [{"op": "append", "lines": "d"}]) == "a\r\nb\r\nc\r\nd"


def test_apply_on_non_ascii_content():
    updated = hashline.apply(CONTENT, [{"op": "replace", "pos": R[4], "lines": ["  return '🎉';"]}])
    assert updated == CONTENT.replace("'héllo 🎉'", "'🎉'")


def test_apply_accepts_the_legacy_hash():
    content = "  a b\nc\n"
    legacy = f"1#{hashline.legacy_line_hash(1, '  a b')}"
    assert legacy != refs(content)[1]
    assert hashline.apply(content, [{"op": "replace", "pos": legacy, "lines": ["x"]}]) == "x\nc\n"


def test_apply_refuses_stale_refs_with_remaps():
    changed = SMALL.replace("b", "bee")
    with pytest.raises(coderig.HashlineMismatchError) as raised:
        hashline.apply(changed, [{"op": "replace", "pos": S[2], "lines": ["B"]},
                                 {"op": "append", "pos": S[3], "lines": "d"}])
    assert raised.value.remaps == {S[2]: refs(changed)[2]}
    assert isinstance(raised.value, coderig.EditError)


@pytest.mark.parametrize("edits,error,message", [
    ([{"op": "replace", "pos": S[1], "end": S[2], "lines": ["x"]},
      {"op": "replace", "pos": S[2], "lines": ["y"]}], coderig.InvalidInputError, "overlap"),
    ([{"op": "replace", "pos": S[2], "end": S[1], "lines": ["x"]}], coderig.InvalidInputError,
     "before pos"),
    ([{"op": "replace", "pos": "9#ZZ", "lines": ["x"]}], coderig.InvalidInputError,
     "line 9 does not exist"),
    ([{"op": "replace", "pos": "2 VK", "lines": ["x"]}], coderig.InvalidInputError, "LINE#HH"),
    ([{"op": "replace", "pos": S[2], "lines": ["b"]}], coderig.NoOpError, "unchanged"),
])
def test_apply_refusals(edits, error, message):
    with pytest.raises(error) as raised:
        hashline.apply(SMALL, edits)
    assert message in raised.value.message


# (case id, edits, message, details["path"]): the core's messages, as
# POST /api/hashline/apply answers.
BAD_SHAPES = [
    ("not-a-list", {"op": "append", "lines": "x"}, "`edits`: invalid type: object, expected an array",
     "edits"),
    ("a-str", "append x", '`edits`: invalid type: string "append x", expected an array', "edits"),
    ("item-not-dict", [["replace", S[1], None, ["x"]]], "`edits[0]`: invalid type: array, "
     'expected a hashline edit: {"op", "pos"?, "end"?, "lines"}', "edits[0]"),
    ("missing-op", [{"pos": S[1], "lines": "x"}], "`edits[0]`: missing field `op`", "edits[0]"),
    ("op-not-str", [{"op": 1, "lines": "x"}], "`edits[0].op`: invalid type: integer `1`, expected "
     "a hashline op, one of: replace, append, prepend", "edits[0].op"),
    ("unknown-op", [{"op": "insert", "lines": "x"}], '`edits[0].op`: unknown hashline op "insert"; '
     "expected one of: replace, append, prepend", "edits[0].op"),
    ("missing-lines", [{"op": "append"}], "`edits[0]`: missing field `lines`", "edits[0]"),
    ("lines-int", [{"op": "append", "lines": 3}], "`edits[0].lines`: invalid type: integer `3`, "
     "expected a string or a list of strings", "edits[0].lines"),
    ("lines-item-none", [{"op": "append", "lines": ["a", None]}],
     "`edits[0].lines[1]`: invalid type: null, expected a string", "edits[0].lines[1]"),
    ("pos-int", [{"op": "append", "pos": 2, "lines": "x"}],
     "`edits[0].pos`: invalid type: integer `2`, expected a string", "edits[0].pos"),
    ("replace-without-pos", [{"op": "append", "lines": "x"}, {"op": "replace", "lines": "x"}],
     "`edits[1].pos`: a replace edit needs `pos`, the first line it replaces", "edits[1].pos"),
    ("end-on-append", [{"op": "append", "pos": S[1], "end": S[2], "lines": "x"}],
     "`edits[0].end`: `end` belongs to replace edits only; an append edit inserts at `pos`",
     "edits[0].end"),
    ("unknown-field", [{"op": "append", "line": "x", "lines": "x"}],
     "`edits[0].line`: unknown field `line`, expected one of `op`, `pos`, `end`, `lines`",
     "edits[0].line"),
]


@pytest.mark.parametrize("edits,message,path", [b[1:] for b in BAD_SHAPES],
                         ids=[b[0] for b in BAD_SHAPES])
def test_bad_edit_shapes_name_the_field(edits, message, path):
    with pytest.raises(coderig.InvalidInputError) as raised:
        hashline.apply(SMALL, edits)
    assert raised.value.message == message
    assert raised.value.code == "INVALID_INPUT"
    assert raised.value.details == {"path": path}
