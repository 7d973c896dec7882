//! The guards `apply` runs look only at the lines an edit touched. Property:
//! for random edits of realistic files (imports of every language, multi-
//! line statements, placeholders, conflict markers), `apply_edit` with the
//! guards on refuses exactly when the whole-file `check_guards` on its
//! result does, with the same violations and messages — except for the
//! deliberate truncation change (an edit must also write some text and
//! replace at least 80 % of the file's lines to be a truncation).

use coderig::{
    apply_edits, check_guards, ApplyOptions, Edit, EditError, GuardViolation, ViolationKind,
};
use proptest::prelude::*;

/// Per language: its file name and units of lines (whole statements, some
/// spread over several lines, and lone pieces of them) that exercise its
/// import scanner, and code that uses the imported names.
const LANGS: &[(&str, &[&str])] = &[
    (
        "a.py",
        &[
            "import os",
            "import sys, re as regex",
            "from typing import (\n    List,\n    Dict as D,\n)",
            "from typing import (",
            "    List,",
            ")",
            "from . import util",
            "from x import *",
            "import a \\\n    , b",
            "from the docs (see below",
            "    import json",
            "x = os.getcwd() + regex.sub(List, D, util, json, a, b)",
            "def f():\n    return sys.argv",
        ],
    ),
    (
        "a.ts",
        &[
            "import React from 'react';",
            "import { a, b as c } from './m';",
            "import {\n  x,\n  y\n} from 'z';",
            "import {",
            "} from 'z';",
            "const fs = require('fs');",
            "const {\n  p,\n} = require('pq');",
            "export * from './all';",
            "export { k } from './k';",
            "import './side.css';",
            "use(a, c, x, y, fs, p, React, D);",
            "/* import q from 'q'\n */",
            "import\n  D from 'd'",
        ],
    ),
    (
        "lib.rs",
        &[
            "use std::io;",
            "use std::{\n    fs,\n    path::{Path, PathBuf},\n};",
            "use std::{",
            "};",
            "pub use crate::error::Error;",
            "mod parser;",
            "extern crate serde;",
            "#[cfg(test)] use a::b;",
            "use x::y // no semicolon yet",
            "fn main() { io::stdout(); fs::read(Path::new(\"x\")); let _: PathBuf; b(); y(); }",
        ],
    ),
    (
        "main.go",
        &[
            "package main",
            "import \"fmt\"",
            "import f \"flag\"",
            "import (\n\tf \"flag\"\n\t\"os\"\n\t_ \"embed\"\n)",
            "import (",
            "\t\"os\"",
            ")",
            "func main() { fmt.Println(os.Args, f.Args()) }",
            "var importer = 1",
            "x := []int{\n1,\n}",
        ],
    ),
    (
        "A.java",
        &[
            "package a.b;",
            "import java.util.List;",
            "import static org.junit.Assert.*;",
            "import a.b.C as D",
            "import x.Y; import x.Z;",
            "class X { List<C> l; D d; Y y; Z z; }",
        ],
    ),
];

/// Lines of any file: placeholders, conflict markers and plain code.
const COMMON: &[&str] = &[
    "// ... existing code ...",
    "# rest of the code",
    "    # ... unchanged ...",
    "<<<<<<< HEAD",
    "=======",
    ">>>>>>> branch",
    "||||||| base",
    "Title",
    "",
    "    pass",
    "}",
    "let total = compute(a, b);",
];

/// Pieces of new text that can complete (or break) a statement or marker
/// across a splice boundary.
const PIECES: &[&str] = &[
    "im",
    "port os",
    "from ",
    "<<<",
    "<<<< HEAD",
    "==",
    "=====",
    "(",
    ")",
    ";",
    "\\",
    "{",
    "}",
    "// ...",
    " existing code ...",
    "rest of the file",
    "'",
    "require(",
    "\n",
    "\r\n",
    " ",
];

/// A language (index into [`LANGS`]) and a file of its lines and common ones.
fn text(max_lines: usize) -> impl Strategy<Value = (usize, String)> {
    (0..LANGS.len()).prop_flat_map(move |lang| {
        let line = prop_oneof![
            3 => prop::sample::select(LANGS[lang].1),
            1 => prop::sample::select(COMMON),
        ];
        (
            Just(lang),
            prop::collection::vec(line, 0..max_lines),
            any::<bool>(),
            prop::bool::weighted(0.1),
        )
            .prop_map(|(lang, lines, final_newline, crlf)| {
                let eol = if crlf { "\r\n" } else { "\n" };
                let mut s = lines.join(eol);
                if final_newline && !s.is_empty() {
                    s.push_str(eol);
                }
                (lang, s)
            })
    })
}

/// New text for a file of `lang`: its lines, common lines and pieces.
fn new_text(lang: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            2 => prop::sample::select(LANGS[lang].1).prop_map(|l| format!("{l}\n")),
            1 => prop::sample::select(COMMON).prop_map(|l| format!("{l}\n")),
            2 => prop::sample::select(PIECES).prop_map(str::to_string),
        ],
        0..5,
    )
    .prop_map(|p| p.concat())
}

/// The language's file name mostly; else no path (the content decides),
/// another language's, or a prose or extension-less name.
fn path(lang: usize) -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        6 => Just(Some(LANGS[lang].0.to_string())),
        3 => Just(None),
        1 => prop::sample::select(&["a.py", "a.ts", "lib.rs", "main.go", "A.java", "README.md", "Makefile", "notes.txt"])
            .prop_map(|p| Some(p.to_string())),
    ]
}

/// The char-boundary byte range `[a, b)` of `content` picked by two
/// fractions, non-empty when `content` is.
fn span(content: &str, a: f64, b: f64) -> Option<std::ops::Range<usize>> {
    let bounds: Vec<usize> = (0..=content.len())
        .filter(|&i| content.is_char_boundary(i))
        .collect();
    let pick = |f: f64| bounds[((bounds.len() - 1) as f64 * f) as usize];
    let (mut i, mut j) = (pick(a), pick(b));
    if i > j {
        std::mem::swap(&mut i, &mut j);
    }
    (i < j).then_some(i..j)
}

/// The bytes of lines `first ..= first + count` of `content` (clamped),
/// with or without the last line's break.
fn line_span(
    content: &str,
    first: f64,
    count: usize,
    with_break: bool,
) -> Option<std::ops::Range<usize>> {
    let starts: Vec<usize> = std::iter::once(0)
        .chain(content.match_indices('\n').map(|(i, _)| i + 1))
        .filter(|&i| i < content.len())
        .collect();
    let a = *starts.get((starts.len() as f64 * first) as usize)?;
    let mut b = starts
        .iter()
        .copied()
        .filter(|&s| s >= a)
        .nth(count)
        .unwrap_or(content.len());
    if !with_break {
        b = content[a..b].trim_end_matches(['\n', '\r']).len() + a;
    }
    (a < b).then_some(a..b)
}

/// What `apply` must report for `edits` (each with `count` replaced spans)
/// whose guard-free result is `out`: `check_guards`, with the truncation
/// kept only for an edit that writes text and replaces ≥ 80 % of the lines.
fn expected(
    content: &str,
    out: &str,
    path: Option<&str>,
    edits: &[(Edit, usize)],
) -> Vec<GuardViolation> {
    let writes = edits.iter().any(|(e, _)| !e.new.is_empty());
    let replaced_lines: usize = edits.iter().map(|(e, n)| n * e.old.lines().count()).sum();
    let rewrite = replaced_lines * 100 >= content.lines().count() * 80;
    check_guards(content, out, path)
        .into_iter()
        .filter(|v| v.kind != ViolationKind::Truncation || (writes && rewrite))
        .collect()
}

/// Applies `edits` with and without the guards and checks the property.
fn agrees(
    content: &str,
    edits: &[(Edit, usize)],
    path: Option<String>,
) -> Result<(), TestCaseError> {
    let plain: Vec<Edit> = edits.iter().map(|(e, _)| e.clone()).collect();
    let off = ApplyOptions {
        path: path.clone(),
        guards: false,
    };
    let Ok(applied) = apply_edits(content, &plain, &off) else {
        return Ok(()); // not found, ambiguous, no-op, overlapping: no result to guard
    };
    if edits.len() == 1 && edits[0].1 != applied.replacements {
        return Ok(()); // a replace_all whose spans the test did not count
    }
    let want = expected(content, &applied.content, path.as_deref(), edits);
    let on = ApplyOptions { path, guards: true };
    match apply_edits(content, &plain, &on) {
        Ok(a) => {
            prop_assert_eq!(&want, &Vec::<GuardViolation>::new());
            prop_assert_eq!(a.content, applied.content);
        }
        Err(EditError::Guard { violations, .. }) => prop_assert_eq!(violations, want),
        Err(e) => prop_assert!(false, "guards on changed the outcome: {e:?}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn one_edit_agrees_with_the_whole_file_check(
        (content, new, path) in text(40).prop_flat_map(|(l, c)| (Just(c), new_text(l), path(l))),
        a in 0.0..1.0f64,
        b in 0.0..1.0f64,
        replace_all in prop::bool::weighted(0.2),
    ) {
        let Some(r) = span(&content, a, b) else { return Ok(()) };
        let old = content[r].to_string();
        let count = if replace_all { content.matches(old.as_str()).count() } else { 1 };
        let edit = Edit { old, new, replace_all };
        agrees(&content, &[(edit, count)], path)?;
    }

    #[test]
    fn several_edits_agree_with_the_whole_file_check(
        (content, cuts, path) in text(40).prop_flat_map(|(l, c)| (
            Just(c),
            prop::collection::vec((0.0..1.0f64, 0.0..1.0f64, new_text(l)), 2..4),
            path(l),
        )),
    ) {
        let mut edits = Vec::new();
        for (a, b, new) in cuts {
            let Some(r) = span(&content, a, b) else { return Ok(()) };
            edits.push((Edit { old: content[r].to_string(), new, replace_all: false }, 1));
        }
        agrees(&content, &edits, path)?;
    }

    #[test]
    fn line_edits_agree_with_the_whole_file_check(
        (content, new, path) in text(12).prop_flat_map(|(l, c)| (Just(c), new_text(l), path(l))),
        first in 0.0..1.0f64,
        count in 1usize..4,
        with_break in any::<bool>(),
    ) {
        let Some(r) = line_span(&content, first, count, with_break) else { return Ok(()) };
        let old = content[r].to_string();
        agrees(&content, &[(Edit { old, new, replace_all: false }, 1)], path)?;
    }

    #[test]
    fn small_edits_of_big_files_agree(
        (content, new, path) in text(400).prop_flat_map(|(l, c)| (Just(c), new_text(l), path(l))),
        a in 0.0..1.0f64,
        len in 1usize..80,
    ) {
        let Some(r) = span(&content, a, 1.0) else { return Ok(()) };
        let mut end = (r.start + len).min(content.len());
        while !content.is_char_boundary(end) {
            end += 1;
        }
        let old = content[r.start..end].to_string();
        agrees(&content, &[(Edit { old, new, replace_all: false }, 1)], path)?;
    }
}
