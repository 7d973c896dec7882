//! Dropped-imports guard: per language, moved/re-ordered/reformatted imports
//! pass; a removed import is a drop only while its name is still used (or
//! when it binds no name that could be checked), and then it is named.

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
        "js: unused default import removed is not a drop",
        Some("a.ts"),
        "import React from 'react';\nimport { useState } from 'react';\nexport const x = 1;\n",
        "import { useState } from 'react';\nexport const x = 1;\n",
        &[],
    ),
    (
        "js: default import removed while still used",
        Some("a.tsx"),
        "import React from 'react';\nimport { useState } from 'react';\nexport const x = React.createElement('div');\n",
        "import { useState } from 'react';\nexport const x = React.createElement('div');\n",
        &["import React from 'react'"],
    ),
    (
        "js: unused name removed from braces is not a drop",
        Some("a.js"),
        "import { a, b, c } from './m';\nuse(a, b, c);\n",
        "import { a, c } from './m';\nuse(a, c);\n",
        &[],
    ),
    (
        "js: name removed from braces while still used",
        Some("a.js"),
        "import { a, b as bee, c } from './m';\nuse(a, bee, c);\n",
        "import { a, c } from './m';\nuse(a, bee, c);\n",
        &["import { b as bee } from './m'"],
    ),
    (
        "js: namespace import removed while still used",
        Some("a.mjs"),
        "import * as path from 'path';\nexport const p = path.join('a', 'b');\n",
        "export const p = path.join('a', 'b');\n",
        &["import * as path from 'path'"],
    ),
    (
        "js: a name inside a longer identifier is not a use",
        Some("a.js"),
        "import fs from 'fs';\nconst fsPath = 1;\n",
        "const fsPath = 1;\n",
        &[],
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
        "js: bare require and side-effect import removed (no name to check)",
        Some("a.cjs"),
        "const fs = require('fs');\nrequire(\"./setup\");\nimport 'polyfill';\n",
        "const fs = require('fs');\n",
        &["require('./setup')", "import 'polyfill'"],
    ),
    (
        "js: side-effect import renamed one for one is a rewrite",
        Some("a.js"),
        "import './theme.css';\nimport a from 'a';\na();\n",
        "import './theme-dark.css';\nimport a from 'a';\na();\n",
        &[],
    ),
    (
        "js: unused require declaration removed is not a drop",
        Some("a.cjs"),
        "const fs = require('fs');\nconst path = require('path');\nmodule.exports = path.sep;\n",
        "const path = require('path');\nmodule.exports = path.sep;\n",
        &[],
    ),
    (
        "js: destructured require removed while a renamed binding is used",
        Some("a.cjs"),
        "const { readFile, writeFile: write } = require('fs');\nwrite('x', '');\n",
        "write('x', '');\n",
        &["require('fs')"],
    ),
    (
        "js: re-export removed (its users are other files)",
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
    (
        "js: truncated header, the code below still uses it",
        Some("app.ts"),
        "import express from 'express';\nimport { Router, json } from 'express';\nimport cors from 'cors';\n\nconst app = express();\napp.use(cors(), json());\nexport const r = Router();\n",
        "\nconst app = express();\napp.use(cors(), json());\nexport const r = Router();\n",
        &[
            "import express from 'express'",
            "import { Router } from 'express'",
            "import { json } from 'express'",
            "import cors from 'cors'",
        ],
    ),
    // ---- Python
    (
        "py: unused name of a from-import removed is not a drop",
        Some("a.py"),
        "from typing import List, Dict\nimport os\n",
        "from typing import List\nimport os\n",
        &[],
    ),
    (
        "py: name of a from-import removed while still used",
        Some("a.py"),
        "from typing import List, Dict as D\nimport os\n\nx: D[str, List[int]] = {}\n",
        "from typing import List\nimport os\n\nx: D[str, List[int]] = {}\n",
        &["from typing import Dict as D"],
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
        "py: alias changed, nothing uses it: not a drop",
        Some("a.py"),
        "import numpy as np\n",
        "import numpy\n",
        &[],
    ),
    (
        "py: alias removed while the alias is still used",
        Some("a.py"),
        "import numpy as np\nimport os\n\nx = np.zeros(3)\n",
        "import os\n\nx = np.zeros(3)\n",
        &["import numpy as np"],
    ),
    (
        "py: an import rewritten one for one is deliberate, even if the old name is still used",
        Some("a.py"),
        "def f():\n    from io import StringIO, BytesIO\n    return StringIO(), BytesIO()\n",
        "def f():\n    from io import StringIO_tmp, BytesIO\n    return StringIO(), BytesIO()\n",
        &[],
    ),
    (
        "py: dotted import binds its first name",
        Some("a.py"),
        "import xml.etree.ElementTree\n\ntree = xml.etree.ElementTree.parse('f')\n",
        "tree = xml.etree.ElementTree.parse('f')\n",
        &["import xml.etree.ElementTree"],
    ),
    (
        "py: dotted import removed while another import still binds the name",
        Some("a.py"),
        "import os\nimport os.path\n\nprint(os.path.join(os.getcwd(), 'x'))\n",
        "import os\n\nprint(os.path.join(os.getcwd(), 'x'))\n",
        &[],
    ),
    (
        "py: from-imports rewritten into a star import are not a drop",
        Some("a.py"),
        "from tkinter import Tk, Label\n\nroot = Tk()\nLabel(root)\n",
        "from tkinter import *\n\nroot = Tk()\nLabel(root)\n",
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
        "py: renamed module still binding the used name is a rewrite",
        Some("a.py"),
        "import simplejson as json\n\njson.dumps(1)\n",
        "import json\n\njson.dumps(1)\n",
        &[],
    ),
    (
        "py: two gone, one rewritten, none used any more: not a drop",
        Some("a.py"),
        "import os\nimport sys\nimport re\n",
        "import os\nimport regex\n",
        &[],
    ),
    (
        "py: two gone, one rewritten, both still used: a drop",
        Some("a.py"),
        "import os\nimport sys\nimport re\n\nprint(sys.argv, re.sub)\n",
        "import os\nimport regex\n\nprint(sys.argv, re.sub)\n",
        &["import sys", "import re"],
    ),
    (
        "py: a name mentioned only in a comment still counts as used",
        Some("a.py"),
        "import json\n\n# json.dumps was slow here\nx = 1\n",
        "# json.dumps was slow here\nx = 1\n",
        &["import json"],
    ),
    (
        "py: relative import kept, star import removed (no name to check)",
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
    (
        "py: truncated header, the code below still uses it",
        Some("tool.py"),
        "import os\nimport sys\nfrom pathlib import Path\nfrom typing import Optional\n\n\ndef main(arg: Optional[str]) -> None:\n    print(Path(os.getcwd()), sys.argv, arg)\n",
        "from typing import Optional\n\n\ndef main(arg: Optional[str]) -> None:\n    print(Path(os.getcwd()), sys.argv, arg)\n",
        &["import os", "import sys", "from pathlib import Path"],
    ),
    // ---- Rust
    (
        "rs: unused path of a group removed is not a drop",
        Some("src/lib.rs"),
        "use std::{fs, io::{self, Read}};\n",
        "use std::{fs, io};\n",
        &[],
    ),
    (
        "rs: path of a group removed while still used",
        Some("src/lib.rs"),
        "use std::{fs, io::{self, Read}};\nfn f(r: impl Read) {}\n",
        "use std::{fs, io};\nfn f(r: impl Read) {}\n",
        &["use std::io::Read"],
    ),
    (
        "rs: `self` in a group binds the module",
        Some("src/lib.rs"),
        "use std::io::{self};\nuse std::fs;\nfn f() -> io::Result<()> { Ok(()) }\n",
        "use std::fs;\nfn f() -> io::Result<()> { Ok(()) }\n",
        &["use std::io"],
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
        "rs: unused extern crate removed is fine, a mod declaration is not",
        Some("main.rs"),
        "extern crate serde;\nmod parser;\nmod inline { }\nfn main() {}\n",
        "fn main() {}\n",
        &["mod parser"],
    ),
    (
        "rs: extern crate alias removed while still used",
        Some("main.rs"),
        "extern crate serde_json as json;\nfn main() { json::to_string(&1).unwrap(); }\n",
        "fn main() { json::to_string(&1).unwrap(); }\n",
        &["extern crate serde_json as json"],
    ),
    (
        "rs: glob and pub re-export removed (no name to check)",
        Some("lib.rs"),
        "use std::io::prelude::*;\npub use crate::error::Error;\nfn f() {}\n",
        "fn f() {}\n",
        &["use std::io::prelude::*", "use crate::error::Error"],
    ),
    (
        "rs: named uses rewritten into a glob of the same module are not a drop",
        Some("lib.rs"),
        "use std::collections::{HashMap, BTreeMap};\nfn f(a: HashMap<u8, u8>, b: BTreeMap<u8, u8>) {}\n",
        "use std::collections::*;\nfn f(a: HashMap<u8, u8>, b: BTreeMap<u8, u8>) {}\n",
        &[],
    ),
    (
        "rs: unused `use` inside a function body removed is not a drop",
        Some("main.rs"),
        "fn f() {\n    use std::fmt::Write;\n}\n",
        "fn f() {\n}\n",
        &[],
    ),
    (
        "rs: a `use` inside a function body, still used",
        Some("main.rs"),
        "fn f(s: &mut String) {\n    use std::fmt::Write;\n    let w: &mut dyn Write = s;\n}\n",
        "fn f(s: &mut String) {\n    let w: &mut dyn Write = s;\n}\n",
        &["use std::fmt::Write"],
    ),
    (
        "rs: limitation: a trait used only through its methods is not seen as used",
        Some("main.rs"),
        "use std::io::Write;\nfn f(o: &mut std::io::Stdout) { o.flush().unwrap(); }\n",
        "fn f(o: &mut std::io::Stdout) { o.flush().unwrap(); }\n",
        &[],
    ),
    (
        "rs: truncated header, the code below still uses it",
        Some("src/main.rs"),
        "use std::collections::HashMap;\nuse std::fs;\nuse std::path::{Path, PathBuf};\n\nfn main() {\n    let m: HashMap<PathBuf, String> = HashMap::new();\n    let _ = fs::read(Path::new(\"x\"));\n}\n",
        "\nfn main() {\n    let m: HashMap<PathBuf, String> = HashMap::new();\n    let _ = fs::read(Path::new(\"x\"));\n}\n",
        &[
            "use std::collections::HashMap",
            "use std::fs",
            "use std::path::Path",
            "use std::path::PathBuf",
        ],
    ),
    // ---- Go
    (
        "go: unused import of a block removed is not a drop",
        Some("main.go"),
        "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n",
        "package main\n\nimport (\n\t\"fmt\"\n)\n",
        &[],
    ),
    (
        "go: import of a block removed while still used",
        Some("main.go"),
        "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() { fmt.Println(); os.Exit(1) }\n",
        "package main\n\nimport (\n\t\"fmt\"\n)\n\nfunc main() { fmt.Println(); os.Exit(1) }\n",
        &["import \"os\""],
    ),
    (
        "go: the package name is the path's last element, before a version",
        Some("main.go"),
        "package main\n\nimport (\n\t\"encoding/json\"\n\t\"gopkg.in/yaml.v3\"\n\t\"github.com/go-chi/chi/v5\"\n)\n\nvar a, b, c = json.Marshal, yaml.Marshal, chi.NewRouter\n",
        "package main\n\nvar a, b, c = json.Marshal, yaml.Marshal, chi.NewRouter\n",
        &[
            "import \"encoding/json\"",
            "import \"gopkg.in/yaml.v3\"",
            "import \"github.com/go-chi/chi/v5\"",
        ],
    ),
    (
        "go: the path's own segments in another import are not a use",
        Some("main.go"),
        "package main\n\nimport (\n\t\"encoding/json\"\n\tjsoniter \"github.com/json-iterator/go\"\n)\n\nvar m = jsoniter.Marshal\n",
        "package main\n\nimport (\n\tjsoniter \"github.com/json-iterator/go\"\n)\n\nvar m = jsoniter.Marshal\n",
        &[],
    ),
    (
        "go: aliased import removed while the alias is used",
        Some("main.go"),
        "package main\nimport (\n\tf \"flag\"\n\t\"fmt\"\n)\nvar v = f.Bool(\"v\", false, \"\")\n",
        "package main\nimport (\n\t\"fmt\"\n)\nvar v = f.Bool(\"v\", false, \"\")\n",
        &["import f \"flag\""],
    ),
    (
        "go: blank and dot imports removed (no name to check)",
        Some("main.go"),
        "package main\nimport (\n\t_ \"embed\"\n\t. \"strings\"\n\t\"os\"\n)\nvar x = os.Args\n",
        "package main\nimport (\n\t\"os\"\n)\nvar x = os.Args\n",
        &["import _ \"embed\"", "import . \"strings\""],
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
    (
        "go: truncated header, the code below still uses it",
        Some("main.go"),
        "package main\n\nimport (\n\t\"fmt\"\n\t\"net/http\"\n\t\"os\"\n)\n\nfunc main() {\n\tfmt.Println(http.ListenAndServe(os.Args[1], nil))\n}\n",
        "package main\n\nfunc main() {\n\tfmt.Println(http.ListenAndServe(os.Args[1], nil))\n}\n",
        &["import \"fmt\"", "import \"net/http\"", "import \"os\""],
    ),
    // ---- Java / Kotlin
    (
        "java: unused import removed is not a drop",
        Some("A.java"),
        "package a;\nimport java.util.List;\nimport java.util.Map;\nclass A {}\n",
        "package a;\nimport java.util.List;\nclass A {}\n",
        &[],
    ),
    (
        "java: import removed while still used",
        Some("A.java"),
        "package a;\nimport java.util.List;\nimport java.util.Map;\nclass A { Map<String, List<String>> m; }\n",
        "package a;\nimport java.util.List;\nclass A { Map<String, List<String>> m; }\n",
        &["import java.util.Map"],
    ),
    (
        "java: static import removed while still used",
        Some("ATest.java"),
        "import static org.junit.Assert.assertEquals;\nclass ATest { void t() { assertEquals(1, 1); } }\n",
        "class ATest { void t() { assertEquals(1, 1); } }\n",
        &["import static org.junit.Assert.assertEquals"],
    ),
    (
        "java: wildcard import removed (no name to check)",
        Some("A.java"),
        "import java.io.*;\nimport java.util.List;\nclass A { List<File> f; }\n",
        "import java.util.List;\nclass A { List<File> f; }\n",
        &["import java.io.*"],
    ),
    (
        "java: imports collapsed into a wildcard of the same package are not a drop",
        Some("A.java"),
        "import java.util.List;\nimport java.util.Map;\nclass A { Map<String, List<String>> m; }\n",
        "import java.util.*;\nclass A { Map<String, List<String>> m; }\n",
        &[],
    ),
    (
        "java: static and wildcard reordered",
        Some("A.java"),
        "import static org.junit.Assert.*;\nimport java.io.*;\n",
        "import java.io.*;\n\nimport  static  org.junit.Assert.*;\n",
        &[],
    ),
    (
        "kotlin: unused alias removed is not a drop",
        Some("A.kt"),
        "package a.b\nimport x.y.Z as W\nimport x.y.V\n",
        "package a.b\nimport x.y.V\n",
        &[],
    ),
    (
        "kotlin: alias removed while still used",
        Some("A.kt"),
        "package a.b\nimport x.y.Z as W\nimport x.y.V\nval w = W(V())\n",
        "package a.b\nimport x.y.V\nval w = W(V())\n",
        &["import x.y.Z as W"],
    ),
    (
        "java: truncated header, the code below still uses it",
        Some("Main.java"),
        "package a;\n\nimport java.util.ArrayList;\nimport java.util.List;\n\nclass Main {\n  List<String> xs = new ArrayList<>();\n}\n",
        "package a;\n\nclass Main {\n  List<String> xs = new ArrayList<>();\n}\n",
        &["import java.util.ArrayList", "import java.util.List"],
    ),
    // ---- No path: detected from content
    (
        "detect rust",
        None,
        "use std::io;\nuse std::fs;\nfn f() { fs::remove_file(\"x\").ok(); }\n",
        "use std::io;\nfn f() { fs::remove_file(\"x\").ok(); }\n",
        &["use std::fs"],
    ),
    (
        "detect python",
        None,
        "import os\nfrom a import b\nb()\n",
        "import os\nb()\n",
        &["from a import b"],
    ),
    (
        "detect js",
        None,
        "import a from 'a';\nimport b from 'b';\nb();\n",
        "import a from 'a';\nb();\n",
        &["import b from 'b'"],
    ),
    (
        "detect go",
        None,
        "package main\nimport (\n\t\"fmt\"\n\t\"os\"\n)\nvar x = os.Args\n",
        "package main\nimport \"fmt\"\nvar x = os.Args\n",
        &["import \"os\""],
    ),
    (
        "detect java",
        None,
        "import java.util.List;\nimport java.util.Map;\nclass A { List<Map<String, String>> x; }\n",
        "import java.util.Map;\nclass A { List<Map<String, String>> x; }\n",
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
        "import os\nimport sys\nsys.exit(0)\n",
        "import os\nsys.exit(0)\n",
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
    let uses: String = (0..30).map(|i| format!("m{i}.run()\n")).collect();
    let original: String = (0..30)
        .map(|i| format!("import m{i}\n"))
        .collect::<String>()
        + &uses;
    let message = dropped(&original, &uses, Some("a.py")).unwrap();
    assert!(message.contains("drops 30 imports"), "{message}");
    assert!(message.contains("and 18 more"), "{message}");
}

#[test]
fn the_message_says_which_name_is_still_used_and_what_to_do() {
    let message = dropped(
        "import os\nimport sys\nprint(sys.argv)\n",
        "import os\nprint(sys.argv)\n",
        Some("a.py"),
    )
    .unwrap();
    assert!(
        message.contains("`import sys` (sys is still used)"),
        "{message}"
    );
    assert!(
        message.contains("Keep these import statements"),
        "{message}"
    );
    assert!(!message.contains("import os"), "{message}");
}

#[test]
fn removing_every_unused_import_is_not_a_drop() {
    let cases = [
        ("a.py", "import os\nimport sys\n\nx = 1\n", "\nx = 1\n"),
        (
            "a.ts",
            "import a from 'a';\nimport { b } from 'b';\nlet x = 1;\n",
            "let x = 1;\n",
        ),
        (
            "lib.rs",
            "use std::io;\nuse std::fs::File;\nfn f() {}\n",
            "fn f() {}\n",
        ),
        (
            "m.go",
            "package m\nimport (\n\t\"fmt\"\n\t\"os\"\n)\nvar x = 1\n",
            "package m\nvar x = 1\n",
        ),
        (
            "A.java",
            "import java.util.List;\nclass A {}\n",
            "class A {}\n",
        ),
    ];
    for (path, original, updated) in cases {
        assert_eq!(dropped(original, updated, Some(path)), None, "{path}");
    }
}
