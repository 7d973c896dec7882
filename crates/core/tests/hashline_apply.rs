//! `apply`: each op, snapshot positions, overlaps, EOL, final newline,
//! prefix stripping, CRLF, no-ops, stale refs.

use coderig::edit::hashline::{self, HashlineEdit, Lines};
use coderig::EditError;

fn r(content: &str, line: usize) -> String {
    let text = content.split('\n').nth(line - 1).expect("line exists");
    format!("{line}#{}", hashline::line_hash(line, text))
}

fn lines(v: &[&str]) -> Lines {
    Lines::Many(v.iter().map(|s| s.to_string()).collect())
}

fn replace(content: &str, pos: usize, end: Option<usize>, new: &[&str]) -> HashlineEdit {
    HashlineEdit::Replace {
        pos: r(content, pos),
        end: end.map(|e| r(content, e)),
        lines: lines(new),
    }
}

fn append(content: &str, pos: Option<usize>, new: &[&str]) -> HashlineEdit {
    HashlineEdit::Append {
        pos: pos.map(|p| r(content, p)),
        lines: lines(new),
    }
}

fn prepend(content: &str, pos: Option<usize>, new: &[&str]) -> HashlineEdit {
    HashlineEdit::Prepend {
        pos: pos.map(|p| r(content, p)),
        lines: lines(new),
    }
}

const F: &str = "l1\nl2\nl3\nl4\nl5\n";
const NO_NL: &str = "l1\nl2\nl3";
const BOM: &str = "\u{FEFF}import a\nx = 1\n";

#[test]
fn single_edits() {
    let cases: Vec<(&str, &str, HashlineEdit, &str)> = vec![
        (
            "replace one",
            F,
            replace(F, 2, None, &["X"]),
            "l1\nX\nl3\nl4\nl5\n",
        ),
        (
            "replace range",
            F,
            replace(F, 2, Some(4), &["X", "Y"]),
            "l1\nX\nY\nl5\n",
        ),
        (
            "replace grows",
            F,
            replace(F, 5, None, &["X", "Y", "Z"]),
            "l1\nl2\nl3\nl4\nX\nY\nZ\n",
        ),
        (
            "delete range",
            F,
            replace(F, 2, Some(3), &[]),
            "l1\nl4\nl5\n",
        ),
        ("delete all", F, replace(F, 1, Some(5), &[]), ""),
        (
            "delete through the virtual line",
            F,
            replace(F, 4, Some(6), &[]),
            "l1\nl2\nl3\n",
        ),
        (
            "replace the virtual line",
            F,
            replace(F, 6, None, &["X"]),
            "l1\nl2\nl3\nl4\nl5\nX\n",
        ),
        (
            "append after",
            F,
            append(F, Some(2), &["X"]),
            "l1\nl2\nX\nl3\nl4\nl5\n",
        ),
        (
            "append at end",
            F,
            append(F, None, &["X", "Y"]),
            "l1\nl2\nl3\nl4\nl5\nX\nY\n",
        ),
        (
            "append after last",
            F,
            append(F, Some(5), &["X"]),
            "l1\nl2\nl3\nl4\nl5\nX\n",
        ),
        (
            "append after virtual",
            F,
            append(F, Some(6), &["X"]),
            "l1\nl2\nl3\nl4\nl5\nX\n",
        ),
        (
            "prepend before",
            F,
            prepend(F, Some(2), &["X"]),
            "l1\nX\nl2\nl3\nl4\nl5\n",
        ),
        (
            "prepend at start",
            F,
            prepend(F, None, &["X"]),
            "X\nl1\nl2\nl3\nl4\nl5\n",
        ),
        (
            "prepend before virtual",
            F,
            prepend(F, Some(6), &["X"]),
            "l1\nl2\nl3\nl4\nl5\nX\n",
        ),
        (
            "no final newline: append",
            NO_NL,
            append(NO_NL, None, &["X"]),
            "l1\nl2\nl3\nX",
        ),
        (
            "no final newline: replace last",
            NO_NL,
            replace(NO_NL, 3, None, &["X"]),
            "l1\nl2\nX",
        ),
        (
            "no final newline: delete last",
            NO_NL,
            replace(NO_NL, 3, None, &[]),
            "l1\nl2",
        ),
        ("empty file: append", "", append("", None, &["X"]), "X"),
        (
            "empty file: replace line 1",
            "",
            replace("", 1, None, &["X"]),
            "X",
        ),
        (
            "blank lines are real lines",
            "a\n\n",
            replace("a\n\n", 2, None, &["b"]),
            "a\nb\n",
        ),
        (
            "insert an empty line",
            F,
            append(F, Some(1), &[""]),
            "l1\n\nl2\nl3\nl4\nl5\n",
        ),
        (
            "BOM stays first when line 1 is replaced",
            BOM,
            replace(BOM, 1, None, &["import b"]),
            "\u{FEFF}import b\nx = 1\n",
        ),
        (
            "BOM echoed in the sent line 1 is not doubled",
            BOM,
            replace(BOM, 1, None, &["\u{FEFF}import b"]),
            "\u{FEFF}import b\nx = 1\n",
        ),
        (
            "BOM stays first on a prepend at the start",
            BOM,
            prepend(BOM, None, &["# head"]),
            "\u{FEFF}# head\nimport a\nx = 1\n",
        ),
        (
            "BOM stays first on a prepend before line 1",
            BOM,
            prepend(BOM, Some(1), &["# head"]),
            "\u{FEFF}# head\nimport a\nx = 1\n",
        ),
        (
            "BOM kept when every line is deleted",
            BOM,
            replace(BOM, 1, Some(2), &[]),
            "\u{FEFF}",
        ),
        (
            "dollar signs stay literal",
            F,
            replace(F, 1, None, &["$1 $$ ${x}"]),
            "$1 $$ ${x}\nl2\nl3\nl4\nl5\n",
        ),
    ];
    for (name, content, edit, want) in cases {
        let got = hashline::apply(content, &[edit]).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn edits_use_snapshot_positions() {
    let edits = [
        replace(F, 2, None, &["A", "B", "C"]),
        replace(F, 4, None, &["D"]),
        append(F, Some(1), &["E"]),
    ];
    assert_eq!(
        hashline::apply(F, &edits).unwrap(),
        "l1\nE\nA\nB\nC\nl3\nD\nl5\n"
    );
    // Order of the edit list does not matter for disjoint edits.
    let reversed: Vec<HashlineEdit> = edits.iter().rev().cloned().collect();
    assert_eq!(
        hashline::apply(F, &reversed).unwrap(),
        "l1\nE\nA\nB\nC\nl3\nD\nl5\n"
    );
}

#[test]
fn inserts_at_one_place_keep_their_order() {
    let edits = [
        append(F, Some(2), &["A"]),
        prepend(F, Some(3), &["B"]),
        append(F, Some(2), &["C"]),
    ];
    assert_eq!(
        hashline::apply(F, &edits).unwrap(),
        "l1\nl2\nA\nB\nC\nl3\nl4\nl5\n"
    );
}

#[test]
fn inserts_around_a_replaced_line() {
    let edits = [
        append(F, Some(3), &["after"]),
        replace(F, 3, None, &["X"]),
        prepend(F, Some(3), &["before"]),
    ];
    assert_eq!(
        hashline::apply(F, &edits).unwrap(),
        "l1\nl2\nbefore\nX\nafter\nl4\nl5\n"
    );
}

#[test]
fn adjacent_ranges_are_not_overlapping() {
    let edits = [
        replace(F, 1, Some(2), &["A"]),
        replace(F, 3, Some(4), &["B"]),
    ];
    assert_eq!(hashline::apply(F, &edits).unwrap(), "A\nB\nl5\n");
}

#[test]
fn invalid_combinations_are_rejected() {
    let cases: Vec<(&str, Vec<HashlineEdit>)> = vec![
        (
            "overlap",
            vec![
                replace(F, 2, Some(3), &["A"]),
                replace(F, 3, Some(4), &["B"]),
            ],
        ),
        (
            "same line twice",
            vec![replace(F, 2, None, &["A"]), replace(F, 2, None, &["B"])],
        ),
        (
            "nested",
            vec![replace(F, 1, Some(5), &["A"]), replace(F, 3, None, &["B"])],
        ),
        (
            "insert inside range",
            vec![replace(F, 2, Some(4), &["A"]), append(F, Some(2), &["B"])],
        ),
        ("end before pos", vec![replace(F, 4, Some(2), &["A"])]),
        (
            "malformed pos",
            vec![HashlineEdit::Replace {
                pos: "line two".into(),
                end: None,
                lines: lines(&["A"]),
            }],
        ),
        (
            "out of range",
            vec![HashlineEdit::Append {
                pos: Some(format!("99#{}", hashline::line_hash(1, "l1"))),
                lines: lines(&["A"]),
            }],
        ),
    ];
    for (name, edits) in cases {
        let err = hashline::apply(F, &edits).unwrap_err();
        assert_eq!(err.code(), "INVALID_INPUT", "{name}: {err}");
    }
}

#[test]
fn stale_refs_refuse_the_whole_batch_and_list_all() {
    let changed = "l1\nL2\nl3\nL4\nl5\n";
    let edits = [
        replace(F, 2, None, &["A"]),
        replace(F, 4, None, &["B"]),
        replace(F, 5, None, &["C"]),
    ];
    let err = hashline::apply(changed, &edits).unwrap_err();
    let EditError::HashlineMismatch { message, remaps } = err else {
        panic!("expected a mismatch, got {err:?}")
    };
    assert_eq!(remaps.len(), 2, "{message}");
    assert_eq!(remaps[&r(F, 2)], r(changed, 2));
    assert_eq!(remaps[&r(F, 4)], r(changed, 4));
    assert!(message.contains(">>> ") && message.contains("|L2") && message.contains("|L4"));
}

#[test]
fn crlf_files_stay_crlf() {
    let crlf = "a\r\nb\r\nc\r\n";
    let cases: Vec<(HashlineEdit, &str)> = vec![
        (replace(crlf, 2, None, &["X", "Y"]), "a\r\nX\r\nY\r\nc\r\n"),
        (append(crlf, None, &["X"]), "a\r\nb\r\nc\r\nX\r\n"),
        (prepend(crlf, None, &["X\r"]), "X\r\na\r\nb\r\nc\r\n"),
        (
            HashlineEdit::Replace {
                pos: r(crlf, 1),
                end: None,
                lines: Lines::One("P\r\nQ\r\n".into()),
            },
            "P\r\nQ\r\nb\r\nc\r\n",
        ),
    ];
    for (edit, want) in cases {
        assert_eq!(hashline::apply(crlf, &[edit]).unwrap(), want);
    }
    let no_final = "a\r\nb";
    assert_eq!(
        hashline::apply(no_final, &[append(no_final, None, &["X"])]).unwrap(),
        "a\r\nb\r\nX"
    );
}

#[test]
fn mixed_line_endings_keep_each_region_style() {
    // First line CRLF, the rest LF (a real pattern in the wild).
    let mixed = "head\r\n\r\na\nb\nc\n";
    let cases: Vec<(HashlineEdit, &str)> = vec![
        (replace(mixed, 4, None, &["b"]), ""),
        (
            replace(mixed, 4, None, &["X", "Y"]),
            "head\r\n\r\na\nX\nY\nc\n",
        ),
        (replace(mixed, 1, None, &["H"]), "H\r\n\r\na\nb\nc\n"),
        (append(mixed, None, &["Z"]), "head\r\n\r\na\nb\nc\nZ\n"),
    ];
    for (edit, want) in cases {
        match hashline::apply(mixed, &[edit]) {
            Ok(got) => assert_eq!(got, want),
            Err(e) => assert!(want.is_empty() && e.code() == "NO_OP", "{e}"),
        }
    }
}

#[test]
fn mixed_line_endings_keep_untouched_bytes() {
    let mixed = "a\r\nb\nc\r\n";
    assert_eq!(
        hashline::apply(mixed, &[replace(mixed, 3, None, &["X"])]).unwrap(),
        "a\r\nb\nX\r\n"
    );
}

#[test]
fn single_string_lines() {
    let cases = [
        ("X", "l1\nX\nl3\nl4\nl5\n"),
        ("X\nY\n", "l1\nX\nY\nl3\nl4\nl5\n"),
        ("X\n\n", "l1\nX\n\nl3\nl4\nl5\n"),
        ("", "l1\nl3\nl4\nl5\n"),
    ];
    for (text, want) in cases {
        let edit = HashlineEdit::Replace {
            pos: r(F, 2),
            end: None,
            lines: Lines::One(text.into()),
        };
        assert_eq!(hashline::apply(F, &[edit]).unwrap(), want, "{text:?}");
    }
    assert_eq!(lines(&["a\nb"]).to_lines(), vec!["a", "b"]);
}

#[test]
fn echoed_prefixes_are_stripped() {
    let h = |n: usize, t: &str| format!("{n}#{}|{t}", hashline::line_hash(n, t));
    let cases: Vec<(&str, Vec<String>, &str)> = vec![
        (
            "every line prefixed, edited",
            vec!["2#ZZ|X".into(), "3#PP|Y".into()],
            "l1\nX\nY\nl3\nl4\nl5\n",
        ),
        (
            "prefixed and empty lines",
            vec!["2#ZZ|X".into(), String::new()],
            "l1\nX\n\nl3\nl4\nl5\n",
        ),
        (
            "pasted unedited line among new ones",
            vec!["new".into(), h(3, "l3")],
            "l1\nnew\nl3\nl3\nl4\nl5\n",
        ),
        (
            "look-alike content among new lines is kept",
            vec!["new".into(), "7#ZZ|x".into()],
            "l1\nnew\n7#ZZ|x\nl3\nl4\nl5\n",
        ),
        (
            "not a prefix: lowercase hash",
            vec!["2#vk|x".into()],
            "l1\n2#vk|x\nl3\nl4\nl5\n",
        ),
        (
            "not a prefix: letters outside the alphabet",
            vec!["2#AB|x".into()],
            "l1\n2#AB|x\nl3\nl4\nl5\n",
        ),
        (
            "not a prefix: no bar",
            vec!["2#VK x".into()],
            "l1\n2#VK x\nl3\nl4\nl5\n",
        ),
        (
            "copied from a mismatch message",
            vec![">>> 2#ZZ|X".into(), "    3#PP|  Y".into()],
            "l1\nX\n  Y\nl3\nl4\nl5\n",
        ),
    ];
    for (name, sent, want) in cases {
        let edit = HashlineEdit::Replace {
            pos: r(F, 2),
            end: None,
            lines: Lines::Many(sent),
        };
        assert_eq!(hashline::apply(F, &[edit]).unwrap(), want, "{name}");
    }
}

#[test]
fn unchanged_results_are_no_ops() {
    let cases: Vec<(&str, Vec<HashlineEdit>)> = vec![
        ("same line", vec![replace(F, 2, None, &["l2"])]),
        (
            "same range",
            vec![replace(F, 2, Some(4), &["l2", "l3", "l4"])],
        ),
        (
            "echoed same line",
            vec![replace(F, 2, None, &[&format!("{}|l2", r(F, 2))])],
        ),
        ("no edits", vec![]),
        ("empty insert", vec![append(F, None, &[])]),
    ];
    for (name, edits) in cases {
        let err = hashline::apply(F, &edits).unwrap_err();
        assert_eq!(err.code(), "NO_OP", "{name}: {err}");
    }
}

#[test]
fn legacy_refs_are_accepted() {
    let content = "fn f() {\n    body();\n}\n";
    let legacy = format!("2#{}", hashline::legacy_line_hash(2, "    body();"));
    let edit = HashlineEdit::Replace {
        pos: legacy,
        end: None,
        lines: lines(&["    other();"]),
    };
    assert_eq!(
        hashline::apply(content, &[edit]).unwrap(),
        "fn f() {\n    other();\n}\n"
    );
}

#[test]
fn lenient_refs_work_in_edits() {
    let edit = HashlineEdit::Replace {
        pos: format!(">>> {}|l2", r(F, 2)).replace('#', " # "),
        end: None,
        lines: lines(&["X"]),
    };
    assert_eq!(hashline::apply(F, &[edit]).unwrap(), "l1\nX\nl3\nl4\nl5\n");
}

#[test]
fn edits_deserialize_from_the_documented_json() {
    let json = format!(
        r#"[{{"op": "replace", "pos": "{}", "end": "{}", "lines": ["A", "B"]}},
            {{"op": "append", "pos": "{}", "lines": "text"}},
            {{"op": "prepend", "lines": ["top"]}}]"#,
        r(F, 2),
        r(F, 3),
        r(F, 4)
    );
    let edits: Vec<HashlineEdit> = serde_json::from_str(&json).unwrap();
    assert_eq!(
        edits[1],
        HashlineEdit::Append {
            pos: Some(r(F, 4)),
            lines: Lines::One("text".into())
        }
    );
    assert_eq!(
        hashline::apply(F, &edits).unwrap(),
        "top\nl1\nA\nB\nl4\ntext\nl5\n"
    );
    let back = serde_json::to_string(&edits[2]).unwrap();
    assert_eq!(back, r#"{"op":"prepend","pos":null,"lines":["top"]}"#);
    let bad: Result<Vec<HashlineEdit>, _> =
        serde_json::from_str(r#"[{"op": "delete", "pos": "1#ZZ"}]"#);
    assert!(bad.is_err());
}
