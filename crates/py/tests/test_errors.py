import pickle

import pytest

import coderig

CODES = {
    coderig.NotFoundError: "NOT_FOUND",
    coderig.AmbiguousError: "AMBIGUOUS",
    coderig.GuardError: "GUARD",
    coderig.NoOpError: "NO_OP",
    coderig.HashlineMismatchError: "HASHLINE_MISMATCH",
    coderig.InvalidInputError: "INVALID_INPUT",
    coderig.EditIOError: "IO",
}


@pytest.mark.parametrize("cls,code", CODES.items())
def test_every_class_is_an_edit_error_with_its_code(cls, code):
    assert issubclass(cls, coderig.EditError)
    assert issubclass(cls, Exception)
    assert cls.code == code
    error = cls("what to do next")
    assert error.code == code
    assert error.message == "what to do next"
    assert str(error) == "what to do next"
    assert cls.__module__ == "coderig"


def test_codes_are_distinct():
    assert len(set(CODES.values())) == len(CODES)


def test_python_bases():
    assert issubclass(coderig.InvalidInputError, ValueError)
    assert issubclass(coderig.EditIOError, OSError)
    assert not issubclass(coderig.NotFoundError, ValueError)


def test_details_have_defaults_and_keywords():
    assert coderig.NotFoundError("m").nearest is None
    assert coderig.NotFoundError("m", nearest=(1, 2, 0.5)).nearest == (1, 2, 0.5)
    ambiguous = coderig.AmbiguousError("m", count=2, lines=[(1, 1), (4, 4)])
    assert (ambiguous.count, ambiguous.lines) == (2, [(1, 1), (4, 4)])
    guard = coderig.GuardError("m", violations=[coderig.Violation("truncation", "lost 80%")])
    assert guard.violations[0].kind == "truncation"
    assert coderig.HashlineMismatchError("m", remaps={"1#ZZ": "1#VK"}).remaps == {"1#ZZ": "1#VK"}
    assert coderig.HashlineMismatchError("m").remaps == {}


def test_catching_the_base_catches_a_raised_refusal():
    with pytest.raises(coderig.EditError) as raised:
        coderig.xxhash32("x", -5)
    assert type(raised.value) is coderig.InvalidInputError


def test_violation_pickles_by_its_public_name():
    violation = coderig.Violation("marker_leak", "placeholder")
    assert pickle.loads(pickle.dumps(violation)) == violation


def test_version_is_exported():
    assert isinstance(coderig.__version__, str) and coderig.__version__
