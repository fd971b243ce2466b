// Change-log size benchmark (Node, in-memory PGlite): 100,000 changes in
// 10,000 transactions, streamed to a consumer that acknowledges every 100
// transactions. Reports the change log's rows and bytes (all of tabgres's
// change-log tables, indexes included) at the end and the largest seen, and
// the same workload's size without any acknowledgement, for scale.
// Prints a table and writes bench/results/changelog.json.
//
//   npm run bench:changelog [-- --quick]

import { PGlite } from '@electric-sql/pglite'
import { mkdirSync, writeFileSync } from 'node:fs'
import { performance } from 'node:perf_hooks'
import { encodeFrame } from '../src/protocol/replication-frames'
import { installChangeTracking } from '../src/engine/install'
import { handleReplicationQuery, handleStartReplication } from '../src/wire/walsender'
import { type ReplicationSession } from '../src/engine/replication/session'
import { pruneNow } from '../src/engine/replication/prune'

const quick = process.argv.includes('--quick')
const TXNS = quick ? 2_000 : 10_000
const ROWS_PER_TXN = 10
const ACK_EVERY = 100
const SAMPLE_EVERY = 500

const TABLES = ['_tabgres.statement_changes', '_tabgres.xacts', '_tabgres.relation_versions', '_tabgres.publication_versions']
const SIZE_SQL = `SELECT (SELECT count(*) FROM _tabgres.changes)::int AS rows,
  (${TABLES.map((t) => `pg_total_relation_size('${t}')`).join(' + ')})::int8::text AS bytes`

async function size(db: PGlite): Promise<{ rows: number; bytes: number }> {
  const { rows } = await db.query<{ rows: number; bytes: string }>(SIZE_SQL)
  return { rows: rows[0].rows, bytes: Number(rows[0].bytes) }
}

const COMMIT = 0x43

async function run(acknowledge: boolean) {
  const db = new PGlite()
  await installChangeTracking(db, { retention: 'discard' })
  await db.exec(`CREATE TABLE items (id int PRIMARY KEY, name text, qty int); CREATE PUBLICATION p FOR ALL TABLES`)
  await handleReplicationQuery('CREATE_REPLICATION_SLOT bench LOGICAL pgoutput', db)

  let session!: ReplicationSession
  let commits = 0
  let waiter: { n: number; resolve: () => void } | null = null
  const done = handleStartReplication(
    `START_REPLICATION SLOT bench LOGICAL 0/0 (proto_version '1', publication_names 'p')`,
    {
      write(m) {
        // CopyData('d') > XLogData('w', 25-byte header) > pgoutput message
        if (m[0] !== 0x64 || m[5] !== 0x77 || m[5 + 25] !== COMMIT) return
        commits++
        if (acknowledge && commits % ACK_EVERY === 0) {
          // Commit's XLogData walStart is its end LSN.
          const lsn = new DataView(m.buffer, m.byteOffset).getBigUint64(6)
          session.receive(encodeFrame({ tag: 'r', written: lsn, flushed: lsn, applied: lsn, clock: 0n, replyRequested: false }))
        }
        if (waiter && commits >= waiter.n) waiter.resolve()
      },
    },
    db,
    { onSession: (s) => (session = s) },
  )
  const streamed = (n: number) => new Promise<void>((resolve) => (commits >= n ? resolve() : (waiter = { n, resolve })))

  let peak = { rows: 0, bytes: 0 }
  const t0 = performance.now()
  for (let i = 0; i < TXNS; i++) {
    const base = i * ROWS_PER_TXN
    await db.query(`INSERT INTO items SELECT g, 'item ' || g, g FROM generate_series(${base}, ${base + ROWS_PER_TXN - 1}) g`)
    if ((i + 1) % SAMPLE_EVERY === 0) {
      const s = await size(db)
      if (s.bytes > peak.bytes) peak = s
    }
  }
  await streamed(TXNS)
  const seconds = (performance.now() - t0) / 1000
  session.stop()
  await done
  await pruneNow(db)
  const end = await size(db)
  if (end.bytes > peak.bytes) peak = end
  await db.close()
  return { end, peak, seconds }
}

const acked = await run(true)
const unacked = await run(false)

const results = {
  date: new Date().toISOString(),
  node: process.version,
  quick,
  changes: TXNS * ROWS_PER_TXN,
  transactions: TXNS,
  ackEveryTransactions: ACK_EVERY,
  acknowledged: acked,
  neverAcknowledged: unacked,
}

const kb = (b: number) => (b / 1024).toFixed(0)
console.table({
  'change-log rows at end (acks every 100 txns)': { value: acked.end.rows, target: '' },
  'change-log KiB at end (acks every 100 txns)': { value: kb(acked.end.bytes), target: '< 1024' },
  'change-log KiB peak (acks every 100 txns)': { value: kb(acked.peak.bytes), target: '< 1024' },
  'change-log rows without acks': { value: unacked.end.rows, target: '' },
  'change-log KiB without acks': { value: kb(unacked.end.bytes), target: '' },
  'workload with acks (s)': { value: acked.seconds.toFixed(1), target: '' },
})
mkdirSync(new URL('./results/', import.meta.url), { recursive: true })
writeFileSync(new URL('./results/changelog.json', import.meta.url), JSON.stringify(results, null, 2))
console.log('wrote bench/results/changelog.json')
