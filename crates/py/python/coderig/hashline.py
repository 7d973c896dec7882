"""``LINE#HH`` anchors: show a file with a short hash per line, and apply edits
that name lines by those refs, refusing when a referenced line changed.

Implemented in Rust (``coderig._native.hashline``); this module re-exports it.
"""

from ._native import hashline as _native_hashline

line_hash = _native_hashline.line_hash
legacy_line_hash = _native_hashline.legacy_line_hash
format = _native_hashline.format
parse_ref = _native_hashline.parse_ref
validate = _native_hashline.validate
apply = _native_hashline.apply

__all__ = ["apply", "format", "legacy_line_hash", "line_hash", "parse_ref", "validate"]
