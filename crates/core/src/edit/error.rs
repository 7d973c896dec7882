//! The one error type of the edit capability.

use crate::edit::guards::GuardViolation;
use crate::edit::locate::Nearest;
use crate::error::{Error, ErrorKind};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Why an edit was refused. Every variant carries a message written for a
/// model to act on: what failed, where the closest text is, and what to send
/// instead.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EditError {
    /// The needle was not found at any tier.
    #[error("{message}")]
    NotFound {
        /// Human/model-readable explanation.
        message: String,
        /// The closest window, when one scored at all.
        nearest: Option<Nearest>,
    },
    /// Two or more distinct locations qualified at the winning tier.
    #[error("{message}")]
    Ambiguous {
        /// Human/model-readable explanation.
        message: String,
        /// Number of candidate locations.
        count: usize,
        /// 1-based inclusive line ranges of the candidates.
        lines: Vec<(usize, usize)>,
    },
    /// The result tripped one or more guards.
    #[error("{message}")]
    Guard {
        /// Human/model-readable explanation.
        message: String,
        /// Every violation found.
        violations: Vec<GuardViolation>,
    },
    /// The edit would leave the content unchanged.
    #[error("{message}")]
    NoOp {
        /// Human/model-readable explanation.
        message: String,
    },
    /// One or more hashline references are stale.
    #[error("{message}")]
    HashlineMismatch {
        /// Lists every stale line with ±2 lines of context and fresh refs.
        message: String,
        /// Old ref (`"12#VK"`) → fresh ref for the same line number.
        remaps: BTreeMap<String, String>,
    },
    /// The request itself is malformed: empty needle, bad line ref,
    /// out-of-range line, overlapping edits, non-UTF-8 file…
    #[error("{message}")]
    InvalidInput {
        /// Human/model-readable explanation.
        message: String,
    },
    /// Reading or writing a file failed (file helpers only).
    #[error("{message}")]
    Io {
        /// Human-readable explanation including the path.
        message: String,
    },
}

impl EditError {
    /// Stable machine code: `NOT_FOUND`, `AMBIGUOUS`, `GUARD`, `NO_OP`,
    /// `HASHLINE_MISMATCH`, `INVALID_INPUT`, `IO`.
    pub fn code(&self) -> &'static str {
        match self {
            EditError::NotFound { .. } => "NOT_FOUND",
            EditError::Ambiguous { .. } => "AMBIGUOUS",
            EditError::Guard { .. } => "GUARD",
            EditError::NoOp { .. } => "NO_OP",
            EditError::HashlineMismatch { .. } => "HASHLINE_MISMATCH",
            EditError::InvalidInput { .. } => "INVALID_INPUT",
            EditError::Io { .. } => "IO",
        }
    }

    /// Stable snake_case kind used in JSON: `not_found`, `ambiguous`, `guard`,
    /// `no_op`, `hashline_mismatch`, `invalid_input`, `io`.
    pub fn kind(&self) -> &'static str {
        match self {
            EditError::NotFound { .. } => "not_found",
            EditError::Ambiguous { .. } => "ambiguous",
            EditError::Guard { .. } => "guard",
            EditError::NoOp { .. } => "no_op",
            EditError::HashlineMismatch { .. } => "hashline_mismatch",
            EditError::InvalidInput { .. } => "invalid_input",
            EditError::Io { .. } => "io",
        }
    }

    /// The message (same as `Display`).
    pub fn message(&self) -> &str {
        match self {
            EditError::NotFound { message, .. }
            | EditError::Ambiguous { message, .. }
            | EditError::Guard { message, .. }
            | EditError::NoOp { message }
            | EditError::HashlineMismatch { message, .. }
            | EditError::InvalidInput { message }
            | EditError::Io { message } => message,
        }
    }

    /// The kind of the one taxonomy ([`crate::Error`]) this error has.
    pub fn error_kind(&self) -> ErrorKind {
        match self {
            EditError::NotFound { .. } => ErrorKind::NotFound,
            EditError::Ambiguous { .. } => ErrorKind::Ambiguous,
            EditError::Guard { .. } => ErrorKind::Guard,
            EditError::NoOp { .. } => ErrorKind::NoOp,
            EditError::HashlineMismatch { .. } => ErrorKind::HashlineMismatch,
            EditError::InvalidInput { .. } => ErrorKind::InvalidInput,
            EditError::Io { .. } => ErrorKind::Io,
        }
    }

    /// The details every face shows next to kind, code and message:
    /// `nearest` (`not_found`: `{first_line, last_line, score}` or null),
    /// `count` and `lines` (`ambiguous`: `[first_line, last_line]` per
    /// candidate), `violations` (`guard`: `[{kind, message}]`), `remaps`
    /// (`hashline_mismatch`: stale ref → fresh ref); none for the others.
    pub fn details(&self) -> Map<String, Value> {
        let mut details = Map::new();
        match self {
            EditError::NotFound { nearest, .. } => {
                details.insert(
                    "nearest".into(),
                    nearest.map_or(Value::Null, |n| {
                        json!({"first_line": n.first_line, "last_line": n.last_line, "score": n.score})
                    }),
                );
            }
            EditError::Ambiguous { count, lines, .. } => {
                details.insert("count".into(), json!(count));
                details.insert("lines".into(), json!(lines));
            }
            EditError::Guard { violations, .. } => {
                let violations = violations
                    .iter()
                    .map(|v| json!({"kind": v.kind.as_str(), "message": v.message}))
                    .collect();
                details.insert("violations".into(), Value::Array(violations));
            }
            EditError::HashlineMismatch { remaps, .. } => {
                details.insert("remaps".into(), json!(remaps));
            }
            EditError::NoOp { .. } | EditError::InvalidInput { .. } | EditError::Io { .. } => {}
        }
        details
    }

    /// Shorthand for an [`EditError::InvalidInput`].
    pub fn invalid(message: impl Into<String>) -> Self {
        EditError::InvalidInput {
            message: message.into(),
        }
    }
}

impl From<EditError> for Error {
    fn from(e: EditError) -> Self {
        Error::new(e.error_kind(), e.message()).with_details(e.details())
    }
}
