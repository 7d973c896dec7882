"""coderig — the engine room of AI coding-agent harnesses.

Everything here is implemented in Rust (the native module ``coderig._native``);
this package only re-exports it with type stubs.

Errors: every error is a ``coderig.Error`` with ``.kind``, ``.code``,
``.message`` and ``.details`` (the core's details, as HTTP sends them); one
subclass per kind (``coderig.names()["error_kind"]``). The edit refusals and
``InvalidInputError`` also derive from ``EditError``; ``InvalidInputError``
is also a ``ValueError`` and ``IoError`` an ``OSError``.

Agents: ``coderig.Rig(config=... | agents=...)`` holds the agents of a rig;
``rig.run_turn(identity, model, prompt, ...)`` starts a ``Turn`` whose
``events()`` is both an iterator and an async iterator of event dicts, and
whose ``wait()`` / ``await wait_async()`` return the outcome dict.

Battles: ``rig.start_battle(battle_type=..., prompt=..., project=...,
contestants=[...], judge=..., oracle=...)`` starts a ``Battle`` on the rig's
store (``db=`` / ``data_dir=``, default ``./.coderig``); ``wait()`` returns
its view dict, ``events()`` iterates its events (sync and async);
``rig.leaderboard()`` rates the contestants.

Flow runs: ``rig.run_flow(spec, input={...}, code={step_id: callable})``
starts a ``Run`` of a runtime flow spec (a dict, YAML/JSON text or a file)
on the same store; ``wait()`` / ``await wait_async()`` return its view dict,
``events()`` iterates its events (sync and async), ``approve(step)`` and
``reject(step)`` decide its approval steps, ``cancel()`` ends it. Code steps
are Python callables, sync or ``async def``.
"""

from ._native import (
    AgentError,
    AmbiguousError,
    Applied,
    Battle,
    BattleEvents,
    ConflictError,
    EditError,
    Error,
    GuardError,
    HashlineMismatchError,
    InternalError,
    InvalidInputError,
    IoError,
    Match,
    NoOpError,
    NotFoundError,
    NotFoundIdError,
    Rig,
    Run,
    RunEvents,
    Turn,
    TurnEvents,
    UnavailableError,
    Violation,
    __version__,
    apply_edit,
    apply_edits,
    check_guards,
    edit_file,
    edits_file,
    hashline_edit_file,
    locate,
    names,
    xxhash32,
)
from . import arena, flow, hashline, model

EditIOError = IoError
"""Former name of ``IoError`` (kept so that old ``except`` clauses still work)."""

__all__ = [
    "AgentError",
    "AmbiguousError",
    "Applied",
    "Battle",
    "BattleEvents",
    "ConflictError",
    "EditError",
    "EditIOError",
    "Error",
    "GuardError",
    "HashlineMismatchError",
    "InternalError",
    "InvalidInputError",
    "IoError",
    "Match",
    "NoOpError",
    "NotFoundError",
    "NotFoundIdError",
    "Rig",
    "Run",
    "RunEvents",
    "Turn",
    "TurnEvents",
    "UnavailableError",
    "Violation",
    "__version__",
    "apply_edit",
    "apply_edits",
    "arena",
    "check_guards",
    "edit_file",
    "edits_file",
    "flow",
    "hashline",
    "hashline_edit_file",
    "locate",
    "model",
    "names",
    "xxhash32",
]
