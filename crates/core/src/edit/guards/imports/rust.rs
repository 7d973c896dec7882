//! Rust imports: `use` trees expanded per path (`use a::{b, c::d as e}` →
//! `use a::b`, `use a::c::d as e`), `extern crate`, `mod x;`; `pub use`
//! re-exports are remembered as such.

use super::{
    alias, any_window_line, bound, continues_into, is_ident, strip_line_comment, Binding, Scan,
    Window, MAX_STATEMENT_LINES,
};

fn strip_visibility(t: &str) -> &str {
    let Some(rest) = t.strip_prefix("pub") else {
        return t;
    };
    if let Some(inner) = rest.strip_prefix('(') {
        return match inner.find(')') {
            Some(close) => inner[close + 1..].trim_start(),
            None => t,
        };
    }
    if rest.starts_with(char::is_whitespace) {
        rest.trim_start()
    } else {
        t
    }
}

/// Drops leading `#[...]` attributes on the same line (`#[cfg(test)] use x;`).
fn strip_attributes(mut t: &str) -> &str {
    while let Some(rest) = t.strip_prefix("#[") {
        match rest.find(']') {
            Some(close) => t = rest[close + 1..].trim_start(),
            None => return t,
        }
    }
    t
}

/// Whether line `t` (trimmed) could only be Rust: `extern crate`, or a `use`
/// of a `::` path.
pub(super) fn signal(t: &str) -> bool {
    let t = strip_visibility(t);
    if t.starts_with("extern crate ") {
        return true;
    }
    t.strip_prefix("use ").is_some_and(|r| {
        let r = r.trim_start();
        r.contains("::") && r.trim_end().ends_with(';') || r.starts_with("crate::")
    })
}

#[derive(Debug, PartialEq)]
enum Tok {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Star,
}

fn use_tokens(s: &str) -> Option<Vec<Tok>> {
    let mut toks = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            ':' => {
                if chars.next() != Some(':') {
                    return None;
                }
                toks.push(Tok::PathSep);
            }
            '{' => toks.push(Tok::Open),
            '}' => toks.push(Tok::Close),
            ',' => toks.push(Tok::Comma),
            '*' => toks.push(Tok::Star),
            c if c == '_' || c.is_alphanumeric() || c == '#' => {
                let mut w = String::from(c);
                while let Some(d) = chars.next_if(|&d| d == '_' || d.is_alphanumeric()) {
                    w.push(d);
                }
                toks.push(Tok::Ident(w));
            }
            _ => return None,
        }
    }
    Some(toks)
}

/// Expands one use tree into paths (`a::b::c`, `a::b as d`, `a::*`).
fn use_tree(toks: &[Tok], i: &mut usize, prefix: &[String], out: &mut Vec<String>) -> Option<()> {
    let mut segs: Vec<String> = prefix.to_vec();
    loop {
        match toks.get(*i)? {
            Tok::PathSep => {
                // Leading `::` (2015-style absolute path).
                if segs.is_empty() {
                    segs.push(String::new());
                }
                *i += 1;
            }
            Tok::Open => {
                *i += 1;
                loop {
                    if toks.get(*i) == Some(&Tok::Close) {
                        *i += 1;
                        return Some(());
                    }
                    use_tree(toks, i, &segs, out)?;
                    match toks.get(*i)? {
                        Tok::Comma => *i += 1,
                        Tok::Close => {
                            *i += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            Tok::Star => {
                *i += 1;
                segs.push("*".to_string());
                out.push(segs.join("::"));
                return Some(());
            }
            Tok::Ident(name) => {
                *i += 1;
                if name != "self" || segs.is_empty() {
                    segs.push(name.clone());
                }
                match toks.get(*i) {
                    Some(Tok::PathSep) => *i += 1,
                    Some(Tok::Ident(kw)) if kw == "as" => {
                        let Some(Tok::Ident(alias)) = toks.get(*i + 1) else {
                            return None;
                        };
                        *i += 2;
                        out.push(format!("{} as {alias}", segs.join("::")));
                        return Some(());
                    }
                    _ => {
                        out.push(segs.join("::"));
                        return Some(());
                    }
                }
            }
            Tok::Close | Tok::Comma => return None,
        }
    }
}

/// Adds the import keys of `content` to `s`: each path of a `use` tree
/// (continued until its `;`), `extern crate` and `mod x;`; `pub use` keys are
/// recorded as re-exports.
pub(super) fn imports(content: &str, s: &mut Scan) {
    let lines: Vec<&str> = content.lines().collect();
    let mut n = 0;
    while n < lines.len() {
        let first = n;
        let (t, public) = head(lines[n]);
        n += 1;
        if let Some(rest) = t.strip_prefix("extern crate ") {
            let words: Vec<&str> = rest.trim_end_matches(';').split_whitespace().collect();
            match words.as_slice() {
                [name] if is_ident(name) => {
                    s.keys.insert(format!("extern crate {name}"));
                }
                [name, "as", alias] if is_ident(name) && is_ident(alias) => {
                    s.keys.insert(format!("extern crate {name} as {alias}"));
                }
                _ => {}
            }
            s.mark(first..n);
            continue;
        }
        if let Some(rest) = t.strip_prefix("mod ") {
            if let Some(name) = strip_line_comment(rest, "//").trim().strip_suffix(';') {
                if is_ident(name.trim()) {
                    s.keys.insert(format!("mod {}", name.trim()));
                    s.mark(first..n);
                }
            }
            continue;
        }
        if !t.starts_with("use ") {
            continue;
        }
        let mut rest = lines[first + 1..].iter().copied();
        let (stmt, continued) = use_statement(lines[first], &mut rest);
        n = first + 1 + continued;
        let Some((tree, _)) = stmt.split_once(';') else {
            continue;
        };
        let Some(toks) = use_tokens(tree) else {
            continue;
        };
        let mut paths = Vec::new();
        let mut i = 0;
        if use_tree(&toks, &mut i, &[], &mut paths).is_some() && i == toks.len() {
            let keys: Vec<String> = paths.into_iter().map(|p| format!("use {p}")).collect();
            if public {
                s.reexported.extend(keys.iter().cloned());
            }
            s.keys.extend(keys);
            s.mark(first..n);
        }
    }
}

/// A line's statement head: its text after leading attributes and
/// visibility (`#[cfg(test)] pub(crate) use …` → `use …`), and whether a
/// visibility was there.
fn head(line: &str) -> (&str, bool) {
    let attributed = strip_attributes(line.trim());
    let t = strip_visibility(attributed);
    (t, t.len() < attributed.len())
}

/// Whether the scan reads `line` as an import statement (`use`, `extern
/// crate`, `mod`), whether or not it binds anything.
fn starts_statement(line: &str) -> bool {
    let (t, _) = head(line);
    t.starts_with("use ") || t.starts_with("extern crate ") || t.starts_with("mod ")
}

/// Whether `line` starts a `use` statement, the only one that may go on
/// over several lines.
fn starts_use(line: &str) -> bool {
    head(line).0.starts_with("use ")
}

/// The part of a `use` line after `use`, without a `//` comment.
fn use_text(first: &str) -> &str {
    strip_line_comment(head(first).0.strip_prefix("use ").unwrap_or(""), "//")
}

/// The `use` statement whose first line is `first` (a [`starts_use`]
/// line): its text after `use`, joined without `//` comments with the
/// lines pulled from `rest` up to the one with its `;`, and how many lines
/// it pulled.
fn use_statement(first: &str, rest: &mut dyn Iterator<Item = &str>) -> (String, usize) {
    let mut taken = 0;
    let mut stmt = use_text(first).to_string();
    let mut budget = MAX_STATEMENT_LINES;
    while !stmt.contains(';') && budget > 0 {
        let Some(next) = rest.next() else {
            break;
        };
        stmt.push(' ');
        stmt.push_str(strip_line_comment(next, "//"));
        taken += 1;
        budget -= 1;
    }
    (stmt, taken)
}

/// Whether an edit whose changed lines are `windows` may have removed an
/// import key: a window line starts a statement in either text, or a `use`
/// of the original from before a window is still open at it (it consumes
/// the lines up to its `;`). See [`super::may_drop`] for why that suffices.
pub(super) fn may_lose_keys(original: &str, updated: &str, windows: &[Window]) -> bool {
    any_window_line(original, windows, |w| w.old.clone(), starts_statement)
        || any_window_line(updated, windows, |w| w.new.clone(), starts_statement)
        || windows.iter().any(|w| {
            continues_into(
                original,
                w.old.start,
                |line| strip_line_comment(line, "//").contains(';'),
                starts_use,
                |first, rest| {
                    // Most `use`s end on their line: no need to build them.
                    if !use_text(first).contains(';') {
                        use_statement(first, rest);
                    }
                },
            )
        })
}

/// The names a Rust key binds: the alias, else the last path segment (or the
/// crate); globs, `as _` and `mod x;` bind no name that can be checked.
pub(super) fn binding(key: &str) -> Binding {
    if let Some(rest) = key.strip_prefix("use ") {
        if rest.ends_with('*') {
            return Binding::Opaque;
        }
        match alias(rest) {
            Some(a) => bound([a.as_str()]),
            None => bound([rest.rsplit("::").next().unwrap_or(rest)]),
        }
    } else if let Some(rest) = key.strip_prefix("extern crate ") {
        match alias(rest) {
            Some(a) => bound([a.as_str()]),
            None => bound([rest]),
        }
    } else {
        // `mod x;` brings a whole file into the crate, referenced or not.
        Binding::Opaque
    }
}

/// The glob of the parent path (`use a::b::C` → `use a::b::*`).
pub(super) fn covering_glob(plain: &str) -> Option<String> {
    let (parent, _) = plain.strip_prefix("use ")?.rsplit_once("::")?;
    Some(format!("use {parent}::*"))
}

#[cfg(test)]
mod tests {
    use super::super::Lang;

    fn keys(s: &str) -> Vec<String> {
        Lang::Rust.imports(s).into_iter().collect()
    }

    #[test]
    fn rust_use_trees_expand_per_path() {
        assert_eq!(
            keys(
                "use std::{io::{self, Read}, fmt as f};\npub(crate) use a::*;\nextern crate x;\nmod m;\n"
            ),
            vec![
                "extern crate x",
                "mod m",
                "use a::*",
                "use std::fmt as f",
                "use std::io",
                "use std::io::Read"
            ]
        );
    }

    #[test]
    fn attributes_before_a_use_are_skipped() {
        assert_eq!(
            keys("#[cfg(test)] #[allow(unused)] use a::b;\n"),
            keys("#[cfg(test)]\nuse a::b;\n")
        );
    }
}
