//! Import statements, parsed per language into normalized keys.
//!
//! A key names one imported thing in a canonical spelling (`import os`,
//! `from typing import List`, `use std::io::Read`, `import { a } from 'b'`),
//! so that moving, re-ordering, regrouping or re-wrapping imports keeps the
//! same set of keys, and removing one imported name removes its key.
//!
//! A key that disappeared is *needed* when:
//! - a name it bound (Python `import a.b` → `a`, `as` aliases, each name of
//!   a from-import or of JS braces, `* as ns`, `const {a, b: c} = require()`
//!   → `a`, `c`, Rust's last path segment or alias, a Go path's package
//!   name, Java's last segment or static member) is still referenced in the
//!   updated text outside import statements, no remaining import binds it,
//!   and no glob of the same module now covers it (`from m import *`,
//!   `use a::*`, `import a.*`);
//! - or it binds no name that could be checked (`import './x.css'`, a bare
//!   `require()`, Go `_`/`.` imports, `from x import *`, `import a.b.*`,
//!   `use a::*`, `use x as _`, `pub use` and JS `export … from` re-exports,
//!   Rust `mod x;`).
//!
//! The edit drops imports when more needed keys disappeared than new keys
//! arrived: a one-for-one rewrite (a renamed path or name) is deliberate.
//!
//! "Referenced" is a whole identifier token anywhere in the updated text
//! except on import-statement lines, comments and strings included: a name
//! mentioned only in a comment keeps its import, which errs towards
//! flagging. Known gaps, in the direction of not flagging: a Rust trait used
//! only through its methods is not seen as used, and a name used only on the
//! import's own line (`import os; os.exit()`) does not count. Go package
//! names are guessed from the path (see [`go_package_names`]).

use super::{GuardViolation, ViolationKind};
use std::collections::{BTreeMap, BTreeSet, HashSet};

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
        if go_package && !Lang::Go.imports(content).is_empty() {
            return Some(Lang::Go);
        }
        if java || (go_package || kotlin_package) && !Lang::Java.imports(content).is_empty() {
            return Some(Lang::Java);
        }
        if !Lang::JavaScript.imports(content).is_empty() {
            return Some(Lang::JavaScript);
        }
        if !Lang::Python.imports(content).is_empty() {
            return Some(Lang::Python);
        }
        None
    }

    /// The normalized import keys of `content` in this syntax.
    pub fn imports(self, content: &str) -> BTreeSet<String> {
        scan(self, content).keys
    }
}

/// What an import binds in the file that holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Binding {
    /// Local names: the import is needed only while one of them is referenced
    /// (several candidates when the name is a guess, e.g. a Go package name).
    Names(Vec<String>),
    /// No name this file could reference: side-effect imports, globs,
    /// re-exports, `_`/`.` imports, `mod x;`. The import matters whatever the
    /// rest of the file says.
    Opaque,
}

/// What one scan of a text finds: the import keys, facts about some keys that
/// their spelling does not carry, and which lines are import statements.
#[derive(Debug, Default)]
struct Scan {
    keys: BTreeSet<String>,
    /// `require('m')` keys → the names the declaration binds (or `Opaque`).
    requires: BTreeMap<String, Binding>,
    /// Keys of `pub use` (Rust): re-exports, whose users are other files.
    reexported: BTreeSet<String>,
    /// Lines (0-based) that belong to an import statement.
    import_lines: BTreeSet<usize>,
}

impl Scan {
    fn mark(&mut self, lines: std::ops::Range<usize>) {
        self.import_lines.extend(lines);
    }

    fn require(&mut self, key: String, binding: Binding) {
        let merged = match (self.requires.remove(&key), binding) {
            (Some(Binding::Names(mut a)), Binding::Names(b)) => {
                a.extend(b);
                Binding::Names(a)
            }
            (_, Binding::Opaque) | (Some(Binding::Opaque), _) => Binding::Opaque,
            (None, b) => b,
        };
        self.requires.insert(key.clone(), merged);
        self.keys.insert(key);
    }

    /// The names `key` binds, or `Opaque`.
    fn binding(&self, lang: Lang, key: &str) -> Binding {
        if self.reexported.contains(key) {
            return Binding::Opaque;
        }
        if let Some(b) = self.requires.get(key) {
            return b.clone();
        }
        key_binding(lang, key)
    }
}

/// The names an import key binds, read from its canonical spelling.
fn key_binding(lang: Lang, key: &str) -> Binding {
    let names = |v: Vec<&str>| {
        let v: Vec<String> = v
            .into_iter()
            .filter(|n| is_ident(n) && *n != "_")
            .map(str::to_string)
            .collect();
        if v.is_empty() {
            Binding::Opaque
        } else {
            Binding::Names(v)
        }
    };
    // `… as alias` binds the alias, in every language that has the form.
    let alias = |s: &str| s.rsplit_once(" as ").map(|(_, a)| a.trim().to_string());
    match lang {
        Lang::JavaScript => {
            if let Some(rest) = key.strip_prefix("import ") {
                if rest.starts_with(['\'', '"']) || rest.starts_with("{} ") {
                    return Binding::Opaque;
                }
                if let Some((x, _)) = rest.split_once(" = require(") {
                    return names(vec![x]);
                }
                let Some((binding, _)) = rest.rsplit_once(" from ") else {
                    return Binding::Opaque;
                };
                let inner = binding.trim_start_matches("{ ").trim_end_matches(" }");
                let inner = inner.strip_prefix("* as ").unwrap_or(inner);
                match alias(inner) {
                    Some(a) => names(vec![&a]),
                    None => names(vec![inner]),
                }
            } else {
                // `export … from` re-exports; a bare `require('m')` without a
                // declaration is a side effect.
                Binding::Opaque
            }
        }
        Lang::Python => {
            if let Some(rest) = key.strip_prefix("import ") {
                match alias(rest) {
                    Some(a) => names(vec![&a]),
                    // `import a.b.c` binds `a`.
                    None => names(vec![rest.split('.').next().unwrap_or(rest)]),
                }
            } else if let Some((_, item)) = key.split_once(" import ") {
                if item == "*" {
                    return Binding::Opaque;
                }
                match alias(item) {
                    Some(a) => names(vec![&a]),
                    None => names(vec![item]),
                }
            } else {
                Binding::Opaque
            }
        }
        Lang::Rust => {
            if let Some(rest) = key.strip_prefix("use ") {
                if rest.ends_with('*') {
                    return Binding::Opaque;
                }
                match alias(rest) {
                    Some(a) => names(vec![&a]),
                    None => names(vec![rest.rsplit("::").next().unwrap_or(rest)]),
                }
            } else if let Some(rest) = key.strip_prefix("extern crate ") {
                match alias(rest) {
                    Some(a) => names(vec![&a]),
                    None => names(vec![rest]),
                }
            } else {
                // `mod x;` brings a whole file into the crate, referenced or not.
                Binding::Opaque
            }
        }
        Lang::Go => {
            let Some(rest) = key.strip_prefix("import ") else {
                return Binding::Opaque;
            };
            match rest.split_once(' ') {
                Some((a, _)) => names(vec![a]),
                None => {
                    let path = rest.trim_matches('"');
                    let candidates = go_package_names(path);
                    names(candidates.iter().map(String::as_str).collect())
                }
            }
        }
        Lang::Java => {
            let rest = key.strip_prefix("import ").unwrap_or(key);
            let rest = rest.strip_prefix("static ").unwrap_or(rest);
            if rest.ends_with('*') {
                return Binding::Opaque;
            }
            match alias(rest) {
                Some(a) => names(vec![&a]),
                None => names(vec![rest.rsplit('.').next().unwrap_or(rest)]),
            }
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
fn go_package_names(path: &str) -> Vec<String> {
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

/// The key of the glob import that would bind the same name as `key` from the
/// same module (`from m import a` → `from m import *`), for the languages that
/// have one: rewriting named imports into a glob is not a drop.
fn covering_glob(lang: Lang, key: &str) -> Option<String> {
    let plain = key.rsplit_once(" as ").map_or(key, |(k, _)| k);
    match lang {
        Lang::Python => {
            let (module, _) = plain.strip_prefix("from ")?.split_once(" import ")?;
            Some(format!("from {module} import *"))
        }
        Lang::Rust => {
            let (parent, _) = plain.strip_prefix("use ")?.rsplit_once("::")?;
            Some(format!("use {parent}::*"))
        }
        Lang::Java => {
            let (parent, _) = plain.strip_prefix("import ")?.rsplit_once('.')?;
            Some(format!("import {parent}.*"))
        }
        Lang::JavaScript | Lang::Go => None,
    }
}

/// Every identifier token of `content` outside the given lines (`$` counts as
/// an identifier character, for JavaScript).
fn referenced_identifiers<'a>(content: &'a str, skip_lines: &BTreeSet<usize>) -> HashSet<&'a str> {
    let mut out = HashSet::new();
    for (n, line) in content.lines().enumerate() {
        if skip_lines.contains(&n) {
            continue;
        }
        out.extend(
            line.split(|c: char| !is_ident_char(c))
                .filter(|w| !w.is_empty()),
        );
    }
    out
}

fn scan(lang: Lang, content: &str) -> Scan {
    let mut s = Scan::default();
    match lang {
        Lang::JavaScript => js_imports(content, &mut s),
        Lang::Python => python_imports(content, &mut s),
        Lang::Rust => rust_imports(content, &mut s),
        Lang::Go => go_imports(content, &mut s),
        Lang::Java => java_imports(content, &mut s),
    }
    s
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
    let before = scan(lang, original);
    if before.keys.is_empty() {
        return None;
    }
    let after = scan(lang, updated);
    let gone: Vec<&String> = before.keys.difference(&after.keys).collect();
    if gone.is_empty() {
        return None;
    }
    // Names still bound by an import of the updated text: an import rewritten
    // to another module or spelling that binds the same name lost nothing.
    let still_bound: HashSet<String> = after
        .keys
        .iter()
        .filter_map(|k| match after.binding(lang, k) {
            Binding::Names(n) => Some(n),
            Binding::Opaque => None,
        })
        .flatten()
        .collect();
    let used = referenced_identifiers(updated, &after.import_lines);
    let mut needed: Vec<String> = Vec::new();
    let mut opaque_gone: Vec<String> = Vec::new();
    for key in gone {
        match before.binding(lang, key) {
            Binding::Names(names) => {
                if covering_glob(lang, key).is_some_and(|g| after.keys.contains(&g)) {
                    continue;
                }
                let live: Vec<&String> = names
                    .iter()
                    .filter(|n| used.contains(n.as_str()) && !still_bound.contains(*n))
                    .collect();
                if let Some(name) = live.first() {
                    needed.push(format!("`{key}` ({name} is still used)"));
                }
            }
            Binding::Opaque => opaque_gone.push(format!(
                "`{key}` (a side-effect, glob, re-export or module import: no name to check)"
            )),
        }
    }
    // An import that was rewritten (a renamed module or name, an edited
    // path) disappears as one key and reappears as another: that is the
    // model changing an import on purpose — even when the old name is still
    // used, which is then a bug a compiler reports, not a lost header. Only
    // a net loss — more needed imports gone than new ones arrived — is the
    // accident this guard exists for.
    let arrived = after.keys.difference(&before.keys).count();
    let flagged: Vec<String> = needed.into_iter().chain(opaque_gone).collect();
    if flagged.len() <= arrived {
        return None;
    }
    if flagged.is_empty() {
        return None;
    }
    let mut listed: Vec<String> = flagged.iter().take(LISTED).cloned().collect();
    if flagged.len() > LISTED {
        listed.push(format!("and {} more", flagged.len() - LISTED));
    }
    Some(GuardViolation {
        kind: ViolationKind::DroppedImports,
        message: format!(
            "the edit drops {} import{} that the file still needs: {}. Keep these import \
             statements (send them unchanged in the new text), or remove the code that uses \
             them in the same edit. Removing an import whose names nothing references any more \
             is fine.",
            flagged.len(),
            if flagged.len() == 1 { "" } else { "s" },
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
/// literal (the module specifier) or at a `;`, and the bytes they span.
fn js_statement_tokens(text: &str) -> (Vec<Tok>, usize) {
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

/// `require('m')` calls on line `n` (not in a `//` comment), which starts at
/// byte `line_start` of `content`.
fn js_requires(content: &str, line_start: usize, n: usize, s: &mut Scan) {
    let line = content[line_start..].lines().next().unwrap_or("");
    let code = strip_line_comment(line, "//");
    let mut rest = code;
    while let Some(i) = rest.find("require") {
        let at = line_start + (code.len() - rest.len()) + i;
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
                let binding = js_require_binding(&content[..at]);
                if matches!(binding, Binding::Names(_)) {
                    s.mark(n..n + 1);
                }
                s.require(format!("require('{m}')"), binding);
            }
        }
    }
}

/// The names bound by the declaration that `before` (the text up to a
/// `require`) ends with: `const x =` → x, `let { a, b: c } =` → a, c. Any
/// other context (an argument, an assignment to a property) is `Opaque`.
fn js_require_binding(before: &str) -> Binding {
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

fn js_imports(content: &str, s: &mut Scan) {
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
        js_requires(content, offsets[n], n, s);
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
        let (toks, len) = js_statement_tokens(&content[start..stop]);
        let keys = js_statement_keys(&toks);
        if !keys.is_empty() {
            let spanned = content[start..start + len].matches('\n').count();
            s.mark(n..n + spanned + 1);
            s.keys.extend(keys);
        }
    }
}

// ------------------------------------------------------------------- Python

fn python_imports(content: &str, s: &mut Scan) {
    let lines: Vec<&str> = content.lines().collect();
    let mut n = 0;
    while n < lines.len() {
        let first = n;
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
        let found = s.keys.len();
        for part in stmt.split(';') {
            python_statement_keys(part.trim(), &mut s.keys);
        }
        if s.keys.len() > found {
            s.mark(first..n);
        }
    }
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

fn rust_imports(content: &str, s: &mut Scan) {
    let lines: Vec<&str> = content.lines().collect();
    let mut n = 0;
    while n < lines.len() {
        let first = n;
        let attributed = strip_attributes(lines[n].trim());
        let t = strip_visibility(attributed);
        let public = t.len() < attributed.len();
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
            let keys: Vec<String> = paths.into_iter().map(|p| format!("use {p}")).collect();
            if public {
                s.reexported.extend(keys.iter().cloned());
            }
            s.keys.extend(keys);
            s.mark(first..n);
        }
    }
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

fn go_imports(content: &str, s: &mut Scan) {
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
                    if let Some(k) = go_spec(spec) {
                        s.keys.insert(k);
                    }
                }
            }
        } else if rest.len() < t.len() - "import".len() || rest.starts_with(['"', '`']) {
            if let Some(k) = go_spec(rest.trim_end_matches(';')) {
                s.keys.insert(k);
                s.mark(first..n);
            }
        }
    }
}

// --------------------------------------------------------------- Java/Kotlin

fn java_imports(content: &str, s: &mut Scan) {
    for (n, line) in content.lines().enumerate() {
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
            s.keys.insert(key);
            s.mark(n..n + 1);
        }
    }
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

    fn names(v: &[&str]) -> Binding {
        Binding::Names(v.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn bound_names_per_key() {
        let cases = [
            (Lang::Python, "import a.b.c", names(&["a"])),
            (Lang::Python, "import a.b as z", names(&["z"])),
            (Lang::Python, "from x import y as z", names(&["z"])),
            (Lang::Python, "from . import y", names(&["y"])),
            (Lang::Python, "from x import *", Binding::Opaque),
            (Lang::JavaScript, "import d from 'm'", names(&["d"])),
            (
                Lang::JavaScript,
                "import { a as b } from 'm'",
                names(&["b"]),
            ),
            (
                Lang::JavaScript,
                "import { 'a-b' as c } from 'm'",
                names(&["c"]),
            ),
            (Lang::JavaScript, "import * as ns from 'm'", names(&["ns"])),
            (Lang::JavaScript, "import x = require('m')", names(&["x"])),
            (Lang::JavaScript, "import 'm'", Binding::Opaque),
            (Lang::JavaScript, "import {} from 'm'", Binding::Opaque),
            (Lang::JavaScript, "export { a } from 'm'", Binding::Opaque),
            (Lang::JavaScript, "require('m')", Binding::Opaque),
            (Lang::Rust, "use a::b::c", names(&["c"])),
            (Lang::Rust, "use a::b as e", names(&["e"])),
            (Lang::Rust, "use a::b as _", Binding::Opaque),
            (Lang::Rust, "use a::*", Binding::Opaque),
            (Lang::Rust, "extern crate x", names(&["x"])),
            (Lang::Rust, "extern crate x as y", names(&["y"])),
            (Lang::Rust, "mod m", Binding::Opaque),
            (Lang::Go, "import \"a/b/fmt\"", names(&["fmt"])),
            (Lang::Go, "import f \"flag\"", names(&["f"])),
            (Lang::Go, "import _ \"embed\"", Binding::Opaque),
            (Lang::Go, "import . \"fmt\"", Binding::Opaque),
            (Lang::Java, "import a.b.C", names(&["C"])),
            (Lang::Java, "import static a.B.m", names(&["m"])),
            (Lang::Java, "import a.b.C as D", names(&["D"])),
            (Lang::Java, "import a.b.*", Binding::Opaque),
            (Lang::Java, "import static a.B.*", Binding::Opaque),
        ];
        for (lang, key, want) in cases {
            assert_eq!(key_binding(lang, key), want, "{key}");
        }
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
            assert_eq!(go_package_names(path), want, "{path}");
        }
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
            assert_eq!(js_require_binding(before), want, "{before:?}");
        }
    }

    #[test]
    fn identifiers_outside_import_lines() {
        let skip = BTreeSet::from([0]);
        let ids = referenced_identifiers("import os\nosmosis($x, y_1)\n", &skip);
        assert_eq!(ids, HashSet::from(["osmosis", "$x", "y_1"]),);
    }
}
