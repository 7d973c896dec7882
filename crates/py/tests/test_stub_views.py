"""The stubs' types of what Rig, Battle, Run and Turn return are the core's views,
field by field.

tests/schemas/views.json is the core's JSON Schemas of those values (coderig::json::views,
kept equal to the Rust types by the core's test face_views). Each TypedDict below stands
for one schema: it has exactly the schema's fields; a field the core always writes is
required (NotRequired otherwise); a field that may be null is Optional; and each field's
type is the schema's — str, int, float, bool, a list of the item's type, a dict for any
JSON object, the TypedDict of a referenced schema, or the alias of the names() list that
a string enumeration is. A schema with a `type` discriminator (the agent's events) is a
Union alias of one TypedDict per variant, each with `type: Literal[...]`.

What the runtime calls take is held to tests/schemas/inputs.json (coderig::json::inputs,
what the core's decoders accept) by name: the battle spec's and the agent table's
TypedDicts have exactly the core's keys, and the keyword arguments of Rig(), the list
calls, agents, run_turn, approve and reject are exactly their inputs' fields.
"""

import ast
import json
from pathlib import Path

import pytest

import coderig

PACKAGE_DIR = Path(coderig.__file__).parent
ROOT = next(p for p in Path(__file__).resolve().parents if (p / "tests" / "schemas").is_dir())
SCHEMAS = json.loads((ROOT / "tests" / "schemas" / "views.json").read_text("utf-8"))
INPUTS = json.loads((ROOT / "tests" / "schemas" / "inputs.json").read_text("utf-8"))

# The stub type of each of the core's schemas (the stub names are private to the stubs).
STUB_OF = {
    "AgentErrorDetails": "_AgentErrorDetails",
    "AgentEvent": "_AgentEvent",
    "AgentInfo": "_AgentInfo",
    "AgentView": "_AgentRef",
    "Applied": "_BattleApplied",
    "ApprovalRecord": "_ApprovalRecord",
    "AttemptRecord": "_AttemptRecord",
    "BaseRun": "_BaseRun",
    "BattleEvent": "_BattleEvent",
    "BattlePage": "_BattlePage",
    "BattleView": "_BattleView",
    "CallsRead": "_CallsRead",
    "CodeContext": "_CodeContext",
    "CommandEvidence": "_CommandEvidence",
    "ContestantInfo": "_ContestantInfo",
    "ContestantView": "_ContestantView",
    "CrossExamView": "_CrossExamView",
    "Evidence": "_Evidence",
    "Leaderboard": "_Leaderboard",
    "LeaderboardEntry": "_LeaderboardEntry",
    "ResourceLimits": "_SandboxLimits",
    "RunEvent": "_RunEvent",
    "RunPage": "_RunPage",
    "RunSummary": "_RunSummary",
    "RunView": "_RunView",
    "SandboxReport": "_SandboxReport",
    "StepState": "_StepState",
    "StepView": "_StepView",
    "SwitchRecord": "_SwitchRecord",
    "TurnOutcome": "_TurnOutcome",
    "Usage": "_Usage",
}


# The payloads of the stored events: each stands in its event union's variant (with
# type, seq and epoch), checked there.
IN_EVENTS = {"BattleStarted", "ContestantUpdated", "BattleUpdated", "RunUpdated", "StepUpdated", "TaskRescued"}


def _name(ref: str) -> str:
    return ref.rsplit("/", 1)[1]


def _is_enum(schema: dict) -> bool:
    return "enum" in schema and schema.get("type") == "string"


def _is_object(schema: dict) -> bool:
    return "properties" in schema or "oneOf" in schema and "type" not in schema


# --- the stubs, read as data ----------------------------------------------------------


def _stubs():
    """(aliases, typed_dicts) of every stub: {name: annotation node}, {name: {field:
    (annotation node, required)}}."""
    aliases, typed = {}, {}
    for stub in sorted(PACKAGE_DIR.glob("*.pyi")):
        for node in ast.parse(stub.read_text(encoding="utf-8")).body:
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                    and isinstance(node.value.func, ast.Name) and node.value.func.id == "TypedDict"):
                # X = TypedDict("X", {"class": ..., ...}): a field that is a keyword.
                fields = {}
                for key, ann in zip(node.value.args[1].keys, node.value.args[1].values):
                    required = True
                    if isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id == "NotRequired":
                        ann, required = ann.slice, False
                    fields[key.value] = (ann, required)
                typed[node.targets[0].id] = fields
            elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                aliases[node.targets[0].id] = node.value
            elif isinstance(node, ast.ClassDef) and any(
                isinstance(b, ast.Name) and b.id == "TypedDict" for b in node.bases
            ):
                total = all(
                    not (k.arg == "total" and isinstance(k.value, ast.Constant) and k.value.value is False)
                    for k in node.keywords
                )
                fields = {}
                for item in node.body:
                    if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                        ann, required = item.annotation, total
                        if isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name):
                            if ann.value.id == "NotRequired":
                                ann, required = ann.slice, False
                            elif ann.value.id == "Required":
                                ann, required = ann.slice, True
                        fields[item.target.id] = (ann, required)
                typed[node.name] = fields
    return aliases, typed


ALIASES, TYPED = _stubs()


def _literals(node) -> list:
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return [ast.literal_eval(i) for i in items]


def _stub_form(node) -> tuple:
    """An annotation as a comparable form: ("str",), ("optional", form), ("list", form),
    ("dict",), ("any",), ("typed", name), ("names", [values]), ("literal", [values])."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a forward reference
        return _stub_form(ast.parse(node.value, mode="eval").body)
    if isinstance(node, ast.Name):
        name = node.id
        if name in ("str", "int", "float", "bool"):
            return (name,)
        if name == "Any":
            return ("any",)
        if name in ("dict", "Dict", "Mapping"):
            return ("dict",)
        if name in TYPED:
            return ("typed", name)
        if name in ALIASES:
            alias = ALIASES[name]
            if isinstance(alias, ast.Subscript) and isinstance(alias.value, ast.Name) and alias.value.id == "Literal":
                return ("names", _literals(alias))
            return _stub_form(alias)
        raise AssertionError(f"unknown name {name!r} in a stub annotation")
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
        outer = node.value.id
        if outer == "Optional":
            return ("optional", _stub_form(node.slice))
        if outer in ("List", "list", "Sequence"):
            return ("list", _stub_form(node.slice))
        if outer in ("Dict", "dict", "Mapping"):
            return ("dict",)
        if outer == "Literal":
            return ("literal", _literals(node))
        if outer == "Union":
            members = [_stub_form(m) for m in node.slice.elts]
            if ("none",) in members:
                rest = [m for m in members if m != ("none",)]
                return ("optional", rest[0] if len(rest) == 1 else ("union", rest))
            return ("union", members)
    if isinstance(node, ast.Constant) and node.value is None:
        return ("none",)
    raise AssertionError(f"cannot read the stub annotation {ast.unparse(node)}")


# --- the schemas, in the same form ----------------------------------------------------


def _schema_form(schema: dict) -> tuple:
    if "$ref" in schema:
        name = _name(schema["$ref"])
        target = SCHEMAS[name]
        if _is_enum(target):
            return ("names", target["enum"])
        if _is_object(target):
            return ("typed", STUB_OF.get(name, f"<no stub type for {name}>"))
        return _schema_form(target)
    if "oneOf" in schema:
        options = [o for o in schema["oneOf"] if o.get("type") != "null"]
        inner = _schema_form(options[0]) if len(options) == 1 else ("union", [_schema_form(o) for o in options])
        return ("optional", inner) if len(options) < len(schema["oneOf"]) else inner
    kind = schema.get("type")
    if isinstance(kind, list):
        rest = [k for k in kind if k != "null"]
        inner = _schema_form({**schema, "type": rest[0]})
        return ("optional", inner) if "null" in kind else inner
    if "enum" in schema:
        return ("literal", schema["enum"])
    if kind == "string":
        return ("str",)
    if kind == "integer":
        return ("int",)
    if kind == "number":
        return ("float",)
    if kind == "boolean":
        return ("bool",)
    if kind == "array":
        return ("list", _schema_form(schema["items"]))
    if kind == "object" and "properties" not in schema:
        return ("dict",)
    if kind is None:
        return ("any",)
    raise AssertionError(f"cannot read the schema {schema}")


def _agree(schema_form: tuple, stub_form: tuple) -> bool:
    if schema_form == stub_form:
        return True
    # Any JSON value: Any, or a dict where the core says an object.
    if schema_form == ("any",):
        return stub_form in (("any",), ("optional", ("any",)))
    if stub_form == ("any",):
        return False
    if schema_form[0] == stub_form[0] in ("optional", "list"):
        return _agree(schema_form[1], stub_form[1])
    return False


def _fields(schema: dict) -> dict:
    """{field: (schema, required)} of an object schema (allOf parts merged)."""
    out = {}
    for part in schema.get("allOf", []):
        target = SCHEMAS[_name(part["$ref"])] if "$ref" in part else part
        out.update(_fields(target))
    required = set(schema.get("required", []))
    for name, prop in schema.get("properties", {}).items():
        out[name] = (prop, name in required)
    return out


def _compare(where: str, schema: dict, stub_fields: dict) -> list:
    problems = []
    fields = _fields(schema)
    for name in sorted(set(fields) | set(stub_fields)):
        if name not in stub_fields:
            problems.append(f"{where}.{name}: in the core's schema, not in the stub")
            continue
        if name not in fields:
            problems.append(f"{where}.{name}: in the stub, not in the core's schema")
            continue
        prop, required = fields[name]
        ann, stub_required = stub_fields[name]
        if required != stub_required:
            problems.append(
                f"{where}.{name}: the core {'always writes it' if required else 'leaves it out when unset'}; "
                f"the stub has it {'required' if stub_required else 'NotRequired'}")
        want, got = _schema_form(prop), _stub_form(ann)
        if not _agree(want, got):
            problems.append(f"{where}.{name}: the core's type is {want}, the stub's {ast.unparse(ann)} = {got}")
    return problems


# --- the tests ------------------------------------------------------------------------


def test_every_view_schema_has_its_stub_type():
    objects = sorted(n for n, s in SCHEMAS.items() if _is_object(s) and n not in IN_EVENTS)
    assert sorted(STUB_OF) == objects, "a stub type per schema of the core's views, no other"
    missing = [stub for stub in STUB_OF.values() if stub not in TYPED and stub not in ALIASES]
    assert missing == []


def test_every_enumeration_of_the_views_is_a_list_of_names():
    lists = coderig.names()
    for name, schema in SCHEMAS.items():
        if _is_enum(schema):
            assert schema["enum"] in lists.values(), f"{name}: {schema['enum']} is no list of names()"


@pytest.mark.parametrize("schema_name", sorted(n for n, s in SCHEMAS.items() if "properties" in s and n not in IN_EVENTS))
def test_a_typed_dict_is_its_schema_field_by_field(schema_name):
    stub = STUB_OF[schema_name]
    assert stub in TYPED, f"{stub} is not a TypedDict"
    assert _compare(stub, SCHEMAS[schema_name], TYPED[stub]) == []


@pytest.mark.parametrize("schema_name", sorted(n for n, s in SCHEMAS.items() if "oneOf" in s and "type" not in s))
def test_a_tagged_union_is_one_typed_dict_per_variant(schema_name):
    alias = ALIASES[STUB_OF[schema_name]]
    assert isinstance(alias, ast.Subscript) and alias.value.id == "Union", f"{STUB_OF[schema_name]} is no Union"
    members = [m.id for m in alias.slice.elts]
    problems = []
    variants = SCHEMAS[schema_name]["oneOf"]
    assert len(members) == len(variants), f"{members} against {len(variants)} variants"
    for member, variant in zip(members, variants):
        fields = _fields(variant)
        tag = fields["type"][0]["enum"]
        stub_tag = _stub_form(TYPED[member]["type"][0])
        if stub_tag != ("literal", tag):
            problems.append(f"{member}.type: {stub_tag}, the core's {tag}")
        rest = {k: v for k, v in TYPED[member].items() if k != "type"}
        schema = {"properties": {k: v[0] for k, v in fields.items() if k != "type"},
                  "required": [k for k, v in fields.items() if v[1] and k != "type"]}
        problems += _compare(member, schema, rest)
    assert problems == []


# --- what the calls take --------------------------------------------------------------


def _input_keys(schema: dict) -> dict:
    """{key: required} of an input schema: its object parts merged, and for a union of
    variants (a battle spec's types) every variant's keys, required when every variant
    requires it."""
    if "oneOf" in schema:
        variants = [_input_keys(v) for v in schema["oneOf"]]
        keys = set().union(*variants)
        return {k: all(v.get(k, False) for v in variants) for k in keys}
    out = {}
    for part in schema.get("allOf", []):
        out.update(_input_keys(part))
    required = set(schema.get("required", []))
    out.update({k: k in required for k in schema.get("properties", {})})
    return out


@pytest.mark.parametrize("schema_name, stub", [
    ("BattleSpec", "_BattleSpec"), ("ContestantSpec", "_ContestantSpec"), ("OracleSpec", "_Oracle"),
    ("AgentSpec", "_AgentSpec"),
])
def test_a_spec_typed_dict_has_the_decoders_keys(schema_name, stub):
    keys = _input_keys(INPUTS[schema_name])
    assert sorted(TYPED[stub]) == sorted(keys), f"{stub} against the core's {schema_name}"
    if schema_name == "ContestantSpec":
        assert {k: r for k, (_, r) in TYPED[stub].items()} == keys


def _method(cls: str, name: str) -> ast.FunctionDef:
    stub = (PACKAGE_DIR / "__init__.pyi").read_text(encoding="utf-8")
    found = next(n for n in ast.parse(stub).body if isinstance(n, ast.ClassDef) and n.name == cls)
    return next(n for n in found.body if isinstance(n, ast.FunctionDef) and n.name == name)


# Each call whose keyword arguments are one input of the core: (class, method, the
# arguments that are not the input's, the input).
KEYWORD_INPUTS = [
    ("Rig", "__init__", set(), "RigOptions"),
    ("Rig", "battles", set(), "BattleFilter"),
    ("Rig", "runs", set(), "RunFilter"),
    ("Rig", "agents", set(), "AgentsOptions"),
    ("Rig", "leaderboard", set(), "LeaderboardFilter"),
    ("Rig", "run_turn", {"identity", "model", "prompt"}, "TurnOptions"),
    ("Run", "approve", {"step"}, "Decision"),
    ("Run", "reject", {"step"}, "Decision"),
]


@pytest.mark.parametrize("cls, method, own, schema_name", KEYWORD_INPUTS)
def test_a_call_takes_its_inputs_fields(cls, method, own, schema_name):
    args = {a.arg for a in _method(cls, method).args.args} - {"self"}
    assert own <= args
    assert sorted(args - own) == sorted(INPUTS[schema_name]["properties"])
    assert callable(getattr(getattr(coderig, cls), method))

