// Reads committed changes from the change log in commit order.
// Runs only through whenIdle (./exclusive.ts), so every row it sees belongs to
// a committed transaction; PGlite runs one transaction at a time, so each
// transaction's rows form one contiguous run of sequence numbers.

import type { IdleSession, Rows } from './exclusive'
import { hexToBytes } from '../../protocol/bytes'
import { parseRecordAt } from './record'

export interface ChangeRow {
  seq: bigint
  xid: bigint
  relid: number
  /** I U D T; M transactional message, m non-transactional message. */
  op: string
  /** Record text (I, U); a message's content as hex (M, m). */
  newRow: string | null
  /** Record text (U, D); a message's prefix (M, m). */
  oldRow: string | null
  /** The fields of newRow / oldRow for I, U, D, already parsed by the reader (else null). */
  newFields?: (string | null)[] | null
  oldFields?: (string | null)[] | null
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

/** SQL for one batch: two result sets (batch, position) for parseBatch(); see _tabgres.read_batch. */
export function batchSql(afterSeq: bigint, limit: number): string {
  return `SELECT * FROM _tabgres.read_batch(${afterSeq}, ${limit}); SELECT _tabgres.position();`
}

const NEWLINE = 0x0a
const DASH = 0x2d

/** A row ("-" for none) at text[i]: its text and fields, and the index after it. */
function rowAt(text: string, i: number, wrapped: boolean): [string | null, (string | null)[] | null, number] {
  if (text.charCodeAt(i) === DASH) return [null, null, i + 1]
  const fields: (string | null)[] = []
  const end = parseRecordAt(text, i, fields)
  if (wrapped) return [fields[0], null, end]
  return [text.slice(i, end), fields, end]
}

export function parseBatch(raw: Rows, positionSet: Rows, limit: number): Batch {
  const [count, changes, xacts, messages] = raw[0]
  const commits = new Map<string, { lastSeq: bigint; commitTime: bigint }>()
  if (xacts) {
    const t = xacts.split(' ')
    for (let k = 0; k + 2 < t.length; k += 3) commits.set(t[k], { lastSeq: BigInt(t[k + 1]), commitTime: BigInt(t[k + 2]) })
  }
  const rows: ChangeRow[] = []
  const text = changes ?? ''
  const n = text.length
  let i = 0
  const token = (): string => {
    const j = text.indexOf(' ', i)
    if (j < 0) throw new Error('malformed change-log batch')
    const s = text.slice(i, j)
    i = j + 1
    return s
  }
  while (i < n) {
    const seq = token()
    const xid = token()
    const relid = token()
    const op = token()
    const toast = token()
    const message = op === 'M' || op === 'm'
    const [newRow, newFields, a] = rowAt(text, i, message)
    const [oldRow, oldFields, b] = rowAt(text, a, message)
    i = b
    if (i < n) {
      if (text.charCodeAt(i) !== NEWLINE) throw new Error(`malformed change-log batch at ${i}`)
      i++
    }
    // Every change's transaction is registered before the change is written.
    const commit = commits.get(xid)
    if (!commit) continue
    rows.push({
      seq: BigInt(seq),
      xid: BigInt(xid),
      relid: Number(relid),
      op,
      newRow,
      oldRow,
      newFields,
      oldFields,
      lastSeq: commit.lastSeq,
      commitTime: commit.commitTime,
      toastUnchanged: toast === '' ? null : toast.split(',').map(Number),
    })
  }
  if (messages) mergeMessages(rows, messages, commits)
  return { rows, complete: Number(count) < limit, position: BigInt(positionSet[0][0]!) }
}

const utf8 = new TextDecoder()

/**
 * Non-transactional messages kept in files (./message-files.ts), "seq xid
 * prefix content" lines with hex prefix and content, merged into `rows` in
 * sequence order. One whose transaction committed in this batch belongs to
 * it (and goes out ahead of its Begin, as PostgreSQL's decoder sends it);
 * one from a rolled-back transaction, or from none, stands alone at its position.
 */
function mergeMessages(rows: ChangeRow[], text: string, commits: Map<string, { lastSeq: bigint; commitTime: bigint }>): void {
  const found: ChangeRow[] = []
  for (const line of text.split('\n')) {
    if (!line) continue
    const [seq, xid, prefix, content] = line.split(' ')
    const s = BigInt(seq)
    const commit = commits.get(xid)
    found.push({
      seq: s,
      xid: commit ? BigInt(xid) : -s, // a standalone message is a transaction of its own
      relid: 0,
      op: 'm',
      newRow: content ?? '',
      oldRow: utf8.decode(hexToBytes(prefix ?? '')),
      lastSeq: commit ? commit.lastSeq : s,
      commitTime: commit ? commit.commitTime : 0n,
      toastUnchanged: null,
    })
  }
  if (found.length === 0) return
  const merged = [...rows, ...found].sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0))
  rows.splice(0, rows.length, ...merged)
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
