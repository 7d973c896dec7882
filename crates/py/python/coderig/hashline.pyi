import sys
from typing import Optional, Sequence, Tuple, Union

if sys.version_info >= (3, 11):
    from typing import Literal, NotRequired, TypedDict
else:  # pragma: no cover
    from typing_extensions import Literal, NotRequired, TypedDict

_Lines = Union[str, Sequence[str]]
_HashlineOp = Literal["replace", "append", "prepend"]
"""What a hashline edit does: each edit's `op` is one of these (the tag of its TypedDict)."""

__all__ = ["apply", "format", "legacy_line_hash", "line_hash", "parse_ref", "validate"]

class _ReplaceEdit(TypedDict):
    """Replace lines pos..=end (just pos without end) by lines; [] deletes them."""
    op: Literal["replace"]
    pos: str
    end: NotRequired[Optional[str]]
    lines: _Lines

class _AppendEdit(TypedDict):
    """Insert lines after pos, or after the last line without pos."""
    op: Literal["append"]
    pos: NotRequired[Optional[str]]
    lines: _Lines

class _PrependEdit(TypedDict):
    """Insert lines before pos, or before the first line without pos."""
    op: Literal["prepend"]
    pos: NotRequired[Optional[str]]
    lines: _Lines

_HashlineEdit = Union[_ReplaceEdit, _AppendEdit, _PrependEdit]

def line_hash(line_no: int, text: str) -> str:
    """Two letters of ZPMQVRWSNKTXJBYH; line_no is 1-based (else InvalidInputError)."""

def legacy_line_hash(line_no: int, text: str) -> str:
    """The legacy hash (all whitespace removed), also accepted by validate/apply."""

def format(content: str) -> str:
    """content as "LINE#HH|text" lines joined by "\\n" (CRLF shown without "\\r")."""

def parse_ref(s: str) -> Tuple[int, str]:
    """"12#VK" -> (12, "VK"); lenient (">>> 12 # VK|text", "+12#VK"); InvalidInputError otherwise."""

def validate(content: str, refs: Sequence[str]) -> None:
    """HashlineMismatchError (.remaps: stale ref -> fresh ref) for stale refs,
    InvalidInputError for malformed or out-of-range ones."""

def apply(content: str, edits: Sequence[_HashlineEdit]) -> str:
    """Applies the edits against one snapshot and returns the new content.
    Raises HashlineMismatchError, InvalidInputError (bad shape, overlap) or NoOpError."""
