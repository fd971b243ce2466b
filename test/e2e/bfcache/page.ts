// The back/forward cache test's page (test/e2e/bfcache.test.ts): one tab
// goes from ?page=a to ?page=b and back and forth; each page opens the same
// database, streams a slot of its own and acknowledges each commit. A page
// left for the back/forward cache must let the database go (or the next page
// waits at 'lock' forever); a page restored must work again, its stream
// resumed with nothing missed and nothing twice. State is in memory: a page
// restored from the cache keeps it, a page loaded again does not (the
// driver tells them apart by `restored`).

import { openDatabase, PgError, type Database } from '../../../src/client'

const NAME = 'bfcache-e2e'
const PAGE = new URLSearchParams(location.search).get('page') ?? 'a'
const SLOT = `s_${PAGE}`
const OPTIONS = { proto_version: '1', publication_names: 'p' }

const state = {
  /** Which load of the page this is: a page restored from the cache keeps it, a page loaded again gets a new one. */
  load: Math.random(),
  ready: false,
  /** pageshow with persisted: restored from the back/forward cache. */
  restored: 0,
  hidden: 0,
  /** Tags of the rows this page's stream received, in order. */
  received: [] as string[],
  violations: [] as string[],
  /** Boot phases this page's worker went through (a page stuck in 'lock' never gets past it). */
  phases: [] as string[],
}
addEventListener('pageshow', (e: PageTransitionEvent) => void (e.persisted && state.restored++))
addEventListener('pagehide', (e: PageTransitionEvent) => void (e.persisted && state.hidden++))

const db: Database = await openDatabase(NAME, { onProgress: (p) => void state.phases.push(p.phase) })
// Once per database: the table, the publication, both pages' slots.
await db.exec(`CREATE TABLE IF NOT EXISTS t (tag text PRIMARY KEY)`)
if ((await db.query(`SELECT 1 FROM pg_publication WHERE pubname = 'p'`)).rows.length === 0) await db.exec(`CREATE PUBLICATION p FOR TABLE t`)
for (const s of ['s_a', 's_b']) await db.createSlot(s).catch((e) => void (e instanceof PgError && e.code === '42710' ? 0 : state.violations.push(`slot ${s}: ${e}`)))

async function consume(): Promise<void> {
  const stream = await db.startReplication({ slot: SLOT, options: OPTIONS })
  let pending: string[] = []
  let lastEnd = 0n
  for await (const m of stream.messages()) {
    if (m.kind !== 'xlog') continue
    const t = m.message
    if (t.tag === 'B') pending = []
    else if (t.tag === 'I' && t.new.columns[0].kind === 't') pending.push(t.new.columns[0].value)
    else if (t.tag === 'C') {
      if (t.endLsn <= lastEnd) state.violations.push(`a transaction ending at ${t.endLsn} came again`)
      lastEnd = t.endLsn
      for (const tag of pending) {
        if (state.received.includes(tag)) state.violations.push(`row ${tag} came twice`)
        state.received.push(tag)
      }
      stream.ack(t.endLsn)
    }
  }
}
void consume().catch((e) => state.violations.push(`stream: ${e}`))

const api = {
  state: () => state,
  leads: () => db.leads,
  /** One row; a call that its page's suspension cut (08006) is retried, as a client retries a broken connection. */
  async write(tag: string): Promise<void> {
    for (;;) {
      try {
        await db.query('INSERT INTO t VALUES ($1) ON CONFLICT DO NOTHING', [tag])
        return
      } catch (e) {
        if (!(e instanceof PgError && e.code === '08006')) throw e
      }
    }
  },
  async rows(): Promise<string[]> {
    return (await db.query<{ tag: string }>('SELECT tag FROM t ORDER BY tag')).rows.map((r) => r.tag)
  },
}
;(window as unknown as { bf: typeof api }).bf = api
state.ready = true
