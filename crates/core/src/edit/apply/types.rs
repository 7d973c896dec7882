//! The values the apply API takes and returns.

use crate::edit::locate::Tier;

/// One search/replace edit.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Edit {
    /// Text to find (must not be empty).
    pub old: String,
    /// Replacement text.
    pub new: String,
    /// Replace every non-overlapping occurrence at the winning tier instead
    /// of refusing several as ambiguous.
    #[serde(default)]
    pub replace_all: bool,
}

/// Options for [`apply_edit_with`](super::apply_edit_with) /
/// [`apply_edits`](super::apply_edits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyOptions {
    /// Path of the file, used by the guards to pick a language.
    pub path: Option<String>,
    /// Run the guards on the result (default `true`).
    pub guards: bool,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions {
            path: None,
            guards: true,
        }
    }
}

/// A successful application.
#[derive(Debug, Clone, PartialEq)]
pub struct Applied {
    /// The new content.
    pub content: String,
    /// The weakest tier used by any of the edits.
    pub tier: Tier,
    /// Number of spans replaced.
    pub replacements: usize,
}
