// A stream's transactions, assembled from the change log's rows as pgoutput
// sends them: Begin, the Relation of a table before its first change (again
// after its shape or its publications changed, and after a TRUNCATE), the
// changes the publications carry, Commit; logical decoding messages where
// PostgreSQL puts them. The session (./session.ts) reads the rows and sends
// what this gives it.
// Spec: PostgreSQL docs, "Logical Replication Message Formats".

import { PgError } from '../../protocol/errors'
import type { Lsn } from '../../protocol/lsn'
import { MESSAGE_TRANSACTIONAL, type PgoutputMessage } from '../../protocol/pgoutput'
import { isPublished, type Action, type CatalogHistory, type RelationShape } from './catalog'
import { changeMessage, hexToBytes, relationMessages, truncateMessage } from './output'
import { changeLsn, commitLsn, endLsn } from './positions'
import type { ChangeRow } from './reader'

const ACTIONS: Record<string, Action | undefined> = { I: 'insert', U: 'update', D: 'delete', T: 'truncate' }

/** Sends one pgoutput message at `walStart`; `commit` is the commit LSN when it is a Commit. */
export type Send = (m: PgoutputMessage, walStart: Lsn, commit?: Lsn) => void

export class TransactionAssembler {
  /** relid -> "shapeVersion:publicationVersion" of the Relation last sent. */
  private readonly sentRelations = new Map<number, string>()
  /** Transaction being streamed: Begin sent, Commit not yet. */
  private open: { xid: bigint; lastSeq: bigint; commitTime: bigint } | null = null
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
    private readonly options: { publications: string[] | null; messages: boolean; binary?: boolean },
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
    if (!this.open && row.xid !== this.scannedXid) {
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
    this.send({ tag: 'B', finalLsn: commitLsn(row.lastSeq), commitTime: row.commitTime, xid: Number(row.xid & 0xffffffffn) }, changeLsn(row.seq))
  }

  private commit(): void {
    const t = this.open!
    this.open = null
    const end = endLsn(t.lastSeq)
    const commit = commitLsn(t.lastSeq)
    this.send({ tag: 'C', flags: 0, commitLsn: commit, endLsn: end, commitTime: t.commitTime }, end, commit)
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
    const published = isPublished(pubs?.value ?? [], this.options.publications, row.relid, shape, action)
    if (!published) {
      if (action === 'truncate') this.sentRelations.delete(row.relid)
      return
    }
    const msg = changeMessage(row, shape, this.options.binary ? 'binary' : 'text')
    if (!msg) return
    this.begin(row)
    this.ensureRelation(row.relid, shape, `${rel.id}:${pubs?.id ?? 0}`)
    this.send(msg, changeLsn(row.seq))
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
    const sent: { relid: number; shape: RelationShape; version: string }[] = []
    if (!this.truncated) this.truncated = { xid: row.xid, relids: new Set() }
    for (const relid of tables) {
      this.sentRelations.delete(relid)
      this.truncated.relids.add(relid)
      const rel = this.catalog.relation(relid, row.seq)
      if (!rel?.value) continue
      if (isPublished(pubs?.value ?? [], this.options.publications, relid, rel.value, 'truncate')) {
        sent.push({ relid, shape: rel.value, version: `${rel.id}:${pubs?.id ?? 0}` })
      }
    }
    if (sent.length === 0) return
    this.begin(row)
    for (const t of sent) this.ensureRelation(t.relid, t.shape, t.version)
    this.send(truncateMessage(Number(flags ?? 0), sent.map((t) => t.relid)), changeLsn(row.seq))
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
      this.begin(row)
      this.send(m, m.lsn)
    } else if (this.open) {
      // A non-transactional message goes out at once, never inside another
      // transaction's Begin/Commit: hold it until this Commit.
      this.deferredMessages.push(m)
    } else {
      this.send(m, m.lsn)
    }
  }

  private ensureRelation(relid: number, shape: RelationShape, version: string): void {
    if (this.sentRelations.get(relid) === version) return
    for (const m of relationMessages(relid, shape)) this.send(m, 0n)
    this.sentRelations.set(relid, version)
  }
}
