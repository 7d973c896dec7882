import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createRequire } from 'node:module'
import { loadVectors } from './helpers.mjs'

// Every entry of the shared tests/vectors/hashline.json, the same file the
// Rust and Python tests read.
const coderig = createRequire(import.meta.url)('../index.js')
const { hashline } = coderig
const vectors = loadVectors()

test('every xxhash32 vector', () => {
  assert.ok(vectors.xxhash32.length > 0)
  for (const { input, seed, hash } of vectors.xxhash32) {
    assert.equal(coderig.xxhash32(input, seed), hash, JSON.stringify({ input, seed }))
  }
})

test('every lineHash and legacyLineHash vector', () => {
  assert.ok(vectors.line_hash.length > 0)
  for (const { line, content, hash, legacy } of vectors.line_hash) {
    assert.equal(hashline.lineHash(line, content), hash, `lineHash(${line}, ${JSON.stringify(content)})`)
    assert.equal(hashline.legacyLineHash(line, content), legacy, `legacyLineHash(${line}, ${JSON.stringify(content)})`)
  }
})

test('every format vector; each formatted line is a ref that parses and validates', () => {
  assert.ok(vectors.format.length > 0)
  for (const { content, formatted } of vectors.format) {
    assert.equal(hashline.format(content), formatted, JSON.stringify(content))
    const refs = formatted.split('\n').map((line, i) => {
      const parsed = hashline.parseRef(line)
      assert.equal(parsed.line, i + 1)
      assert.equal(`${parsed.line}#${parsed.hash}`, line.slice(0, line.indexOf('|')))
      return line
    })
    assert.equal(hashline.validate(content, refs), undefined)
  }
})
