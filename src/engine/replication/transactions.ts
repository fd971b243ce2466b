// A stream's transactions, assembled from the change log's rows as pgoutput
// sends them: Begin, the Relation of a table before its first change (again
// after its shape or its publications changed, and after a TRUNCATE), the
// changes the publications carry, Commit; logical decoding messages where
// PostgreSQL puts them. The session (./session.ts) reads the rows and sends
// what this gives it.
// With `streaming 'on'` (protocol 2+) a transaction's content is queued
// instead, and once it reaches logical_decoding_work_mem (as PostgreSQL's
// reorder buffer counts it, ./reorder-size.ts) goes out as a chunk between
// Stream Start and Stream Stop, each message carrying the xid; the
// transaction then ends with Stream Commit. Only committed transactions are
// read, so there is never a Stream Abort.
// Spec: PostgreSQL docs, "Logical Replication Message Formats".

import { PgError } from '../../protocol/errors'
import type { Lsn } from '../../protocol/lsn'
import { MESSAGE_TRANSACTIONAL, type PgoutputMessage } from '../../protocol/pgoutput'
import { isPublished, type Action, type CatalogHistory, type RelationShape } from './catalog'
import { hexToBytes } from '../../protocol/bytes'
import { changeMessage, relationMessages, truncateMessage } from './output'
import { changeLsn, commitLsn, endLsn } from './positions'
import type { ChangeRow } from './reader'
import { changeSize } from './reorder-size'

/** The 32-bit xid pgoutput sends for a change-log transaction id. */
const wireXid = (xid: bigint): number => Number(xid & 0xffffffffn)

const ACTIONS: Record<string, Action | undefined> = { I: 'insert', U: 'update', D: 'delete', T: 'truncate' }

/** Sends one pgoutput message at `walStart`; `commit` is the commit LSN when it is a Commit. */
export type Send = (m: PgoutputMessage, walStart: Lsn, commit?: Lsn) => void

interface Rel {
  relid: number
  shape: RelationShape
  version: string
}

/**
 * One message of a transaction's content, with the Relations it needs first;
 * or, with no message, only an invalidation (an unpublished table's TRUNCATE)
 * that must take effect in order with the messages around it.
 */
interface Entry {
  msg: PgoutputMessage | null
  walStart: Lsn
  /** Relations to send first (when not yet sent). */
  relations: Rel[]
  /** Relations whose sent state is forgotten first (a TRUNCATE's tables). */
  forget: number[]
  /** The reorder buffer's count of it (streaming only). */
  size: number
}

export interface AssemblerOptions {
  publications: string[] | null
  messages: boolean
  binary?: boolean
  /** logical_decoding_work_mem in bytes when the consumer asked for streaming (protocol 2+); else absent. */
  streamAt?: number
}

/** A transaction whose content is queued (streaming): unsent entries and what its stream has sent. */
interface Queued {
  begin: PgoutputMessage
  beginAt: Lsn
  entries: Entry[]
  size: number
  /** Chunks sent so far (0: none, so Begin ... Commit may still go instead). */
  chunks: number
  /** relid -> version of the Relations sent inside this transaction's stream. */
  streamed: Map<number, string>
}

export class TransactionAssembler {
  /** relid -> "shapeVersion:publicationVersion" of the Relation last sent. */
  private readonly sentRelations = new Map<number, string>()
  /** Transaction being streamed: Begin sent, Commit not yet. */
  private open: { xid: bigint; lastSeq: bigint; commitTime: bigint; queued?: Queued } | null = null
  /** Non-transactional messages that arrived inside another transaction: out after its Commit. */
  private readonly deferredMessages: Extract<PgoutputMessage, { tag: 'M' }>[] = []
  /**
   * Tables the current transaction truncated: their Relation goes again
   * after it ends (PostgreSQL invalidates their relcache entries once more
   * as it finishes decoding the transaction).
   */
  private truncated: { xid: bigint; relids: Set<number> } | null = null
  /** The transaction whose non-transactional messages were already sent ahead of it, and how far that scan saw. */
  private scannedXid = -1n
  private scannedUpTo = -1n

  constructor(
    private readonly catalog: CatalogHistory,
    private readonly options: AssemblerOptions,
    private readonly send: Send,
  ) {}

  /** Before row i is taken or skipped: a new transaction means the open one is complete. */
  arrive(row: ChangeRow): void {
    if (this.open && row.xid !== this.open.xid) this.commit()
    if (this.truncated && row.xid !== this.truncated.xid) this.endTruncations()
  }

  /** Row i of a batch, in order; `rows` lets it look ahead within the batch. */
  take(rows: ChangeRow[], i: number): void {
    const row = rows[i]
    // Queued (streaming) transactions send Begin last, so their messages need no scan: they go in order.
    if (this.options.streamAt === undefined && !this.open && row.xid !== this.scannedXid) {
      // PostgreSQL decodes a transaction at its commit, so its
      // non-transactional messages (sent at once) precede its Begin.
      this.scannedXid = row.xid
      let j = i
      for (; j < rows.length && rows[j].xid === row.xid; j++) {
        if (rows[j].op === 'm') this.apply(rows[j])
      }
      this.scannedUpTo = rows[j - 1].seq
    }
    // A non-transactional message the scan already sent; one that lay beyond the scanned batch goes now.
    if (row.op === 'm' && row.xid === this.scannedXid && row.seq <= this.scannedUpTo) return
    this.apply(row)
  }

  /** The log has nothing more for now: the open transaction is complete. */
  caughtUp(): void {
    if (this.open) this.commit()
    if (this.truncated) this.endTruncations()
  }

  private endTruncations(): void {
    for (const relid of this.truncated!.relids) this.sentRelations.delete(relid)
    this.truncated = null
  }

  private begin(row: ChangeRow): void {
    if (this.open) return
    this.open = { xid: row.xid, lastSeq: row.lastSeq, commitTime: row.commitTime }
    const begin: PgoutputMessage = { tag: 'B', finalLsn: commitLsn(row.lastSeq), commitTime: row.commitTime, xid: wireXid(row.xid) }
    if (this.options.streamAt === undefined) this.send(begin, changeLsn(row.seq))
    else this.open.queued = { begin, beginAt: changeLsn(row.seq), entries: [], size: 0, chunks: 0, streamed: new Map() }
  }

  /** Part of the open transaction's content: out now, or queued when streaming. */
  private content(row: ChangeRow, entry: Entry): void {
    this.begin(row)
    const q = this.open!.queued
    if (!q) return this.deliver(entry, this.sentRelations)
    q.entries.push(entry)
    q.size += entry.size
    if (q.size >= this.options.streamAt!) this.chunk()
  }

  /** Sends an entry, the Relations it needs first per `sent`, all with `xid` inside a stream. */
  private deliver(e: Entry, sent: Map<number, string>, xid?: number): void {
    this.invalidate(e, sent)
    for (const r of e.relations) {
      if (sent.get(r.relid) === r.version) continue
      for (const m of relationMessages(r.relid, r.shape)) this.send(xid === undefined ? m : ({ ...m, xid } as PgoutputMessage), 0n)
      sent.set(r.relid, r.version)
    }
    if (e.msg) this.send(xid === undefined ? e.msg : ({ ...e.msg, xid } as PgoutputMessage), e.walStart)
  }

  /** What a TRUNCATE entry invalidates: its tables' Relations go again before their next change. */
  private invalidate(e: Entry, sent: Map<number, string>): void {
    for (const relid of e.forget) {
      sent.delete(relid)
      // A Relation sent inside a stream counts as sent once it commits; a truncate in between undoes that too.
      if (sent !== this.sentRelations) this.sentRelations.delete(relid)
    }
  }

  /** Transaction t's queued content as one chunk of its stream. */
  private chunk(t = this.open!): void {
    const q = t.queued!
    const xid = wireXid(t.xid)
    const at = q.entries[0]?.walStart ?? q.beginAt
    this.send({ tag: 'S', xid, firstSegment: q.chunks === 0 }, at)
    for (const e of q.entries) this.deliver(e, q.streamed, xid)
    this.send({ tag: 'E' }, at)
    q.chunks++
    q.entries = []
    q.size = 0
  }

  private commit(): void {
    const t = this.open!
    this.open = null
    const end = endLsn(t.lastSeq)
    const commit = commitLsn(t.lastSeq)
    const q = t.queued
    if (q && q.chunks > 0) {
      if (q.entries.length > 0) this.chunk(t)
      const xid = wireXid(t.xid)
      this.send({ tag: 'c', xid, flags: 0, commitLsn: commit, endLsn: end, commitTime: t.commitTime }, end, commit)
      // PostgreSQL counts a Relation sent inside a committed stream as sent (cleanup_rel_sync_cache).
      for (const [relid, version] of q.streamed) this.sentRelations.set(relid, version)
    } else if (q && !q.entries.some((e) => e.msg)) {
      // Nothing of it is published: PostgreSQL 15 skips an empty transaction.
      for (const e of q.entries) this.invalidate(e, this.sentRelations)
    } else {
      if (q) {
        this.send(q.begin, q.beginAt)
        for (const e of q.entries) this.deliver(e, this.sentRelations)
      }
      this.send({ tag: 'C', flags: 0, commitLsn: commit, endLsn: end, commitTime: t.commitTime }, end, commit)
    }
    for (const m of this.deferredMessages.splice(0)) this.send(m, m.lsn)
  }

  private apply(row: ChangeRow): void {
    if (row.op === 'M' || row.op === 'm') return this.message(row)
    if (row.op === 'T') return this.truncate(row)
    const rel = this.catalog.relation(row.relid, row.seq)
    const shape = rel?.value
    if (!rel || !shape) return // table dropped before it was ever described
    const pubs = this.catalog.publicationsAt(row.seq)
    const action = ACTIONS[row.op]
    if (!action) throw new PgError({ code: 'XX000', message: `unknown change-log op "${row.op}"` })
    const streaming = this.options.streamAt !== undefined
    if (!isPublished(pubs?.value ?? [], this.options.publications, row.relid, shape, action)) {
      // PostgreSQL's reorder buffer holds every table's changes, so an
      // unpublished one still counts toward logical_decoding_work_mem: a
      // stream chunk can hold nothing that goes out (PostgreSQL 15 sends it
      // as an empty Stream Start / Stop all the same).
      const counted = streaming ? changeMessage(row, shape, 'text') : null
      if (counted) this.content(row, { msg: null, walStart: changeLsn(row.seq), relations: [], forget: [], size: changeSize(counted, shape) })
      return
    }
    const msg = changeMessage(row, shape, this.options.binary ? 'binary' : 'text')
    if (!msg) return
    this.content(row, {
      msg,
      walStart: changeLsn(row.seq),
      relations: [{ relid: row.relid, shape, version: `${rel.id}:${pubs?.id ?? 0}` }],
      forget: [],
      size: streaming ? changeSize(msg, shape) : 0,
    })
  }

  /**
   * One TRUNCATE statement: one Truncate message listing the truncated tables
   * that the publications carry truncates of, with its CASCADE / RESTART
   * IDENTITY flags (capture.sql stores them as record text of flags and the
   * table OIDs). Each table gets a new relfilenode: PostgreSQL invalidates
   * its relcache entry before decoding the Truncate, so pgoutput sends every
   * listed table's Relation again first, and once more after the transaction
   * (./output.ts has the message).
   */
  private truncate(row: ChangeRow): void {
    const [flags, relids] = row.newFields ?? [null, null]
    const tables = relids ? relids.split(' ').map(Number) : [row.relid]
    const pubs = this.catalog.publicationsAt(row.seq)
    const sent: Rel[] = []
    if (!this.truncated) this.truncated = { xid: row.xid, relids: new Set() }
    for (const relid of tables) {
      this.truncated.relids.add(relid)
      const rel = this.catalog.relation(relid, row.seq)
      if (!rel?.value) continue
      if (isPublished(pubs?.value ?? [], this.options.publications, relid, rel.value, 'truncate')) {
        sent.push({ relid, shape: rel.value, version: `${rel.id}:${pubs?.id ?? 0}` })
      }
    }
    const walStart = changeLsn(row.seq)
    // The reorder buffer counts the decoded record, which lists every table.
    const size = this.options.streamAt === undefined ? 0 : changeSize(truncateMessage(0, tables))
    if (sent.length === 0) {
      // Nothing goes out, but the tables' Relations are stale all the same:
      // in order behind the queued messages that may still send them, or now.
      if (this.options.streamAt !== undefined) this.content(row, { msg: null, walStart, relations: [], forget: tables, size })
      else for (const relid of tables) this.sentRelations.delete(relid)
      return
    }
    const msg = truncateMessage(Number(flags ?? 0), sent.map((t) => t.relid))
    this.content(row, { msg, walStart, relations: sent, forget: tables, size })
  }

  private message(row: ChangeRow): void {
    if (!this.options.messages) return
    const m: Extract<PgoutputMessage, { tag: 'M' }> = {
      tag: 'M',
      flags: row.op === 'M' ? MESSAGE_TRANSACTIONAL : 0,
      lsn: changeLsn(row.seq),
      prefix: row.oldRow ?? '',
      content: hexToBytes(row.newRow ?? ''),
    }
    if (row.op === 'M') {
      this.content(row, { msg: m, walStart: m.lsn, relations: [], forget: [], size: changeSize(m) })
    } else if (this.open && !this.open.queued) {
      // A non-transactional message goes out at once, never inside another
      // transaction's Begin/Commit: hold it until this Commit.
      this.deferredMessages.push(m)
    } else {
      // Nothing of a queued transaction has gone out but whole stream chunks: now is at once.
      this.send(m, m.lsn)
    }
  }
}
