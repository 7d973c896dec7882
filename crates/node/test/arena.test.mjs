import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createRequire } from 'node:module'
import { throwsCode } from './helpers.mjs'

const { arena } = createRequire(import.meta.url)('../index.js')

/** Asserts that `fn` throws the core's INVALID_INPUT whose message is `message` (a string: exactly; a RegExp: a match). */
function assertInvalid(fn, message) {
  throwsCode(fn, 'INVALID_INPUT', { message })
}

const rows = (list) => list.map(([id, lane, status]) => ({ id, lane, status }))

test('classifyLane: Q&A always local, coding local only for listed models', () => {
  const local = ['qwen3-coder', 'codex/gpt-oss-20b']
  const cases = [
    ['qa', 'ollama', 'qwen3-coder', 'local'],
    ['qa', 'claude', 'opus', 'local'],
    ['coding', 'ollama', 'qwen3-coder', 'local'],
    ['coding', 'aider', 'qwen3-coder', 'local'],
    ['coding', 'claude', 'opus', 'cloud'],
    ['coding', 'codex', 'gpt-oss-20b', 'local'],
    ['coding', 'aider', 'gpt-oss-20b', 'cloud'],
    ['coding', 'ollama', 'Qwen3-Coder', 'cloud'],
    ['coding', 'ollama', 'qwen3', 'cloud'],
  ]
  for (const [type, identity, model, expected] of cases) {
    assert.equal(arena.classifyLane(type, identity, model, local), expected, `${type} ${identity}/${model}`)
    assert.equal(arena.classifyLane(type, identity, model, new Set(local)), expected, 'as a Set')
  }
  assert.equal(arena.classifyLane('Q&A', 'a', 'b', []), 'local', 'the core accepts its aliases')
})

test('nextLocalContestant: first queued local contestant in creation order', () => {
  const cases = [
    [[], null],
    [[['a', 'cloud', 'queued']], null],
    [[['a', 'local', 'running'], ['b', 'local', 'queued'], ['c', 'local', 'queued']], 'b'],
    [[['a', 'cloud', 'queued'], ['b', 'local', 'done'], ['c', 'local', 'queued']], 'c'],
    [[['a', 'local', 'done'], ['b', 'local', 'error'], ['c', 'local', 'cancelled']], null],
  ]
  for (const [list, expected] of cases) {
    assert.equal(arena.nextLocalContestant(rows(list)), expected, JSON.stringify(list))
  }
})

test('dispatchNow: local and cloud capacities cap running contestants', () => {
  // [rows, options, expected]
  const cases = [
    [[], undefined, []],
    [[['1', 'local', 'queued'], ['2', 'cloud', 'queued'], ['3', 'local', 'queued'], ['4', 'cloud', 'queued']], undefined, ['1', '2', '4']],
    [[['1', 'local', 'running'], ['2', 'local', 'queued'], ['3', 'cloud', 'queued']], {}, ['3']],
    [[['1', 'local', 'running'], ['2', 'local', 'queued'], ['3', 'local', 'queued']], { localCapacity: 2 }, ['2']],
    [[['1', 'local', 'queued'], ['2', 'cloud', 'queued']], { localCapacity: 0 }, ['2']],
    [[['1', 'cloud', 'running'], ['2', 'cloud', 'queued'], ['3', 'cloud', 'queued'], ['4', 'cloud', 'queued']], { cloudCapacity: 3 }, ['2', '3']],
    [[['1', 'cloud', 'running'], ['2', 'cloud', 'running'], ['3', 'cloud', 'queued']], { cloudCapacity: 1 }, []],
    [[['1', 'cloud', 'queued']], { cloudCapacity: 0 }, []],
    [[['1', 'cloud', 'queued']], { cloudCapacity: null }, ['1']],
    [[['1', 'local', 'done'], ['2', 'local', 'error'], ['3', 'local', 'cancelled'], ['4', 'local', 'queued']], { cloudCapacity: 1 }, ['4']],
    [[['5', 'cloud', 'queued'], ['1', 'local', 'queued'], ['9', 'cloud', 'queued'], ['2', 'local', 'queued']], { localCapacity: 1, cloudCapacity: 1 }, ['5', '1']],
  ]
  for (const [list, options, expected] of cases) {
    assert.deepEqual(arena.dispatchNow(rows(list), options), expected, JSON.stringify([list, options]))
  }
})

test('isBattleComplete: non-empty and every contestant done or error', () => {
  const cases = [
    [[], false],
    [['done'], true],
    [['error'], true],
    [['done', 'error', 'done'], true],
    [['done', 'running'], false],
    [['queued', 'done'], false],
    [['done', 'cancelled'], false],
  ]
  for (const [statuses, expected] of cases) {
    assert.equal(arena.isBattleComplete(statuses), expected, JSON.stringify(statuses))
  }
})

test('computeBenchmark: duration clamped at 0, tokens/sec only for the local lane', () => {
  const cases = [
    [1000, 3000, 500, 'local', { durationMs: 2000, tokensPerSec: 250 }],
    [1000, 3000, 500, 'cloud', { durationMs: 2000, tokensPerSec: null }],
    [1000, 3000, null, 'local', { durationMs: 2000, tokensPerSec: null }],
    [3000, 1000, 500, 'local', { durationMs: 0, tokensPerSec: null }],
    [1000, 1000, 500, 'local', { durationMs: 0, tokensPerSec: null }],
    [-5000, 5000, 0, 'local', { durationMs: 10000, tokensPerSec: 0 }],
  ]
  for (const [started, ended, tokens, lane, expected] of cases) {
    assert.deepEqual(arena.computeBenchmark(started, ended, tokens, lane), expected, JSON.stringify([started, ended, tokens, lane]))
  }
})

test('benchmarkLine summarises a computed benchmark', () => {
  const local = arena.computeBenchmark(0, 12345, 4567, 'local')
  assert.equal(arena.benchmarkLine(local, 4567, 'local'), 'lane=local duration=12.35s tokens=4567 tokens_per_sec=369.9')
  const cloud = arena.computeBenchmark(0, 2000, null, 'cloud')
  assert.equal(arena.benchmarkLine(cloud, null, 'cloud'), 'lane=cloud duration=2.00s tokens=unknown')
})

test('sanitizeSlug and contestantDir', () => {
  const cases = [
    ['Hello, World!', 'hello-world'],
    ['  --Claude Code--  ', 'claude-code'],
    ['Ünïcödé', 'n-c-d'],
    ['!!!', ''],
    ['a'.repeat(100), 'a'.repeat(64)],
  ]
  for (const [input, expected] of cases) {
    assert.equal(arena.sanitizeSlug(input), expected, input)
  }
  assert.equal(arena.contestantDir('Claude Code', 'openai/gpt-4o'), 'claude-code-openai-gpt-4o')
  assertInvalid(() => arena.contestantDir('…', '!!'), /no ASCII letter or digit/)
})

test('battleSlug: UTC date of a Date or of epoch milliseconds', () => {
  const id = '0A1B2C3D-4e5f-6789-abcd-ef0123456789'
  const lateUtc = Date.UTC(2026, 10, 29, 23, 59, 59, 999)
  const cases = [
    [new Date(lateUtc), 'coding', '2026-11-29-coding-0a1b2c3d'],
    [lateUtc, 'coding', '2026-11-29-coding-0a1b2c3d'],
    [lateUtc + 1, 'qa', '2026-11-30-qa-0a1b2c3d'],
    [new Date('2026-03-01T00:30:00+02:00'), 'qa', '2026-02-28-qa-0a1b2c3d'],
    [0, 'qa', '1970-01-01-qa-0a1b2c3d'],
    [-1, 'qa', '1969-12-31-qa-0a1b2c3d'],
  ]
  for (const [createdAt, type, expected] of cases) {
    assert.equal(arena.battleSlug(id, type, createdAt), expected, String(createdAt))
  }
  assertInvalid(() => arena.battleSlug('xyz', 'qa', 0), /8 hex digits/)
  assertInvalid(() => arena.battleSlug(id, 'qa', new Date(Number.NaN)), '`created_at`: must be a finite number, got NaN')
  assertInvalid(() => arena.battleSlug(id, 'qa', 1.5), '`created_at`: must be an integer from -9007199254740991 to 9007199254740991, got 1.5')
  assertInvalid(() => arena.battleSlug(id, 'qa', '2026-01-01'), '`created_at`: invalid type: string "2026-01-01", expected a JSON number')
  assertInvalid(() => arena.battleSlug(id, 'battle', 0), /unknown battle type "battle"; expected one of: qa, coding/)
})

test('reconcileContestantResume: every row of the table', () => {
  const cases = [
    ['queued', 't', 'running', 'keep'],
    ['done', 't', 'completed', 'keep'],
    ['error', null, null, 'keep'],
    ['cancelled', 't', 'failed', 'keep'],
    ['running', null, null, 're-dispatch'],
    ['running', '', 'completed', 're-dispatch'],
    ['running', 't', null, 're-dispatch'],
    ['running', 't', 'completed', 'mark-done'],
    ['running', 't', 'failed', 'mark-error'],
    ['running', 't', 'cancelled', 'mark-cancelled'],
    ['running', 't', 'pending', 'keep'],
    ['running', 't', 'running', 're-dispatch'],
    ['running', 't', 'blocked', 're-dispatch'],
  ]
  for (const [status, taskId, taskState, expected] of cases) {
    assert.equal(arena.reconcileContestantResume(status, taskId, taskState), expected, JSON.stringify([status, taskId, taskState]))
  }
  assert.equal(arena.reconcileContestantResume('running'), 're-dispatch', 'task id and state may be omitted')
  assertInvalid(() => arena.reconcileContestantResume('running', 't', 'lost'), /unknown task state "lost"/)
})

test('reconcileContestants: rows in order, a task missing from the map is a missing row', () => {
  const got = arena.reconcileContestants(
    [
      { id: 'a', taskId: 't1', status: 'running' },
      { id: 'b', taskId: 't2', status: 'running' },
      { id: 'c', taskId: null, status: 'running' },
      { id: 'd', taskId: 't3', status: 'done' },
      { id: 'e', taskId: 'gone', status: 'running' },
    ],
    { t1: 'completed', t2: 'failed', t3: 'running' },
  )
  assert.deepEqual(got, [
    { id: 'a', action: 'mark-done' },
    { id: 'b', action: 'mark-error' },
    { id: 'c', action: 're-dispatch' },
    { id: 'd', action: 'keep' },
    { id: 'e', action: 're-dispatch' },
  ])
})

test('buildDigestPrompt caps the result at 8,000 and the diff at 5,000 characters', () => {
  const result = 'r'.repeat(8000) + 'TAIL'
  const diff = '+'.repeat(5000) + 'DIFFTAIL'
  const { system, user } = arena.buildDigestPrompt('claude', 'opus', result, 'lane=cloud duration=1.00s tokens=unknown', diff)
  assert.match(system, /digest/i)
  assert.ok(user.includes('Contestant: claude/opus'))
  assert.ok(user.includes('r'.repeat(8000) + '\n[truncated 4 chars]'))
  assert.ok(!user.includes('TAIL\n'))
  assert.ok(user.includes('+'.repeat(5000) + '\n[truncated 8 chars]'))
  const qa = arena.buildDigestPrompt('a', 'b', 'short', 'line')
  assert.ok(!qa.user.includes('## Diff'), 'no diff section without a diff')
  assert.ok(arena.buildDigestPrompt('a', 'b', 'short', 'line', '').user.includes('no files changed'))
  // Caps count code points, as in Rust and Python, not UTF-16 units.
  const emoji = arena.buildDigestPrompt('a', 'b', '😀'.repeat(8001), 'line').user
  assert.ok(emoji.includes('😀'.repeat(8000) + '\n[truncated 1 chars]'))
})

test('buildJudgePrompt: digests only, original prompt capped at 2,000, NO_WINNER below two', () => {
  const digests = [
    { identity: 'claude', model: 'opus', digest: 'did it', benchmarkLine: 'lane=cloud' },
    { identity: 'ollama', model: 'qwen/qwen3', digest: 'half', benchmarkLine: 'lane=local' },
  ]
  const two = arena.buildJudgePrompt('p'.repeat(2001), digests)
  assert.match(two.system, /WINNER: <identity>\/<model>/)
  assert.ok(two.user.includes('p'.repeat(2000) + '\n[truncated 1 chars]'))
  assert.ok(two.user.includes('### 2. ollama/qwen/qwen3'))
  assert.ok(!two.user.includes('Fewer than two contestants'))
  const one = arena.buildJudgePrompt('prompt', digests.slice(0, 1))
  assert.ok(one.user.includes('Fewer than two contestants are listed, so end with `NO_WINNER`.'))
})

test('shouldNameWinner needs two successes', () => {
  for (const [n, expected] of [[0, false], [1, false], [2, true], [6, true]]) {
    assert.equal(arena.shouldNameWinner(n), expected, String(n))
  }
  assertInvalid(() => arena.shouldNameWinner(-1), '`succeeded_count`: must be an integer from 0 to 9007199254740991, got -1')
  assertInvalid(() => arena.shouldNameWinner(1.5), '`succeeded_count`: must be an integer from 0 to 9007199254740991, got 1.5')
})

test('extractWinner and extractVerdict: the last decision line decides', () => {
  const w = (identity, model) => ({ identity, model })
  const cases = [
    ['analysis\nWINNER: claude/opus', w('claude', 'opus')],
    ['winner: claude/opus', w('claude', 'opus')],
    ['**WINNER:** codex/openai/gpt-4o.', w('codex', 'openai/gpt-4o')],
    ['Winner**: aider / qwen3-coder', w('aider', 'qwen3-coder')],
    ['Format: WINNER: <identity>/<model>\nWINNER: a/b\nNO_WINNER', null],
    ['NO_WINNER', null],
    ['WINNER: none', null],
    ['WINNER:', null],
    ['WINNER: claude', null],
    ['no decision here', null],
    ['', null],
  ]
  for (const [text, expected] of cases) {
    assert.deepEqual(arena.extractWinner(text), expected, JSON.stringify(text))
    assert.deepEqual(arena.extractVerdict(text.replaceAll('WINNER:', 'VERDICT:').replaceAll('winner:', 'verdict:').replaceAll('Winner**:', 'Verdict**:')), expected, 'verdict ' + JSON.stringify(text))
  }
  assert.equal(arena.extractVerdict('WINNER: a/b'), null, 'a verdict needs its own label')
})

test('buildCrossExamPrompt names the examiner and the proposed winner', () => {
  const digests = [
    { identity: 'a', model: 'm1', digest: 'd1', benchmarkLine: 'b1' },
    { identity: 'b', model: 'm2', digest: 'd2', benchmarkLine: 'b2' },
  ]
  const { system, user } = arena.buildCrossExamPrompt('prompt', digests, 'x'.repeat(8001), { identity: 'a', model: 'm1' }, 'c', 'm3')
  assert.match(system, /VERDICT: <identity>\/<model>/)
  assert.ok(user.startsWith('You are c/m3.'))
  assert.ok(user.includes('## Proposed winner\n\na/m1'))
  assert.ok(user.includes('x'.repeat(8000) + '\n[truncated 1 chars]'))
  // No proposed winner (the judge named none): an independent verdict is asked for.
  for (const none of [null, undefined]) {
    const open = arena.buildCrossExamPrompt('prompt', digests, 'analysis', none, 'c', 'm3')
    assert.ok(open.user.includes('The judge named no winner'), open.user)
    assert.ok(!open.user.includes('## Proposed winner\n\na/m1'), 'nobody is proposed')
  }
})

test('bradleyTerry: shape, order, intervals and determinism', () => {
  const battles = [
    { winner: 'a', losers: ['b', 'c'] },
    { winner: 'a', losers: ['b'] },
    { winner: 'b', losers: ['c'] },
    { winner: 'a', losers: ['c'] },
  ]
  const ratings = arena.bradleyTerry(battles, { bootstrap: 200, seed: 7 })
  assert.deepEqual(ratings.map((r) => r.name), ['a', 'b', 'c'])
  for (const r of ratings) {
    assert.deepEqual(Object.keys(r).sort(), ['ciHigh', 'ciLow', 'name', 'score'])
    assert.ok(Number.isFinite(r.score))
    assert.ok(r.ciLow <= r.score && r.score <= r.ciHigh, JSON.stringify(r))
  }
  const meanLogStrength = ratings.reduce((sum, r) => sum + (r.score - 1000) / 400, 0) / ratings.length
  assert.ok(Math.abs(meanLogStrength) < 1e-6, 'scores centred on 1000')
  assert.deepEqual(arena.bradleyTerry(battles, { bootstrap: 200, seed: 7 }), ratings, 'same seed, same result')
  const noBootstrap = arena.bradleyTerry(battles, { bootstrap: 0 })
  for (const r of noBootstrap) assert.ok(r.ciLow === r.score && r.ciHigh === r.score)
  assert.deepEqual(arena.bradleyTerry([]), [])
  assert.equal(arena.bradleyTerry(battles).length, 3, 'defaults: bootstrap 1000, seed 0')
  assertInvalid(() => arena.bradleyTerry(battles, { seed: -1 }), '`options.seed`: must be an integer from 0 to 9007199254740991, got -1')
  assertInvalid(() => arena.bradleyTerry(battles, { bootstrap: 0.5 }), '`options.bootstrap`: must be an integer from 0 to 9007199254740991, got 0.5')
  assertInvalid(() => arena.bradleyTerry(battles, { boot: 1 }), '`options.boot`: unknown field `boot`, expected `bootstrap` or `seed`')
  assertInvalid(() => arena.bradleyTerry([{ winner: 'a' }]), '`battles[0]`: missing field `losers`')
})

test('bad names, numbers and types throw INVALID_INPUT with the core\'s messages', () => {
  // A bad name is the core's refusal of that name (no path: as every face parses a plain string).
  assertInvalid(() => arena.classifyLane('arena', 'a', 'b', []), 'unknown battle type "arena"; expected one of: qa, coding')
  assertInvalid(() => arena.nextLocalContestant([{ id: 'a', lane: 'gpu', status: 'queued' }]), 'unknown lane "gpu"; expected one of: local, cloud, driver')
  assertInvalid(() => arena.dispatchNow([{ id: 'a', lane: 'local', status: 'waiting' }]), 'unknown contestant status "waiting"; expected one of: queued, running, done, error, cancelled')
  assertInvalid(() => arena.isBattleComplete(['done', 'finished']), /^unknown contestant status "finished"/)
  assertInvalid(() => arena.reconcileContestants([{ id: 'a', taskId: 't', status: 'running' }], { t: 'lost' }), /^unknown task state "lost"/)
  // Numbers and types are checked by the core's decoder, the path first.
  assertInvalid(() => arena.dispatchNow([], { localCapacity: -1 }), '`options.local_capacity`: must be an integer from 0 to 9007199254740991, got -1')
  assertInvalid(() => arena.dispatchNow([], { cloudCapacity: Number.POSITIVE_INFINITY }), '`options.cloudCapacity`: must be a finite number, got Infinity')
  assertInvalid(() => arena.computeBenchmark(0.5, 1, null, 'local'), '`started_ms`: must be an integer from -9007199254740991 to 9007199254740991, got 0.5')
  assertInvalid(() => arena.computeBenchmark(0, 1, -3, 'local'), '`cost_tokens`: must be an integer from 0 to 9007199254740991, got -3')
  assertInvalid(() => arena.classifyLane(1, 'a', 'b', []), '`battle_type`: invalid type: integer `1`, expected a string')
  assertInvalid(() => arena.classifyLane('qa', 'a', 'b', 'm'), '`local_models`: invalid type: string "m", expected an array')
  assertInvalid(() => arena.nextLocalContestant([{ id: 'a', lane: 'local' }]), '`contestants[0]`: missing field `status`')
  assertInvalid(() => arena.nextLocalContestant([['a', 'local', 'queued']]), '`contestants[0]`: must be an object, got an array')
  assertInvalid(() => arena.buildCrossExamPrompt('p', [], 'a', ['a', 'm1'], 'c', 'm'), '`proposed_winner`: must be an object, got an array')
  assertInvalid(() => arena.sanitizeSlug(undefined), '`text`: invalid type: null, expected a string')
})

test('row keys may be camelCase or the core\'s snake_case', () => {
  assert.deepEqual(
    arena.reconcileContestants([{ id: 'a', task_id: 't1', status: 'running' }, { id: 'b', taskId: 't1', status: 'running' }], { t1: 'completed' }),
    [{ id: 'a', action: 'mark-done' }, { id: 'b', action: 'mark-done' }],
  )
  const digest = { identity: 'a', model: 'm', digest: 'd', benchmark_line: 'B-LINE' }
  assert.ok(arena.buildJudgePrompt('p', [digest]).user.includes('B-LINE'))
  assert.equal(arena.dispatchNow([{ id: 'x', lane: 'local', status: 'queued' }], { local_capacity: 0 }).length, 0)
})
