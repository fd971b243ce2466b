// Boot, measured in a production build of this page (bench/browser.ts builds
// it and opens it in fresh browser contexts, so "first" means a fresh
// profile: nothing cached, no template in IndexedDB). Each time runs from
// spawning the worker to the first answer, on the page's clock.
//
//   tabgres: first-ever open, then new databases and reopens
//   bare:    bare PGlite in memory (first, then again), new idb://, reopen
//   kit:     the testing kit's fresh databases, and memory after 200

import { openDatabase, type BootInfo } from '../../src/client'
import { createTestKit } from '../../src/testing/browser'
import type { BareBootRequest } from './bare-worker'

export type BootMode = 'tabgres' | 'bare' | 'kit'

export interface Timed {
  pageMs: number
  workerMs?: number
  phases?: Record<string, number>
}

export interface BootResults {
  tabgres?: { firstEver: Timed & { template?: string }; fresh: Timed[]; reopen: Timed[] }
  bare?: { memoryFirst: Timed; memory: Timed[]; idbNew: Timed; idbReopen: Timed[] }
  kit?: {
    first: number
    fresh: number[]
    /** The page's and its workers' memory (measureUserAgentSpecificMemory) before and after 200 more fresh databases, each closed. */
    memory: { before: number | null; after200: number | null; liveAfter: number; wasmBytesAfter: number }
  }
}

declare global {
  interface Window {
    runBoot(mode: BootMode, runs: number): Promise<BootResults>
  }
}

const log = (line: string) => window.benchLog?.(line)
let counter = 0
const unique = (prefix: string) => `${prefix}_${Date.now().toString(36)}_${++counter}`

async function tabgresOpen(name: string): Promise<{ t: Timed; boot: BootInfo; close: () => Promise<void> }> {
  const t0 = performance.now()
  const db = await openDatabase(name)
  await db.query('SELECT 1')
  const pageMs = performance.now() - t0
  return { t: { pageMs, workerMs: db.boot.ms, phases: db.boot.phases }, boot: db.boot, close: () => db.close() }
}

function bare(idb: string | null): Promise<Timed> {
  const t0 = performance.now()
  const worker = new Worker(new URL('./bare-worker.ts', import.meta.url), { type: 'module' })
  return new Promise((resolve, reject) => {
    worker.onerror = (e) => reject(new Error(`bare PGlite worker: ${e.message}`))
    worker.onmessage = (ev: MessageEvent<{ workerMs: number }>) => {
      resolve({ pageMs: performance.now() - t0, workerMs: ev.data.workerMs })
      worker.terminate()
    }
    const req: BareBootRequest = { idb }
    worker.postMessage(req)
  })
}

/**
 * Bytes this page and its workers use (Chromium, cross-origin isolated, with
 * --enable-blink-features=ForceEagerMeasureMemory so it measures at once
 * instead of at the next GC); null where unavailable.
 */
async function measureMemory(): Promise<number | null> {
  const p = performance as Performance & { measureUserAgentSpecificMemory?: () => Promise<{ bytes: number }> }
  if (!self.crossOriginIsolated || !p.measureUserAgentSpecificMemory) return null
  return (await p.measureUserAgentSpecificMemory()).bytes
}

const phaseText = (t: Timed) =>
  Object.entries(t.phases ?? {})
    .map(([k, v]) => `${k} ${v.toFixed(0)}`)
    .join(', ')

window.runBoot = async (mode, runs) => {
  if (mode === 'tabgres') {
    const first = await tabgresOpen(unique('first'))
    await first.close()
    log(`tabgres first-ever open ${first.t.pageMs.toFixed(0)} ms (template: ${first.boot.template}; ${phaseText(first.t)})`)
    const fresh: Timed[] = []
    const reopen: Timed[] = []
    for (let i = 0; i < runs; i++) {
      const name = unique('fresh')
      const a = await tabgresOpen(name)
      await a.close()
      const b = await tabgresOpen(name)
      await b.close()
      fresh.push(a.t)
      reopen.push(b.t)
      log(`tabgres fresh ${a.t.pageMs.toFixed(0)} ms (${phaseText(a.t)}); reopen ${b.t.pageMs.toFixed(0)} ms (${phaseText(b.t)})`)
    }
    return { tabgres: { firstEver: { ...first.t, template: first.boot.template }, fresh, reopen } }
  }
  if (mode === 'bare') {
    const memoryFirst = await bare(null)
    log(`bare PGlite in memory, first ${memoryFirst.pageMs.toFixed(0)} ms`)
    const memory: Timed[] = []
    for (let i = 0; i < runs; i++) memory.push(await bare(null))
    const name = unique('bare')
    const idbNew = await bare(name)
    const idbReopen: Timed[] = []
    for (let i = 0; i < runs; i++) idbReopen.push(await bare(name))
    log(`bare PGlite: memory ${memory.map((t) => t.pageMs.toFixed(0)).join(', ')} ms; new idb ${idbNew.pageMs.toFixed(0)} ms; reopen ${idbReopen.map((t) => t.pageMs.toFixed(0)).join(', ')} ms`)
    return { bare: { memoryFirst, memory, idbNew, idbReopen } }
  }
  // The kit: a first database (the kit worker starts, the template is fetched
  // and decoded), then `runs` timed fresh databases (fresh() until its first
  // answer) each used and closed as a test would, then 200 more, and what the
  // workers hold afterwards.
  const kit = createTestKit()
  try {
    let t0 = performance.now()
    const firstDb = await kit.fresh()
    const first = performance.now() - t0
    await firstDb.close()
    const fresh: number[] = []
    const use = async (db: Awaited<ReturnType<typeof kit.fresh>>) => {
      await db.exec('CREATE TABLE t (id int PRIMARY KEY, v text)')
      await db.query(`INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 10) g`)
      await db.close()
    }
    for (let i = 0; i < runs; i++) {
      t0 = performance.now()
      const db = await kit.fresh()
      // Until it answers: a worker boots its next database while idle, so
      // what a test waits for is fresh() and its first query together.
      await db.query('SELECT 1')
      fresh.push(performance.now() - t0)
      await use(db)
    }
    const before = await measureMemory()
    for (let i = 0; i < 200; i++) await use(await kit.fresh())
    const after200 = await measureMemory()
    const stats = await kit.stats()
    const memory = { before, after200, liveAfter: stats.live, wasmBytesAfter: stats.wasmBytes }
    log(`kit: first ${first.toFixed(0)} ms; fresh ${fresh.map((t) => t.toFixed(0)).join(' ')}; memory ${JSON.stringify(memory)}`)
    return { kit: { first, fresh, memory } }
  } finally {
    kit.close()
  }
}
