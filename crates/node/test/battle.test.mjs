import assert from 'node:assert/strict'
import { after, before, describe, test } from 'node:test'
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync, existsSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { setTimeout as sleep } from 'node:timers/promises'
import { rejectsCode, unionOf } from './helpers.mjs'

// Battles end to end on real parts: a real SQLite store in a temporary
// data dir, a real git repository (made with the git CLI) with a failing
// shell test, scripted contestants and judges (in-process agents that
// write files in their worktrees), the oracle's real `sh` runs.
const { Rig } = createRequire(import.meta.url)('../index.js')

const CALC_BUGGY = 'add() { echo $(( $1 - $2 )); }\n'
const CALC_FIXED = 'add() { echo $(( $1 + $2 )); }\n'
const TEST_ADD =
  '#!/bin/sh\n. ./calc.sh\ngot=$(add 2 3)\n' +
  'if [ "$got" = 5 ]; then echo \'test_add ok\'; else echo "test_add FAILED: add 2 3 = $got" >&2; exit 1; fi\n'

const AGENTS = {
  fixer: {
    kind: 'scripted',
    // The local lane runs one contestant at a time (capacity 1), so two
    // oracle checkouts never overlap: concurrent ones in one repository
    // race in the core's workspace (one's `refs/heads/coderig/<battle>/`
    // directory removed under the other: "failed to make directory"),
    // reported to the core, not hidden from it by this file's asserts.
    lane: 'local',
    script: [{ text: 'no script for this model' }],
    scripts: {
      good: [
        { text: 'fixing add' },
        { write: { path: 'calc.sh', content: CALC_FIXED } },
        { text: 'fixed add' },
      ],
      wrong: [{ write: { path: 'calc.sh', content: 'add() { echo 0; }\n' } }, { text: 'changed it' }],
      // The pause lets `events()` subscribe before the live output comes.
      hang: [{ sleep_ms: 1000 }, { text: 'thinking' }, { hang: true }],
    },
  },
  judge: {
    kind: 'scripted',
    scripts: {
      j: [{ text: 'The first is cleaner.\nWINNER: fixer/good' }],
      examiner: [{ text: 'I checked the evidence.\nVERDICT: fixer/good' }],
    },
  },
}

const dirs = []
function tmp() {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'coderig-battle-')))
  dirs.push(dir)
  return dir
}
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

function git(cwd, ...args) {
  return execFileSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: {
      ...process.env,
      GIT_AUTHOR_NAME: 't',
      GIT_AUTHOR_EMAIL: 't@example.com',
      GIT_COMMITTER_NAME: 't',
      GIT_COMMITTER_EMAIL: 't@example.com',
    },
  })
}

/** A git repository under `root/projects/` whose test fails on HEAD. */
function makeProject(root, name = 'calc') {
  const project = join(root, 'projects', name)
  mkdirSync(join(project, 'tests'), { recursive: true })
  writeFileSync(join(project, 'calc.sh'), CALC_BUGGY)
  writeFileSync(join(project, 'tests', 'test_add.sh'), TEST_ADD)
  git(project, 'init', '-q', '-b', 'main')
  git(project, 'add', '-A')
  git(project, 'commit', '-q', '-m', 'buggy add')
  return project
}

function spec(project, contestants, { judge = 'judge/j', oracle = true, timeout = '60s' } = {}) {
  const ref = (s) => {
    const [identity, model] = s.split('/')
    return { identity, model }
  }
  const out = {
    battle_type: 'coding',
    prompt: 'Fix add in calc.sh so that tests/test_add.sh passes',
    project,
    contestants: contestants.map(ref),
    judge: ref(judge),
    contestant_timeout: timeout,
  }
  if (oracle) {
    out.oracle = { repro: 'sh tests/test_add.sh', suite: 'for t in tests/*.sh; do sh "$t" || exit 1; done', timeout: '30s' }
  }
  return out
}

const byModel = (view, model) => {
  const c = view.contestants.find((c) => c.model === model)
  assert.ok(c, `no contestant ${model} in ${JSON.stringify(view)}`)
  return c
}

async function collect(iterable) {
  const out = []
  for await (const e of iterable) out.push(e)
  return out
}

/** The fields of `interface name` in index.d.ts. */
function interfaceFields(dts, name) {
  const m = dts.match(new RegExp(`export interface ${name} \\{([\\s\\S]*?)\\n\\}`))
  assert.ok(m, `interface ${name} in index.d.ts`)
  return new Set([...m[1].matchAll(/^ {2}(\w+)\??:/gm)].map((x) => x[1]))
}

/** The fields of the variant of the union `name` whose `tag` is `value`, in index.d.ts. */
function variantFields(dts, name, tag, value) {
  const m = dts.match(new RegExp(`export type ${name} =([\\s\\S]*?)\\n\\n`))
  assert.ok(m, `type ${name} in index.d.ts`)
  const variant = m[1].split(/\n {2}\| /).find((v) => v.startsWith(`{ ${tag}: '${value}'`))
  assert.ok(variant, `${name} with ${tag} '${value}'`)
  return new Set([tag, ...[...variant.matchAll(/^ {6}(\w+)\??:/gm)].map((x) => x[1])])
}

let root, project, rig
before(() => {
  root = tmp()
  project = makeProject(root)
  rig = new Rig({ agents: AGENTS, dataDir: join(root, 'data'), projectRoots: [join(root, 'projects')] })
})

describe('a coding battle', () => {
  let first // the completed battle the later tests reuse

  test('the oracle picks the winner; events, diff and analysis tell the story', async () => {
    const battleSpec = spec(project, ['fixer/good', 'fixer/wrong'])
    battleSpec.contestants[0].instruction = 'Keep the diff to one line.'
    const battle = await rig.startBattle(battleSpec)
    assert.match(battle.id, /\S/)
    // Iterated while the battle runs: history (battle_started) then live.
    const live = collect(battle.events())
    const view = await battle.wait()
    const events = await live
    first = { battle, view }

    assert.equal(view.status, 'completed', JSON.stringify(view))
    const good = byModel(view, 'good')
    const wrong = byModel(view, 'wrong')
    assert.equal(good.status, 'done')
    assert.equal(good.tier, 'full', JSON.stringify(good))
    assert.equal(wrong.tier, 'none')
    // A contestant's own instruction, kept with it (and in manifest.json).
    assert.equal(good.instruction, 'Keep the diff to one line.')
    assert.equal(wrong.instruction, null)
    assert.equal(view.spec.contestants[0].instruction, 'Keep the diff to one line.')
    const manifest = JSON.parse(readFileSync(join(view.results_dir, 'manifest.json'), 'utf8'))
    assert.deepEqual(manifest.contestants.map((c) => c.instruction), ['Keep the diff to one line.', null])
    assert.equal(view.winner_contestant_id, good.id)
    assert.equal(view.winner_source, 'oracle')
    assert.equal(view.base_run.repro.exit_code, 1, 'the repro fails on the base')
    assert.equal(good.evidence.repro.exit_code, 0)
    assert.equal(good.evidence.patch_applied, true)
    assert.equal(view.analysis_ready, true)
    assert.equal(view.project, project)
    assert.ok(view.results_dir.startsWith(join(project, 'Arena')), view.results_dir)

    // The events: battle_started first, the contestants' updates and their
    // live output, battle_updated judging, then completed with the winner.
    const types = events.map((e) => e.type)
    assert.equal(types[0], 'battle_started')
    assert.deepEqual(events[0].contestants.map((c) => c.model), ['good', 'wrong'])
    const last = events.at(-1)
    assert.equal(last.type, 'battle_updated')
    assert.equal(last.status, 'completed')
    assert.equal(last.winner_contestant_id, good.id)
    assert.equal(last.winner_source, 'oracle')
    assert.ok(types.includes('contestant_updated'))
    const settled = events.filter((e) => e.type === 'contestant_updated' && e.status === 'done')
    assert.deepEqual(settled.map((e) => e.contestant_id).sort(), [good.id, wrong.id].sort())
    assert.ok(events.some((e) => e.type === 'battle_updated' && e.status === 'judging'))
    for (const e of events) assert.equal(e.battle_id, battle.id, JSON.stringify(e))
    const stored = events.filter((e) => e.type !== 'agent_output')
    for (const e of stored) assert.equal(typeof e.seq, 'number', JSON.stringify(e))
    const seqs = stored.map((e) => e.seq)
    assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), 'stored events in seq order')
    assert.equal(new Set(seqs).size, seqs.length, 'each stored event once')
    // Live agent output has no seq (whether any came depends on how soon
    // the agents ran; the running battle's test waits for some).
    for (const e of events.filter((e) => e.type === 'agent_output')) {
      assert.equal(e.seq, undefined)
      assert.ok(['text', 'reasoning', 'tool_call', 'tool_result'].includes(e.kind), e.kind)
    }

    // A finished battle's events() is its stored history, and it ends.
    const history = await collect(battle.events())
    assert.deepEqual(history, stored)

    // The archive: the winner's patch and the analysis.
    const diff = await battle.diff(good.id)
    assert.match(diff, /calc\.sh/)
    assert.match(diff, /\+add\(\) \{ echo \$\(\( \$1 \+ \$2 \)\); \}/)
    const analysis = await battle.analysis()
    assert.ok(analysis.includes('fixer/good'), analysis)
    assert.equal(analysis, readFileSync(join(view.results_dir, 'analysis.md'), 'utf8'))
    assert.deepEqual(await battle.info(), view)
    await rejectsCode(battle.diff('no-such-contestant'), 'NOT_FOUND_ID')
    const result = await battle.result(good.id)
    assert.ok(result.startsWith('# fixer/good') && result.includes('Status: done'), result)
    assert.equal(result, readFileSync(join(view.results_dir, good.dir, 'result.md'), 'utf8'))
    await rejectsCode(battle.result('no-such-contestant'), 'NOT_FOUND_ID')
  })

  test('the views hold only the fields index.d.ts declares', () => {
    const dts = readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8')
    const { view } = first
    for (const key of Object.keys(view)) assert.ok(interfaceFields(dts, 'BattleView').has(key), `BattleView.${key}`)
    for (const c of view.contestants) {
      for (const key of Object.keys(c)) assert.ok(interfaceFields(dts, 'ContestantView').has(key), `ContestantView.${key}`)
      for (const key of Object.keys(c.evidence)) assert.ok(interfaceFields(dts, 'Evidence').has(key), `Evidence.${key}`)
    }
    for (const key of Object.keys(view.base_run)) assert.ok(interfaceFields(dts, 'BaseRun').has(key), `BaseRun.${key}`)
    const spec = variantFields(dts, 'BattleSpec', 'battle_type', view.spec.battle_type)
    for (const key of Object.keys(view.spec)) assert.ok(spec.has(key), `BattleSpec.${key}`)
    for (const c of view.spec.contestants) {
      for (const key of Object.keys(c)) assert.ok(interfaceFields(dts, 'ContestantSpec').has(key), `ContestantSpec.${key}`)
    }
    assert.ok(unionOf(dts, 'BattleView', 'status').includes(view.status))
    assert.deepEqual(
      unionOf(dts, 'BattleView', 'status'),
      ['running', 'judging', 'completed', 'failed', 'cancelled'],
      'the core\'s battle statuses',
    )
    // The union of events names exactly the battle event types.
    const events = dts.match(/export type BattleEvent =([\s\S]*?)\n\n/)
    assert.ok(events, 'type BattleEvent in index.d.ts')
    assert.deepEqual([...events[1].matchAll(/\{ type: '(\w+)'/g)].map((m) => m[1]), [
      'battle_started', 'contestant_updated', 'battle_updated', 'agent_output', 'task_rescued',
    ])
  })

  test('rig.battle and rig.battles find it; an unknown id is NOT_FOUND_ID', async () => {
    const again = await rig.battle(first.battle.id)
    assert.equal(again.id, first.battle.id)
    assert.deepEqual(await again.info(), await first.battle.info())
    const page = await rig.battles({ status: 'completed', project })
    assert.ok(page.battles.some((b) => b.id === first.battle.id))
    assert.ok(page.battles.every((b) => b.status === 'completed'))
    assert.ok('next_cursor' in page)
    await rejectsCode(rig.battle('no-such-battle'), 'NOT_FOUND_ID')
    await rejectsCode(rig.battles({ status: 'finished' }), 'INVALID_INPUT', { details: { path: 'status' } })
    await rejectsCode(rig.battles({ colour: 'red' }), 'INVALID_INPUT')
  })

  test('a human winner survives a re-analysis; force hands it back to the oracle', async () => {
    const { battle, view } = first
    const good = byModel(view, 'good')
    const wrong = byModel(view, 'wrong')
    const named = await battle.setWinner(wrong.id)
    assert.equal(named.winner_contestant_id, wrong.id)
    assert.equal(named.winner_source, 'human')
    await rejectsCode(battle.setWinner('no-such-contestant'), 'NOT_FOUND_ID')

    const judging = await battle.analyze()
    assert.equal(judging.status, 'judging')
    const kept = await battle.wait()
    assert.equal(kept.status, 'completed')
    assert.equal(kept.winner_contestant_id, wrong.id)
    assert.equal(kept.winner_source, 'human')

    await battle.analyze(true)
    const forced = await battle.wait()
    assert.equal(forced.winner_contestant_id, good.id)
    assert.equal(forced.winner_source, 'oracle')

    const cleared = await battle.setWinner(null)
    assert.equal(cleared.winner_contestant_id, null)
    assert.equal(cleared.winner_source, null)
    const back = await battle.setWinner(good.id)
    assert.equal(back.winner_source, 'human')
  })

  test('a cross-examination runs and shows in the battle', async () => {
    const { battle } = first
    const id = await battle.crossExamine('judge', 'examiner')
    assert.equal(typeof id, 'string')
    let exam
    // Poll until the examiner's task settled (no time is asserted).
    for (;;) {
      exam = (await battle.info()).cross_exams.find((x) => x.id === id)
      assert.ok(exam, 'the cross-examination is listed')
      if (exam.status === 'done' || exam.status === 'error') break
      await sleep(50)
    }
    assert.equal(exam.status, 'done', JSON.stringify(exam))
    assert.equal(exam.verdict, 'fixer/good')
    assert.match(exam.text, /I checked the evidence/)
    // An unknown examiner is a bad request, as an unknown contestant is.
    await rejectsCode(battle.crossExamine('nobody', 'm'), 'INVALID_INPUT', { details: { path: 'identity' } })
  })

  test('stopping a finished battle is a CONFLICT', async () => {
    const error = await rejectsCode(first.battle.stop(), 'CONFLICT')
    assert.equal(error.kind, 'conflict')
    assert.equal(error.details.status, 'completed')
  })

  test('apply puts the winner\'s patch in the project\'s working tree', async () => {
    const other = makeProject(root, 'calc-apply')
    const battle = await rig.startBattle(spec(other, ['fixer/good', 'fixer/wrong']))
    const view = await battle.wait()
    assert.equal(view.winner_source, 'oracle')
    const applied = await battle.apply()
    assert.equal(applied.battle_id, battle.id)
    assert.equal(applied.contestant_id, view.winner_contestant_id)
    assert.equal(applied.project, other)
    assert.ok(applied.patch_bytes > 0)
    assert.equal(readFileSync(join(other, 'calc.sh'), 'utf8'), CALC_FIXED)
    // Arena/ stays out of git status; only the applied change shows.
    assert.equal(git(other, 'status', '--porcelain').trim(), 'M calc.sh')
    // The loser's patch no longer applies on top of the fixed tree.
    await rejectsCode(battle.apply(byModel(view, 'wrong').id), 'CONFLICT')
  })
})

describe('a running battle', () => {
  test('wait(timeoutMs) rejects with a TimeoutError; stop cancels it and its events end', async () => {
    const battle = await rig.startBattle(spec(project, ['fixer/hang', 'fixer/good'], { oracle: false }))
    const events = battle.events()[Symbol.asyncIterator]()
    const error = await rejectsCode(battle.wait(20), 'UNAVAILABLE', { details: { reason: 'timeout', battle_id: battle.id } })
    assert.equal(error.name, 'TimeoutError')
    assert.ok(['running', 'judging'].includes(error.details.status), error.details.status)
    // The hanging agent has started (its output came live), then stop.
    for (;;) {
      const { value, done } = await events.next()
      assert.equal(done, false)
      if (value.type === 'agent_output' && value.text.includes('thinking')) break
    }
    const stopped = await battle.stop()
    assert.equal(stopped.status, 'cancelled')
    const rest = []
    for (;;) {
      const { value, done } = await events.next()
      if (done) break
      rest.push(value)
    }
    // The one end rule: right after the battle's final status, with the
    // stopped contestant's final update before it.
    const last = rest.at(-1)
    assert.equal(last.type, 'battle_updated')
    assert.equal(last.status, 'cancelled')
    const view = await battle.wait()
    assert.equal(view.status, 'cancelled')
    const hang = byModel(view, 'hang')
    assert.equal(hang.status, 'cancelled')
    assert.ok(rest.slice(0, -1).some((e) => e.type === 'contestant_updated' && e.contestant_id === hang.id && e.status === 'cancelled'), JSON.stringify(rest))
    await rejectsCode(battle.stop(), 'CONFLICT', { details: { status: 'cancelled' } })
    await rejectsCode(battle.analyze(), 'CONFLICT')
    await rejectsCode(battle.wait(-1), 'INVALID_INPUT', { details: { path: 'timeoutMs' } })
  })
})

describe('process exit', () => {
  test('shuts the arena down: the process ends, the battle is left to lease rescue', async () => {
    const fresh = tmp()
    const repo = makeProject(fresh)
    const data = join(fresh, 'data')
    const script = `
      const { Rig } = require(${JSON.stringify(new URL('../index.js', import.meta.url).pathname)})
      const rig = new Rig({ agents: ${JSON.stringify(AGENTS)}, dataDir: ${JSON.stringify(data)}, projectRoots: [${JSON.stringify(fresh)}] })
      ;(async () => {
        const battle = await rig.startBattle(${JSON.stringify(spec(repo, ['fixer/hang', 'fixer/good'], { oracle: false }))})
        for await (const e of battle.events()) {
          if (e.type === 'agent_output' && e.text.includes('thinking')) break
        }
        console.log(battle.id)
        process.exit(0)
      })()
    `
    // A hung agent in a running arena: without the exit listener's
    // shutdown the worker's tasks would be dropped mid-flight; with it the
    // exit completes (a deadlock would time the test out).
    const id = execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }).trim()
    const again = new Rig({ agents: AGENTS, dataDir: data })
    const view = await (await again.battle(id)).info()
    assert.equal(view.status, 'running', 'a shutdown does not cancel the battle')
    assert.equal(byModel(view, 'hang').status, 'running', 'its task waits for lease rescue')
    await (await again.battle(id)).stop()
  })
})

describe('bad specs', () => {
  test('reject with INVALID_INPUT naming the field, and create nothing', async () => {
    const fresh = tmp()
    const repo = makeProject(fresh)
    const r = new Rig({ agents: AGENTS, dataDir: join(fresh, 'data'), projectRoots: [join(fresh, 'projects')] })
    const good = spec(repo, ['fixer/good', 'fixer/wrong'])
    const cases = [
      [{ ...good, battle_type: undefined }, 'battle_type'],
      [{ ...good, battle_type: 'chess' }, 'battle_type'],
      [{ ...good, contestants: [{ identity: 'fixer', model: 'good' }] }, 'contestants'],
      [{ ...good, contestants: [{ identity: 'fixer', model: 'good' }, { identity: 'fixer' }] }, 'contestants[1].model'],
      [{ ...good, contestants: [{ identity: 'fixer', model: 'good', instruction: 7 }, { identity: 'fixer', model: 'wrong' }] }, 'contestants[0].instruction'],
      [{ ...good, contestants: [{ identity: 'fixer', model: 'good' }, { identity: 'fixer', model: 'wrong', instruction: 'x'.repeat(16385) }] }, 'contestants[1].instruction'],
      [{ ...good, keepWorktrees: true }, 'keepWorktrees'],
      [{ ...good, contestant_timeout: 'soon' }, 'contestant_timeout'],
    ]
    for (const [bad, path] of cases) {
      const error = await rejectsCode(r.startBattle(bad), 'INVALID_INPUT')
      assert.equal(error.kind, 'invalid_input')
      assert.ok(JSON.stringify(error.details).includes(path), `${path}: ${JSON.stringify(error.details)} ${error.message}`)
    }
    // Decoded before anything is opened: the store is not even created.
    assert.equal(existsSync(join(fresh, 'data', 'coderig.db')), false)
    // Refused by the arena (the spec decodes): an unknown identity, a
    // project outside the roots, a directory that is no git repository.
    const outside = makeProject(join(fresh, 'elsewhere'))
    const plain = join(fresh, 'projects', 'plain')
    mkdirSync(plain)
    for (const bad of [
      spec(repo, ['nobody/x', 'fixer/good']),
      spec(repo, ['fixer/good', 'fixer/wrong'], { judge: 'nobody/j' }),
      spec(outside, ['fixer/good', 'fixer/wrong']),
      spec(plain, ['fixer/good', 'fixer/wrong']),
      { ...good, base: 'no-such-ref' },
    ]) {
      await rejectsCode(r.startBattle(bad), 'INVALID_INPUT')
    }
    await rejectsCode(r.startBattle('not a spec'), 'INVALID_INPUT')
    await rejectsCode(r.startBattle(null), 'INVALID_INPUT')
    assert.deepEqual((await r.battles()).battles, [], 'no battle was created')
    assert.deepEqual(readdirNames(join(repo)), ['.git', 'calc.sh', 'tests'], 'no results folder')
  })
})

function readdirNames(dir) {
  return execFileSync('ls', ['-A', dir], { encoding: 'utf8' }).split('\n').filter(Boolean).sort()
}

describe('leaderboard', () => {
  test('rates the completed battles with a winner, per type and project', async () => {
    const boards = await rig.leaderboard()
    assert.deepEqual(boards.map((b) => b.battle_type), ['coding', 'qa'])
    const coding = boards[0]
    // The first battle (a human's winner: fixer/good) and the apply battle
    // (the oracle's: fixer/good); the stopped one has none.
    assert.equal(coding.n_battles, 2)
    assert.deepEqual(coding.entries.map((e) => e.name), ['fixer/good', 'fixer/wrong'])
    assert.deepEqual(coding.entries.map((e) => e.n_battles), [2, 2])
    assert.ok(coding.entries[0].score > coding.entries[1].score)
    for (const e of coding.entries) assert.ok(e.ci_low <= e.score && e.score <= e.ci_high, JSON.stringify(e))
    assert.deepEqual(boards[1], { battle_type: 'qa', n_battles: 0, entries: [] })
    const dts = readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8')
    for (const key of Object.keys(coding)) assert.ok(interfaceFields(dts, 'Leaderboard').has(key), key)
    for (const key of Object.keys(coding.entries[0])) assert.ok(interfaceFields(dts, 'LeaderboardEntry').has(key), key)

    const only = await rig.leaderboard({ battleType: 'coding', project })
    assert.equal(only.length, 1)
    assert.equal(only[0].n_battles, 1, 'one battle with a winner in this project')
    await rejectsCode(rig.leaderboard({ battleType: 'chess' }), 'INVALID_INPUT', { details: { path: 'battle_type' } })
  })
})
