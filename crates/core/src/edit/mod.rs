//! Safe edit application.
//!
//! - [`locate`](locate::locate): tiered location of a needle (exact →
//!   whitespace → unicode → fuzzy) that refuses when two locations qualify.
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
