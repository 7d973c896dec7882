import os
from typing import (
    ClassVar,
    Dict,
    Iterable,
    List,
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

_StrPath = Union[str, "os.PathLike[str]"]

__version__: str

def xxhash32(data: Union[str, bytes], seed: int = 0) -> int:
    """xxHash32 of data (str hashed as UTF-8); seed in 0..=4294967295,
    otherwise InvalidInputError."""

class Violation(NamedTuple):
    kind: str
    message: str

class EditError(Exception):
    code: ClassVar[str]
    message: str
    def __init__(self, message: str = "") -> None: ...

class NotFoundError(EditError):
    nearest: Optional[Tuple[int, int, float]]
    def __init__(self, message: str = "", nearest: Optional[Tuple[int, int, float]] = None) -> None: ...

class AmbiguousError(EditError):
    count: int
    lines: List[Tuple[int, int]]
    def __init__(self, message: str = "", count: int = 0, lines: Iterable[Tuple[int, int]] = ()) -> None: ...

class GuardError(EditError):
    violations: List[Violation]
    def __init__(self, message: str = "", violations: Iterable[Violation] = ()) -> None: ...

class NoOpError(EditError): ...

class HashlineMismatchError(EditError):
    remaps: Dict[str, str]
    def __init__(self, message: str = "", remaps: Optional[Dict[str, str]] = None) -> None: ...

class InvalidInputError(EditError, ValueError): ...

class EditIOError(EditError, OSError): ...

@final
class Match:
    """Where a needle is. start/end are code-point offsets (content[m.start:m.end]
    is the matched text); start, end and score are None unless a tier found it."""
    @property
    def kind(self) -> str:
        """"exact" | "whitespace" | "unicode" | "fuzzy" | "ambiguous" | "not_found"."""
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
    def tier(self) -> str:
        """The weakest tier used: "exact" | "whitespace" | "unicode" | "fuzzy"."""
    @property
    def replacements(self) -> int: ...

_SearchReplace = Union[Tuple[str, str], Tuple[str, str, bool], Mapping[str, object]]
"""(old, new), (old, new, replace_all) or {"old": ..., "new": ..., "replace_all": ...}."""

def locate(content: str, needle: str) -> Match:
    """Tiers exact -> whitespace -> unicode -> fuzzy; two qualifying locations are "ambiguous"."""

def apply_edit(
    content: str,
    old: str,
    new: str,
    replace_all: bool = False,
    path: Optional[_StrPath] = None,
    guards: bool = True,
) -> Applied:
    """Raises NotFoundError | AmbiguousError | GuardError | NoOpError | InvalidInputError."""

def apply_edits(
    content: str,
    edits: Iterable[_SearchReplace],
    path: Optional[_StrPath] = None,
    guards: bool = True,
) -> Applied:
    """All edits located in the one original content; overlaps refused; all or nothing."""

def check_guards(original: str, updated: str, path: Optional[_StrPath] = None) -> List[Violation]:
    """Violations of kind "truncation" | "dropped_imports" | "marker_leak" | "conflict_marker"."""

def edit_file(
    path: _StrPath, old: str, new: str, replace_all: bool = False, guards: bool = True
) -> Applied:
    """apply_edit on the file, written back atomically; untouched on any error (EditIOError for IO)."""

def edits_file(path: _StrPath, edits: Iterable[_SearchReplace], guards: bool = True) -> Applied:
    """apply_edits on the file, written back atomically; untouched on any error."""

def hashline_edit_file(path: _StrPath, edits: Sequence[_HashlineEdit]) -> str:
    """hashline.apply on the file, written back atomically; returns the new content."""
from . import arena as arena
from . import flow as flow
