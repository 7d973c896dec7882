from typing import ClassVar, Dict, Iterable, List, NamedTuple, Optional, Tuple, Union

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

from . import arena as arena
from . import flow as flow
