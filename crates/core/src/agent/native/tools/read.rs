//! `read_file` (here), `list_files` ([`super::list`]) and `grep`
//! ([`super::grep`]): the tools that look without touching.
//!
//! Their outputs are shaped for a model: exact, short, and ending in a
//! footer that says what was shown and how to get more. Each stops at
//! whole lines before [`OUTPUT_CAP_CHARS`], so the tool box's head-and-tail
//! cap never cuts them in the middle.

use super::paths::{self, PathRefusal};
use super::{arguments, ToolResult, OUTPUT_CAP_CHARS};
use crate::agent::native::{ToolCall, ToolSpec};
use crate::edit::hashline::line_hash;
use serde::Deserialize;
use serde_json::json;
use std::fs;
use std::path::Path;

/// Lines `read_file` shows when no `limit` is given.
pub const DEFAULT_READ_LINES: usize = 250;
/// The most lines one `read_file` shows.
pub const MAX_READ_LINES: usize = 2_000;
/// A line longer than this many characters is cut (with a marker).
pub const MAX_LINE_CHARS: usize = 2_000;
/// Files larger than this are not read whole (`TOO_LARGE`).
pub const MAX_READ_BYTES: u64 = 64 << 20;
/// How much of the start of a file is looked at for a NUL byte.
pub(super) const BINARY_SNIFF_BYTES: usize = 8 << 10;
/// Characters kept free under [`OUTPUT_CAP_CHARS`] for a footer.
pub(super) const FOOTER_RESERVE: usize = 1_000;

/// `n` with thousands separators (`1,234`).
pub(super) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `count` and `noun`, pluralized with an `s` (`1 line`, `2 lines`).
pub(super) fn plural(count: usize, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{} {noun}s", thousands(count))
    }
}

/// A path refusal as the tool's answer.
pub(super) fn refused(r: PathRefusal) -> ToolResult {
    ToolResult::refused(r.code, r.message)
}

/// Whether the first [`BINARY_SNIFF_BYTES`] of `bytes` hold a NUL.
pub(super) fn looks_binary(bytes: &[u8]) -> bool {
    memchr::memchr(0, &bytes[..bytes.len().min(BINARY_SNIFF_BYTES)]).is_some()
}

/// The spec of `read_file`; with `hashline`, lines are shown with the
/// `LINE#HH` anchors `edit_lines` takes.
pub fn read_file_spec(hashline: bool) -> ToolSpec {
    let description = if hashline {
        "Read a text file as anchored lines `LINE#HH|text` (pass `LINE#HH` anchors to edit_lines), \
         250 lines at a time (limit up to 2000). The footer says how to read on."
    } else {
        "Read a text file as numbered lines `LINE|text`, 250 lines at a time (limit up to 2000). \
         The footer says how to read on."
    };
    ToolSpec {
        name: "read_file".into(),
        description: description.into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File path relative to the workdir, e.g. \"src/main.py\"."},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to show (1-based, default 1)."},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_READ_LINES, "description": "How many lines to show (default 250, at most 2000)."}
            },
            "required": ["path"],
            "additionalProperties": false
        }),
    }
}

/// The arguments of `read_file`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    #[serde(default)]
    offset: Option<u64>,
    #[serde(default)]
    limit: Option<u64>,
}

/// `read_file {path, offset?, limit?}`: the lines `offset..offset+limit`
/// of a UTF-8 text file under `root`, as `N|text` (or `N#HH|text` with
/// `hashline`, the anchors of [`crate::edit::hashline::format`]), then a
/// footer: `[lines 1-250 of 1,234 — read on with offset=251]` or
/// `[end of file: 1,234 lines]`.
///
/// Guarantees: never more than [`OUTPUT_CAP_CHARS`] characters (it stops
/// at a whole line and the footer says where to go on); lines longer than
/// [`MAX_LINE_CHARS`] are cut with a marker; a line's `\r` ending is not
/// shown. Refusals: `BAD_ARGUMENTS`, `OUTSIDE_WORKDIR`, `NOT_FOUND` (with
/// the closest names), `IS_A_DIRECTORY`, `NOT_A_FILE`, `BINARY` (a NUL in
/// the first 8 KiB, or not UTF-8), `TOO_LARGE`, `OUT_OF_RANGE` (offset
/// past the end; says the length), `READ_ERROR`.
pub fn read_file(root: &Path, call: &ToolCall, spec: &ToolSpec, hashline: bool) -> ToolResult {
    let args = match arguments::<ReadArgs>(call, spec) {
        Ok(a) => a,
        Err(r) => return r,
    };
    let path = match paths::resolve(root, &args.path, true) {
        Ok(p) => p,
        Err(r) => return refused(r),
    };
    let shown = paths::display(root, &path);
    let meta = match fs::metadata(&path) {
        Ok(m) => m,
        Err(e) => return ToolResult::refused("READ_ERROR", format!("Cannot read {shown}: {e}.")),
    };
    if meta.is_dir() {
        return ToolResult::refused(
            "IS_A_DIRECTORY",
            format!(
                "{shown} is a directory. Use list_files with path={shown:?} to see what is in it."
            ),
        );
    }
    if !meta.is_file() {
        return ToolResult::refused(
            "NOT_A_FILE",
            format!("{shown} is not a regular file (a device, socket or pipe); it cannot be read."),
        );
    }
    if meta.len() > MAX_READ_BYTES {
        return ToolResult::refused(
            "TOO_LARGE",
            format!(
                "{shown} is {} bytes, too large to read. Use grep with path={shown:?} to find the lines you need.",
                thousands(meta.len() as usize)
            ),
        );
    }
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) => return ToolResult::refused("READ_ERROR", format!("Cannot read {shown}: {e}.")),
    };
    let size = plural(bytes.len(), "byte");
    if looks_binary(&bytes) {
        return ToolResult::refused(
            "BINARY",
            format!("{shown} is a binary file ({size}); read_file shows text only."),
        );
    }
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return ToolResult::refused(
            "BINARY",
            format!("{shown} is not UTF-8 text ({size}); read_file shows text only."),
        );
    };
    let offset = args.offset.unwrap_or(1).max(1);
    let limit = args
        .limit
        .unwrap_or(DEFAULT_READ_LINES as u64)
        .clamp(1, MAX_READ_LINES as u64) as usize;
    render(&shown, text, offset, limit, hashline)
}

/// The answer of `read_file` for `text`, the content of `shown`.
fn render(shown: &str, text: &str, offset: u64, limit: usize, hashline: bool) -> ToolResult {
    if text.is_empty() {
        return ToolResult::ok(format!("{shown} is empty (0 lines)."));
    }
    // A final newline ends the last line; it does not start another.
    let body = text.strip_suffix('\n').unwrap_or(text);
    let total = memchr::memchr_iter(b'\n', body.as_bytes()).count() + 1;
    if offset > total as u64 {
        return ToolResult::refused(
            "OUT_OF_RANGE",
            format!(
                "{shown} has {}; offset {offset} is past its end. Read with an offset from 1 to {total}.",
                plural(total, "line")
            ),
        );
    }
    let first = offset as usize;
    let budget = OUTPUT_CAP_CHARS - FOOTER_RESERVE;
    let mut out = String::new();
    let mut chars = 0;
    let mut last = first - 1;
    for (n, raw) in (1..).zip(body.split('\n')).skip(first - 1).take(limit) {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let prefix = if hashline {
            format!("{n}#{}|", line_hash(n, line))
        } else {
            format!("{n}|")
        };
        let line_chars = line.chars().count();
        let (shown_text, marker) = if line_chars > MAX_LINE_CHARS {
            let end = line
                .char_indices()
                .nth(MAX_LINE_CHARS)
                .map_or(line.len(), |(i, _)| i);
            (
                &line[..end],
                format!(" … [line cut: {} chars]", thousands(line_chars)),
            )
        } else {
            (line, String::new())
        };
        let cost = prefix.len()
            + shown_text.chars().count().min(MAX_LINE_CHARS)
            + marker.chars().count()
            + 1;
        if n > first && chars + cost > budget {
            break;
        }
        out.push_str(&prefix);
        out.push_str(shown_text);
        out.push_str(&marker);
        out.push('\n');
        chars += cost;
        last = n;
    }
    if last == total {
        out.push_str(&format!("[end of file: {}]", plural(total, "line")));
    } else {
        let why = if last - first + 1 < limit {
            " (output limit reached)"
        } else {
            ""
        };
        out.push_str(&format!(
            "[lines {}-{} of {}{why} — read on with offset={}]",
            thousands(first),
            thousands(last),
            thousands(total),
            last + 1
        ));
    }
    ToolResult::ok(out)
}

/// A real repository on disk for the read tools' tests.
#[cfg(test)]
pub(super) mod fixture {
    use crate::agent::native::ToolCall;
    use serde_json::Value;
    use std::fs;
    use std::path::{Path, PathBuf};

    /// A call of `name` with `args`.
    pub fn call(name: &str, args: Value) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            arguments: args,
        }
    }

    /// Writes `content` at `root/rel`, creating directories.
    pub fn put(root: &Path, rel: &str, content: impl AsRef<[u8]>) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }

    /// A temp repository (canonical root):
    /// `.gitignore` (`target/`, `*.log`), `target/out.txt`, `debug.log`,
    /// `.env`, `.git/config`, `src/main.py`, `src/lib/util.py`,
    /// `src/lib/deep/deeper/x.py`, `big.txt` (5,000 lines `line N`),
    /// `image.bin` (NUL bytes), `latin1.txt` (not UTF-8), `empty.txt`,
    /// `crlf.txt`, `long.txt` (one 5,000-char line).
    pub fn repo() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        put(&root, ".gitignore", "target/\n*.log\n");
        put(&root, "target/out.txt", "def main(): ignored\n");
        put(&root, "debug.log", "def main(): ignored\n");
        put(&root, ".env", "KEY=1\n");
        put(&root, ".git/config", "[core]\ndef main(): in git\n");
        put(
            &root,
            "src/main.py",
            "import os\n\ndef main():\n    print('hi')\n",
        );
        put(&root, "src/lib/util.py", "def helper():\n    return 1\n");
        put(&root, "src/lib/deep/deeper/x.py", "X = 1\n");
        let big: String = (1..=5000).map(|n| format!("line {n}\n")).collect();
        put(&root, "big.txt", big);
        put(&root, "image.bin", b"\x89PNG\x00\x00def main():\x00");
        put(&root, "latin1.txt", b"caf\xe9 def main()\n");
        put(&root, "empty.txt", "");
        put(&root, "crlf.txt", "a\r\nb\r\n");
        put(&root, "long.txt", format!("{}\n", "y".repeat(5000)));
        (dir, root)
    }
}

#[cfg(test)]
mod tests {
    use super::fixture::{call, put, repo};
    use super::*;
    use crate::edit::hashline;

    fn read(root: &Path, args: serde_json::Value, hashline: bool) -> ToolResult {
        let spec = read_file_spec(hashline);
        read_file(root, &call("read_file", args), &spec, hashline)
    }

    fn footer(r: &ToolResult) -> &str {
        r.output.lines().last().unwrap()
    }

    #[test]
    fn thousands_and_plurals() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1234), "1,234");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(plural(1, "line"), "1 line");
        assert_eq!(plural(5000, "line"), "5,000 lines");
    }

    #[test]
    fn pages_through_a_long_file() {
        let (_d, root) = repo();
        let r = read(&root, json!({"path": "big.txt"}), false);
        assert!(r.ok, "{}", r.output);
        let lines: Vec<&str> = r.output.lines().collect();
        assert_eq!(lines.len(), 251);
        assert_eq!(lines[0], "1|line 1");
        assert_eq!(lines[249], "250|line 250");
        assert_eq!(
            footer(&r),
            "[lines 1-250 of 5,000 — read on with offset=251]"
        );

        let r = read(
            &root,
            json!({"path": "big.txt", "offset": 251, "limit": 10}),
            false,
        );
        assert!(r.output.starts_with("251|line 251\n"), "{}", r.output);
        assert_eq!(
            footer(&r),
            "[lines 251-260 of 5,000 — read on with offset=261]"
        );

        let r = read(&root, json!({"path": "big.txt", "offset": 4990}), false);
        assert!(r.output.starts_with("4990|line 4990\n"));
        assert!(r.output.contains("5000|line 5000\n"));
        assert_eq!(footer(&r), "[end of file: 5,000 lines]");

        let r = read(&root, json!({"path": "big.txt", "offset": 5001}), false);
        assert_eq!(r.code.as_deref(), Some("OUT_OF_RANGE"));
        assert!(r.output.contains("5,000 lines"), "{}", r.output);
        assert!(r.output.contains("1 to 5000"), "{}", r.output);
    }

    #[test]
    fn stops_at_whole_lines_before_the_cap() {
        let (_d, root) = repo();
        let long: String = (1..=2000).map(|n| format!("{n:>60}\n")).collect();
        put(&root, "wide.txt", long);
        let r = read(&root, json!({"path": "wide.txt", "limit": 2000}), false);
        assert!(
            r.output.chars().count() <= OUTPUT_CAP_CHARS,
            "{}",
            r.output.len()
        );
        let f = footer(&r);
        assert!(
            f.contains("(output limit reached) — read on with offset="),
            "{f}"
        );
        let last_shown: usize = r
            .output
            .lines()
            .rev()
            .nth(1)
            .unwrap()
            .split('|')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(f.ends_with(&format!("offset={}]", last_shown + 1)), "{f}");
        // The tool box's head-and-tail cap leaves it whole.
        let capped = r.clone().capped();
        assert_eq!(capped.output, r.output);
        assert!(capped.full.is_none());
        // Over-long limits are clamped.
        let r = read(&root, json!({"path": "big.txt", "limit": 100000}), false);
        assert!(r.ok && footer(&r).contains("read on with offset="));
    }

    #[test]
    fn cuts_over_long_lines_with_a_marker() {
        let (_d, root) = repo();
        let r = read(&root, json!({"path": "long.txt"}), false);
        let first = r.output.lines().next().unwrap();
        assert!(first.starts_with("1|yyy"));
        assert!(
            first.ends_with(" … [line cut: 5,000 chars]"),
            "{}",
            &first[first.len() - 40..]
        );
        assert_eq!(first.matches('y').count(), MAX_LINE_CHARS);
        assert_eq!(footer(&r), "[end of file: 1 line]");
    }

    #[test]
    fn small_files_empty_files_and_crlf() {
        let (_d, root) = repo();
        let r = read(&root, json!({"path": "src/main.py"}), false);
        assert_eq!(
            r.output,
            "1|import os\n2|\n3|def main():\n4|    print('hi')\n[end of file: 4 lines]"
        );
        let r = read(&root, json!({"path": "empty.txt"}), false);
        assert!(r.ok);
        assert_eq!(r.output, "empty.txt is empty (0 lines).");
        let r = read(&root, json!({"path": "crlf.txt"}), false);
        assert_eq!(r.output, "1|a\n2|b\n[end of file: 2 lines]");
    }

    #[test]
    fn hashline_mode_shows_the_edit_engines_anchors() {
        let (_d, root) = repo();
        let content = "fn main() {\r\n    let x = 1;\n\n    }\n  \t\n// é done\n}\n";
        put(&root, "h.rs", content);
        let r = read(&root, json!({"path": "h.rs"}), true);
        let want: Vec<String> = hashline::format(content)
            .lines()
            .map(String::from)
            .collect();
        let got: Vec<&str> = r.output.lines().collect();
        // Every shown line is format()'s line (format also shows the empty
        // piece after the final newline, which is not a line of the file).
        assert_eq!(want.len(), 8);
        assert_eq!(got[..7], want[..7], "{}", r.output);
        assert_eq!(footer(&r), "[end of file: 7 lines]");
        // A window keeps the anchors of the whole file.
        let r = read(
            &root,
            json!({"path": "h.rs", "offset": 3, "limit": 2}),
            true,
        );
        let got: Vec<&str> = r.output.lines().take(2).collect();
        assert_eq!(got, [want[2].as_str(), want[3].as_str()]);
        // And agrees with line_hash.
        assert!(r
            .output
            .starts_with(&format!("3#{}|\n", hashline::line_hash(3, ""))));
        let spec = read_file_spec(true);
        assert!(spec.description.contains("LINE#HH"));
    }

    #[test]
    fn refusals_say_what_to_do() {
        let (_d, root) = repo();
        let r = read(&root, json!({"path": "src"}), false);
        assert_eq!(r.code.as_deref(), Some("IS_A_DIRECTORY"));
        assert!(r.output.contains("list_files"), "{}", r.output);
        let r = read(&root, json!({"path": "image.bin"}), false);
        assert_eq!(r.code.as_deref(), Some("BINARY"));
        assert!(r.output.contains("18 bytes"), "{}", r.output);
        let r = read(&root, json!({"path": "latin1.txt"}), false);
        assert_eq!(r.code.as_deref(), Some("BINARY"));
        assert!(r.output.contains("not UTF-8"), "{}", r.output);
        let r = read(&root, json!({"path": "src/mian.py"}), false);
        assert_eq!(r.code.as_deref(), Some("NOT_FOUND"));
        assert!(r.output.contains("src/main.py"), "{}", r.output);
        let r = read(&root, json!({"path": "../etc/passwd"}), false);
        assert_eq!(r.code.as_deref(), Some("OUTSIDE_WORKDIR"));
        let r = read(&root, json!({"path": "/etc/passwd"}), false);
        assert_eq!(r.code.as_deref(), Some("OUTSIDE_WORKDIR"));
        for bad in [
            json!({}),
            json!({"path": "big.txt", "lines": 3}),
            json!({"path": "big.txt", "offset": -1}),
            json!({"path": 7}),
        ] {
            let r = read(&root, bad.clone(), false);
            assert_eq!(
                r.code.as_deref(),
                Some("BAD_ARGUMENTS"),
                "{bad}: {}",
                r.output
            );
            assert!(r.output.contains("path"), "{}", r.output);
        }
        // offset 0 reads from the start.
        let r = read(&root, json!({"path": "src/main.py", "offset": 0}), false);
        assert!(r.output.starts_with("1|import os"));
    }

    #[test]
    fn specs_are_flat_objects() {
        for spec in [
            read_file_spec(false),
            super::super::list::list_files_spec(),
            super::super::grep::grep_spec(),
        ] {
            let p = &spec.parameters;
            assert_eq!(p["type"], "object", "{}", spec.name);
            assert_eq!(p["additionalProperties"], false, "{}", spec.name);
            assert!(p["required"].is_array(), "{}", spec.name);
            for (name, prop) in p["properties"].as_object().unwrap() {
                assert!(name.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
                assert!(prop["description"].as_str().is_some_and(|d| !d.is_empty()));
            }
            assert!(spec.description.len() < 300, "{}", spec.name);
        }
    }
}
