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


@pytest.mark.parametrize("module_name", ["coderig", "coderig.arena", "coderig.flow", "coderig.hashline", "coderig.model"])
def test_stub_all_matches_the_runtime_all(module_name):
    module = importlib.import_module(module_name)
    assert _stub_all(module_name) == module.__all__
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []


def test_xxhash32_signature_says_seed_defaults_to_zero():
    seed = inspect.signature(coderig.xxhash32).parameters["seed"]
    assert seed.default == 0
    assert coderig.xxhash32("abc") == coderig.xxhash32("abc", 0) == coderig.xxhash32("abc", seed=0)


def _snake(alias: str) -> str:
    """`_StepOutcome` -> `step_outcome`."""
    name = alias.lstrip("_")
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def _stub_literals() -> dict:
    """{names() key: (stub file, [names])} of every module-level `_Alias = Literal[...]`."""
    found = {}
    for stub in sorted(PACKAGE_DIR.glob("*.pyi")):
        for node in ast.parse(stub.read_text(encoding="utf-8")).body:
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Subscript)):
                continue
            if not (isinstance(node.value.value, ast.Name) and node.value.value.id == "Literal"):
                continue
            (target,) = node.targets
            values = node.value.slice
            items = values.elts if isinstance(values, ast.Tuple) else [values]
            found.setdefault(_snake(target.id), []).append(
                (stub.name, [ast.literal_eval(item) for item in items]))
    return found


def test_every_literal_of_the_stubs_is_the_cores_list():
    names = coderig.names()
    literals = _stub_literals()
    assert sorted(literals) == sorted(names), "a stub alias per list of names, no other"
    mismatches = [
        (key, stub, values, names[key])
        for key, in_stubs in literals.items()
        for stub, values in in_stubs
        if values != names[key]
    ]
    assert mismatches == []


def test_a_union_of_names_is_an_alias_of_its_list():
    """A union of names is written once, as a module-level alias of its names() list
    (checked above); annotations use the alias. A one-name Literal is a union's tag."""
    inline = []
    for stub in sorted(PACKAGE_DIR.glob("*.pyi")):
        tree = ast.parse(stub.read_text(encoding="utf-8"))
        aliases = {id(node.value) for node in tree.body if isinstance(node, ast.Assign)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
                    and node.value.id == "Literal" and id(node) not in aliases):
                continue
            items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            if len(items) > 1:
                inline.append(f"{stub.name}:{node.lineno}: {ast.unparse(node)}")
    assert inline == [], "use the alias of the list"


def test_names_is_a_fresh_dict_of_lists():
    names = coderig.names()
    names["tier"].append("x")
    assert "x" not in coderig.names()["tier"]
    assert all(isinstance(v, list) and v for v in names.values())
