// One agent turn from Node: a rig with a scripted agent (no model, no
// network), its events streamed with `for await`, the file it wrote, the
// outcome; then a turn that hangs, failed by its idle timeout with the
// core's error, and one cancelled by the caller.
//
// Run (after building crates/node): node examples/agent_turn.mjs
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Rig } = require('../crates/node');

// The JSON form of coderig.toml's [agents] table (or: new Rig({config: 'coderig.toml'})).
const rig = new Rig({
  agents: {
    fixer: {
      kind: 'scripted',
      script: [
        { reasoning: 'the bug is the off-by-one in count()' },
        { write: { path: 'count.py', content: 'def count(xs):\n    return len(xs)\n' } },
        { usage: { input: 120, output: 30 } },
        { text: 'Fixed count() in count.py.' },
      ],
    },
    stuck: { kind: 'scripted', script: [{ text: 'thinking...' }, { hang: true }] },
  },
});
console.log('agents:', (await rig.agents()).map((a) => `${a.identity} (${a.kind}, ${a.lane})`).join(', '));

const workdir = mkdtempSync(join(tmpdir(), 'coderig-example-'));
try {
  const turn = rig.runTurn('fixer', null, 'Fix count() in count.py', { workdir, access: 'edit', timeout: '2m' });
  for await (const event of turn.events()) {
    const { type, ...fields } = event;
    console.log(`  ${type.padEnd(16)} ${JSON.stringify(fields)}`);
  }
  const outcome = await turn.wait();
  console.log('outcome:', outcome.final_text, `(${outcome.usage.input} in, ${outcome.usage.output} out, ${outcome.duration_ms} ms)`);
  assert.equal(readFileSync(join(workdir, 'count.py'), 'utf8'), 'def count(xs):\n    return len(xs)\n');

  // A hung agent: no event for idleTimeout seconds fails the turn.
  const hung = rig.runTurn('stuck', null, 'p', { idleTimeout: 0.2 });
  await assert.rejects(hung.wait(), (e) => {
    console.log(`hung turn refused (${e.code}, ${e.details.agent_error}, class ${e.details.class}): ${e.message}`);
    return e.code === 'AGENT' && e.details.agent_error === 'idle';
  });

  // The caller stops a turn.
  const stopped = rig.runTurn('stuck', null, 'p');
  for await (const event of stopped.events()) {
    if (event.type === 'text_delta') stopped.cancel();
  }
  await assert.rejects(stopped.wait(), (e) => e.details.agent_error === 'cancelled');
  console.log('cancelled turn ended as cancelled');
} finally {
  rmSync(workdir, { recursive: true, force: true });
}
