//! Safe edit application.
//!
//! - [`locate`](locate::locate): tiered location of a needle (exact →
//!   whitespace → unicode → fuzzy) that refuses when two locations qualify;
//!   [`try_locate`] also refuses an empty needle as invalid input.
//! - [`apply`](mod@apply): splice by span with faithful bytes (EOL, BOM, final
//!   newline, indentation, punctuation style), single and atomic multi-edits.
//! - [`guards`]: catch catastrophic results (truncation, dropped imports,
//!   leaked placeholder markers, new conflict markers).
//! - [`hashline`]: `LINE#HH` anchors that detect stale line references.
//! - [`file`](mod@file): read–apply–write helpers that never leave a half-written file.

pub mod apply;
pub mod error;
pub mod file;
pub mod guards;
pub mod hashline;
pub mod locate;
mod normalize;

use error::EditError;
use locate::Match;

/// Find where `needle` is in `content`, refusing an empty needle.
///
/// Guarantees: an empty `needle` is [`EditError::InvalidInput`] whose
/// message says what to send instead, so every face raises its
/// invalid-input error with the same message; any other needle gives `Ok`
/// with exactly what [`locate`](locate::locate) returns (which never fails).
// Here rather than in `locate`: `error` depends on `locate` (for `Nearest`),
// and `locate` returning an `EditError` would make the two a circle.
pub fn try_locate(content: &str, needle: &str) -> Result<Match, EditError> {
    if needle.is_empty() {
        return Err(EditError::invalid(EMPTY_NEEDLE));
    }
    Ok(locate::locate(content, needle))
}

/// Why an empty needle is refused, and what to send instead.
const EMPTY_NEEDLE: &str = "`needle` is empty, so there is nothing to find. Send the text to \
     find: one or more complete lines copied from the file.";
