//! Import statements, parsed per language into normalized keys.
//!
//! A key names one imported thing in a canonical spelling (`import os`,
//! `from typing import List`, `use std::io::Read`, `import { a } from 'b'`),
//! so that moving, re-ordering, regrouping or re-wrapping imports keeps the
//! same set of keys, and removing one imported name removes its key.

use super::{GuardViolation, ViolationKind};
use std::collections::BTreeSet;

/// An import syntax the dropped-imports guard understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    /// JavaScript and TypeScript: `import … from`, `import 'x'`, `require()`,
    /// `export … from`.
    JavaScript,
    /// Python: `import a.b as c`, `from x import (a, b)`.
    Python,
    /// Rust: `use` trees (per path), `extern crate`, `mod x;`.
    Rust,
    /// Go: `import "x"`, `import alias "x"`, `import ( … )` blocks.
    Go,
    /// Java and Kotlin: `import a.b.C;`, `import static …`, `import a.b.C as D`.
    Java,
}

/// The most imports a message lists by name.
const LISTED: usize = 12;
/// The most lines one statement may span (a bound on work for broken input).
const MAX_STATEMENT_LINES: usize = 200;

impl Lang {
    /// The syntax for a file name, by extension (case-insensitive); `None`
    /// for extensions that are none of the supported languages.
    pub fn from_path(path: &str) -> Option<Lang> {
        let name = path.rsplit(['/', '\\']).next().unwrap_or(path);
        let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
        match ext.as_str() {
            "js" | "jsx" | "mjs" | "cjs" | "ts" | "tsx" | "mts" | "cts" | "vue" | "svelte"
            | "astro" => Some(Lang::JavaScript),
            "py" | "pyi" | "pyw" => Some(Lang::Python),
            "rs" => Some(Lang::Rust),
            "go" => Some(Lang::Go),
            "java" | "kt" | "kts" => Some(Lang::Java),
            _ => None,
        }
    }

    /// Guesses the syntax from content, by signals that only one of the
    /// languages has (`use a::b;`, `package main` with quoted imports,
    /// `import a.b.C;`, `import x from 'y'`, `from x import y`); `None` when
    /// nothing tells.
    pub fn detect(content: &str) -> Option<Lang> {
        let mut go_package = false;
        let mut java = false;
        let mut kotlin_package = false;
        for line in content.lines() {
            let t = line.trim();
            if rust_signal(t) {
                return Some(Lang::Rust);
            }
            if let Some(rest) = t.strip_prefix("package ") {
                let rest = rest.trim();
                if let Some(name) = rest.strip_suffix(';') {
                    java |= is_dotted_path(name.trim());
                } else if is_ident(rest) {
                    go_package = true;
                } else if is_dotted_path(rest) {
                    kotlin_package = true;
                }
            }
            if let Some(rest) = t.strip_prefix("import ") {
                let rest = rest.trim();
                let rest = rest.strip_prefix("static ").unwrap_or(rest).trim();
                if let Some(path) = rest.strip_suffix(';') {
                    java |= path.contains('.') && is_import_path(path.trim());
                }
            }
        }
        if go_package && !go_imports(content).is_empty() {
            return Some(Lang::Go);
        }
        if java || (go_package || kotlin_package) && !java_imports(content).is_empty() {
            return Some(Lang::Java);
        }
        if !js_imports(content).is_empty() {
            return Some(Lang::JavaScript);
        }
        if !python_imports(content).is_empty() {
            return Some(Lang::Python);
        }
        None
    }

    /// The normalized import keys of `content` in this syntax.
    pub fn imports(self, content: &str) -> BTreeSet<String> {
        match self {
            Lang::JavaScript => js_imports(content),
            Lang::Python => python_imports(content),
            Lang::Rust => rust_imports(content),
            Lang::Go => go_imports(content),
            Lang::Java => java_imports(content),
        }
    }
}

pub(super) fn dropped(original: &str, updated: &str, path: Option<&str>) -> Option<GuardViolation> {
    let has_extension = path.is_some_and(|p| {
        p.rsplit(['/', '\\'])
            .next()
            .is_some_and(|name| name.trim_start_matches('.').contains('.'))
    });
    let lang = match path {
        Some(p) if has_extension => Lang::from_path(p)?,
        _ => Lang::detect(original)?,
    };
    let before = lang.imports(original);
    if before.is_empty() {
        return None;
    }
    let after = lang.imports(updated);
    let gone: Vec<&String> = before.difference(&after).collect();
    // An import that was rewritten (a renamed module or name, an edited
    // path) disappears as one key and reappears as another: that is the
    // model changing an import on purpose, not losing it. Only a net loss —
    // more imports gone than new ones arrived — is the accident this guard
    // exists for (a truncated or re-typed header).
    let arrived = after.difference(&before).count();
    if gone.is_empty() || gone.len() <= arrived {
        return None;
    }
    let mut listed: Vec<String> = gone.iter().take(LISTED).map(|k| format!("`{k}`")).collect();
    if gone.len() > LISTED {
        listed.push(format!("and {} more", gone.len() - LISTED));
    }
    Some(GuardViolation {
        kind: ViolationKind::DroppedImports,
        message: format!(
            "the edit drops {} import{} that the original had: {}. Keep the import statements \
             (send them unchanged in the new text); remove an import only in a deliberate \
             edit once nothing uses it.",
            gone.len(),
            if gone.len() == 1 { "" } else { "s" },
            listed.join(", ")
        ),
    })
}

fn is_ident_char(c: char) -> bool {
    c == '_' || c == '$' || c.is_alphanumeric()
}

fn is_ident(s: &str) -> bool {
    !s.is_empty() && !s.starts_with(|c: char| c.is_ascii_digit()) && s.chars().all(is_ident_char)
}

fn is_dotted_path(s: &str) -> bool {
    !s.is_empty() && s.split('.').all(is_ident)
}

/// A Java/Kotlin/Python import path: dotted identifiers, optionally ending in `.*`.
fn is_import_path(s: &str) -> bool {
    let s = s.strip_suffix(".*").unwrap_or(s);
    is_dotted_path(s)
}

fn strip_line_comment<'a>(line: &'a str, opener: &str) -> &'a str {
    match line.find(opener) {
        Some(i) => &line[..i],
        None => line,
    }
}

// ---------------------------------------------------------------- JavaScript

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Punct(char),
}

/// Tokens of one statement starting at `text`, ending after the first string
/// literal (the module specifier) or at a `;`.
fn js_statement_tokens(text: &str) -> Vec<Tok> {
    let mut toks = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        if toks.len() > 400 {
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
                        s.push(e);
                    }
                } else if d == c {
                    closed = true;
                    break;
                } else if d == '\n' {
                    break;
                } else {
                    s.push(d);
                }
            }
            if closed {
                toks.push(Tok::Str(s));
            }
            break;
        } else if is_ident_char(c) {
            let mut s = String::new();
            while let Some((_, d)) = chars.next_if(|&(_, d)| is_ident_char(d)) {
                s.push(d);
            }
            toks.push(Tok::Ident(s));
        } else {
            chars.next();
            if c == ';' {
                break;
            }
            toks.push(Tok::Punct(c));
        }
    }
    toks
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
fn js_specifiers(toks: &[Tok], mut i: usize) -> Option<(Vec<String>, usize)> {
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

fn js_statement_keys(toks: &[Tok]) -> Vec<String> {
    js_statement_keys_opt(toks).unwrap_or_default()
}

fn js_statement_keys_opt(toks: &[Tok]) -> Option<Vec<String>> {
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
                    let (specs, next) = js_specifiers(toks, i + 1)?;
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
                let (specs, next) = js_specifiers(toks, i + 1)?;
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

/// `require('m')` calls on a line (not in a `//` comment).
fn js_requires(line: &str, out: &mut BTreeSet<String>) {
    let code = strip_line_comment(line, "//");
    let mut rest = code;
    while let Some(i) = rest.find("require") {
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
            let m = &body[..end];
            if body[end + 1..].trim_start().starts_with(')') {
                out.insert(format!("require('{m}')"));
            }
        }
    }
}

fn js_imports(content: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let lines: Vec<&str> = content.lines().collect();
    let mut offsets = Vec::with_capacity(lines.len());
    let mut off = 0;
    for l in content.split_inclusive('\n') {
        offsets.push(off);
        off += l.len();
    }
    for (n, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        if t.starts_with("//") || t.starts_with('*') || t.starts_with("/*") {
            continue;
        }
        js_requires(line, &mut out);
        let starts_statement = ["import", "export"].iter().any(|kw| {
            t.strip_prefix(kw)
                .is_some_and(|r| r.starts_with(|c: char| c.is_whitespace() || "{*'\"".contains(c)))
        });
        if !starts_statement {
            continue;
        }
        if let Some(r) = t.strip_prefix("export") {
            let r = r.trim_start();
            let r = r.strip_prefix("type").map_or(r, str::trim_start);
            if !(r.starts_with('{') || r.starts_with('*')) {
                continue;
            }
        }
        let start = offsets[n] + (line.len() - t.len());
        let stop = offsets
            .get(n + MAX_STATEMENT_LINES)
            .copied()
            .unwrap_or(content.len());
        out.extend(js_statement_keys(&js_statement_tokens(
            &content[start..stop],
        )));
    }
    out
}

// ------------------------------------------------------------------- Python

fn python_imports(content: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let lines: Vec<&str> = content.lines().collect();
    let mut n = 0;
    while n < lines.len() {
        let t = lines[n].trim_start();
        n += 1;
        if !(t.starts_with("import ") || t.starts_with("from ")) {
            continue;
        }
        let mut stmt = strip_line_comment(t, "#").trim_end().to_string();
        let mut budget = MAX_STATEMENT_LINES;
        loop {
            let open_paren = stmt.contains('(') && !stmt.contains(')');
            let continued = stmt.ends_with('\\');
            if !(open_paren || continued) || n >= lines.len() || budget == 0 {
                break;
            }
            if continued {
                stmt.pop();
            }
            stmt.push(' ');
            stmt.push_str(strip_line_comment(lines[n], "#").trim());
            n += 1;
            budget -= 1;
        }
        for part in stmt.split(';') {
            python_statement_keys(part.trim(), &mut out);
        }
    }
    out
}

/// `name` or `name as alias`, normalized; `None` when not that shape.
fn python_item(item: &str, allow_dots: bool) -> Option<String> {
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

fn python_statement_keys(stmt: &str, out: &mut BTreeSet<String>) {
    if let Some(rest) = stmt.strip_prefix("import ") {
        let items: Option<Vec<String>> = rest.split(',').map(|i| python_item(i, true)).collect();
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
            .map(|i| python_item(i, false))
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

// --------------------------------------------------------------------- Rust

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

fn rust_signal(t: &str) -> bool {
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
enum RustTok {
    Ident(String),
    PathSep,
    Open,
    Close,
    Comma,
    Star,
}

fn rust_use_tokens(s: &str) -> Option<Vec<RustTok>> {
    let mut toks = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            ':' => {
                if chars.next() != Some(':') {
                    return None;
                }
                toks.push(RustTok::PathSep);
            }
            '{' => toks.push(RustTok::Open),
            '}' => toks.push(RustTok::Close),
            ',' => toks.push(RustTok::Comma),
            '*' => toks.push(RustTok::Star),
            c if c == '_' || c.is_alphanumeric() || c == '#' => {
                let mut w = String::from(c);
                while let Some(d) = chars.next_if(|&d| d == '_' || d.is_alphanumeric()) {
                    w.push(d);
                }
                toks.push(RustTok::Ident(w));
            }
            _ => return None,
        }
    }
    Some(toks)
}

/// Expands one use tree into paths (`a::b::c`, `a::b as d`, `a::*`).
fn rust_tree(
    toks: &[RustTok],
    i: &mut usize,
    prefix: &[String],
    out: &mut Vec<String>,
) -> Option<()> {
    let mut segs: Vec<String> = prefix.to_vec();
    loop {
        match toks.get(*i)? {
            RustTok::PathSep => {
                // Leading `::` (2015-style absolute path).
                if segs.is_empty() {
                    segs.push(String::new());
                }
                *i += 1;
            }
            RustTok::Open => {
                *i += 1;
                loop {
                    if toks.get(*i) == Some(&RustTok::Close) {
                        *i += 1;
                        return Some(());
                    }
                    rust_tree(toks, i, &segs, out)?;
                    match toks.get(*i)? {
                        RustTok::Comma => *i += 1,
                        RustTok::Close => {
                            *i += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            RustTok::Star => {
                *i += 1;
                segs.push("*".to_string());
                out.push(segs.join("::"));
                return Some(());
            }
            RustTok::Ident(name) => {
                *i += 1;
                if name != "self" || segs.is_empty() {
                    segs.push(name.clone());
                }
                match toks.get(*i) {
                    Some(RustTok::PathSep) => *i += 1,
                    Some(RustTok::Ident(kw)) if kw == "as" => {
                        let Some(RustTok::Ident(alias)) = toks.get(*i + 1) else {
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
            RustTok::Close | RustTok::Comma => return None,
        }
    }
}

fn rust_imports(content: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let lines: Vec<&str> = content.lines().collect();
    let mut n = 0;
    while n < lines.len() {
        let t = strip_visibility(strip_attributes(lines[n].trim()));
        n += 1;
        if let Some(rest) = t.strip_prefix("extern crate ") {
            let words: Vec<&str> = rest.trim_end_matches(';').split_whitespace().collect();
            match words.as_slice() {
                [name] if is_ident(name) => {
                    out.insert(format!("extern crate {name}"));
                }
                [name, "as", alias] if is_ident(name) && is_ident(alias) => {
                    out.insert(format!("extern crate {name} as {alias}"));
                }
                _ => {}
            }
            continue;
        }
        if let Some(rest) = t.strip_prefix("mod ") {
            if let Some(name) = strip_line_comment(rest, "//").trim().strip_suffix(';') {
                if is_ident(name.trim()) {
                    out.insert(format!("mod {}", name.trim()));
                }
            }
            continue;
        }
        let Some(rest) = t.strip_prefix("use ") else {
            continue;
        };
        let mut stmt = strip_line_comment(rest, "//").to_string();
        let mut budget = MAX_STATEMENT_LINES;
        while !stmt.contains(';') && n < lines.len() && budget > 0 {
            stmt.push(' ');
            stmt.push_str(strip_line_comment(lines[n], "//"));
            n += 1;
            budget -= 1;
        }
        let Some((tree, _)) = stmt.split_once(';') else {
            continue;
        };
        let Some(toks) = rust_use_tokens(tree) else {
            continue;
        };
        let mut paths = Vec::new();
        let mut i = 0;
        if rust_tree(&toks, &mut i, &[], &mut paths).is_some() && i == toks.len() {
            out.extend(paths.into_iter().map(|p| format!("use {p}")));
        }
    }
    out
}

// ----------------------------------------------------------------------- Go

/// One Go import spec: `"path"`, `alias "path"`, `. "path"`, `_ "path"`.
fn go_spec(spec: &str) -> Option<String> {
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

fn go_imports(content: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let lines: Vec<&str> = content.lines().collect();
    let mut n = 0;
    while n < lines.len() {
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
            let body = body.split(')').next().unwrap_or("");
            for spec in body.split(['\n', ';']) {
                if !spec.trim().is_empty() {
                    if let Some(k) = go_spec(spec) {
                        out.insert(k);
                    }
                }
            }
        } else if rest.len() < t.len() - "import".len() || rest.starts_with(['"', '`']) {
            if let Some(k) = go_spec(rest.trim_end_matches(';')) {
                out.insert(k);
            }
        }
    }
    out
}

// --------------------------------------------------------------- Java/Kotlin

fn java_imports(content: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for line in content.lines() {
        let t = strip_line_comment(line, "//").trim();
        let Some(rest) = t.strip_prefix("import ") else {
            continue;
        };
        for stmt in rest.split(';') {
            let stmt = stmt.trim().strip_prefix("import ").unwrap_or(stmt.trim());
            let words: Vec<&str> = stmt.split_whitespace().collect();
            let key = match words.as_slice() {
                ["static", path] if is_import_path(path) => format!("import static {path}"),
                [path] if is_import_path(path) => format!("import {path}"),
                [path, "as", alias] if is_dotted_path(path) && is_ident(alias) => {
                    format!("import {path} as {alias}")
                }
                _ => continue,
            };
            out.insert(key);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(lang: Lang, s: &str) -> Vec<String> {
        lang.imports(s).into_iter().collect()
    }

    #[test]
    fn rust_use_trees_expand_per_path() {
        assert_eq!(
            keys(
                Lang::Rust,
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
    fn js_statement_forms() {
        assert_eq!(
            keys(
                Lang::JavaScript,
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
    fn python_forms() {
        assert_eq!(
            keys(
                Lang::Python,
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

    #[test]
    fn go_forms() {
        assert_eq!(
            keys(
                Lang::Go,
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
    fn java_forms() {
        assert_eq!(
            keys(
                Lang::Java,
                "import java.util.List;\nimport static org.junit.Assert.*;\nimport a.b.C as D\n"
            ),
            vec![
                "import a.b.C as D",
                "import java.util.List",
                "import static org.junit.Assert.*"
            ]
        );
    }

    #[test]
    fn attributes_before_a_use_are_skipped() {
        assert_eq!(
            keys(Lang::Rust, "#[cfg(test)] #[allow(unused)] use a::b;\n"),
            keys(Lang::Rust, "#[cfg(test)]\nuse a::b;\n")
        );
    }

    #[test]
    fn detection() {
        let cases = [
            ("use std::io;\nfn main() {}\n", Some(Lang::Rust)),
            ("package main\n\nimport \"fmt\"\n", Some(Lang::Go)),
            ("package a.b;\nimport a.b.C;\n", Some(Lang::Java)),
            ("package a.b\nimport a.b.C\n", Some(Lang::Java)),
            ("import x from 'y';\n", Some(Lang::JavaScript)),
            ("const x = require('y');\n", Some(Lang::JavaScript)),
            ("import os\nfrom a import b\n", Some(Lang::Python)),
            ("just some text\n", None),
        ];
        for (src, want) in cases {
            assert_eq!(Lang::detect(src), want, "{src:?}");
        }
    }
}
