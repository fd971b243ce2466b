// The tabs bench's page (bench/tabs.ts): one of several tabs on one database.
// It times query round trips from this tab (leader or follower alike), and
// hears each takeover: from losing its leader to reaching the next, and to
// the first answer of a query sent the moment the leader went. Beside them,
// the anchors in the same engine: bare PGlite in a worker of this page
// (./bare-worker.ts), its query round trip, and its reopen of an idb://
// database (spawn → first answer), which is what a new leader does too.

import { openDatabase, PgError, type Database } from '../../src/client'
import type { BareRequest } from './bare-worker'

/** What this page got to and heard, for bench/tabs.ts to print when a tab never gets ready. */
const trace: string[] = []
const note = (what: string) => trace.push(`${performance.now().toFixed(0)} ms: ${what}`)
;(window as unknown as { benchTrace: string[] }).benchTrace = trace
note('opening')
for (const type of ['pagehide', 'pageshow', 'visibilitychange', 'freeze', 'resume'])
  (type === 'pagehide' || type === 'pageshow' ? window : document).addEventListener(type, (e) =>
    note(`${type}${'persisted' in e ? ` persisted=${(e as PageTransitionEvent).persisted}` : ''} (${document.visibilityState})`),
  )

const takeovers: { linkedMs: number; answeredMs: number }[] = []
let lostAt = 0
let answered: Promise<void> = Promise.resolve()

const db: Database = await openDatabase('tabs-bench', {
  onLeaderChange: (e) => {
    note(`leader change: ${JSON.stringify(e)}`)
    if (e.type === 'lost') {
      lostAt = performance.now()
      // A call made while the data changes hands: it waits for the next leader.
      answered = (async () => {
        for (;;) {
          try {
            await db.query('SELECT 1')
            return
          } catch (err) {
            if (!(err instanceof PgError && err.code === '08006')) throw err
          }
        }
      })()
    } else if (e.ms > 0) {
      const linkedMs = e.ms
      const at = lostAt
      void answered.then(() => takeovers.push({ linkedMs, answeredMs: performance.now() - at }))
    }
  },
})

note(`open: ${db.leads ? 'leads' : 'follows'}`)

const BARE_IDB = 'tabs-bench-bare'

function bareWorker(): Worker {
  return new Worker(new URL('./bare-worker.ts', import.meta.url), { type: 'module' })
}

function ask<T>(worker: Worker, req: BareRequest): Promise<T> {
  return new Promise((resolve, reject) => {
    worker.onmessage = (ev: MessageEvent<T>) => resolve(ev.data)
    worker.onerror = (e) => reject(new Error(`bare PGlite worker: ${e.message}`))
    worker.postMessage(req)
  })
}

let bareInMemory: Promise<Worker> | null = null

const api = {
  leads: () => db.leads,
  /** `n` round trips of a one-row SELECT, each timed (ms). */
  async roundTrips(n: number): Promise<number[]> {
    const out: number[] = []
    for (let i = 0; i < n; i++) {
      const t = performance.now()
      await db.query('SELECT 1 AS x')
      out.push(performance.now() - t)
    }
    return out
  },
  /** The same through bare PGlite in memory in a worker of this page, over postMessage. */
  async bareRoundTrips(n: number): Promise<number[]> {
    bareInMemory ??= (async () => {
      const w = bareWorker()
      await ask(w, { open: null })
      return w
    })()
    const w = await bareInMemory
    const out: number[] = []
    for (let i = 0; i < n; i++) {
      const t = performance.now()
      await ask(w, { query: 'SELECT 1 AS x' })
      out.push(performance.now() - t)
    }
    return out
  },
  /** Bare PGlite on idb://tabs-bench-bare, page clock from spawning its worker to its first answer (the first call creates it). */
  async bareOpen(): Promise<number> {
    const t = performance.now()
    const w = bareWorker()
    try {
      await ask(w, { open: BARE_IDB })
      return performance.now() - t
    } finally {
      w.terminate()
    }
  },
  takeovers: () => takeovers,
  kill: () => db.killWorker(),
}
;(window as unknown as { bench: typeof api }).bench = api
