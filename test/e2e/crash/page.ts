// The crash test's page: a writer commits transactions to tabgres while an
// acknowledging consumer applies the stream to its own copy. The driver
// (crash.test.ts) kills the database at random points, by reloading this
// page or by terminating the worker, and this page checks after every reopen:
//   - every acknowledged write is in the primary (an unacknowledged one, the
//     one in flight when the worker died, may or may not be),
//   - LSNs never went backwards and no transaction reached the consumer twice,
//   - the consumer equals the primary once it has caught up.
// Both the writer's model and the consumer's copy live in localStorage,
// written synchronously before a write counts as acknowledged and before a
// commit is acknowledged to the slot, so they survive the reload as a
// durable consumer's state would.

import { formatLsn, openDatabase, parseLsn, replicate, type Database, type PgoutputMessage, type ReplicationStream } from '../../../src/client'

const NAME = 'crash-test'
const SLOT = 'consumer'
const OPTIONS = { proto_version: '1', publication_names: 'p' }

type Rows = Record<string, string>
type Op = { kind: 'insert'; id: number; v: string } | { kind: 'update'; id: number; v: string } | { kind: 'delete'; id: number }

interface State {
  /** What the primary must hold: every acknowledged write applied. */
  model: Rows
  /** The transaction in flight when the worker died, if any: it may or may not have committed. */
  inflight: Op[] | null
  nextId: number
  acked: number
  /** The consumer: its copy, the end LSN of the last transaction it applied, all commit LSNs seen. */
  replica: Rows
  lastEnd: string
  lastCommit: string
  commits: number
  /** The highest pg_current_wal_lsn() seen. */
  maxWal: string
  rounds: number
  violations: string[]
}

const KEY = 'tabgres-crash-state'
const load = (): State =>
  JSON.parse(localStorage.getItem(KEY) ?? 'null') ?? {
    model: {}, inflight: null, nextId: 1, acked: 0, replica: {}, lastEnd: '0/0', lastCommit: '0/0', commits: 0, maxWal: '0/0', rounds: 0, violations: [],
  }
const state = load()
const save = () => localStorage.setItem(KEY, JSON.stringify(state))
const violation = (s: string) => {
  state.violations.push(`round ${state.rounds}: ${s}`)
  save()
}

/** Random numbers for the workload (not the crash points: those are the driver's, seeded). */
let rnd = (Date.now() ^ (state.rounds * 2654435761)) >>> 0
const random = () => ((rnd = (Math.imul(rnd ^ (rnd >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0) / 2 ** 32)

function applyOps(rows: Rows, ops: Op[]): Rows {
  const out = { ...rows }
  for (const op of ops) {
    if (op.kind === 'delete') delete out[op.id]
    else out[op.id] = op.v
  }
  return out
}

const same = (a: Rows, b: Rows) => JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort())

async function primaryRows(db: Database): Promise<Rows> {
  const { rows } = await db.query<{ id: number; v: string }>('SELECT id, v FROM w')
  return Object.fromEntries(rows.map((r) => [String(r.id), r.v]))
}

async function walLsn(db: Database): Promise<bigint> {
  const { rows } = await db.query<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l')
  return parseLsn(rows[0].l)!
}

/** A generation per open database: loops of a killed one stop touching state. */
let generation = 0
let frames = 0
let caughtUpWaiter: { lsn: bigint; resolve: () => void } | null = null

/** A killed generation's stream: its loop stops. */
class Superseded extends Error {}

function consume(stream: ReplicationStream, gen: number): void {
  let txn: Op[] | null = null
  const relations = new Map<number, string>()
  const current = () => {
    if (gen !== generation) throw new Superseded()
  }
  // replicate() acknowledges a commit only after apply() returned, that is
  // after save(): applied durably first, then acknowledged.
  const apply = (msg: PgoutputMessage) => {
    current()
    frames++
    if (msg.tag === 'R') relations.set(msg.relationOid, msg.relation)
    else if (msg.tag === 'B') txn = []
    else if (msg.tag === 'I' || msg.tag === 'U') {
      const [id, v] = msg.new.columns.map((c) => (c.kind === 't' ? c.value : ''))
      txn!.push({ kind: msg.tag === 'I' ? 'insert' : 'update', id: Number(id), v })
    } else if (msg.tag === 'D') {
      txn!.push({ kind: 'delete', id: Number(msg.old.columns[0].kind === 't' ? msg.old.columns[0].value : NaN) })
    } else if (msg.tag === 'C') {
      if (msg.commitLsn <= parseLsn(state.lastCommit)!) violation(`commit ${formatLsn(msg.commitLsn)} after ${state.lastCommit}: delivered twice or went backwards`)
      state.replica = applyOps(state.replica, txn!)
      state.lastCommit = formatLsn(msg.commitLsn)
      state.lastEnd = formatLsn(msg.endLsn)
      state.commits++
      save()
      txn = null
    }
  }
  replicate(stream, apply, {
    onKeepalive: () => {
      current()
      frames++
    },
    onApplied: (lsn) => {
      if (caughtUpWaiter && lsn >= caughtUpWaiter.lsn) caughtUpWaiter.resolve()
    },
  }).catch((e) => {
    if (gen === generation && !(e instanceof Superseded)) violation(`stream failed: ${e}`)
  })
}

function caughtUp(lsn: bigint): Promise<void> {
  if (parseLsn(state.lastEnd)! >= lsn) return Promise.resolve()
  return new Promise((resolve) => (caughtUpWaiter = { lsn, resolve: () => ((caughtUpWaiter = null), resolve()) }))
}

function nextTransaction(): Op[] {
  const ids = Object.keys(state.model).map(Number)
  const ops: Op[] = []
  const n = 1 + Math.floor(random() * 3)
  for (let i = 0; i < n; i++) {
    const r = random()
    if (r < 0.5 || ids.length === 0) {
      const id = state.nextId++
      ops.push({ kind: 'insert', id, v: `v${id}-${Math.floor(random() * 1e6)}` })
      ids.push(id)
    } else if (r < 0.8) {
      ops.push({ kind: 'update', id: ids[Math.floor(random() * ids.length)], v: `u${Math.floor(random() * 1e6)}` })
    } else {
      const id = ids.splice(Math.floor(random() * ids.length), 1)[0]
      ops.push({ kind: 'delete', id })
    }
  }
  return ops
}

async function write(db: Database, gen: number): Promise<void> {
  while (gen === generation) {
    const ops = nextTransaction()
    state.inflight = ops
    save()
    await db.transaction(async (tx) => {
      for (const op of ops) {
        if (op.kind === 'insert') await tx.query('INSERT INTO w VALUES ($1, $2)', [op.id, op.v])
        else if (op.kind === 'update') await tx.query('UPDATE w SET v = $2 WHERE id = $1', [op.id, op.v])
        else await tx.query('DELETE FROM w WHERE id = $1', [op.id])
      }
    })
    if (gen !== generation) return // killed: this write's fate is decided at the next open
    state.model = applyOps(state.model, ops)
    state.inflight = null
    state.acked++
    save()
  }
}

let db: Database | null = null

async function round(): Promise<void> {
  const gen = ++generation
  db = await openDatabase(NAME, { onLocked: 'wait' }) // a reloaded page's old worker may still be letting go
  await db.exec(`CREATE TABLE IF NOT EXISTS w (id int PRIMARY KEY, v text NOT NULL)`)
  if (!(await db.query(`SELECT 1 FROM pg_publication WHERE pubname = 'p'`)).rows.length) await db.exec('CREATE PUBLICATION p FOR ALL TABLES')
  if (!(await db.query(`SELECT 1 FROM pg_replication_slots WHERE slot_name = $1`, [SLOT])).rows.length) await db.createSlot(SLOT)

  // Acknowledged writes survived; the one in flight either committed whole or not at all.
  const rows = await primaryRows(db)
  if (same(rows, state.model)) state.inflight = null
  else if (state.inflight && same(rows, applyOps(state.model, state.inflight))) {
    state.model = rows
    state.inflight = null
  } else violation(`primary ${JSON.stringify(rows)} differs from the acknowledged writes ${JSON.stringify(state.model)}`)
  const wal = await walLsn(db)
  if (wal < parseLsn(state.maxWal)!) violation(`pg_current_wal_lsn went back from ${state.maxWal} to ${formatLsn(wal)}`)
  state.maxWal = formatLsn(wal)
  save()

  // The consumer resumes where it says it is; it must catch up to an equal copy.
  const stream = await db.startReplication({ slot: SLOT, startLsn: state.lastEnd, options: OPTIONS })
  consume(stream, gen)
  await caughtUp(wal)
  if (!same(state.replica, rows)) violation(`consumer ${JSON.stringify(state.replica)} differs from primary ${JSON.stringify(rows)} after catching up`)
  state.rounds++
  save()
  void write(db, gen).catch((e) => {
    if (gen === generation) violation(`write failed: ${e}`)
  })
}

/** For the driver: the progress it waits on, and the worker-kill crash. */
Object.assign(window, {
  crashProgress: () => ({ rounds: state.rounds, acked: state.acked, commits: state.commits, frames, violations: state.violations }),
  crashWorker: () => {
    generation++ // the dead worker's loops stop counting
    db?.terminate()
    void round().catch((e) => violation(`reopen failed: ${e}`))
  },
  resetCrashState: () => localStorage.removeItem(KEY),
})

round().catch((e) => violation(`open failed: ${e}`))
