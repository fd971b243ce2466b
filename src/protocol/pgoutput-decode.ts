// pgoutput message decoder, protocol versions 1 to 4: the inverse of the worker's
// encodePgoutput. Pure and bounds-checked: malformed input throws a
// PgoutputDecodeError naming the message tag and byte offset.
// Spec: PostgreSQL docs, "Logical Replication Message Formats".

import { ByteReader, ProtocolError, utf8 } from './bytes'
import type {
  PgoutputMessage,
  RelationColumn,
  ReplicaIdentity,
  Tuple,
  TupleColumn,
} from './pgoutput'

export class PgoutputDecodeError extends Error {
  constructor(
    message: string,
    readonly tag: string,
    readonly offset: number,
  ) {
    super(message)
    this.name = 'PgoutputDecodeError'
  }
}

function readColumns(r: ByteReader): TupleColumn[] {
  const n = r.int16()
  if (n < 0) throw new ProtocolError(`negative column count ${n}`, r.offset - 2)
  const cols: TupleColumn[] = new Array(n)
  for (let i = 0; i < n; i++) {
    const at = r.offset
    const kind = r.char()
    if (kind === 'n' || kind === 'u') {
      cols[i] = { kind }
    } else if (kind === 't') {
      const len = r.int32()
      const start = r.offset
      cols[i] = { kind, value: utf8(r.bytesN(len), start) }
    } else if (kind === 'b') {
      const len = r.int32()
      cols[i] = { kind, value: r.bytesN(len).slice() }
    } else {
      throw new ProtocolError(`unknown tuple column kind 0x${kind.charCodeAt(0).toString(16)}`, at)
    }
  }
  return cols
}

function readTuple<K extends 'N' | 'K' | 'O'>(r: ByteReader, allowed: readonly K[]): Tuple<K> {
  const at = r.offset
  const kind = r.char() as K
  if (!allowed.includes(kind)) {
    throw new ProtocolError(`expected tuple ${allowed.join(' or ')}, got 0x${kind.charCodeAt(0).toString(16)}`, at)
  }
  return { kind, columns: readColumns(r) }
}

const REPLICA_IDENTITIES = new Set(['d', 'n', 'f', 'i'])

/** Messages that carry the streamed transaction's xid inside a stream. */
const STREAMABLE = new Set(['R', 'Y', 'I', 'U', 'D', 'T', 'M'])

function decodeBody(r: ByteReader, tag: string, inStream: boolean): PgoutputMessage {
  if (inStream && STREAMABLE.has(tag)) {
    const xid = r.uint32()
    return { ...decodeBody(r, tag, false), xid } as PgoutputMessage
  }
  switch (tag) {
    case 'B':
      return { tag, finalLsn: r.uint64(), commitTime: r.int64(), xid: r.uint32() }
    case 'C':
      return { tag, flags: r.uint8(), commitLsn: r.uint64(), endLsn: r.uint64(), commitTime: r.int64() }
    case 'O':
      return { tag, originLsn: r.uint64(), originName: r.cstring() }
    case 'R': {
      const relationOid = r.uint32()
      const namespace = r.cstring()
      const relation = r.cstring()
      const at = r.offset
      const replicaIdentity = r.char()
      if (!REPLICA_IDENTITIES.has(replicaIdentity)) {
        throw new ProtocolError(`unknown replica identity '${replicaIdentity}'`, at)
      }
      const n = r.int16()
      const columns: RelationColumn[] = []
      for (let i = 0; i < n; i++) {
        columns.push({ flags: r.uint8(), name: r.cstring(), typeOid: r.uint32(), typeMod: r.int32() })
      }
      return { tag, relationOid, namespace, relation, replicaIdentity: replicaIdentity as ReplicaIdentity, columns }
    }
    case 'Y':
      return { tag, typeOid: r.uint32(), namespace: r.cstring(), typeName: r.cstring() }
    case 'I':
      return { tag, relationOid: r.uint32(), new: readTuple(r, ['N'] as const) }
    case 'U': {
      const relationOid = r.uint32()
      const first = readTuple(r, ['K', 'O', 'N'] as const)
      if (first.kind === 'N') return { tag, relationOid, new: first as Tuple<'N'> }
      return { tag, relationOid, old: first as Tuple<'K' | 'O'>, new: readTuple(r, ['N'] as const) }
    }
    case 'D':
      return { tag, relationOid: r.uint32(), old: readTuple(r, ['K', 'O'] as const) }
    case 'T': {
      const n = r.int32()
      if (n < 0) throw new ProtocolError(`negative relation count ${n}`, r.offset - 4)
      const flags = r.uint8()
      const relationOids: number[] = []
      for (let i = 0; i < n; i++) relationOids.push(r.uint32())
      return { tag, flags, relationOids }
    }
    case 'M': {
      const flags = r.uint8()
      const lsn = r.uint64()
      const prefix = r.cstring()
      const len = r.int32()
      return { tag, flags, lsn, prefix, content: r.bytesN(len).slice() }
    }
    case 'S':
      return { tag, xid: r.uint32(), firstSegment: r.uint8() === 1 }
    case 'E':
      return { tag }
    case 'c':
      return { tag, xid: r.uint32(), flags: r.uint8(), commitLsn: r.uint64(), endLsn: r.uint64(), commitTime: r.int64() }
    case 'A': {
      const xid = r.uint32()
      const subXid = r.uint32()
      // Protocol 4 (streaming 'parallel') adds the abort LSN and time: 16 more bytes.
      if (r.remaining !== 16) return { tag, xid, subXid }
      return { tag, xid, subXid, abortLsn: r.uint64(), abortTime: r.int64() }
    }
    default:
      throw new ProtocolError(`unknown pgoutput message tag 0x${tag.charCodeAt(0).toString(16)}`, 0)
  }
}

/** Decode one pgoutput message (the data of one XLogData frame) outside a stream. */
export function decodePgoutput(bytes: Uint8Array): PgoutputMessage {
  return decode(bytes, false)
}

/**
 * Decode one message that lies between a Stream Start and its Stream Stop:
 * changes there carry the transaction's xid (the caller tracks where it is;
 * the bytes do not say).
 */
export function decodePgoutputInStream(bytes: Uint8Array): PgoutputMessage {
  return decode(bytes, true)
}

/**
 * Decodes one stream's messages in order, knowing where Stream Start and
 * Stream Stop put it (protocol 2+): what a consumer of a streaming session uses.
 */
export class PgoutputStreamDecoder {
  private inStream = false

  decode(bytes: Uint8Array): PgoutputMessage {
    const m = decode(bytes, this.inStream)
    if (m.tag === 'S') this.inStream = true
    else if (m.tag === 'E') this.inStream = false
    return m
  }
}

function decode(bytes: Uint8Array, inStream: boolean): PgoutputMessage {
  const r = new ByteReader(bytes)
  let tag = '?'
  try {
    tag = r.char()
    const m = decodeBody(r, tag, inStream)
    if (r.remaining !== 0) throw new ProtocolError(`${r.remaining} trailing bytes`, r.offset)
    return m
  } catch (e) {
    if (e instanceof ProtocolError) {
      throw new PgoutputDecodeError(`pgoutput '${tag}': ${e.message}`, tag, e.offset)
    }
    throw e
  }
}
