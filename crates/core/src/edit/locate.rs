//! Tiered location of a needle inside content.
//!
//! OWNER: edit-engine helper. Types below are the agreed contract; bodies to be written.

use std::ops::Range;

/// The tier at which a needle was found, weakest last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Byte-for-byte.
    Exact,
    /// Equal after line-trimming / whitespace collapsing.
    Whitespace,
    /// Equal after folding smart quotes, dashes, NBSP, ellipsis (and doubled escapes).
    Unicode,
    /// Line window with normalized Levenshtein similarity ≥ 0.85.
    Fuzzy,
}

impl Tier {
    /// `"exact"`, `"whitespace"`, `"unicode"` or `"fuzzy"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Exact => "exact",
            Tier::Whitespace => "whitespace",
            Tier::Unicode => "unicode",
            Tier::Fuzzy => "fuzzy",
        }
    }
}

/// Outcome kind of [`locate`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MatchKind {
    /// Found at the exact tier.
    Exact,
    /// Found at the whitespace tier.
    Whitespace,
    /// Found at the unicode tier.
    Unicode,
    /// Found at the fuzzy tier.
    Fuzzy,
    /// Two or more locations qualified.
    Ambiguous,
    /// Nothing qualified.
    NotFound,
}

/// The closest window when nothing qualified: 1-based inclusive lines.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Nearest {
    /// First line (1-based).
    pub first_line: usize,
    /// Last line (1-based, inclusive).
    pub last_line: usize,
    /// Similarity in `[0, 1]`.
    pub score: f64,
}

/// Result of [`locate`].
#[derive(Debug, Clone, PartialEq)]
pub struct Match {
    /// What happened.
    pub kind: MatchKind,
    /// Byte span into the original content, when found.
    pub span: Option<Range<usize>>,
    /// Similarity in `[0, 1]` (1.0 for non-fuzzy tiers), when found.
    pub score: Option<f64>,
    /// Number of candidate locations (1 when found, ≥ 2 when ambiguous, 0 when not found).
    pub count: usize,
    /// 1-based inclusive line ranges of the candidates, when ambiguous.
    pub candidates: Vec<(usize, usize)>,
    /// Closest window, when not found.
    pub nearest: Option<Nearest>,
}
