//! The incremental guards, case by case: for edits given as one splice,
//! `check_splices` reports what `check` reports (the truncation change is
//! tested through `apply` in `tests/guards_truncation.rs`), and the cheap
//! tests really skip the full analysis when the edit touches no import,
//! placeholder or conflict-marker line.

use super::splice::{windows, Splice};
use super::*;

/// `original` with `original[start..start + old.len()]` (which must be
/// `old`) replaced by `new`, and the splice that says so.
fn edit(original: &str, old: &str, new: &str) -> (String, Splice) {
    let start = original
        .find(old)
        .unwrap_or_else(|| panic!("{old:?} not in the test's original"));
    let end = start + old.len();
    let updated = format!("{}{new}{}", &original[..start], &original[end..]);
    let splice = Splice {
        old: start..end,
        new: start..start + new.len(),
    };
    (updated, splice)
}

fn kinds(v: &[GuardViolation]) -> Vec<ViolationKind> {
    v.iter().map(|v| v.kind).collect()
}

/// (name, path, original, old, new, the kinds `check_splices` reports)
type Case = (
    &'static str,
    Option<&'static str>,
    &'static str,
    &'static str,
    &'static str,
    &'static [ViolationKind],
);

const PY: &str = "import os\nfrom typing import (\n    List,\n    Dict,\n)\n\ndef f(x: List) -> Dict:\n    return os.getcwd()\n";
const RS: &str = "use std::{\n    fs,\n    io,\n};\nuse std::path::Path;\n\nfn main() {\n    fs::read(Path::new(\"x\")).ok();\n    io::stdout();\n}\n";
const GO: &str = "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() {\n\tfmt.Println(os.Args)\n}\n";
const GO_LINES: &str = "package main\n\n// deps\nimport f \"flag\"\nimport \"fmt\"\n\nvar n = len(x)\n\nfunc main() {\n\tfmt.Println(f.Args())\n}\n";
const PY_FROM: &str = "from notes (\nx = 1\n)\nimport os\nprint(os.name)\n";
const PY_BACKSLASH: &str = "from m import (a,\n    b) \\\n\nprint(a, b)\n";
const RS_ATTR: &str = "#[cfg(feature = \"x;y\")] use std::{\n    fs,\n    io,\n};\nfn main() {\n    fs::read(\"x\").ok();\n    io::stdout();\n}\n";
const PY_LINES: &str = "# deps\nimport os\n\nprint(os.name)\n";
const RS_LINES: &str = "// deps\nuse std::path::Path;\n\nfn main() {\n    Path::new(\"x\");\n}\n";
const JS: &str = "import {\n  a,\n  b,\n} from './m';\nconst fs = require('fs');\n\nexport function f() {\n  return a(b(fs));\n}\n";
const JAVA: &str = "package a;\n\nimport java.util.List;\nimport java.util.Map;\n\nclass X {\n    List<String> l;\n    Map<String, String> m;\n}\n";

const DROPPED: &[ViolationKind] = &[ViolationKind::DroppedImports];
const LEAK: &[ViolationKind] = &[ViolationKind::MarkerLeak];
const CONFLICT: &[ViolationKind] = &[ViolationKind::ConflictMarker];
const NONE: &[ViolationKind] = &[];

const CASES: &[Case] = &[
    // ---- imports: a statement's later lines, a swallowing insert, a plain line
    (
        "py: a name inside parentheses removed",
        Some("a.py"),
        PY,
        "    List,\n",
        "",
        DROPPED,
    ),
    (
        "py: an inserted open import swallows the next one",
        Some("a.py"),
        PY_LINES,
        "# deps",
        "# deps\nfrom x import (",
        DROPPED,
    ),
    // A `from` line is read as a statement even when it imports nothing.
    (
        "py: a statement without `import` no longer closed",
        Some("a.py"),
        PY_FROM,
        ")",
        "",
        DROPPED,
    ),
    // A `)` does not end a statement that goes on with a `\\`.
    (
        "py: a line joined to a statement continued past its `)`",
        Some("a.py"),
        PY_BACKSLASH,
        "\nprint",
        "x\nprint",
        DROPPED,
    ),
    (
        "py: a body edit",
        Some("a.py"),
        PY,
        "return os.getcwd()",
        "return os.getcwd() + '/'",
        NONE,
    ),
    ("py: without a path", None, PY, "    List,\n", "", DROPPED),
    (
        "rs: a path inside a use tree removed",
        Some("lib.rs"),
        RS,
        "    io,\n",
        "",
        DROPPED,
    ),
    (
        "rs: an inserted open use swallows the next one",
        Some("lib.rs"),
        RS_LINES,
        "// deps",
        "// deps\nuse a::{",
        DROPPED,
    ),
    // The `;` in the attribute does not end the `use` after it.
    (
        "rs: a path removed from a use tree after an attribute with a `;`",
        Some("lib.rs"),
        RS_ATTR,
        "    io,\n",
        "",
        DROPPED,
    ),
    (
        "rs: a body edit",
        Some("lib.rs"),
        RS,
        "io::stdout();",
        "io::stderr();",
        NONE,
    ),
    (
        "go: a spec inside an import block removed",
        Some("main.go"),
        GO,
        "\t\"os\"\n",
        "",
        DROPPED,
    ),
    // The block then runs on to the next line with a `)`: same specs.
    (
        "go: the block's closing line removed",
        Some("main.go"),
        GO,
        ")\n\nfunc",
        "\nfunc",
        NONE,
    ),
    (
        "go: an inserted block swallows the next imports",
        Some("main.go"),
        GO_LINES,
        "// deps",
        "// deps\nimport (",
        DROPPED,
    ),
    (
        "go: a body edit",
        Some("main.go"),
        GO,
        "fmt.Println(os.Args)",
        "fmt.Println(os.Args[1:])",
        NONE,
    ),
    (
        "js: a name inside braces removed",
        Some("a.ts"),
        JS,
        "  b,\n",
        "",
        DROPPED,
    ),
    (
        "js: a require removed",
        Some("a.js"),
        JS,
        "const fs = require('fs');\n",
        "",
        DROPPED,
    ),
    (
        "js: a body edit",
        Some("a.ts"),
        JS,
        "return a(b(fs));",
        "return a(b(fs), 1);",
        NONE,
    ),
    (
        "java: an import line removed",
        Some("X.java"),
        JAVA,
        "import java.util.Map;\n",
        "",
        DROPPED,
    ),
    (
        "java: a body edit",
        Some("X.java"),
        JAVA,
        "List<String> l;",
        "List<Integer> l;",
        NONE,
    ),
    (
        "unsupported extension: imports not checked",
        Some("notes.txt"),
        PY,
        "    List,\n",
        "",
        NONE,
    ),
    // ---- markers formed across a splice boundary (the junction lines)
    (
        "placeholder completed after a comment opener",
        Some("a.py"),
        "x = 1\n# ...\ny = 2\n",
        "\ny = 2",
        " existing code ...\ny = 2",
        LEAK,
    ),
    (
        "placeholder inserted whole",
        Some("a.py"),
        PY,
        "\ndef f",
        "\n# ... existing code ...\ndef f",
        LEAK,
    ),
    (
        "placeholder moved within the edit",
        None,
        "a\n// ... existing code ...\nb\n",
        "a\n// ... existing code ...\n",
        "// ... existing code ...\na\n",
        NONE,
    ),
    (
        "conflict marker completed across the boundary",
        None,
        "a\n<<<<\nb\n",
        "\nb",
        "<<< HEAD\nb",
        CONFLICT,
    ),
    (
        "conflict marker split by the edit",
        None,
        "a\n<<<<<<< HEAD\nb\n",
        "<<<<<<< HEAD",
        "<<< <<<< HEAD",
        NONE,
    ),
    (
        "a heading underline in Markdown",
        Some("README.md"),
        "Title\nx\n",
        "x\n",
        "=======\nx\n",
        NONE,
    ),
    (
        "a conflict block in Markdown",
        Some("README.md"),
        "Title\nx\n",
        "x\n",
        "<<<<<<< a\nx\n=======\ny\n>>>>>>> b\n",
        CONFLICT,
    ),
];

#[test]
fn check_splices_agrees_with_check() {
    for (name, path, original, old, new, want) in CASES {
        let (updated, splice) = edit(original, old, new);
        let got = check_splices(original, &updated, *path, std::slice::from_ref(&splice));
        assert_eq!(kinds(&got), *want, "{name}");
        let full: Vec<GuardViolation> = check(original, &updated, *path)
            .into_iter()
            .filter(|v| v.kind != ViolationKind::Truncation)
            .collect();
        assert_eq!(got, full, "{name}");
    }
}

#[test]
fn edits_that_touch_no_import_or_marker_line_skip_the_full_analysis() {
    // (path, original, old, new): the cheap tests must all say "nothing to
    // check", so the whole-file scans never run.
    let cases = [
        (
            Some("a.py"),
            PY,
            "return os.getcwd()",
            "return os.getcwd() + '/'",
        ),
        (None, PY, "return os.getcwd()", "return os.getcwd() + '/'"),
        (Some("lib.rs"), RS, "io::stdout();", "io::stderr();"),
        (None, RS, "io::stdout();", "io::stderr();"),
        (
            Some("main.go"),
            GO,
            "fmt.Println(os.Args)",
            "fmt.Println(os.Args[1:])",
        ),
        (Some("a.ts"), JS, "return a(b(fs));", "return a(b(fs), 1);"),
        (None, JS, "return a(b(fs));", "return a(b(fs), 1);"),
        (Some("X.java"), JAVA, "List<String> l;", "List<Integer> l;"),
    ];
    for (path, original, old, new) in cases {
        let (updated, splice) = edit(original, old, new);
        let w = windows(original, &updated, std::slice::from_ref(&splice)).unwrap();
        assert!(
            !imports::may_drop(original, &updated, path, &w),
            "{path:?} {old:?}"
        );
        assert!(
            !markers::placeholders_grew(original, &updated, &w),
            "{old:?}"
        );
        assert!(
            !markers::conflict_markers_grew(original, &updated, &w),
            "{old:?}"
        );
    }
}

#[test]
fn untrusted_splices_fall_back_to_the_whole_file_check() {
    let original = "a\nb\nc\nd\n";
    let updated = "a\n";
    let bogus = [Splice {
        old: 3..99,
        new: 0..1,
    }];
    assert_eq!(
        check_splices(original, updated, None, &bogus),
        check(original, updated, None)
    );
}
