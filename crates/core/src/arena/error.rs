//! The one error type of the arena decisions.

/// Why an arena decision refused its input. Functions that can be total are
/// total; this is returned only where no sensible answer exists (an unknown
/// enum name, an id without 8 hex digits, a name that sanitizes to nothing).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArenaError {
    /// The input is malformed; the message says which value and why.
    #[error("{0}")]
    InvalidInput(String),
}

impl ArenaError {
    /// Stable machine code shared with the bindings: always `INVALID_INPUT`.
    pub fn code(&self) -> &'static str {
        match self {
            ArenaError::InvalidInput(_) => "INVALID_INPUT",
        }
    }
}

impl From<crate::names::macros::ParseNameError> for ArenaError {
    fn from(e: crate::names::macros::ParseNameError) -> Self {
        ArenaError::InvalidInput(e.to_string())
    }
}

impl From<ArenaError> for crate::error::Error {
    fn from(e: ArenaError) -> Self {
        crate::error::Error::invalid_input(e.to_string())
    }
}
