// What the generated input types accept and refuse, checked by the TypeScript
// compiler (test/types.test.mjs runs `tsc --noEmit --strict` on this file with
// index.d.ts): each `@ts-expect-error` line must be an error, every other line
// must compile. The values are the shapes the core's decoders take.

import type {
  AgentSpec,
  AgentsOptions,
  BattleFilter,
  BattleSpec,
  ContestantSpec,
  Decision,
  LeaderboardOptions,
  Rig,
  RigOptions,
  RetrySpec,
  RunBatchConfig,
  RunFlowOptions,
  RunCaseSpec,
  RunFilter,
  RunSpec,
  RunStepSpec,
  Run,
  TurnOptions,
} from '../../index'

const contestants: ContestantSpec[] = [
  { identity: 'a', model: 'm' },
  { identity: 'b', model: 'm', instruction: 'Add a regression test.' },
]
const judge = { identity: 'j', model: 'm' }

export const coding: BattleSpec = {
  battle_type: 'coding',
  prompt: 'Fix the bug.',
  project: '/repo',
  base: 'snapshot',
  contestants,
  judge,
  oracle: { repro: 'pytest -x t.py', timeout: '5m', network: 'loopback:8080' },
  contestant_timeout: 1200,
  keep_worktrees: null,
}
export const qa: BattleSpec = { battle_type: 'qa', prompt: 'Why?', contestants, judge }

// @ts-expect-error a coding battle needs its project
export const noProject: BattleSpec = { battle_type: 'coding', prompt: 'p', contestants, judge }
// @ts-expect-error a qa battle has no oracle
export const qaOracle: BattleSpec = { battle_type: 'qa', prompt: 'p', contestants, judge, oracle: { suite: 'true' } }
// @ts-expect-error no such battle type
export const badType: BattleSpec = { battle_type: 'chess', prompt: 'p', contestants, judge }
// @ts-expect-error an unknown key, as the decoder refuses it
export const unknownKey: ContestantSpec = { identity: 'a', model: 'm', weight: 2 }

const retry: RetrySpec = { max_attempts: 3, initial: 0, multiplier: 2, max: '1m', on: ['failure'] }
const batch: RunBatchConfig = { max_concurrent: 2, join_rule: 'all_done' }
const cases: RunCaseSpec[] = [{ label: 'big', condition: 'input.n > 10', steps: ['big'] }]
export const flow: RunSpec = {
  name: 'ci',
  description: 'every kind of step',
  batch_config: batch,
  report: '{{ results.test.ok }}',
  steps: [
    { id: 'ask', kind: 'agent', agent: 'claude', prompt: 'Review {{ input.pr }}', access: 'read_only', retry },
    { id: 'test', kind: 'command', argv: ['pytest'], deps: ['ask'], timeout: '10m', batch: 'b' },
    { id: 'lint', kind: 'command', shell: 'ruff check .', sandbox: { network: 'deny' }, batch: 'b' },
    { id: 'sum', kind: 'code', deps: ['test'], trigger_rule: 'all_done' },
    { id: 'ok', kind: 'approval', message: 'Ship it?' },
    { id: 'pick', kind: 'switch', cases, default: ['sum'] },
    { id: 'big', kind: 'code' },
    { id: 'again', kind: 'do_while', body: ['sum'], condition: 'iteration < 3', max_iterations: 3 },
  ],
}

// @ts-expect-error an agent step needs its prompt
export const noPrompt: RunStepSpec = { id: 'x', kind: 'agent', agent: 'a' }
// @ts-expect-error no such step kind
export const badKind: RunStepSpec = { id: 'x', kind: 'loop' }
// @ts-expect-error no such trigger rule
export const badRule: RunStepSpec = { id: 'x', kind: 'code', trigger_rule: 'sometimes' }

export const battles: BattleFilter = { project: '/repo', status: 'judging', limit: 10, cursor: null }
export const runs: RunFilter = { status: 'waiting' }
export const boards: LeaderboardOptions = { battleType: 'qa' }
// @ts-expect-error a run is never judging
export const badStatus: RunFilter = { status: 'judging' }

// An agent's table, as `coderig.toml`'s `[agents.<identity>]` and `new Rig({agents})`.
const scripted: AgentSpec = {
  kind: 'scripted',
  lane: 'local',
  timeout: 30,
  script: [{ text: 'hi' }, { sleep_ms: 5 }, { tool_call: { name: 'read', input: { path: 'a' } } }, { hang: false }],
  scripts: { m1: [{ fail: { message: 'quota', class: 'stop' } }] },
}
const native: AgentSpec = {
  kind: 'native',
  base_url: 'http://127.0.0.1:8000/v1',
  api: 'anthropic',
  tools: 'bash',
  max_wall: '20m',
  prices: { input: 3, output: 15 },
  model_overrides: { small: { context_window: 8192, sampling: { temperature: 0.2 } } },
  network: 'loopback:8000',
}
export const options: RigOptions = { dataDir: '.coderig', projectRoots: ['/repo'], sandbox: { mode: 'auto' }, agents: { scripted, native } }
// @ts-expect-error options keys are camelCase in Node
export const snakeOptions: RigOptions = { data_dir: '.coderig' }
// @ts-expect-error no such kind of agent
export const badAgent: AgentSpec = { kind: 'robot' }
// @ts-expect-error no such script action
export const badAction: AgentSpec = { kind: 'scripted', script: [{ speak: 'hi' }] }
// @ts-expect-error a duration is seconds or text, not a flag
export const badTimeout: AgentSpec = { kind: 'cli', timeout: true }

export const turn: TurnOptions = { workdir: '/repo', access: 'edit', timeout: '20m', idleTimeout: 90, env: { K: 'v' } }
// @ts-expect-error no such access
export const badAccess: TurnOptions = { access: 'root' }
export const decision: Decision = { by: 'ana', comment: 'ship it' }
// @ts-expect-error a decision has who and why, nothing else
export const badDecision: Decision = { by: 'ana', when: 'now' }

// A code step's callable gets the core's CodeContext.
export const code: RunFlowOptions = {
  code: {
    sum: (ctx) => (ctx.steps.test?.status === 'done' ? ctx.results.test : ctx.iteration + ctx.steps.test.attempt),
    // @ts-expect-error a step's state has no such status
    odd: (ctx) => ctx.steps.test.status === 'finished',
  },
}

export const probe: AgentsOptions = { probeTimeout: '500ms' }

// The calls take them.
export async function calls(rig: Rig, run: Run): Promise<void> {
  rig.runTurn('claude', null, 'Fix it.', turn)
  await run.approve('gate', decision)
  await rig.startBattle(coding)
  await rig.runFlow(flow, {}, code)
  await rig.battles(battles)
  await rig.runs(runs)
  await rig.leaderboard(boards)
  await rig.agents(probe)
}
