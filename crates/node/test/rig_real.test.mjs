import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { scriptedModelBinary } from './helpers.mjs'

// rig.runTurn with the real pinned codex CLI (scripts/install-agents.sh;
// CODERIG_AGENT_BIN names its .bin dir) against the project's scripted
// model server, configured as a user would: the preset, the binary, the
// provider settings in env and extra_args. Without CODERIG_AGENT_BIN the
// suite is skipped, unless CODERIG_REQUIRE_AGENTS=1 (the test command sets
// both), which fails it.
const { Rig } = createRequire(import.meta.url)('../index.js')
const ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const BIN = process.env.CODERIG_AGENT_BIN
if (!BIN && process.env.CODERIG_REQUIRE_AGENTS === '1') {
  throw new Error('CODERIG_REQUIRE_AGENTS=1 but CODERIG_AGENT_BIN is not set')
}
const MODEL = 'scripted-model'

let server
let baseUrl
let dir

function catalog() {
  return JSON.stringify({ models: [{
    slug: MODEL, display_name: MODEL, description: 'x', supports_reasoning_summaries: false,
    support_verbosity: false, default_verbosity: null, apply_patch_tool_type: 'freeform',
    input_modalities: ['text'], truncation_policy: { mode: 'tokens', limit: 10000 },
    supports_parallel_tool_calls: false, context_window: 128000, default_reasoning_level: 'medium',
    supported_reasoning_levels: [{ effort: 'medium', description: 'medium' }], shell_type: 'shell_command',
    visibility: 'list', minimal_client_version: '0.0.1', supported_in_api: true, upgrade: null, priority: 0,
    base_instructions: 'You are a scripted test agent.', experimental_supported_tools: [],
  }] })
}

function codexRig() {
  const home = join(dir, 'home')
  mkdirSync(join(home, '.codex'), { recursive: true })
  const catalogPath = join(home, 'catalog.json')
  execFileSync('sh', ['-c', `cat > '${catalogPath}'`], { input: catalog() })
  const c = (kv) => ['-c', kv]
  return new Rig({ agents: { codex: {
    kind: 'cli', preset: 'codex', command: join(BIN, 'codex'), timeout: '240s',
    env: { HOME: home, CODEX_HOME: join(home, '.codex'), LOCAL_API_KEY: 'dummy', XDG_CONFIG_HOME: join(home, '.config'),
      XDG_DATA_HOME: join(home, '.local/share'), XDG_CACHE_HOME: join(home, '.cache'), XDG_STATE_HOME: join(home, '.local/state') },
    extra_args: ['--ephemeral', '--strict-config', ...c('model_provider=local'), ...c(`model_catalog_json=${catalogPath}`),
      ...c('model_providers.local.name=local'), ...c(`model_providers.local.base_url=${baseUrl}/v1`),
      ...c('model_providers.local.wire_api=responses'), ...c('model_providers.local.env_key=LOCAL_API_KEY'),
      ...c('model_providers.local.request_max_retries=0'), ...c('model_providers.local.stream_max_retries=0'),
      ...c('check_for_update_on_startup=false'), ...c('analytics.enabled=false')],
  } } })
}

function freshRepo(name) {
  const work = join(dir, name)
  mkdirSync(work)
  execFileSync('git', ['init', '-q'], { cwd: work })
  execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '--allow-empty', '-m', 'init'], { cwd: work })
  return work
}

describe('a real codex CLI through rig.runTurn', { skip: !BIN && 'CODERIG_AGENT_BIN is not set (see scripts/install-agents.sh)' }, () => {
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'coderig-real-'))
    server = spawn(scriptedModelBinary(), ['--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] })
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

  test('an edit turn runs the shell tool, writes the file and streams normalized events', async () => {
    const work = freshRepo('edit')
    const turn = codexRig().runTurn('codex', MODEL, 'Create hello.txt containing hi using the shell', { workdir: work, access: 'edit' })
    const events = []
    for await (const event of turn.events()) events.push(event)
    const outcome = await turn.wait()
    const types = events.map((e) => e.type)
    for (const wanted of ['session_started', 'tool_call', 'tool_result', 'usage', 'finished']) {
      assert.ok(types.includes(wanted), `${wanted} in ${types}`)
    }
    const call = events.find((e) => e.type === 'tool_call')
    assert.equal(call.name, 'command_execution')
    assert.match(call.input.command, /hello\.txt/)
    assert.equal(events.find((e) => e.type === 'tool_result').ok, true)
    assert.equal(readFileSync(join(work, 'hello.txt'), 'utf8').trim(), 'hi')
    assert.equal(outcome.final_text, 'done')
    assert.equal(outcome.exit_code, 0)
    assert.ok(outcome.session_id)
  })

  test('a read-only turn writes nothing (the sandbox refuses it)', async () => {
    const work = freshRepo('read-only')
    const turn = codexRig().runTurn('codex', MODEL, 'Create hello.txt containing hi using the shell', { workdir: work })
    const outcome = await turn.wait()
    assert.equal(existsSync(join(work, 'hello.txt')), false)
    assert.equal(outcome.final_text, 'done')
  })

  test('agents() reports the real binary installed', async () => {
    const [info] = await codexRig().agents()
    assert.deepEqual([info.identity, info.kind, info.preset, info.installed], ['codex', 'cli', 'codex', true])
    assert.equal(info.command, join(BIN, 'codex'))
  })
})
