// A coding battle from Node: a generated git repository whose test fails,
// two scripted contestants (in-process agents, no model, no network) that
// each change calc.sh in their own worktree, an oracle that runs the
// failing test and the suite on a fresh checkout of every patch, and the
// winner it picks. The store is SQLite in a temporary data dir.
//
// Run (after building crates/node): node examples/battle.mjs
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Rig } = require('../crates/node');

const root = realpathSync(mkdtempSync(join(tmpdir(), 'coderig-battle-example-')));
const git = (cwd, ...args) =>
  execFileSync('git', args, {
    cwd,
    env: { ...process.env, GIT_AUTHOR_NAME: 'ex', GIT_AUTHOR_EMAIL: 'ex@example.com', GIT_COMMITTER_NAME: 'ex', GIT_COMMITTER_EMAIL: 'ex@example.com' },
  });

try {
  // The project: add() subtracts, and tests/test_add.sh says so.
  const project = join(root, 'calc');
  mkdirSync(join(project, 'tests'), { recursive: true });
  writeFileSync(join(project, 'calc.sh'), 'add() { echo $(( $1 - $2 )); }\n');
  writeFileSync(
    join(project, 'tests', 'test_add.sh'),
    '. ./calc.sh\n[ "$(add 2 3)" = 5 ] || { echo "add 2 3 = $(add 2 3), expected 5" >&2; exit 1; }\n',
  );
  git(project, 'init', '-q', '-b', 'main');
  git(project, 'add', '-A');
  git(project, 'commit', '-q', '-m', 'add() is wrong');

  // The JSON form of coderig.toml's [agents] table: one scripted agent with
  // a script per model, and a scripted judge (not needed: the oracle decides).
  const rig = new Rig({
    dataDir: join(root, 'data'),
    projectRoots: [root],
    agents: {
      fixer: {
        kind: 'scripted',
        // One contestant at a time (the local lane's capacity is 1).
        lane: 'local',
        scripts: {
          careful: [
            { reasoning: 'add() subtracts; it should add' },
            { write: { path: 'calc.sh', content: 'add() { echo $(( $1 + $2 )); }\n' } },
            { text: 'Fixed add() in calc.sh.' },
          ],
          hasty: [
            { write: { path: 'calc.sh', content: 'add() { echo 5; }\n' } },
            { write: { path: 'tests/test_add.sh', content: 'exit 0\n' } },
            { text: 'All tests pass now.' },
          ],
        },
      },
      judge: { kind: 'scripted', script: [{ text: 'WINNER: fixer/careful' }] },
    },
  });

  const battle = await rig.startBattle({
    battle_type: 'coding',
    prompt: 'Fix add() in calc.sh so that tests/test_add.sh passes',
    project,
    contestants: [
      { identity: 'fixer', model: 'careful' },
      { identity: 'fixer', model: 'hasty' },
    ],
    judge: { identity: 'judge', model: 'j' },
    // Run on a fresh checkout of the base with each patch. The hasty
    // contestant's rewritten test makes the repro pass, but the suite's
    // add 7 1 = 8 catches its hard-coded answer: tier partial, against the
    // careful one's full.
    oracle: {
      repro: 'sh tests/test_add.sh',
      suite: '. ./calc.sh && [ "$(add 7 1)" = 8 ]',
      timeout: '30s',
    },
    contestant_timeout: '2m',
  });
  console.log(`battle ${battle.id} started`);
  for await (const event of battle.events()) {
    if (event.type === 'agent_output') continue;
    const { type, seq, epoch, battle_id, ...fields } = event;
    console.log(`  #${seq} ${type.padEnd(18)} ${JSON.stringify(fields).slice(0, 120)}`);
  }
  const view = await battle.wait();
  for (const c of view.contestants) {
    const run = (r) => (r ? `exit ${r.exit_code}` : 'not run');
    console.log(`  ${c.identity}/${c.model}: ${c.status}, tier ${c.tier} (repro ${run(c.evidence?.repro)}, suite ${run(c.evidence?.suite)})`);
  }
  const winner = view.contestants.find((c) => c.id === view.winner_contestant_id);
  console.log(`winner: ${winner.identity}/${winner.model} (by ${view.winner_source})`);
  assert.equal(view.status, 'completed');
  assert.equal(`${winner.identity}/${winner.model}`, 'fixer/careful');
  assert.equal(view.winner_source, 'oracle');
  console.log((await battle.diff(winner.id)).trimEnd());
  console.log(`analysis: ${view.results_dir}/analysis.md, ${(await battle.analysis()).length} chars`);
  const [board] = await rig.leaderboard({ battleType: 'coding' });
  console.log('leaderboard:', board.entries.map((e) => `${e.name} ${e.score.toFixed(0)}`).join(', '));
} finally {
  rmSync(root, { recursive: true, force: true });
}
