//! Hashline anchors: `LINE#HH` references that detect stale line edits.
//!
//! [`format()`] shows a file as `12#VK|text` lines; a model then names the
//! lines it wants to change by their `LINE#HH` reference, and [`apply`]
//! refuses the edit when any referenced line changed since it was read.
//!
//! The hash ([`line_hash`]) is xxHash32 of the line with `\r` removed and
//! trailing whitespace trimmed, seeded with 0 — or with the line number when
//! the line has no letter or digit, so that blank lines and lone braces get
//! different hashes at different places — taken mod 256 and written as two
//! letters of [`ALPHABET`], high nibble first. "Whitespace" is the set
//! JavaScript's `trimEnd` removes (Unicode `White_Space` minus U+0085, plus
//! U+FEFF) and "letter or digit" means general category `L*` or `N*`; both
//! choices are pinned by the shared vectors in `tests/vectors/hashline.json`.
//!
//! Line numbering is that of [`format()`]: the content is split on `\n`, so a
//! file ending with a newline shows one last empty line (`8#XW|`). That last
//! line is not a real line of the file: edits anchored on it act at the end
//! of the file, and a file that ended with one newline still ends with
//! exactly one.
//!
//! Inside: `hash` computes line hashes and [`format()`], `refs` reads
//! `LINE#HH` references, `validate` checks them against a snapshot of the
//! content and words the mismatch, `apply` applies [`HashlineEdit`]s.

mod apply;
mod hash;
mod refs;
mod validate;

pub use apply::{apply, HashlineEdit, Lines};
pub use hash::{format, legacy_line_hash, line_hash, ALPHABET};
pub use refs::{parse_ref, LineRef};
pub use validate::{validate, validate_strs};
