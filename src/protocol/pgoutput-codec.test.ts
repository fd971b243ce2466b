// pgoutput codec tests: encodePgoutput (worker) and decodePgoutput (client).
// (a) exact bytes built by hand with a test-local DataView builder, independent
//     of ByteWriter; (b) decode(encode(m)) round trips; (c) byte-exact
//     re-encoding of payloads captured from real PostgreSQL 15.

import { conformanceAvailable, golden } from '../../test/support/conformance'
import { describe, it, expect } from 'vitest'
import { encodePgoutput, writePgoutput } from './pgoutput-encode'
import { decodePgoutput, decodePgoutputInStream, PgoutputDecodeError, PgoutputStreamDecoder } from './pgoutput-decode'
import { ByteWriter } from './bytes'
import type { PgoutputMessage, TupleColumn } from './pgoutput'

// ---------------------------------------------------------------------------
// Test-local big-endian byte builder (DataView only; deliberately not ByteWriter).

class Bytes {
  private chunks: Uint8Array[] = []

  private fixed(n: number, set: (dv: DataView) => void): this {
    const b = new Uint8Array(n)
    set(new DataView(b.buffer))
    this.chunks.push(b)
    return this
  }

  u8(v: number): this {
    return this.fixed(1, (dv) => dv.setUint8(0, v))
  }
  ch(c: string): this {
    if (c.length !== 1 || c.charCodeAt(0) > 0x7f) throw new Error('ch() takes one ASCII char')
    return this.u8(c.charCodeAt(0))
  }
  i16(v: number): this {
    return this.fixed(2, (dv) => dv.setInt16(0, v, false))
  }
  i32(v: number): this {
    return this.fixed(4, (dv) => dv.setInt32(0, v, false))
  }
  u32(v: number): this {
    return this.fixed(4, (dv) => dv.setUint32(0, v, false))
  }
  i64(v: bigint): this {
    return this.fixed(8, (dv) => dv.setBigInt64(0, v, false))
  }
  u64(v: bigint): this {
    return this.fixed(8, (dv) => dv.setBigUint64(0, v, false))
  }
  raw(b: Uint8Array | number[]): this {
    this.chunks.push(Uint8Array.from(b))
    return this
  }
  /** NUL-terminated UTF-8. */
  cstr(s: string): this {
    return this.raw(new TextEncoder().encode(s)).u8(0)
  }
  /** Int32 byte length + UTF-8 bytes. */
  text(s: string): this {
    const b = new TextEncoder().encode(s)
    return this.i32(b.length).raw(b)
  }
  build(): Uint8Array {
    let n = 0
    for (const c of this.chunks) n += c.length
    const out = new Uint8Array(n)
    let o = 0
    for (const c of this.chunks) {
      out.set(c, o)
      o += c.length
    }
    return out
  }
}

function tupleBytes(b: Bytes, kind: string, cols: TupleColumn[]): Bytes {
  b.ch(kind).i16(cols.length)
  for (const c of cols) {
    b.ch(c.kind)
    if (c.kind === 't') b.text(c.value)
    else if (c.kind === 'b') b.i32(c.value.length).raw(c.value)
  }
  return b
}

function hex(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')
}

function fromHex(s: string): Uint8Array {
  if (s.length % 2 !== 0 || /[^0-9a-fA-F]/.test(s)) throw new Error('bad hex')
  const out = new Uint8Array(s.length / 2)
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16)
  return out
}

// ---------------------------------------------------------------------------
// Fixtures. Values are chosen to exercise sign/width edges: uint32 OIDs and xids
// above 2^31, LSNs above 2^63, negative timestamps (before 2000-01-01), typmods.

const UNICODE = 'héllo wörld ✓ 日本語 😀 \u0000-free, "quotes", \\back\\slash'
const BINARY = Uint8Array.from([0x00, 0xff, 0x7f, 0x80, 0x00, 0x01])

const keyCols: TupleColumn[] = [{ kind: 't', value: '42' }, { kind: 'n' }, { kind: 'n' }]
const oldFullCols: TupleColumn[] = [
  { kind: 't', value: '42' },
  { kind: 't', value: 'before' },
  { kind: 'b', value: Uint8Array.from([1, 2, 3]) },
]
const newCols: TupleColumn[] = [
  { kind: 't', value: '42' },
  { kind: 'u' },
  { kind: 't', value: UNICODE },
]

interface Case {
  name: string
  msg: PgoutputMessage
  bytes: () => Uint8Array
}

const cases: Case[] = [
  {
    name: 'B Begin',
    msg: { tag: 'B', finalLsn: 0x1_0195_f3a8n, commitTime: 761_000_123_456_789n, xid: 0xfffffff0 },
    bytes: () => new Bytes().ch('B').u64(0x1_0195_f3a8n).i64(761_000_123_456_789n).u32(0xfffffff0).build(),
  },
  {
    name: 'B Begin with LSN above 2^63 and xid 0',
    msg: { tag: 'B', finalLsn: 0xffff_ffff_ffff_fffen, commitTime: 0n, xid: 0 },
    bytes: () => new Bytes().ch('B').u64(0xffff_ffff_ffff_fffen).i64(0n).u32(0).build(),
  },
  {
    name: 'C Commit with a negative (pre-2000) timestamp',
    msg: { tag: 'C', flags: 0, commitLsn: 0x195f3a8n, endLsn: 0x195f3d8n, commitTime: -1_234_567n },
    bytes: () => new Bytes().ch('C').u8(0).u64(0x195f3a8n).u64(0x195f3d8n).i64(-1_234_567n).build(),
  },
  {
    name: 'O Origin',
    msg: { tag: 'O', originLsn: 0xabcdef_01234567n, originName: 'pg_16390_ünï' },
    bytes: () => new Bytes().ch('O').u64(0xabcdef_01234567n).cstr('pg_16390_ünï').build(),
  },
  {
    name: 'R Relation',
    msg: {
      tag: 'R',
      relationOid: 0x80000001,
      namespace: 'public',
      relation: 'Mixed Case 表',
      replicaIdentity: 'd',
      columns: [
        { flags: 1, name: 'id', typeOid: 23, typeMod: -1 },
        { flags: 0, name: 'name', typeOid: 1043, typeMod: 24 },
        { flags: 0, name: 'amount', typeOid: 1700, typeMod: 655366 },
        { flags: 0, name: '列', typeOid: 0xfffffffe, typeMod: -1 },
      ],
    },
    bytes: () =>
      new Bytes()
        .ch('R')
        .u32(0x80000001)
        .cstr('public')
        .cstr('Mixed Case 表')
        .ch('d')
        .i16(4)
        .u8(1).cstr('id').u32(23).i32(-1)
        .u8(0).cstr('name').u32(1043).i32(24)
        .u8(0).cstr('amount').u32(1700).i32(655366)
        .u8(0).cstr('列').u32(0xfffffffe).i32(-1)
        .build(),
  },
  {
    name: 'R Relation, replica identity full, zero columns',
    msg: { tag: 'R', relationOid: 16384, namespace: 's', relation: 't', replicaIdentity: 'f', columns: [] },
    bytes: () => new Bytes().ch('R').u32(16384).cstr('s').cstr('t').ch('f').i16(0).build(),
  },
  {
    name: 'Y Type',
    msg: { tag: 'Y', typeOid: 16385, namespace: 'public', typeName: 'mood' },
    bytes: () => new Bytes().ch('Y').u32(16385).cstr('public').cstr('mood').build(),
  },
  {
    name: 'I Insert with n, u, t, b and unicode values',
    msg: {
      tag: 'I',
      relationOid: 16393,
      new: {
        kind: 'N',
        columns: [
          { kind: 't', value: '1' },
          { kind: 'n' },
          { kind: 'u' },
          { kind: 't', value: UNICODE },
          { kind: 't', value: '' },
          { kind: 'b', value: BINARY },
          { kind: 'b', value: new Uint8Array(0) },
        ],
      },
    },
    bytes: () =>
      new Bytes()
        .ch('I')
        .u32(16393)
        .ch('N')
        .i16(7)
        .ch('t').text('1')
        .ch('n')
        .ch('u')
        .ch('t').text(UNICODE)
        .ch('t').i32(0)
        .ch('b').i32(BINARY.length).raw(BINARY)
        .ch('b').i32(0)
        .build(),
  },
  {
    name: 'I Insert with zero columns',
    msg: { tag: 'I', relationOid: 1, new: { kind: 'N', columns: [] } },
    bytes: () => new Bytes().ch('I').u32(1).ch('N').i16(0).build(),
  },
  {
    name: 'U Update with old key (K)',
    msg: { tag: 'U', relationOid: 16393, old: { kind: 'K', columns: keyCols }, new: { kind: 'N', columns: newCols } },
    bytes: () => {
      const b = new Bytes().ch('U').u32(16393)
      tupleBytes(b, 'K', keyCols)
      tupleBytes(b, 'N', newCols)
      return b.build()
    },
  },
  {
    name: 'U Update with old full row (O)',
    msg: { tag: 'U', relationOid: 16393, old: { kind: 'O', columns: oldFullCols }, new: { kind: 'N', columns: newCols } },
    bytes: () => {
      const b = new Bytes().ch('U').u32(16393)
      tupleBytes(b, 'O', oldFullCols)
      tupleBytes(b, 'N', newCols)
      return b.build()
    },
  },
  {
    name: 'U Update without old tuple',
    msg: { tag: 'U', relationOid: 0xffffffff, new: { kind: 'N', columns: newCols } },
    bytes: () => tupleBytes(new Bytes().ch('U').u32(0xffffffff), 'N', newCols).build(),
  },
  {
    name: 'D Delete with old key (K)',
    msg: { tag: 'D', relationOid: 16393, old: { kind: 'K', columns: keyCols } },
    bytes: () => tupleBytes(new Bytes().ch('D').u32(16393), 'K', keyCols).build(),
  },
  {
    name: 'D Delete with old full row (O)',
    msg: { tag: 'D', relationOid: 16393, old: { kind: 'O', columns: oldFullCols } },
    bytes: () => tupleBytes(new Bytes().ch('D').u32(16393), 'O', oldFullCols).build(),
  },
  {
    name: 'T Truncate, CASCADE | RESTART IDENTITY, three relations',
    msg: { tag: 'T', flags: 3, relationOids: [16384, 16390, 0xfffffffe] },
    bytes: () => new Bytes().ch('T').i32(3).u8(3).u32(16384).u32(16390).u32(0xfffffffe).build(),
  },
  {
    name: 'T Truncate, no relations',
    msg: { tag: 'T', flags: 0, relationOids: [] },
    bytes: () => new Bytes().ch('T').i32(0).u8(0).build(),
  },
  {
    name: 'M Message, transactional, binary content with NULs',
    msg: { tag: 'M', flags: 1, lsn: 0x1_0000_0010n, prefix: 'tabgres/ü', content: Uint8Array.from([0, 1, 0, 255, 0]) },
    bytes: () =>
      new Bytes().ch('M').u8(1).u64(0x1_0000_0010n).cstr('tabgres/ü').i32(5).raw([0, 1, 0, 255, 0]).build(),
  },
  {
    name: 'M Message, non-transactional, empty prefix and content',
    msg: { tag: 'M', flags: 0, lsn: 0n, prefix: '', content: new Uint8Array(0) },
    bytes: () => new Bytes().ch('M').u8(0).u64(0n).cstr('').i32(0).build(),
  },
  {
    name: 'S Stream Start, first segment',
    msg: { tag: 'S', xid: 771, firstSegment: true },
    bytes: () => new Bytes().ch('S').u32(771).u8(1).build(),
  },
  {
    name: 'E Stream Stop',
    msg: { tag: 'E' },
    bytes: () => new Bytes().ch('E').build(),
  },
  {
    name: 'c Stream Commit',
    msg: { tag: 'c', xid: 771, flags: 0, commitLsn: 0x16b3748n, endLsn: 0x16b3778n, commitTime: 5n },
    bytes: () => new Bytes().ch('c').u32(771).u8(0).u64(0x16b3748n).u64(0x16b3778n).i64(5n).build(),
  },
  {
    name: 'A Stream Abort (protocol 2)',
    msg: { tag: 'A', xid: 771, subXid: 772 },
    bytes: () => new Bytes().ch('A').u32(771).u32(772).build(),
  },
]

describe('pgoutput encoder: exact bytes built by hand', () => {
  it.each(cases)('$name', ({ msg, bytes }) => {
    expect(hex(encodePgoutput(msg))).toBe(hex(bytes()))
  })

  it('covers every message tag', () => {
    expect(new Set(cases.map((c) => c.msg.tag))).toEqual(new Set(['B', 'C', 'O', 'R', 'Y', 'I', 'U', 'D', 'T', 'M', 'S', 'E', 'c', 'A']))
  })

  it('PgoutputStreamDecoder reads xids only between Stream Start and Stream Stop', () => {
    const insert = (xid?: number): PgoutputMessage => ({ tag: 'I', ...(xid === undefined ? {} : { xid }), relationOid: 5, new: { kind: 'N', columns: [] } })
    const sequence: PgoutputMessage[] = [
      insert(),
      { tag: 'S', xid: 9, firstSegment: true },
      insert(9),
      { tag: 'E' },
      { tag: 'M', flags: 0, lsn: 1n, prefix: 'p', content: new Uint8Array(0) },
      { tag: 'S', xid: 9, firstSegment: false },
      insert(9),
      { tag: 'E' },
      { tag: 'c', xid: 9, flags: 0, commitLsn: 2n, endLsn: 3n, commitTime: 4n },
      insert(),
    ]
    const d = new PgoutputStreamDecoder()
    expect(sequence.map((m) => d.decode(encodePgoutput(m)))).toEqual(sequence)
  })

  it('inside a stream a change carries the xid after its tag; protocol 4 adds the abort position and time', () => {
    const insert: PgoutputMessage = { tag: 'I', xid: 771, relationOid: 16384, new: { kind: 'N', columns: [{ kind: 'n' }] } }
    const bytes = new Bytes().ch('I').u32(771).u32(16384).ch('N').i16(1).ch('n').build()
    expect(hex(encodePgoutput(insert))).toBe(hex(bytes))
    expect(decodePgoutputInStream(bytes)).toEqual(insert)
    // Read as outside a stream, the xid is taken for the relation OID and the rest fails.
    expect(() => decodePgoutput(bytes)).toThrow(PgoutputDecodeError)
    const abort: PgoutputMessage = { tag: 'A', xid: 771, subXid: 771, abortLsn: 0x10n, abortTime: 9n }
    const abortBytes = new Bytes().ch('A').u32(771).u32(771).u64(0x10n).i64(9n).build()
    expect(hex(encodePgoutput(abort))).toBe(hex(abortBytes))
    expect(decodePgoutput(abortBytes)).toEqual(abort)
  })

  it('a tiny initial writer grows to fit a large message', () => {
    const m = cases.find((c) => c.name.startsWith('U Update with old full'))!
    expect(hex(encodePgoutput(m.msg, new ByteWriter(1)))).toBe(hex(m.bytes()))
  })

  it('reusing one writer returns independent copies', () => {
    const w = new ByteWriter(8)
    const a = encodePgoutput(cases[0].msg, w)
    const b = encodePgoutput(cases[2].msg, w)
    expect(hex(a)).toBe(hex(cases[0].bytes()))
    expect(hex(b)).toBe(hex(cases[2].bytes()))
  })

  it('writePgoutput appends after bytes already in the writer', () => {
    const w = new ByteWriter(4)
    w.uint8(0xaa).uint8(0xbb)
    writePgoutput(w, cases[6].msg)
    expect(hex(w.toBytes())).toBe('aabb' + hex(cases[6].bytes()))
  })

  it('text length prefix counts UTF-8 bytes, not UTF-16 code units', () => {
    const value = '😀日é' // 4 + 3 + 2 bytes, 4 UTF-16 code units
    const b = encodePgoutput({ tag: 'I', relationOid: 1, new: { kind: 'N', columns: [{ kind: 't', value }] } })
    // 'I' oid(4) 'N' n(2) 't' len(4) => length field at offset 9
    expect(new DataView(b.buffer, b.byteOffset).getInt32(9)).toBe(9)
    expect(b.length).toBe(13 + 9)
  })
})

describe('pgoutput decoder: hand-built bytes', () => {
  it.each(cases)('$name', ({ msg, bytes }) => {
    expect(decodePgoutput(bytes())).toStrictEqual(msg)
  })

  it('decodes from a subarray with a non-zero byteOffset', () => {
    const inner = cases[4].bytes()
    const outer = new Uint8Array(inner.length + 7)
    outer.set(inner, 3)
    expect(decodePgoutput(outer.subarray(3, 3 + inner.length))).toStrictEqual(cases[4].msg)
  })

  it('binary column values and message content are copies, not views of the input', () => {
    const bytes = new Bytes().ch('I').u32(1).ch('N').i16(1).ch('b').i32(3).raw([1, 2, 3]).build()
    const m = decodePgoutput(bytes)
    bytes.fill(0)
    expect(m).toStrictEqual({ tag: 'I', relationOid: 1, new: { kind: 'N', columns: [{ kind: 'b', value: Uint8Array.from([1, 2, 3]) }] } })

    const mb = new Bytes().ch('M').u8(1).u64(5n).cstr('p').i32(2).raw([9, 8]).build()
    const mm = decodePgoutput(mb)
    mb.fill(0)
    expect(mm).toMatchObject({ tag: 'M', content: Uint8Array.from([9, 8]) })
  })

  it('U whose first tuple is N has no old property', () => {
    const m = decodePgoutput(tupleBytes(new Bytes().ch('U').u32(7), 'N', []).build())
    expect(m).toStrictEqual({ tag: 'U', relationOid: 7, new: { kind: 'N', columns: [] } })
    expect('old' in m).toBe(false)
  })

  it('accepts every replica identity letter', () => {
    for (const ri of ['d', 'n', 'f', 'i'] as const) {
      const b = new Bytes().ch('R').u32(1).cstr('s').cstr('t').ch(ri).i16(0).build()
      expect(decodePgoutput(b)).toMatchObject({ tag: 'R', replicaIdentity: ri })
    }
  })
})

describe('pgoutput round trip decode(encode(m))', () => {
  it.each(cases)('$name', ({ msg }) => {
    const bytes = encodePgoutput(msg)
    expect(decodePgoutput(bytes)).toStrictEqual(msg)
    // and back again, byte for byte
    expect(hex(encodePgoutput(decodePgoutput(bytes)))).toBe(hex(bytes))
  })

  it('a text value over 1 MB with multi-byte UTF-8 round trips exactly', () => {
    // 'aé€😀' is 1 + 2 + 3 + 4 = 10 UTF-8 bytes; 150,000 repeats = 1.5 MB.
    const unit = 'aé€😀'
    const big = unit.repeat(150_000)
    const utf8Len = 10 * 150_000
    const msg: PgoutputMessage = {
      tag: 'I',
      relationOid: 16400,
      new: { kind: 'N', columns: [{ kind: 't', value: '1' }, { kind: 't', value: big }, { kind: 'n' }] },
    }
    const bytes = encodePgoutput(msg)
    // header: 'I'(1) oid(4) 'N'(1) count(2) ; col1: 't'(1) len(4) '1'(1) ; col2: 't'(1) len(4) ; col3 'n'(1)
    expect(bytes.length).toBe(8 + 6 + 5 + utf8Len + 1)
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    expect(dv.getInt32(15)).toBe(utf8Len)
    expect(bytes[19 + utf8Len]).toBe('n'.charCodeAt(0))
    const expected = new Bytes().ch('I').u32(16400).ch('N').i16(3).ch('t').text('1').ch('t').text(big).ch('n').build()
    expect(bytes.length).toBe(expected.length)
    let same = true
    for (let i = 0; i < bytes.length; i++) if (bytes[i] !== expected[i]) { same = false; break }
    expect(same).toBe(true)
    const back = decodePgoutput(bytes)
    expect(back.tag).toBe('I')
    const v = (back as Extract<PgoutputMessage, { tag: 'I' }>).new.columns[1]
    expect(v.kind).toBe('t')
    expect((v as { value: string }).value.length).toBe(big.length)
    expect((v as { value: string }).value === big).toBe(true)
    expect(back).toStrictEqual(msg)
  })

  it('a binary value over 1 MB round trips exactly', () => {
    const big = new Uint8Array(1_500_001)
    for (let i = 0; i < big.length; i++) big[i] = (i * 31 + 7) & 0xff
    const msg: PgoutputMessage = { tag: 'D', relationOid: 5, old: { kind: 'O', columns: [{ kind: 'b', value: big }] } }
    const bytes = encodePgoutput(msg)
    expect(bytes.length).toBe(1 + 4 + 1 + 2 + 1 + 4 + big.length)
    const back = decodePgoutput(bytes) as Extract<PgoutputMessage, { tag: 'D' }>
    expect({ ...back, old: { kind: back.old.kind, n: back.old.columns.length } }).toStrictEqual({
      tag: 'D',
      relationOid: 5,
      old: { kind: 'O', n: 1 },
    })
    const col = back.old.columns[0]
    expect(col.kind).toBe('b')
    const value = (col as { value: Uint8Array }).value
    expect(value).toBeInstanceOf(Uint8Array)
    expect(value.length).toBe(big.length)
    // element-wise comparison by hand: deep equality on 1.5 MB arrays is slow
    let firstDiff = -1
    for (let i = 0; i < big.length; i++) if (value[i] !== big[i]) { firstDiff = i; break }
    expect(firstDiff).toBe(-1)
  })
})

// Regression: a text value or name starting with U+FEFF once lost it on decode
// (TextDecoder without ignoreBOM): '\uFEFFabc' came back as 'abc'.
describe('pgoutput values starting with U+FEFF (BOM)', () => {
  it('a text column value starting with U+FEFF round trips', () => {
    const msg: PgoutputMessage = { tag: 'I', relationOid: 1, new: { kind: 'N', columns: [{ kind: 't', value: '\ufeffabc' }] } }
    expect(decodePgoutput(encodePgoutput(msg))).toStrictEqual(msg)
  })

  it('a relation name starting with U+FEFF round trips', () => {
    const msg: PgoutputMessage = { tag: 'R', relationOid: 1, namespace: 'public', relation: '\ufefft', replicaIdentity: 'd', columns: [] }
    expect(decodePgoutput(encodePgoutput(msg))).toStrictEqual(msg)
  })

  it('U+FEFF elsewhere in a value survives', () => {
    const msg: PgoutputMessage = { tag: 'I', relationOid: 1, new: { kind: 'N', columns: [{ kind: 't', value: 'a\ufeffb\ufeff' }] } }
    expect(decodePgoutput(encodePgoutput(msg))).toStrictEqual(msg)
  })
})

// ---------------------------------------------------------------------------
// Decoder errors.

function decodeError(bytes: Uint8Array): PgoutputDecodeError {
  try {
    decodePgoutput(bytes)
  } catch (e) {
    expect(e).toBeInstanceOf(PgoutputDecodeError)
    return e as PgoutputDecodeError
  }
  throw new Error(`expected decodePgoutput to throw for ${hex(bytes)}`)
}

describe('pgoutput decoder errors', () => {
  it('empty input throws PgoutputDecodeError at offset 0', () => {
    const e = decodeError(new Uint8Array(0))
    expect(e.offset).toBe(0)
    expect(typeof e.tag).toBe('string')
  })

  // Every strict prefix of each message must throw (never return a partial message).
  it.each(cases)('truncation at every cut point throws: $name', ({ msg, bytes }) => {
    const full = bytes()
    for (let cut = 1; cut < full.length; cut++) {
      const e = decodeError(full.subarray(0, cut))
      expect(e.tag).toBe(msg.tag)
      expect(typeof e.offset).toBe('number')
      expect(Number.isInteger(e.offset)).toBe(true)
      expect(e.offset).toBeGreaterThanOrEqual(0)
      expect(e.offset).toBeLessThanOrEqual(cut)
      expect(e.message).toContain(`'${msg.tag}'`)
    }
  })

  it('unknown tag throws naming the tag', () => {
    const e = decodeError(new Bytes().ch('Z').u32(0).build())
    expect(e.tag).toBe('Z')
    expect(e.offset).toBe(0)
    expect(e.message).toContain("'Z'")
    expect(e.message).toContain('0x5a')
    // two-phase tags (protocol 3; tabgres never prepares a transaction) are not decoded
    for (const t of ['P', 'K', 'r', 'b']) {
      expect(decodeError(new Bytes().ch(t).build()).tag).toBe(t)
    }
  })

  it.each(cases)('trailing bytes throw: $name', ({ msg, bytes }) => {
    const full = bytes()
    const extra = new Uint8Array(full.length + 2)
    extra.set(full)
    const e = decodeError(extra)
    expect(e.tag).toBe(msg.tag)
    expect(e.offset).toBe(full.length)
    expect(e.message).toMatch(/2 trailing bytes/)
  })

  it('invalid tuple column kind throws with the kind and its offset', () => {
    const b = new Bytes().ch('I').u32(1).ch('N').i16(2).ch('t').text('ok').ch('x').build()
    const e = decodeError(b)
    expect(e.tag).toBe('I')
    expect(e.offset).toBe(b.length - 1)
    expect(e.message).toContain('0x78')
  })

  it('wrong tuple submessage kind throws', () => {
    // Insert must carry N
    expect(decodeError(tupleBytes(new Bytes().ch('I').u32(1), 'K', []).build()).offset).toBe(5)
    // Delete must carry K or O
    expect(decodeError(tupleBytes(new Bytes().ch('D').u32(1), 'N', []).build()).offset).toBe(5)
    // Update's second tuple must be N
    const u = new Bytes().ch('U').u32(1)
    tupleBytes(u, 'K', [])
    tupleBytes(u, 'O', [])
    expect(decodeError(u.build()).offset).toBe(8)
  })

  it('negative tuple column count throws', () => {
    const e = decodeError(new Bytes().ch('I').u32(1).ch('N').i16(-1).build())
    expect(e.tag).toBe('I')
    expect(e.offset).toBe(6)
  })

  it('negative text / binary length throws', () => {
    expect(decodeError(new Bytes().ch('I').u32(1).ch('N').i16(1).ch('t').i32(-1).build()).tag).toBe('I')
    expect(decodeError(new Bytes().ch('I').u32(1).ch('N').i16(1).ch('b').i32(-5).build()).tag).toBe('I')
    expect(decodeError(new Bytes().ch('M').u8(0).u64(0n).cstr('p').i32(-1).build()).tag).toBe('M')
  })

  it('negative truncate relation count throws', () => {
    const e = decodeError(new Bytes().ch('T').i32(-1).u8(0).build())
    expect(e.offset).toBe(1)
  })

  it('unknown replica identity throws at its offset', () => {
    const b = new Bytes().ch('R').u32(1).cstr('s').cstr('t').ch('x').i16(0).build()
    const e = decodeError(b)
    expect(e.tag).toBe('R')
    expect(e.offset).toBe(9)
  })

  it('invalid UTF-8 in a cstring throws at the string start', () => {
    const b = new Bytes().ch('Y').u32(1).raw([0xc3, 0x28, 0]).cstr('t').build()
    const e = decodeError(b)
    expect(e.tag).toBe('Y')
    expect(e.offset).toBe(5)
  })

  it('invalid UTF-8 in a text column value throws', () => {
    const b = new Bytes().ch('I').u32(1).ch('N').i16(1).ch('t').i32(2).raw([0xff, 0xfe]).build()
    const e = decodeError(b)
    expect(e.tag).toBe('I')
    expect(typeof e.offset).toBe('number')
  })

  // Regression: the error once pointed one past the end of the bad value (15)
  // instead of at its first byte (13), unlike ByteReader.cstring().
  it('invalid UTF-8 in a text column value reports the offset of the value bytes', () => {
    const b = new Bytes().ch('I').u32(1).ch('N').i16(1).ch('t').i32(2).raw([0xff, 0xfe]).build()
    expect(decodeError(b).offset).toBe(13)
  })
})

// ---------------------------------------------------------------------------
// Golden captures from real PostgreSQL 15.

interface Golden {
  postgresVersion: string
  payloads: string[]
  counts?: { messages: number; byTag: Record<string, number> }
  normalized?: Record<string, unknown>[]
}

// Shared lookup: skips only outside CI when ../shared is absent.
function loadGolden(name: string): Golden | null {
  return conformanceAvailable() ? golden<Golden>(name) : null
}

const goldenA = loadGolden('A.json')
const goldenABinary = loadGolden('A-binary.json')

function normalizeColumns(cols: TupleColumn[]): { kind: string; value: string | null }[] {
  return cols.map((c) => ({ kind: c.kind, value: c.kind === 't' ? c.value : null }))
}

describe.skipIf(!goldenA)('pgoutput golden capture A (PostgreSQL 15)', () => {
  const g = goldenA!

  it('has payloads', () => {
    expect(g.postgresVersion).toMatch(/^PostgreSQL 15/)
    expect(g.payloads.length).toBeGreaterThan(0)
  })

  it('encodePgoutput(decodePgoutput(bytes)) reproduces every payload byte for byte', () => {
    for (const [i, h] of g.payloads.entries()) {
      const bytes = fromHex(h)
      const back = encodePgoutput(decodePgoutput(bytes))
      expect(hex(back), `payload #${i}`).toBe(h.toLowerCase())
    }
  })

  it('tag counts match the capture summary', () => {
    const byTag: Record<string, number> = {}
    for (const h of g.payloads) {
      const t = decodePgoutput(fromHex(h)).tag
      byTag[t] = (byTag[t] ?? 0) + 1
    }
    if (g.counts) {
      expect(g.payloads.length).toBe(g.counts.messages)
      expect(byTag).toEqual(g.counts.byTag)
    }
  })

  it('decoded fields agree with the independently normalized capture', () => {
    if (!g.normalized) return
    expect(g.normalized.length).toBe(g.payloads.length)
    const relations = new Map<number, { namespace: string; name: string }>()
    const types = new Map<number, string>()
    for (const [i, h] of g.payloads.entries()) {
      const m = decodePgoutput(fromHex(h))
      const n = g.normalized[i] as Record<string, any>
      const ctx = `payload #${i}`
      expect(m.tag, ctx).toBe(n.tag)
      switch (m.tag) {
        case 'R':
          relations.set(m.relationOid, { namespace: m.namespace, name: m.relation })
          // The normalized capture names user-defined types (announced by 'Y') instead of their OIDs.
          const columns = m.columns.map((c) => ({ ...c, typeOid: types.get(c.typeOid) ?? c.typeOid }))
          expect({ namespace: m.namespace, relation: m.relation, replicaIdentity: m.replicaIdentity, columns }, ctx).toEqual({
            namespace: n.namespace,
            relation: n.relation,
            replicaIdentity: n.replicaIdentity,
            columns: n.columns,
          })
          break
        case 'Y':
          types.set(m.typeOid, `${m.namespace}.${m.typeName}`)
          expect({ namespace: m.namespace, typeName: m.typeName }, ctx).toEqual({ namespace: n.namespace, typeName: n.typeName })
          break
        case 'I':
          expect(relations.get(m.relationOid), ctx).toEqual(n.relation)
          expect({ kind: m.new.kind, columns: normalizeColumns(m.new.columns) }, ctx).toEqual(n.new)
          break
        case 'U':
          expect(relations.get(m.relationOid), ctx).toEqual(n.relation)
          expect({ kind: m.new.kind, columns: normalizeColumns(m.new.columns) }, ctx).toEqual(n.new)
          if (m.old) expect({ kind: m.old.kind, columns: normalizeColumns(m.old.columns) }, ctx).toEqual(n.old)
          else expect(n.old ?? null, ctx).toBeNull()
          break
        case 'D':
          expect(relations.get(m.relationOid), ctx).toEqual(n.relation)
          expect({ kind: m.old.kind, columns: normalizeColumns(m.old.columns) }, ctx).toEqual(n.old)
          break
        case 'T':
          expect(m.flags, ctx).toBe(n.flags)
          expect(m.relationOids.map((o) => relations.get(o)), ctx).toEqual(n.relations)
          break
        case 'M':
          expect(m.flags, ctx).toBe(n.flags)
          expect(m.prefix, ctx).toBe(n.prefix)
          if (typeof n.contentHex === 'string') expect(hex(m.content), ctx).toBe(n.contentHex)
          else expect(new TextDecoder().decode(m.content), ctx).toBe(n.content)
          break
        case 'C':
          expect(m.flags, ctx).toBe(n.flags)
          expect(m.endLsn > m.commitLsn, ctx).toBe(true)
          break
      }
    }
  })

  it('every strict prefix of every captured payload fails to decode', () => {
    for (const h of g.payloads.slice(0, 12)) {
      const bytes = fromHex(h)
      const tag = String.fromCharCode(bytes[0])
      for (let cut = 1; cut < bytes.length; cut++) {
        const e = decodeError(bytes.subarray(0, cut))
        expect(e.tag).toBe(tag)
        expect(typeof e.offset).toBe('number')
      }
    }
  })
})

describe.skipIf(!goldenABinary)('pgoutput golden capture A-binary (PostgreSQL 15, binary tuples)', () => {
  it('re-encodes every payload byte for byte', () => {
    const g = goldenABinary!
    let binaryColumns = 0
    for (const [i, h] of g.payloads.entries()) {
      const m = decodePgoutput(fromHex(h))
      if (m.tag === 'I' || m.tag === 'U') binaryColumns += m.new.columns.filter((c) => c.kind === 'b').length
      expect(hex(encodePgoutput(m)), `payload #${i}`).toBe(h.toLowerCase())
    }
    expect(binaryColumns).toBeGreaterThan(0)
  })
})
