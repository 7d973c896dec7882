//! Table-driven tests of re-indentation at the whitespace tier when the
//! model's indentation drift is not one uniform shift (issue 6):
//!
//! - (a) an `old` written fully unindented must not make the replacement
//!   lose the file's indentation;
//! - (b) a replacement body must not end up at the level of its braces;
//! - (c) a `new` already written at the file's indentation must not get the
//!   drift added a second time.
//!
//! Each case is checked in Python and a brace language, with spaces and
//! with tabs, plus the uniform cases these rules must leave alone.

use coderig::{apply_edit, Edit, Tier};

/// `(name, content, old, new, expected content)`; every case must apply at
/// the whitespace tier.
type Case = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

const CASES: &[Case] = &[
    // ---- (a) `old` fully unindented, `new` keeps its own structure.
    (
        "a/python/spaces: unindented old, structured new",
        "class Greeter:\n    def greet(self, name):\n        message = \"hi \" + name\n        return message\n",
        "def greet(self, name):\nmessage = \"hi \" + name\nreturn message",
        "def greet(self, name):\n    if not name:\n        name = \"world\"\n    message = \"hi \" + name\n    return message",
        "class Greeter:\n    def greet(self, name):\n        if not name:\n            name = \"world\"\n        message = \"hi \" + name\n        return message\n",
    ),
    (
        "a/python/tabs: unindented old, new in spaces",
        "class Greeter:\n\tdef greet(self, name):\n\t\tmessage = name\n\t\treturn message\n",
        "def greet(self, name):\nmessage = name\nreturn message",
        "def greet(self, name):\n    message = name.strip()\n    log(message)\n    return message",
        "class Greeter:\n\tdef greet(self, name):\n\t\tmessage = name.strip()\n\t\tlog(message)\n\t\treturn message\n",
    ),
    (
        "a/go/tabs: unindented old, new in spaces",
        "func main() {\n\tfor i := 0; i < 3; i++ {\n\t\tfmt.Println(i)\n\t}\n}\n",
        "for i := 0; i < 3; i++ {\nfmt.Println(i)\n}",
        "for i := 0; i < 3; i++ {\n    fmt.Println(i)\n    fmt.Println(i * 2)\n}",
        "func main() {\n\tfor i := 0; i < 3; i++ {\n\t\tfmt.Println(i)\n\t\tfmt.Println(i * 2)\n\t}\n}\n",
    ),
    (
        "a/js/spaces: unindented old, every line of new rewritten",
        "export function f(xs) {\n  for (const x of xs) {\n    total += x;\n  }\n  return total;\n}\n",
        "for (const x of xs) {\ntotal += x;\n}\nreturn total;",
        "while (xs.length) {\n  const next = xs.pop();\n  seen.add(next);\n}\nreturn seen.size;",
        "export function f(xs) {\n  while (xs.length) {\n    const next = xs.pop();\n    seen.add(next);\n  }\n  return seen.size;\n}\n",
    ),
    (
        "a/python/spaces: unindented old and new, lines paired with old keep the file's indentation",
        "def f():\n    if a:\n        b = 1\n    return b\n",
        "if a:\nb = 1\nreturn b",
        "if a:\nb = 2\nreturn b + 1",
        "def f():\n    if a:\n        b = 2\n    return b + 1\n",
    ),
    (
        "a/js/spaces: lines before the first line left as in old take its drift",
        "function split(entries) {\n  const [a, b] = entries.reduce((acc, s) => {\n    acc[s.ok ? 0 : 1].push(s)\n    return acc\n  }, [[], []])\n  return a\n}\n",
        "acc[s.ok ? 0 : 1].push(s)\nreturn acc\n}, [[], []])",
        "  acc[s.ok ? 1 : 0].push(s)\n  return acc\n}, [[], []])",
        "function split(entries) {\n  const [a, b] = entries.reduce((acc, s) => {\n    acc[s.ok ? 1 : 0].push(s)\n    return acc\n  }, [[], []])\n  return a\n}\n",
    ),
    // ---- (b) a body must not land at the level of its braces.
    (
        "b/js/spaces: body indented relative to its braces",
        "function f(a) {\n  if (a) {\n    run(a);\n  }\n}\n",
        "if (a) {\nrun(a);\n}",
        "if (a) {\n  run(a);\n  log(a);\n}",
        "function f(a) {\n  if (a) {\n    run(a);\n    log(a);\n  }\n}\n",
    ),
    (
        "b/rust/tabs: body indented relative to its braces",
        "impl A {\n\tfn f(&self) {\n\t\tself.g();\n\t}\n}\n",
        "fn f(&self) {\nself.g();\n}",
        "fn f(&self) {\n\tself.g();\n\tself.h();\n}",
        "impl A {\n\tfn f(&self) {\n\t\tself.g();\n\t\tself.h();\n\t}\n}\n",
    ),
    (
        "b/c/spaces: braces and body of old all at one level",
        "int main() {\n    if (x) {\n        y();\n    }\n}\n",
        "    if (x) {\n    y();\n    }",
        "    if (x) {\n        y();\n        z();\n    }",
        "int main() {\n    if (x) {\n        y();\n        z();\n    }\n}\n",
    ),
    (
        "b/python/spaces: nested block under an unindented old",
        "def f():\n    for x in xs:\n        use(x)\n",
        "for x in xs:\nuse(x)",
        "for x in xs:\n    if x:\n        use(x)",
        "def f():\n    for x in xs:\n        if x:\n            use(x)\n",
    ),
    // ---- (c) `new` already at the file's indentation: no second shift.
    (
        "c/python/spaces: uniform drift, new at the file's indentation",
        "def main():\n    for x in items:\n        print(x)\n    return 0\n",
        "for x in items:\n    print(x)",
        "    for x in items:\n        print(x)\n        total += x",
        "def main():\n    for x in items:\n        print(x)\n        total += x\n    return 0\n",
    ),
    (
        "c/python/spaces: one line, new at the file's indentation",
        "def f():\n    x = compute(1)\n    return x\n",
        "x = compute(1) ",
        "    x = compute(2)",
        "def f():\n    x = compute(2)\n    return x\n",
    ),
    (
        "c/go/tabs: uniform drift, new at the file's indentation",
        "func f() int {\n\tif ok {\n\t\treturn 1\n\t}\n\treturn 0\n}\n",
        "if ok {\n\treturn 1\n}",
        "\tif ok {\n\t\treturn 2\n\t}",
        "func f() int {\n\tif ok {\n\t\treturn 2\n\t}\n\treturn 0\n}\n",
    ),
    (
        "c/go/tabs: unindented old, new at the file's indentation",
        "func f() int {\n\tif ok {\n\t\treturn 1\n\t}\n\treturn 0\n}\n",
        "if ok {\nreturn 1\n}",
        "\tif ok {\n\t\tlog()\n\t\treturn 2\n\t}",
        "func f() int {\n\tif ok {\n\t\tlog()\n\t\treturn 2\n\t}\n\treturn 0\n}\n",
    ),
    (
        "c/js/spaces: deeper needle, new at the file's indentation with a new line",
        "class A {\n  m() {\n    a();\n    b();\n  }\n}\n",
        "      a();\n      b();",
        "    a();\n    c();\n    b();",
        "class A {\n  m() {\n    a();\n    c();\n    b();\n  }\n}\n",
    ),
    (
        "c/python/spaces: region indented at 8 and 16 only, new adds a line at 12",
        "def f(a):\n    if a:\n        if b:\n            if c:\n                x = 1\n                y = 2\n        if hook:\n            run()\n",
        "x = 1\ny = 2\nif hook:",
        "                x = 1\n                y = 3\n        if hook:\n            log()",
        "def f(a):\n    if a:\n        if b:\n            if c:\n                x = 1\n                y = 3\n        if hook:\n            log()\n            run()\n",
    ),
    // ---- the drift changes inside the block: each part keeps its own.
    (
        "mixed/python/spaces: drift changes half-way through old",
        "def f():\n    if a:\n        b()\n    if c:\n        d()\n",
        "    if a:\n        b()\nif c:\n    d()",
        "    if a:\n        b()\nif c:\n    d()\n    e()",
        "def f():\n    if a:\n        b()\n    if c:\n        d()\n        e()\n",
    ),
    // ---- uniform drift with `new` in the model's coordinates: unchanged rules.
    (
        "uniform/python/spaces: needle at +4, new in the needle's indentation",
        "def f():\n    if a:\n        b()\n",
        "        if a:\n            b()",
        "        if a:\n            b()\n        c()",
        "def f():\n    if a:\n        b()\n    c()\n",
    ),
    (
        "uniform/python/spaces: 2-space needle whose nesting looks like the file's unit",
        "def f():\n    x = 1\n",
        "def f():\n  x = 1",
        "def f():\n  if y:\n    x = 1",
        "def f():\n    if y:\n        x = 1\n",
    ),
    (
        "uniform/js/tabs: file in tabs, needle in spaces, deeper new",
        "fn f() {\n\tif a {\n\t\tb();\n\t}\n}\n",
        "    if a {\n        b();\n    }",
        "    if a {\n        if c {\n            b();\n        }\n    }",
        "fn f() {\n\tif a {\n\t\tif c {\n\t\t\tb();\n\t\t}\n\t}\n}\n",
    ),
];

#[test]
fn reindents_when_the_drift_is_not_uniform() {
    let mut failures = Vec::new();
    for (name, content, old, new, want) in CASES {
        let edit = Edit {
            old: (*old).into(),
            new: (*new).into(),
            replace_all: false,
        };
        match apply_edit(content, &edit) {
            Ok(r) if r.content == *want && r.tier == Tier::Whitespace => {}
            Ok(r) => failures.push(format!(
                "{name}: tier {:?}\n--- got\n{}--- want\n{want}",
                r.tier, r.content
            )),
            Err(e) => failures.push(format!("{name}: refused: {e}")),
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}
