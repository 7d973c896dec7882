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

/// Defines `as_str` / `Display` / `FromStr` for a unit-variant enum from one
/// table of canonical names (plus accepted aliases), so the three can never
/// disagree. Parsing is ASCII case-insensitive and ignores surrounding
/// whitespace.
macro_rules! named_enum {
    ($ty:ident, $what:literal, { $($variant:ident => $name:literal $(| $alias:literal)*),+ $(,)? }) => {
        impl $ty {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$ty] = &[$($ty::$variant),+];

            /// The canonical lowercase name (what `FromStr` accepts and the
            /// bindings expose).
            pub fn as_str(self) -> &'static str {
                match self { $($ty::$variant => $name),+ }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $ty {
            type Err = $crate::arena::ArenaError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                let wanted = s.trim();
                $(
                    if wanted.eq_ignore_ascii_case($name) $(|| wanted.eq_ignore_ascii_case($alias))* {
                        return Ok($ty::$variant);
                    }
                )+
                Err($crate::arena::ArenaError::InvalidInput(format!(
                    concat!("unknown ", $what, " {:?}; expected one of: {}"),
                    s,
                    [$($name),+].join(", ")
                )))
            }
        }
    };
}
pub(crate) use named_enum;
