// npm run soak -- --minutes 30 [--restart-every 120] [--report-every 30]
//
// A long run of what must hold forever: `npm run serve` on a data directory,
// restarted (SIGTERM, a clean stop) every --restart-every seconds, while a
// writer commits mixed transactions and three consumers stream them from
// their own slots, acknowledging at different rates (every commit, every 10th,
// every 2 s), one of them killed (its socket destroyed, nothing acknowledged
// on the way out) now and then. Every writer transaction inserts one
// numbered row into `ledger`, so each transaction can be recognised in the
// stream:
// - exactly once: no consumer receives a transaction it acknowledged before
//   (one received and not yet acknowledged may come again: at-least-once);
// - nothing lost: at the end every committed number reached every consumer;
// - LSNs: commit LSNs increase within a stream, and never start at or below
//   what the consumer acknowledged.
// Every --report-every seconds it prints commits, per-consumer progress, the
// server's RSS and the change log's size. Exit 1 on any violation. Writes
// bench/results/soak.json.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { decodePgoutput } from '../src/protocol/pgoutput-decode'
import { formatLsn } from '../src/protocol/lsn'
import { startServe, type ServeProcess } from '../src/node/serve-process'
import { decodeFrame } from '../src/protocol/replication-frames'
import { freePort } from '../test/support/free-port'

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '30' },
    'restart-every': { type: 'string', default: '120' },
    'report-every': { type: 'string', default: '30' },
  },
})
const RUN_MS = Number(values.minutes) * 60_000
const RESTART_MS = Number(values['restart-every']) * 1000
const REPORT_MS = Number(values['report-every']) * 1000
/** A reconnect waits at most this long for the server to be back. */
const RECONNECT_BOUND_MS = 60_000

const dir = mkdtempSync(join(tmpdir(), 'tabgres-soak-'))
const port = await freePort()
let serve!: ServeProcess
let serverUp!: Promise<void>
const violations: string[] = []
const violation = (v: string) => {
  violations.push(v)
  console.log(`VIOLATION: ${v}`)
}
const started = performance.now()
const elapsed = () => performance.now() - started
let stopping = false

async function startServer(): Promise<void> {
  serve = startServe({ data: dir, databases: ['postgres'], port })
  serverUp = serve.ready.then(() => {})
  await serverUp
}

function client(replication = false): pg.Client {
  return new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres', ...(replication ? { replication: 'database' } : {}) } as pg.ClientConfig)
}

/** A connected client, retrying while the server restarts (bounded). */
async function connect(replication = false): Promise<pg.Client> {
  const deadline = performance.now() + RECONNECT_BOUND_MS
  for (;;) {
    await serverUp
    const c = client(replication)
    c.on('error', () => {})
    try {
      await c.connect()
      return c
    } catch (e) {
      await c.end().catch(() => {})
      if (performance.now() > deadline) throw new Error(`no connection within ${RECONNECT_BOUND_MS} ms: ${(e as Error).message}`)
      // The server is between stop and start: wait for the next one to be up.
      await new Promise((r) => setImmediate(r))
      await serverUp
    }
  }
}

// ---------------------------------------------------------------- writer

let nextN = 1
const committed = new Set<number>()
let commits = 0

async function writer(): Promise<void> {
  let c: pg.Client | null = null
  while (!stopping) {
    const n = nextN++
    try {
      c ??= await connect()
      const rows = 1 + (n % 7)
      await c.query('BEGIN')
      await c.query('INSERT INTO ledger (n, at) VALUES ($1, now())', [n])
      await c.query(`INSERT INTO churn (k, v) SELECT ($1::bigint * 10) + g, md5(g::text) FROM generate_series(1, $2::int) g`, [n, rows])
      if (n % 3 === 0) await c.query(`UPDATE churn SET v = v || 'x' WHERE k BETWEEN ($1::bigint - 30) * 10 AND $1::bigint * 10`, [n])
      if (n % 5 === 0) await c.query(`DELETE FROM churn WHERE k < ($1::bigint - 50) * 10`, [n])
      await c.query('COMMIT')
      committed.add(n)
      commits++
    } catch {
      // The server went away mid-transaction: did the COMMIT make it?
      await c?.end().catch(() => {})
      c = null
      const check = await connect()
      const r = await check.query('SELECT 1 FROM ledger WHERE n = $1', [n])
      if (r.rowCount) {
        committed.add(n)
        commits++
      }
      await check.end()
    }
  }
  await c?.end()
}

// ------------------------------------------------------------- consumers

interface Consumer {
  name: string
  slot: string
  /** Numbers received in committed transactions, each with its commit's end LSN. */
  received: Map<number, bigint>
  /** The slot's confirmed_flush_lsn as the server reported it at the last (re)connect. */
  confirmed: bigint
  duplicates: number
  redelivered: number
  kills: number
  reconnects: number
  /** Ends the current connection abruptly (a killed consumer), or (at the end) once all is acknowledged. */
  kill?: () => void
  finish?: () => void
}

type AckPolicy = (commitsSinceAck: number, msSinceAck: number) => boolean

/** Numbers committed whose transaction the slot has not confirmed yet. */
function unconfirmed(c: Consumer): number {
  let n = 0
  for (const x of committed) {
    const lsn = c.received.get(x)
    if (lsn === undefined || lsn > c.confirmed) n++
  }
  return n
}

/** The slot's confirmed_flush_lsn; asked again when a restart cuts the question off (bounded). */
async function slotPosition(slot: string): Promise<bigint> {
  const deadline = performance.now() + RECONNECT_BOUND_MS
  for (;;) {
    const c = await connect()
    try {
      const r = await c.query(`SELECT confirmed_flush_lsn::text AS c FROM pg_replication_slots WHERE slot_name = $1`, [slot])
      const [hi, lo] = (r.rows[0].c as string).split('/')
      return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`)
    } catch (e) {
      if (performance.now() > deadline) throw e
    } finally {
      await c.end().catch(() => {})
    }
  }
}

function consumer(name: string, policy: AckPolicy): Consumer & { run(): Promise<void> } {
  const state: Consumer = { name, slot: `soak_${name}`, received: new Map(), confirmed: 0n, duplicates: 0, redelivered: 0, kills: 0, reconnects: 0 }
  const run = async () => {
    for (;;) {
      let rep: pg.Client
      try {
        // What the server kept of this consumer's acknowledgements: the truth
        // the duplicate check holds the stream to (an acknowledgement sent
        // just before a kill may never have arrived, and then is not one).
        state.confirmed = await slotPosition(state.slot)
        if (stopping && unconfirmed(state) === 0) return
        rep = await connect(true)
      } catch (e) {
        violation(`${name}: ${(e as Error).message}`)
        return
      }
      state.reconnects++
      await new Promise<void>((resolve) => {
        const conn = (rep as unknown as { connection: NodeJS.EventEmitter & { stream: { write(b: Buffer): void; destroy(): void } } }).connection
        const acceptedFrom = state.confirmed
        let txn: number[] = []
        let lastCommit = 0n
        let pending = 0
        let last = 0n
        let lastAckAt = performance.now()
        const relations = new Map<number, string>()
        const ack = () => {
          if (last === 0n) return
          // CopyData around a standby status update: written, flushed, applied = last.
          const m = Buffer.alloc(5 + 34)
          m[0] = 0x64
          m.writeInt32BE(4 + 34, 1)
          m[5] = 0x72
          for (const at of [6, 14, 22]) m.writeBigUInt64BE(last, at)
          m.writeBigInt64BE((BigInt(Date.now()) - 946684800000n) * 1000n, 30)
          conn.stream.write(m)
          pending = 0
          lastAckAt = performance.now()
        }
        state.kill = () => {
          state.kills++
          conn.stream.destroy()
        }
        state.finish = () => {
          ack()
          void rep.end().catch(() => {})
        }
        conn.on('copyData', ({ chunk }: { chunk: Buffer }) => {
          const f = decodeFrame(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
          if (f.tag === 'k') {
            if (f.replyRequested || stopping) ack()
            return
          }
          if (f.tag !== 'w') return
          const m = decodePgoutput(f.data)
          if (m.tag === 'R') relations.set(m.relationOid, m.relation)
          else if (m.tag === 'B') txn = []
          else if (m.tag === 'I' && relations.get(m.relationOid) === 'ledger') {
            const c = m.new.columns[0]
            if (c.kind === 't') txn.push(Number(c.value))
          } else if (m.tag === 'C') {
            if (m.commitLsn <= lastCommit) violation(`${name}: commit LSN ${formatLsn(m.commitLsn)} after ${formatLsn(lastCommit)}`)
            if (m.commitLsn <= acceptedFrom) violation(`${name}: commit LSN ${formatLsn(m.commitLsn)} at or below the slot's ${formatLsn(acceptedFrom)}`)
            lastCommit = m.commitLsn
            for (const n of txn) {
              const before = state.received.get(n)
              if (before !== undefined && before <= acceptedFrom) {
                state.duplicates++
                violation(`${name}: transaction ${n} received again after the slot confirmed it`)
              } else if (before !== undefined) state.redelivered++
              state.received.set(n, m.endLsn)
            }
            last = m.endLsn
            pending++
            if (policy(pending, performance.now() - lastAckAt) || stopping) ack()
          }
        })
        rep.on('end', () => resolve())
        rep.on('error', () => resolve())
        rep.query(`START_REPLICATION SLOT ${state.slot} LOGICAL 0/0 (proto_version '1', publication_names 'soak')`).then(
          () => rep.end(),
          () => {},
        )
      })
      state.kill = state.finish = undefined
      await rep.end().catch(() => {})
    }
  }
  return Object.assign(state, { run })
}

const consumers = [
  consumer('every', () => true),
  consumer('tenth', (since) => since >= 10),
  consumer('timed', (_since, ms) => ms >= 2000),
]

// ----------------------------------------------------------------- main

await startServer()
{
  const c = await connect()
  await c.query(`CREATE TABLE ledger (n bigint PRIMARY KEY, at timestamptz); CREATE TABLE churn (k bigint PRIMARY KEY, v text);
    CREATE PUBLICATION soak FOR TABLE ledger, churn`)
  await c.end()
  const w = await connect(true)
  for (const s of consumers) await w.query(`CREATE_REPLICATION_SLOT ${s.slot} LOGICAL pgoutput`)
  await w.end()
}

interface Sample {
  minute: number
  commits: number
  rssMb: number
  changeLogKb: number
  consumers: Record<string, { received: number; unconfirmed: number; duplicates: number; redelivered: number }>
}
const samples: Sample[] = []
let restarts = 0
let kills = 0

async function sample(): Promise<void> {
  let changeLogKb = NaN
  try {
    const c = await connect()
    const r = await c.query(
      `SELECT (pg_total_relation_size('_tabgres.statement_changes') + pg_total_relation_size('_tabgres.xacts')) / 1024 AS kb`,
    )
    changeLogKb = Number(r.rows[0].kb)
    await c.end()
  } catch {}
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${serve.process.pid}/status`, 'utf8'))
  const s: Sample = {
    minute: Math.round(elapsed() / 600) / 100,
    commits,
    rssMb: m ? Math.round(Number(m[1]) / 1024) : NaN,
    changeLogKb,
    consumers: Object.fromEntries(consumers.map((c) => [c.name, { received: c.received.size, unconfirmed: unconfirmed(c), duplicates: c.duplicates, redelivered: c.redelivered }])),
  }
  samples.push(s)
  console.log(
    `${s.minute.toFixed(1)} min: ${s.commits} commits, ${restarts} restarts, server RSS ${s.rssMb} MB, change log ${s.changeLogKb} kB; ` +
      consumers.map((c) => `${c.name} ${c.received.size} received, ${unconfirmed(c)} not yet confirmed (${c.redelivered} redelivered, ${c.kills} kills)`).join('; '),
  )
}

const running = [writer(), ...consumers.map((c) => c.run())]
const timers = [
  setInterval(() => void sample(), REPORT_MS),
  setInterval(() => {
    // Now and then a consumer dies without a goodbye.
    consumers[kills++ % consumers.length].kill?.()
  }, Math.max(5000, RESTART_MS / 3)),
]
let nextRestart = performance.now() + RESTART_MS
while (elapsed() < RUN_MS) {
  await new Promise((r) => setTimeout(r, Math.min(1000, Math.max(0, RUN_MS - elapsed()))))
  if (performance.now() >= nextRestart && elapsed() < RUN_MS) {
    let up!: () => void
    serverUp = new Promise((r) => (up = r))
    const code = await serve.stop()
    if (code !== 0) violation(`the server exited ${code} on SIGTERM`)
    serve = startServe({ data: dir, databases: ['postgres'], port })
    await serve.ready
    up()
    restarts++
    nextRestart = performance.now() + RESTART_MS
  }
}
stopping = true
for (const t of timers) clearInterval(t)
// Consumers acknowledge everything from now on and end once their slots have
// confirmed every committed transaction (bounded).
const finishing = setInterval(() => {
  for (const c of consumers) if ([...committed].every((n) => c.received.has(n))) c.finish?.()
}, 500)
const finished = await Promise.race([
  Promise.all(running).then(() => true),
  new Promise<boolean>((r) => setTimeout(() => r(false), 120_000)),
])
clearInterval(finishing)
if (!finished) violation('consumers did not catch up within 120 s of the end')
await sample()
for (const c of consumers) {
  const missing = [...committed].filter((n) => !c.received.has(n))
  if (missing.length) violation(`${c.name}: ${missing.length} committed transactions never received (first ${missing.slice(0, 5).join(', ')})`)
}
await serve.stop()
rmSync(dir, { recursive: true, force: true })

const rss = samples.map((s) => s.rssMb).filter(Number.isFinite)
const log = samples.map((s) => s.changeLogKb).filter(Number.isFinite)
const summary = {
  when: new Date().toISOString(),
  minutes: Number(values.minutes),
  restarts,
  commits,
  consumers: consumers.map((c) => ({ name: c.name, received: c.received.size, unconfirmed: unconfirmed(c), duplicates: c.duplicates, redelivered: c.redelivered, kills: c.kills, connections: c.reconnects })),
  rssMb: { first: rss[0], max: Math.max(...rss), last: rss[rss.length - 1] },
  changeLogKb: { max: Math.max(...log), last: log[log.length - 1] },
  violations,
  samples,
}
mkdirSync(new URL('../bench/results/', import.meta.url), { recursive: true })
writeFileSync(new URL('../bench/results/soak.json', import.meta.url), JSON.stringify(summary, null, 2))
console.table(summary.consumers)
console.log(
  `soak: ${summary.minutes} min, ${commits} commits, ${restarts} restarts; server RSS ${summary.rssMb.first} -> max ${summary.rssMb.max} MB; ` +
    `change log max ${summary.changeLogKb.max} kB; ${violations.length} violations. Wrote bench/results/soak.json`,
)
process.exit(violations.length ? 1 : 0)
