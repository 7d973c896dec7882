//! The writing tools: `edit_file` (coderig's edit engine: tiered location,
//! guards, atomic write, faithful bytes), `write_file` (a whole file,
//! guarded when it replaces one) and `edit_lines` (hashline anchors).
//!
//! Every path goes through [`super::paths::resolve`], so nothing outside
//! the workdir is read or written. A refused edit leaves the file
//! byte-for-byte as it was and answers with the engine's code
//! (`NOT_FOUND`, `AMBIGUOUS`, `GUARD`, `NO_OP`, `HASHLINE_MISMATCH`,
//! `INVALID_INPUT`, `IO`) and what the model should send next.

use super::paths::{display, resolve};
use super::{arguments, ToolResult};
use crate::agent::native::{ToolCall, ToolSpec};
use crate::edit::apply::{ApplyOptions, Edit};
use crate::edit::error::EditError;
use crate::edit::guards::{self, GuardViolation, ViolationKind};
use crate::edit::hashline::{self, HashlineEdit, Lines};
use serde::Deserialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Lines of context shown around a change.
const CONTEXT: usize = 3;
/// Longest run of changed lines shown after a successful edit; a longer
/// change shows its head and tail.
const SHOWN_CHANGE: usize = 40;
/// Longest nearest window shown with a `NOT_FOUND`.
const SHOWN_NEAREST: usize = 30;
/// Ambiguous candidates shown (each with its first lines).
const SHOWN_CANDIDATES: usize = 8;

/// The spec of `edit_file`: `{path, old, new, replace_all?}`.
pub fn edit_file_spec() -> ToolSpec {
    ToolSpec {
        name: "edit_file".into(),
        description: "Replace `old` with `new` in one file. `old` must be complete lines copied from read_file (without the line-number prefixes) and match one place; small whitespace, quote and typo drift is tolerated. Refusals: NOT_FOUND (shows the nearest lines), AMBIGUOUS (lists every match: add surrounding lines, or set replace_all), GUARD (the result looked damaged: truncation, dropped imports, placeholders), NO_OP. To create a file or rewrite it whole, use write_file.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to edit, relative to the workdir."},
                "old": {"type": "string", "description": "The exact text to replace: one or more complete lines as they are in the file."},
                "new": {"type": "string", "description": "The replacement text (empty deletes `old`)."},
                "replace_all": {"type": "boolean", "description": "Replace every exact occurrence of `old` (default false)."}
            },
            "required": ["path", "old", "new"],
            "additionalProperties": false
        }),
    }
}

/// The spec of `write_file`: `{path, content}`.
pub fn write_file_spec() -> ToolSpec {
    ToolSpec {
        name: "write_file".into(),
        description: "Create a file, or replace a whole file, with `content` (parent directories are created). Write the complete file: a rewrite that drops most of the file, drops imports still used, or leaves placeholders such as `// ... rest of code ...` is refused with GUARD. For a change to part of a file, use edit_file.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to write, relative to the workdir."},
                "content": {"type": "string", "description": "The complete new content of the file."}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        }),
    }
}

/// The spec of `edit_lines`: `{path, start, end, lines}` (offered with
/// hashline anchors).
pub fn edit_lines_spec() -> ToolSpec {
    ToolSpec {
        name: "edit_lines".into(),
        description: "Replace the lines `start`..`end` (inclusive) of a file with `lines`. `start` and `end` are `LINE#HH` anchors exactly as read_file shows them (e.g. `12#VK`); an empty `lines` deletes them. If the file changed since you read it the edit is refused with HASHLINE_MISMATCH and the fresh anchors: use those.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to edit, relative to the workdir."},
                "start": {"type": "string", "description": "Anchor of the first line replaced, e.g. `12#VK`."},
                "end": {"type": "string", "description": "Anchor of the last line replaced (inclusive), e.g. `14#QP`; the same as `start` for one line."},
                "lines": {"type": "array", "items": {"type": "string"}, "description": "The new lines, without anchors or line breaks; [] deletes the range."}
            },
            "required": ["path", "start", "end", "lines"],
            "additionalProperties": false
        }),
    }
}

/// The arguments of `edit_file`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    path: String,
    old: String,
    new: String,
    #[serde(default)]
    replace_all: bool,
}

/// The arguments of `write_file`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
}

/// The arguments of `edit_lines`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LinesArgs {
    path: String,
    start: String,
    /// Defaults to `start` (one line).
    #[serde(default)]
    end: Option<String>,
    lines: Lines,
}

/// `edit_file`: one search/replace edit of an existing file under `root`
/// through coderig's edit engine.
///
/// Guarantees: the path is resolved by [`resolve`] (outside the workdir or
/// missing: refused with its code and suggestions); an empty `old` is
/// `INVALID_INPUT` pointing at `write_file`; `replace_all` replaces every
/// exact occurrence, and when there is none the edit is tried as a single
/// one (located at any tier, refused when ambiguous). A refusal carries the
/// engine's code and message, plus the nearest window with line numbers
/// (`NOT_FOUND`) or every candidate's lines (`AMBIGUOUS`); the file is then
/// untouched. `failures` counts consecutive refusals per canonical path: from
/// the second on, the answer suggests re-reading or `write_file`; a
/// success resets it. Success says the tier and the changed lines and shows
/// them numbered (`{n}|{text}`) with a few lines around.
pub fn edit_file(
    root: &Path,
    call: &ToolCall,
    spec: &ToolSpec,
    failures: &mut BTreeMap<PathBuf, u32>,
) -> ToolResult {
    let args: EditArgs = match arguments(call, spec) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let (path, shown) = match file_target(root, &args.path, true) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let result = edit_resolved(&path, &shown, &args);
    if result.ok {
        failures.remove(&path);
        return result;
    }
    let count = failures.entry(path).or_insert(0);
    *count += 1;
    if *count >= 2 {
        let mut result = result;
        result.output.push_str(&format!(
            "\nThis file refused {count} edits: re-read it with read_file, or replace it whole with write_file."
        ));
        return result;
    }
    result
}

/// `edit_file` once the path is known to be inside the workdir.
fn edit_resolved(path: &Path, shown: &str, args: &EditArgs) -> ToolResult {
    if args.old.is_empty() {
        return ToolResult::refused(
            "INVALID_INPUT",
            format!(
                "`old` is empty, so there is nothing to find in {shown}. To create a file or replace it whole, use write_file; to change part of it, copy the lines to change from read_file into `old`."
            ),
        );
    }
    let original = match read_text(path, shown) {
        Ok(text) => text,
        Err(r) => return r,
    };
    let replace_all = args.replace_all && has_exact(&original, &args.old);
    let edit = Edit {
        old: args.old.clone(),
        new: args.new.clone(),
        replace_all,
    };
    match crate::edit::file::edit_file(path, &edit, &ApplyOptions::default()) {
        Ok(applied) => {
            let (first, last) = changed_lines(&original, &applied.content);
            let count = if applied.replacements > 1 {
                format!(", {} replacements", applied.replacements)
            } else {
                String::new()
            };
            let span = if last >= first {
                format!("lines {first}-{last}")
            } else {
                format!("lines removed before line {first}")
            };
            ToolResult::ok(format!(
                "Edited {shown} ({} match{count}, {span}):\n{}",
                applied.tier,
                numbered_change(&applied.content, first, last)
            ))
        }
        Err(e) => refusal(shown, &original, &e),
    }
}

/// Whether `old` occurs byte-for-byte in `content` (or with its line breaks
/// switched between LF and CRLF, as the engine's exact tier allows).
fn has_exact(content: &str, old: &str) -> bool {
    content.contains(old)
        || content.contains(&old.replace("\r\n", "\n"))
        || content.contains(&old.replace("\r\n", "\n").replace('\n', "\r\n"))
}

/// The engine's refusal `e` of an edit of `original`, for the model.
fn refusal(shown: &str, original: &str, e: &EditError) -> ToolResult {
    let mut out = format!("{shown}: {}", e.message());
    match e {
        EditError::NotFound {
            nearest: Some(n), ..
        } => {
            let last = n.last_line.min(n.first_line + SHOWN_NEAREST - 1);
            out.push_str(&format!(
                "\nThe nearest lines ({}-{}):\n{}",
                n.first_line,
                n.last_line,
                numbered(original, n.first_line, last)
            ));
            if last < n.last_line {
                out.push_str(&format!("\n[... {} more lines ...]", n.last_line - last));
            }
            out.push_str(
                "\nCopy the lines exactly from read_file (without the `N|` prefixes) into `old`.",
            );
        }
        EditError::NotFound { nearest: None, .. } => {
            out.push_str("\nNothing in the file is close: read_file it and copy the lines exactly from what it shows (without the `N|` prefixes) into `old`.");
        }
        EditError::Ambiguous { lines, .. } => {
            out.push_str("\nThe matches:");
            for &(a, b) in lines.iter().take(SHOWN_CANDIDATES) {
                out.push_str(&format!("\nlines {a}-{b}:\n"));
                out.push_str(&numbered(original, a, b.min(a + 1)));
            }
            if lines.len() > SHOWN_CANDIDATES {
                out.push_str(&format!(
                    "\n[... {} more matches ...]",
                    lines.len() - SHOWN_CANDIDATES
                ));
            }
            if !e.message().contains("replace_all") {
                out.push_str("\nInclude more surrounding lines in `old` so it matches once, or set replace_all to change every occurrence.");
            }
        }
        _ => {}
    }
    ToolResult::refused(e.code(), out)
}

/// `write_file`: creates or replaces a whole file under `root`.
///
/// Guarantees: the path is resolved by [`resolve`] (refused outside the
/// workdir); missing parent directories are created, and only when they
/// end up inside the workdir is anything written; the write is atomic
/// (readers see the old or the new file, never a mix; an existing file keeps
/// its permissions). Replacing an existing UTF-8 file runs every guard
/// (truncation, dropped imports, placeholders, conflict markers) and a
/// new file the placeholder and conflict-marker guards: a violation is
/// `GUARD` listing each, with nothing written. Success answers `Wrote
/// <path> (N lines, created|replaced)`.
pub fn write_file(root: &Path, call: &ToolCall, spec: &ToolSpec) -> ToolResult {
    let args: WriteArgs = match arguments(call, spec) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let (path, shown) = match file_target(root, &args.path, false) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let existing = match std::fs::read(&path) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            return ToolResult::refused("IO", format!("could not read {shown}: {e}"));
        }
    };
    // A non-UTF-8 file is not text the guards can read: replaced as asked.
    let original = match &existing {
        Some(bytes) => std::str::from_utf8(bytes).ok(),
        None => Some(""),
    };
    if let Some(original) = original {
        let violations = guards::check(original, &args.content, path.to_str());
        if !violations.is_empty() {
            return ToolResult::refused(
                "GUARD",
                format!(
                    "{shown}: write_file was refused by a safety guard and nothing was written:\n{}\nSend the complete, final content of the file (no placeholders, every import still used kept); to change only part of it, use edit_file.",
                    list_violations(&violations)
                ),
            );
        }
    }
    if let Some(parent) = path.parent() {
        if let Err(e) = std::fs::create_dir_all(parent) {
            return ToolResult::refused(
                "IO",
                format!("could not create the directory of {shown}: {e}"),
            );
        }
        // A directory created through a link that leads out, or a file
        // that is a link leading out, is refused before anything is written.
        let real = if path.exists() {
            path.canonicalize()
        } else {
            parent.canonicalize()
        };
        match real {
            Ok(real) if real.starts_with(root) => {}
            _ => {
                return ToolResult::refused(
                    "OUTSIDE_WORKDIR",
                    format!("{shown} is outside the workdir: write files inside it only."),
                )
            }
        }
    }
    if let Err(e) = crate::edit::file::write_atomic(&path, args.content.as_bytes()) {
        return ToolResult::refused("IO", format!("could not write {shown}: {e}"));
    }
    ToolResult::ok(format!(
        "Wrote {shown} ({} lines, {})",
        args.content.lines().count(),
        if existing.is_some() {
            "replaced"
        } else {
            "created"
        }
    ))
}

/// `edit_lines`: replaces an anchored line range of an existing file.
///
/// Guarantees: the path is resolved by [`resolve`]; `start` and `end`
/// (default: `start`) are read leniently as `LINE#HH` anchors (a malformed
/// one is `INVALID_INPUT` naming the form); when either line changed since
/// it was read the edit is `HASHLINE_MISMATCH` with the fresh anchors and
/// the file is untouched. The result passes the placeholder,
/// conflict-marker and dropped-import guards (`GUARD` otherwise; deleting
/// lines is never "truncation": the range says what goes). The write is
/// atomic. Success shows the new lines, with a line or two around, with
/// their fresh anchors (`LINE#HH|text`).
pub fn edit_lines(root: &Path, call: &ToolCall, spec: &ToolSpec) -> ToolResult {
    let args: LinesArgs = match arguments(call, spec) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let (path, shown) = match file_target(root, &args.path, true) {
        Ok(t) => t,
        Err(r) => return r,
    };
    let end = args.end.clone().unwrap_or_else(|| args.start.clone());
    let start_ref = match hashline::parse_ref(&args.start) {
        Ok(r) => r,
        Err(e) => return engine_refusal(&shown, "start", &e),
    };
    if let Err(e) = hashline::parse_ref(&end) {
        return engine_refusal(&shown, "end", &e);
    }
    let original = match read_text(&path, &shown) {
        Ok(text) => text,
        Err(r) => return r,
    };
    let count = args.lines.to_lines().len();
    let edit = HashlineEdit::Replace {
        pos: args.start.clone(),
        end: Some(end),
        lines: args.lines,
    };
    let updated = match hashline::apply(&original, std::slice::from_ref(&edit)) {
        Ok(updated) => updated,
        Err(e) => return ToolResult::refused(e.code(), format!("{shown}: {}", e.message())),
    };
    if updated == original {
        return ToolResult::refused(
            "NO_OP",
            format!("{shown}: the edit changes nothing: those lines already read so. Re-read the file and send lines that differ."),
        );
    }
    let violations: Vec<GuardViolation> = guards::check(&original, &updated, path.to_str())
        .into_iter()
        .filter(|v| v.kind != ViolationKind::Truncation)
        .collect();
    if !violations.is_empty() {
        return ToolResult::refused(
            "GUARD",
            format!(
                "{shown}: the edit was refused by a safety guard and the file was not changed:\n{}\nSend the complete, final lines (no placeholders, keep the imports still in use).",
                list_violations(&violations)
            ),
        );
    }
    if let Err(e) = crate::edit::file::write_atomic(&path, updated.as_bytes()) {
        return ToolResult::refused("IO", format!("could not write {shown}: {e}"));
    }
    let first = start_ref.line;
    let formatted = hashline::format(&updated);
    let anchored: Vec<&str> = formatted.split('\n').collect();
    let last_new = (first + count).saturating_sub(1).max(first);
    let from = first.saturating_sub(2).max(1);
    let to = (last_new + 2).min(anchored.len());
    let lines: Vec<&str> = anchored
        .iter()
        .skip(from - 1)
        .take(to.saturating_sub(from) + 1)
        .copied()
        .collect();
    let what = if count == 0 {
        format!("deleted lines from {first}")
    } else {
        format!("lines {first}-{}", first + count - 1)
    };
    ToolResult::ok(format!(
        "Edited {shown} ({what}); the fresh anchors:\n{}",
        lines.join("\n")
    ))
}

/// The file a writing tool works on: the path [`confined`] and shown
/// relative to the workdir; a directory is `INVALID_INPUT`.
fn file_target(
    root: &Path,
    asked: &str,
    must_exist: bool,
) -> Result<(PathBuf, String), ToolResult> {
    let path = confined(root, asked, must_exist)?;
    let shown = display(root, &path);
    if path.is_dir() {
        return Err(ToolResult::refused(
            "INVALID_INPUT",
            format!("{shown} is a directory, not a file: give the path of a file (list_files shows what is in it)."),
        ));
    }
    Ok((path, shown))
}

/// The model's `path` resolved by [`resolve`] and checked once more: the
/// file (when it exists) or its nearest existing ancestor must really lie
/// in `root`, links followed. The refusal is `resolve`'s, or
/// `OUTSIDE_WORKDIR`.
fn confined(root: &Path, asked: &str, must_exist: bool) -> Result<PathBuf, ToolResult> {
    let path = resolve(root, asked, must_exist)
        .map_err(|refusal| ToolResult::refused(refusal.code, refusal.message))?;
    let real = path
        .ancestors()
        .find_map(|p| p.canonicalize().ok())
        .unwrap_or_default();
    if real.starts_with(root) {
        Ok(path)
    } else {
        Err(ToolResult::refused(
            "OUTSIDE_WORKDIR",
            format!("{asked} is outside the workdir: only files inside it can be read or written. Give a path relative to the workdir."),
        ))
    }
}

/// An engine error about the argument `which`.
fn engine_refusal(shown: &str, which: &str, e: &EditError) -> ToolResult {
    ToolResult::refused(
        e.code(),
        format!(
            "{shown}: `{which}`: {} Use the anchors read_file shows.",
            e.message()
        ),
    )
}

/// `- kind: message` per violation.
fn list_violations(violations: &[GuardViolation]) -> String {
    violations
        .iter()
        .map(|v| format!("- {}: {}", v.kind.as_str(), v.message))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The file's text, or the refusal to answer (`IO`, or `INVALID_INPUT` for
/// a file that is not UTF-8).
fn read_text(path: &Path, shown: &str) -> Result<String, ToolResult> {
    let bytes = std::fs::read(path)
        .map_err(|e| ToolResult::refused("IO", format!("could not read {shown}: {e}")))?;
    String::from_utf8(bytes).map_err(|_| {
        ToolResult::refused(
            "INVALID_INPUT",
            format!("{shown} is not UTF-8 text: it cannot be edited; replace it whole with write_file if you must."),
        )
    })
}

/// The 1-based lines `first..=last` of `content` (as `str::lines` splits
/// it) written `{n}|{text}`, one a line.
fn numbered(content: &str, first: usize, last: usize) -> String {
    content
        .lines()
        .enumerate()
        .skip(first.saturating_sub(1))
        .take_while(|(i, _)| *i < last)
        .map(|(i, line)| format!("{}|{line}", i + 1))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The lines of `updated` that differ from `original`: `(first, last)`,
/// 1-based inclusive; `last < first` when lines were only removed (before
/// line `first`).
fn changed_lines(original: &str, updated: &str) -> (usize, usize) {
    let old: Vec<&str> = original.lines().collect();
    let new: Vec<&str> = updated.lines().collect();
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let room = old.len().min(new.len()) - prefix;
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    (prefix + 1, new.len() - suffix)
}

/// The changed lines `first..=last` of `content` with [`CONTEXT`] lines
/// around, numbered; a change longer than [`SHOWN_CHANGE`] lines shows its
/// head and tail.
fn numbered_change(content: &str, first: usize, last: usize) -> String {
    let from = first.saturating_sub(CONTEXT).max(1);
    let to = last.max(first) + CONTEXT;
    if last < first + SHOWN_CHANGE {
        return numbered(content, from, to);
    }
    let half = SHOWN_CHANGE / 2;
    format!(
        "{}\n[... {} lines ...]\n{}",
        numbered(content, from, first + half - 1),
        last + 1 - first - 2 * half,
        numbered(content, last + 1 - half, to)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_lines_finds_the_change() {
        assert_eq!(changed_lines("a\nb\nc\n", "a\nB\nc\n"), (2, 2));
        assert_eq!(changed_lines("a\nb\nc\n", "a\nb\nx\ny\nc\n"), (3, 4));
        // Deletion: nothing in the new text changed, lines went before 2.
        assert_eq!(changed_lines("a\nb\nc\n", "a\nc\n"), (2, 1));
        assert_eq!(changed_lines("a\na\n", "a\na\na\n"), (3, 3));
    }

    #[test]
    fn numbered_shows_line_numbers_and_cuts_long_changes() {
        assert_eq!(numbered("a\nb\nc\n", 2, 9), "2|b\n3|c");
        let text: String = (1..=200).map(|i| format!("l{i}\n")).collect();
        let shown = numbered_change(&text, 10, 150);
        assert!(shown.starts_with("7|l7\n"), "{shown}");
        assert!(shown.contains("lines ...]"));
        assert!(shown.ends_with("153|l153"), "{shown}");
    }

    #[test]
    fn exact_occurrence_tolerates_line_breaks() {
        assert!(has_exact("a\r\nb\r\n", "a\nb"));
        assert!(has_exact("a\nb\n", "a\r\nb"));
        assert!(!has_exact("a\nb\n", "a  \nb"));
    }
}
