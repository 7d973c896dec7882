// A flow run from Node, start to finish: a command step counts the words
// of the input, a JS function (a code step, called on this thread) judges
// the count, and the report is rendered from the results when the run
// ends. Every state change lands in the store (SQLite in a temporary data
// dir) with its event; `run.events()` follows them live.
//
// Run (after building crates/node): node examples/flow_run.mjs
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Rig } = require('../crates/node');

const FLOW = `
name: count-and-judge
steps:
  - id: count
    kind: command
    shell: 'printf %s "$TEXT" | wc -w'
    env: { TEXT: "{{ input.text }}" }
  - id: judge
    kind: code
    deps: [count]
report: |
  {{ results.count | trim }} words: {{ results.judge.verdict }}
`;

const root = mkdtempSync(join(tmpdir(), 'coderig-flow-example-'));
try {
  const rig = new Rig({ dataDir: join(root, 'data') });
  const run = await rig.runFlow(FLOW, { text: 'Leased claims bring a dead worker task back.' }, {
    code: {
      // Gets {input, results, steps, iteration}: `results` holds its
      // dependencies' results. May be async; a throw fails the attempt.
      judge: (ctx) => {
        const words = Number(ctx.results.count.trim());
        return { words, verdict: words <= 12 ? 'short enough' : 'too long' };
      },
    },
  });

  for await (const event of run.events()) {
    if (event.type === 'step_updated') console.log(`${event.step_id.padEnd(6)} ${event.status}`);
  }
  const view = await run.wait();
  console.log(`\n${view.report}`);
  assert.equal(view.status, 'completed', JSON.stringify(view.error));
  assert.deepEqual(view.steps.find((s) => s.id === 'judge').output, { words: 8, verdict: 'short enough' });
} finally {
  rmSync(root, { recursive: true, force: true });
}
