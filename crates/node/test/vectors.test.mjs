import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { createRequire } from 'node:module'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadVectors, vectorsDir } from './helpers.mjs'

// The shared vectors (tests/vectors/), the files the Rust, Python and HTTP
// suites run too. hashline.json keeps its own layout; every other file is
// run case by case per tests/vectors/README.md, mirroring the reference
// runner crates/core/tests/vectors.rs: one test per case, named by the
// case; an unknown op, an unknown case field or an input field the op does
// not take fails the case (a bug in the vector, never a skip).
const coderig = createRequire(import.meta.url)('../index.js')
const { hashline, flow, arena, model } = coderig

// ------------------------------------------------------- hashline.json

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

// ------------------------------------------------- the common format

/** A bug in a vector: reported as a failure, never compared as the core's error. */
class VectorBug extends Error {}

/**
 * The input of one case, field by field: every field must be one the op's
 * row lists. `null` is the same as absent (JS `undefined`).
 */
class Args {
  constructor(op, input, allowed) {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new VectorBug(`${op}: \`input\` must be an object`)
    const unknown = Object.keys(input).find((k) => !allowed.includes(k))
    if (unknown !== undefined) throw new VectorBug(`${op}: unknown input field \`${unknown}\` (the op takes ${allowed.join(', ')})`)
    this.op = op
    this.input = input
  }

  /** A required field, as given. */
  get(key) {
    if (!(key in this.input)) throw new VectorBug(`${this.op}: missing input field \`${key}\``)
    return this.input[key]
  }

  /** An optional field: `undefined` when absent or null. */
  opt(key) {
    return this.input[key] ?? undefined
  }

  /** The optional fields among `keys` that are given, as an options object (snake_case keys, as the core names them). */
  options(keys) {
    return Object.fromEntries(keys.filter((k) => this.opt(k) !== undefined).map((k) => [k, this.input[k]]))
  }
}

/** A spec, decoded as the core's JSON form; vector flows hold no conditions. */
function flowOf(spec) {
  for (const [i, step] of (Array.isArray(spec?.steps) ? spec.steps : []).entries()) {
    const fields = ['when', 'loop_condition'].filter((k) => step && typeof step === 'object' && k in step)
    const cases = Array.isArray(step?.cases) ? step.cases.filter((c) => c && typeof c === 'object' && 'condition' in c) : []
    if (fields.length > 0 || cases.length > 0) throw new VectorBug(`a vector flow must hold no conditions (steps[${i}])`)
  }
  return flow.Flow.fromSpec(spec)
}

const stateOf = (state) => flow.State.fromJSON(state)
const pair = (c) => (c === null ? null : [c.identity, c.model])

/** `op` → `(input) => answer`: each op called as a Node caller calls it. */
const OPS = {
  apply_edit(input) {
    const a = new Args('apply_edit', input, ['content', 'old', 'new', 'replace_all', 'path', 'guards'])
    // The whole input is the request body: content, old and new as given
    // (absent stays absent), the optional fields as options.
    return coderig.applyEdit(input.content, input.old, input.new, a.options(['replace_all', 'path', 'guards']))
  },
  apply_edits(input) {
    const a = new Args('apply_edits', input, ['content', 'edits', 'path', 'guards'])
    return coderig.applyEdits(a.get('content'), a.get('edits'), a.options(['path', 'guards']))
  },
  locate(input) {
    const a = new Args('locate', input, ['content', 'needle'])
    const content = a.get('content')
    const m = coderig.locate(content, a.get('needle'))
    return {
      kind: m.kind,
      text: m.start === null ? null : content.slice(m.start, m.end),
      count: m.count,
      nearest: m.nearest === null ? null : [m.nearest.firstLine, m.nearest.lastLine],
      score: m.score,
      start: m.start,
      end: m.end,
      candidates: m.candidates,
    }
  },
  check_guards(input) {
    const a = new Args('check_guards', input, ['original', 'updated', 'path'])
    return { violations: coderig.checkGuards(a.get('original'), a.get('updated'), a.opt('path')).map((v) => v.kind) }
  },
  hashline_format(input) {
    return { formatted: hashline.format(new Args('hashline_format', input, ['content']).get('content')) }
  },
  hashline_apply(input) {
    const a = new Args('hashline_apply', input, ['content', 'edits'])
    return { content: hashline.apply(a.get('content'), a.get('edits')) }
  },
  hashline_validate(input) {
    const a = new Args('hashline_validate', input, ['content', 'refs'])
    hashline.validate(a.get('content'), a.get('refs'))
    return {}
  },
  hashline_parse_ref(input) {
    const { line, hash } = hashline.parseRef(new Args('hashline_parse_ref', input, ['ref']).get('ref'))
    return { line, hash }
  },
  xxhash32(input) {
    const a = new Args('xxhash32', input, ['data', 'seed'])
    return { hash: coderig.xxhash32(a.get('data'), a.opt('seed')) }
  },
  flow_validate(input) {
    const codes = flow.validate(flowOf(new Args('flow_validate', input, ['spec']).get('spec'))).map((e) => e.code)
    return { valid: codes.length === 0, codes }
  },
  flow_ready_steps(input) {
    const a = new Args('flow_ready_steps', input, ['spec', 'state'])
    return { ready: flow.readySteps(flowOf(a.get('spec')), stateOf(a.get('state'))) }
  },
  flow_evaluate_trigger_rule(input) {
    const a = new Args('flow_evaluate_trigger_rule', input, ['deps', 'state', 'rule'])
    return { result: flow.evaluateTriggerRule(a.get('deps'), stateOf(a.get('state')), a.get('rule')) }
  },
  flow_is_run_complete(input) {
    const a = new Args('flow_is_run_complete', input, ['spec', 'state'])
    return { result: flow.isRunComplete(flowOf(a.get('spec')), stateOf(a.get('state'))) }
  },
  flow_is_stuck(input) {
    const a = new Args('flow_is_stuck', input, ['spec', 'state'])
    return { result: flow.isStuck(flowOf(a.get('spec')), stateOf(a.get('state'))) }
  },
  flow_should_retry(input) {
    const a = new Args('flow_should_retry', input, ['max_retries', 'retry_count'])
    return { result: flow.shouldRetry(a.get('max_retries'), a.get('retry_count')) }
  },
  flow_reconcile_resume_step(input) {
    const a = new Args('flow_reconcile_resume_step', input, ['status', 'task_id', 'task_state', 'retry_count', 'max_retries'])
    return { action: flow.reconcileResumeStep(a.get('status'), a.opt('task_id'), a.opt('task_state'), a.opt('retry_count'), a.opt('max_retries')) }
  },
  arena_classify_lane(input) {
    const a = new Args('arena_classify_lane', input, ['battle_type', 'identity', 'model', 'local_models'])
    return { lane: arena.classifyLane(a.get('battle_type'), a.get('identity'), a.get('model'), a.get('local_models')) }
  },
  arena_dispatch_now(input) {
    const a = new Args('arena_dispatch_now', input, ['rows', 'local_capacity', 'cloud_capacity'])
    const rows = a.get('rows')
    if (!Array.isArray(rows) || !rows.every((r) => Array.isArray(r) && r.length === 3)) throw new VectorBug('arena_dispatch_now: `rows` must be a list of [id, lane, status]')
    const contestants = rows.map(([id, lane, status]) => ({ id, lane, status }))
    return { ids: arena.dispatchNow(contestants, a.options(['local_capacity', 'cloud_capacity'])) }
  },
  arena_is_battle_complete(input) {
    return { result: arena.isBattleComplete(new Args('arena_is_battle_complete', input, ['statuses']).get('statuses')) }
  },
  arena_compute_benchmark(input) {
    const a = new Args('arena_compute_benchmark', input, ['started_ms', 'ended_ms', 'cost_tokens', 'lane'])
    const b = arena.computeBenchmark(a.get('started_ms'), a.get('ended_ms'), a.opt('cost_tokens') ?? null, a.get('lane'))
    return { duration_ms: b.durationMs, tokens_per_sec: b.tokensPerSec }
  },
  arena_sanitize_slug(input) {
    return { slug: arena.sanitizeSlug(new Args('arena_sanitize_slug', input, ['text']).get('text')) }
  },
  arena_contestant_dir(input) {
    const a = new Args('arena_contestant_dir', input, ['identity', 'model'])
    return { dir: arena.contestantDir(a.get('identity'), a.get('model')) }
  },
  arena_reconcile_contestant_resume(input) {
    const a = new Args('arena_reconcile_contestant_resume', input, ['status', 'task_id', 'task_state'])
    return { action: arena.reconcileContestantResume(a.get('status'), a.opt('task_id'), a.opt('task_state')) }
  },
  arena_extract_winner(input) {
    return { winner: pair(arena.extractWinner(new Args('arena_extract_winner', input, ['text']).get('text'))) }
  },
  arena_extract_verdict(input) {
    return { verdict: pair(arena.extractVerdict(new Args('arena_extract_verdict', input, ['text']).get('text'))) }
  },
  arena_should_name_winner(input) {
    return { result: arena.shouldNameWinner(new Args('arena_should_name_winner', input, ['succeeded']).get('succeeded')) }
  },
  match_model(input) {
    const a = new Args('match_model', input, ['target', 'available', 'providers'])
    return { model: model.matchModel(a.get('target'), a.get('available'), a.opt('providers')) }
  },
  classify_error(input) {
    // The failed call is one object: the input's optional fields.
    const a = new Args('classify_error', input, ['name', 'message', 'http_status'])
    return { class: model.classifyError(a.options(['name', 'message', 'http_status'])) }
  },
}

const EVENTS = { start: 0, complete: 1, fail: 1, skip: 1 }

/**
 * `flow_scheduler`: the scheduler built from `spec` (which validates the
 * flow), fed `events` in order. Returns the newly ready ids of every event
 * that succeeded and the error that stopped the case: building counts as
 * the step before the first event, and only the last event may fail.
 */
function runScheduler(input) {
  const a = new Args('flow_scheduler', input, ['spec', 'events'])
  const spec = a.get('spec')
  const events = a.get('events')
  if (!Array.isArray(events)) throw new VectorBug('flow_scheduler: `events` must be a list')
  const ready = []
  let scheduler
  try {
    scheduler = new flow.Scheduler(flowOf(spec))
  } catch (error) {
    if (error instanceof VectorBug) throw error
    return { ready, error }
  }
  for (const [k, event] of events.entries()) {
    const [name, ...args] = Array.isArray(event) ? event : []
    if (!(name in EVENTS) || args.length !== EVENTS[name] || !args.every((x) => typeof x === 'string')) {
      throw new VectorBug(`flow_scheduler: events[${k}] is ${JSON.stringify(event)}; an event is ["start"], ["complete", id], ["fail", id] or ["skip", id]`)
    }
    try {
      ready.push(scheduler[name](...args))
    } catch (error) {
      if (k + 1 === events.length) return { ready, error }
      throw new Error(`events[${k}] failed (${error.code}: ${error.message}), but an error may only come from the last event`)
    }
  }
  return { ready, error: undefined }
}

/** Where `actual` differs from `expected` (numbers within 1e-9, lists item by item, objects with the same keys), or null. */
function differs(expected, actual, at) {
  if (typeof expected === 'number' && typeof actual === 'number') {
    return Math.abs(expected - actual) > 1e-9 ? `${at}: expected ${expected}, got ${actual}` : null
  }
  if (Array.isArray(expected) && Array.isArray(actual)) {
    if (expected.length !== actual.length) return `${at}: expected ${expected.length} items ${JSON.stringify(expected)}, got ${actual.length} items ${JSON.stringify(actual)}`
    for (const [i, item] of expected.entries()) {
      const d = differs(item, actual[i], `${at}[${i}]`)
      if (d) return d
    }
    return null
  }
  const isObject = (v) => typeof v === 'object' && v !== null && !Array.isArray(v)
  if (isObject(expected) && isObject(actual)) {
    for (const key of new Set([...Object.keys(expected), ...Object.keys(actual)])) {
      if (!(key in actual)) return `${at}.${key}: expected, but absent`
      if (!(key in expected)) return `${at}.${key}: unexpected ${JSON.stringify(actual[key])}`
      const d = differs(expected[key], actual[key], `${at}.${key}`)
      if (d) return d
    }
    return null
  }
  return expected === actual ? null : `${at}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`
}

/** Compares the fields of `expect` with the same fields of `answer`. */
function compareExpect(expect, answer) {
  if (typeof expect !== 'object' || expect === null) throw new VectorBug('`expect` must be an object')
  for (const [key, expected] of Object.entries(expect)) {
    if (!(key in answer)) throw new VectorBug(`\`expect.${key}\` is not a field of this op's answer ${JSON.stringify(answer)}`)
    const d = differs(expected, answer[key], key)
    if (d) assert.fail(`${d}\n  answer: ${JSON.stringify(answer)}`)
  }
}

/** Compares a case's `error` with the thrown error: kind and code, the message when given, each given detail. */
function compareError(expected, error) {
  if (typeof expected !== 'object' || expected === null) throw new VectorBug('`error` must be an object')
  const unknown = Object.keys(expected).find((k) => !['kind', 'code', 'message', 'details'].includes(k))
  if (unknown) throw new VectorBug(`unknown field \`error.${unknown}\``)
  if (!('kind' in expected) || !('code' in expected)) throw new VectorBug('`error` needs `kind` and `code`')
  if (!(error instanceof Error)) assert.fail(`expected a thrown Error, got ${error}`)
  const shown = `\n  error: ${error.code} ${JSON.stringify(error.message)} ${JSON.stringify(error.details)}`
  if (error.kind !== expected.kind || error.code !== expected.code) assert.fail(`expected ${expected.kind}/${expected.code}, got ${error.kind}/${error.code}${shown}`)
  if ('message' in expected && error.message !== expected.message) assert.fail(`message differs:\n  expected ${JSON.stringify(expected.message)}\n  got      ${JSON.stringify(error.message)}`)
  for (const [key, value] of Object.entries(expected.details ?? {})) {
    if (!(key in error.details)) assert.fail(`detail \`${key}\` is absent${shown}`)
    const d = differs(value, error.details[key], `details.${key}`)
    if (d) assert.fail(d + shown)
  }
}

/** Runs one case; throws (an assertion or a VectorBug) when it fails. */
function runCase(c) {
  if (typeof c !== 'object' || c === null) throw new VectorBug('a case must be an object')
  const unknown = Object.keys(c).find((k) => !['name', 'op', 'input', 'expect', 'error'].includes(k))
  if (unknown) throw new VectorBug(`unknown case field \`${unknown}\``)
  if (typeof c.op !== 'string') throw new VectorBug('a case needs a string `op`')
  if (!('input' in c)) throw new VectorBug('a case needs an `input`')
  const hasExpect = 'expect' in c
  const hasError = 'error' in c
  if (!hasExpect && !hasError) throw new VectorBug('a case needs `expect` or `error`')

  if (c.op === 'flow_scheduler') {
    // `ready` lines up with the events that succeeded; with an `error`
    // (from the last event), one list fewer than there are events.
    const { ready, error } = runScheduler(c.input)
    if (hasError && error === undefined) assert.fail(`expected an error, got ready ${JSON.stringify(ready)}`)
    if (!hasError && error !== undefined) assert.fail(`unexpected error ${error.code}: ${error.message} after ready ${JSON.stringify(ready)}`)
    if (hasError) compareError(c.error, error)
    if (hasExpect) compareExpect(c.expect, { ready })
    return
  }
  if (hasExpect && hasError) throw new VectorBug('a case has `expect` or `error`, not both')
  const run = OPS[c.op]
  if (run === undefined) throw new VectorBug(`unknown op ${JSON.stringify(c.op)}`)
  let answer
  try {
    answer = run(c.input)
  } catch (error) {
    if (error instanceof VectorBug) throw error
    if (hasExpect) assert.fail(`unexpected error ${error.code}: ${error.message} ${JSON.stringify(error.details)}`)
    compareError(c.error, error)
    return
  }
  if (hasError) assert.fail(`expected an error, got ${JSON.stringify(answer)}`)
  compareExpect(c.expect, answer)
}

/** The files of the common format: every `*.json` of tests/vectors but hashline.json. */
const files = readdirSync(vectorsDir())
  .filter((f) => f.endsWith('.json') && f !== 'hashline.json')
  .sort()

test('the common-format vector files are there', () => {
  for (const f of ['arena.json', 'edit.json', 'errors.json', 'flow.json', 'guards.json', 'hashline_ops.json', 'locate.json', 'model.json']) {
    assert.ok(files.includes(f), `tests/vectors/${f}`)
  }
})

const seen = new Map()
for (const file of files) {
  const doc = JSON.parse(readFileSync(join(vectorsDir(), file), 'utf8'))
  describe(file, () => {
    test('the file is well formed: a description, cases with unique names', () => {
      assert.deepEqual(Object.keys(doc).filter((k) => !['description', 'cases'].includes(k)), [], 'top-level fields')
      assert.equal(typeof doc.description, 'string')
      assert.ok(Array.isArray(doc.cases) && doc.cases.length > 0, 'at least one case')
      for (const c of doc.cases) {
        assert.equal(typeof c.name, 'string', 'every case has a name')
        if (file === 'errors.json') assert.equal(typeof c.error?.message, 'string', `${c.name}: every case of errors.json is an error with a message`)
      }
    })
    for (const c of Array.isArray(doc.cases) ? doc.cases : []) {
      const name = typeof c.name === 'string' ? c.name : '<unnamed>'
      const twice = seen.get(name)
      seen.set(name, file)
      test(name, () => {
        assert.equal(twice, undefined, `the case name is also in ${twice}`)
        runCase(c)
      })
    }
  })
}

// ------------------------------------------------- the runner itself

// A runner that passed everything would prove nothing: it must pass a
// right case, and fail a wrong answer, a wrong error, an unknown op and
// an unknown input field.
describe('the runner', () => {
  const ok = [
    { name: 'edit', op: 'apply_edit', input: { content: 'a = 1\n', old: 'a = 1', new: 'a = 2' }, expect: { content: 'a = 2\n', tier: 'exact', replacements: 1 } },
    { name: 'locate', op: 'locate', input: { content: 'x', needle: '' }, error: { kind: 'invalid_input', code: 'INVALID_INPUT' } },
    { name: 'scheduler', op: 'flow_scheduler', input: { spec: { steps: [{ id: 'a', kind: 'code' }] }, events: [['start'], ['complete', 'a'], ['complete', 'a']] }, expect: { ready: [['a'], []] }, error: { kind: 'conflict', code: 'CONFLICT', details: { reason: 'invalid_transition' } } },
    { name: 'score', op: 'locate', input: { content: 'abc\n', needle: 'abc' }, expect: { score: 1 + 1e-12, text: 'abc' } },
    { name: 'match', op: 'match_model', input: { target: 'gpt-4', available: ['gpt-4o', 'openai/gpt-4-turbo'], providers: null }, expect: { model: 'openai/gpt-4-turbo' } },
    { name: 'classify', op: 'classify_error', input: { message: 'rate limit exceeded', http_status: 429 }, expect: { class: 'retry' } },
    { name: 'bad status', op: 'classify_error', input: { http_status: -1 }, error: { kind: 'invalid_input', code: 'INVALID_INPUT' } },
  ]
  for (const c of ok) test(`passes a right case: ${c.name}`, () => runCase(c))
  const wrong = [
    ['a wrong answer', { name: 'w', op: 'apply_edit', input: { content: 'a\n', old: 'a', new: 'b' }, expect: { content: 'c\n' } }, /content: expected/],
    ['a wrong error code', { name: 'w', op: 'locate', input: { content: 'x', needle: '' }, error: { kind: 'not_found', code: 'NOT_FOUND' } }, /expected not_found\/NOT_FOUND/],
    ['a wrong message', { name: 'w', op: 'locate', input: { content: 'x', needle: '' }, error: { kind: 'invalid_input', code: 'INVALID_INPUT', message: 'no' } }, /message differs/],
    ['an error where an answer is expected', { name: 'w', op: 'hashline_parse_ref', input: { ref: 'x' }, expect: { line: 1 } }, /unexpected error INVALID_INPUT/],
    ['an unknown op', { name: 'w', op: 'apply_patch', input: {}, expect: {} }, /unknown op "apply_patch"/],
    ['an unknown input field', { name: 'w', op: 'locate', input: { content: 'x', needle: 'x', fuzzy: true }, expect: {} }, /unknown input field `fuzzy`/],
    ['an unknown case field', { name: 'w', op: 'locate', input: { content: 'x', needle: 'x' }, expect: {}, skip: true }, /unknown case field `skip`/],
    ['a condition in a vector flow', { name: 'w', op: 'flow_validate', input: { spec: { steps: [{ id: 'a', kind: 'code', when: 'x' }] } }, expect: {} }, /no conditions/],
    ['an error from an early event', { name: 'w', op: 'flow_scheduler', input: { spec: { steps: [{ id: 'a', kind: 'code' }] }, events: [['complete', 'a'], ['start']] }, expect: { ready: [] } }, /only come from the last event/],
  ]
  for (const [what, c, message] of wrong) {
    test(`fails ${what}`, () => assert.throws(() => runCase(c), message))
  }
})
