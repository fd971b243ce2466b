// Access to the PostgreSQL 15 golden captures in ../shared/conformance (next to
// the repository, as on developer machines and in CI).

import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
export const CONFORMANCE_DIR = resolve(process.env.TABGRES_CONFORMANCE ?? join(here, '../../../shared/conformance'))

/**
 * Whether the captures are there. Locally a missing ../shared skips the
 * conformance tests; in CI (CI=true) it is an error, so they never skip silently.
 */
export function conformanceAvailable(): boolean {
  const ok = existsSync(join(CONFORMANCE_DIR, 'golden', 'A.json'))
  if (!ok && process.env.CI) {
    throw new Error(`conformance captures not found at ${CONFORMANCE_DIR} (set TABGRES_CONFORMANCE)`)
  }
  return ok
}

export function golden<T = any>(name: string): T {
  return JSON.parse(readFileSync(join(CONFORMANCE_DIR, 'golden', name), 'utf8'))
}

export async function workload(name: string): Promise<{
  setup: string[]
  workload: (string | { sql: string; expectError: string })[]
  options: Record<string, string>
  slot: string
}> {
  return (await import(join(CONFORMANCE_DIR, 'workloads', name))).default
}

export async function referenceDecoder(): Promise<{
  decode: (p: Uint8Array | string) => any
  normalize: (p: (Uint8Array | string)[]) => any[]
}> {
  return import(join(CONFORMANCE_DIR, 'decode.mjs'))
}

/**
 * One line per normalized message (the conformance decoder's form) for
 * goldens too large to keep whole: tag, stream xact, relation, first column
 * value or flags. Values themselves are compared by the full goldens.
 */
export function compactMessage(m: Record<string, any>): string {
  const xact = m.streamXact ?? m.xact ?? ''
  const rel = m.relation?.name ?? (typeof m.relation === 'string' ? m.relation : '')
  const tuple = m.new ?? m.old
  const first = tuple ? `${tuple.kind}:${tuple.columns[0]?.value ?? tuple.columns[0]?.kind}` : ''
  const extra = m.tag === 'S' ? `first=${m.firstSegment}` : m.tag === 'M' ? `${m.prefix}:${m.content}` : m.tag === 'T' ? `flags=${m.flags}` : ''
  return [m.tag, xact, rel, first, extra].join(' ').trimEnd()
}
