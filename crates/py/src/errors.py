"""Exception classes of coderig.

Compiled into the native module ``coderig._native`` (see ``errors.rs``) so
that the Rust side raises exactly these classes; ``coderig`` re-exports them.
Every class has a stable ``code``.
"""

from collections import namedtuple

Violation = namedtuple("Violation", ["kind", "message"])
Violation.__doc__ = (
    "One guard violation: kind is 'truncation', 'dropped_imports', "
    "'marker_leak' or 'conflict_marker'; message is written for a model."
)


class EditError(Exception):
    """Base class: an edit (or edit request) was refused. ``.message`` is
    written for a model to act on; ``.code`` is stable."""

    code = "EDIT_ERROR"

    def __init__(self, message=""):
        super().__init__(message)
        self.message = message


class NotFoundError(EditError):
    """The text to replace was not found at any tier. ``.nearest`` is
    ``(first_line, last_line, score)`` of the closest window, or None."""

    code = "NOT_FOUND"

    def __init__(self, message="", nearest=None):
        super().__init__(message)
        self.nearest = nearest


class AmbiguousError(EditError):
    """Two or more locations qualified. ``.count`` candidates at
    ``.lines``, a list of 1-based inclusive ``(first_line, last_line)``."""

    code = "AMBIGUOUS"

    def __init__(self, message="", count=0, lines=()):
        super().__init__(message)
        self.count = count
        self.lines = list(lines)


class GuardError(EditError):
    """The result tripped guards; ``.violations`` is a list of Violation."""

    code = "GUARD"

    def __init__(self, message="", violations=()):
        super().__init__(message)
        self.violations = list(violations)


class NoOpError(EditError):
    """The edit would leave the content unchanged."""

    code = "NO_OP"


class HashlineMismatchError(EditError):
    """Hashline references are stale; ``.remaps`` maps each stale ref
    (``"12#VK"``) to the fresh one."""

    code = "HASHLINE_MISMATCH"

    def __init__(self, message="", remaps=None):
        super().__init__(message)
        self.remaps = dict(remaps or {})


class InvalidInputError(EditError, ValueError):
    """The request itself is malformed (empty needle, bad line ref,
    out-of-range value, overlapping edits...)."""

    code = "INVALID_INPUT"


class EditIOError(EditError, OSError):
    """Reading or writing a file failed (file helpers only)."""

    code = "IO"


for _cls in (Violation, EditError, NotFoundError, AmbiguousError, GuardError, NoOpError,
             HashlineMismatchError, InvalidInputError, EditIOError):
    _cls.__module__ = "coderig"
del _cls
