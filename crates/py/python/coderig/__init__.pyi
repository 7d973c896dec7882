import os
from typing import (
    Any,
    ClassVar,
    Dict,
    Iterable,
    List,
    Literal,
    Mapping,
    NamedTuple,
    Optional,
    Sequence,
    Tuple,
    Union,
    final,
)

from . import arena as arena, flow as flow, hashline as hashline
from .hashline import _HashlineEdit

__all__ = [
    "AgentError",
    "AmbiguousError",
    "Applied",
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
    "names",
    "xxhash32",
]

_StrPath = Union[str, "os.PathLike[str]"]

__version__: str

def xxhash32(data: Union[str, bytes], seed: Optional[int] = 0) -> int:
    """xxHash32 of data (str hashed as UTF-8); seed in 0..=4294967295,
    otherwise InvalidInputError (decoded as POST /api/xxhash32's body)."""

_Tier = Literal["exact", "whitespace", "unicode", "fuzzy"]
_MatchKind = Literal["exact", "whitespace", "unicode", "fuzzy", "ambiguous", "not_found"]
_ViolationKind = Literal["truncation", "dropped_imports", "marker_leak", "conflict_marker"]
# The stdout formats of agent CLIs (coderig.agent.parse.StreamFormat).
_StreamFormat = Literal["claude-stream-json", "codex-json", "opencode-json", "text"]
_ErrorKind = Literal[
    "not_found", "ambiguous", "guard", "no_op", "hashline_mismatch", "invalid_input",
    "conflict", "not_found_id", "unavailable", "agent", "io", "internal",
]
_ErrorCode = Literal[
    "NOT_FOUND", "AMBIGUOUS", "GUARD", "NO_OP", "HASHLINE_MISMATCH", "INVALID_INPUT",
    "CONFLICT", "NOT_FOUND_ID", "UNAVAILABLE", "AGENT", "IO", "INTERNAL",
]

def names() -> Dict[str, List[str]]:
    """Every list of names crossing the Python face, as the core defines them:
    {"tier": [...], "match_kind": [...], ..., "error_kind": [...], "error_code": [...]}."""

class Violation(NamedTuple):
    kind: _ViolationKind
    message: str

class Error(Exception):
    """Base of every coderig error. .details is the core's details object (as HTTP
    sends it); each detail present is also an attribute (.path, .reason, .what, .id, ...),
    the edit errors' typed below."""
    kind: ClassVar[Optional[_ErrorKind]]
    code: ClassVar[Optional[_ErrorCode]]
    message: str
    details: Dict[str, Any]
    def __init__(self, message: str = "", details: Optional[Mapping[str, Any]] = None, **attributes: Any) -> None: ...

class EditError(Error):
    """An edit request was refused (not found, ambiguous, guard, no-op, stale refs, malformed)."""

class NotFoundError(EditError):
    nearest: Optional[Tuple[int, int, float]]
    def __init__(self, message: str = "", details: Optional[Mapping[str, Any]] = None, *,
                 nearest: Optional[Tuple[int, int, float]] = None, **attributes: Any) -> None: ...

class AmbiguousError(EditError):
    count: int
    lines: List[Tuple[int, int]]
    def __init__(self, message: str = "", details: Optional[Mapping[str, Any]] = None, *,
                 count: int = 0, lines: Iterable[Tuple[int, int]] = (), **attributes: Any) -> None: ...

class GuardError(EditError):
    violations: List[Violation]
    def __init__(self, message: str = "", details: Optional[Mapping[str, Any]] = None, *,
                 violations: Iterable[Violation] = (), **attributes: Any) -> None: ...

class NoOpError(EditError): ...

class HashlineMismatchError(EditError):
    remaps: Dict[str, str]
    def __init__(self, message: str = "", details: Optional[Mapping[str, Any]] = None, *,
                 remaps: Optional[Dict[str, str]] = None, **attributes: Any) -> None: ...

class InvalidInputError(EditError, ValueError):
    """details["path"] (also .path) names the bad field when known."""

class ConflictError(Error):
    """The state does not allow the operation (e.g. a scheduler event on a step not in flight)."""

class NotFoundIdError(Error):
    """No step, run, battle, ... has this id."""

class UnavailableError(Error): ...
class AgentError(Error): ...

class IoError(Error, OSError):
    """Reading or writing a file failed."""

EditIOError = IoError

class InternalError(Error): ...

@final
class Match:
    """Where a needle is. start/end are code-point offsets (content[m.start:m.end]
    is the matched text); start, end and score are None unless a tier found it."""
    @property
    def kind(self) -> _MatchKind: ...
    @property
    def start(self) -> Optional[int]: ...
    @property
    def end(self) -> Optional[int]: ...
    @property
    def score(self) -> Optional[float]: ...
    @property
    def count(self) -> int:
        """1 when found, >= 2 when ambiguous, 0 when not found."""
    @property
    def candidates(self) -> List[Tuple[int, int]]:
        """1-based inclusive (first_line, last_line) per candidate, when ambiguous."""
    @property
    def nearest(self) -> Optional[Tuple[int, int, float]]:
        """(first_line, last_line, score) of the closest window, when not found."""

@final
class Applied:
    """A successful application."""
    @property
    def content(self) -> str: ...
    @property
    def tier(self) -> _Tier:
        """The weakest tier used."""
    @property
    def replacements(self) -> int: ...

_SearchReplace = Union[Tuple[str, str], Tuple[str, str, bool], Mapping[str, object]]
"""(old, new), (old, new, replace_all) or {"old": ..., "new": ..., "replace_all": ...}."""

def locate(content: str, needle: str) -> Match:
    """Tiers exact -> whitespace -> unicode -> fuzzy; two qualifying locations are "ambiguous";
    an empty needle raises InvalidInputError. Arguments are decoded as POST /api/locate's body."""

def apply_edit(
    content: str,
    old: str,
    new: str,
    replace_all: bool = False,
    path: Optional[_StrPath] = None,
    guards: bool = True,
) -> Applied:
    """Raises NotFoundError | AmbiguousError | GuardError | NoOpError | InvalidInputError.
    The arguments are decoded as the body of POST /api/edit (same messages)."""

def apply_edits(
    content: str,
    edits: Iterable[_SearchReplace],
    path: Optional[_StrPath] = None,
    guards: bool = True,
) -> Applied:
    """All edits located in the one original content; overlaps refused; all or nothing.
    A bad edit is InvalidInputError at its path, numbered from 0 (`edits[0].old`: ...)."""

def check_guards(original: str, updated: str, path: Optional[_StrPath] = None) -> List[Violation]: ...

def edit_file(
    path: _StrPath, old: str, new: str, replace_all: bool = False, guards: bool = True
) -> Applied:
    """apply_edit on the file, written back atomically; untouched on any error (IoError for IO)."""

def edits_file(path: _StrPath, edits: Iterable[_SearchReplace], guards: bool = True) -> Applied:
    """apply_edits on the file, written back atomically; untouched on any error."""

def hashline_edit_file(path: _StrPath, edits: Sequence[_HashlineEdit]) -> str:
    """hashline.apply on the file, written back atomically; returns the new content."""
from . import arena as arena
from . import flow as flow
