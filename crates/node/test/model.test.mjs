import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createRequire } from 'node:module'
import { throwsCode } from './helpers.mjs'

// model.*: the core's model-name matching and error classification (the
// shared vectors in tests/vectors/model.json pin the rules on every face;
// these pin the JS calling conventions).
const coderig = createRequire(import.meta.url)('../index.js')
const { model } = coderig
const names = coderig.names()

test('matchModel picks the element of available that names the target, or null', () => {
  const available = ['openai/gpt-4-turbo', 'openai/gpt-4o', 'gpt-40-mini', 'anthropic/claude-sonnet-4-5-20250929']
  assert.equal(model.matchModel('gpt-4', available), 'openai/gpt-4-turbo')
  assert.equal(model.matchModel('gpt-4', [...available].reverse()), 'openai/gpt-4-turbo')
  assert.equal(model.matchModel('claude-sonnet-4.5', available), 'anthropic/claude-sonnet-4-5-20250929')
  assert.equal(model.matchModel('gpt-4', available, ['anthropic']), null)
  assert.equal(model.matchModel('gpt-4', available, null), 'openai/gpt-4-turbo')
  assert.equal(model.matchModel('llama', available), null)
  assert.equal(model.matchModel('', available), null)
  assert.equal(model.matchModel('gpt-4', []), null)
})

test('matchModel refuses arguments of the wrong type, naming them', () => {
  throwsCode(() => model.matchModel(4, []), 'INVALID_INPUT', { message: /^`target`: invalid type: integer `4`, expected a string/ })
  throwsCode(() => model.matchModel('a', 'a'), 'INVALID_INPUT', { message: /^`available`: invalid type: string "a", expected an array/ })
  throwsCode(() => model.matchModel('a', ['a', 1]), 'INVALID_INPUT', { message: /^`available\[1\]`: invalid type: integer `1`/ })
  throwsCode(() => model.matchModel('a', [], 'openai'), 'INVALID_INPUT', { message: /^`providers`: invalid type: string/ })
})

test('classifyError gives one of the core\'s classes, from a name, a message or a status', () => {
  const cases = [
    [{ httpStatus: 429 }, 'retry'],
    [{ http_status: 503 }, 'retry'],
    [{ message: 'Rate limit exceeded, retry in 20s' }, 'retry'],
    [{ name: 'insufficient_quota' }, 'stop'],
    [{ message: 'The model `gpt-9` does not exist', httpStatus: 404 }, 'fallback'],
    [{ httpStatus: 401 }, 'fatal'],
    [{}, 'fatal'],
    [{ name: null, message: null, httpStatus: null }, 'fatal'],
  ]
  for (const [error, expected] of cases) {
    const got = model.classifyError(error)
    assert.ok(names.error_class.includes(got))
    assert.equal(got, expected, JSON.stringify(error))
  }
  assert.deepEqual(model.explainError({ httpStatus: 503 }), { class: 'retry', evidence: 'status', rule: model.explainError({ httpStatus: 503 }).rule })
  assert.deepEqual(model.explainError({}), { class: 'fatal', evidence: 'none', rule: 'default' })
})

test('classifyError refuses a bad status or an unknown key', () => {
  throwsCode(() => model.classifyError({ httpStatus: 70000 }), 'INVALID_INPUT', { message: /^`error\.http_status`: invalid value: integer `70000`/ })
  throwsCode(() => model.classifyError({ httpStatus: '429' }), 'INVALID_INPUT', { message: /^`error\.http_status`: invalid type: string "429"/ })
  throwsCode(() => model.classifyError({ status: 429 }), 'INVALID_INPUT', { message: /^`error\.status`: unknown field `status`/ })
  throwsCode(() => model.classifyError('rate limited'), 'INVALID_INPUT', { message: /^`error`: must be an object of options/ })
})

test('normalizeModel writes the Claude minor version with a dot and never a date', () => {
  assert.equal(model.normalizeModel('  Claude-Sonnet-4-5-20250929 '), 'claude-sonnet-4.5-20250929')
  assert.equal(model.normalizeModel('claude-opus-4-20250514'), 'claude-opus-4-20250514')
  throwsCode(() => model.normalizeModel(null), 'INVALID_INPUT', { message: /^`name`: invalid type: null, expected a string/ })
})
