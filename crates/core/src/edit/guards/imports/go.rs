//! Go imports: `import "x"`, `import alias "x"`, `_`/`.` imports and
//! `import ( … )` blocks; the package name an import binds is guessed from
//! its path ([`package_names`]).

use super::{any_window_line, bound, is_ident, strip_line_comment, Binding, Scan, Window};

/// One Go import spec: `"path"`, `alias "path"`, `. "path"`, `_ "path"`.
fn parse_spec(spec: &str) -> Option<String> {
    let spec = spec.trim();
    let (alias, quoted) = match spec.find(['"', '`']) {
        Some(i) => (spec[..i].trim(), &spec[i..]),
        None => return None,
    };
    let q = quoted.chars().next()?;
    let body = &quoted[1..];
    let end = body.find(q)?;
    if !body[end + 1..].trim().is_empty() {
        return None;
    }
    let path = &body[..end];
    match alias {
        "" => Some(format!("import \"{path}\"")),
        a if a == "." || a == "_" || is_ident(a) => Some(format!("import {a} \"{path}\"")),
        _ => None,
    }
}

/// Adds the import keys of `content` to `s`: single-line imports and the
/// specs of each `import ( … )` block (up to its first `)`).
pub(super) fn imports(content: &str, s: &mut Scan) {
    let lines: Vec<&str> = content.lines().collect();
    let mut n = 0;
    while n < lines.len() {
        let first = n;
        let t = strip_line_comment(lines[n], "//").trim();
        n += 1;
        let Some(rest) = t.strip_prefix("import") else {
            continue;
        };
        let rest = rest.trim_start();
        if let Some(block) = rest.strip_prefix('(') {
            let mut body = block.to_string();
            let mut budget = 10_000;
            while !body.contains(')') && n < lines.len() && budget > 0 {
                body.push('\n');
                body.push_str(strip_line_comment(lines[n], "//"));
                n += 1;
                budget -= 1;
            }
            s.mark(first..n);
            let body = body.split(')').next().unwrap_or("");
            for spec in body.split(['\n', ';']) {
                if !spec.trim().is_empty() {
                    if let Some(k) = parse_spec(spec) {
                        s.keys.insert(k);
                    }
                }
            }
        } else if rest.len() < t.len() - "import".len() || rest.starts_with(['"', '`']) {
            if let Some(k) = parse_spec(rest.trim_end_matches(';')) {
                s.keys.insert(k);
                s.mark(first..n);
            }
        }
    }
}

/// Whether the scan reads `line` as the start of an import (single or
/// block); also true for words such as `importer`, which only costs a full
/// check.
fn starts_import(line: &str) -> bool {
    strip_line_comment(line, "//").trim().starts_with("import")
}

/// Whether an `import (` block may still be open at byte `at` (a line
/// start) of `text`. A block ends at the first line (its own included)
/// whose code has a `)`, so walking back from `at`: a line with a `)` that
/// comes first means no block is open (whatever was open closed there); an
/// `import (` line without one means one may be (it opened a block, or it
/// lies in one). Usually stops after a line or two: most Go lines call
/// something.
fn block_open_before(text: &str, at: usize) -> bool {
    let bytes = text.as_bytes();
    let mut end = at;
    while end > 0 {
        // `end - 1` is the line break that ends the line before `end`.
        let start = memchr::memrchr(b'\n', &bytes[..end - 1]).map_or(0, |i| i + 1);
        let line = &text[start..end - 1];
        let code = strip_line_comment(line.strip_suffix('\r').unwrap_or(line), "//");
        if let Some(rest) = code.trim().strip_prefix("import") {
            if let Some(body) = rest.trim_start().strip_prefix('(') {
                return !body.contains(')');
            }
        }
        if code.contains(')') {
            return false;
        }
        end = start;
    }
    false
}

/// Whether an edit whose changed lines are `windows` may have removed an
/// import key: a window line starts an import in either text, or a block
/// of the original may be open at a window (it consumes the lines up to its
/// `)`). See [`super::may_drop`] for why that suffices.
pub(super) fn may_lose_keys(original: &str, updated: &str, windows: &[Window]) -> bool {
    any_window_line(original, windows, |w| w.old.clone(), starts_import)
        || any_window_line(updated, windows, |w| w.new.clone(), starts_import)
        || windows
            .iter()
            .any(|w| block_open_before(original, w.old.start))
}

/// The names a Go key binds: its alias, else the candidate package names of
/// its path; `_` and `.` imports bind no name that can be checked.
pub(super) fn binding(key: &str) -> Binding {
    let Some(rest) = key.strip_prefix("import ") else {
        return Binding::Opaque;
    };
    match rest.split_once(' ') {
        Some((a, _)) => bound([a]),
        None => {
            let path = rest.trim_matches('"');
            let candidates = package_names(path);
            bound(candidates.iter().map(String::as_str))
        }
    }
}

/// The package names a Go import path may bind. A Go package's name is
/// declared in its own files, not in the path, so this is a guess by the
/// usual conventions: the last element; the one before it when the last is a
/// major version (`…/v2`); without a `.vN` suffix (`gopkg.in/yaml.v3` →
/// `yaml`); without a `go-` prefix or `-go` suffix; and the part after the
/// last `-` or `.`. Any candidate referenced counts as a use — the guess errs
/// towards keeping an import.
pub(super) fn package_names(path: &str) -> Vec<String> {
    let mut elems: Vec<&str> = path.split('/').filter(|e| !e.is_empty()).collect();
    let is_major = |e: &str| {
        e.strip_prefix('v')
            .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
    };
    if elems.len() > 1 && elems.last().is_some_and(|e| is_major(e)) {
        elems.pop();
    }
    let Some(last) = elems.last() else {
        return Vec::new();
    };
    let mut base = *last;
    if let Some((stem, version)) = base.rsplit_once('.') {
        if is_major(version) {
            base = stem;
        }
    }
    let mut out = vec![base.to_string()];
    let trimmed = base
        .strip_prefix("go-")
        .or_else(|| base.strip_suffix("-go"))
        .unwrap_or(base);
    out.push(trimmed.to_string());
    if let Some((_, tail)) = trimmed.rsplit_once(['-', '.']) {
        out.push(tail.to_string());
    }
    out.push(trimmed.replace(['-', '.'], "_"));
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::super::Lang;
    use super::*;

    fn keys(s: &str) -> Vec<String> {
        Lang::Go.imports(s).into_iter().collect()
    }

    #[test]
    fn go_forms() {
        assert_eq!(
            keys(
                "package main\nimport \"fmt\"\nimport (\n\tf \"flag\" // flags\n\t_ \"embed\"\n\t\"os\"\n)\n"
            ),
            vec![
                "import \"fmt\"",
                "import \"os\"",
                "import _ \"embed\"",
                "import f \"flag\""
            ]
        );
    }

    #[test]
    fn go_package_name_guesses() {
        let cases: [(&str, &[&str]); 9] = [
            ("fmt", &["fmt"]),
            ("net/http", &["http"]),
            ("gopkg.in/yaml.v3", &["yaml"]),
            ("github.com/go-chi/chi/v5", &["chi"]),
            ("github.com/mattn/go-sqlite3", &["go-sqlite3", "sqlite3"]),
            ("github.com/json-iterator/go", &["go"]),
            (
                "github.com/a/json-iter",
                &["iter", "json-iter", "json_iter"],
            ),
            ("k8s.io/client-go", &["client", "client-go"]),
            ("", &[]),
        ];
        for (path, want) in cases {
            assert_eq!(package_names(path), want, "{path}");
        }
    }
}
