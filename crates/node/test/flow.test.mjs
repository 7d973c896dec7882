import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createRequire } from 'node:module'
import { throwsCode } from './helpers.mjs'

const { flow } = createRequire(import.meta.url)('../index.js')

const code = (id, extra = {}) => ({ id, kind: 'code', ...extra })

/** Asserts that `fn` throws the core's Error with this `code` and `message` (a string: exactly; a RegExp: a match). */
function assertCode(fn, code, message = /./) {
  throwsCode(fn, code, { message })
}

/** Asserts that `fn` throws the core's Error for a refused Scheduler event: `code` and the FlowError name in `details.reason`. */
function assertFlowError(fn, code, reason, message = /./) {
  return throwsCode(fn, code, { message, details: { reason }, props: { reason } })
}

// Dependency outcomes, one letter per dependency d0, d1, ... (as in the Rust
// table of crates/core/tests/flow_rules.rs): S done, F failed, T timed out,
// U skipped upstream_failed, B skipped branch_not_taken, C skipped
// condition_false, E excluded at launch, X excluded by a switch, R running,
// P pending.
function stateOf(pattern) {
  const st = { done: [], failed: [], timedOut: [], skipped: {}, excluded: new Set(), inFlight: [], switchResults: { sw: [null, []] } }
  ;[...pattern].forEach((c, i) => {
    const id = `d${i}`
    if (c === 'S') st.done.push(id)
    else if (c === 'F') st.failed.push(id)
    else if (c === 'T') st.timedOut.push(id)
    else if (c === 'U') st.skipped[id] = 'upstream_failed'
    else if (c === 'B') st.skipped[id] = 'branch_not_taken'
    else if (c === 'C') st.skipped[id] = 'condition_false'
    else if (c === 'E') st.excluded.add(id)
    else if (c === 'X') st.switchResults.sw[1].push(id)
    else if (c === 'R') st.inFlight.push(id)
    else assert.equal(c, 'P', `bad pattern letter ${c}`)
  })
  return st
}

const depsOf = (pattern) => [...pattern].map((_, i) => `d${i}`)
const flowOf = (pattern, rule) => ({ steps: [...depsOf(pattern).map((d) => code(d)), code('t', { deps: depsOf(pattern), triggerRule: rule })] })

// [rule, dependency outcomes, 'run' | 'wait' | skip reason]
const RULES = [
  ['all_success', '', 'run'], ['all_success', 'SB', 'run'], ['all_success', 'SE', 'run'], ['all_success', 'SX', 'run'],
  ['all_success', 'SP', 'wait'], ['all_success', 'SR', 'wait'], ['all_success', 'SF', 'upstream_failed'], ['all_success', 'SU', 'upstream_failed'],
  ['all_failed', 'FT', 'run'], ['all_failed', 'UU', 'run'], ['all_failed', 'FP', 'wait'], ['all_failed', 'FS', 'condition_false'],
  ['all_done', 'SFTUBCE', 'run'], ['all_done', 'FR', 'wait'],
  ['all_skipped', 'BEX', 'run'], ['all_skipped', 'BP', 'wait'], ['all_skipped', 'BU', 'condition_false'],
  ['one_success', 'PRS', 'run'], ['one_success', 'FP', 'wait'], ['one_success', 'FB', 'upstream_failed'], ['one_success', 'BCE', 'condition_false'],
  ['one_failed', 'UP', 'run'], ['one_failed', 'SP', 'wait'], ['one_failed', 'SB', 'condition_false'],
  ['one_done', 'TP', 'run'], ['one_done', 'UP', 'wait'], ['one_done', 'BU', 'condition_false'],
  ['none_failed', 'BB', 'run'], ['none_failed', 'SP', 'wait'], ['none_failed', 'TP', 'upstream_failed'],
  ['none_failed_min_one_success', 'SB', 'run'], ['none_failed_min_one_success', 'BP', 'wait'],
  ['none_failed_min_one_success', 'BB', 'condition_false'], ['none_failed_min_one_success', 'UB', 'upstream_failed'],
  ['none_skipped', 'SU', 'run'], ['none_skipped', 'SP', 'wait'], ['none_skipped', 'SE', 'condition_false'],
  ['always', '', 'run'], ['always', 'RR', 'run'], ['always', 'FU', 'run'],
]

test('every trigger rule: evaluateTriggerRule, readySteps and propagateSkips agree with the table', () => {
  const rules = new Set(RULES.map(([rule]) => rule))
  assert.equal(rules.size, 11, 'all of Airflow\'s rules')
  for (const [rule, pattern, expected] of RULES) {
    const label = `${rule} over ${JSON.stringify(pattern)}`
    const st = stateOf(pattern)
    assert.equal(flow.evaluateTriggerRule(depsOf(pattern), st, rule), expected === 'run', `evaluateTriggerRule: ${label}`)
    assert.equal(flow.readySteps(flowOf(pattern, rule), st).includes('t'), expected === 'run', `readySteps: ${label}`)
    const skip = flow.propagateSkips(flowOf(pattern, rule), st).find((s) => s.id === 't')
    assert.equal(skip?.reason ?? null, expected === 'run' || expected === 'wait' ? null : expected, `propagateSkips: ${label}`)
  }
})

test('state shapes: arrays, Sets, skipped as ids or {id: reason}, missing state', () => {
  const f = { steps: [code('a'), code('b', { deps: ['a'] }), code('c', { deps: ['b'] })] }
  assert.deepEqual(flow.readySteps(f), ['a'])
  assert.deepEqual(flow.readySteps(f, {}), ['a'])
  assert.deepEqual(flow.readySteps(f, { done: ['a'] }), ['b'])
  assert.deepEqual(flow.readySteps(f, { done: new Set(['a', 'b']) }), ['c'])
  // A skip listed without a reason is deliberate (condition_false): all_success runs.
  assert.deepEqual(flow.readySteps(f, { done: ['a'], skipped: ['b'] }), ['c'])
  assert.deepEqual(flow.readySteps(f, { done: ['a'], skipped: new Set(['b']) }), ['c'])
  assert.deepEqual(flow.readySteps(f, { done: ['a'], skipped: { b: 'upstream_failed' } }), [])
  assert.deepEqual(flow.propagateSkips(f, { done: ['a'], skipped: { b: 'upstream_failed' } }), [{ id: 'c', reason: 'upstream_failed' }])
  // Failed and timed-out steps are never offered again.
  assert.deepEqual(flow.readySteps(f, { failed: ['a'] }), [])
  assert.deepEqual(flow.readySteps(f, { timedOut: ['a'] }), [])
  assertCode(() => flow.readySteps(f, { skipped: { b: 'bored' } }), 'INVALID_INPUT', '`skipped.b`: unknown skip reason "bored"; expected one of: upstream_failed, branch_not_taken, condition_false, excluded')
  assertCode(() => flow.readySteps(f, { done: 'a' }), 'INVALID_INPUT', '`done`: invalid type: string "a", expected an array')
  assertCode(() => flow.readySteps(f, { finished: ['a'] }), 'INVALID_INPUT', /^`finished`: unknown field `finished`, expected one of `done`, `skipped`/)
  // Field names may be camelCase or the core's snake_case; map keys (step ids) are kept as given.
  const ids = { steps: [code('myStep'), code('b', { deps: ['myStep'] })] }
  assert.deepEqual(flow.readySteps(ids, { in_flight: [] , done: ['myStep'] }), ['b'])
  assert.deepEqual(flow.readySteps(ids, { skipped: { myStep: 'condition_false' } }), ['b'])
})

const router = (cases, defaultBranch = []) => ({ id: 'router', kind: 'switch', cases, defaultBranch })
const langIs = (lang) => (ctx) => ctx.input.lang === lang

test('resolveSwitch with JS conditions: first match wins, default, no match, no cases', () => {
  const cases = () => [
    { label: 'rust', steps: ['r1', 'r2'], condition: langIs('rust') },
    { label: 'py', steps: ['p1'], condition: langIs('py') },
    { label: 'also_rust', steps: ['a1'], condition: langIs('rust') },
  ]
  const table = [
    [router(cases(), ['d1']), 'rust', ['rust', ['p1', 'a1', 'd1']]],
    [router(cases(), ['d1']), 'py', ['py', ['r1', 'r2', 'a1', 'd1']]],
    [router(cases(), ['d1']), 'go', [null, ['r1', 'r2', 'p1', 'a1']]],
    [router(cases()), 'go', [null, ['r1', 'r2', 'p1', 'a1']]],
    [router([], ['d1']), 'rust', [null, []]],
    [router([{ label: 'bare', steps: ['b1'] }]), 'x', [null, ['b1']]],
    [router([{ label: 'bare', steps: ['b1'], condition: null }]), 'x', [null, ['b1']]],
  ]
  for (const [step, lang, expected] of table) {
    assert.deepEqual(flow.resolveSwitch(step, { input: { lang }, results: {} }), expected, lang)
  }
  // Truthy results match; conditions see a JSON copy of ctx.
  assert.deepEqual(flow.resolveSwitch(router([{ label: 'n', steps: ['n1'], condition: (ctx) => ctx.results.count }]), { results: { count: 2 } }), ['n', []])
})

test('resolveSwitch calls conditions in order, stops at the first match, and a throwing condition throws its own exception', () => {
  const calls = []
  const thrown = new TypeError('condition exploded')
  const step = router([
    { label: 'a', steps: ['a1'], condition: (ctx) => { calls.push('a'); return ctx === 'a' } },
    { label: 'boom', steps: ['b1'], condition: () => { calls.push('boom'); throw thrown } },
    { label: 'c', steps: ['c1'], condition: () => { calls.push('c'); return true } },
  ])
  assert.deepEqual(flow.resolveSwitch(step, 'a'), ['a', ['b1', 'c1']])
  assert.deepEqual(calls, ['a'])
  calls.length = 0
  assert.throws(() => flow.resolveSwitch(step, 'x'), (error) => error === thrown)
  assert.deepEqual(calls, ['a', 'boom'], 'no condition runs after one threw')
  // The addon is usable afterwards, and conditions may call it re-entrantly.
  const outer = router([{ label: 'nested', steps: [], condition: () => flow.resolveSwitch(step, 'a')[0] === 'a' }])
  assert.deepEqual(flow.resolveSwitch(outer, null), ['nested', []])
  assert.throws(() => flow.resolveSwitch(router([{ label: 'x', steps: [], condition: () => flow.resolveSwitch(step, 'x') }]), null), (error) => error === thrown)
  // An async condition would always be truthy: refused.
  assertCode(() => flow.resolveSwitch(router([{ label: 'x', steps: [], condition: async () => false }]), null), 'INVALID_INPUT', 'a flow condition returned a Promise; conditions must be synchronous')
  // Conditions get a JSON copy of ctx: mutating it does not reach the caller.
  const ctx = { input: { n: 1 } }
  flow.resolveSwitch(router([{ label: 'x', steps: [], condition: (c) => { c.input.n = 99; return true } }]), ctx)
  assert.equal(ctx.input.n, 1)
})

test('isLoopTerminated: do-while stops when its condition is false or at the cap', () => {
  const calls = []
  const loop = (extra) => ({ id: 'loop', kind: 'do_while', loopBody: ['body'], loopCondition: (ctx) => { calls.push(ctx.n); return ctx.n < 3 }, ...extra })
  const table = [
    [loop(), { n: 0 }, 0, false], // the body always runs once
    [loop(), { n: 1 }, 1, false],
    [loop(), { n: 3 }, 1, true],
    [loop({ loopMaxIterations: 2 }), { n: 0 }, 2, true], // cap
    [loop(), { n: 0 }, 100, true], // default cap 100
    [loop({ loopMaxIterations: 0 }), { n: 0 }, 0, true],
    [{ id: 'loop', kind: 'do_while', loopBody: ['body'] }, {}, 1, true], // no condition: runs once
  ]
  for (const [step, ctx, iterations, expected] of table) {
    assert.equal(flow.isLoopTerminated(step, ctx, iterations), expected, JSON.stringify([ctx, iterations]))
  }
  assert.deepEqual(calls, [1, 3], 'the condition is not called at 0 iterations or at the cap')
  assert.throws(() => flow.isLoopTerminated(loop({ loopCondition: () => { throw new RangeError('nope') } }), {}, 1), RangeError)
  assertCode(() => flow.isLoopTerminated(loop(), {}, -1), 'INVALID_INPUT', '`iterations`: must be an integer from 0 to 4294967295, got -1')
})

test('manifestSteps: launch guards exclude steps, and the exclusion satisfies the join', () => {
  const f = {
    steps: [
      code('lint', { when: (ctx) => ctx.input.lint }),
      code('test'),
      code('report', { deps: ['lint', 'test'] }),
    ],
  }
  assert.deepEqual(flow.manifestSteps(f, { input: { lint: true } }), [])
  const excluded = flow.manifestSteps(f, { input: { lint: false } })
  assert.deepEqual(excluded, ['lint'])
  assert.deepEqual(flow.readySteps(f, { excluded, done: ['test'] }), ['report'])
})

const batched = (cap) => ({
  batchMaxConcurrent: cap,
  steps: [code('a', { batch: 'g' }), code('b', { batch: 'g' }), code('c', { batch: 'g' }), code('solo')],
})

test('batches: readyInBatch admits at most maxConcurrent − running', () => {
  const all = ['a', 'b', 'c', 'solo']
  const table = [
    [2, {}, ['a', 'b', 'solo']], // 0 running, cap 2, 3 ready → 2
    [2, { inFlight: ['a'] }, ['b', 'solo']],
    [2, { inFlight: ['a', 'b'] }, ['solo']],
    [null, {}, all],
    [undefined, {}, all],
  ]
  for (const [cap, st, expected] of table) {
    const ready = flow.readySteps(batched(cap), st).filter((id) => all.includes(id))
    assert.deepEqual(flow.readyInBatch(batched(cap), st, ready), expected, JSON.stringify([cap, st]))
  }
  assert.deepEqual(flow.readyInBatch(batched(2), {}, ['unknown', 'solo']), ['solo'], 'unknown ids are dropped')
  assert.deepEqual(flow.buildBatchState(batched(2), new Set(['b', 'solo'])), {
    g: { running: ['b'], maxConcurrent: 2, joinRule: 'all_success' },
  })
  assert.deepEqual(flow.buildBatchState({ ...batched(null), batchJoinRule: 'all_done' }, []), {
    g: { running: [], maxConcurrent: null, joinRule: 'all_done' },
  })
  assert.equal(flow.isBatchJoined(batched(2), { done: ['a', 'b', 'c'] }, 'g'), true)
  assert.equal(flow.isBatchJoined(batched(2), { done: ['a', 'b'], failed: ['c'] }, 'g'), false)
  assert.equal(flow.isBatchJoined(batched(2), {}, 'nope'), null)
})

test('isRunComplete and isStuck', () => {
  const f = { steps: [code('a'), code('b', { deps: ['a'] })] }
  const table = [
    [{}, false, false],
    [{ inFlight: ['a'] }, false, false],
    [{ done: ['a', 'b'] }, true, false],
    [{ done: ['a'], skipped: { b: 'condition_false' } }, true, false],
    [{ failed: ['a'] }, false, false], // b can still be recorded as skipped
    [{ failed: ['a'], skipped: { b: 'upstream_failed' } }, true, false],
  ]
  for (const [st, complete, stuck] of table) {
    assert.equal(flow.isRunComplete(f, st), complete, `complete ${JSON.stringify(st)}`)
    assert.equal(flow.isStuck(f, st), stuck, `stuck ${JSON.stringify(st)}`)
  }
  assert.equal(flow.isStuck({ steps: [code('a', { deps: ['ghost'] })] }, {}), true, 'an unknown dependency never settles')
})

test('shouldRetry and isRetriable', () => {
  for (const [max, count, expected] of [[0, 0, false], [1, 0, true], [1, 1, false], [3, 2, true]]) {
    assert.equal(flow.shouldRetry(max, count), expected, `${max} ${count}`)
  }
  for (const [kind, expected] of [['timeout', true], ['rate_limited', true], ['transient', true], ['crashed', true], ['validation', false], ['cancelled', false], ['permanent', false]]) {
    assert.equal(flow.isRetriable(kind), expected, kind)
  }
  // No retry policy never retries.
  assert.equal(flow.shouldRetry(null, 0), false)
  assert.equal(flow.shouldRetry(undefined, 0), false)
  assertCode(() => flow.shouldRetry(-1, 0), 'INVALID_INPUT', '`max_retries`: must be an integer from 0 to 4294967295, got -1')
  assertCode(() => flow.shouldRetry(1, '0'), 'INVALID_INPUT', '`retry_count`: invalid type: string "0", expected a JSON number')
  assertCode(() => flow.isRetriable('flaky'), 'INVALID_INPUT', /^unknown failure kind "flaky"/)
})

test('reconcileResumeStep: every row of the resume table', () => {
  // [status, taskId, taskState, retryCount, maxRetries, expected]
  const table = [
    ['timed_out', 't', null, 0, 2, 'retry'],
    ['timed_out', 't', null, 2, 2, 'mark-failed'],
    ['timed_out', null, null, 0, null, 'mark-failed'],
    ['pending', null, null, 0, null, 'keep'],
    ['done', 't', 'completed', 0, null, 'keep'],
    ['failed', 't', 'failed', 0, null, 'keep'],
    ['skipped', null, null, 0, null, 'keep'],
    ['cancelled', 't', 'running', 0, null, 'keep'],
    ['running', null, null, 0, null, 're-dispatch'],
    ['running', 't', null, 0, null, 're-dispatch'],
    ['running', 't', 'completed', 0, null, 'mark-done'],
    ['running', 't', 'failed', 0, null, 'mark-failed'],
    ['running', 't', 'cancelled', 0, null, 'mark-cancelled'],
    ['running', 't', 'pending', 0, null, 'keep'],
    ['running', 't', 'running', 0, null, 're-dispatch'],
    ['running', 't', 'blocked', 0, null, 're-dispatch'],
  ]
  for (const [status, taskId, taskState, retryCount, maxRetries, expected] of table) {
    assert.equal(flow.reconcileResumeStep(status, taskId, taskState, retryCount, maxRetries), expected, JSON.stringify([status, taskId, taskState, retryCount, maxRetries]))
  }
  assert.equal(flow.reconcileResumeStep('timed_out'), 'mark-failed', 'defaults: retryCount 0, maxRetries null')
  // The seed's step status `completed` is `done`, as in the core.
  assert.equal(flow.reconcileResumeStep('completed', 't', 'completed'), 'keep')
  assert.deepEqual(flow.reconcileRun([{ stepId: 'a', taskId: 't', status: 'completed' }], {}), [{ stepId: 'a', action: 'keep' }])
  assertCode(() => flow.reconcileResumeStep('zombie'), 'INVALID_INPUT', /^unknown step status "zombie"/)
})

test('reconcileRun: rows in order, task states by id', () => {
  const got = flow.reconcileRun(
    [
      { stepId: 'a', taskId: 't1', status: 'running' },
      { stepId: 'b', taskId: 't2', status: 'running' },
      { stepId: 'c', taskId: 'gone', status: 'running' },
      { stepId: 'd', taskId: null, status: 'timed_out', retryCount: 1, maxRetries: 3 },
      { stepId: 'e', status: 'timed_out', retryCount: 3, maxRetries: 3 },
      { stepId: 'f', taskId: 't3', status: 'done' },
    ],
    { t1: 'completed', t2: 'pending', t3: 'running' },
  )
  assert.deepEqual(got, [
    { stepId: 'a', action: 'mark-done' },
    { stepId: 'b', action: 'keep' },
    { stepId: 'c', action: 're-dispatch' },
    { stepId: 'd', action: 'retry' },
    { stepId: 'e', action: 'mark-failed' },
    { stepId: 'f', action: 'keep' },
  ])
  assertCode(() => flow.reconcileRun([], { t: 'lost' }), 'INVALID_INPUT', /^unknown task state "lost"/)
  assertCode(() => flow.reconcileRun([{ stepId: 'a', status: 'running', retryCount: -1 }], {}), 'INVALID_INPUT', '`rows[0].retry_count`: must be an integer from 0 to 4294967295, got -1')
})

test('validate returns every problem as {code, message, ...fields}', () => {
  const issues = flow.validate({
    batchMaxConcurrent: 0,
    steps: [
      code('a', { deps: ['ghost', 'b'], batch: 'g' }),
      code('b', { deps: ['a'] }),
      code('a'),
      { id: 'sw', kind: 'switch', cases: [{ label: 'x', steps: ['nowhere'] }, { label: 'x', steps: [] }], defaultBranch: ['void'] },
      code('c', { loopCondition: () => true }),
      code('', {}),
    ],
  })
  const cycle = flow.validate({ steps: [code('x', { deps: ['z'] }), code('y', { deps: ['x'] }), code('z', { deps: ['y'] })] })
  const codes = issues.map((i) => i.code)
  for (const expected of ['empty_id', 'duplicate_id', 'zero_batch_cap', 'unknown_dependency', 'unknown_case_step', 'duplicate_case_label', 'unknown_default_branch_step', 'loop_on_non_do_while']) {
    assert.ok(codes.includes(expected), `${expected} in ${codes}`)
  }
  assert.deepEqual(issues.find((i) => i.code === 'unknown_dependency'), {
    code: 'unknown_dependency', message: 'step "a" depends on unknown step "ghost"', step: 'a', dep: 'ghost',
  })
  assert.deepEqual(issues.find((i) => i.code === 'unknown_case_step'), {
    code: 'unknown_case_step', message: 'switch "sw" case "x" names unknown step "nowhere"', step: 'sw', case: 'x', target: 'nowhere',
  })
  assert.equal(cycle.length, 1)
  assert.equal(cycle[0].code, 'cycle')
  assert.equal(cycle[0].steps.length, 4, 'the path repeats its first step')
  assert.equal(cycle[0].steps[0], cycle[0].steps[3])
  assert.deepEqual(issues.find((i) => i.code === 'empty_id'), { code: 'empty_id', message: 'step #5 has an empty id', index: 5 })
  assert.deepEqual(flow.validate({ steps: [code('a'), code('b', { deps: ['a'] })] }), [])
})

/** `[name, spec, message]`: a bad spec is refused by the core's decoder, the path first, in the core's names. */
const BAD_SPECS = [
  ['a bad kind', { steps: [{ id: 'a', kind: 'lambda' }] }, '`steps[0].kind`: unknown step kind "lambda"; expected one of: agent, code, approval, switch, do_while'],
  ['a bad trigger rule', { steps: [code('a', { triggerRule: 'most_success' })] }, /^`steps\[0\]\.trigger_rule`: unknown trigger rule "most_success"; expected one of: all_success, /],
  ['a fraction', { steps: [code('a', { maxRetries: 1.5 })] }, '`steps[0].max_retries`: must be an integer from 0 to 4294967295, got 1.5'],
  ['a negative cap', { steps: [code('a')], batchMaxConcurrent: -2 }, /^`batch_config\.max_concurrent`: must be an integer from 0 to /],
  ['a misspelt field', { steps: [code('a', { dependencies: ['b'] })] }, /^`steps\[0\]\.dependencies`: unknown field `dependencies`, expected one of `id`, `kind`, `deps`/],
  ['a step that is not an object', { steps: [['a', 'code']] }, '`steps[0]`: must be an object, got an array'],
  ['a condition that is not a function', { steps: [code('a', { when: 'input.x' })] }, '`steps[0].when`: a condition must be a function (ctx) => boolean, got a string'],
  ['a function outside a condition', { steps: [code('a', { deps: () => ['b'] })] }, "`steps[0].deps`: invalid type: function; only `when`, `loop_condition` and a case's `condition` take functions"],
  ['both spellings of the batch cap', { steps: [], batchMaxConcurrent: 1, batch_config: { max_concurrent: 2 } }, '`batch_max_concurrent`: give `batch_config.max_concurrent` or `batch_max_concurrent`, not both'],
]

for (const [name, spec, message] of BAD_SPECS) {
  test(`a bad flow spec is INVALID_INPUT: ${name}`, () => {
    assertCode(() => new flow.Flow(spec), 'INVALID_INPUT', message)
    assertCode(() => flow.readySteps(spec), 'INVALID_INPUT', message)
    assertCode(() => new flow.Scheduler(spec), 'INVALID_INPUT', message)
  })
}

test('bad names and numbers outside a spec throw INVALID_INPUT', () => {
  assertCode(() => flow.evaluateTriggerRule([], {}, 'sometimes'), 'INVALID_INPUT', /^unknown trigger rule "sometimes"; expected one of: /)
  assertCode(() => new flow.Scheduler({ steps: [code('a', { loopMaxIterations: -1 })] }), 'INVALID_INPUT', '`steps[0].loop_max_iterations`: must be an integer from 0 to 4294967295, got -1')
  // A step argument's paths start at the step.
  assertCode(() => flow.resolveSwitch(router([{ label: 'x', steps: [], condition: 'yes' }]), {}), 'INVALID_INPUT', '`cases[0].condition`: a condition must be a function (ctx) => boolean, got a string')
  assertCode(() => flow.isLoopTerminated({ id: 'l', kind: 'loop' }, {}, 1), 'INVALID_INPUT', /^`kind`: unknown step kind "loop"/)
})

test('Scheduler runs a small DAG with a failure, a switch and its join to completion', () => {
  const f = {
    steps: [
      code('fetch'),
      code('lint', { deps: ['fetch'] }),
      code('test', { deps: ['fetch'] }),
      router([
        { label: 'fix', steps: ['fix'], condition: (ctx) => ctx.failed },
        { label: 'ship', steps: ['ship'], condition: (ctx) => !ctx.failed },
      ]),
      code('fix', { deps: ['router'] }),
      code('ship', { deps: ['router'] }),
      code('join', { deps: ['fix', 'ship'] }),
      code('cleanup', { deps: ['lint', 'test'], triggerRule: 'all_done' }),
      code('notify', { deps: ['lint'] }),
    ].map((s) => (s.id === 'router' ? { ...s, deps: ['test'] } : s)),
  }
  const s = new flow.Scheduler(f)
  assert.deepEqual(s.start(), ['fetch'])
  assert.deepEqual(s.complete('fetch'), ['lint', 'test'])
  assert.deepEqual(s.fail('lint'), [])
  assert.deepEqual(s.takeSkipped(), [{ id: 'notify', reason: 'upstream_failed' }])
  assert.deepEqual(s.complete('test'), ['router', 'cleanup'])
  assertFlowError(() => s.complete('router'), 'INVALID_INPUT', 'switch_outcome_required', /complete_switch/)
  assert.deepEqual(s.completeSwitchWith('router', { failed: false }), ['ship'])
  assert.deepEqual(s.takeSkipped(), [{ id: 'fix', reason: 'branch_not_taken' }])
  assert.deepEqual(s.outcome('fix'), { status: 'skipped', reason: 'branch_not_taken' })
  assert.deepEqual(s.outcome('ship'), { status: 'in_flight', reason: null })
  assert.deepEqual([s.skipReason('fix'), s.skipReason('notify'), s.skipReason('ship'), s.skipReason('lint')], ['branch_not_taken', 'upstream_failed', null, null])
  assert.deepEqual(s.complete('ship'), ['join'], 'the join runs after the taken branch')
  assert.deepEqual(s.inFlight(), ['join', 'cleanup'])
  assert.equal(s.isComplete(), false)
  assert.deepEqual(s.complete('join'), [])
  assert.deepEqual(s.complete('cleanup'), [])
  assert.equal(s.isComplete(), true)
  const st = s.state()
  assert.ok(st instanceof flow.State)
  // The core's JSON form, as the server and Python give it.
  assert.deepEqual(st.toJSON(), {
    done: ['cleanup', 'fetch', 'join', 'router', 'ship', 'test'],
    skipped: { fix: 'branch_not_taken', notify: 'upstream_failed' },
    failed: ['lint'],
    in_flight: [],
    excluded: [],
    timed_out: [],
    switch_results: { router: { chosen: 'ship', excluded: ['fix'] } },
    loop_iterations: {},
  })
  assert.deepEqual([st.done, st.failed, st.inFlight, st.skipped], [['cleanup', 'fetch', 'join', 'router', 'ship', 'test'], ['lint'], [], { fix: 'branch_not_taken', notify: 'upstream_failed' }])
  assert.deepEqual(st.switchResults, { router: { chosen: 'ship', excluded: ['fix'] } })
  // The snapshot is a state handle the pure decisions take as it is, and
  // its JSON form decodes back to the same state.
  assert.equal(flow.isRunComplete(f, st), true)
  assert.deepEqual(flow.readySteps(f, st), [])
  assert.deepEqual(flow.State.fromJSON(JSON.parse(JSON.stringify(st))).toJSON(), st.toJSON())
})

test('Scheduler: completeSwitch by label, a throwing condition leaves the switch in flight', () => {
  const f = {
    steps: [
      router([{ label: 'a', steps: ['a1'], condition: () => { throw new Error('bad ctx') } }], ['d1']),
      code('a1', { deps: ['router'] }),
      code('d1', { deps: ['router'] }),
    ],
  }
  const s = new flow.Scheduler(f)
  assert.deepEqual(s.start(), ['router'])
  assert.throws(() => s.completeSwitchWith('router', {}), /bad ctx/)
  assert.deepEqual(s.outcome('router'), { status: 'in_flight', reason: null })
  assertFlowError(() => s.completeSwitch('router', 'nope'), 'INVALID_INPUT', 'unknown_case', /no case "nope"/)
  assert.deepEqual(s.completeSwitch('router', null), ['d1'])
  assert.deepEqual(s.takeSkipped(), [{ id: 'a1', reason: 'branch_not_taken' }])
})

test('Scheduler: a batch cap holds steps until a sibling finishes', () => {
  const s = new flow.Scheduler(batched(2))
  assert.deepEqual(s.start(), ['a', 'b', 'solo'])
  assert.deepEqual(s.held(), ['c'])
  assert.deepEqual(s.complete('a'), ['c'])
  assert.deepEqual(s.held(), [])
})

test('Scheduler: a do-while runs its body per iteration, then what follows', () => {
  const loop = { id: 'loop', kind: 'do_while', loopBody: ['body'], loopCondition: (ctx) => ctx.n < 2, loopMaxIterations: 5 }
  const f = { steps: [loop, code('body', { deps: ['loop'] }), code('after', { deps: ['loop'] })] }
  const s = new flow.Scheduler(f)
  // The body runs while the loop step is in flight; what follows waits.
  assert.deepEqual(s.start(), ['loop', 'body'])
  assert.ok(!flow.readySteps(f, s.state()).includes('after'))
  assert.deepEqual(s.complete('body'), [])
  let runs = 1
  while (!flow.isLoopTerminated(loop, { n: runs }, runs)) {
    assert.deepEqual(s.nextIteration('loop'), ['body'])
    assertFlowError(() => s.nextIteration('loop'), 'CONFLICT', 'loop_body_busy')
    assert.deepEqual(s.complete('body'), [])
    runs += 1
  }
  assert.equal(runs, 2)
  assert.equal(s.loopIterations('loop'), 1)
  assert.deepEqual(s.complete('loop'), ['after'])
  assertFlowError(() => s.nextIteration('after'), 'INVALID_INPUT', 'not_a_loop')
  assert.deepEqual(s.complete('after'), [])
  assert.equal(s.isComplete(), true)
})

test('Scheduler: launch exclusions, deliberate skips, timeouts', () => {
  const f = { steps: [code('a'), code('b'), code('c', { deps: ['a', 'b'] }), code('d', { deps: ['c'], triggerRule: 'one_failed' })] }
  const s = new flow.Scheduler(f, new Set(['b']))
  assert.deepEqual(s.start(), ['a'])
  assert.deepEqual(s.takeSkipped(), [{ id: 'b', reason: 'excluded' }])
  assert.deepEqual(s.complete('a'), ['c'])
  assert.deepEqual(s.timeout('c'), ['d'])
  assert.deepEqual(s.skip('d'), [])
  assert.deepEqual(s.state().timedOut, ['c'])
  assert.deepEqual(s.state().excluded, ['b'])
  assert.equal(s.isComplete(), true)
})

test('Scheduler refusals are the core\'s errors with the FlowError reason; a refused event changes nothing', () => {
  const invalid = assertFlowError(() => new flow.Scheduler({ steps: [code('a', { deps: ['ghost'] }), code('a')] }), 'INVALID_INPUT', 'invalid')
  assert.deepEqual(invalid.errors.map((e) => e.code), ['duplicate_id', 'unknown_dependency'])
  assert.equal(invalid.errors[1].dep, 'ghost')
  assert.deepEqual(invalid.details.errors, invalid.errors)
  assertFlowError(() => new flow.Scheduler({ steps: [code('a')] }, ['ghost']), 'NOT_FOUND_ID', 'unknown_step')
  const s = new flow.Scheduler({ steps: [code('a'), code('b', { deps: ['a'] })] })
  assertFlowError(() => s.complete('a'), 'CONFLICT', 'not_started')
  assert.deepEqual(s.start(), ['a'])
  assertFlowError(() => s.start(), 'CONFLICT', 'already_started')
  const transition = assertFlowError(() => s.complete('b'), 'CONFLICT', 'invalid_transition')
  assert.deepEqual([transition.step, transition.event, transition.state], ['b', 'complete', 'pending'])
  assertFlowError(() => s.fail('ghost'), 'NOT_FOUND_ID', 'unknown_step', 'unknown step "ghost"')
  assertFlowError(() => s.completeSwitch('a', null), 'INVALID_INPUT', 'not_a_switch')
  assertFlowError(() => s.outcome('ghost'), 'NOT_FOUND_ID', 'unknown_step')
  assertFlowError(() => s.skipReason('ghost'), 'NOT_FOUND_ID', 'unknown_step')
  assertCode(() => s.complete(7), 'INVALID_INPUT', '`id`: invalid type: integer `7`, expected a string')
  assert.deepEqual(s.inFlight(), ['a'], 'unchanged')
  assert.deepEqual(s.complete('a'), ['b'])
})

// ------------------------------------------------------------ handles

test('flow.Flow decodes its spec once: later calls do not read it again', () => {
  let reads = 0
  const calls = []
  const spec = {
    steps: [
      code('a'),
      { get id() { reads += 1; return 'b' }, kind: 'code', deps: ['a'], when: (ctx) => { calls.push(ctx.input); return ctx.input.go } },
    ],
  }
  const f = new flow.Flow(spec)
  assert.equal(reads, 1)
  for (let i = 0; i < 10; i += 1) {
    assert.deepEqual(flow.readySteps(f, { done: ['a'] }), ['b'])
    assert.equal(flow.isRunComplete(f, { done: ['a', 'b'] }), true)
  }
  // The JS condition was attached once and still runs, on the JS thread, during the call.
  assert.deepEqual(flow.manifestSteps(f, { input: { go: false } }), ['b'])
  assert.deepEqual(flow.manifestSteps(f, { input: { go: true } }), [])
  assert.equal(reads, 1, 'the spec was read once')
  assert.deepEqual(calls, [{ go: false }, { go: true }])
  assert.deepEqual(f.stepIds, ['a', 'b'])
  // A scheduler takes the handle; the condition travels with it.
  const s = new flow.Scheduler(f)
  assert.deepEqual(s.start(), ['a'])
})

test('flow.Flow.fromSpec decodes the core\'s JSON form exactly, as the server does', () => {
  const json = { steps: [{ id: 'a', kind: 'code' }, { id: 'b', kind: 'agent', deps: ['a'], trigger_rule: 'all_done' }], batch_config: { max_concurrent: 2 } }
  for (const spec of [json, JSON.stringify(json)]) {
    const f = flow.Flow.fromSpec(spec)
    assert.deepEqual(f.stepIds, ['a', 'b'])
    assert.deepEqual(flow.readySteps(f, { failed: ['a'] }), ['b'])
  }
  // toJSON is the core's form, and it decodes back to the same flow.
  const f = flow.Flow.fromSpec(json)
  assert.deepEqual(flow.Flow.fromSpec(JSON.stringify(f)).toJSON(), f.toJSON())
  assert.equal(f.toJSON().batch_config.max_concurrent, 2)
  assert.equal(f.toJSON().steps[1].trigger_rule, 'all_done')
  // Strict: camelCase is not the JSON form; conditions have none.
  assertCode(() => flow.Flow.fromSpec({ steps: [{ id: 'a', kind: 'code', triggerRule: 'always' }] }), 'INVALID_INPUT', /^`steps\[0\]\.triggerRule`: unknown field `triggerRule`/)
  assertCode(() => flow.Flow.fromSpec({ steps: [{ id: 'a', kind: 'code', when: 'x' }] }), 'INVALID_INPUT', '`steps[0].when`: a condition has no JSON form; give it as a function to `new flow.Flow(spec)`')
  assertCode(() => flow.Flow.fromSpec({ steps: [code('a', { when: () => true })] }), 'INVALID_INPUT', '`steps[0].when`: invalid type: function, expected a JSON value')
  assertCode(() => flow.Flow.fromSpec('{"steps": ['), 'INVALID_INPUT', /^the spec is not valid JSON: /)
})

test('flow.State holds a decoded state; getters return fresh copies', () => {
  const st = new flow.State({ done: new Set(['a']), skipped: ['b'], inFlight: ['c'], switchResults: { sw: [null, ['x']] }, loopIterations: { l: 2 } })
  assert.deepEqual(st.toJSON(), {
    done: ['a'], skipped: { b: 'condition_false' }, failed: [], in_flight: ['c'], excluded: [], timed_out: [],
    switch_results: { sw: { chosen: null, excluded: ['x'] } }, loop_iterations: { l: 2 },
  })
  st.done.push('zzz')
  st.skipped.zzz = 'excluded'
  assert.deepEqual([st.done, st.skipped], [['a'], { b: 'condition_false' }], 'the handle is unchanged')
  assert.deepEqual(new flow.State().toJSON().done, [])
  const f = new flow.Flow({ steps: [code('a'), code('b'), code('d', { deps: ['a', 'b'] })] })
  assert.deepEqual(flow.readySteps(f, st), ['d'])
  assert.equal(flow.evaluateTriggerRule(['a', 'b'], st, 'all_success'), true)
  // fromJSON is the core's form exactly.
  assert.deepEqual(flow.State.fromJSON({ in_flight: ['q'] }).inFlight, ['q'])
  assertCode(() => flow.State.fromJSON({ inFlight: ['q'] }), 'INVALID_INPUT', /^`inFlight`: unknown field `inFlight`/)
  assertCode(() => new flow.State({ loopIterations: { l: -1 } }), 'INVALID_INPUT', '`loop_iterations.l`: must be an integer from 0 to 4294967295, got -1')
})

test('handles and plain objects give the same decisions', () => {
  const spec = { steps: [code('a'), code('b', { deps: ['a'], triggerRule: 'all_failed' }), code('c', { deps: ['a'], batch: 'g' })], batchMaxConcurrent: 1 }
  const plain = { failed: ['a'] }
  const [f, st] = [new flow.Flow(spec), new flow.State(plain)]
  for (const [fa, sa] of [[spec, plain], [f, plain], [spec, st], [f, st]]) {
    assert.deepEqual(flow.readySteps(fa, sa), ['b'])
    assert.deepEqual(flow.propagateSkips(fa, sa), [{ id: 'c', reason: 'upstream_failed' }])
    assert.equal(flow.isStuck(fa, sa), false)
    assert.deepEqual(flow.readyInBatch(fa, sa, ['b']), ['b'])
    assert.equal(flow.isBatchJoined(fa, sa, 'g'), false)
  }
  assert.deepEqual(flow.validate(f), [])
  assert.deepEqual(flow.buildBatchState(f, ['c']), { g: { running: ['c'], maxConcurrent: 1, joinRule: 'all_success' } })
})

test('a handle where a plain value belongs reads as its JSON form (toJSON, as JSON.stringify)', () => {
  const f = new flow.Flow({ steps: [code('a')] })
  assert.deepEqual(flow.Flow.fromSpec(f).stepIds, ['a'])
  assert.deepEqual(flow.State.fromJSON(new flow.State({ done: ['a'] })).done, ['a'])
  // The wrong kind of handle is refused by the decoder of the right one.
  assertCode(() => flow.readySteps(f, f), 'INVALID_INPUT', /^`batch_config`: unknown field `batch_config`, expected one of `done`/)
  assertCode(() => flow.readySteps(new flow.State(), {}), 'INVALID_INPUT', /^`done`: unknown field `done`, expected `steps` or `batch_config`/)
})
