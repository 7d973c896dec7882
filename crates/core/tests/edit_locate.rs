//! Table-driven tests of `locate`: each tier, ambiguity at each tier, line
//! endings, BOM, nearest-candidate reporting.

use coderig::edit::try_locate;
use coderig::{locate, MatchKind};

/// `(name, content, needle, kind, matched text when found)`
type Case = (
    &'static str,
    &'static str,
    &'static str,
    MatchKind,
    Option<&'static str>,
);

const FOUND: &[Case] = &[
    (
        "exact substring",
        "fn a() {\n    let x = 1;\n}\n",
        "let x = 1;",
        MatchKind::Exact,
        Some("let x = 1;"),
    ),
    (
        "exact LF needle in CRLF file",
        "a\r\nb\r\nc\r\n",
        "a\nb",
        MatchKind::Exact,
        Some("a\r\nb"),
    ),
    (
        "exact CRLF needle in LF file",
        "a\nb\nc\n",
        "b\r\nc",
        MatchKind::Exact,
        Some("b\nc"),
    ),
    (
        "whitespace: needle indented differently",
        "def f():\n    if x:\n        y()\n    return 1\n",
        "if x:\n    y()",
        MatchKind::Whitespace,
        Some("    if x:\n        y()"),
    ),
    (
        "whitespace: trailing spaces and collapsed runs",
        "x = 1\ny  =  foo(a)\nz = 3\n",
        "y = foo(a)   ",
        MatchKind::Whitespace,
        Some("y  =  foo(a)"),
    ),
    (
        "whitespace: blank line missing in needle",
        "a()\n\nb()\nc()\n",
        "a()\nb()",
        MatchKind::Whitespace,
        Some("a()\n\nb()"),
    ),
    (
        "whitespace: extra blank line in needle",
        "a()\nb()\nc()\n",
        "a()\n\n   \nb()",
        MatchKind::Whitespace,
        Some("a()\nb()"),
    ),
    (
        "whitespace: tabs in file, spaces in needle",
        "fn f() {\n\tif a {\n\t\tb();\n\t}\n}\n",
        "    if a {\n        b();\n    }",
        MatchKind::Whitespace,
        Some("\tif a {\n\t\tb();\n\t}"),
    ),
    (
        "unicode: smart quotes in the needle",
        "print('hi')\nprint(\"yo\")\n",
        "print(\u{201C}yo\u{201D})",
        MatchKind::Unicode,
        Some("print(\"yo\")"),
    ),
    (
        "unicode: curly quotes in the file",
        "x = \u{2018}a\u{2019}\ny = 2\n",
        "x = 'a'",
        MatchKind::Unicode,
        Some("x = \u{2018}a\u{2019}"),
    ),
    (
        "unicode: em dash for --, ellipsis, NBSP",
        "run --fast  # wait...\u{00A0}ok\n",
        "run \u{2014}fast  # wait\u{2026} ok",
        MatchKind::Unicode,
        Some("run --fast  # wait...\u{00A0}ok"),
    ),
    (
        "unicode: folded and re-indented",
        "  say(\u{201C}a\u{201D})\n  done()\n",
        "say(\"a\")\ndone()",
        MatchKind::Unicode,
        Some("  say(\u{201C}a\u{201D})\n  done()"),
    ),
    (
        "unicode: doubled escapes",
        "if x:\n\ty = \"a\"\nz = 1\n",
        "if x:\\n\\ty = \\\"a\\\"",
        MatchKind::Unicode,
        Some("if x:\n\ty = \"a\""),
    ),
    (
        "fuzzy: typo on an interior line",
        "def f(a):\n    total = compute_total(a, b)\n    check(total)\n    return total\n",
        "def f(a):\n    total = compute_totl(a, b)\n    chekc(total)\n    return total",
        MatchKind::Fuzzy,
        Some("def f(a):\n    total = compute_total(a, b)\n    check(total)\n    return total"),
    ),
    (
        "fuzzy: single line with a typo",
        "alpha = 1\nresult = compute_everything(alpha, beta)\nomega = 2\n",
        "result = compute_everythin(alpha, beta)",
        MatchKind::Fuzzy,
        Some("result = compute_everything(alpha, beta)"),
    ),
    (
        "BOM is skipped by line tiers",
        "\u{FEFF}first line\nsecond\n",
        "  first line",
        MatchKind::Whitespace,
        Some("first line"),
    ),
];

#[test]
fn each_tier_finds_its_cases() {
    for (name, content, needle, kind, text) in FOUND {
        let m = locate(content, needle);
        assert_eq!(m.kind, *kind, "{name}: {m:?}");
        let span = m.span.clone().expect(name);
        assert_eq!(Some(&content[span]), *text, "{name}");
        assert_eq!(m.count, 1, "{name}");
        assert!(m.candidates.is_empty() && m.nearest.is_none(), "{name}");
        let score = m.score.expect(name);
        if *kind == MatchKind::Fuzzy {
            assert!((0.85..1.0).contains(&score), "{name}: {score}");
        } else {
            assert_eq!(score, 1.0, "{name}");
        }
    }
}

type Lines = Vec<(usize, usize)>;

#[test]
fn every_tier_refuses_two_locations() {
    // (tier that finds both, content, needle, candidate lines)
    let cases: Vec<(&str, &str, &str, Lines)> = vec![
        ("exact", "x = 1\ny = 2\nx = 1\n", "x = 1", vec![(1, 1), (3, 3)]),
        ("exact, overlapping", "aaa\n", "aa", vec![(1, 1), (1, 1)]),
        (
            "exact, one CRLF and one LF copy (LF needle)",
            "a\r\nb\r\nx\na\nb\n",
            "a\nb",
            vec![(1, 2), (4, 5)],
        ),
        (
            "exact, one CRLF and one LF copy (CRLF needle)",
            "a\r\nb\r\nx\na\nb\n",
            "a\r\nb",
            vec![(1, 2), (4, 5)],
        ),
        (
            "whitespace",
            "if a:\n    go()\nelse:\n        if a:\n            go()\n",
            "if a:\n  go()",
            vec![(1, 2), (4, 5)],
        ),
        (
            "unicode",
            "say('x')\nother()\nsay('x')\n",
            "say(\u{2018}x\u{2019})",
            vec![(1, 1), (3, 3)],
        ),
        (
            "unicode, one CRLF and one LF copy",
            "\u{201C}a\u{201D}\r\nb\r\nx\n\u{201C}a\u{201D}\nb\n",
            "\"a\"\nb",
            vec![(1, 2), (4, 5)],
        ),
        (
            "fuzzy: two equally close copies",
            "def f():\n    value = alpha_one(1)\n    return value\n\ndef f():\n    value = alpha_two(1)\n    return value\n",
            "def f():\n    value = alpha_tri(1)\n    return value",
            vec![(1, 3), (5, 7)],
        ),
    ];
    for (name, content, needle, lines) in cases {
        let m = locate(content, needle);
        assert_eq!(m.kind, MatchKind::Ambiguous, "{name}: {m:?}");
        assert_eq!(m.count, lines.len(), "{name}");
        assert_eq!(m.candidates, lines, "{name}");
        assert!(m.span.is_none(), "{name}");
    }
}

#[test]
fn fuzzy_refuses_when_a_rival_is_within_the_margin() {
    // The rival differs a little more than the best, but less than 0.05.
    let content = "start()\n    compute_value(alpha, beta, gamma)\nend()\n\nstart()\n    compute_valeu(alpha, beta, gamma)\nend()\n";
    let needle = "start()\n    compute_vlue(alpha, beta, gamma)\nend()";
    let m = locate(content, needle);
    assert_eq!(m.kind, MatchKind::Ambiguous, "{m:?}");
    assert_eq!(m.candidates, vec![(1, 3), (5, 7)]);
}

#[test]
fn fuzzy_needs_anchor_lines_for_three_line_needles() {
    let content = "def alpha():\n    x = compute(1)\n    return x\n";
    // Interior identical, first line differs: no anchor, no fuzzy match.
    let m = locate(content, "def alphb():\n    x = compute(1)\n    return x");
    assert_eq!(m.kind, MatchKind::NotFound, "{m:?}");
}

#[test]
fn not_found_reports_the_nearest_window() {
    let content = "a = 1\nb = 2\ndef handler(request):\n    data = parse(request.body)\n    store(data)\n    return ok()\nz = 9\n";
    let needle = "def handler(request):\n    payload = decode(request.stream)\n    persist(payload)\n    return ok()";
    let m = locate(content, needle);
    assert_eq!(m.kind, MatchKind::NotFound, "{m:?}");
    assert_eq!(m.count, 0);
    let n = m.nearest.expect("nearest window");
    assert_eq!((n.first_line, n.last_line), (3, 6));
    assert!(n.score < 0.85 && n.score >= 0.5, "{}", n.score);
}

/// `locate` stays total: an empty needle is `NotFound` there, and only
/// `try_locate` refuses it.
#[test]
fn empty_or_blank_needles_are_not_found() {
    for needle in ["", "   ", "\n\n"] {
        let m = locate("some content\n", needle);
        assert_eq!(m.kind, MatchKind::NotFound, "{needle:?}");
        assert_eq!(m.count, 0);
    }
}

#[test]
fn try_locate_refuses_only_the_empty_needle() {
    // (content, needle, Err(code) | Ok(kind))
    let cases: &[(&str, &str, Result<MatchKind, &str>)] = &[
        ("some content\n", "", Err("INVALID_INPUT")),
        ("", "", Err("INVALID_INPUT")),
        ("some content\n", "   ", Ok(MatchKind::NotFound)),
        ("some content\n", "\n\n", Ok(MatchKind::NotFound)),
        ("some content\n", "content", Ok(MatchKind::Exact)),
        ("a\na\n", "a", Ok(MatchKind::Ambiguous)),
        ("some content\n", "zzz qqq", Ok(MatchKind::NotFound)),
    ];
    for (content, needle, want) in cases {
        match (try_locate(content, needle), want) {
            (Ok(m), Ok(kind)) => {
                assert_eq!(m.kind, *kind, "{needle:?}");
                assert_eq!(m, locate(content, needle), "{needle:?}: same as locate");
            }
            (Err(e), Err(code)) => {
                assert_eq!(e.code(), *code, "{needle:?}");
                let msg = e.message();
                assert!(msg.contains("`needle` is empty"), "{msg}");
                assert!(
                    msg.contains("Send the text to find"),
                    "says what to do: {msg}"
                );
            }
            (got, want) => panic!("{needle:?}: got {got:?}, want {want:?}"),
        }
    }
}

#[test]
fn spans_are_char_boundaries_with_multibyte_text() {
    let content = "é = \u{201C}ü\u{201D}\nñ = 2\n";
    let m = locate(content, "é = \"ü\"");
    assert_eq!(m.kind, MatchKind::Unicode);
    let span = m.span.unwrap();
    assert!(content.is_char_boundary(span.start) && content.is_char_boundary(span.end));
    assert_eq!(&content[span], "é = \u{201C}ü\u{201D}");
}

#[test]
fn ellipsis_expansion_is_never_cut() {
    // "a.." would match inside the folded "a..." but must not split "…".
    let m = locate("xa\u{2026}y\n", "a..");
    assert_eq!(m.kind, MatchKind::NotFound, "{m:?}");
}
