import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { execFileSync, spawn } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { scriptedModelBinary } from './helpers.mjs'

// The native agent from Node with no Node-specific code: rig.runTurn and
// rig.startBattle with kind = "native" agents against the project's
// scripted model server (its own process, tool scripts by model name), on
// the bowling exercise of tests/agentbench in a real git repository, with
// real python3 test runs by the agent's sandboxed `run` tool and the oracle.
const { Rig } = createRequire(import.meta.url)('../index.js')
const ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const BENCH = join(ROOT, 'tests/agentbench/polyglot-python/bowling')
const TESTS = 'python3 -m unittest -q bowling_test'

let server
let baseUrl
let dir

const call = (name, args) => ({ name, arguments: args })

function project(name) {
  const work = join(dir, 'projects', name)
  mkdirSync(work, { recursive: true })
  for (const f of ['bowling.py', 'bowling_test.py']) copyFileSync(join(BENCH, f), join(work, f))
  writeFileSync(join(work, '.gitignore'), '__pycache__/\n')
  const git = (...args) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: work })
  git('init', '-q', '-b', 'main')
  git('add', '-A')
  git('commit', '-q', '-m', 'stub')
  return work
}

function passes(work) {
  try {
    execFileSync('sh', ['-c', TESTS], { cwd: work, stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

function rig() {
  return new Rig({
    dataDir: join(dir, 'data'),
    projectRoots: [join(dir, 'projects')],
    agents: {
      local: { kind: 'native', base_url: `${baseUrl}/v1`, max_steps: 12 },
      judge: { kind: 'scripted', script: [{ text: 'never asked about a lone result' }] },
    },
  })
}

describe('the native agent through the Node face', () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'coderig-native-'))
    const answer = readFileSync(join(BENCH, '.meta/example.py'), 'utf8')
    const scripts = {
      fix: { steps: [
        { calls: [call('list_files', {})] },
        { calls: [call('read_file', { path: 'bowling.py' })] },
        { calls: [call('write_file', { path: 'bowling.py', content: answer })] },
        { calls: [call('run', { command: TESTS })] },
        { calls: [call('finish', { summary: 'Implemented BowlingGame; the tests pass.' })] },
      ] },
      idle: { steps: [{ calls: [call('list_files', {})] }, { say: 'I would need more time.' }] },
    }
    const args = ['--port', '0']
    for (const [name, script] of Object.entries(scripts)) {
      const path = join(dir, `${name}.json`)
      writeFileSync(path, JSON.stringify(script))
      args.push('--script', `${name}=${path}`)
    }
    server = spawn(scriptedModelBinary(), args, { stdio: ['ignore', 'pipe', 'inherit'] })
    for await (const line of createInterface({ input: server.stdout })) {
      const m = line.match(/^listening on (http:\/\/\S+)$/)
      if (m) {
        baseUrl = m[1]
        break
      }
    }
    assert.ok(baseUrl, 'the scripted model server said where it listens')
  })

  after(() => {
    server?.kill()
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  test('runTurn fixes the exercise and reports the native outcome', async () => {
    const work = project('turn')
    const records = join(dir, 'records')
    const turn = rig().runTurn('local', 'fix', 'Implement bowling.py', { workdir: work, access: 'edit', artifacts: records })
    const types = []
    for await (const event of turn.events()) types.push(event.type)
    const outcome = await turn.wait()
    assert.equal(outcome.stop_reason, 'finished')
    assert.equal(outcome.final_text, 'Implemented BowlingGame; the tests pass.')
    assert.equal(outcome.requests, 5)
    assert.equal(outcome.tool_calls, 5)
    assert.equal(outcome.calls_read.structured, 5)
    assert.equal(types.filter((t) => t === 'tool_result').length, 5)
    assert.ok(passes(work))
    assert.match(readFileSync(join(records, 'transcript.jsonl'), 'utf8'), /"type":"start"/)
  })

  test('a battle of two native contestants is won by the one that fixes', async () => {
    const work = project('battle')
    const r = rig()
    const agents = await r.agents()
    const local = agents.find((a) => a.identity === 'local')
    assert.equal(local.kind, 'native')
    assert.equal(local.lane, 'local')
    const battle = await r.startBattle({
      battle_type: 'coding',
      prompt: 'Implement bowling.py so that bowling_test.py passes.',
      project: work,
      contestants: [{ identity: 'local', model: 'fix', instruction: 'Run the tests first.' }, { identity: 'local', model: 'idle' }],
      judge: { identity: 'judge', model: 'j' },
      contestant_timeout: '60s',
      oracle: { repro: TESTS, suite: TESTS, timeout: '60s' },
    })
    const view = await battle.wait()
    assert.equal(view.status, 'completed')
    const fix = view.contestants.find((c) => c.model === 'fix')
    assert.equal(view.winner_contestant_id, fix.id)
    assert.equal(view.winner_source, 'oracle')
    assert.equal(fix.instruction, 'Run the tests first.')
  })
})
