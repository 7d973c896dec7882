"""Model resolution decisions: which served model a name means
(``match_model``), what a failed model call means (``classify_error``,
``explain_error``, ``parse_retry_after``), and the models to try in turn
(``FallbackChain``).

Implemented in Rust (``coderig._native.model``); this module re-exports it.
"""

from ._native import model as _native_model

match_model = _native_model.match_model
normalize_model = _native_model.normalize_model
classify_error = _native_model.classify_error
explain_error = _native_model.explain_error
parse_retry_after = _native_model.parse_retry_after
FallbackChain = _native_model.FallbackChain

__all__ = [
    "FallbackChain",
    "classify_error",
    "explain_error",
    "match_model",
    "normalize_model",
    "parse_retry_after",
]
