"""Every shared vector of tests/vectors/hashline.json, through the Python binding."""

import coderig
from coderig import hashline


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
