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
//! names are guessed from the path (see [`go::package_names`]).

use super::splice::{self, Window};
use super::{GuardViolation, ViolationKind};
use std::collections::{BTreeMap, BTreeSet, HashSet};

mod go;
mod java;
mod js;
mod lookback;
mod python;
mod rust;

use lookback::{any_window_line, continues_into, lines_containing};

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
    /// Every syntax, in the order [`Lang::detect`] prefers them when
    /// nothing else tells.
    const ALL: [Lang; 5] = [
        Lang::Rust,
        Lang::Go,
        Lang::Java,
        Lang::JavaScript,
        Lang::Python,
    ];

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
            if rust::signal(t) {
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
    match lang {
        Lang::JavaScript => js::binding(key),
        Lang::Python => python::binding(key),
        Lang::Rust => rust::binding(key),
        Lang::Go => go::binding(key),
        Lang::Java => java::binding(key),
    }
}

/// `Names` of the candidates that are identifiers (never `_`), or `Opaque`
/// when none is: what a key binds once its language has picked the names.
fn bound<'a>(candidates: impl IntoIterator<Item = &'a str>) -> Binding {
    let v: Vec<String> = candidates
        .into_iter()
        .filter(|n| is_ident(n) && *n != "_")
        .map(str::to_string)
        .collect();
    if v.is_empty() {
        Binding::Opaque
    } else {
        Binding::Names(v)
    }
}

/// The alias of `… as alias`: the name bound, in every language that has the form.
fn alias(s: &str) -> Option<String> {
    s.rsplit_once(" as ").map(|(_, a)| a.trim().to_string())
}

/// The key of the glob import that would bind the same name as `key` from the
/// same module (`from m import a` → `from m import *`), for the languages that
/// have one: rewriting named imports into a glob is not a drop.
fn covering_glob(lang: Lang, key: &str) -> Option<String> {
    let plain = key.rsplit_once(" as ").map_or(key, |(k, _)| k);
    match lang {
        Lang::Python => python::covering_glob(plain),
        Lang::Rust => rust::covering_glob(plain),
        Lang::Java => java::covering_glob(plain),
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
        Lang::JavaScript => js::imports(content, &mut s),
        Lang::Python => python::imports(content, &mut s),
        Lang::Rust => rust::imports(content, &mut s),
        Lang::Go => go::imports(content, &mut s),
        Lang::Java => java::imports(content, &mut s),
    }
    s
}

/// The import syntax `path` picks: `Some(Some(lang))` by its extension,
/// `Some(None)` for an extension of none of the languages (imports are then
/// not checked), `None` without a path or an extension (the original's
/// content decides, see [`Lang::detect`]).
fn by_path(path: Option<&str>) -> Option<Option<Lang>> {
    let p = path?;
    let has_extension = p
        .rsplit(['/', '\\'])
        .next()
        .is_some_and(|name| name.trim_start_matches('.').contains('.'));
    has_extension.then(|| Lang::from_path(p))
}

/// The dropped-imports guard on whole texts (see [`super::check`]).
pub(super) fn dropped(original: &str, updated: &str, path: Option<&str>) -> Option<GuardViolation> {
    let lang = match by_path(path) {
        Some(lang) => lang?,
        None => Lang::detect(original)?,
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

/// Whether [`dropped`] can find dropped imports in an edit whose changed
/// lines are `windows` (see [`super::splice`]); `false` only when every
/// import key of `original` is still a key of `updated`, in whichever syntax
/// [`dropped`] would pick — then it finds nothing.
///
/// An import can only disappear when the edit touches one. Each scanner
/// reads lines in order; Python, Rust and Go statements may consume the
/// lines after their first one (continuations, `use` trees, import
/// blocks), JavaScript and Java lines are read each on their own. So when
/// no window line may start a statement (in the original, and for the
/// consuming scanners in the updated text too) and no statement of the
/// original from before a window still goes on at it, both scans are in
/// the same state at every window, read no statement in it, leave it in
/// the same state and then read the same lines until the next: the keys
/// are equal. (A statement before a later window that runs through an
/// earlier one would already be open at the earlier one, where the lines
/// before it are the same in both texts; so the original alone answers.)
///
/// Costs the windows' lines plus a bounded look back from each window (the
/// most lines a statement may span; for Go, back to the nearest line with
/// a `)`), never a pass over the file. Without a path (or extension) the
/// syntax would be detected from the whole original, so every syntax is
/// asked instead.
pub(super) fn may_drop(
    original: &str,
    updated: &str,
    path: Option<&str>,
    windows: &[Window],
) -> bool {
    let may_lose = |lang: Lang| match lang {
        Lang::JavaScript => js::may_lose_keys(original, windows),
        Lang::Python => python::may_lose_keys(original, updated, windows),
        Lang::Rust => rust::may_lose_keys(original, updated, windows),
        Lang::Go => go::may_lose_keys(original, updated, windows),
        Lang::Java => java::may_lose_keys(original, windows),
    };
    match by_path(path) {
        Some(None) => false,
        Some(Some(lang)) => may_lose(lang),
        None => Lang::ALL.into_iter().any(may_lose),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn identifiers_outside_import_lines() {
        let skip = BTreeSet::from([0]);
        let ids = referenced_identifiers("import os\nosmosis($x, y_1)\n", &skip);
        assert_eq!(ids, HashSet::from(["osmosis", "$x", "y_1"]),);
    }
}
