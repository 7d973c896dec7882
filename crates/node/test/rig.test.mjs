import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { rejectsCode, throwsCode } from './helpers.mjs'

// Rig, Turn and their events on real scripted agents: real turns on the
// addon's tokio runtime, real files in temporary work dirs, real
// coderig.toml files.
const { Rig } = createRequire(import.meta.url)('../index.js')

const dirs = []
function tmp() {
  const dir = mkdtempSync(join(tmpdir(), 'coderig-rig-'))
  dirs.push(dir)
  return dir
}
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

const AGENTS = {
  alice: {
    kind: 'scripted',
    models: ['m1'],
    script: [
      { reasoning: 'look first' },
      { text: 'writing fix.py' },
      { write: { path: 'fix.py', content: 'x = 1\n' } },
      { usage: { input: 10, output: 5 } },
      { text: ' and done' },
    ],
  },
  failer: { kind: 'scripted', script: [{ text: 'trying' }, { fail: { message: 'rate limit exceeded' } }] },
  hanger: { kind: 'scripted', lane: 'local', script: [{ text: 'started' }, { hang: true }] },
}
const rig = new Rig({ agents: AGENTS })

async function collect(turn) {
  const events = []
  for await (const event of turn.events()) events.push(event)
  return events
}

/** The next event of a running iterator (not the end). */
async function nextEvent(iterator) {
  const { value, done } = await iterator.next()
  assert.equal(done, false)
  return value
}

describe('runTurn', () => {
  test('streams the events in order, writes the file, and wait() resolves the outcome', async () => {
    const workdir = tmp()
    const turn = rig.runTurn('alice', 'm1', 'fix it', { workdir, access: 'edit' })
    assert.equal(turn.identity, 'alice')
    assert.equal(turn.model, 'm1')
    const events = await collect(turn)
    assert.deepEqual(events, [
      { type: 'session_started', session_id: events[0].session_id, model: 'm1' },
      { type: 'reasoning_delta', text: 'look first' },
      { type: 'text_delta', text: 'writing fix.py' },
      { type: 'tool_call', id: events[3].id, name: 'write', input: { path: 'fix.py', content: 'x = 1\n' } },
      { type: 'tool_result', id: events[3].id, ok: true, output: 'write fix.py: ok' },
      { type: 'usage', input: 10, output: 5, cache_read: 0, cache_write: 0, reasoning: 0 },
      { type: 'text_delta', text: ' and done' },
      { type: 'finished', stop_reason: 'end_turn', num_turns: 1 },
    ])
    assert.match(events[0].session_id, /^scripted-\d+$/)
    assert.equal(readFileSync(join(workdir, 'fix.py'), 'utf8'), 'x = 1\n')
    const outcome = await turn.wait()
    assert.equal(outcome.final_text, 'writing fix.py and done')
    assert.deepEqual(outcome.usage, { input: 10, output: 5, cache_read: 0, cache_write: 0, reasoning: 0 })
    assert.equal(outcome.session_id, events[0].session_id)
    assert.equal(outcome.model, 'm1')
    assert.equal(outcome.stop_reason, 'end_turn')
    assert.equal(outcome.num_turns, 1)
    assert.equal(typeof outcome.duration_ms, 'number')
    assert.equal(typeof outcome.ttft_ms, 'number')
    // Every call settles the same way; the events were all read.
    assert.deepEqual(await turn.wait(), outcome)
    assert.deepEqual(await collect(turn), [])
  })

  test('a read_only turn (the default) is refused the write, as a failed tool result', async () => {
    const workdir = tmp()
    const turn = rig.runTurn('alice', null, 'fix it', { workdir })
    assert.equal(turn.model, null)
    const events = await collect(turn)
    const result = events.find((e) => e.type === 'tool_result')
    assert.deepEqual(result, { type: 'tool_result', id: result.id, ok: false, output: 'write fix.py: refused in a read_only turn' })
    assert.equal(existsSync(join(workdir, 'fix.py')), false)
    assert.equal(events[0].model, undefined, 'no model: the key is absent, as the core serializes it')
    assert.equal((await turn.wait()).final_text, 'writing fix.py and done')
  })

  test('wait() without reading the events resolves the outcome', async () => {
    const turn = rig.runTurn('alice', 'm1', 'p', { workdir: tmp(), access: 'full', timeout: 30, idleTimeout: '10s', system: 'be brief', env: { A: 'b' } })
    assert.equal((await turn.wait()).final_text, 'writing fix.py and done')
  })

  test('a failing script rejects wait() with kind agent and the class in details', async () => {
    const turn = rig.runTurn('failer', null, 'p')
    const events = await collect(turn)
    assert.deepEqual(events.slice(1), [
      { type: 'text_delta', text: 'trying' },
      { type: 'error', message: 'rate limit exceeded', class: 'retry' },
    ])
    const error = await rejectsCode(turn.wait(), 'AGENT', {
      message: 'rate limit exceeded',
      details: { agent_error: 'provider', class: 'retry' },
      props: { agent_error: 'provider', class: 'retry' },
    })
    assert.deepEqual(Object.keys(error.details).sort(), ['agent_error', 'class'])
    // The rejection is the same on a second call.
    await rejectsCode(turn.wait(), 'AGENT', { details: { agent_error: 'provider' } })
  })

  test('a hang with idleTimeout 0.2 fails as idle', async () => {
    for (const idleTimeout of [0.2, '200ms']) {
      const started = Date.now()
      const turn = rig.runTurn('hanger', null, 'p', { idleTimeout })
      const events = await collect(turn)
      assert.deepEqual(events.map((e) => e.type), ['session_started', 'text_delta'])
      await rejectsCode(turn.wait(), 'AGENT', { details: { agent_error: 'idle', class: 'retry' } })
      const took = Date.now() - started
      assert.ok(took >= 150 && took < 5000, `idle after ${took} ms`)
    }
  })

  test('a hang with timeout 0.2 fails as timeout', async () => {
    const turn = rig.runTurn('hanger', null, 'p', { timeout: 0.2 })
    await rejectsCode(turn.wait(), 'AGENT', { details: { agent_error: 'timeout' } })
  })

  test('cancel() during a hang ends the turn as cancelled', async () => {
    const turn = rig.runTurn('hanger', null, 'p')
    const iterator = turn.events()[Symbol.asyncIterator]()
    assert.equal((await nextEvent(iterator)).type, 'session_started')
    assert.deepEqual(await nextEvent(iterator), { type: 'text_delta', text: 'started' })
    assert.equal(turn.cancelled, false)
    // The iterator is parked on the hung turn; cancel wakes it.
    const pending = iterator.next()
    turn.cancel()
    turn.cancel()
    assert.equal(turn.cancelled, true)
    assert.deepEqual(await pending, { value: undefined, done: true })
    await rejectsCode(turn.wait(), 'AGENT', { message: 'the turn was cancelled', details: { agent_error: 'cancelled', class: 'fatal' } })
  })

  test('breaking out of the loop leaves the turn running until cancel', async () => {
    const turn = rig.runTurn('hanger', null, 'p')
    for await (const event of turn.events()) {
      if (event.type === 'text_delta') break
    }
    turn.cancel()
    await rejectsCode(turn.wait(), 'AGENT', { details: { agent_error: 'cancelled' } })
  })

  test('bad arguments throw INVALID_INPUT naming them; an unknown identity NOT_FOUND_ID', () => {
    throwsCode(() => rig.runTurn('nobody', null, 'p'), 'NOT_FOUND_ID', {
      message: 'no agent "nobody"; configured: alice, failer, hanger',
      details: { what: 'agent', id: 'nobody', known: ['alice', 'failer', 'hanger'] },
    })
    // The options are the core's TurnOptions: the same messages and paths as Python's run_turn.
    throwsCode(() => rig.runTurn('alice', null, 'p', { access: 'root' }), 'INVALID_INPUT', {
      message: '`access`: unknown access level "root"; expected one of: read_only, edit, full',
      details: { path: 'access' },
    })
    throwsCode(() => rig.runTurn('alice', null, 'p', { idleTimeout: '5 parsecs' }), 'INVALID_INPUT', {
      message: '`idle_timeout`: bad duration "5 parsecs": expected a number of seconds or a number with a unit ("500ms", "90s", "20m", "2h")',
      details: { path: 'idle_timeout' },
    })
    throwsCode(() => rig.runTurn('alice', null, 'p', { idleTimeout: -1 }), 'INVALID_INPUT', { message: '`idle_timeout`: bad duration -1: expected a non-negative number of seconds' })
    throwsCode(() => rig.runTurn('alice', null, 'p', { idleTimeout: NaN }), 'INVALID_INPUT', { message: '`options.idleTimeout`: must be a finite number, got NaN' })
    throwsCode(() => rig.runTurn('alice', null, 'p', { timeout: true }), 'INVALID_INPUT', {
      message: '`timeout`: invalid type: a boolean, expected a number of seconds or a duration string ("90s")',
    })
    throwsCode(() => rig.runTurn('alice', null, 'p', { timeout: [1] }), 'INVALID_INPUT', { message: /^`timeout`: invalid type: an array/ })
    throwsCode(() => rig.runTurn('alice', null, 'p', { workdri: '/tmp' }), 'INVALID_INPUT', { message: /^`workdri`: unknown field `workdri`, expected one of `workdir`/ })
    throwsCode(() => rig.runTurn('alice', null, 42), 'INVALID_INPUT', { message: /^`prompt`: invalid type: integer `42`, expected a string/ })
    throwsCode(() => rig.runTurn('alice', 7, 'p'), 'INVALID_INPUT', { message: /^`model`: invalid type: integer `7`/ })
    throwsCode(() => rig.runTurn('alice', null, 'p', { env: { A: 1 } }), 'INVALID_INPUT', { message: /^`env\.A`: invalid type: integer `1`, expected a string/ })
  })
})

describe('new Rig', () => {
  test('reads the agents of a coderig.toml given as config', async () => {
    const dir = tmp()
    const path = join(dir, 'coderig.toml')
    writeFileSync(path, '[agents.bob]\nkind = "scripted"\nscript = [ { text = "from the file" } ]\n')
    const fromFile = new Rig({ config: path, dataDir: dir, db: 'sqlite::memory:' })
    assert.deepEqual(fromFile.identities, ['bob'])
    assert.equal(fromFile.dataDir, dir)
    assert.equal(fromFile.db, 'sqlite::memory:')
    assert.equal(fromFile.config, path)
    assert.equal(rig.config, null)
    assert.equal(rig.dataDir, null)
    assert.equal((await fromFile.runTurn('bob', null, 'p').wait()).final_text, 'from the file')
  })

  test('a bad config throws INVALID_INPUT naming the file and the key; a missing one IO', () => {
    const dir = tmp()
    const path = join(dir, 'coderig.toml')
    writeFileSync(path, '[agents.bob]\nkind = "scripted"\nscirpt = []\n')
    const error = throwsCode(() => new Rig({ config: path }), 'INVALID_INPUT')
    assert.ok(error.message.startsWith(`${path}: `), error.message)
    assert.match(error.message, /agents\.bob/)
    assert.match(error.message, /scirpt/)
    throwsCode(() => new Rig({ config: join(dir, 'absent.toml') }), 'IO', { message: new RegExp(`^cannot read ${join(dir, 'absent.toml')}`) })
  })

  test('bad agents throw INVALID_INPUT with the key\'s path', () => {
    throwsCode(() => new Rig({ agents: { bob: { kind: 'scripted', script: [{ txet: 'x' }] } } }), 'INVALID_INPUT', { message: /agents\.bob\.script\[0\]/ })
    throwsCode(() => new Rig({ agents: { bob: { kind: 'scripted', base_url: 'http://x' } } }), 'INVALID_INPUT', {
      message: 'agents.bob.base_url: `base_url` is a key of kind "openai" and "native" agents, not "scripted"',
    })
    throwsCode(() => new Rig({ agents: { bob: { kind: 'robot' } } }), 'INVALID_INPUT', { message: /agents\.bob\.kind/ })
    throwsCode(() => new Rig({ agents: [] }), 'INVALID_INPUT', { message: /agents/ })
    throwsCode(() => new Rig({ config: 'a.toml', agents: {} }), 'INVALID_INPUT', { message: 'give either a config file or an agents table, not both' })
    throwsCode(() => new Rig({ dataDir: 5 }), 'INVALID_INPUT', { message: /^`options\.data_dir`: invalid type: integer `5`, expected a string \(a path\)/ })
    throwsCode(() => new Rig({ agent: {} }), 'INVALID_INPUT', { message: /^`options\.agent`: unknown field `agent`, expected one of `data_dir`, `db`, `config`, `agents`/ })
    throwsCode(() => new Rig('coderig.toml'), 'INVALID_INPUT', { message: /^`options`: must be an object of options/ })
  })

  test('with neither config nor agents: ./coderig.toml when it exists, else no agents', () => {
    const cwd = process.cwd()
    try {
      const dir = tmp()
      process.chdir(dir)
      assert.deepEqual(new Rig().identities, [])
      assert.deepEqual(new Rig({ dataDir: null, config: null, agents: null }).identities, [])
      writeFileSync(join(dir, 'coderig.toml'), '[agents.carol]\nkind = "scripted"\nscript = []\n')
      assert.deepEqual(new Rig({}).identities, ['carol'])
      assert.equal(new Rig().config, 'coderig.toml')
      throwsCode(() => new Rig().runTurn('dave', null, 'p'), 'NOT_FOUND_ID', { message: 'no agent "dave"; configured: carol' })
    } finally {
      process.chdir(cwd)
    }
    throwsCode(() => new Rig({ agents: {} }).runTurn('dave', null, 'p'), 'NOT_FOUND_ID', {
      message: 'no agent "dave"; none are configured (add [agents.<identity>] to coderig.toml)',
    })
  })
})

describe('project roots', () => {
  test('the core policy: canonical, none given is the current directory when the Rig is built; a bad one is INVALID_INPUT at project_roots[i]', async () => {
    const dir = tmp()
    const work = join(dir, 'work')
    mkdirSync(work)
    const inWork = { steps: [{ id: 'a', kind: 'command', cwd: work, argv: ['true'] }] }
    // The current directory (the package's) holds no temporary dir.
    const here = new Rig({ agents: {}, dataDir: join(dir, 'here') })
    const refused = await (await here.runFlow(inWork)).wait()
    assert.equal(refused.status, 'failed')
    const { message } = refused.steps[0].error
    assert.match(message, /outside the project roots/)
    assert.ok(message.includes(realpathSync(process.cwd())), message)
    // Built in `dir`: its roots stay there after a chdir back.
    const cwd = process.cwd()
    let there, dotted
    try {
      process.chdir(dir)
      there = new Rig({ agents: {}, dataDir: 'there' })
      dotted = new Rig({ agents: {}, dataDir: 'dotted', projectRoots: ['./work/..'] })
    } finally {
      process.chdir(cwd)
    }
    for (const r of [there, dotted]) assert.equal((await (await r.runFlow(inWork)).wait()).status, 'completed')
    const file = join(dir, 'file')
    writeFileSync(file, '')
    throwsCode(() => new Rig({ agents: {}, projectRoots: [dir, join(dir, 'missing')] }), 'INVALID_INPUT', { details: { path: 'project_roots[1]' } })
    throwsCode(() => new Rig({ agents: {}, projectRoots: [file] }), 'INVALID_INPUT', { details: { path: 'project_roots[0]' }, message: /is not a directory/ })
  })
})

describe('agents()', () => {
  test('lists every agent with what the core reports', async () => {
    assert.deepEqual(await rig.agents(), [
      { identity: 'alice', kind: 'scripted', lane: 'cloud', installed: true, reachable: true, models: ['m1'], sandbox: 'none' },
      { identity: 'failer', kind: 'scripted', lane: 'cloud', installed: true, reachable: true, models: [], sandbox: 'none' },
      { identity: 'hanger', kind: 'scripted', lane: 'local', installed: true, reachable: true, models: [], sandbox: 'none' },
    ])
    assert.equal((await rig.agents({ probeTimeout: '2s' })).length, 3)
    assert.deepEqual(await new Rig({ agents: {} }).agents(), [])
    throwsCode(() => rig.agents({ probeTimeout: 'soon' }), 'INVALID_INPUT', { message: /^`probe_timeout`: bad duration "soon"/ })
    throwsCode(() => rig.agents({ probeTimeout: true }), 'INVALID_INPUT', { message: /^`probe_timeout`: invalid type: a boolean/ })
  })
})

describe('the TypeScript shapes', () => {
  // index.d.ts declares the events, outcomes and infos by hand-mirrored
  // types (src/rig_types.rs); the objects real turns give must hold only
  // the keys declared there, and every required one.
  const dts = readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8')

  /** `{name: {required: [...], optional: [...]}}` of the fields of `body` (`a: T`, `b?: T`). */
  function fields(body) {
    const found = { required: [], optional: [] }
    for (const m of body.replace(/\/\*[\s\S]*?\*\//g, '').matchAll(/^\s*(\w+)(\??):/gm)) {
      found[m[2] ? 'optional' : 'required'].push(m[1])
    }
    return found
  }

  function iface(name) {
    const m = dts.match(new RegExp(`export interface ${name} \\{([\\s\\S]*?)\\n\\}`))
    assert.ok(m, `interface ${name} in index.d.ts`)
    return fields(m[1])
  }

  function eventVariants() {
    const m = dts.match(/export type AgentEvent =([\s\S]*?)\n\n/)
    assert.ok(m, 'type AgentEvent in index.d.ts')
    const variants = {}
    for (const v of m[1].matchAll(/\{ type: '(\w+)'([^}]*)\}/g)) {
      variants[v[1]] = fields(v[2].replace(/;/g, '\n'))
    }
    return variants
  }

  function conforms(object, shape, what) {
    const keys = Object.keys(object).filter((k) => k !== 'type')
    for (const key of keys) assert.ok([...shape.required, ...shape.optional].includes(key), `${what}: \`${key}\` is not declared`)
    for (const key of shape.required) assert.ok(keys.includes(key), `${what}: the required \`${key}\` is missing`)
  }

  test('events, outcomes, agent infos and error details hold the declared keys', async () => {
    const variants = eventVariants()
    const seen = new Set()
    const script = [
      { reasoning: 'r' }, { text: 't' }, { tool_call: { name: 'grep', input: { q: 1 } } }, { tool_result: { output: 'o' } },
      { usage: { input: 1, output: 2 } },
    ]
    const shapes = new Rig({ agents: { s: { kind: 'scripted', script }, f: { kind: 'scripted', script: [{ fail: { message: 'boom' } }] } } })
    const turn = shapes.runTurn('s', 'm', 'p')
    for await (const e of turn.events()) {
      assert.ok(e.type in variants, `event type ${e.type} is declared`)
      conforms(e, variants[e.type], e.type)
      seen.add(e.type)
    }
    const outcome = await turn.wait()
    conforms(outcome, iface('TurnOutcome'), 'TurnOutcome')
    conforms(outcome.usage, iface('Usage'), 'Usage')
    const failed = shapes.runTurn('f', null, 'p')
    for await (const e of failed.events()) {
      conforms(e, variants[e.type], e.type)
      seen.add(e.type)
    }
    const error = await rejectsCode(failed.wait(), 'AGENT')
    conforms(error.details, iface('TurnErrorDetails'), 'TurnErrorDetails')
    for (const info of await rig.agents()) conforms(info, iface('AgentInfo'), 'AgentInfo')
    assert.deepEqual([...seen].sort(), Object.keys(variants).sort(), 'a real turn shows every declared event type')
  })
})

describe('exit', () => {
  // Each Rig registers an env cleanup hook: when Node tears the environment
  // down (the script's end or process.exit), its running turns are cancelled
  // and waited for, so the agent's process group does not outlive Node.
  const addon = createRequire(import.meta.url).resolve('../index.js')
  const child = (end) => `
    const { existsSync, readFileSync } = require('node:fs')
    const { Rig } = require(${JSON.stringify(addon)})
    const workdir = process.argv[1]
    const rig = new Rig({ agents: { hang: {
      kind: 'cli', preset: 'custom', command: 'sh',
      // Sandboxed, the sleeper runs in a PID namespace of its own: it
      // records its pid as the host sees it (the host's /proc/self/stat).
      args: ['-c', '(read p _ < /proc/self/stat; echo $p > {workdir}/pid; exec sleep 300) & wait'],
      format: 'text', enforces_read_only: true } } })
    rig.runTurn('hang', null, 'p', { workdir, access: 'edit' })
    const poll = () => {
      if (existsSync(workdir + '/pid') && readFileSync(workdir + '/pid', 'utf8').trim()) {
        console.log('running')
        ${end}
      } else setTimeout(poll, 10)
    }
    poll()
  `

  /** Whether `pid` no longer runs (a zombie nobody reaped yet counts as gone). */
  function gone(pid) {
    try {
      return readFileSync(`/proc/${pid}/stat`, 'utf8').split(')').pop().trim().split(' ')[0] === 'Z'
    } catch {
      return true
    }
  }

  for (const [name, end, status] of [['process.exit()', 'process.exit(3)', 3], ['the end of the script', '', 0]]) {
    test(`${name} cancels the running turns and waits until their processes ended`, () => {
      const workdir = tmp()
      const started = Date.now()
      const run = spawnSync(process.execPath, ['-e', child(end), workdir], { encoding: 'utf8', timeout: 30000 })
      assert.equal(run.stdout, 'running\n', run.stderr)
      assert.equal(run.status, status, run.stderr)
      assert.ok(Date.now() - started < 10000)
      const pid = Number(readFileSync(join(workdir, 'pid'), 'utf8'))
      assert.ok(gone(pid), `the agent's child ${pid} outlived Node`)
    })
  }
})

describe('sandbox', () => {
  /** A custom CLI agent (plain `sh`) that writes inside its workdir and outside it. */
  const escaper = (outside) => ({
    kind: 'cli', preset: 'custom', command: 'sh', format: 'text', enforces_read_only: true,
    args: ['-c', `echo in > ./inside; if echo out > '${outside}/escaped' 2>/dev/null; then echo escaped; else echo refused; fi`],
  })

  test('the mode is decoded by the core', () => {
    for (const good of ['enforce', 'auto', 'off', { mode: 'auto' }, {}, null]) new Rig({ agents: {}, sandbox: good })
    for (const [bad, path] of [['strict', 'sandbox'], [{ mode: 'never' }, 'sandbox.mode'], [{ network: 'deny' }, 'sandbox.network'], [3, 'sandbox']]) {
      const error = throwsCode(() => new Rig({ agents: {}, sandbox: bad }), 'INVALID_INPUT')
      assert.equal(error.details.path, path, error.message)
    }
  })

  test('a CLI turn runs sandboxed and reports what was enforced; off is explicit', async () => {
    const dir = tmp()
    const work = join(dir, 'work')
    const outside = join(dir, 'outside')
    mkdirSync(work)
    mkdirSync(outside)
    let outcome = await new Rig({ agents: { esc: escaper(outside) } }).runTurn('esc', null, 'p', { workdir: work, access: 'edit' }).wait()
    assert.equal(outcome.final_text.trim(), 'refused')
    assert.equal(readFileSync(join(work, 'inside'), 'utf8'), 'in\n')
    assert.ok(!existsSync(join(outside, 'escaped')))
    assert.equal(outcome.sandbox.mode, 'enforce')
    assert.equal(outcome.sandbox.confined, true)
    assert.ok(outcome.sandbox.landlock_abi >= 3)

    outcome = await new Rig({ agents: { esc: escaper(outside) }, sandbox: 'off' }).runTurn('esc', null, 'p', { workdir: work, access: 'edit' }).wait()
    assert.equal(outcome.final_text.trim(), 'escaped')
    assert.equal(outcome.sandbox.mode, 'off')
    assert.ok(existsSync(join(outside, 'escaped')))
  })
})
