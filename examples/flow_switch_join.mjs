// The Node twin of examples/flow_switch_join.rs: a flow with a switch whose
// untaken branch is skipped on purpose, and the join after it still runs.
// The flow is decoded once into a handle (its JS condition attached), the
// scheduler holds it, and a refused event is the core's error.
//
// Run (after building crates/node): node examples/flow_switch_join.mjs
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { flow } = require('../crates/node');

const spec = {
  steps: [
    { id: 'plan', kind: 'agent' },
    {
      id: 'route', kind: 'switch', deps: ['plan'],
      cases: [
        { label: 'small', steps: ['quick_fix'], condition: (ctx) => ctx.input.files === 1 },
        { label: 'large', steps: ['refactor', 'review'], condition: () => true },
      ],
    },
    { id: 'quick_fix', kind: 'agent', deps: ['route'] },
    { id: 'refactor', kind: 'agent', deps: ['route'] },
    { id: 'review', kind: 'agent', deps: ['refactor'] },
    { id: 'test', kind: 'code', deps: ['quick_fix', 'review'] },
  ],
};
const f = new flow.Flow(spec);
const sch = new flow.Scheduler(f);
let ready = sch.start();
console.log('start:', ready);
assert.deepEqual(ready, ['plan']);
ready = sch.complete('plan');
console.log('plan done:', ready);
// The switch decides on the run's input: one file → the small branch.
ready = sch.completeSwitchWith('route', { input: { files: 1 }, results: {} });
console.log('route done:', ready, 'skipped:', sch.takeSkipped());
assert.deepEqual(ready, ['quick_fix']);
ready = sch.complete('quick_fix');
console.log('quick_fix done:', ready);
// `test` depends on the untaken `review` too; a deliberate skip satisfies
// all_success, so the join runs.
assert.deepEqual(ready, ['test']);
try {
  sch.complete('review');
} catch (e) {
  console.log(`refused (${e.code}, ${e.reason}): ${e.message}`);
  assert.equal(e.code, 'CONFLICT');
}
sch.complete('test');
assert.ok(sch.isComplete());
// The state is a handle too; its JSON form is the core's, as the server's.
const state = sch.state();
assert.equal(flow.isRunComplete(f, state), true);
console.log('run complete:', JSON.stringify(state));
