// Backend messages of the frontend/backend protocol 3.0, checked against bytes
// built by hand, plus a framing test through a test-local stream splitter.

import { describe, it, expect } from 'vitest'
import {
  commandComplete,
  concatBytes,
  copyBothResponse,
  copyInResponse,
  copyData,
  copyDone,
  dataRow,
  errorResponse,
  INT4_FIELD,
  readyForQuery,
  resultSet,
  rowDescription,
  TEXT_FIELD,
} from './backend'
import { ByteWriter } from './bytes'
import { close, query, SYNC } from './frontend'

// ---------------------------------------------------------------------------
// Test-local message builder: body parts are assembled, then the tag and the
// int32 length (which counts itself but not the tag) are prepended.

class Body {
  private parts: number[] = []
  private fixed(n: number, set: (dv: DataView) => void): this {
    const b = new Uint8Array(n)
    set(new DataView(b.buffer))
    this.parts.push(...b)
    return this
  }
  u8(v: number): this {
    return this.fixed(1, (dv) => dv.setUint8(0, v))
  }
  ch(c: string): this {
    return this.u8(c.charCodeAt(0))
  }
  i16(v: number): this {
    return this.fixed(2, (dv) => dv.setInt16(0, v))
  }
  i32(v: number): this {
    return this.fixed(4, (dv) => dv.setInt32(0, v))
  }
  u32(v: number): this {
    return this.fixed(4, (dv) => dv.setUint32(0, v))
  }
  raw(b: Uint8Array | number[]): this {
    this.parts.push(...b)
    return this
  }
  cstr(s: string): this {
    return this.raw(new TextEncoder().encode(s)).u8(0)
  }
  message(tag: string): Uint8Array {
    const out = new Uint8Array(5 + this.parts.length)
    out[0] = tag.charCodeAt(0)
    new DataView(out.buffer).setInt32(1, 4 + this.parts.length)
    out.set(this.parts, 5)
    return out
  }
}

function hex(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')
}

// ---------------------------------------------------------------------------

describe('RowDescription', () => {
  it('encodes fields with defaults and explicit values', () => {
    const got = rowDescription([
      { name: 'slot_name', ...TEXT_FIELD },
      { name: 'timeline', ...INT4_FIELD },
      { name: 'col ✓', tableOid: 0x80000001, columnAttr: 3, typeOid: 1043, typeLen: -1, typeMod: 24, format: 1 },
    ])
    const want = new Body()
      .i16(3)
      .cstr('slot_name').u32(0).i16(0).u32(25).i16(-1).i32(-1).i16(0)
      .cstr('timeline').u32(0).i16(0).u32(23).i16(4).i32(-1).i16(0)
      .cstr('col ✓').u32(0x80000001).i16(3).u32(1043).i16(-1).i32(24).i16(1)
      .message('T')
    expect(hex(got)).toBe(hex(want))
  })

  it('zero fields', () => {
    expect(hex(rowDescription([]))).toBe('54' + '00000006' + '0000')
  })
})

describe('DataRow', () => {
  it('encodes text values and NULL as length -1', () => {
    const got = dataRow(['1', null, '', '日本😀', null])
    const want = new Body()
      .i16(5)
      .i32(1).raw([0x31])
      .i32(-1)
      .i32(0)
      .i32(10).raw(new TextEncoder().encode('日本😀'))
      .i32(-1)
      .message('D')
    expect(hex(got)).toBe(hex(want))
  })

  it('exact bytes for a single NULL', () => {
    expect(hex(dataRow([null]))).toBe('44' + '0000000a' + '0001' + 'ffffffff')
  })

  it('a large value grows the writer', () => {
    const v = 'x€'.repeat(50_000)
    const got = dataRow([v])
    const len = 4 * 50_000
    expect(got.length).toBe(1 + 4 + 2 + 4 + len)
    const dv = new DataView(got.buffer)
    expect(dv.getInt32(1)).toBe(4 + 2 + 4 + len)
    expect(dv.getInt32(7)).toBe(len)
    expect(new TextDecoder().decode(got.subarray(11))).toBe(v)
  })
})

describe('CommandComplete', () => {
  it.each(['SELECT 1', 'IDENTIFY_SYSTEM', 'START_REPLICATION', 'COPY 0', ''])('%j', (tag) => {
    expect(hex(commandComplete(tag))).toBe(hex(new Body().cstr(tag).message('C')))
  })

  it('exact bytes for SELECT 1', () => {
    expect(hex(commandComplete('SELECT 1'))).toBe('43' + '0000000d' + '53454c454354203100')
  })
})

describe('ErrorResponse / NoticeResponse', () => {
  it('minimal error: S, V, C, M and the terminating 0', () => {
    const got = errorResponse({ code: '42601', message: 'syntax error' })
    const want = new Body()
      .ch('S').cstr('ERROR')
      .ch('V').cstr('ERROR')
      .ch('C').cstr('42601')
      .ch('M').cstr('syntax error')
      .u8(0)
      .message('E')
    expect(hex(got)).toBe(hex(want))
    expect(got[got.length - 1]).toBe(0)
  })

  it('all fields in order S V C M D H P W s t c n, then 0', () => {
    const got = errorResponse({
      severity: 'FATAL',
      code: '55006',
      message: 'replication slot "s" is active',
      detail: 'détail',
      hint: 'a hint',
      position: '17',
      where: 'somewhere',
      schema: 'public',
      table: 't',
      column: 'c',
      constraint: 'k',
    })
    const want = new Body()
      .ch('S').cstr('FATAL')
      .ch('V').cstr('FATAL')
      .ch('C').cstr('55006')
      .ch('M').cstr('replication slot "s" is active')
      .ch('D').cstr('détail')
      .ch('H').cstr('a hint')
      .ch('P').cstr('17')
      .ch('W').cstr('somewhere')
      .ch('s').cstr('public')
      .ch('t').cstr('t')
      .ch('c').cstr('c')
      .ch('n').cstr('k')
      .u8(0)
      .message('E')
    expect(hex(got)).toBe(hex(want))
  })

  it('D, H, P only when present', () => {
    const got = errorResponse({ code: '22023', message: 'm', hint: 'h', position: '1' })
    const want = new Body()
      .ch('S').cstr('ERROR').ch('V').cstr('ERROR').ch('C').cstr('22023').ch('M').cstr('m')
      .ch('H').cstr('h').ch('P').cstr('1')
      .u8(0)
      .message('E')
    expect(hex(got)).toBe(hex(want))
  })

  it("kind 'N' makes a NoticeResponse", () => {
    const got = errorResponse({ severity: 'WARNING', code: '01000', message: 'w' }, 'N')
    const want = new Body()
      .ch('S').cstr('WARNING').ch('V').cstr('WARNING').ch('C').cstr('01000').ch('M').cstr('w')
      .u8(0)
      .message('N')
    expect(hex(got)).toBe(hex(want))
  })
})

describe('ReadyForQuery, CopyBothResponse, CopyData, CopyDone', () => {
  it.each(['I', 'T', 'E'] as const)('ReadyForQuery %s', (s) => {
    expect(hex(readyForQuery(s))).toBe('5a' + '00000005' + s.charCodeAt(0).toString(16))
  })

  it("CopyBothResponse is 'W', int32 7, int8 0, int16 0", () => {
    const got = copyBothResponse()
    expect(Array.from(got)).toEqual([0x57, 0, 0, 0, 7, 0, 0, 0])
    expect(got.length).toBe(8)
  })

  it('CopyData wraps the payload', () => {
    const payload = Uint8Array.from([0x77, 0, 1, 2, 0xff])
    expect(hex(copyData(payload))).toBe('64' + '00000009' + '77000102ff')
    expect(hex(copyData(new Uint8Array(0)))).toBe('64' + '00000004')
  })

  it('CopyData with a caller-provided writer returns an independent copy', () => {
    const w = new ByteWriter(2)
    const a = copyData(Uint8Array.from([1, 2, 3]), w)
    const b = copyData(Uint8Array.from([9]), w)
    expect(hex(a)).toBe('64' + '00000007' + '010203')
    expect(hex(b)).toBe('64' + '00000005' + '09')
  })

  it('CopyData of a large payload', () => {
    const payload = new Uint8Array(300_000).fill(0xab)
    const got = copyData(payload)
    expect(got.length).toBe(5 + payload.length)
    expect(new DataView(got.buffer).getInt32(1)).toBe(4 + payload.length)
    expect(got[5]).toBe(0xab)
    expect(got[got.length - 1]).toBe(0xab)
  })

  it('CopyDone', () => {
    expect(hex(copyDone())).toBe('63' + '00000004')
  })

  it("CopyInResponse is 'G', int32 7, the overall format, int16 0 columns", () => {
    expect(Array.from(copyInResponse(false))).toEqual([0x47, 0, 0, 0, 7, 0, 0, 0])
    expect(Array.from(copyInResponse(true))).toEqual([0x47, 0, 0, 0, 7, 1, 0, 0])
  })
})

describe('frontend messages tabgres sends to its backend', () => {
  it("Close of a statement: 'C', int32 length, 'S', the name", () => {
    expect(hex(close('S', 'ab'))).toBe('43' + '00000008' + '53' + '616200')
  })

  it("Query: 'Q', int32 length, the text; Sync", () => {
    expect(hex(query('SELECT 1'))).toBe('51' + '0000000d' + '53454c454354203100')
    expect(hex(SYNC)).toBe('53' + '00000004')
  })
})

describe('resultSet and concatBytes', () => {
  it('resultSet is RowDescription, DataRows, CommandComplete', () => {
    const fields = [{ name: 'a', ...TEXT_FIELD }]
    const parts = resultSet(fields, [['x'], [null]], 'SELECT 2')
    expect(parts.map(hex)).toEqual([
      hex(rowDescription(fields)),
      hex(dataRow(['x'])),
      hex(dataRow([null])),
      hex(commandComplete('SELECT 2')),
    ])
  })

  it('concatBytes joins in order', () => {
    expect(hex(concatBytes([Uint8Array.from([1]), new Uint8Array(0), Uint8Array.from([2, 3])]))).toBe('010203')
    expect(concatBytes([]).length).toBe(0)
  })
})

// ---------------------------------------------------------------------------
// Framing: the length field must let a client split a byte stream at any point.

/** Test-local incremental splitter: tag byte + int32 length (including itself). */
class Splitter {
  private buf = new Uint8Array(0)

  push(chunk: Uint8Array): { tag: string; body: Uint8Array; raw: Uint8Array }[] {
    const next = new Uint8Array(this.buf.length + chunk.length)
    next.set(this.buf)
    next.set(chunk, this.buf.length)
    this.buf = next
    const out: { tag: string; body: Uint8Array; raw: Uint8Array }[] = []
    for (;;) {
      if (this.buf.length < 5) break
      const len = new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength).getInt32(1)
      if (len < 4) throw new Error(`bad length ${len}`)
      if (this.buf.length < 1 + len) break
      const raw = this.buf.slice(0, 1 + len)
      out.push({ tag: String.fromCharCode(raw[0]), body: raw.subarray(5), raw })
      this.buf = this.buf.slice(1 + len)
    }
    return out
  }

  get pending(): number {
    return this.buf.length
  }
}

function mixedMessages(n: number): Uint8Array[] {
  const makers: ((i: number) => Uint8Array)[] = [
    (i) => rowDescription([{ name: `c${i}`, ...TEXT_FIELD }, { name: 'n', ...INT4_FIELD }]),
    (i) => dataRow([String(i), i % 3 === 0 ? null : '日本😀'.repeat(i % 5), ''].slice(0, 1 + (i % 3))),
    (i) => commandComplete(`SELECT ${i}`),
    (i) => errorResponse({ code: '42601', message: `error ${i}`, detail: i % 2 ? 'd' : undefined }),
    () => readyForQuery('I'),
    () => copyBothResponse(),
    (i) => copyData(Uint8Array.from({ length: i }, (_, k) => (k * 13 + i) & 0xff)),
    () => copyDone(),
    () => dataRow([]),
    (i) => errorResponse({ severity: 'NOTICE', code: '00000', message: `notice ${i}` }, 'N'),
  ]
  return Array.from({ length: n }, (_, i) => makers[(i * 7 + 3) % makers.length](i))
}

describe('framing through a stream splitter', () => {
  const messages = mixedMessages(50)
  const stream = concatBytes(messages)

  it('every message length field matches its byte length', () => {
    for (const m of messages) {
      expect(new DataView(m.buffer, m.byteOffset).getInt32(1)).toBe(m.length - 1)
    }
    expect(new Set(messages.map((m) => String.fromCharCode(m[0])))).toEqual(
      new Set(['T', 'D', 'C', 'E', 'Z', 'W', 'd', 'c', 'N']),
    )
  })

  it('one chunk yields all 50 messages', () => {
    const s = new Splitter()
    const got = s.push(stream)
    expect(got.map((m) => hex(m.raw))).toEqual(messages.map(hex))
    expect(s.pending).toBe(0)
  })

  it('splitting the stream at every byte position into two chunks yields the same messages', () => {
    const want = messages.map(hex)
    for (let cut = 0; cut <= stream.length; cut++) {
      const s = new Splitter()
      const got = [...s.push(stream.subarray(0, cut)), ...s.push(stream.subarray(cut))]
      expect(s.pending, `cut ${cut}`).toBe(0)
      expect(got.length, `cut ${cut}`).toBe(messages.length)
      for (let i = 0; i < got.length; i++) {
        if (hex(got[i].raw) !== want[i]) throw new Error(`cut ${cut}: message ${i} differs`)
      }
    }
  })

  it('feeding one byte at a time yields the same messages', () => {
    const s = new Splitter()
    const got: Uint8Array[] = []
    for (let i = 0; i < stream.length; i++) for (const m of s.push(stream.subarray(i, i + 1))) got.push(m.raw)
    expect(got.map(hex)).toEqual(messages.map(hex))
    expect(s.pending).toBe(0)
  })
})
