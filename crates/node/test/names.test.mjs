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

// The keys of names(), in the core's order: tests/schemas/names.json is the
// core's names::LISTS (its test face_views keeps it so).
const LISTS = JSON.parse(readFileSync(new URL('../../../tests/schemas/names.json', import.meta.url), 'utf8'))
const KEYS = LISTS.map(([key]) => key)

/** Unions that are not a core list, each with why. */
const NOT_A_LIST = new Map([
  [JSON.stringify(['append', 'prepend']), 'the insert ops of hashline edits (replace has its own shape)'],
  [JSON.stringify(KEYS), 'the keys of names() itself (NameList)'],
  [JSON.stringify(['local', 'cloud']), 'the lanes an agent or a contestant runs in (the driver lane is the run drivers\' own)'],
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
  for (const [key, list] of LISTS) assert.deepEqual(names[key], list, key)
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
  // The event types are the discriminants of the event unions: a turn's
  // (AgentEvent), and a battle's and a run's (agent_output in both).
  const tags = (type) => {
    const union = dts.match(new RegExp(`export type ${type} =([\\s\\S]*?)\\n\\n`))
    assert.ok(union, `type ${type} in index.d.ts`)
    return [...union[1].matchAll(/\{ type: '(\w+)'/g)].map((m) => m[1])
  }
  assert.deepEqual(tags('AgentEvent'), names.agent_event_type, 'the AgentEvent union')
  used.add('agent_event_type')
  assert.deepEqual([...new Set([...tags('BattleEvent'), ...tags('RunEvent')])].sort(), [...names.event_type].sort(),
    'the BattleEvent and RunEvent unions')
  used.add('event_type')
  // Every list a JS caller meets is typed somewhere (errors carry theirs as
  // `code` / `kind`, and a refused scheduler event its flow error name as
  // `details.reason`).
  // The pairwise verdict stays inside the judge: no value a JS caller
  // meets holds one (a cross-examination's `verdict` is `identity/model`).
  // A fallback entry's refusal names its reason in the error's details, as
  // the scheduler's flow errors do. A turn's stop_reason is any agent's
  // word (the native agent's are native_stop_reason). Each hashline edit
  // type has its op as a tag (`'replace'`; `'append' | 'prepend'`).
  const internal = ['verdict', 'native_stop_reason', 'hashline_op']
  const details = ['error_kind', 'error_code', 'flow_error', 'fallback_error_reason']
  const untyped = KEYS.filter((k) => !used.has(k) && ![...details, ...internal].includes(k))
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
