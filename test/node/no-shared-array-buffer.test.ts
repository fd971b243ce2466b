// Nothing in src/ uses SharedArrayBuffer or Atomics: WebKit is cross-origin
// isolated (crossOriginIsolated is true) yet has no SharedArrayBuffer, and a
// page served without COOP/COEP has none in any engine.
//
// Each file is parsed, not searched as text: a comment or a type annotation
// (`ArrayBuffer | SharedArrayBuffer`) is no use at run time; an identifier or
// a string naming one (`globalThis['Atomics']`) in code is.

import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import { describe, expect, it } from 'vitest'

const REPO = resolve(fileURLToPath(new URL('../..', import.meta.url)))
const NAMES = new Set(['SharedArrayBuffer', 'Atomics'])

function* tsFiles(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) yield* tsFiles(p)
    else if (name.endsWith('.ts')) yield p
  }
}

/** `file:line:column name` for each use in code (types and comments left out) under `dir`. */
function uses(dir: string, from = REPO): string[] {
  const found: string[] = []
  for (const file of tsFiles(dir)) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true)
    const visit = (node: ts.Node): void => {
      if (ts.isTypeNode(node)) return
      if ((ts.isIdentifier(node) || ts.isStringLiteralLike(node)) && NAMES.has(node.text)) {
        const { line, character } = source.getLineAndCharacterOfPosition(node.getStart(source))
        found.push(`${relative(from, file)}:${line + 1}:${character + 1} ${node.text}`)
      }
      ts.forEachChild(node, visit)
    }
    visit(source)
  }
  return found
}

describe('no SharedArrayBuffer or Atomics', () => {
  it('in src/', () => {
    expect(uses(join(REPO, 'src'))).toEqual([])
  })

  it('is what the check finds (a file of its own, outside src/)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tabgres-sab-'))
    try {
      writeFileSync(
        join(dir, 'probe.ts'),
        [
          '// SharedArrayBuffer in a comment is no use',
          'type Bytes = ArrayBuffer | SharedArrayBuffer',
          'const shared = new SharedArrayBuffer(8)',
          'Atomics.wait(new Int32Array(shared), 0, 0)',
          "const hidden = (globalThis as Record<string, unknown>)['Atomics']",
          'export type { Bytes }',
          'export { hidden }',
        ].join('\n'),
      )
      expect(uses(dir, dir)).toEqual(['probe.ts:3:20 SharedArrayBuffer', 'probe.ts:4:1 Atomics', 'probe.ts:5:56 Atomics'])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
