//! Splicing edits into content with faithful bytes.
//!
//! Every edit is first located with [`locate`](crate::edit::locate) and then
//! spliced in by byte span: nothing in `new` is interpreted (a `$` is a `$`).
//! When the match needed a tolerant tier, `new` is rewritten into the file's
//! conventions before splicing:
//!
//! - lines of `new` that the model left as they were in `old` are written as
//!   the file has them (indentation, trailing spaces, punctuation, typos),
//!   and so are the blank lines between them (ones the model left out of
//!   `old`, or added to it, included);
//! - other lines are re-indented by the needle→file indentation mapping
//!   (a constant column shift, tabs↔spaces at a detected tab width, or
//!   level for level when the needle uses another indent unit);
//! - at the unicode and fuzzy tiers, text copied from `old` takes the file's
//!   characters and new text takes the file's punctuation style (curly
//!   quotes, dashes, ellipsis and NBSP in comments; only in-word apostrophes
//!   when those are the file's only curly single quotes) — or is folded to
//!   plain ASCII when only the model used typographic characters;
//! - when doubled escapes made the match, `new` is unescaped too if it is
//!   escaped the same way (no raw line break, nor a raw quote or tab that
//!   `old` wrote as an escape);
//! - line breaks become the file's (CRLF/LF; in a replaced region that mixes
//!   both, each line keeps or inherits its own); BOM and final newline stay.
//!
//! Inside: `plan` locates each edit and computes its replacement text,
//! `transfer` rewrites `new` line by line into the matched region's
//! conventions (with `indent` for indentation and `style` for punctuation),
//! `report` words the refusals, `types` holds the values of the API; this
//! module splices the planned spans and runs the guards, once, on the result.

mod indent;
mod plan;
mod report;
mod style;
mod transfer;
mod types;

pub use types::{Applied, ApplyOptions, Edit};

use crate::edit::error::EditError;
use crate::edit::locate::Tier;
use plan::{check_overlaps, plan_edit, Planned};

/// Apply one edit with [`ApplyOptions::default`] (guards on, no path).
///
/// Same guarantees as [`apply_edit_with`].
pub fn apply_edit(content: &str, edit: &Edit) -> Result<Applied, EditError> {
    apply_edit_with(content, edit, &ApplyOptions::default())
}

/// Apply one edit.
///
/// Guarantees: an empty `old` is [`EditError::InvalidInput`]; a target that
/// is not found is [`EditError::NotFound`] (with the nearest window), two or
/// more locations at the winning tier without `replace_all` are
/// [`EditError::Ambiguous`]; a result identical to `content` is
/// [`EditError::NoOp`]; guard violations (when `opts.guards`) are
/// [`EditError::Guard`]. On success everything outside the replaced spans is
/// byte-for-byte unchanged, and the replacement uses the file's line breaks.
pub fn apply_edit_with(
    content: &str,
    edit: &Edit,
    opts: &ApplyOptions,
) -> Result<Applied, EditError> {
    run(content, std::slice::from_ref(edit), opts, false)
}

/// Apply several edits atomically: all are located against the one original
/// `content`, then spliced together.
///
/// Guarantees: all or nothing; overlapping targets of two edits are
/// [`EditError::InvalidInput`] naming both; an edit whose `old` exists only in
/// another edit's `new` is refused as [`EditError::NotFound`]; guards run
/// once on the final result; `replacements` is the total number of spans
/// replaced and `tier` the weakest tier used. An empty list is
/// [`EditError::InvalidInput`].
pub fn apply_edits(
    content: &str,
    edits: &[Edit],
    opts: &ApplyOptions,
) -> Result<Applied, EditError> {
    if edits.is_empty() {
        return Err(EditError::invalid(
            "no edits were given: send at least one {old, new} pair",
        ));
    }
    run(content, edits, opts, edits.len() > 1)
}

fn run(
    content: &str,
    edits: &[Edit],
    opts: &ApplyOptions,
    multi: bool,
) -> Result<Applied, EditError> {
    let mut planned: Vec<Planned> = Vec::new();
    let mut weakest = Tier::Exact;
    for (idx, edit) in edits.iter().enumerate() {
        let (spans, tier) = plan_edit(content, edit, idx, edits, multi)?;
        if tier.rank() > weakest.rank() {
            weakest = tier;
        }
        planned.extend(spans);
    }
    planned.sort_by_key(|p| (p.span.start, p.span.end));
    check_overlaps(content, &planned, multi)?;
    let mut out = String::with_capacity(content.len() + 64);
    let mut pos = 0;
    for p in &planned {
        out.push_str(&content[pos..p.span.start]);
        out.push_str(&p.text);
        pos = p.span.end;
    }
    out.push_str(&content[pos..]);
    if out == content {
        return Err(report::no_op());
    }
    if opts.guards {
        // Only the lines the edit touched are checked (the guards' cost is
        // the edit's, not the file's); the verdict equals `guards::check`'s
        // but for the edit-aware truncation rule.
        let splices = crate::edit::guards::Splice::from_replacements(
            planned.iter().map(|p| (p.span.clone(), p.text.len())),
        );
        let violations =
            crate::edit::guards::check_splices(content, &out, opts.path.as_deref(), &splices);
        if !violations.is_empty() {
            return Err(report::guard_refused(violations));
        }
    }
    Ok(Applied {
        content: out,
        tier: weakest,
        replacements: planned.len(),
    })
}
