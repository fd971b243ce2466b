// The page of `npm run bench:zero-tab` (bench/zero-tab.ts): zero-cache in a
// worker of this page on three tabgres databases, a Zero client here.
//   - boot: startZeroCache → ready, first visit (initial sync of `rows` rows)
//     and a restart on the replica kept in IndexedDB (no resync), and the
//     Zero client's first complete result;
//   - write → Zero query: a single-row INSERT issued with db.query → the row
//     in a live Zero query's listener; beside it, in the same run, the
//     INSERT's own round trip (db.query issued → resolved), the anchor.

import { ANYONE_CAN_DO_ANYTHING, boolean, createSchema, definePermissions, string, table, Zero } from '@rocicorp/zero'
import { openDatabase } from '../../src/client/index'
import { startZeroCache, type ZeroCache } from '../../src/zero/tab/start'

const todo = table('todo').columns({ id: string(), title: string(), done: boolean() }).primaryKey('id')
const schema = createSchema({ tables: [todo], enableLegacyQueries: true, enableLegacyMutators: true })

export interface ZeroTabResults {
  rows: number
  writes: number
  bootFirstMs: number
  bootRestartMs: number
  firstResultMs: number
  writeToQuery: { p50: number; p95: number }
  insertRoundTrip: { p50: number; p95: number }
}

declare global {
  interface Window {
    runZeroTab(opts: { rows: number; writes: number }): Promise<ZeroTabResults>
  }
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!

window.runZeroTab = async ({ rows, writes }) => {
  const id = crypto.randomUUID().slice(0, 8)
  const [upstream, cvr, change] = await Promise.all(['up', 'cvr', 'chg'].map((n) => openDatabase(`bench-zero-${n}-${id}`)))
  await upstream!.exec(`create table todo (id text primary key, title text not null, done boolean not null default false)`)
  await upstream!.query(`insert into todo select i::text, 'todo ' || i, i % 2 = 0 from generate_series(1, $1) i`, [rows])
  const url = new URL('/zero-cache/zero-cache.js', location.origin).href
  const start = async (): Promise<[ZeroCache, number]> => {
    const t0 = performance.now()
    const z = startZeroCache({ upstream: upstream!, cvr: cvr!, change: change!, url, replicaStore: `bench-zero-${id}`, onLog: (level, text) => void (level === 'warn' || level === 'error' ? console.warn(`[zero-cache] ${text}`) : 0) })
    await z.ready
    return [z, performance.now() - t0]
  }
  let [zc, bootFirstMs] = await start()
  const permissions = await definePermissions<Record<string, never>, typeof schema>(schema, () => ({ todo: ANYONE_CAN_DO_ANYTHING }))
  await upstream!.query(`update zero.permissions set permissions = $1`, [JSON.stringify(permissions)])
  expectCode(await zc.stop(20_000))
  let bootRestartMs
  ;[zc, bootRestartMs] = await start()

  const z = new Zero({ server: zc.server, schema, userID: 'bench', kvStore: 'mem' })
  const t0 = performance.now()
  const view = z.materialize(z.query.todo.where('title', 'LIKE', 'bench %'))
  let seen = new Set<string>()
  const waiters = new Map<string, () => void>()
  let markComplete!: () => void
  const complete = new Promise<void>((r) => (markComplete = r))
  view.addListener((data, resultType) => {
    seen = new Set((data as readonly { id: string }[]).map((r) => r.id))
    for (const [k, w] of waiters) if (seen.has(k)) (waiters.delete(k), w())
    if (resultType === 'complete') markComplete()
  })
  await complete
  const firstResultMs = performance.now() - t0

  const writeToQuery: number[] = []
  const insertRoundTrip: number[] = []
  for (let i = 0; i < writes; i++) {
    const key = `w${i}`
    const shown = new Promise<void>((r) => waiters.set(key, r))
    const a = performance.now()
    await upstream!.query(`insert into todo values ($1, $2, false)`, [key, `bench ${i}`])
    insertRoundTrip.push(performance.now() - a)
    await shown
    writeToQuery.push(performance.now() - a)
  }
  view.destroy()
  await z.close()
  await zc.stop(20_000)
  for (const db of [upstream, cvr, change]) await db!.close()
  return {
    rows,
    writes,
    bootFirstMs,
    bootRestartMs,
    firstResultMs,
    writeToQuery: { p50: pct(writeToQuery, 50), p95: pct(writeToQuery, 95) },
    insertRoundTrip: { p50: pct(insertRoundTrip, 50), p95: pct(insertRoundTrip, 95) },
  }
}

function expectCode(code: number): void {
  if (code !== 0) throw new Error(`zero-cache stopped with ${code}`)
}
