// A streamed replica for tests: START_REPLICATION on a primary (PGlite with
// change tracking), every pgoutput message applied in stream order by the
// ReplicaApplier to a second PGlite, standby status updates to acknowledge
// and to ask for a keepalive, and a table-by-table comparison of both sides.
// Waits resolve on applied frames, never on timers.

import type { PGlite } from '@electric-sql/pglite'
import { decodePgoutput } from '../../src/protocol/pgoutput-decode'
import { ReplicaApplier, type ApplyTarget } from '../../src/client/replica/apply'
import { formatLsn, type Lsn } from '../../src/protocol/lsn'
import { decodeFrame, encodeFrame } from '../../src/protocol/replication-frames'
import { installChangeTracking } from '../../src/engine/install'
import { handleReplicationQuery, handleStartReplication } from '../../src/wire/walsender'
import { type ReplicationSession } from '../../src/engine/replication/session'
import { positionLsn } from '../../src/engine/replication/positions'

/**
 * Tracks changes on `primary`, runs `setupSql`, publishes all tables, makes a
 * slot, and starts streaming into `replica`: the pair every replica test needs.
 */
export async function streamInto(
  primary: PGlite,
  replica: PGlite,
  names: { slot: string; publication: string; setupSql?: string },
): Promise<StreamedReplica> {
  await installChangeTracking(primary)
  await primary.exec(`${names.setupSql ?? ''} CREATE PUBLICATION "${names.publication}" FOR ALL TABLES;`)
  const reply = await handleReplicationQuery(`CREATE_REPLICATION_SLOT "${names.slot}" LOGICAL pgoutput`, primary, {})
  if (reply?.[0] === 0x45) throw new Error(`CREATE_REPLICATION_SLOT failed: ${new TextDecoder().decode(reply.subarray(5))}`)
  const stream = new StreamedReplica(primary, replica, names.slot, names.publication)
  await stream.start()
  return stream
}

/** The primary's write position: every commit so far ends at or below it. */
export async function primaryPosition(db: PGlite): Promise<Lsn> {
  const { rows } = await db.query<{ p: string }>('SELECT _tabgres.position()::text AS p')
  return positionLsn(BigInt(rows[0].p))
}

export class StreamedReplica {
  readonly applier: ReplicaApplier
  /** Everything at or below this LSN is applied on the replica (a commit's end or a keepalive's walEnd, in stream order). */
  processed: Lsn = 0n
  /** Messages applied (all tags). */
  messages = 0
  /**
   * What the stream carried, by kind: message tags, and 'K'/'O' old tuples,
   * 'u' unchanged TOAST values, for a fuzz run to show what it exercised.
   */
  readonly seen: Record<string, number> = {}
  private chain: Promise<void> = Promise.resolve()
  private failure: unknown = null
  private session: ReplicationSession | null = null
  private done: Promise<void> | null = null
  private waiters: { pred: () => boolean; resolve: () => void; reject: (e: unknown) => void }[] = []

  constructor(
    readonly primary: PGlite,
    readonly replica: PGlite,
    readonly slot: string,
    readonly publication: string,
    target: ApplyTarget = replica,
  ) {
    this.applier = new ReplicaApplier(target)
  }

  /** START_REPLICATION; resolves once the session streams. */
  async start(startLsn: Lsn = 0n): Promise<void> {
    let ready!: () => void
    const started = new Promise<void>((r) => (ready = r))
    this.done = handleStartReplication(
      `START_REPLICATION SLOT "${this.slot}" LOGICAL ${formatLsn(startLsn)} (proto_version '1', publication_names '"${this.publication}"')`,
      { write: (data) => this.onWire(data) },
      this.primary,
      {
        onSession: (s) => {
          this.session = s
          ready()
        },
      },
    ).catch((e) => this.fail(e))
    await Promise.race([started, this.done.then(() => Promise.reject(this.failure ?? new Error('stream ended before it started')))])
  }

  /** Acknowledges the last applied commit (flush = its end LSN), so the primary may prune. */
  ack(): void {
    const c = this.applier.lastCommit
    if (c) this.send(c.endLsn, false)
  }

  /** Resolves once the replica has applied every commit the primary made so far. */
  async catchUp(): Promise<void> {
    const target = await primaryPosition(this.primary)
    // A reply request wakes the walsender: it reads the log and answers with a
    // keepalive at its position (rollbacks move it without a commit signal).
    this.send(this.applier.lastCommit?.endLsn ?? 0n, true)
    await this.until(() => this.processed >= target)
  }

  /** Ends the stream (acknowledging what was applied) and waits for the applier to settle. */
  async stop(): Promise<void> {
    this.session?.stop()
    await this.done
    this.session = null
    await this.chain
  }

  private count(kind: string): void {
    this.seen[kind] = (this.seen[kind] ?? 0) + 1
  }

  /**
   * Reconnects as a subscriber does after losing its connection: a transaction
   * cut short is rolled back, and the new stream starts at the replica's own
   * position (its last applied commit), so nothing is applied twice.
   */
  async restart(): Promise<void> {
    await this.stop()
    await this.applier.reset()
    await this.start(this.applier.lastCommit?.endLsn ?? 0n)
  }

  private send(flushed: Lsn, replyRequested: boolean): void {
    this.session?.receive(encodeFrame({ tag: 'r', written: flushed, flushed, applied: flushed, clock: 0n, replyRequested }))
  }

  private until(pred: () => boolean): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.failure)
    if (pred()) return Promise.resolve()
    return new Promise((resolve, reject) => this.waiters.push({ pred, resolve, reject }))
  }

  private fail(e: unknown): void {
    if (this.failure === null) this.failure = e
    for (const w of this.waiters.splice(0)) w.reject(this.failure)
  }

  private settle(): void {
    this.waiters = this.waiters.filter((w) => (w.pred() ? (w.resolve(), false) : true))
  }

  /** One wire message from the session: CopyData frames go to the applier in order. */
  private onWire(data: Uint8Array): void {
    if (data[0] === 0x45) return this.fail(new Error(`ErrorResponse from the walsender: ${new TextDecoder().decode(data.subarray(5))}`))
    if (data[0] !== 0x64) return
    const f = decodeFrame(data.subarray(5))
    if (f.tag === 'w') {
      // Decoded now: the session reuses its buffer for the next frame.
      const m = decodePgoutput(f.data)
      this.count(m.tag)
      if (m.tag === 'U' || m.tag === 'D') if (m.old) this.count(m.old.kind)
      if (m.tag === 'U') for (const c of m.new.columns) if (c.kind === 'u') this.count('u')
      this.chain = this.chain.then(async () => {
        if (this.failure !== null) return
        try {
          const commit = await this.applier.apply(m)
          this.messages++
          if (commit && commit.endLsn > this.processed) this.processed = commit.endLsn
          this.settle()
        } catch (e) {
          this.fail(e)
        }
      })
    } else if (f.tag === 'k') {
      // Keepalives go out between transactions: all before it is applied once the chain reaches it.
      const walEnd = f.walEnd
      this.chain = this.chain.then(() => {
        if (walEnd > this.processed && !this.applier.inTransaction) this.processed = walEnd
        this.settle()
      })
    }
  }
}

export interface TableDiff {
  table: string
  problem: string
  primaryRows?: string[]
  replicaRows?: string[]
}

const USER_TABLES = `
  SELECT n.nspname AS ns, c.relname AS name,
         (SELECT json_agg(a.attname ORDER BY a.attnum) FROM pg_attribute a
           WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped)::text AS cols
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema', '_tabgres', '_tabgres_sql')
     AND n.nspname NOT LIKE 'pg\\_%'
   ORDER BY 1, 2`

const q = (s: string): string => `"${s.replace(/"/g, '""')}"`

/**
 * The select list for the primary's columns, in its order. A column the other
 * side lacks reads as NULL: pgoutput describes a table again only when it is
 * next changed, so a column added since (without a default, so NULL in every
 * row) may not have reached the replica yet, and one dropped since may linger there.
 */
function selectList(cols: string[], have: Set<string>): string {
  return cols.map((c) => (have.has(c) ? q(c) : `NULL AS ${q(c)}`)).join(', ')
}

/** Rows of a table as text, sorted. */
async function rowsOf(db: PGlite, table: string, list: string): Promise<string[]> {
  const { rows } = await db.query<{ r: string }>(`SELECT r::text AS r FROM (SELECT ${list} FROM ${table}) r ORDER BY 1`)
  return rows.map((r) => r.r)
}

async function digest(db: PGlite, table: string, list: string): Promise<string> {
  const { rows } = await db.query<{ d: string }>(
    `SELECT count(*) || ':' || COALESCE(md5(string_agg(r::text, E'\\n' ORDER BY r::text)), '') AS d FROM (SELECT ${list} FROM ${table}) r`,
  )
  return rows[0].d
}

/**
 * Compares every user table of the primary with the replica: the same rows
 * over the primary's columns. Returns the first difference, or null. A table
 * the primary never changed since it was created (so no Relation reached the
 * replica) counts as equal when it is empty.
 */
export async function compareDatabases(primary: PGlite, replica: PGlite): Promise<TableDiff | null> {
  const p = (await primary.query<{ ns: string; name: string; cols: string | null }>(USER_TABLES)).rows
  const r = (await replica.query<{ ns: string; name: string; cols: string | null }>(USER_TABLES)).rows
  const onReplica = new Map(r.map((t) => [`${t.ns}.${t.name}`, t]))
  for (const t of p) {
    const table = `${q(t.ns)}.${q(t.name)}`
    const cols = JSON.parse(t.cols ?? '[]') as string[]
    const other = onReplica.get(`${t.ns}.${t.name}`)
    onReplica.delete(`${t.ns}.${t.name}`)
    const plist = selectList(cols, new Set(cols))
    if (!other) {
      const rows = await rowsOf(primary, table, plist)
      if (rows.length) return { table, problem: 'missing on the replica', primaryRows: rows.slice(0, 5) }
      continue
    }
    const rlist = selectList(cols, new Set(JSON.parse(other.cols ?? '[]') as string[]))
    if ((await digest(primary, table, plist)) === (await digest(replica, table, rlist))) continue
    const a = await rowsOf(primary, table, plist)
    const b = await rowsOf(replica, table, rlist)
    const bs = new Set(b)
    const as = new Set(a)
    return {
      table,
      problem: `rows differ (primary ${a.length}, replica ${b.length})`,
      primaryRows: a.filter((x) => !bs.has(x)).slice(0, 5),
      replicaRows: b.filter((x) => !as.has(x)).slice(0, 5),
    }
  }
  const extra = [...onReplica.keys()]
  if (extra.length) return { table: extra[0], problem: 'on the replica only' }
  return null
}
