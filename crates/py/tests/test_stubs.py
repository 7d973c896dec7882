"""The type stubs describe the runtime: same public names, same defaults."""

import ast
import importlib
import inspect
from pathlib import Path

import pytest

import coderig

PACKAGE_DIR = Path(coderig.__file__).parent


def _stub_all(module_name: str) -> list:
    stub = PACKAGE_DIR / (module_name.rpartition(".")[2] + ".pyi")
    if module_name == "coderig":
        stub = PACKAGE_DIR / "__init__.pyi"
    for node in ast.parse(stub.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["__all__"]:
            return ast.literal_eval(node.value)
    raise AssertionError(f"{stub.name} has no __all__")


@pytest.mark.parametrize("module_name", ["coderig", "coderig.arena", "coderig.flow", "coderig.hashline"])
def test_stub_all_matches_the_runtime_all(module_name):
    module = importlib.import_module(module_name)
    assert _stub_all(module_name) == module.__all__
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []


def test_xxhash32_signature_says_seed_defaults_to_zero():
    seed = inspect.signature(coderig.xxhash32).parameters["seed"]
    assert seed.default == 0
    assert coderig.xxhash32("abc") == coderig.xxhash32("abc", 0) == coderig.xxhash32("abc", seed=0)
