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
