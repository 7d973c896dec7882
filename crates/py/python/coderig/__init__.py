"""coderig — the engine room of AI coding-agent harnesses.

Everything here is implemented in Rust (the native module ``coderig._native``);
this package only re-exports it with type stubs.
"""

from ._native import (
    AmbiguousError,
    Applied,
    EditError,
    EditIOError,
    GuardError,
    HashlineMismatchError,
    InvalidInputError,
    Match,
    NoOpError,
    NotFoundError,
    Violation,
    __version__,
    apply_edit,
    apply_edits,
    check_guards,
    edit_file,
    edits_file,
    hashline_edit_file,
    locate,
    xxhash32,
)
from . import arena, flow, hashline

__all__ = [
    "AmbiguousError",
    "Applied",
    "EditError",
    "EditIOError",
    "GuardError",
    "HashlineMismatchError",
    "InvalidInputError",
    "Match",
    "NoOpError",
    "NotFoundError",
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
    "xxhash32",
]

