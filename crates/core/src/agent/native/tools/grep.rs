//! `grep`: where a pattern occurs in the workdir, as git sees it.

use super::list::glob_filter;
use super::paths;
use super::read::{looks_binary, plural, refused, thousands, FOOTER_RESERVE, MAX_READ_BYTES};
use super::{arguments, ToolResult, OUTPUT_CAP_CHARS};
use crate::agent::native::{ToolCall, ToolSpec};
use regex::bytes::{Regex, RegexBuilder};
use serde::Deserialize;
use serde_json::json;
use std::fs;
use std::path::{Path, PathBuf};

/// Matches `grep` shows when no `max_results` is given.
pub const DEFAULT_GREP_RESULTS: usize = 50;
/// The most matches one `grep` shows.
pub const MAX_GREP_RESULTS: usize = 200;
/// A matching line is shown cut to this many characters.
pub const MAX_MATCH_CHARS: usize = 200;
/// Files named in the "more matches" footer.
const MORE_FILES_NAMED: usize = 10;

/// The spec of `grep`.
pub fn grep_spec() -> ToolSpec {
    ToolSpec {
        name: "grep".into(),
        description:
            "Search file contents with a regex (Rust syntax; `(?i)` ignores case; `^`/`$` \
                      match at line ends). Answers `path:line: text`, skipping binary and \
                      .gitignored files."
                .into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Regex to find, e.g. \"def parse_\" or \"(?i)todo\"."},
                "path": {"type": "string", "description": "File or directory to search, relative to the workdir (default: the workdir)."},
                "glob": {"type": "string", "description": "Search only files matching this glob, e.g. \"*.py\" or \"src/**/*.rs\"."},
                "max_results": {"type": "integer", "minimum": 1, "maximum": MAX_GREP_RESULTS, "description": "Most matching lines to show (default 50, at most 200)."}
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
    }
}

/// The arguments of `grep`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct GrepArgs {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    glob: Option<String>,
    #[serde(default)]
    max_results: Option<u64>,
}

/// `pattern` as a multi-line regex (`^`/`$` at line ends, CRLF-aware); an
/// invalid one is searched literally, with a note saying so; one too big
/// even as literal text is `BAD_ARGUMENTS`.
fn compile(pattern: &str) -> Result<(Regex, Option<String>), ToolResult> {
    let build = |p: &str| {
        RegexBuilder::new(p)
            .multi_line(true)
            .crlf(true)
            .size_limit(1 << 24)
            .build()
    };
    let e = match build(pattern) {
        Ok(re) => return Ok((re, None)),
        Err(e) => e,
    };
    let why = match &e {
        regex::Error::Syntax(s) => s
            .lines()
            .rev()
            .find(|l| l.starts_with("error:"))
            .unwrap_or("syntax error")
            .trim_start_matches("error:")
            .trim()
            .to_string(),
        other => other.to_string(),
    };
    match build(&regex::escape(pattern)) {
        Ok(re) => Ok((
            re,
            Some(format!(
                "Note: {pattern:?} is not a valid regex ({why}); searched for it as literal text."
            )),
        )),
        Err(_) => Err(ToolResult::refused(
            "BAD_ARGUMENTS",
            format!("grep: the pattern cannot be searched ({why}). Use a shorter pattern."),
        )),
    }
}

/// `1 match`, `2 matches`.
fn matches(n: usize) -> String {
    if n == 1 {
        "1 match".into()
    } else {
        format!("{} matches", thousands(n))
    }
}

/// One matching line.
struct Hit {
    line: usize,
    text: String,
}

/// The matching lines of `bytes` (each line once, by its first match),
/// in order; `keep` of them with their text, the rest only counted.
fn search(re: &Regex, bytes: &[u8], keep: usize) -> (Vec<Hit>, usize) {
    let mut hits = vec![];
    let mut count = 0;
    let mut pos = 0;
    let mut counted_to = 0;
    let mut line = 1;
    while pos <= bytes.len() {
        let Some(m) = re.find_at(bytes, pos) else {
            break;
        };
        let start = m.start();
        line += memchr::memchr_iter(b'\n', &bytes[counted_to..start]).count();
        counted_to = start;
        let line_start = memchr::memrchr(b'\n', &bytes[..start]).map_or(0, |i| i + 1);
        let line_end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |i| start + i);
        count += 1;
        if hits.len() < keep {
            hits.push(Hit {
                line,
                text: shorten(&bytes[line_start..line_end]),
            });
        }
        if line_end >= bytes.len() {
            break;
        }
        pos = line_end + 1;
    }
    (hits, count)
}

/// A matching line as shown: trimmed, cut at [`MAX_MATCH_CHARS`].
fn shorten(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let text = text.trim();
    match text.char_indices().nth(MAX_MATCH_CHARS) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// `grep {pattern, path?, glob?, max_results?}`: the lines matching
/// `pattern` in the text files under `path` (a file or a directory inside
/// `root`, default `root`), as `path:line: text`, files in sorted walk
/// order, each line once.
///
/// Guarantees: `.gitignore` honoured, `.git` never searched, symlinks not
/// followed, binary files (a NUL in the first 8 KiB) skipped; an invalid
/// regex is searched as literal text and the answer says so; at most
/// `max_results` (default 50, at most 200) lines, never more than
/// [`OUTPUT_CAP_CHARS`] characters, then `N more matches in M files: a.py
/// (12), b.py (3) … — narrow the pattern, path or glob` (the counts are
/// complete: every file is read once, to the end); no match says so and
/// suggests a looser pattern. Refusals: `BAD_ARGUMENTS` (empty pattern,
/// bad glob), `OUTSIDE_WORKDIR`, `NOT_FOUND`.
pub fn grep(root: &Path, call: &ToolCall, spec: &ToolSpec) -> ToolResult {
    let args = match arguments::<GrepArgs>(call, spec) {
        Ok(a) => a,
        Err(r) => return r,
    };
    if args.pattern.is_empty() {
        return ToolResult::refused(
            "BAD_ARGUMENTS",
            "grep: pattern is empty. Give a word or regex to find, e.g. \"def main\".",
        );
    }
    let start = match paths::resolve(root, args.path.as_deref().unwrap_or(""), true) {
        Ok(p) => p,
        Err(r) => return refused(r),
    };
    let glob = args
        .glob
        .as_deref()
        .map(str::trim)
        .filter(|g| !g.is_empty());
    let filter = match glob.map(|g| glob_filter(root, g)).transpose() {
        Ok(f) => f,
        Err(r) => return r,
    };
    let max = args
        .max_results
        .unwrap_or(DEFAULT_GREP_RESULTS as u64)
        .clamp(1, MAX_GREP_RESULTS as u64) as usize;
    let (re, note) = match compile(&args.pattern) {
        Ok(c) => c,
        Err(r) => return r,
    };

    let files: Vec<PathBuf> = if start.is_file() {
        vec![start.clone()]
    } else {
        let mut walk = paths::walker(root, &start);
        if let Some(f) = filter {
            walk.overrides(f);
        }
        walk.build()
            .flatten()
            .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
            .map(ignore::DirEntry::into_path)
            .collect()
    };

    let budget = OUTPUT_CAP_CHARS - FOOTER_RESERVE;
    let mut out = String::new();
    if let Some(note) = &note {
        out.push_str(note);
        out.push('\n');
    }
    let mut shown = 0usize;
    let mut total = 0usize;
    let mut files_matched = 0usize;
    let mut binary = 0usize;
    let mut full = false;
    // Files with matches not shown, and how many.
    let mut rest: Vec<(String, usize)> = vec![];
    for file in &files {
        let Ok(meta) = fs::metadata(file) else {
            continue;
        };
        if meta.len() > MAX_READ_BYTES {
            binary += 1;
            continue;
        }
        let Ok(bytes) = fs::read(file) else {
            continue;
        };
        if looks_binary(&bytes) {
            binary += 1;
            continue;
        }
        let keep = if full { 0 } else { max - shown };
        let (hits, count) = search(&re, &bytes, keep);
        if count == 0 {
            continue;
        }
        files_matched += 1;
        total += count;
        let name = paths::display(root, file);
        let mut shown_here = 0;
        for hit in hits {
            let line = format!("{name}:{}: {}\n", hit.line, hit.text);
            if full || out.len() + line.len() > budget {
                full = true;
                break;
            }
            out.push_str(&line);
            shown_here += 1;
        }
        shown += shown_here;
        if shown >= max {
            full = true;
        }
        if count > shown_here {
            rest.push((name, count - shown_here));
        }
    }

    let skipped = if binary > 0 {
        format!(", {} skipped", plural(binary, "binary file"))
    } else {
        String::new()
    };
    if total == 0 {
        let place = paths::display(root, &start);
        let place = if place == "." {
            "the workdir".to_string()
        } else {
            place
        };
        let glob_note = glob.map(|g| format!(" matching {g:?}")).unwrap_or_default();
        out.push_str(&format!(
            "No matches for {:?} in {place}{glob_note} ({} searched{skipped}). Try a looser pattern \
             (a shorter word, (?i) to ignore case, a|b for alternatives) or a wider path or glob.",
            args.pattern,
            plural(files.len() - binary, "file")
        ));
        return ToolResult::ok(out);
    }
    if rest.is_empty() {
        out.push_str(&format!(
            "[{} in {}{skipped}]",
            matches(total),
            plural(files_matched, "file")
        ));
    } else {
        let more: usize = rest.iter().map(|(_, n)| n).sum();
        rest.sort_by_key(|r| std::cmp::Reverse(r.1));
        let named: Vec<String> = rest
            .iter()
            .take(MORE_FILES_NAMED)
            .map(|(f, n)| format!("{f} ({n})"))
            .collect();
        let ellipsis = if rest.len() > MORE_FILES_NAMED {
            " …"
        } else {
            ""
        };
        out.push_str(&format!(
            "{} more {} in {}: {}{ellipsis} — narrow the pattern, path or glob",
            thousands(more),
            if more == 1 { "match" } else { "matches" },
            plural(rest.len(), "file"),
            named.join(", ")
        ));
    }
    ToolResult::ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::read::fixture::{call, put, repo};
    use super::*;

    fn grep_in(root: &Path, args: serde_json::Value) -> ToolResult {
        grep(root, &call("grep", args), &grep_spec())
    }

    #[test]
    fn finds_lines_as_git_sees_the_tree() {
        let (_d, root) = repo();
        let r = grep_in(&root, json!({"pattern": "def main"}));
        assert!(r.ok, "{}", r.output);
        // Not in .git, target/ or *.log (ignored), nor in image.bin (binary);
        // latin1.txt is text with a bad byte: shown lossily.
        assert_eq!(
            r.output,
            "latin1.txt:1: caf\u{FFFD} def main()\nsrc/main.py:3: def main():\n[2 matches in 2 files, 1 binary file skipped]"
        );
        let r = grep_in(&root, json!({"pattern": "^def \\w+", "path": "src/lib"}));
        assert_eq!(
            r.output,
            "src/lib/util.py:1: def helper():\n[1 match in 1 file]"
        );
        let r = grep_in(
            &root,
            json!({"pattern": "(?i)PRINT", "path": "src/main.py"}),
        );
        assert_eq!(r.output, "src/main.py:4: print('hi')\n[1 match in 1 file]");
        let r = grep_in(&root, json!({"pattern": "\\)$", "glob": "*.py"}));
        assert!(
            r.output.starts_with("src/main.py:4: print('hi')\n"),
            "{}",
            r.output
        );
        let r = grep_in(&root, json!({"pattern": "b$", "path": "crlf.txt"}));
        assert_eq!(r.output, "crlf.txt:2: b\n[1 match in 1 file]");
    }

    #[test]
    fn an_invalid_regex_is_searched_literally() {
        let (_d, root) = repo();
        let r = grep_in(&root, json!({"pattern": "main(", "path": "src"}));
        assert!(r.ok);
        let lines: Vec<&str> = r.output.lines().collect();
        assert!(
            lines[0].starts_with("Note: \"main(\" is not a valid regex ("),
            "{}",
            lines[0]
        );
        assert!(
            lines[0].ends_with("searched for it as literal text."),
            "{}",
            lines[0]
        );
        assert_eq!(lines[1], "src/main.py:3: def main():");
    }

    #[test]
    fn caps_results_and_counts_the_rest_per_file() {
        let (_d, root) = repo();
        let lines = |n: usize| -> String { (0..n).map(|i| format!("hit {i}\n")).collect() };
        put(&root, "m/a.py", lines(10));
        put(&root, "m/b.py", lines(3));
        put(&root, "m/c.py", lines(60));
        let r = grep_in(
            &root,
            json!({"pattern": "hit", "path": "m", "max_results": 5}),
        );
        let out: Vec<&str> = r.output.lines().collect();
        assert_eq!(
            out[..5],
            [
                "m/a.py:1: hit 0",
                "m/a.py:2: hit 1",
                "m/a.py:3: hit 2",
                "m/a.py:4: hit 3",
                "m/a.py:5: hit 4"
            ]
        );
        assert_eq!(
            out[5],
            "68 more matches in 3 files: m/c.py (60), m/a.py (5), m/b.py (3) — narrow the pattern, path or glob"
        );
        // Default 50.
        let r = grep_in(&root, json!({"pattern": "hit", "path": "m"}));
        assert_eq!(r.output.lines().count(), 51);
        assert!(
            r.output.ends_with(
                "23 more matches in 1 file: m/c.py (23) — narrow the pattern, path or glob"
            ),
            "{}",
            r.output
        );
        // All shown.
        let r = grep_in(
            &root,
            json!({"pattern": "hit", "path": "m", "max_results": 200}),
        );
        assert!(r.output.ends_with("[73 matches in 3 files]"));
        // Many files: ten named, then an ellipsis.
        for i in 0..12 {
            put(&root, &format!("n/f{i:02}.txt"), "x\n");
        }
        let r = grep_in(
            &root,
            json!({"pattern": "x", "path": "n", "max_results": 1}),
        );
        assert!(
            r.output.ends_with(
                "11 more matches in 11 files: n/f01.txt (1), n/f02.txt (1), n/f03.txt (1), \
                 n/f04.txt (1), n/f05.txt (1), n/f06.txt (1), n/f07.txt (1), n/f08.txt (1), \
                 n/f09.txt (1), n/f10.txt (1) … — narrow the pattern, path or glob"
            ),
            "{}",
            r.output
        );
    }

    #[test]
    fn long_lines_are_cut_and_the_output_stays_under_the_cap() {
        let (_d, root) = repo();
        let wide: String = (0..300)
            .map(|i| format!("  {i} {}  \n", "w".repeat(400)))
            .collect();
        put(&root, "wide.txt", wide);
        let r = grep_in(
            &root,
            json!({"pattern": "w", "path": "wide.txt", "max_results": 200}),
        );
        assert!(r.output.chars().count() <= OUTPUT_CAP_CHARS);
        let first = r.output.lines().next().unwrap();
        assert!(first.starts_with("wide.txt:1: 0 www"), "{first}");
        assert!(first.ends_with("w…"));
        assert_eq!(
            first.chars().count(),
            "wide.txt:1: ".len() + MAX_MATCH_CHARS + 1
        );
        let last = r.output.lines().last().unwrap();
        assert!(
            last.contains("more matches in 1 file: wide.txt ("),
            "{last}"
        );
    }

    #[test]
    fn no_match_suggests_a_looser_pattern() {
        let (_d, root) = repo();
        let r = grep_in(
            &root,
            json!({"pattern": "nothing_like_this", "glob": "*.py"}),
        );
        assert!(r.ok);
        assert!(r.output.starts_with("No matches for \"nothing_like_this\" in the workdir matching \"*.py\" (3 files searched)"), "{}", r.output);
        assert!(r.output.contains("looser pattern"));
        let r = grep_in(&root, json!({"pattern": ""}));
        assert_eq!(r.code.as_deref(), Some("BAD_ARGUMENTS"));
        let r = grep_in(&root, json!({"pattern": "x", "path": "/etc"}));
        assert_eq!(r.code.as_deref(), Some("OUTSIDE_WORKDIR"));
        let r = grep_in(&root, json!({"pattern": "x", "regex": true}));
        assert_eq!(r.code.as_deref(), Some("BAD_ARGUMENTS"));
    }

    #[test]
    fn greps_a_10k_line_repository_fast() {
        let (_d, root) = repo();
        for f in 0..100 {
            let text: String = (0..100)
                .map(|i| {
                    format!(
                        "fn f{f}_{i}(x: u32) -> u32 {{ x + {i} }} // needle{}\n",
                        i % 7
                    )
                })
                .collect();
            put(&root, &format!("src/gen/m{f:03}.rs"), text);
        }
        let t = std::time::Instant::now();
        let r = grep_in(&root, json!({"pattern": "needle3$", "path": "src/gen"}));
        let took = t.elapsed();
        assert!(took < std::time::Duration::from_millis(1000), "{took:?}");
        // 100 files × 14 lines (i % 7 == 3); 50 shown.
        assert!(
            r.output.contains("1,350 more matches in 97 files: "),
            "{}",
            r.output
        );
    }
}
