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


@pytest.mark.parametrize("seed,message", [
    (-1, "`seed`: must be an integer from 0 to 4294967295, got -1"),
    (2**32, "`seed`: must be an integer from 0 to 4294967295, got 4294967296"),
    (1.5, "`seed`: must be an integer from 0 to 4294967295, got 1.5"),
    ("1", '`seed`: invalid type: string "1", expected an integer from 0 to 4294967295'),
])
def test_a_bad_seed_gets_the_servers_message(seed, message):
    with pytest.raises(coderig.InvalidInputError) as raised:
        coderig.xxhash32("abc", seed)
    assert raised.value.code == "INVALID_INPUT"
    assert raised.value.message == message
    assert raised.value.details == {"path": "seed"}
    assert isinstance(raised.value, ValueError)
    with pytest.raises(coderig.InvalidInputError):
        coderig.xxhash32(b"abc", seed)  # bytes: the seed is checked all the same


def test_a_huge_seed_is_invalid_input_too():
    with pytest.raises(coderig.InvalidInputError, match="`seed`"):
        coderig.xxhash32("abc", 2**100)


def test_an_integral_float_or_none_seed_is_read_as_the_server_reads_it():
    assert coderig.xxhash32("abc", 7.0) == coderig.xxhash32("abc", 7)
    assert coderig.xxhash32("abc", None) == coderig.xxhash32("abc", 0)


@pytest.mark.parametrize("data", [None, 12, ["a"], bytearray(b"a")])
def test_data_other_than_str_or_bytes_is_invalid_input(data):
    with pytest.raises(coderig.InvalidInputError) as raised:
        coderig.xxhash32(data)
    assert raised.value.details == {"path": "data"}
