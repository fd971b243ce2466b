// One START_REPLICATION stream: the walsender loop for a logical slot.
// Woken by the commit signal (NOTIFY from the capture's commit trigger), it
// reads whole committed transactions in commit order and writes CopyData
// frames carrying pgoutput messages; it answers standby status updates and
// sends keepalives. This file is the loop and the keepalive policy; the
// transactions are assembled in ./transactions.ts (messages in ./output.ts),
// and frames read ahead of durability wait in ./durable-hold.ts.

import type { PGlite } from '@electric-sql/pglite'
import { ByteWriter, ProtocolError } from '../../protocol/bytes'
import { toPgError, type PgErrorFields } from '../../protocol/errors'
import type { Lsn } from '../../protocol/lsn'
import { pgTimestampFromDate, type PgoutputMessage } from '../../protocol/pgoutput'
import { decodeFrame, encodeFrame } from '../../protocol/replication-frames'
import { copyData } from '../../protocol/backend'
import { writePgoutput } from '../../protocol/pgoutput-encode'
import { CatalogHistory } from './catalog'
import { BUSY, backoff, idle, readWhenIdle } from './exclusive'
import { applyRestyle, restyleQuery, type OutputStyle } from './output-style'
import { subscribeCommits } from './notifier'
import { DurableHold, HOLD_AHEAD } from './durable-hold'
import { TransactionAssembler } from './transactions'
import { positionLsn, seqAtOrBelow } from './positions'
import { batchSql, parseBatch, resumePoint, type ChangeRow } from './reader'
import { schedulePrune } from './prune'
import { acquireSlot, releaseSlot } from './slots'
import { backendOf } from '../backend/backend'
import { missingPublication, noSuchPublication } from './publications'

/**
 * Where a stream goes: a wire session (wire/walsender.ts turns it into
 * protocol messages) or a MessagePort (worker/transport/port-writer.ts).
 */
export interface StreamSink {
  /** START_REPLICATION was accepted: the copy-both stream begins (before any frame). */
  start(): void
  /** One CopyData message carrying XLogData or a primary keepalive, encoded whole. */
  frame(copyData: Uint8Array): void
  /**
   * The stream is over, once, after the slot was released: the client ended
   * the copy (CopyDone), it was stopped, or it failed.
   */
  end(outcome: StreamOutcome): void
  /**
   * Backpressure: the session awaits this before each read of the change log,
   * so a slow consumer holds at most its transport's window plus one batch.
   */
  drain?(): Promise<void> | void
  /** Bytes it takes before drain() would wait (a port's window left); none given: no limit but HOLD_AHEAD. */
  room?(): number
  /** Send what was written now, not when the transport would batch it (the release of held frames). */
  flush?(): void
}

export type StreamOutcome = { kind: 'copy-done' } | { kind: 'stopped' } | { kind: 'error'; error: PgErrorFields }

/**
 * Where durability stands, for storage that flushes after commit (IndexedDB
 * with group commit): a stream must not carry a commit the primary can still
 * lose, so sessions read only up to `position()` and wake when it moves.
 */
export interface DurabilityGate {
  /** The change-log position (sequence number) known to be durable. */
  position(): bigint
  /** Calls fn (synchronously, as the flush completes) whenever position() advances; returns the unsubscribe. */
  subscribe(fn: () => void): () => void
  /** Resolves once every write so far is durable (a confirmed slot position included). */
  durable(): Promise<void>
}

export interface SessionOptions {
  slot: string
  /** The streaming session's process id (pg_replication_slots.active_pid). */
  pid: number
  temporarySlot: boolean
  /** Requested start; the slot's confirmed_flush_lsn wins when greater. */
  startLsn: Lsn
  confirmedFlush: Lsn
  /** null streams every table (orez compatibility). */
  publications: string[] | null
  /** Publications not yet checked to exist: the first read checks them (an error ends the stream). */
  verifyPublications?: string[] | null
  messages: boolean
  /** Tuple values in each type's binary send format (pgoutput's `binary 'true'`). */
  binary?: boolean
  /** Streaming (protocol 2+): transactions are cut into Stream chunks at this many bytes (logical_decoding_work_mem). */
  streamAt?: number
  /** The walsender session's output settings when they print values differently from the change log (./output-style.ts). */
  outputStyle?: OutputStyle | null
  /** Keepalive interval while idle (PostgreSQL: wal_sender_timeout / 2). */
  keepaliveMs?: number
  /** Rows per change-log read. */
  batchRows?: number
  /** Without a gate every committed transaction is streamable at once. */
  durability?: DurabilityGate
}


const pgNow = (): bigint => pgTimestampFromDate(Date.now())

export class ReplicationSession {
  readonly done: Promise<void>
  private stopped = false
  private wake: (() => void) | null = null
  private pending = false
  private readonly catalog = new CatalogHistory()
  private readonly transactions: TransactionAssembler
  private readonly hold: DurableHold
  private readonly frameWriter = new ByteWriter(4096)
  private afterSeq = 0n
  private threshold = -1n
  private lastKeepaliveLsn: Lsn = -1n
  private lastReplyAt = Date.now()
  private pendingConfirm: Lsn | null = null
  private copyDoneReceived = false
  private replyWanted = false
  /**
   * Commit LSN of the last Commit written to the consumer: an acknowledgement
   * at or past it covers everything sent (a restart resumes after it).
   */
  private sentCommit: Lsn = 0n
  /** The highest flush position the consumer reported. */
  private clientFlushed: Lsn = 0n
  /** Set by finish(): no more reads; wakes the wait when the consumer has confirmed everything sent. */
  private finishing: { confirmed: () => void } | null = null

  readonly pid: number

  constructor(
    private readonly db: PGlite,
    private readonly sink: StreamSink,
    private readonly opts: SessionOptions,
  ) {
    this.pid = opts.pid
    // Throws 55006 if another session streams from the slot. `done` is read by
    // waiters only after construction.
    acquireSlot(db, opts.slot, this)
    const start = opts.startLsn > opts.confirmedFlush ? opts.startLsn : opts.confirmedFlush
    this.threshold = seqAtOrBelow(start)
    // Frames read ahead of durability wait there (up to HOLD_AHEAD and the sink's room; see pump()).
    const gate = opts.durability
    this.hold = new DurableHold(gate && (() => gate.position()), (bytes, commit) => this.written(bytes, commit))
    this.transactions = new TransactionAssembler(this.catalog, opts, (m, walStart, commit) => this.send(m, walStart, commit))
    // The sink hears of the end once the slot is free again.
    this.done = this.run()
      .finally(() => this.cleanup())
      .then(
        () => sink.end(this.copyDoneReceived ? { kind: 'copy-done' } : { kind: 'stopped' }),
        (e) => {
          sink.end({ kind: 'error', error: toPgError(e).toFields() })
          throw e
        },
      )
  }

  /** A CopyData payload from the client (standby status update, feedback). */
  receive(payload: Uint8Array): void {
    const f = decodeFrame(payload)
    if (f.tag === 'r') {
      this.lastReplyAt = Date.now()
      // flush is what the consumer has durably applied: that is confirmed_flush_lsn.
      if (f.flushed > 0n) this.pendingConfirm = f.flushed
      if (f.flushed > this.clientFlushed) this.clientFlushed = f.flushed
      if (this.finishing && this.clientFlushed >= this.sentCommit) this.finishing.confirmed()
      // PostgreSQL answers with a keepalive that itself asks for nothing (WalSndKeepalive(false)).
      if (f.replyRequested) this.keepalive(true, false)
      this.signal()
    } else if (f.tag !== 'k') {
      throw new ProtocolError(`unexpected replication frame '${f.tag}' from client`, 0)
    }
  }

  /** Client CopyDone: finish like the walsender (keepalive, CopyDone, COPY 0). */
  endCopy(): void {
    this.copyDoneReceived = true
    this.stop()
  }

  stop(): void {
    this.stopped = true
    this.signal()
  }

  /**
   * Ends the stream at a shutdown as PostgreSQL's walsender does (WalSndDone):
   * nothing more is read; unless the consumer has already confirmed every
   * Commit it was sent, it is asked for a reply, and the stream ends once it
   * confirms them, goes away, or `boundMs` passes. So an acknowledgement on
   * its way when the server stops still reaches the slot, and is durable when
   * `done` resolves.
   */
  async finish(boundMs: number): Promise<void> {
    if (!this.stopped && this.clientFlushed < this.sentCommit) {
      let confirmed!: () => void
      const wait = new Promise<void>((r) => (confirmed = r))
      this.finishing = { confirmed }
      this.keepalive(true, true)
      this.sink.flush?.()
      let timer: ReturnType<typeof setTimeout> | undefined
      await Promise.race([wait, this.done.catch(() => {}), new Promise<void>((r) => (timer = setTimeout(r, boundMs)))])
      clearTimeout(timer)
    }
    this.stop()
    await this.done.catch(() => {})
  }

  private signal(): void {
    this.pending = true
    const w = this.wake
    this.wake = null
    w?.()
  }

  private async sleep(): Promise<void> {
    if (this.pending || this.stopped) return
    await new Promise<void>((r) => (this.wake = r))
  }

  private async run(): Promise<void> {
    // A commit wakes the session to read it; behind a durability gate, the
    // flush that makes it durable releases what was read.
    const gate = this.opts.durability
    const unsubscribeGate = gate?.subscribe(() => {
      this.release()
      this.signal()
    })
    const unsubscribe = await subscribeCommits(this.db, () => this.signal())
    const keepaliveMs = this.opts.keepaliveMs ?? 10_000
    const timer = setInterval(() => {
      if (this.db.closed) return this.stop()
      if (Date.now() - this.lastReplyAt >= keepaliveMs) {
        // A silent consumer is asked for a reply; a read first brings the
        // position up to date (rollbacks advance it without a commit signal).
        this.replyWanted = true
        this.lastReplyAt = Date.now()
        this.signal()
      }
    }, Math.min(250, keepaliveMs))
    try {
      backendOf(this.db).slots.setActive(this.opts.slot, this.pid)
      this.afterSeq = await idle(this.db, async (s) => {
        const verify = this.opts.verifyPublications
        const missing = verify ? await missingPublication(s, verify) : null
        if (missing !== null) throw noSuchPublication(missing)
        return resumePoint(s, this.threshold)
      })
      this.pending = true
      while (!this.stopped) {
        await this.sleep()
        if (this.stopped) break
        this.pending = false
        await this.flushConfirm()
        await this.pump()
      }
      await this.flushConfirm()
      // Frames of commits that never became durable while the stream ran
      // are dropped: the consumer has not seen (nor acknowledged) them.
      this.hold.drop()
      // The walsender's last word before its CopyDone (the sink sends that).
      if (this.copyDoneReceived) this.keepalive(true, false)
    } catch (e) {
      if (this.db.closed) return
      throw e
    } finally {
      clearInterval(timer)
      unsubscribe()
      unsubscribeGate?.()
    }
  }

  private async flushConfirm(): Promise<void> {
    const lsn = this.pendingConfirm
    if (lsn === null || this.db.closed) return
    this.pendingConfirm = null
    backendOf(this.db).slots.confirm(this.opts.slot, lsn)
    // An acknowledgement is a promise not to re-send: it must survive a crash.
    await this.opts.durability?.durable()
    // The horizon may have moved: what every slot has confirmed can go.
    schedulePrune(this.db)
  }

  /** Stream everything committed so far. */
  private async pump(): Promise<void> {
    const limit = this.opts.batchRows ?? 2000
    let busy = 0
    for (;;) {
      // Read ahead of durability while the held frames fit in HOLD_AHEAD and
      // in what the sink takes (a port's window): a large transaction is read
      // while its flush runs. The release wakes us.
      if (this.hold.size > 0 && this.hold.bytes >= Math.min(HOLD_AHEAD, this.sink.room?.() ?? HOLD_AHEAD)) return this.idleKeepalive(this.opts.durability!.position())
      await this.sink.drain?.()
      if (this.stopped || this.finishing || this.db.closed) return
      const sets = await readWhenIdle(this.db, this.catalog.refreshSql() + batchSql(this.afterSeq, limit))
      if (sets === BUSY) {
        await backoff(busy++)
        continue
      }
      busy = 0
      this.catalog.apply(sets[0], sets[1])
      const batch = parseBatch(sets[2], sets[3], limit)
      const rows = batch.rows
      if (this.opts.outputStyle && !this.opts.binary && !(await this.restyle(rows, this.opts.outputStyle))) return
      for (let i = 0; i < rows.length; i++) {
        // Once stopped, nothing more goes out, not even the rest of this batch:
        // the consumer's last acknowledgement covers all it received. A
        // transaction cut here has no Commit, so the consumer discards it.
        // Finishing, the consumer is asked to confirm what it has: no more.
        if (this.stopped || this.finishing) return
        const row = rows[i]
        this.transactions.arrive(row)
        this.afterSeq = row.seq
        if (row.lastSeq <= this.threshold) continue
        this.hold.until = row.lastSeq
        this.transactions.take(rows, i)
      }
      if (batch.complete) {
        this.transactions.caughtUp()
        const durable = this.opts.durability?.position()
        return this.idleKeepalive(durable !== undefined && durable < batch.position ? durable : batch.position)
      }
    }
  }

  /** Prints the batch's values in the session's output settings; false when the session stopped meanwhile. */
  private async restyle(rows: ChangeRow[], style: OutputStyle): Promise<boolean> {
    const q = restyleQuery(rows, this.catalog, style)
    if (!q) return true
    for (let busy = 0; ; ) {
      if (this.stopped || this.db.closed) return false
      const result = await readWhenIdle(this.db, q.sql)
      if (result === BUSY) {
        await backoff(busy++)
        continue
      }
      applyRestyle(q.targets, result[0])
      return true
    }
  }

  /** CopyData('d') around XLogData('w') around the pgoutput message, built in one buffer. */
  private send(m: PgoutputMessage, walStart: Lsn, commit?: Lsn): void {
    const w = this.frameWriter
    w.reset()
    w.char('d').int32(0).char('w').uint64(walStart).uint64(walStart).int64(pgNow())
    writePgoutput(w, m)
    w.patchInt32(1, w.length - 1)
    this.hold.emit(w.toBytes(), commit)
  }

  private written(bytes: Uint8Array, commit?: Lsn): void {
    this.sink.frame(bytes)
    if (commit !== undefined) this.sentCommit = commit
  }

  /** Frames read ahead of durability and not yet sent (diagnostics, tests). */
  get heldFrames(): number {
    return this.hold.size
  }

  /** Sends the held frames that are durable now, in order. */
  private release(): void {
    if (this.stopped || this.finishing) return
    if (this.hold.release(pgNow()) === 0) return
    // Durable from this moment: out now, ahead of whatever else the flush's completion wakes.
    this.sink.flush?.()
  }

  private keepalive(force: boolean, replyRequested: boolean, at?: Lsn): void {
    const lsn = at ?? (this.lastKeepaliveLsn < 0n ? positionLsn(this.afterSeq) : this.lastKeepaliveLsn)
    if (!force && !replyRequested && lsn === this.lastKeepaliveLsn) return
    this.lastKeepaliveLsn = lsn
    this.sink.frame(copyData(encodeFrame({ tag: 'k', walEnd: lsn, clock: pgNow(), replyRequested })))
  }

  /**
   * Caught up (or holding frames until they are durable): a keepalive at
   * `pos`, which is never past the durable position, so it may go out ahead
   * of held frames (theirs are greater), and asks for a reply when one is due.
   */
  private idleKeepalive(pos: bigint): void {
    this.keepalive(this.replyWanted, this.replyWanted, positionLsn(pos))
    this.replyWanted = false
  }

  private async cleanup(): Promise<void> {
    releaseSlot(this.db, this.opts.slot, this)
    if (this.db.closed) return
    const temporary = this.opts.temporarySlot
    const slots = backendOf(this.db).slots
    if (temporary) {
      if (slots.get(this.opts.slot)) slots.drop(this.opts.slot)
      schedulePrune(this.db)
    } else {
      slots.setActive(this.opts.slot, null)
    }
  }
}

