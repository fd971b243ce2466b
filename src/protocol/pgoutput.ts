// pgoutput logical replication messages, protocol version 1.
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

export type PgoutputMessage =
  | { tag: 'B'; finalLsn: Lsn; commitTime: bigint; xid: number }
  | { tag: 'C'; flags: number; commitLsn: Lsn; endLsn: Lsn; commitTime: bigint }
  | { tag: 'O'; originLsn: Lsn; originName: string }
  | {
      tag: 'R'
      relationOid: number
      namespace: string
      relation: string
      replicaIdentity: ReplicaIdentity
      columns: RelationColumn[]
    }
  | { tag: 'Y'; typeOid: number; namespace: string; typeName: string }
  | { tag: 'I'; relationOid: number; new: Tuple<'N'> }
  | { tag: 'U'; relationOid: number; old?: Tuple<'K' | 'O'>; new: Tuple<'N'> }
  | { tag: 'D'; relationOid: number; old: Tuple<'K' | 'O'> }
  | { tag: 'T'; flags: number; relationOids: number[] }
  | { tag: 'M'; flags: number; lsn: Lsn; prefix: string; content: Uint8Array }

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
