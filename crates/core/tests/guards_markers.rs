//! Truncation, placeholder-marker and conflict-marker guards, with the
//! negative cases that must not trip them.

use coderig::{check_guards, ViolationKind};

fn kinds(original: &str, updated: &str) -> Vec<ViolationKind> {
    check_guards(original, updated, None)
        .into_iter()
        .map(|v| v.kind)
        .collect()
}

fn lines(n: usize, text: &str) -> String {
    (0..n).map(|i| format!("{text} {i}\n")).collect()
}

#[test]
fn truncation_table() {
    let hundred = lines(100, "let value = compute_something();");
    let cases: Vec<(&str, String, String, bool)> = vec![
        (
            "90% gone",
            hundred.clone(),
            lines(10, "let value = compute_something();"),
            true,
        ),
        (
            "half the lines only",
            hundred.clone(),
            lines(50, "let value = compute_something();"),
            false,
        ),
        (
            "chars lost but lines kept",
            hundred.clone(),
            lines(100, "x"),
            false,
        ),
        (
            "lines lost but chars kept",
            hundred.clone(),
            format!("{}\n", "y".repeat(3000)),
            false,
        ),
        (
            "emptied file is not a truncation",
            hundred.clone(),
            String::new(),
            false,
        ),
        ("from empty", String::new(), hundred.clone(), false),
        ("growth", lines(3, "a"), hundred.clone(), false),
        (
            "small file rewritten shorter",
            "a\nb\nc\nd\n".into(),
            "a\n".into(),
            true,
        ),
        (
            "one line to one line",
            "abcdefghij".into(),
            "a".into(),
            false,
        ),
    ];
    for (name, original, updated, want) in cases {
        let got = kinds(&original, &updated).contains(&ViolationKind::Truncation);
        assert_eq!(got, want, "{name}");
    }
    let message = &check_guards(&hundred, "x\n", None)[0].message;
    assert!(message.contains("100 to 1 lines"), "{message}");
}

#[test]
fn placeholder_markers_that_leak_are_caught() {
    let original = "fn main() {\n    work();\n}\n";
    let leaks = [
        "// ... existing code ...",
        "    // ...existing code...",
        "// rest of the code",
        "# ... unchanged ...",
        "/* ... rest of file ... */",
        "<!-- ... existing code ... -->",
        "-- ... remaining code ...",
        "// ... (unchanged)",
        "// ... keep existing ...",
        "; ... rest of file ...",
        "{/* ... existing components ... */}",
        "// … existing code …",
        "  # ... rest of the function remains the same",
        "// Rest of the implementation unchanged",
        "// existing code",
        "// ... other methods unchanged ...",
        "// ... same as before ...",
        "// ... existing code for handleSubmit ...",
        " * ... existing code ...",
        "... existing code ...",
        "// ... code omitted for brevity ...",
        "x = 1  # ... previous implementation ...",
        // Without an ellipsis, a phrase that says code was left out.
        "// rest of file",
        "# remaining code",
        "// other methods unchanged",
        "// unchanged code",
        "// code omitted for brevity",
        "// omitted for brevity",
        "// implementation same as before",
    ];
    for marker in leaks {
        let updated = format!("fn main() {{\n{marker}\n    work();\n}}\n");
        let found = check_guards(original, &updated, Some("main.rs"));
        let leak = found.iter().find(|v| v.kind == ViolationKind::MarkerLeak);
        let leak = leak.unwrap_or_else(|| panic!("{marker:?} not caught: {found:?}"));
        assert!(
            leak.message.contains("line 2"),
            "{marker:?}: {}",
            leak.message
        );
    }
}

#[test]
fn ordinary_code_and_comments_are_not_markers() {
    let original = "start\n";
    let fine = [
        "// Keep the existing behaviour for old clients",
        "# Wait for the rest of the data...",
        "const { a, ...rest } = obj;",
        "  ...rest,",
        "  ...existing,",
        "return [...items, ...more];",
        "def stub(self) -> int: ...",
        "    ...",
        "// TODO: handle more cases...",
        "// existing users are migrated below",
        "# Remaining items are processed in batches",
        "print('... existing code ...'[0:0])  ",
        "x = y[...]",
        "// see the rest of the docs",
        "// Loading...",
        "/* same as above, but for columns */",
        "-- keep the previous value",
        "#[derive(Debug)]",
        "color: #fff; /* unchanged from the theme? no: darker */",
        "i--; // decrement the rest counter",
        "// the remaining bytes are padding",
        "/// unchanged.",
        "# The rest",
        "# And the rest.",
        "// ... same, but for start states.",
        "//   ... same layout and ABI as the only field,",
        "//  preserves the number of elements. ... The same holds",
        "/// omitted.",
        // Section headings over real code, not placeholders for left-out code.
        "# Remaining tests",
        "// remaining cases",
        "# rest of the tests are below",
        "// Remaining helpers",
    ];
    for line in fine {
        let updated = format!("start\n{line}\n");
        assert!(
            !kinds(original, &updated).contains(&ViolationKind::MarkerLeak),
            "{line:?} flagged"
        );
    }
}

#[test]
fn markers_already_in_the_original_are_not_leaks() {
    let original = "a\n// ... existing code ...\nb\n";
    let cases = [
        ("kept", "a\n// ... existing code ...\nb\nc\n", false),
        (
            "moved and re-indented",
            "    // ... existing code ...\na\nb\n",
            false,
        ),
        ("removed", "a\nb\n", false),
        (
            "one more of the same",
            "// ... existing code ...\na\n// ... existing code ...\n",
            true,
        ),
        (
            "a different one",
            "a\n// ... existing code ...\n# ... rest of file ...\n",
            true,
        ),
    ];
    for (name, updated, want) in cases {
        assert_eq!(
            kinds(original, updated).contains(&ViolationKind::MarkerLeak),
            want,
            "{name}"
        );
    }
}

#[test]
fn conflict_markers_table() {
    let original = "a\nb\n";
    let cases = [
        (
            "full conflict",
            "<<<<<<< HEAD\na\n=======\nb\n>>>>>>> branch\n",
            true,
        ),
        ("bare markers", "<<<<<<<\na\n>>>>>>>\n", true),
        ("diff3 base marker", "a\n||||||| base\nb\n", true),
        ("separator alone", "a\n=======\nb\n", true),
        ("crlf separator", "a\r\n=======\r\nb\r\n", true),
        ("longer rule is markdown", "Title\n==========\n", false),
        (
            "indented is not a marker",
            "  =======\n  <<<<<<< x\n",
            false,
        ),
        ("no space after marker", "<<<<<<<<< x\n>>>>>>>>\n", false),
        ("shift operators", "x <<<<<<< y\n", false),
        ("nothing", "a\nb\nc\n", false),
    ];
    for (name, updated, want) in cases {
        assert_eq!(
            kinds(original, updated).contains(&ViolationKind::ConflictMarker),
            want,
            "{name}"
        );
    }
    let had = "<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n";
    assert!(kinds(had, "<<<<<<< HEAD\nA\n=======\nB\n>>>>>>> x\n").is_empty());
    assert!(
        !kinds(had, "a\n").contains(&ViolationKind::ConflictMarker),
        "resolving a conflict is fine"
    );
    let message = &check_guards("a\n", "a\n=======\n", None)[0].message;
    assert!(message.contains("line 2"), "{message}");
}

#[test]
fn seven_equals_underline_a_heading_in_prose_documents() {
    // (name, path, updated, whether a conflict marker is reported)
    let cases = [
        (
            "markdown heading",
            "README.md",
            "Install\n=======\n\nrun\n",
            false,
        ),
        ("rst heading", "docs/index.rst", "Install\n=======\n", false),
        ("txt heading", "NOTES.TXT", "Install\n=======\n", false),
        (
            "conflict in markdown",
            "README.md",
            "<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n",
            true,
        ),
        ("separator in code", "main.py", "Install\n=======\n", true),
    ];
    for (name, path, updated, want) in cases {
        let got = check_guards("a\n", updated, Some(path))
            .iter()
            .any(|v| v.kind == ViolationKind::ConflictMarker);
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn clean_edits_have_no_violations() {
    let original = "import os\n\ndef f():\n    return os.getcwd()\n";
    let updated = "import os\n\ndef f():\n    # cwd of the process\n    return os.getcwd()\n";
    assert!(check_guards(original, updated, Some("f.py")).is_empty());
    assert!(check_guards(original, original, Some("f.py")).is_empty());
    assert!(check_guards("", "", None).is_empty());
}

#[test]
fn several_guards_report_together_in_order() {
    let original: String = format!("import os\nimport sys\n{}", lines(40, "print(os.name)"));
    // `sys` is still used, so losing its import is a drop.
    let updated = "import os\n# ... rest of the code ...\nsys.exit(1)\n<<<<<<< ours\n";
    let found: Vec<ViolationKind> = check_guards(&original, updated, Some("x.py"))
        .into_iter()
        .map(|v| v.kind)
        .collect();
    assert_eq!(
        found,
        vec![
            ViolationKind::Truncation,
            ViolationKind::DroppedImports,
            ViolationKind::MarkerLeak,
            ViolationKind::ConflictMarker
        ]
    );
}

#[test]
fn long_minified_lines_stay_fast_and_quiet() {
    // 200 KB of `;`-separated statements on one line: linear, no marker.
    let line = "a=1;".repeat(50_000);
    let updated = format!("x\n{line}\n// ... existing code ...\n");
    let found = check_guards("x\n", &updated, Some("app.min.js"));
    assert!(found.iter().any(|v| v.kind == ViolationKind::MarkerLeak));
    assert!(found
        .iter()
        .all(|v| !v.message.contains("a=1;a=1;a=1;a=1;a=1;")));
}
