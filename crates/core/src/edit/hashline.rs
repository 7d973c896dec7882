//! OWNER: hashline-guards helper.

// TEMP until hashline-guards merges
/// One hashline edit (TEMP placeholder: the real enum has `replace`,
/// `append` and `prepend` operations).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum HashlineEdit {}

// TEMP until hashline-guards merges
/// Apply hashline edits (TEMP placeholder: refuses every call).
pub fn apply(
    _content: &str,
    _edits: &[HashlineEdit],
) -> Result<String, crate::edit::error::EditError> {
    Err(crate::edit::error::EditError::invalid(
        "hashline edits are not available in this build",
    ))
}
