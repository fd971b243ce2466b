// pgoutput message encoder, protocol versions 1 to 4.
// Spec: PostgreSQL docs, "Logical Replication Message Formats"; mirrors
// src/backend/replication/logical/proto.c (logicalrep_write_*).

import { ByteWriter } from './bytes'
import type { PgoutputMessage, Tuple } from './pgoutput'

function writeTuple(w: ByteWriter, t: Tuple): void {
  w.char(t.kind).int16(t.columns.length)
  for (const c of t.columns) {
    w.char(c.kind)
    if (c.kind === 't') {
      w.lengthPrefixedText(c.value)
    } else if (c.kind === 'b') {
      w.int32(c.value.length).bytes(c.value)
    }
  }
}

/** Encode one message; the result is a fresh copy the caller may transfer. */
export function encodePgoutput(m: PgoutputMessage, w = new ByteWriter()): Uint8Array {
  w.reset()
  writePgoutput(w, m)
  return w.toBytes()
}

/** Append one message to w (lets the caller build its frame headers around it in one buffer). */
export function writePgoutput(w: ByteWriter, m: PgoutputMessage): void {
  w.char(m.tag)
  // Inside a stream, the xid follows the tag (logicalrep_write_* with a valid xid).
  if ('xid' in m && m.xid !== undefined && m.tag !== 'B' && m.tag !== 'S' && m.tag !== 'c' && m.tag !== 'A') w.uint32(m.xid)
  switch (m.tag) {
    case 'B':
      w.uint64(m.finalLsn).int64(m.commitTime).uint32(m.xid)
      break
    case 'C':
      w.uint8(m.flags).uint64(m.commitLsn).uint64(m.endLsn).int64(m.commitTime)
      break
    case 'O':
      w.uint64(m.originLsn).cstring(m.originName)
      break
    case 'R':
      w.uint32(m.relationOid).cstring(m.namespace).cstring(m.relation).char(m.replicaIdentity)
      w.int16(m.columns.length)
      for (const c of m.columns) w.uint8(c.flags).cstring(c.name).uint32(c.typeOid).int32(c.typeMod)
      break
    case 'Y':
      w.uint32(m.typeOid).cstring(m.namespace).cstring(m.typeName)
      break
    case 'I':
      w.uint32(m.relationOid)
      writeTuple(w, m.new)
      break
    case 'U':
      w.uint32(m.relationOid)
      if (m.old) writeTuple(w, m.old)
      writeTuple(w, m.new)
      break
    case 'D':
      w.uint32(m.relationOid)
      writeTuple(w, m.old)
      break
    case 'T':
      w.int32(m.relationOids.length).uint8(m.flags)
      for (const oid of m.relationOids) w.uint32(oid)
      break
    case 'M':
      w.uint8(m.flags).uint64(m.lsn).cstring(m.prefix).int32(m.content.length).bytes(m.content)
      break
    case 'S':
      w.uint32(m.xid).uint8(m.firstSegment ? 1 : 0)
      break
    case 'E':
      break
    case 'c':
      w.uint32(m.xid).uint8(m.flags).uint64(m.commitLsn).uint64(m.endLsn).int64(m.commitTime)
      break
    case 'A':
      w.uint32(m.xid).uint32(m.subXid)
      if (m.abortLsn !== undefined) w.uint64(m.abortLsn).int64(m.abortTime ?? 0n)
      break
  }
}
