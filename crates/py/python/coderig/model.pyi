import sys
from typing import Iterable, List, Literal, Optional, final

if sys.version_info >= (3, 11):
    from typing import TypedDict
else:  # pragma: no cover
    from typing_extensions import TypedDict

_ErrorClass = Literal["retry", "fallback", "stop", "fatal"]
_ErrorEvidence = Literal["name", "message", "status", "none"]
"""Which input decided an error's class (explain_error's "evidence")."""
_FallbackErrorReason = Literal[
    "empty", "empty_provider", "empty_model", "unclosed_variant", "empty_variant",
    "text_after_variant", "unknown_variant", "bad_character", "duplicate",
]
"""Why a FallbackChain entry was refused (the InvalidInputError's details["reason"])."""

__all__ = [
    "FallbackChain",
    "classify_error",
    "explain_error",
    "match_model",
    "normalize_model",
    "parse_retry_after",
]

def match_model(target: str, available: Iterable[str], providers: Optional[Iterable[str]] = None) -> Optional[str]:
    """The entry of available that target names, or None. Compared normalized; containment
    by whole tokens (gpt-4 is in openai/gpt-4-turbo, not in gpt-40-mini or gpt-4o); exact >
    model part exact > shortest containing, ties by name. providers keeps only the ids whose
    part before the first "/" is one of them (case-insensitively)."""

def normalize_model(name: str) -> str:
    """Trimmed, lower-case, Claude minor versions with a dot (claude-sonnet-4-5 -> claude-sonnet-4.5)."""

def classify_error(name: Optional[str] = None, message: Optional[str] = None,
                   http_status: Optional[int] = None) -> _ErrorClass:
    """"retry" (same model, later), "fallback" (the next model), "stop" (quota or billing)
    or "fatal" (the request is wrong). Phrases match on word boundaries: "503" is in
    "HTTP 503", not in "line 5031"."""

_Explanation = TypedDict("_Explanation", {"class": _ErrorClass, "evidence": _ErrorEvidence, "rule": str})

def explain_error(name: Optional[str] = None, message: Optional[str] = None,
                  http_status: Optional[int] = None) -> _Explanation:
    """{"class": classify_error(...), "evidence": which input decided, "rule": the phrase,
    name or status group that decided}."""

def parse_retry_after(value: str) -> Optional[float]:
    """Seconds a Retry-After value (seconds or an HTTP date, relative to now) asks for, or None."""

@final
class FallbackChain:
    """Models to try in order ("provider/model(variant)" entries). A bad or repeated entry is
    InvalidInputError with details index, entry and reason."""
    def __init__(self, entries: Iterable[str]) -> None: ...
    @property
    def entries(self) -> List[str]:
        """The entries in canonical form."""
    def next(self, current: int, error_class: str) -> Optional[int]:
        """The index to try after entry current failed with error_class ("retry": the same;
        "fallback": the next or None; "stop", "fatal": None)."""
    def most_specific(self, model_id: str) -> Optional[int]:
        """The entry naming model_id most specifically (longest whole-token prefix), or None."""
    def __len__(self) -> int: ...
