// The tabs bench's page (bench/tabs.ts): one of several tabs on one database.
// It times query round trips from this tab (leader or follower alike), and
// hears each takeover: from losing its leader to reaching the next, and to
// the first answer of a query sent the moment the leader went.

import { openDatabase, PgError, type Database } from '../../src/client'

const takeovers: { linkedMs: number; answeredMs: number }[] = []
let lostAt = 0
let answered: Promise<void> = Promise.resolve()

const db: Database = await openDatabase('tabs-bench', {
  onLeaderChange: (e) => {
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
  takeovers: () => takeovers,
  kill: () => db.killWorker(),
}
;(window as unknown as { bench: typeof api }).bench = api
