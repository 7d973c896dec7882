import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The repository's tests/vectors directory, found by walking up from this file. */
export function vectorsDir() {
  let dir = dirname(fileURLToPath(import.meta.url))
  for (;;) {
    const candidate = join(dir, 'tests', 'vectors')
    if (existsSync(join(candidate, 'hashline.json'))) return candidate
    const parent = dirname(dir)
    if (parent === dir) throw new Error('cannot find tests/vectors/hashline.json above ' + import.meta.url)
    dir = parent
  }
}

/** The shared hashline vectors (tests/vectors/hashline.json). */
export function loadVectors() {
  return JSON.parse(readFileSync(join(vectorsDir(), 'hashline.json'), 'utf8'))
}

/**
 * Calls `fn`, which must throw a JS `Error` of the core's taxonomy with
 * `code` (and `kind` its snake_case twin, `details` an object). `expect`
 * may pin `message` (a string: exactly; a RegExp: a match), `details`
 * (compared key by key) and other own properties (`props`, deep-equal).
 * Returns the error.
 */
export function throwsCode(fn, code, expect = {}) {
  let caught
  try {
    fn()
  } catch (error) {
    caught = error
  }
  if (caught === undefined) throw new Error(`expected a throw with code ${code}`)
  if (!(caught instanceof Error)) throw new Error(`expected an Error, got ${caught}`)
  const fail = (what) => {
    throw new Error(`${what}\n  error: ${caught.code} ${caught.message} ${JSON.stringify(caught.details)}`)
  }
  if (caught.code !== code) fail(`expected code ${code}, got ${caught.code}`)
  if (caught.kind !== code.toLowerCase()) fail(`kind ${caught.kind} is not the snake_case of ${code}`)
  if (typeof caught.details !== 'object' || caught.details === null) fail('details is not an object')
  const { message, details = {}, props = {} } = expect
  if (typeof message === 'string' && caught.message !== message) fail(`expected message ${JSON.stringify(message)}`)
  if (message instanceof RegExp && !message.test(caught.message)) fail(`expected message matching ${message}`)
  for (const [key, value] of Object.entries(details)) {
    if (JSON.stringify(caught.details[key]) !== JSON.stringify(value)) fail(`details.${key}: expected ${JSON.stringify(value)}`)
  }
  for (const [key, value] of Object.entries(props)) {
    if (JSON.stringify(caught[key]) !== JSON.stringify(value)) fail(`${key}: expected ${JSON.stringify(value)}, got ${JSON.stringify(caught[key])}`)
  }
  return caught
}

/**
 * `throwsCode` for a Promise: awaits `promise`, which must reject with a
 * JS `Error` of the core's taxonomy (checked as `throwsCode` checks it).
 * Returns the error.
 */
export async function rejectsCode(promise, code, expect = {}) {
  let outcome
  try {
    outcome = await promise
  } catch (error) {
    return throwsCode(() => { throw error }, code, expect)
  }
  throw new Error(`expected a rejection with code ${code}, got ${JSON.stringify(outcome)}`)
}

/**
 * The project's scripted model server: $CODERIG_SCRIPTED_MODEL (what
 * scripts/test.sh built, so no test waits on cargo), else built here.
 */
export function scriptedModelBinary() {
  if (process.env.CODERIG_SCRIPTED_MODEL) return process.env.CODERIG_SCRIPTED_MODEL
  const root = dirname(vectorsDir())
  execFileSync('cargo', ['build', '--quiet', '-p', 'coderig-scripted-model'], { cwd: root, stdio: 'inherit' })
  const metadata = JSON.parse(execFileSync('cargo', ['metadata', '--format-version', '1', '--no-deps'], { cwd: root, encoding: 'utf8' }))
  return join(metadata.target_directory, 'debug', 'coderig-scripted-model')
}

/**
 * The string literals a field of an interface of `dts` (index.d.ts) may
 * hold: spelled inline, or through a named union of them (a core list's
 * type, `status: StepStatus`).
 */
export function unionOf(dts, name, field) {
  const m = dts.match(new RegExp(`export interface ${name} \\{([\\s\\S]*?)\\n\\}`))
  const line = m[1].split('\n').find((l) => new RegExp(`^\\s+${field}\\??:`).test(l))
  const literals = [...line.matchAll(/'([^']*)'/g)].map((x) => x[1])
  for (const [, alias] of line.slice(line.indexOf(':') + 1).matchAll(/\b([A-Z]\w*)\b/g)) {
    const union = dts.match(new RegExp(`export type ${alias} = ((?:'[^']*'(?: \\| )?)+)\\n`))
    if (union) literals.push(...[...union[1].matchAll(/'([^']*)'/g)].map((x) => x[1]))
  }
  return literals
}
