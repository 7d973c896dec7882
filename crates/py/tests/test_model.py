"""coderig.model: the core's model decisions through the binding (the
shared vectors of tests/vectors/model.json run in test_vectors.py)."""

import pytest

import coderig
from coderig import model


def test_match_model_takes_any_iterable_and_refuses_a_bare_string():
    served = ("openai/gpt-4o", "azure/gpt-4o", "gpt-4o-mini")
    assert model.match_model("GPT-4o", served) == "azure/gpt-4o"
    assert model.match_model("gpt-4o", iter(served), providers={"openai"}) == "openai/gpt-4o"
    assert model.match_model("gpt-4", served) is None
    with pytest.raises(TypeError):
        model.match_model("gpt-4o", "openai/gpt-4o")
    with pytest.raises(TypeError):
        model.match_model("gpt-4o", served, providers="openai")


def test_normalize_model():
    assert model.normalize_model(" Claude-Sonnet-4-5 ") == "claude-sonnet-4.5"
    assert model.normalize_model("claude-opus-4-20250514") == "claude-opus-4-20250514"


def test_classify_and_explain_error():
    assert model.classify_error() == "fatal"
    assert model.classify_error(http_status=503) == "retry"
    assert model.classify_error(name="RateLimitError") == "retry"
    assert model.explain_error(message="HTTP 503") == {
        "class": "retry", "evidence": "message", "rule": "503"}
    assert model.explain_error(http_status=404) == {
        "class": "fallback", "evidence": "status", "rule": "status 404"}
    with pytest.raises(OverflowError):
        model.classify_error(http_status=70000)


def test_parse_retry_after():
    assert model.parse_retry_after("1.5") == 1.5
    assert model.parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT") == 0.0
    assert model.parse_retry_after("soon") is None


def test_fallback_chain():
    chain = model.FallbackChain(["openai/gpt-5 high", "qwen3-coder", "openai/gpt-5"])
    assert chain.entries == ["openai/gpt-5(high)", "qwen3-coder", "openai/gpt-5"]
    assert len(chain) == 3
    assert [chain.next(0, c) for c in ("retry", "fallback", "stop", "fatal")] == [0, 1, None, None]
    assert chain.next(2, "fallback") is None
    assert chain.most_specific("openai/gpt-5-mini") == 0
    assert chain.most_specific("openai/gpt-50") is None
    assert repr(chain) == 'FallbackChain(["openai/gpt-5(high)", "qwen3-coder", "openai/gpt-5"])'
    with pytest.raises(coderig.InvalidInputError) as raised:
        chain.next(0, "next")
    assert raised.value.details == {"what": "error class", "given": "next"}
    with pytest.raises(coderig.InvalidInputError) as raised:
        model.FallbackChain(["a", "b(", "c"])
    assert raised.value.details == {"index": 1, "entry": "b(", "reason": "unclosed_variant"}
