"""coderig — the engine room of AI coding-agent harnesses.

Everything here is implemented in Rust (the native module ``coderig._native``);
this package only re-exports it with type stubs.
"""

from ._native import (
    AmbiguousError,
    EditError,
    EditIOError,
    GuardError,
    HashlineMismatchError,
    InvalidInputError,
    NoOpError,
    NotFoundError,
    Violation,
    __version__,
    xxhash32,
)

__all__ = [
    "AmbiguousError",
    "EditError",
    "EditIOError",
    "GuardError",
    "HashlineMismatchError",
    "InvalidInputError",
    "NoOpError",
    "NotFoundError",
    "Violation",
    "__version__",
    "xxhash32",
]

from . import arena  # noqa: E402  (submodule: `coderig.arena`)
from . import flow  # noqa: E402  (submodule: `coderig.flow`)
