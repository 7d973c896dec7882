import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createRequire } from 'node:module'
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

import { throwsCode as throwsCore } from './helpers.mjs'

const coderig = createRequire(import.meta.url)('../index.js')

/** Asserts that `fn` throws the core's Error with `code` and the given own properties. */
function throwsCode(fn, code, props = {}, message) {
  throwsCore(fn, code, { props, message })
}

// Astral characters (two UTF-16 units each, four UTF-8 bytes) before the
// match make UTF-16 offsets differ from byte and code-point offsets.
const EMOJI = '// 😀🎉 emoji ✓\n'

// ---------------------------------------------------------------- locate

/** `[name, content, needle, kind, matched text (content.slice(start, end))]` */
const FOUND = [
  ['exact, after astral chars on earlier lines', EMOJI + 'let x = 1;\nlet y = 2;\n', 'let y = 2;', 'exact', 'let y = 2;'],
  ['exact, after astral chars on the same line', 'const a = "😀"; const b = 1;\n', 'const b = 1;', 'exact', 'const b = 1;'],
  ['exact, after a lone surrogate (read as U+FFFD, still one unit)', '\uD800 x = 1\n', 'x = 1', 'exact', 'x = 1'],
  ['exact, needle with astral chars', 'x\nsay("🎉 done 😀")\n', 'say("🎉 done 😀")', 'exact', 'say("🎉 done 😀")'],
  [
    'whitespace: indentation drift',
    EMOJI + 'function f() {\n    return 1;\n}\n',
    'function f() {\n  return 1;\n}',
    'whitespace',
    'function f() {\n    return 1;\n}',
  ],
  ['whitespace: collapsed runs', EMOJI + '  let   y = 2;\n', 'let y = 2;', 'whitespace', '  let   y = 2;'],
  ['unicode: smart quotes folded', EMOJI + 'msg = ‘hi’\nx = 1\n', "msg = 'hi'", 'unicode', 'msg = ‘hi’'],
  [
    'fuzzy: a typo',
    EMOJI + 'def f(a):\n    total = compute_total(a, b)\n    check(total)\n    return total\n',
    'def f(a):\n    total = compute_totl(a, b)\n    check(total)\n    return total',
    'fuzzy',
    'def f(a):\n    total = compute_total(a, b)\n    check(total)\n    return total',
  ],
]

for (const [name, content, needle, kind, matched] of FOUND) {
  test(`locate ${name}`, () => {
    const m = coderig.locate(content, needle)
    assert.equal(m.kind, kind)
    assert.equal(m.count, 1)
    assert.deepEqual(m.candidates, [])
    assert.equal(m.nearest, null)
    assert.equal(content.slice(m.start, m.end), matched)
    assert.equal(m.start, content.indexOf(matched))
    if (kind === 'fuzzy') assert.ok(m.score >= 0.85 && m.score < 1, String(m.score))
    else assert.equal(m.score, 1)
  })
}

test('locate: two locations at a tier are ambiguous, with their line ranges', () => {
  for (const [content, needle, candidates] of [
    [EMOJI + 'x = 1\ny\nx = 1\n', 'x = 1', [[2, 2], [4, 4]]],
    ['if a:\n    go()\nif a:\n  go()\n', 'if a:\ngo()', [[1, 2], [3, 4]]],
  ]) {
    assert.deepEqual(coderig.locate(content, needle), {
      kind: 'ambiguous',
      start: null,
      end: null,
      score: null,
      count: candidates.length,
      candidates,
      nearest: null,
    })
  }
})

test('locate: not found carries the nearest window, or null', () => {
  const m = coderig.locate('function foo() {\n  return 1;\n}\n', 'function bar() {\n  retrun 2;\n}')
  assert.equal(m.kind, 'not_found')
  assert.deepEqual([m.start, m.end, m.score, m.count, m.candidates], [null, null, null, 0, []])
  assert.deepEqual([m.nearest.firstLine, m.nearest.lastLine], [1, 3])
  assert.ok(m.nearest.score > 0.5 && m.nearest.score < 0.85, String(m.nearest.score))
  for (const [content, needle] of [['alpha\nbeta\n', 'gamma']]) {
    assert.deepEqual(coderig.locate(content, needle), {
      kind: 'not_found',
      start: null,
      end: null,
      score: null,
      count: 0,
      candidates: [],
      nearest: null,
    })
  }
})

test('locate: an empty needle is INVALID_INPUT, as in applyEdit and every face', () => {
  throwsCore(() => coderig.locate('abc', ''), 'INVALID_INPUT', {
    message: '`needle` is empty, so there is nothing to find. Send the text to find: one or more complete lines copied from the file.',
  })
})

// ------------------------------------------------------------ applyEdit

/** `[name, content, old, new, options, expected content, tier, replacements]` */
const APPLIES = [
  ['exact after emoji', EMOJI + 'a = 1\n', 'a = 1', 'a = "😀"', {}, EMOJI + 'a = "😀"\n', 'exact', 1],
  ['$ is literal', 'let a = x;\n', 'x', "$1 + $$ + $& + $' + ${0}", {}, "let a = $1 + $$ + $& + $' + ${0};\n", 'exact', 1],
  ['CRLF kept, LF new converted', 'a\r\nb\r\nc\r\n', 'a\nb', 'a\nB\nb2', {}, 'a\r\nB\r\nb2\r\nc\r\n', 'exact', 1],
  ['LF file stays LF with a CRLF new', 'a\nb\n', 'a', 'x\r\ny', {}, 'x\ny\nb\n', 'exact', 1],
  ['BOM and missing final newline kept', '\uFEFFone\ntwo', 'two', '2', {}, '\uFEFFone\n2', 'exact', 1],
  ['BOM kept on a whitespace match', '\uFEFF  one\ntwo\n', 'one ', 'uno', {}, '\uFEFF  uno\ntwo\n', 'whitespace', 1],
  [
    're-indent by the indentation delta',
    'def f():\n    if a:\n        b()\n',
    '        if a:\n            b()',
    '        if a:\n            b()\n            c()',
    {},
    'def f():\n    if a:\n        b()\n        c()\n',
    'whitespace',
    1,
  ],
  [
    'CRLF kept on a whitespace match',
    'if x:\r\n    y()\r\nz\r\n',
    'if x:\n  y()',
    'if x:\n  y(1)\n  w()',
    {},
    'if x:\r\n    y(1)\r\n    w()\r\nz\r\n',
    'whitespace',
    1,
  ],
  [
    "unicode: the file's curly quotes stay curly",
    'msg = ‘hi’\nx = 1\n',
    "msg = 'hi'\nx = 1",
    "msg = 'hi there'\nx = 1",
    {},
    'msg = ‘hi there’\nx = 1\n',
    'unicode',
    1,
  ],
  [
    "fuzzy: the file's text wins over the typo",
    'def f(a):\n    total = compute_total(a, b)\n    check(total)\n    return total\n',
    'def f(a):\n    total = compute_totl(a, b)\n    check(total)\n    return total',
    'def f(a):\n    total = compute_totl(a, b)\n    check(total, strict=True)\n    return total',
    {},
    'def f(a):\n    total = compute_total(a, b)\n    check(total, strict=True)\n    return total\n',
    'fuzzy',
    1,
  ],
  ['replaceAll replaces every occurrence', EMOJI + 'x = 1\ny\nx = 1\n', 'x = 1', 'x = 2', { replaceAll: true }, EMOJI + 'x = 2\ny\nx = 2\n', 'exact', 2],
  ['replaceAll with one occurrence', 'x = 1\n', 'x = 1', 'x = 2', { replaceAll: true }, 'x = 2\n', 'exact', 1],
  ['guards: false lets a marker through', 'a()\nb()\n', 'b()', '// ... existing code ...', { guards: false }, 'a()\n// ... existing code ...\n', 'exact', 1],
  ['options may be undefined', 'a\n', 'a', 'b', undefined, 'b\n', 'exact', 1],
]

for (const [name, content, old, newText, options, expected, tier, replacements] of APPLIES) {
  test(`applyEdit: ${name}`, () => {
    assert.deepEqual(coderig.applyEdit(content, old, newText, options), { content: expected, tier, replacements })
  })
}

/** `[name, content, old, new, options, code, error properties, message pattern]` */
const REFUSALS = [
  ['empty old', 'abc\n', '', 'x', {}, 'INVALID_INPUT', {}, /empty/],
  ['ambiguous', EMOJI + 'x = 1\ny\nx = 1\n', 'x = 1', 'x = 2', {}, 'AMBIGUOUS', { count: 2, lines: [[2, 2], [4, 4]] }, /replace_all/],
  ['not found, nothing near', 'alpha\nbeta\n', 'gamma', 'x', {}, 'NOT_FOUND', { nearest: null }, /Re-read the file/],
  ['no-op', 'a = 1\n', 'a = 1', 'a = 1', {}, 'NO_OP', {}, undefined],
  ['no-op at the whitespace tier', '    a = 1\n', 'a = 1', 'a = 1', {}, 'NO_OP', {}, undefined],
  [
    'guard: leaked placeholder marker',
    'function f() {\n  one();\n  two();\n}\n',
    '  one();\n  two();',
    '  // ... existing code ...\n  three();',
    {},
    'GUARD',
    {},
    undefined,
  ],
]

for (const [name, content, old, newText, options, code, props, message] of REFUSALS) {
  test(`applyEdit refuses: ${name}`, () => {
    throwsCode(() => coderig.applyEdit(content, old, newText, options), code, props, message)
  })
}

test('applyEdit refuses not found with the nearest window', () => {
  assert.throws(
    () => coderig.applyEdit('function foo() {\n  return 1;\n}\n', 'function bar() {\n  retrun 2;\n}', 'x'),
    (error) => {
      assert.deepEqual([error.code, error.kind], ['NOT_FOUND', 'not_found'])
      assert.deepEqual([error.nearest.firstLine, error.nearest.lastLine], [1, 3])
      assert.ok(error.nearest.score > 0.5 && error.nearest.score < 0.85, String(error.nearest.score))
      assert.match(error.message, /lines 1–3/)
      return true
    },
  )
})

test('applyEdit guard errors list the violations; the path picks the import syntax', () => {
  const content = "import os\nimport sys\n\nprint(os.name, sys.argv)\n"
  const run = (path) => coderig.applyEdit(content, 'import os\nimport sys\n', 'import os\n', { path })
  assert.throws(
    () => run('tool.py'),
    (error) => {
      assert.equal(error.code, 'GUARD')
      assert.deepEqual(
        error.violations.map((v) => v.kind),
        ['dropped_imports'],
      )
      assert.match(error.violations[0].message, /sys/)
      return true
    },
  )
})

/**
 * Wrong JS types are decoded by the core as the fields of the HTTP request
 * body (`POST /api/edit`, `/api/locate`): the same message, path first.
 * `[name, call, message, details]`
 */
const WRONG_TYPES = [
  ['applyEdit old', () => coderig.applyEdit('a', 1, 'b'), '`old`: invalid type: integer `1`, expected a string', { path: 'old' }],
  ['applyEdit content', () => coderig.applyEdit(null, 'a', 'b'), '`content`: invalid type: null, expected a string', { path: 'content' }],
  ['applyEdit content missing', () => coderig.applyEdit(undefined, 'a', 'b'), 'missing field `content`', {}],
  ['applyEdit new missing', () => coderig.applyEdit('a', 'a'), '`old` and `new` go together: send both (an empty `new` deletes)', {}],
  ['applyEdit option', () => coderig.applyEdit('a\n', 'a', 'b', { guards: 'no' }), '`guards`: invalid type: string "no", expected a boolean', { path: 'guards' }],
  ['applyEdit replaceAll option', () => coderig.applyEdit('a\n', 'a', 'b', { replaceAll: 1 }), '`replace_all`: invalid type: integer `1`, expected a boolean', { path: 'replace_all' }],
  ['applyEdit unknown option', () => coderig.applyEdit('a\n', 'a', 'b', { gaurds: false }), '`gaurds`: unknown field `gaurds`, expected one of `content`, `old`, `new`, `replace_all`, `edits`, `path`, `guards`', { path: 'gaurds' }],
  ['applyEdit option repeating an argument', () => coderig.applyEdit('a\n', 'a', 'b', { old: 'x' }), '`options.old`: `old` is an argument of its own, not an option', { path: 'options.old' }],
  ['applyEdit options not an object', () => coderig.applyEdit('a\n', 'a', 'b', 'x'), '`options`: must be an object of options, got a string', { path: 'options' }],
  ['applyEdit a function', () => coderig.applyEdit('a\n', () => 'a', 'b'), '`old`: invalid type: function, expected a JSON value', { path: 'old' }],
  ['applyEdits replaceAll next to the edits', () => coderig.applyEdits('a\n', [['a', 'b']], { replaceAll: true }), '`replace_all`: `replace_all` belongs inside each entry of `edits`, not next to it', { path: 'replace_all' }],
  ['applyEdits path', () => coderig.applyEdits('a\n', [['a', 'b']], { path: false }), '`path`: invalid type: boolean `false`, expected a string', { path: 'path' }],
  ['locate needle', () => coderig.locate('abc', 3), '`needle`: invalid type: integer `3`, expected a string', { path: 'needle' }],
  ['locate content', () => coderig.locate(['a'], 'a'), '`content`: invalid type: array, expected a string', { path: 'content' }],
  ['checkGuards', () => coderig.checkGuards('a', 2), '`updated`: invalid type: integer `2`, expected a string', { path: 'updated' }],
]

for (const [name, call, message, details] of WRONG_TYPES) {
  test(`a wrong type is INVALID_INPUT with the core's message: ${name}`, () => {
    throwsCore(call, 'INVALID_INPUT', { message, details })
  })
}

// ----------------------------------------------------------- applyEdits

test('applyEdits: objects and [old, new] pairs, total replacements, weakest tier', () => {
  const content = EMOJI + 'a = 1\n  b = 2\nc = 3\nc = 3\n'
  assert.deepEqual(
    coderig.applyEdits(content, [
      ['a = 1', 'a = "😀"'],
      { old: 'b  =  2', new: 'b = 20' },
      { old: 'c = 3', new: 'c = 30', replaceAll: true },
    ]),
    { content: EMOJI + 'a = "😀"\n  b = 20\nc = 30\nc = 30\n', tier: 'whitespace', replacements: 4 },
  )
})

test('applyEdits is all or nothing, against one snapshot', () => {
  const content = 'one\ntwo\nthree\n'
  // The second edit fails: nothing is applied (the first edit's result is not returned).
  throwsCode(() => coderig.applyEdits(content, [['one', '1'], ['four', '4']]), 'NOT_FOUND', {}, /^`edits\[1\]`: `old` was not found/)
  // A target that exists only in another edit's output is not found.
  throwsCode(() => coderig.applyEdits(content, [['one', 'uno'], ['uno', 'eins']]), 'NOT_FOUND')
  // Overlapping targets are invalid input.
  throwsCode(() => coderig.applyEdits(content, [['one\ntwo', 'x'], ['two\nthree', 'y']]), 'INVALID_INPUT', {}, /overlap/)
  // An empty list is invalid input.
  throwsCode(() => coderig.applyEdits(content, []), 'INVALID_INPUT', {}, /no edits/)
  // Ambiguity in one edit refuses the batch.
  throwsCode(() => coderig.applyEdits('x\nx\ny\n', [['y', 'z'], ['x', 'w']]), 'AMBIGUOUS', { count: 2 })
})

test('applyEdits: the guards run on the result unless disabled, with the path', () => {
  const content = 'import { a } from "a";\nimport { b } from "b";\na(b);\n'
  const edits = [{ old: 'import { b } from "b";\n', new: '' }]
  throwsCode(() => coderig.applyEdits(content, edits, { path: 'x.ts' }), 'GUARD')
  assert.equal(coderig.applyEdits(content, edits, { path: 'x.ts', guards: false }).content, 'import { a } from "a";\na(b);\n')
})

test('every optional option field takes null as not set, as undefined is', () => {
  const py = 'import os\nimport sys\n\nprint(os.name, sys.argv)\n'
  const dropSys = ['import os\nimport sys\n', 'import os\n']
  for (const options of [null, { path: null }, { guards: null }, { replaceAll: null }, { path: null, guards: null, replaceAll: null }]) {
    assert.deepEqual(coderig.applyEdit('a\n', 'a', 'b', options), { content: 'b\n', tier: 'exact', replacements: 1 }, JSON.stringify(options))
    assert.deepEqual(coderig.applyEdits('a\n', [['a', 'b']], options && { path: options.path, guards: options.guards }), {
      content: 'b\n',
      tier: 'exact',
      replacements: 1,
    })
    // null keeps each default: the guards run, several occurrences are ambiguous.
    throwsCode(() => coderig.applyEdit('x\nx\n', 'x', 'y', options), 'AMBIGUOUS', { count: 2 })
    throwsCode(() => coderig.applyEdit('a()\nb()\n', 'b()', '// ... existing code ...', options), 'GUARD')
    throwsCode(() => coderig.applyEdits('a()\nb()\n', [['b()', '// ... existing code ...']], options && { guards: options.guards }), 'GUARD')
  }
  // A null path is no path: the guards see what they see without one.
  const outcome = (fn) => {
    try {
      return fn()
    } catch (error) {
      return { code: error.code, message: error.message, violations: error.violations }
    }
  }
  const withoutPath = outcome(() => coderig.applyEdit(py, ...dropSys))
  assert.equal(withoutPath.code, 'GUARD')
  assert.deepEqual(outcome(() => coderig.applyEdit(py, ...dropSys, { path: null })), withoutPath)
  assert.deepEqual(outcome(() => coderig.applyEdits(py, [dropSys], { path: null })), outcome(() => coderig.applyEdits(py, [dropSys])))
  const dropped = 'import os\n\nprint(os.name, sys.argv)\n'
  assert.deepEqual(coderig.checkGuards(py, dropped, null), coderig.checkGuards(py, dropped))
  withDir((dir) => {
    const path = join(dir, 'c.txt')
    writeFileSync(path, 'one\ntwo\n')
    assert.equal(coderig.editFile(path, 'one', '1', { path: null, guards: null, replaceAll: null }).content, '1\ntwo\n')
    assert.equal(coderig.editsFile(path, [{ old: 'two', new: '2', replaceAll: null }], { path: null, guards: null }).content, '1\n2\n')
    assert.equal(readFileSync(path, 'utf8'), '1\n2\n')
  })
})

/** Malformed edits are INVALID_INPUT naming the edit (0-based, as the core's paths) and the field. */
const MALFORMED_EDITS = [
  ['not an array', 'x', '`edits`: invalid type: string "x", expected an array'],
  ['missing', null, '`edits`: invalid type: null, expected an array'],
  ['a number', [3], '`edits[0]`: invalid type: integer `3`, expected an edit: {"old", "new", "replace_all"?} or [old, new] or [old, new, replace_all]'],
  ['a short pair', [['a']], '`edits[0]`: an edit given as a list is [old, new] or [old, new, replace_all], got 1 element'],
  ['a pair of non-strings', [['a', 'b'], ['a', 2]], '`edits[1][1]`: invalid type: integer `2`, expected a string'],
  ['missing new', [{ old: 'a' }], '`edits[0]`: missing field `new`'],
  ['old not a string', [{ old: 1, new: 'b' }], '`edits[0].old`: invalid type: integer `1`, expected a string'],
  ['old null', [{ old: null, new: 'b' }], '`edits[0].old`: invalid type: null, expected a string'],
  ['replaceAll not a boolean', [{ old: 'a', new: 'b', replaceAll: 1 }], '`edits[0].replaceAll`: invalid type: integer `1`, expected a boolean'],
  ['an unknown key', [['a', 'b'], { old: 'a', new: 'b', all: true }], '`edits[1].all`: unknown field `all`, expected one of `old`, `new`, `replaceAll`, `replace_all`'],
]

for (const [name, edits, message] of MALFORMED_EDITS) {
  test(`applyEdits and editsFile refuse malformed edits: ${name}`, () => {
    throwsCore(() => coderig.applyEdits('a\n', edits), 'INVALID_INPUT', { message })
    throwsCore(() => coderig.editsFile('/nonexistent/never-read', edits), 'INVALID_INPUT', { message })
  })
}

test('applyEdits: replace_all (the core spelling) and replaceAll are the same field, in objects and triples', () => {
  for (const edit of [{ old: 'x', new: 'y', replace_all: true }, { old: 'x', new: 'y', replaceAll: true }, ['x', 'y', true]]) {
    assert.deepEqual(coderig.applyEdits('x x\n', [edit]), { content: 'y y\n', tier: 'exact', replacements: 2 }, JSON.stringify(edit))
  }
  assert.deepEqual(coderig.applyEdit('x x\n', 'x', 'y', { replace_all: true }).replacements, 2)
})

// ---------------------------------------------------------- checkGuards

/** `[name, original, updated, path, kinds]` */
const GUARDS = [
  ['an intended edit', 'a = 1\nb = 2\n', 'a = 1\nb = 3\n', undefined, []],
  ['truncation', 'line\n'.repeat(20), 'line\n', undefined, ['truncation']],
  ['truncation needs both texts non-empty', 'line\n'.repeat(20), '', undefined, []],
  ['dropped JS import', 'import { a } from "a";\nimport b from "b";\na(b);\n', 'import { a } from "a";\na(b);\n', 'x.js', ['dropped_imports']],
  ['dropped Rust use', 'use std::fs;\nuse std::io;\nfn main() { io::stdin(); }\n', 'use std::fs;\nfn main() { io::stdin(); }\n', 'main.rs', ['dropped_imports']],
  ['removing an unused import is fine', 'use std::fs;\nuse std::io;\nfn main() {}\n', 'use std::fs;\nfn main() {}\n', 'main.rs', []],
  ['moved imports are fine', 'import a\nimport b\nx()\n', 'import b\nimport a\nx()\n', 'x.py', []],
  ['leaked marker', 'def f():\n    one()\n    two()\n', 'def f():\n    # ... existing code ...\n    two()\n', 'x.py', ['marker_leak']],
  ['a marker the original had', '# ... existing code ...\nx\n', '# ... existing code ...\ny\n', undefined, []],
  ['new conflict markers', 'a\n', '<<<<<<< HEAD\na\n=======\nb\n>>>>>>> other\n', undefined, ['conflict_marker']],
]

for (const [name, original, updated, path, kinds] of GUARDS) {
  test(`checkGuards: ${name}`, () => {
    const violations = coderig.checkGuards(original, updated, path)
    assert.deepEqual(
      violations.map((v) => v.kind),
      kinds,
    )
    for (const v of violations) assert.ok(typeof v.message === 'string' && v.message.length > 0)
  })
}

// --------------------------------------------------------- file helpers

/** A fresh temporary directory, removed after `fn`. */
function withDir(fn) {
  const dir = mkdtempSync(join(tmpdir(), 'coderig-node-'))
  try {
    return fn(dir)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

test('editFile writes atomically, keeps permissions, leaves no temp file', () => {
  withDir((dir) => {
    const path = join(dir, 'a.py')
    writeFileSync(path, '\uFEFFimport os\r\nx = 1\r\n')
    chmodSync(path, 0o640)
    assert.deepEqual(coderig.editFile(path, 'x = 1', 'x = 2\ny = "😀"'), { content: '\uFEFFimport os\r\nx = 2\r\ny = "😀"\r\n', tier: 'exact', replacements: 1 })
    assert.equal(readFileSync(path, 'utf8'), '\uFEFFimport os\r\nx = 2\r\ny = "😀"\r\n')
    assert.equal(statSync(path).mode & 0o777, 0o640)
    assert.deepEqual(readdirSync(dir), ['a.py'])
  })
})

test('a refused file edit leaves the file byte-for-byte untouched', () => {
  withDir((dir) => {
    const path = join(dir, 'a.py')
    const original = 'import os\nimport sys\nx = 1\nx = 1\nprint(sys.argv)\n' // sys in use: dropping its import is refused
    writeFileSync(path, original)
    const before = statSync(path).mtimeMs
    throwsCode(() => coderig.editFile(path, 'missing', 'y'), 'NOT_FOUND')
    throwsCode(() => coderig.editFile(path, 'x = 1', 'y'), 'AMBIGUOUS')
    throwsCode(() => coderig.editFile(path, 'import sys\n', ''), 'GUARD') // the guards use the file's path
    throwsCode(() => coderig.editFile(path, 'x = 1', 'x = 1', { replaceAll: true }), 'NO_OP')
    throwsCode(() => coderig.editsFile(path, [['import os', 'import re'], ['nope', 'y']]), 'NOT_FOUND')
    throwsCode(() => coderig.hashlineEditFile(path, [{ op: 'replace', pos: '1#ZZ', lines: 'x' }]), 'HASHLINE_MISMATCH')
    throwsCode(() => coderig.hashlineEditFile(path, [{ op: 'replace', lines: 'x' }]), 'INVALID_INPUT', {}, '`edits[0].pos`: a replace edit needs `pos`, the first line it replaces')
    assert.equal(readFileSync(path, 'utf8'), original)
    assert.equal(statSync(path).mtimeMs, before)
    assert.deepEqual(readdirSync(dir), ['a.py'])
  })
})

test('file helpers: non-UTF-8 is INVALID_INPUT, a missing file is IO', () => {
  withDir((dir) => {
    const path = join(dir, 'bin.dat')
    const bytes = Buffer.from([0x61, 0xff, 0x0a])
    writeFileSync(path, bytes)
    throwsCode(() => coderig.editFile(path, 'a', 'b'), 'INVALID_INPUT', {}, /UTF-8/)
    assert.deepEqual(readFileSync(path), bytes)
    const missing = join(dir, 'missing.txt')
    throwsCode(() => coderig.editFile(missing, 'a', 'b'), 'IO', {}, /missing\.txt/)
    throwsCode(() => coderig.editsFile(missing, [['a', 'b']]), 'IO')
    throwsCode(() => coderig.hashlineEditFile(missing, [{ op: 'append', lines: 'x' }]), 'IO')
  })
})

test('editsFile and hashlineEditFile write their result', () => {
  withDir((dir) => {
    const path = join(dir, 'b.txt')
    writeFileSync(path, 'one\ntwo\nthree\n')
    assert.deepEqual(coderig.editsFile(path, [['one', '1'], { old: 'three', new: '3' }]), { content: '1\ntwo\n3\n', tier: 'exact', replacements: 2 })
    assert.equal(readFileSync(path, 'utf8'), '1\ntwo\n3\n')
    const ref = `2#${coderig.hashline.lineHash(2, 'two')}`
    assert.equal(coderig.hashlineEditFile(path, [{ op: 'replace', pos: ref, lines: ['2', '2.5'] }]), '1\n2\n2.5\n3\n')
    assert.equal(readFileSync(path, 'utf8'), '1\n2\n2.5\n3\n')
    assert.deepEqual(readdirSync(dir), ['b.txt'])
  })
})
