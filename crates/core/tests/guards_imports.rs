//! Dropped-imports guard: per language, moved/re-ordered/reformatted imports
//! pass, removed ones are named.

use coderig::{check_guards, ViolationKind};

fn dropped(original: &str, updated: &str, path: Option<&str>) -> Option<String> {
    check_guards(original, updated, path)
        .into_iter()
        .find(|v| v.kind == ViolationKind::DroppedImports)
        .map(|v| v.message)
}

/// (name, path, original, updated, names that must be reported, or empty for "no violation")
type Case = (
    &'static str,
    Option<&'static str>,
    &'static str,
    &'static str,
    &'static [&'static str],
);

const CASES: &[Case] = &[
    // ---- JavaScript / TypeScript
    (
        "js: removed default import",
        Some("a.ts"),
        "import React from 'react';\nimport { useState } from 'react';\nexport const x = 1;\n",
        "import { useState } from 'react';\nexport const x = 1;\n",
        &["import React from 'react'"],
    ),
    (
        "js: one name removed from braces",
        Some("a.js"),
        "import { a, b, c } from './m';\nuse(a, b, c);\n",
        "import { a, c } from './m';\nuse(a, c);\n",
        &["import { b } from './m'"],
    ),
    (
        "js: reordered, rewrapped, quotes changed",
        Some("a.tsx"),
        "import { a, b } from './m';\nimport x from \"y\";\nimport './side.css';\n",
        "import './side.css'\nimport x from 'y'\nimport {\n  b,\n  a,\n} from \"./m\"\n",
        &[],
    ),
    (
        "js: split into two statements",
        Some("a.js"),
        "import D, { a } from 'm';\n",
        "import D from 'm';\nimport { a } from 'm';\n",
        &[],
    ),
    (
        "js: require and side-effect import removed",
        Some("a.cjs"),
        "const fs = require('fs');\nrequire(\"./setup\");\nimport 'polyfill';\n",
        "const fs = require('fs');\n",
        &["require('./setup')", "import 'polyfill'"],
    ),
    (
        "js: re-export removed",
        Some("index.ts"),
        "export { a } from './a';\nexport * from './b';\nexport const c = 1;\n",
        "export * from './b';\nexport const c = 1;\n",
        &["export { a } from './a'"],
    ),
    (
        "js: namespace import kept, type modifier moved",
        Some("a.ts"),
        "import * as path from 'path';\nimport type { T } from './t';\n",
        "import { type T } from './t';\nimport * as path from 'path';\n",
        &[],
    ),
    (
        "js: commented import does not count",
        Some("a.js"),
        "// import old from 'old';\nimport a from 'a';\n",
        "import a from 'a';\n",
        &[],
    ),
    (
        "js: added import is fine",
        Some("a.js"),
        "import a from 'a';\n",
        "import a from 'a';\nimport b from 'b';\n",
        &[],
    ),
    (
        "js: spread and dynamic import are not imports",
        Some("a.js"),
        "const x = { ...rest };\nconst m = await import('./lazy');\n",
        "const x = {};\n",
        &[],
    ),
    // ---- Python
    (
        "py: one name of a from-import removed",
        Some("a.py"),
        "from typing import List, Dict\nimport os\n",
        "from typing import List\nimport os\n",
        &["from typing import Dict"],
    ),
    (
        "py: parenthesized multi-line rewrapped",
        Some("a.py"),
        "from pkg.mod import (\n    alpha,\n    beta as b,  # comment\n)\n",
        "from pkg.mod import alpha, beta as b\n",
        &[],
    ),
    (
        "py: import list split and moved into a function",
        Some("a.py"),
        "import os, sys\n\ndef f():\n    pass\n",
        "def f():\n    import sys\n    import os\n",
        &[],
    ),
    (
        "py: alias changed is a rewrite, not a drop",
        Some("a.py"),
        "import numpy as np\n",
        "import numpy\n",
        &[],
    ),
    (
        "js: renamed module path is a rewrite, not a drop",
        Some("a.js"),
        "const a = require('@npmcli/arborist')\n",
        "const a = require('@npmcliValue/arborist')\n",
        &[],
    ),
    (
        "py: two gone, one rewritten: a net loss is still a drop",
        Some("a.py"),
        "import os\nimport sys\nimport re\n",
        "import os\nimport regex\n",
        &["import sys", "import re"],
    ),
    (
        "py: relative and star imports",
        Some("a.pyi"),
        "from . import sibling\nfrom ..parent import *\n",
        "from . import sibling\n",
        &["from ..parent import *"],
    ),
    (
        "py: backslash continuation",
        Some("a.py"),
        "from a import b, \\\n    c\n",
        "from a import c\nfrom a import b\n",
        &[],
    ),
    (
        "py: words 'import' in strings or prose do not count",
        Some("a.py"),
        "x = 'import os'\n# from a import b\n",
        "x = 1\n",
        &[],
    ),
    // ---- Rust
    (
        "rs: one path of a group removed",
        Some("src/lib.rs"),
        "use std::{fs, io::{self, Read}};\n",
        "use std::{fs, io};\n",
        &["use std::io::Read"],
    ),
    (
        "rs: group split into separate uses and made pub",
        Some("lib.rs"),
        "use std::collections::{HashMap, HashSet};\n",
        "pub(crate) use std::collections::HashSet;\nuse std::collections::HashMap;\n",
        &[],
    ),
    (
        "rs: multi-line use reformatted",
        Some("lib.rs"),
        "use crate::a::{\n    b,\n    c as d,\n};\n",
        "use crate::a::{b, c as d};\n",
        &[],
    ),
    (
        "rs: extern crate and mod declaration removed",
        Some("main.rs"),
        "extern crate serde;\nmod parser;\nmod inline { }\nfn main() {}\n",
        "fn main() {}\n",
        &["extern crate serde", "mod parser"],
    ),
    (
        "rs: a `use` inside a function body counts too",
        Some("main.rs"),
        "fn f() {\n    use std::fmt::Write;\n}\n",
        "fn f() {\n}\n",
        &["use std::fmt::Write"],
    ),
    // ---- Go
    (
        "go: one import of a block removed",
        Some("main.go"),
        "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n",
        "package main\n\nimport (\n\t\"fmt\"\n)\n",
        &["import \"os\""],
    ),
    (
        "go: single imports merged into a block",
        Some("main.go"),
        "package main\nimport \"fmt\"\nimport f \"flag\"\n",
        "package main\nimport (\n\tf \"flag\"\n\t\"fmt\" // printing\n)\n",
        &[],
    ),
    (
        "go: alias removed is a rewrite, not a drop",
        Some("main.go"),
        "package main\nimport (\n\t_ \"embed\"\n\tstr \"strings\"\n)\n",
        "package main\nimport (\n\t_ \"embed\"\n\t\"strings\"\n)\n",
        &[],
    ),
    // ---- Java / Kotlin
    (
        "java: import removed",
        Some("A.java"),
        "package a;\nimport java.util.List;\nimport java.util.Map;\nclass A {}\n",
        "package a;\nimport java.util.List;\nclass A {}\n",
        &["import java.util.Map"],
    ),
    (
        "java: static and wildcard reordered",
        Some("A.java"),
        "import static org.junit.Assert.*;\nimport java.io.*;\n",
        "import java.io.*;\n\nimport  static  org.junit.Assert.*;\n",
        &[],
    ),
    (
        "kotlin: alias removed",
        Some("A.kt"),
        "package a.b\nimport x.y.Z as W\nimport x.y.V\n",
        "package a.b\nimport x.y.V\n",
        &["import x.y.Z as W"],
    ),
    // ---- No path: detected from content
    (
        "detect rust",
        None,
        "use std::io;\nuse std::fs;\n",
        "use std::io;\n",
        &["use std::fs"],
    ),
    (
        "detect python",
        None,
        "import os\nfrom a import b\n",
        "import os\n",
        &["from a import b"],
    ),
    (
        "detect js",
        None,
        "import a from 'a';\nimport b from 'b';\n",
        "import a from 'a';\n",
        &["import b from 'b'"],
    ),
    (
        "detect go",
        None,
        "package main\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n",
        "package main\nimport \"fmt\"\n",
        &["import \"os\""],
    ),
    (
        "detect java",
        None,
        "import java.util.List;\nimport java.util.Map;\n",
        "import java.util.Map;\n",
        &["import java.util.List"],
    ),
    (
        "detect: python reformat is not read as java",
        None,
        "import os\nimport sys\nfrom a import b\n",
        "import os, sys\nfrom a import b\n",
        &[],
    ),
    ("no imports at all", None, "hello\nworld\n", "hello\n", &[]),
    // ---- Unknown extension: imports are not checked
    (
        "markdown is not parsed",
        Some("README.md"),
        "import os\n",
        "text\n",
        &[],
    ),
    (
        "extension-less script is detected",
        Some("bin/tool"),
        "import os\nimport sys\n",
        "import os\n",
        &["import sys"],
    ),
];

#[test]
fn dropped_imports_table() {
    for &(name, path, original, updated, want) in CASES {
        let got = dropped(original, updated, path);
        if want.is_empty() {
            assert!(got.is_none(), "{name}: unexpected violation: {got:?}");
        } else {
            let message = got.unwrap_or_else(|| panic!("{name}: no violation"));
            for item in want {
                assert!(
                    message.contains(item),
                    "{name}: {item:?} not named in {message}"
                );
            }
            let count = format!("drops {} import", want.len());
            assert!(
                message.contains(&count),
                "{name}: expected {count:?} in {message}"
            );
        }
    }
}

#[test]
fn a_long_list_of_dropped_imports_is_capped() {
    let original: String = (0..30).map(|i| format!("import m{i}\n")).collect();
    let message = dropped(&original, "x = 1\n", Some("a.py")).unwrap();
    assert!(message.contains("drops 30 imports"), "{message}");
    assert!(message.contains("and 18 more"), "{message}");
}
