import assert from 'node:assert/strict'
import { test } from 'node:test'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

// index.d.ts is valid TypeScript under --strict, and the input types generated
// from the core's schemas (types/views.d.ts) accept what the core's decoders
// take and refuse what they refuse: test/types/inputs.ts holds real specs and
// filters, and an `@ts-expect-error` on each shape the decoders refuse (tsc
// reports a directive with no error under it, so each must stay an error).

const here = (path) => fileURLToPath(new URL(path, import.meta.url))

test('index.d.ts compiles and types the specs and filters as the core decodes them', () => {
  const tsc = here('../node_modules/typescript/bin/tsc')
  const args = ['--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', '--types', 'node', here('types/inputs.ts')]
  let out = ''
  try {
    execFileSync(process.execPath, [tsc, ...args], { encoding: 'utf8', stdio: 'pipe' })
  } catch (e) {
    out = `${e.stdout}${e.stderr}`
  }
  assert.equal(out, '', `tsc ${args.join(' ')}:\n${out}`)
})
