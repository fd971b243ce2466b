// pgoutput logical replication messages, protocol versions 1 to 4 (2 adds the
// Stream messages and, inside a stream, the transaction's xid after the tag of
// each change, Relation, Type and transactional Message; 4 adds the abort
// position and time to Stream Abort).
// Spec: PostgreSQL docs, "Logical Replication Message Formats"
// (https://www.postgresql.org/docs/current/protocol-logicalrep-message-formats.html).
// Shared by the engine's encoder and the client's decoder; each message is
// keyed on its spec letter (`tag`), as the byte on the wire.

import type { Lsn } from './lsn'

/** TupleData column kinds: 'n' null, 'u' unchanged TOAST, 't' text, 'b' binary. */
export type TupleColumn =
  | { kind: 'n' }
  | { kind: 'u' }
  | { kind: 't'; value: string }
  | { kind: 'b'; value: Uint8Array }

/** Tuple submessage kinds: 'N' new, 'K' old key, 'O' old full row. */
export interface Tuple<K extends 'N' | 'K' | 'O' = 'N' | 'K' | 'O'> {
  kind: K
  columns: TupleColumn[]
}

export interface RelationColumn {
  /** 1 when the column is part of the replica identity key. */
  flags: number
  name: string
  typeOid: number
  typeMod: number
}

/** pg_class.relreplident: default, nothing, full, index. */
export type ReplicaIdentity = 'd' | 'n' | 'f' | 'i'

/** Inside a stream (protocol 2+): the streamed transaction's xid, sent right after the tag. */
interface InStream {
  xid?: number
}

export type PgoutputMessage =
  | { tag: 'B'; finalLsn: Lsn; commitTime: bigint; xid: number }
  | { tag: 'C'; flags: number; commitLsn: Lsn; endLsn: Lsn; commitTime: bigint }
  | { tag: 'O'; originLsn: Lsn; originName: string }
  | ({
      tag: 'R'
      relationOid: number
      namespace: string
      relation: string
      replicaIdentity: ReplicaIdentity
      columns: RelationColumn[]
    } & InStream)
  | ({ tag: 'Y'; typeOid: number; namespace: string; typeName: string } & InStream)
  | ({ tag: 'I'; relationOid: number; new: Tuple<'N'> } & InStream)
  | ({ tag: 'U'; relationOid: number; old?: Tuple<'K' | 'O'>; new: Tuple<'N'> } & InStream)
  | ({ tag: 'D'; relationOid: number; old: Tuple<'K' | 'O'> } & InStream)
  | ({ tag: 'T'; flags: number; relationOids: number[] } & InStream)
  | ({ tag: 'M'; flags: number; lsn: Lsn; prefix: string; content: Uint8Array } & InStream)
  /** Stream Start: a chunk of a large transaction follows (firstSegment: its first). */
  | { tag: 'S'; xid: number; firstSegment: boolean }
  /** Stream Stop: the chunk ends. */
  | { tag: 'E' }
  /** Stream Commit: the streamed transaction committed. */
  | { tag: 'c'; xid: number; flags: number; commitLsn: Lsn; endLsn: Lsn; commitTime: bigint }
  /** Stream Abort: the transaction (or subtransaction subXid) rolled back; protocol 4 adds where and when. */
  | { tag: 'A'; xid: number; subXid: number; abortLsn?: Lsn; abortTime?: bigint }

export type PgoutputTag = PgoutputMessage['tag']

/** Truncate option bits. */
export const TRUNCATE_CASCADE = 1
export const TRUNCATE_RESTART_IDENTITY = 2

/** Message flag bit: the logical message was emitted transactionally. */
export const MESSAGE_TRANSACTIONAL = 1

/** Microseconds between the Unix epoch and PostgreSQL's epoch (2000-01-01 UTC). */
export const PG_EPOCH_OFFSET_US = 946_684_800_000_000n

export function pgTimestampFromDate(ms: number): bigint {
  return BigInt(Math.round(ms * 1000)) - PG_EPOCH_OFFSET_US
}

export function dateFromPgTimestamp(ts: bigint): Date {
  return new Date(Number((ts + PG_EPOCH_OFFSET_US) / 1000n))
}
