//! JavaScript and TypeScript imports: `import … from`, `import 'x'`,
//! `import x = require('m')`, `require('m')` calls (with the names their
//! declaration binds) and `export … from` re-exports.

use super::{
    alias, bound, is_ident, is_ident_char, lines_containing, splice, strip_line_comment, Binding,
    Scan, Window, MAX_STATEMENT_LINES,
};

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Punct(char),
}

/// Tokens of one statement starting at `text`, ending after the first string
/// literal (the module specifier) or at a `;`, and the bytes they span.
fn statement_tokens(text: &str) -> (Vec<Tok>, usize) {
    read_statement(text, true)
}

/// Whether the statement read from the start of `text` (which ends with a
/// line break) surely ends before the end of `text`, by a look at bytes
/// only: with no `/` (so no comment) before the first `;` or quote, the
/// read ends at that `;`, or in that string by the end of its line when the
/// string has no `\\` escape. `false` means "read it to know".
fn ends_before(text: &str) -> bool {
    let b = text.as_bytes();
    let quote = memchr::memchr3(b'\'', b'"', b'`', b);
    let semi = memchr::memchr(b';', b);
    let Some(p) = quote.into_iter().chain(semi).min() else {
        return false;
    };
    if memchr::memchr(b'/', &b[..p]).is_some() {
        return false;
    }
    if b[p] == b';' {
        return true;
    }
    let line_end = memchr::memchr(b'\n', &b[p..]).map_or(b.len(), |i| p + i);
    !b[p..line_end].contains(&b'\\') && line_end + 1 < b.len()
}

/// How many bytes of `text` [`statement_tokens`] reads, without building
/// the tokens (a look back only needs to know where a statement ends).
fn statement_extent(text: &str) -> usize {
    read_statement(text, false).1
}

/// [`statement_tokens`], keeping the tokens only when `collect`.
fn read_statement(text: &str, collect: bool) -> (Vec<Tok>, usize) {
    let mut toks = Vec::new();
    let mut count = 0usize;
    let mut chars = text.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        if count > 400 {
            break;
        }
        if c.is_whitespace() {
            chars.next();
        } else if text[i..].starts_with("//") {
            while chars.next_if(|&(_, c)| c != '\n').is_some() {}
        } else if text[i..].starts_with("/*") {
            chars.next();
            chars.next();
            let mut prev = ' ';
            for (_, c) in chars.by_ref() {
                if prev == '*' && c == '/' {
                    break;
                }
                prev = c;
            }
        } else if c == '\'' || c == '"' || c == '`' {
            chars.next();
            let mut s = String::new();
            let mut closed = false;
            while let Some((_, d)) = chars.next() {
                if d == '\\' {
                    if let Some((_, e)) = chars.next() {
                        if collect {
                            s.push(e);
                        }
                    }
                } else if d == c {
                    closed = true;
                    break;
                } else if d == '\n' {
                    break;
                } else if collect {
                    s.push(d);
                }
            }
            if closed && collect {
                toks.push(Tok::Str(s));
            }
            break;
        } else if is_ident_char(c) {
            let mut s = String::new();
            while let Some((_, d)) = chars.next_if(|&(_, d)| is_ident_char(d)) {
                if collect {
                    s.push(d);
                }
            }
            count += 1;
            if collect {
                toks.push(Tok::Ident(s));
            }
        } else {
            chars.next();
            if c == ';' {
                break;
            }
            count += 1;
            if collect {
                toks.push(Tok::Punct(c));
            }
        }
    }
    let end = chars.peek().map_or(text.len(), |&(i, _)| i);
    (toks, end)
}

fn ident(t: Option<&Tok>) -> Option<&str> {
    match t {
        Some(Tok::Ident(s)) => Some(s),
        _ => None,
    }
}

fn is_punct(t: Option<&Tok>, p: char) -> bool {
    t == Some(&Tok::Punct(p))
}

/// Parses `{ a, type b as c, "d-e" as f }` starting after the `{`; returns
/// the specifiers as `a` / `b as c` and the index after `}`.
fn specifiers(toks: &[Tok], mut i: usize) -> Option<(Vec<String>, usize)> {
    let mut specs = Vec::new();
    loop {
        if is_punct(toks.get(i), '}') {
            return Some((specs, i + 1));
        }
        let mut name = match toks.get(i)? {
            Tok::Ident(s) => s.clone(),
            Tok::Str(s) => format!("'{s}'"),
            Tok::Punct(_) => return None,
        };
        i += 1;
        // `type X` inside braces (TypeScript): the modifier is not part of the name.
        if name == "type" {
            if let Some(Tok::Ident(n)) = toks.get(i) {
                if n != "as" || matches!(toks.get(i + 1), Some(Tok::Ident(_))) {
                    name = n.clone();
                    i += 1;
                }
            }
        }
        if ident(toks.get(i)) == Some("as") {
            let alias = ident(toks.get(i + 1))?;
            name = format!("{name} as {alias}");
            i += 2;
        }
        specs.push(name);
        if is_punct(toks.get(i), ',') {
            i += 1;
        } else if !is_punct(toks.get(i), '}') {
            return None;
        }
    }
}

fn statement_keys(toks: &[Tok]) -> Vec<String> {
    statement_keys_opt(toks).unwrap_or_default()
}

fn statement_keys_opt(toks: &[Tok]) -> Option<Vec<String>> {
    let head = ident(toks.first())?;
    let mut i = 1;
    if head == "import" {
        if let Some(Tok::Str(m)) = toks.get(1) {
            return Some(vec![format!("import '{m}'")]);
        }
        if ident(toks.get(1)) == Some("type")
            && !matches!(ident(toks.get(2)), Some("from"))
            && !is_punct(toks.get(2), ',')
            && !is_punct(toks.get(2), '=')
        {
            i = 2;
        }
        // import X = require('m')  (TypeScript)
        if let (Some(x), true, Some("require"), true, Some(Tok::Str(m))) = (
            ident(toks.get(i)),
            is_punct(toks.get(i + 1), '='),
            ident(toks.get(i + 2)),
            is_punct(toks.get(i + 3), '('),
            toks.get(i + 4),
        ) {
            return Some(vec![format!("import {x} = require('{m}')")]);
        }
        let mut bindings: Vec<String> = Vec::new();
        loop {
            match toks.get(i)? {
                Tok::Ident(s) if s == "from" && !bindings.is_empty() => {
                    i += 1;
                    break;
                }
                Tok::Ident(s) => {
                    bindings.push(s.clone());
                    i += 1;
                }
                Tok::Punct('*') => {
                    if ident(toks.get(i + 1)) != Some("as") {
                        return None;
                    }
                    bindings.push(format!("* as {}", ident(toks.get(i + 2))?));
                    i += 3;
                }
                Tok::Punct('{') => {
                    let (specs, next) = specifiers(toks, i + 1)?;
                    bindings.extend(specs.into_iter().map(|s| format!("{{ {s} }}")));
                    i = next;
                    if bindings.is_empty() {
                        // `import {} from 'm'` still loads the module.
                        bindings.push("{}".to_string());
                    }
                }
                _ => return None,
            }
            if is_punct(toks.get(i), ',') {
                i += 1;
            }
        }
        let Some(Tok::Str(m)) = toks.get(i) else {
            return None;
        };
        return Some(
            bindings
                .into_iter()
                .map(|b| format!("import {b} from '{m}'"))
                .collect(),
        );
    }
    if head == "export" {
        if ident(toks.get(1)) == Some("type") {
            i = 2;
        }
        let mut exported = Vec::new();
        match toks.get(i)? {
            Tok::Punct('*') => {
                i += 1;
                if ident(toks.get(i)) == Some("as") {
                    exported.push(format!("* as {}", ident(toks.get(i + 1))?));
                    i += 2;
                } else {
                    exported.push("*".to_string());
                }
            }
            Tok::Punct('{') => {
                let (specs, next) = specifiers(toks, i + 1)?;
                exported.extend(specs.into_iter().map(|s| format!("{{ {s} }}")));
                i = next;
            }
            _ => return None,
        }
        if ident(toks.get(i)) != Some("from") {
            return None;
        }
        let Some(Tok::Str(m)) = toks.get(i + 1) else {
            return None;
        };
        return Some(
            exported
                .into_iter()
                .map(|e| format!("export {e} from '{m}'"))
                .collect(),
        );
    }
    None
}

/// `require('m')` calls on line `n` (not in a `//` comment), which starts at
/// byte `line_start` of `content`.
fn require_calls(content: &str, line_start: usize, n: usize, s: &mut Scan) {
    let line = content[line_start..].lines().next().unwrap_or("");
    for (i, m) in requires_in(line) {
        let binding = require_binding(&content[..line_start + i]);
        if matches!(binding, Binding::Names(_)) {
            s.mark(n..n + 1);
        }
        s.require(format!("require('{m}')"), binding);
    }
}

/// The `require('m')` calls of `line` before any `//` comment: where each
/// `require` starts in the line, and its module `m`.
fn requires_in(line: &str) -> Vec<(usize, &str)> {
    let code = strip_line_comment(line, "//");
    let mut found = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("require") {
        let at = (code.len() - rest.len()) + i;
        let before_ok = rest[..i]
            .chars()
            .next_back()
            .is_none_or(|c| !is_ident_char(c) && c != '.');
        let after = rest[i + "require".len()..].trim_start();
        rest = &rest[i + "require".len()..];
        if !before_ok {
            continue;
        }
        let Some(arg) = after.strip_prefix('(') else {
            continue;
        };
        let arg = arg.trim_start();
        let Some(q) = arg.chars().next().filter(|c| matches!(c, '\'' | '"' | '`')) else {
            continue;
        };
        let body = &arg[1..];
        if let Some(end) = body.find(q) {
            if body[end + 1..].trim_start().starts_with(')') {
                found.push((at, &body[..end]));
            }
        }
    }
    found
}

/// The names bound by the declaration that `before` (the text up to a
/// `require`) ends with: `const x =` → x, `let { a, b: c } =` → a, c. Any
/// other context (an argument, an assignment to a property) is `Opaque`.
fn require_binding(before: &str) -> Binding {
    let Some(lhs) = before.trim_end().strip_suffix('=') else {
        return Binding::Opaque;
    };
    if lhs.ends_with([
        '=', '!', '<', '>', '+', '-', '*', '/', '%', '&', '|', '^', '?',
    ]) {
        return Binding::Opaque;
    }
    let lhs = lhs.trim_end();
    let (names, decl) = if let Some(pattern) = lhs.strip_suffix('}') {
        let Some(open) = pattern.rfind('{') else {
            return Binding::Opaque;
        };
        let inner = &pattern[open + 1..];
        if inner.contains(['{', '}', '[', ']']) {
            return Binding::Opaque;
        }
        let mut names = Vec::new();
        for entry in inner.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let entry = entry.strip_prefix("...").unwrap_or(entry);
            let target = entry.rsplit_once(':').map_or(entry, |(_, t)| t);
            let target = target.split('=').next().unwrap_or("").trim();
            if !is_ident(target) {
                return Binding::Opaque;
            }
            names.push(target.to_string());
        }
        (names, &pattern[..open])
    } else {
        let start = lhs
            .char_indices()
            .rev()
            .take_while(|&(_, c)| is_ident_char(c))
            .last()
            .map_or(lhs.len(), |(i, _)| i);
        let name = &lhs[start..];
        if !is_ident(name) {
            return Binding::Opaque;
        }
        (vec![name.to_string()], &lhs[..start])
    };
    let decl = decl.trim_end();
    let keyword = ["const", "let", "var", "import"].iter().any(|kw| {
        decl.strip_suffix(kw)
            .is_some_and(|pre| !pre.ends_with(is_ident_char) && !pre.ends_with('.'))
    });
    if keyword && !names.is_empty() {
        Binding::Names(names)
    } else {
        Binding::Opaque
    }
}

/// Adds the import keys of `content` to `s`: every line that starts an
/// `import` or `export … from` statement (read up to its module string), and
/// every `require('m')` call with the names its declaration binds.
pub(super) fn imports(content: &str, s: &mut Scan) {
    let lines: Vec<&str> = content.lines().collect();
    let mut offsets = Vec::with_capacity(lines.len());
    let mut off = 0;
    for l in content.split_inclusive('\n') {
        offsets.push(off);
        off += l.len();
    }
    for (n, line) in lines.iter().enumerate() {
        if is_comment_line(line) {
            continue;
        }
        require_calls(content, offsets[n], n, s);
        let Some(indent) = statement_start(line) else {
            continue;
        };
        let start = offsets[n] + indent;
        let stop = offsets
            .get(n + MAX_STATEMENT_LINES)
            .copied()
            .unwrap_or(content.len());
        let (keys, len) = statement_at(content, start, stop);
        if !keys.is_empty() {
            let spanned = content[start..start + len].matches('\n').count();
            s.mark(n..n + spanned + 1);
            s.keys.extend(keys);
        }
    }
}

/// Whether `line` is (the start of) a comment line, which the scan skips.
fn is_comment_line(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("//") || t.starts_with('*') || t.starts_with("/*")
}

/// Where the scan starts reading a statement on `line`, when the line
/// starts one: `import`, or `export` of braces or `*` (an `export … from`
/// candidate), followed by a space, brace, `*` or quote; not in a comment.
fn statement_start(line: &str) -> Option<usize> {
    if is_comment_line(line) {
        return None;
    }
    let t = line.trim_start();
    let starts_statement = ["import", "export"].iter().any(|kw| {
        t.strip_prefix(kw)
            .is_some_and(|r| r.starts_with(|c: char| c.is_whitespace() || "{*'\"".contains(c)))
    });
    if !starts_statement {
        return None;
    }
    if let Some(r) = t.strip_prefix("export") {
        let r = r.trim_start();
        let r = r.strip_prefix("type").map_or(r, str::trim_start);
        if !(r.starts_with('{') || r.starts_with('*')) {
            return None;
        }
    }
    Some(line.len() - t.len())
}

/// The keys of the statement the scan reads from byte `start` of `content`
/// (where a line's [`statement_start`] is) up to at most `stop`, and how
/// many bytes it read.
fn statement_at(content: &str, start: usize, stop: usize) -> (Vec<String>, usize) {
    let (toks, len) = statement_tokens(&content[start..stop]);
    (statement_keys(&toks), len)
}

/// Where the scan stops reading a statement of the line starting at byte
/// `line_start`: the start of the line `MAX_STATEMENT_LINES` lines further.
fn stop_after(content: &str, line_start: usize) -> usize {
    memchr::memchr_iter(b'\n', &content.as_bytes()[line_start..])
        .nth(MAX_STATEMENT_LINES - 1)
        .map_or(content.len(), |i| line_start + i + 1)
}

/// The lines of `content[range]` (whole lines), each with the byte where
/// it starts, spelled as [`str::lines`] does.
fn lines_from(content: &str, range: std::ops::Range<usize>) -> impl Iterator<Item = (usize, &str)> {
    let mut off = range.start;
    content[range].split_inclusive('\n').map(move |piece| {
        let at = off;
        off += piece.len();
        let line = piece.strip_suffix('\n').unwrap_or(piece);
        (at, line.strip_suffix('\r').unwrap_or(line))
    })
}

/// Whether an edit whose changed lines are `windows` may have removed an
/// import key. Every line is scanned on its own (none is consumed by
/// another statement, keys are a plain union) and a statement reads only
/// forwards, so a key of the original can only be lost by a statement or
/// `require` of the original that has keys and reads part of a window:
/// one on a window line, or a statement from before the window that reads
/// into it (at most `MAX_STATEMENT_LINES` lines back). Keys the updated
/// text gains do not matter, nor do statements without keys — such as
/// Python's `import os`, read as an unfinished JavaScript import when the
/// path does not tell the syntax.
pub(super) fn may_lose_keys(original: &str, windows: &[Window]) -> bool {
    // The keys of the statement at `start` (on the line at `line_start`),
    // read as the scan reads it, when it reads past byte `at`.
    let keyed_read_past = |start: usize, line_start: usize, at: usize| {
        let (keys, len) = statement_at(original, start, stop_after(original, line_start));
        !keys.is_empty() && start + len > at
    };
    windows.iter().any(|w| {
        let on_window = lines_from(original, w.old.clone()).any(|(at, line)| {
            !is_comment_line(line) && !requires_in(line).is_empty()
                || statement_start(line).is_some_and(|i| keyed_read_past(at + i, at, at))
        });
        let at = w.old.start;
        let from = splice::lookback_start(original, at, MAX_STATEMENT_LINES);
        on_window
            || lines_containing(original, from, at, &["import", "export"])
                .into_iter()
                .any(|(line_start, _, line)| {
                    statement_start(line).is_some_and(|i| {
                        let start = line_start + i;
                        // Most statements end (at their module string) long
                        // before `at`: reading up to `at` tells, cheaply.
                        !ends_before(&original[start..at])
                            && start + statement_extent(&original[start..at]) >= at
                            && keyed_read_past(start, line_start, at)
                    })
                })
    })
}

/// The names a JavaScript key binds: the default, namespace, named or
/// `import x = require()` binding (its alias when renamed). Side-effect
/// imports, `import {} from`, re-exports and bare `require('m')` keys bind no
/// name that can be checked (a `require` bound by a declaration is looked up
/// in the scan, not here).
pub(super) fn binding(key: &str) -> Binding {
    let Some(rest) = key.strip_prefix("import ") else {
        // `export … from` re-exports; a bare `require('m')` without a
        // declaration is a side effect.
        return Binding::Opaque;
    };
    if rest.starts_with(['\'', '"']) || rest.starts_with("{} ") {
        return Binding::Opaque;
    }
    if let Some((x, _)) = rest.split_once(" = require(") {
        return bound([x]);
    }
    let Some((binding, _)) = rest.rsplit_once(" from ") else {
        return Binding::Opaque;
    };
    let inner = binding.trim_start_matches("{ ").trim_end_matches(" }");
    let inner = inner.strip_prefix("* as ").unwrap_or(inner);
    match alias(inner) {
        Some(a) => bound([a.as_str()]),
        None => bound([inner]),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Lang;
    use super::*;

    fn keys(s: &str) -> Vec<String> {
        Lang::JavaScript.imports(s).into_iter().collect()
    }

    fn names(v: &[&str]) -> Binding {
        Binding::Names(v.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn js_statement_forms() {
        assert_eq!(
            keys(
                "import D, { a, b as c, type T } from 'm';\nimport * as ns from \"n\";\nimport 's';\nconst r = require('r');\nexport { x } from './x';\nexport * from './y';\n"
            ),
            vec![
                "export * from './y'",
                "export { x } from './x'",
                "import 's'",
                "import * as ns from 'n'",
                "import D from 'm'",
                "import { T } from 'm'",
                "import { a } from 'm'",
                "import { b as c } from 'm'",
                "require('r')"
            ]
        );
    }

    #[test]
    fn require_declarations() {
        let cases = [
            ("const x = ", names(&["x"])),
            ("let { a, b: c, ...rest } = ", names(&["a", "c", "rest"])),
            ("var {\n  a,\n  b = 1,\n} =", names(&["a", "b"])),
            ("import x = ", names(&["x"])),
            ("foo(", Binding::Opaque),
            ("module.exports = ", Binding::Opaque),
            ("exports.x = ", Binding::Opaque),
            ("x = ", Binding::Opaque),
            ("if (a == ", Binding::Opaque),
            ("const { a: { b } } = ", Binding::Opaque),
            ("", Binding::Opaque),
        ];
        for (before, want) in cases {
            assert_eq!(require_binding(before), want, "{before:?}");
        }
    }
}
