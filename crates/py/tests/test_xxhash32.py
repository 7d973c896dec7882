import pytest

import coderig


def test_every_shared_vector_as_str_and_as_bytes(vectors):
    cases = vectors["xxhash32"]
    assert len(cases) >= 40
    for case in cases:
        expected = case["hash"]
        assert coderig.xxhash32(case["input"], case["seed"]) == expected, case
        assert coderig.xxhash32(case["input"].encode("utf-8"), seed=case["seed"]) == expected, case


def test_seed_defaults_to_zero(vectors):
    for case in vectors["xxhash32"]:
        if case["seed"] == 0:
            assert coderig.xxhash32(case["input"]) == case["hash"]


@pytest.mark.parametrize("seed", [-1, 2**32, 2**100])
def test_out_of_range_seed_is_invalid_input(seed):
    with pytest.raises(coderig.InvalidInputError) as raised:
        coderig.xxhash32("abc", seed)
    assert raised.value.code == "INVALID_INPUT"
    assert "seed" in raised.value.message
    assert isinstance(raised.value, ValueError)


@pytest.mark.parametrize("data", [None, 12, ["a"], bytearray(b"a")])
def test_other_data_types_are_type_errors(data):
    with pytest.raises(TypeError):
        coderig.xxhash32(data)


@pytest.mark.parametrize("seed", ["1", 1.0, None])
def test_non_integer_seed_is_a_type_error(seed):
    with pytest.raises(TypeError):
        coderig.xxhash32("abc", seed)
