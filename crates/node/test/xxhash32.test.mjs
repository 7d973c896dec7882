import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createRequire } from 'node:module'
import { loadVectors, throwsCode } from './helpers.mjs'

const coderig = createRequire(import.meta.url)('../index.js')
const cases = loadVectors().xxhash32

test('every shared vector, as a string and as a Buffer', () => {
  assert.ok(cases.length >= 40)
  for (const { input, seed, hash } of cases) {
    assert.equal(coderig.xxhash32(input, seed), hash, JSON.stringify({ input, seed }))
    assert.equal(coderig.xxhash32(Buffer.from(input, 'utf8'), seed), hash, JSON.stringify({ input, seed }))
  }
})

test('seed defaults to 0', () => {
  for (const { input, seed, hash } of cases.filter((c) => c.seed === 0)) {
    assert.equal(coderig.xxhash32(input), hash)
    assert.equal(coderig.xxhash32(input, undefined), hash)
  }
})

test('a string is hashed as UTF-8, not UTF-16', () => {
  assert.equal(coderig.xxhash32('héllo'), coderig.xxhash32(Buffer.from([0x68, 0xc3, 0xa9, 0x6c, 0x6c, 0x6f])))
})

test('data that is neither a string nor a Buffer is INVALID_INPUT, as the body of POST /api/xxhash32', () => {
  for (const [data, got] of [[12, 'integer `12`'], [null, 'null'], [{}, 'object'], [['a'], 'array']]) {
    throwsCode(() => coderig.xxhash32(data), 'INVALID_INPUT', { message: `\`data\`: invalid type: ${got}, expected a string`, details: { path: 'data' } })
  }
})
