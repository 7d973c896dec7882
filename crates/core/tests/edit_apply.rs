//! Table-driven tests of `apply_edit` / `apply_edits`: faithful bytes,
//! re-indentation, punctuation style, escapes, replace_all, refusals.

use coderig::{apply_edit, apply_edit_with, apply_edits, ApplyOptions, Edit, EditError, Tier};

fn edit(old: &str, new: &str) -> Edit {
    Edit {
        old: old.into(),
        new: new.into(),
        replace_all: false,
    }
}

/// `(name, content, old, new, expected content, tier)`
const APPLIES: &[(&str, &str, &str, &str, &str, Tier)] = &[
    (
        "dollar signs are literal",
        "let a = x;\n",
        "x",
        "$1 + $$ + ${0}",
        "let a = $1 + $$ + ${0};\n",
        Tier::Exact,
    ),
    (
        "CRLF kept, LF new converted",
        "a\r\nb\r\nc\r\n",
        "a\nb",
        "a\nB\nb2",
        "a\r\nB\r\nb2\r\nc\r\n",
        Tier::Exact,
    ),
    (
        "CRLF kept on a whitespace match",
        "if x:\r\n    y()\r\nz\r\n",
        "if x:\n  y()",
        "if x:\n  y(1)\n  w()",
        "if x:\r\n    y(1)\r\n    w()\r\nz\r\n",
        Tier::Whitespace,
    ),
    (
        "region mixing CRLF and LF: each unchanged line keeps its break",
        "a\r\nb\nc\r\nd\n",
        "a\nb\nc",
        "a\nB\nx\nc",
        "a\r\nB\nx\nc\r\nd\n",
        Tier::Whitespace,
    ),
    (
        "region mixing CRLF and LF: inserted line takes the break before it",
        "a\r\nb\nc\n",
        "a\nb\nc",
        "a\nx\nb\nc",
        "a\r\nx\r\nb\nc\n",
        Tier::Whitespace,
    ),
    (
        "LF file stays LF with a CRLF new",
        "a\nb\n",
        "a",
        "x\r\ny",
        "x\ny\nb\n",
        Tier::Exact,
    ),
    (
        "BOM and missing final newline kept",
        "\u{FEFF}one\ntwo",
        "two",
        "2",
        "\u{FEFF}one\n2",
        Tier::Exact,
    ),
    (
        "BOM kept on a line-tier match of the first line",
        "\u{FEFF}  one\ntwo\n",
        "one ",
        "uno",
        "\u{FEFF}  uno\ntwo\n",
        Tier::Whitespace,
    ),
    (
        "re-indent: needle at +4 spaces",
        "def f():\n    if a:\n        b()\n",
        "        if a:\n            b()",
        "        if a:\n            b()\n            c()",
        "def f():\n    if a:\n        b()\n        c()\n",
        Tier::Whitespace,
    ),
    (
        "re-indent: needle at -2 spaces",
        "  if a {\n    b();\n  }\n",
        "if a {\n  b();\n}",
        "if a {\n  b();\n  c();\n}",
        "  if a {\n    b();\n    c();\n  }\n",
        Tier::Whitespace,
    ),
    (
        "re-indent: tabs in file, 4 spaces in needle",
        "fn f() {\n\tif a {\n\t\tb();\n\t}\n}\n",
        "    if a {\n        b();\n    }",
        "    if a {\n        b();\n        if c {\n            d();\n        }\n    }",
        "fn f() {\n\tif a {\n\t\tb();\n\t\tif c {\n\t\t\td();\n\t\t}\n\t}\n}\n",
        Tier::Whitespace,
    ),
    (
        "re-indent: spaces in file, tabs in needle",
        "class A:\n    def f(self):\n        return 1\n",
        "\tdef f(self):\n\t\treturn 1",
        "\tdef f(self):\n\t\tx = 2\n\t\treturn x",
        "class A:\n    def f(self):\n        x = 2\n        return x\n",
        Tier::Whitespace,
    ),
    (
        "re-indent: 2 spaces per level in the needle, 4 in the file, deeper new",
        "def f():\n    x = 1\n",
        "def f():\n  x = 1",
        "def f():\n  if y:\n    x = 1",
        "def f():\n    if y:\n        x = 1\n",
        Tier::Whitespace,
    ),
    (
        "re-indent: 4 spaces per level in the needle, 2 in the file, CRLF",
        "function f() {\r\n  if (a) {\r\n    b();\r\n  }\r\n}\r\n",
        "function f() {\n    if (a) {\n        b();\n    }\n}",
        "function f() {\n    if (a) {\n        if (c) {\n            b();\n        }\n    }\n}",
        "function f() {\r\n  if (a) {\r\n    if (c) {\r\n      b();\r\n    }\r\n  }\r\n}\r\n",
        Tier::Whitespace,
    ),
    (
        "unchanged lines keep the file's trailing spaces",
        "a = 1  \nb = 2\n",
        "a = 1\nb = 2",
        "a = 1\nb = 3",
        "a = 1  \nb = 3\n",
        Tier::Whitespace,
    ),
    (
        "unicode: file curly quotes stay curly",
        "msg = \u{2018}hi\u{2019}\nx = 1\n",
        "msg = 'hi'\nx = 1",
        "msg = 'hi there'\nx = 1\nlog('done')",
        "msg = \u{2018}hi there\u{2019}\nx = 1\nlog(\u{2018}done\u{2019})\n",
        Tier::Unicode,
    ),
    (
        "unicode: a file's curly apostrophes do not curl the quotes of code",
        "# it\u{2019}s done\nx = 1\n",
        "# it's done\nx = 1",
        "# it's done\nx = 'a'  # don't",
        "# it\u{2019}s done\nx = 'a'  # don\u{2019}t\n",
        Tier::Unicode,
    ),
    (
        "unicode: model's smart quotes written straight",
        "say(\"a\")\nsay(\"b\")\n",
        "say(\u{201C}a\u{201D})\nsay(\u{201C}b\u{201D})",
        "say(\u{201C}a\u{201D})\nsay(\u{201C}c\u{201D})",
        "say(\"a\")\nsay(\"c\")\n",
        Tier::Unicode,
    ),
    (
        "unicode: dashes and NBSP in comments follow the file",
        "x = 1  # a\u{00A0}\u{2013}\u{00A0}b\n",
        "x = 1  # a - b",
        "x = 2  # a - b - c",
        "x = 2  # a\u{00A0}\u{2013}\u{00A0}b\u{00A0}\u{2013}\u{00A0}c\n",
        Tier::Unicode,
    ),
    (
        "escapes: escaped new is unescaped",
        "if x:\n\ty = \"a\"\nz = 1\n",
        "if x:\\n\\ty = \\\"a\\\"",
        "if x:\\n\\ty = \\\"b\\\"",
        "if x:\n\ty = \"b\"\nz = 1\n",
        Tier::Unicode,
    ),
    (
        "escapes: plain new is kept",
        "if x:\n\ty = \"a\"\nz = 1\n",
        "if x:\\n\\ty = \\\"a\\\"",
        "if x:\n\ty = \"c\"",
        "if x:\n\ty = \"c\"\nz = 1\n",
        Tier::Unicode,
    ),
    (
        "escapes: new written as plain source keeps its backslashes",
        "print(\"x\")\ny = 1\n",
        "print(\\\"x\\\")",
        "print(\"x\\n\")",
        "print(\"x\\n\")\ny = 1\n",
        Tier::Unicode,
    ),
    (
        "fuzzy: typo fixed by the file's text, change applied",
        "def f(a):\n    total = compute_total(a, b)\n    check(total)\n    return total\n",
        "def f(a):\n    total = compute_totl(a, b)\n    check(total)\n    return total",
        "def f(a):\n    total = compute_totl(a, b)\n    check(total, strict=True)\n    return total",
        "def f(a):\n    total = compute_total(a, b)\n    check(total, strict=True)\n    return total\n",
        Tier::Fuzzy,
    ),
    (
        "needle ending in a line break, matched line-wise",
        "a\n  b\nc\n",
        "b  \n",
        "B\n",
        "a\n  B\nc\n",
        Tier::Whitespace,
    ),
    (
        "unicode: inserted comment line takes the file's ellipsis and NBSP",
        "# wait\u{2026}\u{00A0}done\nx = 1\n",
        "# wait... done\nx = 1",
        "# wait... done\n# more... here\nx = 1",
        "# wait\u{2026}\u{00A0}done\n#\u{00A0}more\u{2026}\u{00A0}here\nx = 1\n",
        Tier::Unicode,
    ),
    (
        "unicode: deleting the end of a line keeps its line break",
        "msg = \u{201C}hi\u{201D}  # note\u{2014}x\nnext_line()\n",
        "  # note--x",
        "",
        "msg = \u{201C}hi\u{201D}\nnext_line()\n",
        Tier::Unicode,
    ),
    (
        "unicode: deleting a whole first line after a BOM takes its line break",
        "\u{FEFF}print(\u{201C}a\u{201D})\ny()\n",
        "print(\"a\")",
        "",
        "\u{FEFF}y()\n",
        Tier::Unicode,
    ),
    (
        "blank line the model left out of old is kept",
        "def f():\n    a = 1\n\n    b = 2\n",
        "def f():\n    a = 1\n    b = 2",
        "def f():\n    a = 1\n    b = 3",
        "def f():\n    a = 1\n\n    b = 3\n",
        Tier::Whitespace,
    ),
    (
        "blank line the model added to old is not added",
        "def f():\n    a = 1\n    b = 2\n",
        "def f():\n    a = 1\n\n    b = 2",
        "def f():\n    a = 1\n\n    b = 3",
        "def f():\n    a = 1\n    b = 3\n",
        Tier::Whitespace,
    ),
    (
        "whitespace-only blank line of the file kept; a blank line new adds is added",
        "def f():\n  a = 1\n    \n  b = 2\n",
        "def f():\n    a = 1\n\n    b = 2",
        "def f():\n    a = 1\n\n    b = 3\n\n    c = 4",
        "def f():\n  a = 1\n    \n  b = 3\n\n  c = 4\n",
        Tier::Whitespace,
    ),
    (
        "fuzzy: blank lines the model left out are kept",
        "def f(a):\n    total = compute_total(a, b)\n\n    check(total)\n\n    return total\n",
        "def f(a):\n    total = compute_totl(a, b)\n    check(total)\n    return total",
        "def f(a):\n    total = compute_totl(a, b)\n    check(total, 1)\n    return total",
        "def f(a):\n    total = compute_total(a, b)\n\n    check(total, 1)\n\n    return total\n",
        Tier::Fuzzy,
    ),
    (
        "final newline untouched by a line-tier match",
        "a\n  b\n",
        "b ",
        "c",
        "a\n  c\n",
        Tier::Whitespace,
    ),
    (
        "deleting a line-matched block removes its line break",
        "a\n  b\n  c\nd\n",
        "b\nc",
        "",
        "a\nd\n",
        Tier::Whitespace,
    ),
];

#[test]
fn applies_with_faithful_bytes() {
    for (name, content, old, new, want, tier) in APPLIES {
        let r = apply_edit(content, &edit(old, new)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(r.content, *want, "{name}");
        assert_eq!(r.tier, *tier, "{name}");
        assert_eq!(r.replacements, 1, "{name}");
    }
}

/// `(name, content, old, new, code, phrases the message must contain)`
type Refusal = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
);

#[test]
fn refusals_have_the_right_kind_and_a_useful_message() {
    let cases: &[Refusal] = &[
        ("empty old", "abc\n", "", "x", "INVALID_INPUT", &["empty"]),
        (
            "ambiguous lists lines",
            "x = 1\ny\nx = 1\n",
            "x = 1",
            "x = 2",
            "AMBIGUOUS",
            &["ambiguous", "1, 3", "replace_all", "more surrounding lines"],
        ),
        (
            "not found points to the nearest text",
            "def handler(request):\n    data = parse(request.body)\n    store(data)\n    return ok()\n",
            "def handler(request):\n    payload = decode(request.stream)\n    persist(payload)\n    return ok()",
            "pass",
            "NOT_FOUND",
            &["not found", "lines 1–4", "Re-read the file", "verbatim"],
        ),
        ("no-op", "a = 1\n", "a = 1", "a = 1", "NO_OP", &["changes nothing"]),
        (
            "no-op in a region mixing CRLF and LF",
            "a\r\nb\nc\r\n",
            "a\nb\nc",
            "a\nb\nc",
            "NO_OP",
            &["changes nothing"],
        ),
        (
            "no-op after re-indentation",
            "    a = 1\n",
            "a = 1",
            "a = 1",
            "NO_OP",
            &["changes nothing"],
        ),
    ];
    for (name, content, old, new, code, phrases) in cases {
        let e = apply_edit(content, &edit(old, new)).expect_err(name);
        assert_eq!(e.code(), *code, "{name}: {e}");
        for p in *phrases {
            assert!(
                e.message().contains(p),
                "{name}: {p:?} not in {:?}",
                e.message()
            );
        }
    }
    match apply_edit("x = 1\ny\nx = 1\n", &edit("x = 1", "x = 2")) {
        Err(EditError::Ambiguous { count, lines, .. }) => {
            assert_eq!(count, 2);
            assert_eq!(lines, vec![(1, 1), (3, 3)]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn replace_all_replaces_every_occurrence_at_the_winning_tier() {
    let e = Edit {
        old: "foo()".into(),
        new: "bar()".into(),
        replace_all: true,
    };
    let r = apply_edit("foo()\nx\nfoo()\nfoo()\n", &e).unwrap();
    assert_eq!(r.content, "bar()\nx\nbar()\nbar()\n");
    assert_eq!(r.replacements, 3);
    // Non-overlapping: "aa" in "aaaa" is two spans.
    let e = Edit {
        old: "aa".into(),
        new: "b".into(),
        replace_all: true,
    };
    assert_eq!(apply_edit("aaaa", &e).unwrap().content, "bb");
    // A file mixing CRLF and LF: both spellings of the needle, each copy
    // keeping its own line breaks.
    let e = Edit {
        old: "a\nb".into(),
        new: "A\nB".into(),
        replace_all: true,
    };
    let r = apply_edit("a\r\nb\r\nx\na\nb\n", &e).unwrap();
    assert_eq!(r.content, "A\r\nB\r\nx\nA\nB\n");
    assert_eq!(r.replacements, 2);
    // Whitespace tier: each copy re-indented to its own place.
    let e = Edit {
        old: "if a:\n  go()".into(),
        new: "if a:\n  go(1)".into(),
        replace_all: true,
    };
    let r = apply_edit("if a:\n    go()\nelse:\n  if a:\n      go()\n", &e).unwrap();
    assert_eq!(r.content, "if a:\n    go(1)\nelse:\n  if a:\n      go(1)\n");
    assert_eq!(r.tier, Tier::Whitespace);
}

#[test]
fn apply_edits_is_atomic_and_checks_the_batch() {
    let content = "one\ntwo\nthree\nfour\n";
    let opts = ApplyOptions::default();
    let r = apply_edits(
        content,
        &[edit("one", "1"), edit("  three", "3"), edit("four", "4")],
        &opts,
    )
    .unwrap();
    assert_eq!(r.content, "1\ntwo\n3\n4\n");
    assert_eq!(r.replacements, 3);
    assert_eq!(r.tier, Tier::Whitespace, "weakest tier");

    let e = apply_edits(
        content,
        &[edit("one\ntwo", "x"), edit("two\nthree", "y")],
        &opts,
    )
    .unwrap_err();
    assert_eq!(e.code(), "INVALID_INPUT");
    assert!(
        e.message().contains("`edits[0]`") && e.message().contains("`edits[1]`"),
        "{e}"
    );

    let e = apply_edits(content, &[edit("two", "deux"), edit("deux", "zwei")], &opts).unwrap_err();
    assert_eq!(e.code(), "NOT_FOUND");
    assert!(e.message().contains("`edits[0]`"), "{e}");

    // A whitespace-only old that is nowhere is not blamed on another edit.
    let e = apply_edits(content, &[edit("one", "1"), edit("\t\t", "x")], &opts).unwrap_err();
    assert_eq!(e.code(), "NOT_FOUND");
    assert!(!e.message().contains("exists only"), "{e}");

    // One bad edit refuses the whole batch.
    let e = apply_edits(
        content,
        &[edit("one", "1"), edit("missing line", "x")],
        &opts,
    )
    .unwrap_err();
    assert_eq!(e.code(), "NOT_FOUND");
    assert!(e.message().starts_with("`edits[1]`: "), "{e}");

    assert_eq!(
        apply_edits(content, &[], &opts).unwrap_err().code(),
        "INVALID_INPUT"
    );
    let e = apply_edits(content, &[edit("one", "one")], &opts).unwrap_err();
    assert_eq!(e.code(), "NO_OP");
}

#[test]
fn options_are_respected() {
    let opts = ApplyOptions {
        path: Some("src/lib.rs".into()),
        guards: false,
    };
    let r = apply_edit_with("a\nb\n", &edit("b", "c"), &opts).unwrap();
    assert_eq!(r.content, "a\nc\n");
}

#[test]
fn replace_all_does_not_override_an_uncertain_fuzzy_match() {
    // Best window: 4 substitutions (0.86); rival: 5 (0.83), within the margin
    // but below the threshold, so the location is uncertain.
    let content = "a()\nabXdefXhijXlmnXpqrstu\nz()\n\na()\nabYdefYhijYlmnYpqrYtu\nz()\n";
    let e = Edit {
        old: "a()\nabcdefghijklmnopqrstu\nz()".into(),
        new: "a()\nchanged\nz()".into(),
        replace_all: true,
    };
    let err = apply_edit(content, &e).unwrap_err();
    assert_eq!(err.code(), "AMBIGUOUS");
    assert!(err.message().contains("verbatim"), "{err}");
    // Both windows qualifying: replace_all replaces both, each in place.
    let content = "a()\nabXdefghijklmnopqrstu\nz()\n\na()\nabYdefghijklmnopqrstu\nz()\n";
    let r = apply_edit(content, &e).unwrap();
    assert_eq!(r.content, "a()\nchanged\nz()\n\na()\nchanged\nz()\n");
    assert_eq!((r.tier, r.replacements), (Tier::Fuzzy, 2));
}

#[test]
fn ambiguous_errors_carry_count_and_lines() {
    let content = "if a:\n    go()\nelse:\n  if a:\n      go()\n";
    let err = apply_edit(content, &edit("if a:\n  go()", "if a:\n  stop()")).unwrap_err();
    match err {
        EditError::Ambiguous { count, lines, .. } => {
            assert_eq!(count, 2);
            assert_eq!(lines, vec![(1, 2), (4, 5)]);
        }
        other => panic!("{other:?}"),
    }
}
