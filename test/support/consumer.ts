// An acknowledging consumer for durability tests: it decodes the stream,
// applies whole transactions to an in-memory replica (rows keyed by their
// first column), remembers every commit LSN it saw, and acknowledges with
// standby status updates. Waits resolve on frames, never on timers.

import type { PGlite } from '@electric-sql/pglite'
import { decodePgoutput } from '../../src/protocol/pgoutput-decode'
import { formatLsn, type Lsn } from '../../src/protocol/lsn'
import type { PgoutputMessage, Tuple } from '../../src/protocol/pgoutput'
import { encodeFrame } from '../../src/protocol/replication-frames'
import { handleStartReplication } from '../../src/wire/walsender'
import { type ReplicationSession } from '../../src/engine/replication/session'
import { recordStream } from './stream'

type Row = (string | null)[]

const values = (t: Tuple): Row => t.columns.map((c) => (c.kind === 't' ? c.value : null))

export interface ConsumerOptions {
  /** Acknowledge after every Nth applied transaction (0: never). */
  ackEvery?: number
  publication: string
}

export class Consumer {
  /** relation name -> key -> row */
  readonly replica = new Map<string, Map<string, Row>>()
  /** Commit LSN of every applied transaction, in arrival order (across reconnects). */
  readonly commitLsns: Lsn[] = []
  lastCommit: Lsn = 0n
  private relations = new Map<number, string>()
  private txn: PgoutputMessage[] | null = null
  private appliedSinceAck = 0
  private session: ReplicationSession | null = null
  private done: Promise<void> | null = null
  private waiters: { pred: () => boolean; resolve: () => void }[] = []
  private onTransaction: ((msgs: PgoutputMessage[]) => void) | null = null

  constructor(
    readonly slot: string,
    private readonly opts: ConsumerOptions,
  ) {}

  /** Called with each applied transaction's messages (for per-test bookkeeping). */
  observe(fn: (msgs: PgoutputMessage[]) => void): void {
    this.onTransaction = fn
  }

  /** START_REPLICATION at `startLsn`; resolves once the session is streaming. */
  async connect(db: PGlite, startLsn: Lsn): Promise<void> {
    this.txn = null
    const rec = recordStream()
    const origWrite = rec.writer.write.bind(rec.writer)
    rec.writer.write = (m: Uint8Array) => {
      origWrite(m)
      const f = rec.frames.at(-1)
      if (m[0] === 0x64 && f?.tag === 'w') this.onPayload(f.data)
    }
    let ready!: () => void
    const started = new Promise<void>((r) => (ready = r))
    this.done = handleStartReplication(
      `START_REPLICATION SLOT ${this.slot} LOGICAL ${formatLsn(startLsn)} (proto_version '1', publication_names '${this.opts.publication}')`,
      rec.writer,
      db,
      {
        onSession: (s) => {
          this.session = s
          ready()
        },
      },
    ).catch((e) => {
      // A stream cut by db.close() ends quietly; anything else is a failure.
      if (!db.closed) throw e
    })
    await Promise.race([started, this.done.then(() => Promise.reject(new Error('stream ended before it started')))])
  }

  /** Graceful end: pending acknowledgements are persisted first. */
  async stop(): Promise<void> {
    this.session?.stop()
    await this.done
    this.session = null
  }

  /** Wait for the stream's end after the database was closed under it. */
  async ended(): Promise<void> {
    await this.done
    this.session = null
  }

  ack(lsn: Lsn = this.lastCommit): void {
    this.session?.receive(encodeFrame({ tag: 'r', written: lsn, flushed: lsn, applied: lsn, clock: 0n, replyRequested: false }))
    this.appliedSinceAck = 0
  }

  until(pred: () => boolean): Promise<void> {
    if (pred()) return Promise.resolve()
    return new Promise((resolve) => this.waiters.push({ pred, resolve }))
  }

  table(name: string): Map<string, Row> {
    let t = this.replica.get(name)
    if (!t) this.replica.set(name, (t = new Map()))
    return t
  }

  private onPayload(data: Uint8Array): void {
    const m = decodePgoutput(data)
    if (m.tag === 'R') {
      this.relations.set(m.relationOid, m.relation)
      return
    }
    if (m.tag === 'B') {
      if (this.txn) throw new Error('Begin inside a transaction')
      this.txn = [m]
      return
    }
    if (!this.txn) return // keepalive-only traffic, messages outside transactions
    this.txn.push(m)
    if (m.tag !== 'C') return
    const txn = this.txn
    this.txn = null
    this.apply(txn)
    this.commitLsns.push(m.commitLsn)
    this.lastCommit = m.commitLsn
    this.onTransaction?.(txn)
    const every = this.opts.ackEvery ?? 1
    if (every > 0 && ++this.appliedSinceAck >= every) this.ack()
    this.waiters = this.waiters.filter((w) => (w.pred() ? (w.resolve(), false) : true))
  }

  private apply(txn: PgoutputMessage[]): void {
    for (const m of txn) {
      if (m.tag === 'I') {
        const row = values(m.new)
        this.table(this.relations.get(m.relationOid)!).set(row[0]!, row)
      } else if (m.tag === 'U') {
        const t = this.table(this.relations.get(m.relationOid)!)
        const row = values(m.new)
        if (m.old) t.delete(values(m.old)[0]!)
        t.set(row[0]!, row)
      } else if (m.tag === 'D') {
        this.table(this.relations.get(m.relationOid)!).delete(values(m.old)[0]!)
      } else if (m.tag === 'T') {
        for (const oid of m.relationOids) this.table(this.relations.get(oid)!).clear()
      }
    }
  }
}
