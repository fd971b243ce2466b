// How much memory PostgreSQL's reorder buffer counts for a change, so that a
// stream with `streaming 'on'` cuts a large transaction into chunks where
// PostgreSQL would: it streams a transaction's queued changes as soon as they
// reach logical_decoding_work_mem (ReorderBufferCheckMemoryLimit). The sizes
// follow ReorderBufferChangeSize in PostgreSQL 15's reorderbuffer.c: the
// change struct, and per heap tuple its HeapTupleData and t_len (header with
// null bitmap, MAXALIGNed, then each column at its type's alignment). Types
// it does not list are counted as varlena text, so chunks of tables with
// such columns are close to PostgreSQL's, not equal.

import { textEncoder } from '../../protocol/bytes'
import type { PgoutputMessage, TupleColumn } from '../../protocol/pgoutput'
import type { RelationShape } from './catalog'

/** sizeof(ReorderBufferChange) on a 64-bit build. */
const CHANGE = 80
/** sizeof(HeapTupleData). */
const HEAP_TUPLE_DATA = 24
/** offsetof(HeapTupleHeaderData, t_bits). */
const HEADER = 23
/** Two Size fields of a message change. */
const MESSAGE_EXTRA = 16

/** typlen and typalign of the fixed-length built-in types, by OID. */
const FIXED: Record<number, [number, number]> = {
  16: [1, 1], 18: [1, 1], 19: [64, 1], 20: [8, 8], 21: [2, 2], 23: [4, 4], 26: [4, 4], 28: [4, 4], 29: [4, 4],
  700: [4, 4], 701: [8, 8], 790: [8, 8], 829: [6, 4], 1082: [4, 4], 1083: [8, 8], 1114: [8, 8], 1184: [8, 8],
  1186: [16, 8], 1266: [12, 8], 2950: [16, 1], 3220: [8, 8], 5069: [8, 8],
}

const align = (n: number, a: number) => (n + a - 1) & ~(a - 1)

/** Bytes a varlena value takes in a heap tuple, before alignment: its data and header. */
function varlenaData(typeOid: number, text: string): number {
  switch (typeOid) {
    case 17: // bytea, shown as \x and two hex digits a byte
      return (text.length - 2) >> 1
    case 1700: {
      // numeric: a 2-byte header and 2 bytes per base-10000 digit.
      const digits = text.replace(/[^0-9]/g, '').replace(/^0+/, '').length
      return 2 + 2 * Math.ceil(digits / 4)
    }
    default:
      return textEncoder.encode(text).length
  }
}

/** An unchanged out-of-line value stays a TOAST pointer in the tuple: a 2-byte header and varatt_external. */
const TOAST_POINTER = 18

function tupleLen(columns: TupleColumn[], shape: RelationShape): number {
  const natts = shape.columns.length
  const nulls = columns.some((c) => c.kind === 'n')
  let off = 0
  shape.columns.forEach((c, i) => {
    const col = columns[i]
    if (!col || col.kind === 'n') return
    const fixed = FIXED[c.typeOid]
    if (fixed) {
      off = align(off, fixed[1]) + fixed[0]
      return
    }
    if (col.kind === 'u') {
      off += TOAST_POINTER
      return
    }
    const data = col.kind === 't' ? varlenaData(c.typeOid, col.value) : col.value.length
    // Short (1-byte header) varlenas are not aligned; longer ones have a 4-byte header at int alignment.
    off = data + 1 <= 127 ? off + data + 1 : align(off, 4) + data + 4
  })
  return align(HEADER + (nulls ? Math.ceil(natts / 8) : 0), 8) + off
}

/** The reorder buffer's size of the change behind message `m` of relation `shape`. */
export function changeSize(m: PgoutputMessage, shape?: RelationShape): number {
  switch (m.tag) {
    case 'I':
    case 'U':
    case 'D': {
      let size = CHANGE
      const tuples = m.tag === 'I' ? [m.new] : m.tag === 'U' ? (m.old ? [m.old, m.new] : [m.new]) : [m.old]
      for (const t of tuples) size += HEAP_TUPLE_DATA + (shape ? tupleLen(t.columns, shape) : 0)
      return size
    }
    case 'T':
      return CHANGE + 4 * m.relationOids.length
    case 'M':
      return CHANGE + textEncoder.encode(m.prefix).length + 1 + m.content.length + MESSAGE_EXTRA
    default:
      return CHANGE
  }
}
