import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createRequire } from 'node:module'
import { throwsCode } from './helpers.mjs'

const { hashline } = createRequire(import.meta.url)('../index.js')

/** The current `LINE#HH` ref of 1-based line `line` of `content`. */
function ref(content, line) {
  return `${line}#${hashline.lineHash(line, content.split('\n')[line - 1].replace(/\r$/, ''))}`
}

/** A ref for line `line` whose hash is neither the current nor the legacy one. */
function staleRef(content, line) {
  const text = content.split('\n')[line - 1]
  const taken = new Set([hashline.lineHash(line, text), hashline.legacyLineHash(line, text)])
  const letters = 'ZPMQVRWSNKTXJBYH'
  for (const a of letters) for (const b of letters) if (!taken.has(a + b)) return `${line}#${a}${b}`
  throw new Error('unreachable: two hashes cannot take all 256')
}

/** Asserts that `fn` throws the core's Error with `code`; returns the error. */
const thrown = (fn, code, expect) => throwsCode(fn, code, expect)

// ------------------------------------------------------------- refs

const LENIENT_REFS = [
  ['12#VK', 12, 'VK'],
  ['  12#VK  ', 12, 'VK'],
  ['>>> 12 # VK|text', 12, 'VK'],
  ['+12#VK', 12, 'VK'],
  ['-12#VK|foo', 12, 'VK'],
  ['> 7#zp', 7, 'ZP'],
  ['12#VK|', 12, 'VK'],
  ['000123#MQ', 123, 'MQ'],
]

for (const [input, line, hash] of LENIENT_REFS) {
  test(`parseRef accepts ${JSON.stringify(input)}`, () => {
    assert.deepEqual(hashline.parseRef(input), { line, hash })
  })
}

for (const input of ['', '#VK', '12VK', '12#', '12#VA', '12#VKX', '0#VK', '12#VK extra', '12:VK', '99999999999999999999999999#VK']) {
  test(`parseRef refuses ${JSON.stringify(input)} naming the expected form`, () => {
    const error = thrown(() => hashline.parseRef(input), 'INVALID_INPUT')
    assert.match(error.message, /LINE#HH/)
  })
}

for (const [lineNo, got] of [[0, 'an integer from 1 to 4294967295, got 0'], [-1, 'an integer from 1 to 4294967295, got -1'], [1.5, 'an integer from 1 to 4294967295, got 1.5'], [2 ** 32, 'an integer from 1 to 4294967295, got 4294967296'], [Number.NaN, 'a finite number, got NaN'], [Number.POSITIVE_INFINITY, 'a finite number, got Infinity']]) {
  test(`lineHash / legacyLineHash refuse lineNo ${lineNo}`, () => {
    const expect = { message: `\`line_no\`: must be ${got}`, details: { path: 'line_no' } }
    thrown(() => hashline.lineHash(lineNo, 'x'), 'INVALID_INPUT', expect)
    thrown(() => hashline.legacyLineHash(lineNo, 'x'), 'INVALID_INPUT', expect)
  })
}

test('lineHash ignores \\r and trailing whitespace; legacy also ignores indentation', () => {
  assert.equal(hashline.lineHash(3, 'return x;  \r'), hashline.lineHash(3, 'return x;'))
  assert.notEqual(hashline.lineHash(3, '  return x;'), hashline.lineHash(3, 'return x;'))
  assert.equal(hashline.legacyLineHash(3, '  return x;'), hashline.legacyLineHash(3, 'return x;'))
  assert.match(hashline.lineHash(1, '😀 emoji'), /^[ZPMQVRWSNKTXJBYH]{2}$/)
})

// -------------------------------------------------------- validate

const FILE = 'fn a() {\n    one();\n}\n\nfn b() {\n    two();\n}\n'

test('validate accepts every ref format shows, and legacy hashes', () => {
  const refs = hashline.format(FILE).split('\n').map((line) => line.slice(0, line.indexOf('|')))
  assert.equal(refs.length, 8)
  assert.equal(hashline.validate(FILE, refs), undefined)
  assert.equal(hashline.validate(FILE, [`2#${hashline.legacyLineHash(2, '    one();')}`]), undefined)
  assert.equal(hashline.validate(FILE, []), undefined)
})

test('validate: stale refs throw HASHLINE_MISMATCH with remaps and context', () => {
  const stale2 = staleRef(FILE, 2)
  const stale6 = staleRef(FILE, 6)
  const error = thrown(() => hashline.validate(FILE, [stale2, ref(FILE, 3), stale6]), 'HASHLINE_MISMATCH')
  assert.equal(error.kind, 'hashline_mismatch')
  assert.deepEqual(error.remaps, { [stale2]: ref(FILE, 2), [stale6]: ref(FILE, 6) })
  assert.match(error.message, new RegExp(`>>> ${ref(FILE, 2)}\\|    one\\(\\);`))
  assert.match(error.message, new RegExp(`>>> ${ref(FILE, 6)}\\|    two\\(\\);`))
})

test('validate: malformed or out-of-range refs are INVALID_INPUT, with a did-you-mean', () => {
  thrown(() => hashline.validate(FILE, ['2#VK', 'two']), 'INVALID_INPUT')
  const h7 = hashline.lineHash(7, '}')
  const error = thrown(() => hashline.validate(FILE, [`20#${h7}`]), 'INVALID_INPUT')
  assert.match(error.message, /line 20 does not exist/)
  assert.match(error.message, /did you mean/)
  assert.ok(error.message.includes(`7#${h7}`), error.message)
  // A wrong type is the core's refusal of the request body of POST /api/hashline/validate.
  thrown(() => hashline.validate(FILE, [2]), 'INVALID_INPUT', { message: '`refs[0]`: invalid type: integer `2`, expected a string' })
  thrown(() => hashline.validate(FILE, '2#VK'), 'INVALID_INPUT', { message: '`refs`: invalid type: string "2#VK", expected an array' })
})

// ----------------------------------------------------------- apply

const F = 'l1\nl2\nl3\nl4\nl5\n'
const r = (line) => ref(F, line)

/** `[name, content, edits, expected]` */
const APPLIES = [
  ['replace one', F, [{ op: 'replace', pos: r(2), lines: ['X'] }], 'l1\nX\nl3\nl4\nl5\n'],
  ['replace a range', F, [{ op: 'replace', pos: r(2), end: r(4), lines: ['X', 'Y'] }], 'l1\nX\nY\nl5\n'],
  ['replace with end: null', F, [{ op: 'replace', pos: r(2), end: null, lines: 'X' }], 'l1\nX\nl3\nl4\nl5\n'],
  ['lines as one string', F, [{ op: 'replace', pos: r(1), lines: 'A\nB\n' }], 'A\nB\nl2\nl3\nl4\nl5\n'],
  ['delete with []', F, [{ op: 'replace', pos: r(2), end: r(3), lines: [] }], 'l1\nl4\nl5\n'],
  ["delete with ''", F, [{ op: 'replace', pos: r(5), lines: '' }], 'l1\nl2\nl3\nl4\n'],
  ['append after a line', F, [{ op: 'append', pos: r(2), lines: ['X'] }], 'l1\nl2\nX\nl3\nl4\nl5\n'],
  ['append without pos adds at the end, one final newline', F, [{ op: 'append', lines: ['X', 'Y'] }], 'l1\nl2\nl3\nl4\nl5\nX\nY\n'],
  ['append with pos undefined', F, [{ op: 'append', pos: undefined, lines: 'X' }], 'l1\nl2\nl3\nl4\nl5\nX\n'],
  ['prepend before a line', F, [{ op: 'prepend', pos: r(2), lines: 'X' }], 'l1\nX\nl2\nl3\nl4\nl5\n'],
  ['prepend without pos adds at the start', F, [{ op: 'prepend', pos: null, lines: ['X'] }], 'X\nl1\nl2\nl3\nl4\nl5\n'],
  [
    'several edits refer to the original snapshot',
    F,
    [
      { op: 'replace', pos: r(1), lines: ['A', 'A2'] },
      { op: 'replace', pos: r(4), lines: ['D'] },
      { op: 'prepend', pos: r(3), lines: ['C0'] },
    ],
    'A\nA2\nl2\nC0\nl3\nD\nl5\n',
  ],
  ['no final newline stays so', 'l1\nl2', [{ op: 'append', lines: 'X' }], 'l1\nl2\nX'],
  ['CRLF kept for replaced and inserted lines', 'a\r\nb\r\nc\r\n', [{ op: 'replace', pos: ref('a\r\nb\r\nc\r\n', 2), lines: ['B', 'B2'] }], 'a\r\nB\r\nB2\r\nc\r\n'],
  ['echoed N#HH| prefixes are stripped', F, [{ op: 'replace', pos: r(2), end: r(3), lines: [`${r(2)}|l2`, `${r(3)}|L3`] }], 'l1\nl2\nL3\nl4\nl5\n'],
  ['emoji content', '😀\nx\n', [{ op: 'replace', pos: ref('😀\nx\n', 1), lines: '🎉' }], '🎉\nx\n'],
]

for (const [name, content, edits, expected] of APPLIES) {
  test(`hashline.apply: ${name}`, () => {
    assert.equal(hashline.apply(content, edits), expected)
  })
}

test('hashline.apply: stale refs throw HASHLINE_MISMATCH with remaps, nothing applied', () => {
  const stale = staleRef(F, 4)
  const error = thrown(
    () =>
      hashline.apply(F, [
        { op: 'replace', pos: r(1), lines: 'X' },
        { op: 'replace', pos: stale, lines: 'Y' },
      ]),
    'HASHLINE_MISMATCH',
  )
  assert.deepEqual(error.remaps, { [stale]: r(4) })
  // The fresh ref from the error applies.
  assert.equal(hashline.apply(F, [{ op: 'replace', pos: error.remaps[stale], lines: 'Y' }]), 'l1\nl2\nl3\nY\nl5\n')
})

/** `[name, edits, code, message]`: malformed edits get the core's messages, paths 0-based. */
const REFUSALS = [
  ['overlapping ranges', [{ op: 'replace', pos: r(1), end: r(3), lines: 'X' }, { op: 'replace', pos: r(3), lines: 'Y' }], 'INVALID_INPUT', /overlap/],
  ['end before pos', [{ op: 'replace', pos: r(3), end: r(1), lines: 'X' }], 'INVALID_INPUT', undefined],
  ['a malformed ref', [{ op: 'replace', pos: 'two', lines: 'X' }], 'INVALID_INPUT', /^`edits\[0\]\.pos`: malformed line ref "two"/],
  ['a no-op', [{ op: 'replace', pos: r(2), lines: 'l2' }], 'NO_OP', undefined],
  ['not an array', { op: 'replace', pos: '1#ZZ', lines: 'X' }, 'INVALID_INPUT', '`edits`: invalid type: object, expected an array'],
  ['missing', null, 'INVALID_INPUT', '`edits`: invalid type: null, expected an array'],
  ['missing op', [{ pos: r(1), lines: 'X' }], 'INVALID_INPUT', '`edits[0]`: missing field `op`'],
  ['unknown op', [{ op: 'insert', lines: 'X' }], 'INVALID_INPUT', '`edits[0].op`: unknown hashline op "insert"; expected one of: replace, append, prepend'],
  ['replace without pos', [{ op: 'append', lines: 'X' }, { op: 'replace', lines: 'X' }], 'INVALID_INPUT', '`edits[1].pos`: a replace edit needs `pos`, the first line it replaces'],
  ['pos not a string', [{ op: 'replace', pos: 2, lines: 'X' }], 'INVALID_INPUT', '`edits[0].pos`: invalid type: integer `2`, expected a string'],
  ['end on an append', [{ op: 'append', pos: r(1), end: r(2), lines: 'X' }], 'INVALID_INPUT', '`edits[0].end`: `end` belongs to replace edits only; an append edit inserts at `pos`'],
  ['a typo in a field name', [{ op: 'replace', pos: r(1), line: 'X' }], 'INVALID_INPUT', '`edits[0].line`: unknown field `line`, expected one of `op`, `pos`, `end`, `lines`'],
  ['missing lines', [{ op: 'prepend' }], 'INVALID_INPUT', '`edits[0]`: missing field `lines`'],
  ['lines of the wrong type', [{ op: 'prepend', lines: 3 }], 'INVALID_INPUT', '`edits[0].lines`: invalid type: integer `3`, expected a string or a list of strings'],
  ['a non-string line', [{ op: 'prepend', lines: ['a', null] }], 'INVALID_INPUT', '`edits[0].lines[1]`: invalid type: null, expected a string'],
]

for (const [name, edits, code, message] of REFUSALS) {
  test(`hashline.apply refuses: ${name}`, () => {
    thrown(() => hashline.apply(F, edits), code, { message })
  })
}

test('an edit that is not an object is INVALID_INPUT at its path', () => {
  thrown(() => hashline.apply(F, ['1#ZZ']), 'INVALID_INPUT', {
    message: '`edits[0]`: invalid type: string "1#ZZ", expected a hashline edit: {"op", "pos"?, "end"?, "lines"}',
    details: { path: 'edits[0]' },
  })
})
