import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The shared test vectors, found by walking up from this file to the repo root. */
export function loadVectors() {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const candidate = join(dir, 'tests', 'vectors', 'hashline.json')
    if (existsSync(candidate)) return JSON.parse(readFileSync(candidate, 'utf8'))
    const parent = dirname(dir)
    if (parent === dir) throw new Error('cannot find tests/vectors/hashline.json above ' + import.meta.url)
    dir = parent
  }
}
