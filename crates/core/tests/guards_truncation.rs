//! The truncation guard of an edit: `apply` knows which text the edit
//! replaced, so it tells a deliberate deletion of a located block (however
//! small the file) from a rewrite of the whole file that lost the rest.
//! `check_guards` (no edit: a whole-file write) keeps the plain ratios.

use coderig::{
    apply_edit_with, apply_edits, check_guards, ApplyOptions, Edit, EditError, ViolationKind,
};

/// A 9-line file whose lines 2–8 are long: deleting 5 of them loses most
/// of the characters and more than half the lines, which the whole-file
/// ratios call a truncation.
fn nine() -> String {
    (1..=9)
        .map(|i| {
            if (2..=8).contains(&i) {
                format!("    let value_{i} = compute_something_expensive(argument_{i}, another_argument);\n")
            } else {
                format!("fn f{i}() {{}}\n")
            }
        })
        .collect()
}

/// Lines `a..=b` (1-based) of `text`, each with its line break.
fn lines(text: &str, a: usize, b: usize) -> String {
    text.lines()
        .skip(a - 1)
        .take(b + 1 - a)
        .map(|l| format!("{l}\n"))
        .collect()
}

/// Whether `apply_edits` refuses `edits` as a truncation, and whether the
/// whole-file check calls their result one.
fn truncation_refused(content: &str, edits: &[Edit]) -> (bool, bool) {
    let opts = |guards| ApplyOptions {
        path: Some("src/lib.rs".to_string()),
        guards,
    };
    let result = apply_edits(content, edits, &opts(false)).expect("the edits apply");
    let whole = check_guards(content, &result.content, Some("src/lib.rs"))
        .iter()
        .any(|v| v.kind == ViolationKind::Truncation);
    let refused = match apply_edits(content, edits, &opts(true)) {
        Ok(_) => false,
        Err(EditError::Guard { violations, .. }) => violations
            .iter()
            .any(|v| v.kind == ViolationKind::Truncation),
        Err(e) => panic!("unexpected refusal: {e}"),
    };
    (refused, whole)
}

fn edit(old: String, new: String) -> Edit {
    Edit {
        old,
        new,
        replace_all: false,
    }
}

#[test]
fn edits_that_delete_located_blocks_pass_and_truncated_rewrites_do_not() {
    let f = nine();
    let hundred: String = (1..=100)
        .map(|i| format!("    total += step({i});\n"))
        .collect();
    // (name, content, edits, refused as a truncation)
    let cases: Vec<(&str, &str, Vec<Edit>, bool)> = vec![
        // ---- deliberate deletions: the model spelled out what goes
        (
            "5 of 9 lines deleted",
            &f,
            vec![edit(lines(&f, 3, 7), String::new())],
            false,
        ),
        (
            "7 of 9 lines replaced by a small remainder",
            &f,
            vec![edit(lines(&f, 2, 8), lines(&f, 5, 5))],
            false,
        ),
        (
            "7 of 9 lines replaced by one new line",
            &f,
            vec![edit(lines(&f, 2, 8), "let v = 0;\n".into())],
            false,
        ),
        (
            "every line but the first deleted",
            &f,
            vec![edit(lines(&f, 2, 9), String::new())],
            false,
        ),
        (
            "two located blocks deleted in one batch",
            &f,
            vec![
                edit(lines(&f, 2, 4), String::new()),
                edit(lines(&f, 6, 8), String::new()),
            ],
            false,
        ),
        (
            "60 of 100 lines deleted",
            &hundred,
            vec![edit(lines(&hundred, 21, 80), String::new())],
            false,
        ),
        // ---- truncations: a rewrite of (nearly) the whole file that stops early
        (
            "the whole file rewritten as its first lines",
            &f,
            vec![edit(f.clone(), lines(&f, 1, 2))],
            true,
        ),
        (
            "the whole file rewritten as a stub",
            &f,
            vec![edit(f.clone(), "todo!();\n".into())],
            true,
        ),
        (
            "the whole file without its final newline, rewritten as its first line",
            &f,
            vec![edit(
                f.trim_end().to_string(),
                lines(&f, 1, 1).trim_end().to_string(),
            )],
            true,
        ),
        (
            "8 of 9 lines rewritten as one",
            &f,
            vec![edit(lines(&f, 2, 9), lines(&f, 2, 2))],
            true,
        ),
        (
            "a 100-line file rewritten as its first 10 lines",
            &hundred,
            vec![edit(hundred.clone(), lines(&hundred, 1, 10))],
            true,
        ),
        (
            "all but the first 5 of 100 lines rewritten as 5",
            &hundred,
            vec![edit(lines(&hundred, 6, 100), lines(&hundred, 6, 10))],
            true,
        ),
    ];
    for (name, content, edits, want) in cases {
        let (refused, whole) = truncation_refused(content, &edits);
        assert_eq!(refused, want, "{name}");
        // Every case is one the whole-file ratios refuse: the edit's spans
        // are what tells them apart.
        assert!(whole, "{name}: not a truncation by the whole-file ratios");
    }
}

#[test]
fn a_refused_edit_says_what_the_whole_file_check_says() {
    let f = nine();
    let e = edit(f.clone(), lines(&f, 1, 1));
    let opts = ApplyOptions::default();
    let Err(EditError::Guard { violations, .. }) = apply_edit_with(&f, &e, &opts) else {
        panic!("a truncated rewrite must be refused");
    };
    assert_eq!(violations, check_guards(&f, &lines(&f, 1, 1), None));
    assert!(
        violations[0].message.contains("9 to 1 lines"),
        "{}",
        violations[0].message
    );
}

#[test]
fn the_whole_file_check_keeps_its_ratios() {
    // No edit to go by (a harness's write tool): the same deletion that an
    // edit may make is reported, as before.
    let f = nine();
    let without_block = format!("{}{}", lines(&f, 1, 2), lines(&f, 8, 9));
    let kinds: Vec<ViolationKind> = check_guards(&f, &without_block, None)
        .into_iter()
        .map(|v| v.kind)
        .collect();
    assert_eq!(kinds, vec![ViolationKind::Truncation]);
}
