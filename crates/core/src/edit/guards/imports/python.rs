//! Python imports: `import a.b as c`, `from x import (a, b as c)`,
//! `from . import y`, `from m import *`.

use super::{
    alias, any_window_line, bound, continues_into, is_dotted_path, is_ident, strip_line_comment,
    Binding, Scan, Window, MAX_STATEMENT_LINES,
};
use std::collections::BTreeSet;

/// Adds the import keys of `content` to `s`: `import …` and `from … import …`
/// statements, continued over lines by an open parenthesis or a trailing `\\`.
pub(super) fn imports(content: &str, s: &mut Scan) {
    let lines: Vec<&str> = content.lines().collect();
    let mut n = 0;
    while n < lines.len() {
        let first = n;
        if !starts_statement(lines[n]) {
            n += 1;
            continue;
        }
        let mut rest = lines[first + 1..].iter().copied();
        let (stmt, continued) = statement(lines[first], &mut rest);
        n = first + 1 + continued;
        let found = s.keys.len();
        for part in stmt.split(';') {
            statement_keys(part.trim(), &mut s.keys);
        }
        if s.keys.len() > found {
            s.mark(first..n);
        }
    }
}

/// Whether the scan starts a statement at `line` (one that may bind
/// nothing, yet consumes its continuation lines).
fn starts_statement(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("import ") || t.starts_with("from ")
}

/// Whether a statement read so far as `stmt` goes on to the next line: an
/// open parenthesis, or a trailing `\\`.
fn goes_on(stmt: &str) -> bool {
    stmt.contains('(') && !stmt.contains(')') || stmt.ends_with('\\')
}

/// The statement whose first line is `first` (a [`starts_statement`]
/// line), its continuation lines (pulled from `rest` only while it goes
/// on) joined without comments, and how many it took.
fn statement(first: &str, rest: &mut dyn Iterator<Item = &str>) -> (String, usize) {
    let mut taken = 0;
    let mut stmt = strip_line_comment(first.trim_start(), "#")
        .trim_end()
        .to_string();
    let mut budget = MAX_STATEMENT_LINES;
    while goes_on(&stmt) && budget > 0 {
        let Some(next) = rest.next() else {
            break;
        };
        if stmt.ends_with('\\') {
            stmt.pop();
        }
        stmt.push(' ');
        stmt.push_str(strip_line_comment(next, "#").trim());
        taken += 1;
        budget -= 1;
    }
    (stmt, taken)
}

/// Whether an edit whose changed lines are `windows` may have removed an
/// import key: a window line starts a statement in either text (an
/// inserted `from x import (` swallows the lines after it), or a statement
/// of the original from before a window continues into it (the window may
/// close it, or reopen it). See [`super::may_drop`] for why that suffices.
pub(super) fn may_lose_keys(original: &str, updated: &str, windows: &[Window]) -> bool {
    any_window_line(original, windows, |w| w.old.clone(), starts_statement)
        || any_window_line(updated, windows, |w| w.new.clone(), starts_statement)
        || windows.iter().any(|w| {
            continues_into(
                original,
                w.old.start,
                |line| {
                    let code = strip_line_comment(line, "#").trim();
                    code.contains(')') && !code.ends_with('\\')
                },
                starts_statement,
                |first, rest| {
                    // Most imports are one line: no need to build them.
                    if goes_on(strip_line_comment(first.trim_start(), "#").trim_end()) {
                        statement(first, rest);
                    }
                },
            )
        })
}

/// `name` or `name as alias`, normalized; `None` when not that shape.
fn item(item: &str, allow_dots: bool) -> Option<String> {
    let words: Vec<&str> = item.split_whitespace().collect();
    let valid = |w: &str| {
        if allow_dots {
            is_dotted_path(w)
        } else {
            is_ident(w)
        }
    };
    match words.as_slice() {
        [name] if valid(name) => Some((*name).to_string()),
        [name, "as", alias] if valid(name) && is_ident(alias) => Some(format!("{name} as {alias}")),
        _ => None,
    }
}

fn statement_keys(stmt: &str, out: &mut BTreeSet<String>) {
    if let Some(rest) = stmt.strip_prefix("import ") {
        let items: Option<Vec<String>> = rest.split(',').map(|i| item(i, true)).collect();
        if let Some(items) = items {
            out.extend(items.into_iter().map(|i| format!("import {i}")));
        }
    } else if let Some(rest) = stmt.strip_prefix("from ") {
        let Some((module, names)) = rest.split_once(" import ") else {
            return;
        };
        let module = module.trim();
        let bare = module.trim_start_matches('.');
        if !(bare.is_empty() && !module.is_empty() || is_dotted_path(bare)) {
            return;
        }
        let names = names.trim();
        let names = names
            .strip_prefix('(')
            .and_then(|n| n.strip_suffix(')'))
            .unwrap_or(names);
        if names.trim() == "*" {
            out.insert(format!("from {module} import *"));
            return;
        }
        let items: Option<Vec<String>> = names
            .split(',')
            .map(str::trim)
            .filter(|i| !i.is_empty())
            .map(|i| item(i, false))
            .collect();
        if let Some(items) = items {
            out.extend(
                items
                    .into_iter()
                    .map(|i| format!("from {module} import {i}")),
            );
        }
    }
}

/// The names a Python key binds: `import a.b.c` binds `a`, an alias binds
/// itself, a from-import binds each name; `from m import *` binds no name
/// that can be checked.
pub(super) fn binding(key: &str) -> Binding {
    if let Some(rest) = key.strip_prefix("import ") {
        match alias(rest) {
            Some(a) => bound([a.as_str()]),
            // `import a.b.c` binds `a`.
            None => bound([rest.split('.').next().unwrap_or(rest)]),
        }
    } else if let Some((_, item)) = key.split_once(" import ") {
        if item == "*" {
            return Binding::Opaque;
        }
        match alias(item) {
            Some(a) => bound([a.as_str()]),
            None => bound([item]),
        }
    } else {
        Binding::Opaque
    }
}

/// The star import of the module a from-import names (`from m import a` →
/// `from m import *`).
pub(super) fn covering_glob(plain: &str) -> Option<String> {
    let (module, _) = plain.strip_prefix("from ")?.split_once(" import ")?;
    Some(format!("from {module} import *"))
}

#[cfg(test)]
mod tests {
    use super::super::Lang;

    fn keys(s: &str) -> Vec<String> {
        Lang::Python.imports(s).into_iter().collect()
    }

    #[test]
    fn python_forms() {
        assert_eq!(
            keys(
                "import os, sys as s\nfrom . import (a,\n    b as c,  # note\n)\nfrom x.y import *\n"
            ),
            vec![
                "from . import a",
                "from . import b as c",
                "from x.y import *",
                "import os",
                "import sys as s"
            ]
        );
    }
}
