import assert from 'node:assert/strict'
import { test } from 'node:test'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

// Names in one place: names() is the core's lists (named_enum! NAMES), and
// every string union of the generated index.d.ts must be one of them,
// member for member, in the core's order, so the TypeScript types cannot
// drift from what the core accepts and returns.
const require = createRequire(import.meta.url)
const coderig = require('../index.js')
const names = coderig.names()

const KEYS = [
  'tier', 'match_kind', 'violation_kind', 'trigger_rule', 'step_kind', 'skip_reason', 'step_status',
  'resume_action', 'failure_kind', 'step_outcome', 'flow_error', 'task_state', 'battle_type', 'lane',
  'contestant_status', 'contestant_action', 'evidence_tier', 'winner_source', 'verdict', 'stream_format', 'cli_preset', 'access', 'sandbox_mode', 'sandbox_enforcer', 'agent_kind', 'agent_error_kind', 'agent_event_type',
  'error_class', 'error_kind', 'error_code',
]

/** Unions that are not a core list, each with why. */
const NOT_A_LIST = new Map([
  [JSON.stringify(['append', 'prepend']), 'the insert ops of hashline edits (replace has its own shape)'],
  [JSON.stringify(KEYS), 'the keys of names() itself'],
  // The core has no named list for these three yet (BattleStatus and
  // OutputKind are named_enum!s outside names::LISTS; a cross-examination's
  // status is a store owner status); battle.test.mjs checks real values
  // against the battle statuses.
  [JSON.stringify(['running', 'judging', 'completed', 'failed', 'cancelled']), 'a battle\'s status (coderig::event::BattleStatus)'],
  [JSON.stringify(['pending', 'running', 'done', 'error']), 'a cross-examination\'s status (CrossExamView.status)'],
  [JSON.stringify(['text', 'reasoning', 'tool_call', 'tool_result']), 'what agent_output carries (coderig::event::OutputKind)'],
  // The flow runtime's names outside names::LISTS (RunStatus and RetryOn
  // are named_enum!s; the runtime step kinds add `command` to StepKind; an
  // attempt's outcome is a string of the engine's AttemptRecord);
  // flow_runtime.test.mjs checks real values against them.
  [JSON.stringify(['running', 'waiting', 'completed', 'failed', 'cancelled']), 'a run\'s status (coderig::event::RunStatus)'],
  [JSON.stringify(['agent', 'command', 'code', 'approval', 'switch', 'do_while']), 'a runtime flow step\'s kind (FlowSpec StepAction::kind)'],
  [JSON.stringify(['failure', 'timeout']), 'the endings a retry policy retries (coderig::flow::runspec::RetryOn)'],
  [JSON.stringify(['done', 'failed', 'timed_out', 'cancelled', 'interrupted']), 'how a step attempt ended (AttemptRecord.outcome)'],
])

/**
 * Every union of string literals in `dts`, as lists of the literals:
 * comments dropped, and the napi CLI's own `__napi*` declarations (which
 * name its build targets, not the core's values).
 */
function unions(dts) {
  const code = dts
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '')
    .replace(/^.*\b__napi\w*.*$/gm, '')
  const found = []
  for (const match of code.matchAll(/'[^']*'(?:\s*\|\s*(?:'[^']*'|null|undefined))+/g)) {
    const literals = [...match[0].matchAll(/'([^']*)'/g)].map((m) => m[1])
    if (literals.length >= 2) found.push(literals)
  }
  return found
}

test('names() has every key, each a non-empty list of distinct snake_case names', () => {
  assert.deepEqual(Object.keys(names).sort(), [...KEYS].sort())
  for (const [key, list] of Object.entries(names)) {
    assert.ok(list.length > 0, key)
    assert.equal(new Set(list).size, list.length, `${key} has duplicates`)
    const shape = key === 'error_code' ? /^[A-Z][A-Z_]*$/ : /^[a-z][a-z_-]*$/
    for (const name of list) assert.match(name, shape, `${key}: ${name}`)
  }
  assert.deepEqual(names.error_code, names.error_kind.map((k) => k.toUpperCase()))
  // A fresh copy each call: mutating one does not reach the next.
  names.tier.push('bogus')
  assert.ok(!coderig.names().tier.includes('bogus'))
  names.tier.pop()
})

test('every string union of index.d.ts is one of the core\'s lists, in its order', () => {
  const dts = readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8')
  const found = unions(dts)
  assert.ok(found.length > 20, `only ${found.length} unions found: is index.d.ts generated?`)
  const lists = new Map(Object.entries(names).map(([key, list]) => [JSON.stringify(list), key]))
  const used = new Set()
  for (const literals of found) {
    const key = lists.get(JSON.stringify(literals))
    if (key !== undefined) {
      used.add(key)
      continue
    }
    assert.ok(NOT_A_LIST.has(JSON.stringify(literals)), `the union ${literals.map((l) => `'${l}'`).join(' | ')} is no core list; the core's lists are ${JSON.stringify(names)}`)
  }
  // The event types are the discriminants of the AgentEvent union.
  const events = dts.match(/export type AgentEvent =([\s\S]*?)\n\n/)
  assert.ok(events, 'type AgentEvent in index.d.ts')
  assert.deepEqual([...events[1].matchAll(/\{ type: '(\w+)'/g)].map((m) => m[1]), names.agent_event_type, 'the AgentEvent union')
  used.add('agent_event_type')
  // Every list a JS caller meets is typed somewhere (errors carry theirs as
  // `code` / `kind`, and a refused scheduler event its flow error name as
  // `details.reason`).
  // The pairwise verdict stays inside the judge: no value a JS caller
  // meets holds one (a cross-examination's `verdict` is `identity/model`).
  const internal = ['verdict']
  const untyped = KEYS.filter((k) => !used.has(k) && !['error_kind', 'error_code', 'flow_error', ...internal].includes(k))
  assert.deepEqual(untyped, [], 'lists no TypeScript union names')
})

test('the unions the addon returns hold only the core\'s names', () => {
  const m = coderig.locate('a\n', 'a')
  assert.ok(names.match_kind.includes(m.kind))
  assert.ok(names.tier.includes(coderig.applyEdit('a\n', 'a', 'b').tier))
  assert.ok(names.lane.includes(coderig.arena.classifyLane('qa', 'a', 'b', [])))
  for (const status of names.step_status) {
    assert.ok(names.resume_action.includes(coderig.flow.reconcileResumeStep(status, 't', 'running', 0, 1)), status)
  }
  for (const status of names.contestant_status) {
    for (const state of names.task_state) {
      assert.ok(names.contestant_action.includes(coderig.arena.reconcileContestantResume(status, 't', state)))
    }
  }
})
