import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { setTimeout as sleep } from 'node:timers/promises'
import { rejectsCode, unionOf } from './helpers.mjs'

// Flow runs end to end on real parts: a real SQLite store in a temporary
// data dir, scripted agents (in-process), real `sh` processes for command
// steps, and JS functions (sync and async) for code steps, called by the
// engine's driver on the JS thread.
const { Rig, names } = createRequire(import.meta.url)('../index.js')

const AGENTS = {
  writer: { kind: 'scripted', script: [{ text: 'Use leased claims so a dead worker task comes back.' }] },
}

const dirs = []
function tmp() {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'coderig-runs-')))
  dirs.push(dir)
  return dir
}
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

async function collect(iterable) {
  const out = []
  for await (const e of iterable) out.push(e)
  return out
}

/** Iterates `events` until `predicate` holds for one (returned); fails if they end first. */
async function until(events, predicate) {
  for (;;) {
    const { value, done } = await events.next()
    assert.equal(done, false, 'the events ended before the awaited one')
    if (predicate(value)) return value
  }
}

/** Polls `run.info()` until `predicate(view)` holds (no time is asserted). */
async function poll(run, predicate) {
  for (;;) {
    const view = await run.info()
    if (predicate(view)) return view
    await sleep(20)
  }
}

/**
 * Resolves once no process has `pid` (polled: a kill and the reaping of
 * the killed process are asynchronous; a process that lives on times the
 * test out).
 */
async function gone(pid) {
  for (;;) {
    try {
      process.kill(pid, 0)
    } catch (e) {
      assert.equal(e.code, 'ESRCH')
      return
    }
    await sleep(20)
  }
}

const step = (view, id) => {
  const s = view.steps.find((s) => s.id === id)
  assert.ok(s, `no step ${id} in ${JSON.stringify(view)}`)
  return s
}

/** The fields of `interface name` in index.d.ts. */
function interfaceFields(dts, name) {
  const m = dts.match(new RegExp(`export interface ${name} \\{([\\s\\S]*?)\\n\\}`))
  assert.ok(m, `interface ${name} in index.d.ts`)
  return new Set([...m[1].matchAll(/^ {2}(\w+)\??:/gm)].map((x) => x[1]))
}

/** The fields the variants of `RunSpec.steps` declare, in index.d.ts. */
function stepFields(dts) {
  const m = dts.match(/export interface RunSpec \{[\s\S]*?\n {2}steps: Array<([\s\S]*?)\n {2}\}>/)
  assert.ok(m, 'RunSpec.steps in index.d.ts')
  return new Set([...m[1].matchAll(/^ {4}(\w+)\??:/gm)].map((x) => x[1]))
}

let root, data, rig
before(() => {
  root = tmp()
  data = join(root, 'data')
  // The project roots confine command steps' cwd and writable paths
  // (none given: the current directory).
  rig = new Rig({ agents: AGENTS, dataDir: data, projectRoots: [root] })
})

// An agent drafts, a command counts the draft's words, a sync JS function
// judges the count and an async one reads the draft and the input.
const DRAFT_FLOW = {
  name: 'draft-and-check',
  steps: [
    { id: 'draft', kind: 'agent', agent: 'writer', prompt: 'Explain how {{ input.topic }} survives a crash.' },
    { id: 'word-count', kind: 'command', deps: ['draft'], shell: 'printf %s "$DRAFT" | wc -w', env: { DRAFT: '{{ results.draft }}' } },
    { id: 'judge', kind: 'code', deps: ['word-count'] },
    { id: 'shout', kind: 'code', deps: ['draft'] },
  ],
  report: 'Draft: {{ results.draft }}\nWords: {{ results["word-count"] | trim }} ({{ results.judge.words }} judged)',
}

describe('a run of agent, command and code steps', () => {
  let first // { run, view, events, contexts }

  test('completes with each step\'s output, the report and the artifacts', async () => {
    const contexts = {}
    const run = await rig.runFlow(DRAFT_FLOW, { topic: 'a job queue' }, {
      code: {
        judge: (ctx) => {
          contexts.judge = ctx
          const words = Number(ctx.results['word-count'].trim())
          return { words, short: words <= 20 }
        },
        shout: async (ctx) => {
          contexts.shout = ctx
          await sleep(5)
          return { upper: ctx.results.draft.toUpperCase(), topic: ctx.input.topic }
        },
      },
    })
    assert.match(run.id, /^[0-9a-f]{32}$/)
    const live = collect(run.events())
    const view = await run.wait()
    const events = await live
    first = { run, view, events, contexts }

    assert.equal(view.status, 'completed', JSON.stringify(view))
    assert.equal(view.name, 'draft-and-check')
    assert.deepEqual(view.input, { topic: 'a job queue' })
    assert.deepEqual(view.steps.map((s) => s.id), ['draft', 'word-count', 'judge', 'shout'])
    for (const s of view.steps) {
      assert.equal(s.status, 'done', JSON.stringify(s))
      assert.equal(s.attempt, 1)
      assert.equal(s.error, null)
    }
    const draft = 'Use leased claims so a dead worker task comes back.'
    assert.equal(step(view, 'draft').output, draft)
    assert.equal(step(view, 'word-count').output.trim(), '10')
    assert.equal(step(view, 'word-count').exit_code, 0)
    assert.deepEqual(step(view, 'judge').output, { words: 10, short: true })
    assert.deepEqual(step(view, 'shout').output, { upper: draft.toUpperCase(), topic: 'a job queue' })
    assert.equal(view.report, `Draft: ${draft}\nWords: 10 (10 judged)`)

    // A code step sees its own dependencies only, with their states.
    assert.deepEqual(Object.keys(contexts.judge).sort(), ['input', 'iteration', 'results', 'steps'])
    assert.deepEqual(Object.keys(contexts.judge.results), ['word-count'])
    assert.equal(contexts.judge.steps['word-count'].status, 'done')
    assert.equal(contexts.judge.iteration, 0)
    assert.deepEqual(contexts.shout.input, { topic: 'a job queue' })
    assert.deepEqual(Object.keys(contexts.shout.results), ['draft'])

    // Artifacts under <dataDir>/runs/<id>/.
    const dir = join(data, 'runs', run.id)
    assert.equal(readFileSync(join(dir, 'word-count', 'output.txt'), 'utf8'), step(view, 'word-count').output)
    assert.equal(readFileSync(join(dir, 'draft', 'output.txt'), 'utf8'), draft)
    assert.equal(readFileSync(join(dir, 'report.md'), 'utf8'), view.report)
    assert.deepEqual(await run.info(), view)
  })

  test('events() tell the run in order, and a finished run\'s events() is its history', async () => {
    const { run, events } = first
    const stored = events.filter((e) => e.type !== 'agent_output')
    assert.deepEqual(stored[0], { ...stored[0], type: 'run_updated', run_id: run.id, status: 'running' })
    const last = stored.at(-1)
    assert.equal(last.type, 'run_updated')
    assert.equal(last.status, 'completed')
    for (const e of events) assert.equal(e.run_id, run.id, JSON.stringify(e))
    for (const e of stored) {
      assert.equal(typeof e.seq, 'number', JSON.stringify(e))
      assert.equal(typeof e.epoch, 'string')
    }
    const seqs = stored.map((e) => e.seq)
    assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), 'stored events in seq order')
    assert.equal(new Set(seqs).size, seqs.length, 'each stored event once')
    // Each step: running, then done, attempt 1; a step starts only after
    // its dependencies are done.
    const updates = stored.filter((e) => e.type === 'step_updated')
    for (const id of ['draft', 'word-count', 'judge', 'shout']) {
      const own = updates.filter((e) => e.step_id === id)
      assert.deepEqual(own.map((e) => [e.status, e.attempt]), [['running', 1], ['done', 1]], id)
    }
    const at = (id, status) => updates.findIndex((e) => e.step_id === id && e.status === status)
    assert.ok(at('draft', 'done') < at('word-count', 'running'))
    assert.ok(at('word-count', 'done') < at('judge', 'running'))
    assert.ok(at('draft', 'done') < at('shout', 'running'))
    assert.ok(at('judge', 'done') < stored.length - 1, 'the run ends after its steps')
    for (const e of events.filter((e) => e.type === 'agent_output')) {
      assert.equal(e.seq, undefined)
      assert.equal(e.step_id, 'draft')
    }
    assert.deepEqual(await collect(run.events()), stored)
  })

  test('rig.run and rig.runs find it; unknown ids and bad filters are refused', async () => {
    const again = await rig.run(first.run.id)
    assert.equal(again.id, first.run.id)
    assert.deepEqual(await again.info(), first.view)
    const page = await rig.runs({ status: 'completed' })
    const summary = page.runs.find((r) => r.id === first.run.id)
    assert.deepEqual(summary, {
      id: first.run.id,
      name: 'draft-and-check',
      status: 'completed',
      error: null,
      created_at: first.view.created_at,
      updated_at: first.view.updated_at,
    })
    assert.ok(page.runs.every((r) => r.status === 'completed'))
    assert.ok('next_cursor' in page)
    const one = await rig.runs({ limit: 1 })
    assert.equal(one.runs.length, 1)
    await rejectsCode(rig.run('no-such-run'), 'NOT_FOUND_ID')
    await rejectsCode(rig.runs({ status: 'finished' }), 'INVALID_INPUT', { details: { path: 'status' } })
    await rejectsCode(rig.runs({ colour: 'red' }), 'INVALID_INPUT')
    await rejectsCode(first.run.cancel(), 'CONFLICT')
  })

  test('the views and events hold only the fields index.d.ts declares', () => {
    const dts = readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8')
    const { view, events } = first
    for (const key of Object.keys(view)) assert.ok(interfaceFields(dts, 'RunView').has(key), `RunView.${key}`)
    for (const s of view.steps) {
      for (const key of Object.keys(s)) assert.ok(interfaceFields(dts, 'StepView').has(key), `StepView.${key}`)
    }
    for (const key of Object.keys(view.spec)) assert.ok(interfaceFields(dts, 'RunSpec').has(key), `RunSpec.${key}`)
    for (const s of view.spec.steps) {
      for (const key of Object.keys(s)) assert.ok(stepFields(dts).has(key), `RunStepSpec.${key}`)
    }
    const union = dts.match(/export type RunEvent =([\s\S]*?)\n\n/)
    assert.ok(union, 'type RunEvent in index.d.ts')
    assert.deepEqual([...union[1].matchAll(/\{ type: '(\w+)'/g)].map((m) => m[1]), ['run_updated', 'step_updated', 'agent_output', 'task_rescued'])
    for (const e of events) assert.ok(['run_updated', 'step_updated', 'agent_output', 'task_rescued'].includes(e.type))
    assert.match(dts, /runFlow\(spec: RunSpec \| string/)
    // The statuses: the core's step statuses and skip reasons, the run
    // statuses of coderig::event::RunStatus.
    assert.deepEqual(unionOf(dts, 'StepView', 'status'), names().step_status)
    assert.deepEqual(unionOf(dts, 'StepView', 'skip_reason'), names().skip_reason)
    assert.deepEqual(unionOf(dts, 'RunView', 'status'), ['running', 'waiting', 'completed', 'failed', 'cancelled'])
    assert.deepEqual(unionOf(dts, 'RunFilter', 'status'), unionOf(dts, 'RunView', 'status'))
    assert.ok(unionOf(dts, 'RunView', 'status').includes(view.status))
  })
})

describe('code steps', () => {
  test('a function that throws twice then succeeds is retried by the step\'s policy', async () => {
    let calls = 0
    const run = await rig.runFlow(
      {
        steps: [
          { id: 'flaky', kind: 'code', retry: { max_attempts: 3, initial: '10ms', max: '20ms' } },
          { id: 'after', kind: 'code', deps: ['flaky'] },
        ],
      },
      null,
      {
        code: {
          flaky: (ctx) => {
            calls += 1
            // A synchronous throw, then an async rejection, then a value.
            if (calls === 1) throw new Error('flaky 1')
            if (calls === 2) return Promise.reject(new TypeError('flaky 2'))
            return `ok after ${calls}`
          },
          after: async (ctx) => ctx.results.flaky.toUpperCase(),
        },
      },
    )
    const view = await run.wait()
    assert.equal(view.status, 'completed', JSON.stringify(view))
    assert.equal(calls, 3)
    const flaky = step(view, 'flaky')
    assert.equal(flaky.status, 'done')
    assert.equal(flaky.attempt, 3)
    assert.equal(flaky.output, 'ok after 3')
    assert.deepEqual(flaky.attempts.map((a) => [a.attempt, a.outcome, a.error?.message]), [
      [1, 'failed', 'flaky 1'],
      [2, 'failed', 'flaky 2'],
      [3, 'done', undefined],
    ])
    assert.equal(flaky.attempts[0].error.kind, 'agent')
    assert.equal(flaky.attempts[0].error.exception, 'Error')
    assert.equal(flaky.attempts[1].error.exception, 'TypeError')
    // The JS stack, as Python reports its traceback.
    assert.match(flaky.attempts[0].error.traceback, /^Error: flaky 1\n\s+at /)
    assert.equal(step(view, 'after').output, 'OK AFTER 3')
  })

  test('a failing function fails the run with its message; a rethrown coderig error keeps its kind', async () => {
    const run = await rig.runFlow(
      {
        steps: [
          { id: 'lookup', kind: 'code' },
          { id: 'boom', kind: 'code' },
          { id: 'not-json', kind: 'code' },
          { id: 'never', kind: 'code', deps: ['boom'] },
        ],
      },
      {},
      {
        code: {
          // A rejected call of the addon itself, rethrown.
          lookup: async () => (await rig.run('no-such-run')).id,
          boom: () => {
            throw 'plain string'
          },
          'not-json': () => ({ f: () => 1 }),
          never: () => 'unreachable',
        },
      },
    )
    const view = await run.wait()
    assert.equal(view.status, 'failed', JSON.stringify(view))
    const lookup = step(view, 'lookup')
    assert.equal(lookup.status, 'failed')
    assert.equal(lookup.error.kind, 'not_found_id')
    assert.equal(lookup.error.code, 'NOT_FOUND_ID')
    assert.equal(lookup.error.id, 'no-such-run')
    assert.equal(step(view, 'boom').error.message, 'plain string')
    const notJson = step(view, 'not-json').error
    assert.equal(notJson.kind, 'invalid_input')
    assert.equal(notJson.path, 'result.f')
    assert.equal(step(view, 'never').status, 'skipped')
    assert.equal(step(view, 'never').skip_reason, 'upstream_failed')
  })

  test('a switch routes on a code step\'s result', async () => {
    const spec = {
      steps: [
        { id: 'check', kind: 'code' },
        { id: 'route', kind: 'switch', deps: ['check'], cases: [{ label: 'green', condition: 'results["check"].green', steps: ['ship'] }], default: ['fix'] },
        { id: 'ship', kind: 'command', deps: ['route'], argv: ['echo', 'shipped'] },
        { id: 'fix', kind: 'command', deps: ['route'], argv: ['echo', 'fixing'] },
      ],
      report: '{{ results.route }}',
    }
    const code = { check: (ctx) => ({ green: ctx.input.tests === 'pass' }) }
    const green = await (await rig.runFlow(spec, { tests: 'pass' }, { code })).wait()
    assert.equal(green.status, 'completed', JSON.stringify(green))
    assert.deepEqual(step(green, 'route').switch, { chosen: 'green', excluded: ['fix'] })
    assert.equal(step(green, 'route').output, 'green')
    assert.equal(step(green, 'ship').output, 'shipped\n')
    assert.equal(step(green, 'fix').status, 'skipped')
    assert.equal(step(green, 'fix').skip_reason, 'branch_not_taken')
    assert.equal(green.report, 'green')

    const red = await (await rig.runFlow(spec, { tests: 'fail' }, { code })).wait()
    assert.equal(red.status, 'completed', JSON.stringify(red))
    assert.equal(step(red, 'route').switch.chosen, null)
    assert.equal(step(red, 'fix').output, 'fixing\n')
    assert.equal(step(red, 'ship').skip_reason, 'branch_not_taken')
  })
})

describe('approvals', () => {
  const SPEC = {
    steps: [
      { id: 'plan', kind: 'code' },
      { id: 'ok', kind: 'approval', deps: ['plan'], message: 'Ship {{ results.plan }}?' },
      { id: 'ship', kind: 'command', deps: ['ok'], argv: ['echo', 'shipped'] },
    ],
  }
  const code = { plan: () => 'v2' }

  test('the run waits; approve completes it with the decision recorded', async () => {
    const run = await rig.runFlow(SPEC, {}, { code })
    const events = run.events()[Symbol.asyncIterator]()
    await until(events, (e) => e.type === 'run_updated' && e.status === 'waiting')
    const waiting = await run.info()
    assert.equal(waiting.status, 'waiting')
    assert.equal(step(waiting, 'ok').status, 'waiting')
    assert.equal(step(waiting, 'ok').message, 'Ship v2?')
    assert.equal(step(waiting, 'ship').status, 'pending')

    await rejectsCode(run.approve('ship'), 'CONFLICT')
    await rejectsCode(run.approve('no-such-step'), 'NOT_FOUND_ID')
    await rejectsCode(run.approve('ok', { who: 'ana' }), 'INVALID_INPUT')
    const decided = await run.approve('ok', { by: 'ana', comment: 'lgtm' })
    assert.equal(decided.id, 'ok')
    assert.equal(decided.status, 'done')
    assert.equal(decided.approval.approved, true)
    assert.equal(decided.approval.by, 'ana')
    assert.equal(decided.approval.comment, 'lgtm')
    await rejectsCode(run.approve('ok'), 'CONFLICT', { details: { status: 'done' } })

    const view = await run.wait()
    assert.equal(view.status, 'completed', JSON.stringify(view))
    assert.equal(step(view, 'ship').output, 'shipped\n')
    const rest = []
    for (;;) {
      const { value, done } = await events.next()
      if (done) break
      rest.push(value)
    }
    assert.deepEqual(rest.at(-1), { ...rest.at(-1), type: 'run_updated', status: 'completed' })
    assert.ok(rest.some((e) => e.type === 'step_updated' && e.step_id === 'ok' && e.status === 'done'))
  })

  test('reject fails the step and its dependents are skipped', async () => {
    const run = await rig.runFlow(SPEC, {}, { code })
    await poll(run, (v) => v.status === 'waiting')
    const rejected = await run.reject('ok', { by: 'bo', comment: 'not yet' })
    assert.equal(rejected.status, 'failed')
    assert.equal(rejected.approval.approved, false)
    assert.match(rejected.error.message, /rejected by bo: not yet/)
    const view = await run.wait()
    assert.equal(view.status, 'failed')
    assert.equal(step(view, 'ship').skip_reason, 'upstream_failed')
  })

  test('wait(timeoutMs) rejects with a TimeoutError while the run waits', async () => {
    const run = await rig.runFlow(SPEC, {}, { code })
    await poll(run, (v) => v.status === 'waiting')
    const error = await rejectsCode(run.wait(20), 'UNAVAILABLE', { details: { reason: 'timeout', run_id: run.id, status: 'waiting', timeout_ms: 20 } })
    assert.equal(error.name, 'TimeoutError')
    assert.ok(error instanceof Error)
    await rejectsCode(run.wait(-1), 'INVALID_INPUT', { details: { path: 'timeoutMs' } })
    await rejectsCode(run.wait('soon'), 'INVALID_INPUT', { details: { path: 'timeoutMs' } })
    const cancelled = await run.cancel()
    assert.equal(cancelled.status, 'cancelled')
    assert.equal((await run.wait(1000)).status, 'cancelled')
  })
})

describe('cancel', () => {
  test('stops a hung command: its process is killed and its step cancelled', async () => {
    const pidfile = join(root, 'hung.pid')
    const run = await rig.runFlow(
      {
        steps: [
          // Sandbox off: the test reads the command's host pid, written
          // outside its cwd (a sandboxed command's is its PID namespace's).
          { id: 'hang', kind: 'command', shell: 'echo $$ > "$PIDFILE"; exec sleep 600', env: { PIDFILE: pidfile }, sandbox: { mode: 'off' } },
          { id: 'next', kind: 'command', deps: ['hang'], argv: ['true'] },
        ],
      },
    )
    const events = collect(run.events())
    await poll(run, (v) => step(v, 'hang').status === 'running' && existsSync(pidfile) && readFileSync(pidfile, 'utf8').endsWith('\n'))
    const pid = Number(readFileSync(pidfile, 'utf8'))
    assert.ok(pid > 0)
    process.kill(pid, 0) // alive now

    const cancelled = await run.cancel()
    assert.equal(cancelled.status, 'cancelled')
    // The one end rule: the stream ends right after the run's final
    // status, and every step's final update comes before it.
    const history = await events
    assert.deepEqual(history.at(-1), { ...history.at(-1), type: 'run_updated', status: 'cancelled' })
    const finals = history.slice(0, -1).filter((e) => e.type === 'step_updated' && e.status === 'cancelled')
    assert.deepEqual(finals.map((e) => e.step_id).sort(), ['hang', 'next'])
    assert.equal(history.filter((e) => e.type === 'run_updated' && e.status === 'cancelled').length, 1)
    // So does what cancel() returned: no step is left live.
    assert.deepEqual(cancelled.steps.map((s) => [s.id, s.status]), [['hang', 'cancelled'], ['next', 'cancelled']])
    await gone(pid)
    assert.equal((await run.wait()).status, 'cancelled')
    await rejectsCode(run.cancel(), 'CONFLICT')
  })
})

describe('close', () => {
  test('stops what the rig runs, leaves the run in the store, and refuses more', async () => {
    const dir = tmp()
    const pidfile = join(dir, 'hung.pid')
    const closing = new Rig({ dataDir: join(dir, 'data'), projectRoots: [dir] })
    const spec = { steps: [{ id: 'hang', kind: 'command', shell: 'echo $$ > "$PIDFILE"; exec sleep 600', env: { PIDFILE: pidfile }, sandbox: { mode: 'off' } }] }
    const run = await closing.runFlow(spec)
    await poll(run, (v) => step(v, 'hang').status === 'running' && existsSync(pidfile) && readFileSync(pidfile, 'utf8').endsWith('\n'))
    const pid = Number(readFileSync(pidfile, 'utf8'))
    await closing.close()
    await gone(pid)
    await rejectsCode(closing.runFlow(spec), 'UNAVAILABLE')
    // Following the run on the closed rig: its history, then the one JS
    // error of the core's refusal (code, kind, details), as every Promise.
    const seen = []
    await rejectsCode((async () => { for await (const e of run.events()) seen.push(e.type) })(), 'UNAVAILABLE')
    assert.equal(seen[0], 'run_updated')
    await closing.close() // twice: nothing happens
    // The next rig on the store finds the run where the closed one left it.
    const again = new Rig({ dataDir: join(dir, 'data'), projectRoots: [dir] })
    assert.equal((await (await again.run(run.id)).info()).status, 'running')
    await again.close(1000)
    assert.throws(() => again.close(-1), /graceMs/)
  })
})

describe('specs', () => {
  test('YAML text, JSON text and a file path are specs too', async () => {
    const yaml = 'name: from-yaml\nsteps:\n  - id: hello\n    kind: command\n    argv: [echo, "{{ input.who }}"]\n'
    const fromYaml = await (await rig.runFlow(yaml, { who: 'yaml' })).wait()
    assert.equal(fromYaml.name, 'from-yaml')
    assert.equal(step(fromYaml, 'hello').output, 'yaml\n')

    const json = JSON.stringify({ steps: [{ id: 'hello', kind: 'command', argv: ['echo', 'json'] }] })
    assert.equal(step(await (await rig.runFlow(json)).wait(), 'hello').output, 'json\n')

    const file = join(root, 'hello.yaml')
    writeFileSync(file, yaml.replace('from-yaml', 'from-file'))
    const fromFile = await (await rig.runFlow(file, { who: 'file' })).wait()
    assert.equal(fromFile.name, 'from-file')
    assert.equal(step(fromFile, 'hello').output, 'file\n')
  })

  test('a command step\'s sandbox is read by the core: what it widens applies, the attempt records it', async () => {
    const work = join(root, 'sandboxed')
    const extra = join(root, 'extra')
    execFileSync('mkdir', ['-p', work, extra])
    const run = await rig.runFlow({
      steps: [{
        id: 'w',
        kind: 'command',
        cwd: work,
        shell: `echo in > in.txt && echo out > ${extra}/out.txt`,
        sandbox: { network: 'deny', writable: [extra], limits: { open_files: 64 } },
      }],
    })
    const view = await run.wait()
    assert.equal(view.status, 'completed', JSON.stringify(view))
    const [attempt] = step(view, 'w').attempts
    assert.equal(attempt.sandbox.mode, 'enforce')
    assert.equal(attempt.sandbox.network, 'deny')
    assert.deepEqual(attempt.sandbox.limits, { open_files: 64 })
    assert.ok(attempt.sandbox.writable.includes(extra), JSON.stringify(attempt.sandbox))
    assert.equal(readFileSync(join(extra, 'out.txt'), 'utf8'), 'out\n')
    assert.deepEqual(view.spec.steps[0].sandbox.writable, [extra])
  })

  test('a bad spec, input or code option rejects with INVALID_INPUT and its problems; nothing is created', async () => {
    const fresh = tmp()
    const r = new Rig({ agents: AGENTS, dataDir: join(fresh, 'data') })
    const code = (id) => ({ id, kind: 'code' })
    const fn = () => 1
    // [spec, input, options, the (first) problem's path, whether the
    // core lists `problems` (its checks of a spec and of what a run
    // needs); the face's own refusals of an argument name its path only.
    const cases = [
      [{ steps: [{ ...code('a'), colour: 'red' }] }, null, { code: { a: fn } }, 'steps[0].colour', true],
      [{ steps: [{ id: 'a', kind: 'command', argv: ['true'], deps: ['b'] }, { id: 'b', kind: 'command', argv: ['true'], deps: ['a'] }] }, null, null, 'steps', true],
      [{ steps: [{ id: 'a', kind: 'command', argv: ['true'], deps: ['ghost'] }] }, null, null, 'steps[0].deps[0]', true],
      [{ steps: [{ id: 'a', kind: 'command', argv: ['true'], sandbox: { network: 'sometimes' } }] }, null, null, 'steps[0].sandbox.network', true],
      [{ steps: [{ id: 'a', kind: 'command', argv: ['true'], sandbox: { writable: ['rel/dir'] } }] }, null, null, 'steps[0].sandbox.writable[0]', true],
      [{ steps: [{ id: 'a', kind: 'command', argv: ['true'], sandbox: { writable: ['/no/such/dir'] } }] }, null, null, 'steps[0].sandbox.writable[0]', true],
      [{ steps: [{ id: 'a', kind: 'command', argv: ['true'], when: 'input.(' }] }, null, null, 'steps[0].when', true],
      [{ steps: [{ id: 'a', kind: 'command', argv: ['true'] }, { id: 'a', kind: 'command', argv: ['true'] }] }, null, null, 'steps[1].id', true],
      [{ steps: [{ id: 'a', kind: 'command', argv: ['echo', '{{ results.a'] }] }, null, null, 'steps[0].argv[1]', true],
      [{ steps: [{ id: 'a', kind: 'agent', agent: 'nobody', prompt: 'hi' }] }, null, null, 'steps[0].agent', true],
      [{ steps: [code('a')] }, null, null, 'steps[0]', true],
      [{ steps: [code('a')] }, null, { code: { a: fn, b: fn } }, 'code.b', true],
      [{ steps: [code('a')] }, null, { code: { a: 'not a function' } }, 'code.a', false],
      [{ steps: [code('a')] }, null, { code: [fn] }, 'code', false],
      [{ steps: [code('a')] }, null, { code: { a: fn }, retries: 2 }, 'retries', false],
      [{ steps: [code('a')] }, null, 'options', 'options', false],
      [{ steps: [code('a')] }, 'not an object', { code: { a: fn } }, 'input', false],
      [{ steps: [code('a')] }, { n: NaN }, { code: { a: fn } }, 'input.n', false],
      ['steps:\n  - id: a\n    kind: command\n    argv: [true]\n    colour: red\n', null, null, 'steps[0].colour', true],
      ['{"steps": [', null, null, '.', false],
      [null, null, null, '.', true],
      [undefined, null, null, '.', true],
      [[], null, null, '.', true],
      [42, null, null, '.', true],
    ]
    for (const [spec, input, options, path, listed] of cases) {
      const error = await rejectsCode(r.runFlow(spec, input, options), 'INVALID_INPUT')
      assert.equal(error.details.path, path, `${error.message} ${JSON.stringify(error.details)}`)
      assert.equal(error.path, path, 'details are own properties too')
      const problems = error.details.problems ?? []
      assert.equal(problems.length > 0, listed, `${path}: ${JSON.stringify(error.details)}`)
      if (listed) assert.equal(problems[0].path, path)
      for (const p of problems) {
        assert.equal(typeof p.path, 'string')
        assert.ok(error.message.includes(p.message), `the message names ${p.message}`)
      }
    }
    // Every problem at once, each with its path.
    const many = await rejectsCode(
      r.runFlow({ steps: [{ id: 'a', kind: 'command', argv: ['true'], colour: 1 }, { id: 'b', kind: 'teleport' }] }),
      'INVALID_INPUT',
    )
    assert.deepEqual(many.details.problems.map((p) => p.path), ['steps[0].colour', 'steps[1].kind'])
    // A file: a missing one is IO, a bad one names the file.
    await rejectsCode(r.runFlow(join(fresh, 'missing.yaml')), 'IO')
    const bad = join(fresh, 'bad.yml')
    writeFileSync(bad, 'steps: 3\n')
    await rejectsCode(r.runFlow(bad), 'INVALID_INPUT', { details: { file: bad, path: 'steps' } })
    assert.deepEqual((await r.runs()).runs, [], 'no run was created')
  })
})

describe('process exit', () => {
  const addon = new URL('../index.js', import.meta.url).pathname

  test('a waiting run with JS code steps does not keep Node alive', () => {
    const dataDir = join(tmp(), 'data')
    // The run is left waiting on its approval; its code step's function
    // is held weakly, so the script ends (a strong hold would hang it, and
    // the test with it).
    const script = `
      const { Rig } = require(${JSON.stringify(addon)})
      const rig = new Rig({ dataDir: ${JSON.stringify(dataDir)} })
      ;(async () => {
        const run = await rig.runFlow({ steps: [
          { id: 'plan', kind: 'code' },
          { id: 'ok', kind: 'approval', deps: ['plan'] },
          { id: 'late', kind: 'code', deps: ['ok'] },
        ] }, {}, { code: { plan: () => 'p', late: () => 'l' } })
        for await (const e of run.events()) if (e.type === 'run_updated' && e.status === 'waiting') break
        console.log(run.id)
      })()
    `
    const id = execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).trim()
    assert.match(id, /^[0-9a-f]{32}$/)
  })

  test('process.exit() shuts the engine down: a hung command is stopped, the run left to lease rescue', async () => {
    const fresh = tmp()
    const dataDir = join(fresh, 'data')
    const pidfile = join(fresh, 'hung.pid')
    const script = `
      const { existsSync, readFileSync } = require('node:fs')
      const { Rig } = require(${JSON.stringify(addon)})
      const rig = new Rig({ dataDir: ${JSON.stringify(dataDir)} })
      ;(async () => {
        const run = await rig.runFlow({ steps: [
          { id: 'hang', kind: 'command', shell: 'echo $$ > "$PIDFILE"; exec sleep 600', env: { PIDFILE: ${JSON.stringify(pidfile)} }, sandbox: { mode: 'off' } },
        ] })
        while (!(existsSync(${JSON.stringify(pidfile)}) && readFileSync(${JSON.stringify(pidfile)}, 'utf8').endsWith('\\n'))) {
          await new Promise((r) => setTimeout(r, 20))
        }
        console.log(run.id)
        process.exit(0)
      })()
    `
    const id = execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).trim()
    const pid = Number(readFileSync(pidfile, 'utf8'))
    // The shutdown killed the step's process group at the exit.
    await gone(pid)
    const again = new Rig({ dataDir })
    const run = await again.run(id)
    const view = await run.info()
    assert.equal(view.status, 'running', 'a shutdown does not end the run')
    assert.equal((await run.cancel()).status, 'cancelled')
  })
})
