import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { execFileSync, spawn } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { rejectsCode, scriptedModelBinary } from './helpers.mjs'

// A kind = "openai" agent (the addon is built with the core's `http`
// feature) over real HTTP on loopback, against the workspace's scripted
// model server (crates/scripted-model), run as its own process.
const { Rig } = createRequire(import.meta.url)('../index.js')
const ROOT = fileURLToPath(new URL('../../..', import.meta.url))

let server
let baseUrl

before(async () => {
  // Built as the other workspace binaries are (reusing target/).
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

after(() => server?.kill())

function rig() {
  return new Rig({ agents: { local: { kind: 'openai', base_url: `${baseUrl}/v1`, lane: 'local', idle_timeout: '10s' } } })
}

describe('an openai agent on loopback', () => {
  test('streams the reply and resolves the outcome', async () => {
    const turn = rig().runTurn('local', 'scripted-model', 'Reply with: hello from loopback')
    const events = []
    for await (const event of turn.events()) events.push(event)
    const text = events.filter((e) => e.type === 'text_delta').map((e) => e.text).join('')
    assert.equal(text, 'hello from loopback')
    assert.equal(events.at(-1).type, 'finished')
    const outcome = await turn.wait()
    assert.equal(outcome.final_text, 'hello from loopback')
    assert.equal(typeof outcome.usage.output, 'number')
  })

  test('a provider status rejects with its class and http_status', async () => {
    const turn = rig().runTurn('local', 'scripted-model+status_429', 'p')
    const error = await rejectsCode(turn.wait(), 'AGENT', { details: { agent_error: 'provider', class: 'retry', http_status: 429 } })
    assert.equal(error.http_status, 429)
  })

  test('agents() asks the server for its models', async () => {
    const [info] = await rig().agents()
    assert.equal(info.identity, 'local')
    assert.equal(info.kind, 'openai')
    assert.equal(info.lane, 'local')
    assert.equal(info.reachable, true)
    assert.ok(info.models.length > 0, JSON.stringify(info))
    const closed = new Rig({ agents: { gone: { kind: 'openai', base_url: 'http://127.0.0.1:9/v1' } } })
    const [down] = await closed.agents({ probeTimeout: 2 })
    assert.equal(down.reachable, false)
    assert.equal(typeof down.error, 'string')
  })
})
