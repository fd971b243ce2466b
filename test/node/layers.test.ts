// The tree's layers import one way (DESIGN.md, "Layers"):
//
//   protocol  <-  engine  <-  wire  <-  worker, node, orez
//   client: protocol only, plus the worker API's types
//   testing: engine (Node's kit), client (the browser's), the worker API's types
//   zero: zero-cache in the tab, a consumer like any other: protocol and client
//
// and no source file grows past ~400 lines (generated ones excepted): a file
// that does, does more than one job.

import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src')

/** What each layer may import (itself included). */
const ALLOWED: Record<string, string[]> = {
  protocol: ['protocol'],
  engine: ['protocol', 'engine'],
  wire: ['protocol', 'engine', 'wire'],
  worker: ['protocol', 'engine', 'wire', 'worker'],
  node: ['protocol', 'engine', 'wire', 'node'],
  orez: ['protocol', 'engine', 'wire', 'orez'],
  client: ['protocol', 'client'],
  // The testing kit: Node's on the engine, the browser's on the client.
  testing: ['protocol', 'engine', 'client', 'testing'],
  // zero-cache in the tab reaches the database as any page does.
  zero: ['protocol', 'client', 'zero'],
}
/** Type-only imports allowed across (the client names the worker API's types; Comlink carries the calls). */
const TYPE_ONLY: Record<string, string[]> = { client: ['worker'], testing: ['worker'] }

const MAX_LINES = 400

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sources(path)
    return /\.ts$/.test(name) && !/\.test\.ts$/.test(name) ? [path] : []
  })
}

const layerOf = (path: string) => relative(SRC, path).split('/')[0]

describe('layers', () => {
  const files = sources(SRC)

  it('every source file belongs to a layer', () => {
    expect(files.map(layerOf).filter((l) => !(l in ALLOWED))).toEqual([])
  })

  it('imports only go down', () => {
    const wrong: string[] = []
    for (const file of files) {
      const from = layerOf(file)
      const text = readFileSync(file, 'utf8')
      for (const m of text.matchAll(/^\s*(import|export)\s+(type\s+)?[^'";]*?from\s+'(\.[^']+)'/gm)) {
        const to = layerOf(resolve(dirname(file), m[3]))
        if (ALLOWED[from].includes(to)) continue
        if (m[2] && TYPE_ONLY[from]?.includes(to)) continue
        wrong.push(`${relative(SRC, file)} -> ${m[3]} (${from} -> ${to})`)
      }
      for (const m of text.matchAll(/import\(\s*'(\.[^']+)'\s*\)/g)) {
        const to = layerOf(resolve(dirname(file), m[1]))
        if (!ALLOWED[from].includes(to)) wrong.push(`${relative(SRC, file)} -> import(${m[1]}) (${from} -> ${to})`)
      }
    }
    expect(wrong).toEqual([])
  })

  it(`no source file over ${MAX_LINES} lines, generated ones excepted`, () => {
    const long = files
      .filter((f) => !/\.generated\.ts$/.test(f))
      .map((f) => [relative(SRC, f), readFileSync(f, 'utf8').split('\n').length] as const)
      .filter(([, n]) => n > MAX_LINES)
    expect(long).toEqual([])
  })
})
