// npm run bench:zero [-- --rows 100000 --commits 100]
// zero-cache 1.9.0 on tabgres (`npm run serve`, its three databases in a
// directory) and on PostgreSQL 15, in the same run:
// - initial sync of --rows rows (zero-cache's own "Synced ... total" figure,
//   and start to ready);
// - the same on tabgres with zero-cache as the tab runs it: one process
//   (SINGLE_PROCESS=1), the tab's SQLite in WebAssembly (src/zero/sqlite);
// - replication lag over --commits single-row commits, one at a time: from
//   the upstream's CommandComplete for the INSERT (autocommit) to the row
//   being readable in zero-cache's SQLite replica (checked after each
//   transaction zero-cache writes to it).
// Prints a table and writes bench/results/zero.json.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { startServe } from '../src/node/serve-process'
import { startZeroCache } from '../src/node/zero-cache'
import { freePort } from '../test/support/free-port'
import { ReplicaReader } from '../test/support/zero-replica'
import { inOneProcess, replicaOf } from '../test/support/zero-wasm'
import { startPg15 } from '../test/support/pg15'

const { values } = parseArgs({ options: { rows: { type: 'string', default: '100000' }, commits: { type: 'string', default: '100' } } })
const ROWS = Number(values.rows)
const COMMITS = Number(values.commits)

interface Figures {
  initialSyncMs: number
  startToReadyMs: number
  lagMs: number[]
}

async function measure(label: string, url: (db: string) => string, upstreamDb: string, cvr: string, change: string, oneProcess = false): Promise<Figures> {
  const dir = mkdtempSync(join(tmpdir(), `tabgres-bench-zero-${label}-`))
  const upstream = new pg.Client({ connectionString: url(upstreamDb) })
  await upstream.connect()
  await upstream.query(`CREATE TABLE items (id int PRIMARY KEY, title text, done bool, at timestamptz)`)
  await upstream.query(`INSERT INTO items SELECT i, 'item ' || i, i % 3 = 0, '2024-01-01'::timestamptz + i * interval '1 second' FROM generate_series(1, ${ROWS}) i`)
  let synced = NaN
  const wakers = new Set<() => void>()
  const started = performance.now()
  const zero = startZeroCache({
    upstream: url(upstreamDb),
    cvr: url(cvr),
    change: url(change),
    replicaFile: join(dir, 'replica.db'),
    port: await freePort(),
    changeStreamerPort: await freePort(),
    appId: 'bench',
    logLevel: 'debug',
    onLine: (line) => {
      const m = /Synced [\d,]+ rows .* total: ([\d.]+) ms/.exec(line)
      if (m) synced = Number(m[1])
      if (/Committed tx@/.test(line)) for (const w of wakers) w()
    },
    ...(oneProcess && inOneProcess(join(dir, 'replica.image'))),
  })
  await zero.ready
  const startToReadyMs = performance.now() - started
  const replica = oneProcess ? replicaOf(zero) : new ReplicaReader(join(dir, 'replica.db'))
  const lagMs: number[] = []
  try {
    for (let i = 0; i < COMMITS; i++) {
      const id = ROWS + 1 + i
      let wake!: () => void
      let committed = new Promise<void>((r) => (wake = r))
      const waker = () => wake()
      wakers.add(waker)
      await upstream.query(`INSERT INTO items VALUES (${id}, 'lag ${i}', false, now())`)
      const acked = performance.now()
      for (;;) {
        const rows = await replica.query(`SELECT id FROM items WHERE id = ${id}`)
        if (rows.length) break
        await committed
        committed = new Promise<void>((r) => (wake = r))
      }
      lagMs.push(performance.now() - acked)
      wakers.delete(waker)
    }
  } finally {
    await replica.close()
    await zero.stop()
    await upstream.end()
    rmSync(dir, { recursive: true, force: true })
  }
  return { initialSyncMs: synced, startToReadyMs, lagMs }
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}

const dataDir = mkdtempSync(join(tmpdir(), 'tabgres-bench-zero-serve-'))
const serve = startServe({ data: dataDir, databases: ['postgres', 'zcvr', 'zchange', 'wasm', 'wcvr', 'wchange'] })
await serve.ready
const pg15 = startPg15(await freePort(), ['postgres', 'zcvr', 'zchange'])
let tabgres: Figures
let postgres15: Figures
let oneProcess: Figures
try {
  postgres15 = await measure('pg15', pg15.url, 'postgres', 'zcvr', 'zchange')
  tabgres = await measure('tabgres', serve.url, 'postgres', 'zcvr', 'zchange')
  oneProcess = await measure('tab-sqlite', serve.url, 'wasm', 'wcvr', 'wchange', true)
} finally {
  await serve.stop()
  pg15.stop()
  rmSync(dataDir, { recursive: true, force: true })
}

const f = (n: number) => Math.round(n * 10) / 10
const row = (name: string, t: number, p: number, w: number) => ({ name, tabgres: f(t), pg15: f(p), ratio: f(t / p), 'tabgres, tab SQLite': f(w), 'tab SQLite ratio': f(w / p) })
const table = [
  row(`initial sync of ${ROWS} rows, zero-cache's figure (ms)`, tabgres.initialSyncMs, postgres15.initialSyncMs, oneProcess.initialSyncMs),
  row('zero-cache start to ready (ms)', tabgres.startToReadyMs, postgres15.startToReadyMs, oneProcess.startToReadyMs),
  row(`lag p50 over ${COMMITS} commits (ms)`, pct(tabgres.lagMs, 50), pct(postgres15.lagMs, 50), pct(oneProcess.lagMs, 50)),
  row(`lag p95 over ${COMMITS} commits (ms)`, pct(tabgres.lagMs, 95), pct(postgres15.lagMs, 95), pct(oneProcess.lagMs, 95)),
]
console.table(table)
const lagRatio = pct(tabgres.lagMs, 50) / pct(postgres15.lagMs, 50)
console.log(`lag p50 ratio x${f(lagRatio)} (target <= 2x): ${lagRatio <= 2 ? 'met' : 'NOT met'}`)
mkdirSync(new URL('./results/', import.meta.url), { recursive: true })
writeFileSync(
  new URL('./results/zero.json', import.meta.url),
  JSON.stringify({ when: new Date().toISOString(), rows: ROWS, commits: COMMITS, table, tabgres, pg15: postgres15, tabSqliteOneProcess: oneProcess, lagRatio }, null, 2),
)
console.log('wrote bench/results/zero.json')
process.exit(0)
