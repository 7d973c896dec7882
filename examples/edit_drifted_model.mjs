// The Node twin of examples/edit_drifted_model.rs: apply a drifted edit when
// its target is certain, refuse an ambiguous one with a useful message.
//
// Run (after building crates/node): node examples/edit_drifted_model.mjs
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { locate, applyEdit } = require('../crates/node');

// The file uses tabs and curly quotes; the model re-typed the block with four
// spaces and straight quotes.
const file = 'fn greet(name: &str) {\n\tlet msg = format!(\u201chi {}\u201d, name);\n\tprintln!(\u201c{}\u201d, msg);\n}\n';
const old = '    let msg = format!("hi {}", name);\n    println!("{}", msg);';
const newText = '    let msg = format!("hello {}", name);\n    println!("{}", msg);';

const m = locate(file, old);
console.log('located:', m.kind, 'at', [m.start, m.end]);
const r = applyEdit(file, old, newText);
console.log('applied at tier', r.tier);
console.log(r.content);
assert.ok(r.content.includes('\tlet msg = format!(\u201chello {}\u201d, name);'));

assert.throws(
  () => applyEdit('retry();\nwait();\nretry();\n', 'retry();', 'retry_later();'),
  (e) => {
    console.log(`refused (${e.code}): ${e.message}`);
    return e.code === 'AMBIGUOUS';
  },
);
