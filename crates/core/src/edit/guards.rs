//! Guards against catastrophic edits.
//!
//! OWNER: hashline-guards helper. Types below are the agreed contract; bodies to be written.

/// What a guard caught.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ViolationKind {
    /// Chars lost > 60 % and lines lost > 50 %.
    Truncation,
    /// An import statement of the original is gone.
    DroppedImports,
    /// A placeholder such as `// ... existing code ...` appeared.
    MarkerLeak,
    /// A merge conflict marker appeared.
    ConflictMarker,
}

impl ViolationKind {
    /// `"truncation"`, `"dropped_imports"`, `"marker_leak"`, `"conflict_marker"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ViolationKind::Truncation => "truncation",
            ViolationKind::DroppedImports => "dropped_imports",
            ViolationKind::MarkerLeak => "marker_leak",
            ViolationKind::ConflictMarker => "conflict_marker",
        }
    }
}

/// One guard violation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GuardViolation {
    /// Which guard.
    pub kind: ViolationKind,
    /// What it saw, written for a model to act on.
    pub message: String,
}

/// Run every guard on an edit's result. TEMP: finds nothing.
// TEMP until hashline-guards merges
pub fn check(_original: &str, _updated: &str, _path: Option<&str>) -> Vec<GuardViolation> {
    Vec::new()
}
