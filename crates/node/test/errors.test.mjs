import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createRequire } from 'node:module'

const coderig = createRequire(import.meta.url)('../index.js')

// A seed outside u32 is refused through the same EditError → JS conversion
// every binding uses, so these pin the error shape of the whole addon.
for (const seed of [-1, 4294967296, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
  test(`seed ${seed} throws an Error with code INVALID_INPUT`, () => {
    assert.throws(
      () => coderig.xxhash32('abc', seed),
      (error) => {
        assert.ok(error instanceof Error, 'a real Error')
        assert.equal(error.code, 'INVALID_INPUT')
        assert.equal(error.kind, 'invalid_input')
        assert.match(error.message, /seed must be an integer in 0\.\.=4294967295/)
        assert.equal(typeof error.stack, 'string')
        return true
      },
    )
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
