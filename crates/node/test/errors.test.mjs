import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createRequire } from 'node:module'
import { throwsCode } from './helpers.mjs'

// One error taxonomy: every refusal of the core, whatever the capability,
// is thrown as one JS form built by one Rust function (helpers::to_js_error):
// an Error with `code` (the core's ErrorKind code), `kind`, `message`,
// `details` (the core's details object) and each detail also as an own
// property.
const coderig = createRequire(import.meta.url)('../index.js')
const { flow, arena, hashline } = coderig

/** `[name, call, code, message, details]`: one refusal of each kind a face can meet. */
const REFUSALS = [
  ['an edit not found', () => coderig.applyEdit('alpha\n', 'gamma', 'x'), 'NOT_FOUND', /Re-read the file/, { nearest: null }],
  ['an ambiguous edit', () => coderig.applyEdit('x\nx\n', 'x', 'y'), 'AMBIGUOUS', /replace_all/, { count: 2, lines: [[1, 1], [2, 2]] }],
  ['a guard', () => coderig.applyEdit('a()\nb()\n', 'b()', '// ... existing code ...'), 'GUARD', /./, {}],
  ['a no-op', () => coderig.applyEdit('a\n', 'a', 'a'), 'NO_OP', /./, {}],
  ['stale hashline refs', () => hashline.validate('a\n', ['1#ZZ']), 'HASHLINE_MISMATCH', /./, undefined],
  ['a malformed request', () => coderig.applyEdits('a', [{ old: 1, new: 'b' }]), 'INVALID_INPUT', '`edits[0].old`: invalid type: integer `1`, expected a string', { path: 'edits[0].old' }],
  ['a bad name', () => flow.isRetriable('flaky'), 'INVALID_INPUT', 'unknown failure kind "flaky"; expected one of: timeout, rate_limited, transient, crashed, validation, cancelled, permanent', { what: 'failure kind', given: 'flaky' }],
  ['an arena refusal', () => arena.contestantDir('…', '!!'), 'INVALID_INPUT', /no ASCII letter or digit/, {}],
  ['an unknown step', () => new flow.Scheduler({ steps: [{ id: 'a', kind: 'code' }] }).fail('ghost'), 'NOT_FOUND_ID', 'unknown step "ghost"', { what: 'step', id: 'ghost', reason: 'unknown_step' }],
  ['a scheduler conflict', () => new flow.Scheduler({ steps: [{ id: 'a', kind: 'code' }] }).complete('a'), 'CONFLICT', /./, { reason: 'not_started' }],
  ['an invalid flow', () => new flow.Scheduler({ steps: [{ id: 'a', kind: 'code', deps: ['ghost'] }] }), 'INVALID_INPUT', /./, { reason: 'invalid' }],
  ['a missing file', () => coderig.editFile('/nonexistent/coderig/x.txt', 'a', 'b'), 'IO', /x\.txt/, {}],
]

for (const [name, call, code, message, details] of REFUSALS) {
  test(`${name} throws ${code} in the one JS form`, () => {
    const error = throwsCode(call, code, { message, details: details ?? {} })
    assert.equal(error.name, 'Error')
    assert.equal(typeof error.stack, 'string')
    assert.ok(coderig.names().error_code.includes(error.code))
    assert.ok(coderig.names().error_kind.includes(error.kind))
    // Every detail is also an own property (nearest in its camelCase form).
    for (const [key, value] of Object.entries(error.details)) {
      if (key === 'nearest') continue
      assert.deepEqual(error[key], value, key)
    }
    // No napi status code leaks through.
    assert.doesNotMatch(error.code, /^[A-Z][a-z]/)
  })
}

test('details are the core\'s; the flattened nearest keeps its camelCase form', () => {
  const error = throwsCode(
    () => coderig.applyEdit('function foo() {\n  return 1;\n}\n', 'function bar() {\n  retrun 2;\n}', 'x'),
    'NOT_FOUND',
  )
  assert.deepEqual(Object.keys(error.details), ['nearest'])
  assert.deepEqual([error.details.nearest.first_line, error.details.nearest.last_line], [1, 3])
  assert.deepEqual(error.nearest, { firstLine: 1, lastLine: 3, score: error.details.nearest.score })
  const guard = throwsCode(() => coderig.applyEdit('a()\nb()\n', 'b()', '// ... existing code ...'), 'GUARD')
  assert.deepEqual(guard.violations.map((v) => v.kind), ['marker_leak'])
  assert.deepEqual(guard.details.violations, guard.violations)
})

test('a flow error carries its reason and fields, as the server answers them', () => {
  const s = new flow.Scheduler({ steps: [{ id: 'a', kind: 'code' }, { id: 'b', kind: 'code', deps: ['a'] }] })
  s.start()
  const error = throwsCode(() => s.complete('b'), 'CONFLICT', {
    message: 'cannot complete step "b": it is pending',
    details: { reason: 'invalid_transition', step: 'b', event: 'complete', state: 'pending' },
  })
  assert.deepEqual([error.step, error.event, error.state, error.reason], ['b', 'complete', 'pending', 'invalid_transition'])
})

test('a JS exception raised while reading an argument is rethrown unchanged', () => {
  const boom = new RangeError('getter exploded')
  const state = { get done() { throw boom } }
  assert.throws(() => flow.readySteps({ steps: [{ id: 'a', kind: 'code' }] }, state), (error) => error === boom)
})

test('values JSON cannot hold are INVALID_INPUT at their path', () => {
  const cyclic = { steps: [] }
  cyclic.steps.push(cyclic)
  const table = [
    [() => coderig.xxhash32('abc', Number.NaN), '`seed`: must be a finite number, got NaN'],
    [() => coderig.xxhash32('abc', -Infinity), '`seed`: must be a finite number, got -Infinity'],
    [() => coderig.applyEdit('a', Symbol('s'), 'b'), '`old`: invalid type: symbol, expected a JSON value'],
    [() => coderig.applyEdit('a', 1n, 'b'), '`old`: invalid type: BigInt or native value, expected a JSON value'],
    [() => flow.validate(cyclic), /nested deeper than 128 levels/],
  ]
  for (const [call, message] of table) throwsCode(call, 'INVALID_INPUT', { message })
})

// A seed outside u32 is refused with the core's message for an integer
// field (the same text as `POST /api/xxhash32` gives for it).
for (const [seed, got] of [[-1, '-1'], [4294967296, '4294967296'], [1.5, '1.5']]) {
  test(`seed ${seed} throws INVALID_INPUT with the core's message`, () => {
    const expect = { message: `\`seed\`: must be an integer from 0 to 4294967295, got ${got}`, details: { path: 'seed' } }
    throwsCode(() => coderig.xxhash32('abc', seed), 'INVALID_INPUT', expect)
    throwsCode(() => coderig.xxhash32(Buffer.from('abc'), seed), 'INVALID_INPUT', expect)
  })
}

test('the error code survives a catch and rethrow', () => {
  let caught
  try {
    coderig.xxhash32('abc', -7)
  } catch (error) {
    caught = error
  }
  assert.deepEqual(
    { code: caught.code, kind: caught.kind, name: caught.name },
    { code: 'INVALID_INPUT', kind: 'invalid_input', name: 'Error' },
  )
})
