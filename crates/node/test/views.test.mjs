import assert from 'node:assert/strict'
import { test } from 'node:test'
import { readFileSync } from 'node:fs'
import { renderCheckedIn, OUTPUT } from '../scripts/views-dts.mjs'

// The types of what Rig, Battle, Run and Turn return are generated from the
// core's schemas of its views (tests/schemas/views.json, held to the Rust
// types by the core's test face_views), never written by hand: the
// checked-in types/views.d.ts is what the generator makes of the schemas
// now, and it heads index.d.ts, whose other declarations (the napi items)
// do not declare its types again.

const header = readFileSync(OUTPUT, 'utf8')
const dts = readFileSync(new URL('../index.d.ts', import.meta.url), 'utf8')

/** The names `export interface` / `export type` declares in `text`. */
function declared(text) {
  return [...text.matchAll(/^export (?:interface|type) (\w+)/gm)].map((m) => m[1])
}

test('types/views.d.ts is what the core\'s schemas generate (npm run types)', () => {
  const now = renderCheckedIn()
  assert.ok(now === header, 'types/views.d.ts differs from what scripts/views-dts.mjs makes of tests/schemas/: run `npm run types`')
})

test('index.d.ts begins with the generated types and declares each of them once', () => {
  assert.ok(dts.startsWith(header), 'index.d.ts does not begin with types/views.d.ts: rebuild (napi.dtsHeaderFile)')
  const names = declared(header)
  assert.ok(names.length > 20, `only ${names.length} generated types`)
  const all = declared(dts)
  for (const name of names) {
    assert.equal(all.filter((n) => n === name).length, 1, `${name} is declared again below the generated types`)
  }
})

test('every type the generated ones refer to is declared', () => {
  const known = new Set([...declared(dts), 'Array', 'Record'])
  const used = new Set([...header.replace(/\/\*[\s\S]*?\*\//g, '').matchAll(/:\s*(?:Array<)?([A-Z]\w+)/g)].map((m) => m[1]))
  for (const name of used) assert.ok(known.has(name), `${name} is used and not declared`)
})
