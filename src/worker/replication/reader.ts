// Reads committed changes from the change log in commit order.
// Runs only through whenIdle (./exclusive.ts), so every row it sees belongs to
// a committed transaction; PGlite runs one transaction at a time, so each
// transaction's rows form one contiguous run of sequence numbers.

import type { IdleSession, Rows } from './exclusive'

export interface ChangeRow {
  seq: bigint
  xid: bigint
  relid: number
  /** I U D T; M transactional message, m non-transactional message. */
  op: string
  newRow: string | null
  oldRow: string | null
  /** Last sequence number of the row's transaction (its commit position). */
  lastSeq: bigint
  /** Commit time, microseconds since 2000-01-01 UTC. */
  commitTime: bigint
  /** UPDATE: 1-based fields whose stored TOAST value was left unchanged. */
  toastUnchanged: number[] | null
}

export interface Batch {
  rows: ChangeRow[]
  /** True when the batch ended at the end of the log (so its last transaction is complete). */
  complete: boolean
  /** Current write position (sequence number), for keepalives. */
  position: bigint
}

/** SQL for one batch: two result sets (rows, position) for parseBatch(). */
export function batchSql(afterSeq: bigint, limit: number): string {
  return `SELECT c.seq, c.xid, c.relid, c.op, c.new_row, c.old_row, x.last_seq, c.toast_unchanged,
            (extract(epoch FROM x.commit_time - timestamptz '2000-01-01 00:00:00+00') * 1000000)::bigint
       FROM _tabgres.changes c JOIN _tabgres.xacts x ON x.xid = c.xid
      WHERE c.seq > ${afterSeq} ORDER BY c.seq LIMIT ${limit};
    SELECT _tabgres.position();`
}

export function parseBatch(raw: Rows, positionSet: Rows, limit: number): Batch {
  const rows = raw.map(
    ([seq, xid, relid, op, newRow, oldRow, lastSeq, toast, commitTime]): ChangeRow => ({
      seq: BigInt(seq!),
      xid: BigInt(xid!),
      relid: Number(relid),
      op: op!,
      newRow,
      oldRow,
      lastSeq: BigInt(lastSeq!),
      commitTime: BigInt(commitTime!),
      toastUnchanged: toast && toast !== '{}' ? toast.slice(1, -1).split(',').map(Number) : null,
    }),
  )
  return { rows, complete: rows.length < limit, position: BigInt(positionSet[0][0]!) }
}

/** The current write position (sequence number of the last change, 0 before any). */
export async function readPosition(s: IdleSession): Promise<bigint> {
  return BigInt((await s.query('SELECT _tabgres.position()'))[0][0]!)
}

/** Where to resume so that every transaction with last seq > `threshold` is read whole. */
export async function resumePoint(s: IdleSession, threshold: bigint): Promise<bigint> {
  const [[first]] = await s.query(
    `SELECT min(first_seq) FROM _tabgres.xacts WHERE last_seq > ${threshold}`,
  )
  const t = threshold < 0n ? 0n : threshold
  if (first === null) return t
  const f = BigInt(first) - 1n
  return f < t ? f : t
}
