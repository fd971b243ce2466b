// Engine benchmark (Node, in-memory PGlite): commit-to-frame latency and
// streaming throughput. Prints a table and writes bench/results/engine.json.
// Capture overhead is bench/overhead.ts (npm run bench:engine runs it too).
//
//   npm run bench:engine [-- --quick]

import { PGlite } from '@electric-sql/pglite'
import { mkdirSync, writeFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { installChangeTracking } from '../src/engine/install'
import { handleReplicationQuery, handleStartReplication } from '../src/wire/walsender'
import { type ReplicationSession } from '../src/engine/replication/session'
import { ITEMS_TABLE } from './capture-workload'

const quick = process.argv.includes('--quick')
const LATENCY_COMMITS = quick ? 100 : 500
const BULK_ROWS = 10_000
const REPS = quick ? 3 : 5

function percentile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}
const median = (xs: number[]) => percentile(xs, 50)

/** A stream whose Commit frames resolve waiters in order. */
async function streaming(db: PGlite) {
  await handleReplicationQuery('CREATE_REPLICATION_SLOT bench LOGICAL pgoutput', db)
  let commits = 0
  let changes = 0
  const waiters: { n: number; resolve: (t: number) => void }[] = []
  let session!: ReplicationSession
  const done = handleStartReplication(
    `START_REPLICATION SLOT bench LOGICAL 0/0 (proto_version '1', publication_names 'bench')`,
    {
      write(m) {
        if (m[0] !== 0x64 || m[5] !== 0x77) return
        const tag = m[5 + 25]
        if (tag === 0x49) changes++
        if (tag !== 0x43) return
        commits++
        const now = performance.now()
        for (let i = waiters.length - 1; i >= 0; i--) if (commits >= waiters[i].n) waiters.splice(i, 1)[0].resolve(now)
      },
    },
    db,
    { onSession: (s) => (session = s) },
  )
  return {
    commitFrame: (n: number) => new Promise<number>((resolve) => (commits >= n ? resolve(performance.now()) : waiters.push({ n, resolve }))),
    get commits() {
      return commits
    },
    get changes() {
      return changes
    },
    stop: async () => {
      session.stop()
      await done
    },
  }
}

async function fresh(capture: boolean): Promise<PGlite> {
  const db = new PGlite()
  await db.exec(ITEMS_TABLE)
  if (capture) {
    await installChangeTracking(db)
    await db.exec('CREATE PUBLICATION bench FOR ALL TABLES')
  }
  return db
}

async function latency() {
  const db = await fresh(true)
  const s = await streaming(db)
  const total: number[] = []
  const afterQuery: number[] = []
  for (let i = 0; i < LATENCY_COMMITS; i++) {
    const t0 = performance.now()
    await db.query('INSERT INTO items (id, name, qty) VALUES ($1, $2, $3)', [i, `item ${i}`, i])
    const t1 = performance.now()
    const tf = await s.commitFrame(i + 1)
    total.push(tf - t0)
    afterQuery.push(Math.max(0, tf - t1))
  }
  await s.stop()
  await db.close()
  return { total, afterQuery }
}

/** The anchor: the same single-row autocommit INSERTs on bare PGlite (no capture, no stream). */
async function bareInserts() {
  const db = await fresh(false)
  const ms: number[] = []
  for (let i = 0; i < LATENCY_COMMITS; i++) {
    const t0 = performance.now()
    await db.query('INSERT INTO items (id, name, qty) VALUES ($1, $2, $3)', [i, `item ${i}`, i])
    ms.push(performance.now() - t0)
  }
  await db.close()
  return ms
}

async function throughput() {
  const db = await fresh(true)
  const s = await streaming(db)
  const runs: number[] = []
  for (let r = 0; r < REPS; r++) {
    const base = s.commits
    await db.query(`INSERT INTO items (id, name, qty) SELECT g, 'bulk ' || g, g FROM generate_series(${r * BULK_ROWS + 1_000_000}, ${(r + 1) * BULK_ROWS + 999_999}) g`)
    const t0 = performance.now()
    const t1 = await s.commitFrame(base + 1)
    runs.push(BULK_ROWS / ((t1 - t0) / 1000))
  }
  await s.stop()
  await db.close()
  return runs
}

const bare = await bareInserts()
const lat = await latency()
const tput = await throughput()

const results = {
  date: new Date().toISOString(),
  node: process.version,
  quick,
  commitToFrameMs: {
    commits: LATENCY_COMMITS,
    p50: percentile(lat.total, 50),
    p95: percentile(lat.total, 95),
    afterQueryP50: percentile(lat.afterQuery, 50),
    afterQueryP95: percentile(lat.afterQuery, 95),
    // Where the time goes: the INSERT itself on bare PGlite, the same INSERT
    // with capture (until the query returns), and the frame after it returns.
    bareInsertP50: percentile(bare, 50),
    capturedInsertP50: percentile(lat.total.map((t, i) => t - lat.afterQuery[i]), 50),
  },
  streamThroughput: { rows: BULK_ROWS, changesPerSecondMedian: median(tput), runs: tput }
}

const f = (x: number, d = 2) => x.toFixed(d)
console.table({
  'commit-to-frame p50 (ms)': { value: f(results.commitToFrameMs.p50, 3), target: '<= 0.5' },
  'commit-to-frame p95 (ms)': { value: f(results.commitToFrameMs.p95, 3), target: '' },
  'frame after query returns p50 (ms)': { value: f(results.commitToFrameMs.afterQueryP50, 3), target: '' },
  '  of which: captured INSERT p50 (ms)': { value: f(results.commitToFrameMs.capturedInsertP50, 3), target: '' },
  '  anchor: bare PGlite INSERT p50 (ms)': { value: f(results.commitToFrameMs.bareInsertP50, 3), target: '' },
  'stream 10k-row txn (changes/s)': { value: f(results.streamThroughput.changesPerSecondMedian, 0), target: '>= 50000' },
})
mkdirSync(new URL('./results/', import.meta.url), { recursive: true })
writeFileSync(new URL('./results/engine.json', import.meta.url), JSON.stringify(results, null, 2))
console.log('wrote bench/results/engine.json')
