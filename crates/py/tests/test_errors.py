"""One error taxonomy: a coderig.Error subclass per kind of the core's
coderig::ErrorKind, carrying the core's kind, code, message and details."""

import pickle

import pytest

import coderig
from coderig import arena, flow

KINDS = coderig.names()["error_kind"]
CODES = coderig.names()["error_code"]
EDIT_KINDS = {"not_found", "ambiguous", "guard", "no_op", "hashline_mismatch", "invalid_input"}


def class_of(kind):
    return getattr(coderig, "".join(w.capitalize() for w in kind.split("_")) + "Error")


@pytest.mark.parametrize("kind,code", list(zip(KINDS, CODES)), ids=KINDS)
def test_every_kind_has_one_class_with_its_code(kind, code):
    cls = class_of(kind)
    assert issubclass(cls, coderig.Error) and issubclass(cls, Exception)
    assert (cls.kind, cls.code) == (kind, code)
    assert issubclass(cls, coderig.EditError) is (kind in EDIT_KINDS)
    assert issubclass(cls, ValueError) is (kind == "invalid_input")
    assert issubclass(cls, OSError) is (kind == "io")
    error = cls("what to do next")
    assert (error.kind, error.code, error.message, str(error)) == (
        kind, code, "what to do next", "what to do next")
    assert error.details == {}
    assert cls.__module__ == "coderig" and cls.__name__ in coderig.__all__


def test_the_class_names_and_the_former_io_name():
    assert [class_of(kind).__name__ for kind in KINDS] == [
        "NotFoundError", "AmbiguousError", "GuardError", "NoOpError", "HashlineMismatchError",
        "InvalidInputError", "ConflictError", "NotFoundIdError", "UnavailableError", "AgentError",
        "IoError", "InternalError",
    ]
    assert coderig.EditIOError is coderig.IoError
    assert issubclass(coderig.EditError, coderig.Error)
    assert not issubclass(coderig.NotFoundError, ValueError)


def test_details_have_defaults_and_keywords():
    assert coderig.NotFoundError("m").nearest is None
    assert coderig.NotFoundError("m", nearest=(1, 2, 0.5)).nearest == (1, 2, 0.5)
    ambiguous = coderig.AmbiguousError("m", count=2, lines=[(1, 1), (4, 4)])
    assert (ambiguous.count, ambiguous.lines) == (2, [(1, 1), (4, 4)])
    assert (coderig.AmbiguousError("m").count, coderig.AmbiguousError("m").lines) == (0, [])
    guard = coderig.GuardError("m", violations=[coderig.Violation("truncation", "lost 80%")])
    assert guard.violations[0].kind == "truncation"
    assert coderig.HashlineMismatchError("m", remaps={"1#ZZ": "1#VK"}).remaps == {"1#ZZ": "1#VK"}
    first, second = coderig.HashlineMismatchError("m"), coderig.HashlineMismatchError("m")
    first.remaps["x"] = "y"
    assert second.remaps == {}  # defaults are not shared
    assert coderig.ConflictError("m", details={"reason": "r"}).details == {"reason": "r"}


def raised(call):
    with pytest.raises(coderig.Error) as info:
        call()
    return info.value


def test_raised_edit_errors_carry_the_cores_details_and_the_python_attributes():
    content = "alpha beta gamma\nsecond line of text here\nthird\n"
    e = raised(lambda: coderig.apply_edit(content, "second line of txet hree", "x"))
    first, last, score = e.nearest
    assert type(e) is coderig.NotFoundError and (first, last) == (2, 2)
    assert e.details == {"nearest": {"first_line": 2, "last_line": 2, "score": score}}

    e = raised(lambda: coderig.apply_edit("x = 1\ny\nx = 1\n", "x = 1", "x = 2"))
    assert type(e) is coderig.AmbiguousError
    assert e.details == {"count": 2, "lines": [[1, 1], [3, 3]]}
    assert (e.count, e.lines) == (2, [(1, 1), (3, 3)])

    original = "import os\nimport sys\n\nprint(os, sys)\n"
    e = raised(lambda: coderig.apply_edit(original, "import sys\n", "", path="m.py"))
    assert type(e) is coderig.GuardError
    assert [v["kind"] for v in e.details["violations"]] == ["dropped_imports"]
    assert e.violations == [coderig.Violation(**v) for v in e.details["violations"]]

    e = raised(lambda: coderig.hashline.validate("a\n", ["1#ZZ"]))
    assert type(e) is coderig.HashlineMismatchError
    assert e.details == {"remaps": e.remaps} and list(e.remaps) == ["1#ZZ"]

    e = raised(lambda: coderig.apply_edit("a\n", "a", "a"))
    assert type(e) is coderig.NoOpError and e.details == {}


def test_flow_arena_and_name_errors_come_from_the_same_mapping():
    s = flow.Scheduler(flow.Flow([flow.Step("a")]))
    e = raised(lambda: s.complete("a"))
    assert type(e) is coderig.ConflictError and not isinstance(e, coderig.EditError)
    assert (e.code, e.details, e.reason) == ("CONFLICT", {"reason": "not_started"}, "not_started")

    e = raised(lambda: arena.contestant_dir("", "!!"))
    assert type(e) is coderig.InvalidInputError and e.details == {}

    e = raised(lambda: arena.classify_lane("chess", "a", "m", []))
    assert type(e) is coderig.InvalidInputError
    assert e.message == 'unknown battle type "chess"; expected one of: qa, coding'
    assert e.details == {"what": "battle type", "given": "chess"}
    assert (e.what, e.given) == ("battle type", "chess")


def test_catching_the_base_catches_every_kind():
    for call in (lambda: coderig.xxhash32("x", -5),
                 lambda: flow.Scheduler(flow.Flow([flow.Step("a")])).outcome("zz")):
        with pytest.raises(coderig.Error) as info:
            call()
        assert type(info.value) in (coderig.InvalidInputError, coderig.NotFoundIdError)


def test_raised_errors_pickle_with_their_details():
    e = raised(lambda: coderig.apply_edit("x = 1\ny\nx = 1\n", "x = 1", "x = 2"))
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is coderig.AmbiguousError
    assert (back.message, back.details, back.lines) == (e.message, e.details, e.lines)
    io = pickle.loads(pickle.dumps(coderig.IoError("disk full")))
    assert type(io) is coderig.IoError and io.message == "disk full"


def test_violation_pickles_by_its_public_name():
    violation = coderig.Violation("marker_leak", "placeholder")
    assert pickle.loads(pickle.dumps(violation)) == violation


def test_version_is_exported():
    assert isinstance(coderig.__version__, str) and coderig.__version__
