// ByteWriter / ByteReader: big-endian layout, growth, UTF-8 handling and
// bounds errors with offsets.

import { describe, it, expect } from 'vitest'
import { ByteReader, ByteWriter, ProtocolError, utf8 } from './bytes'

function hex(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')
}

function protocolError(f: () => unknown): ProtocolError {
  try {
    f()
  } catch (e) {
    expect(e).toBeInstanceOf(ProtocolError)
    expect((e as Error).name).toBe('ProtocolError')
    return e as ProtocolError
  }
  throw new Error('expected a ProtocolError')
}

describe('ByteWriter', () => {
  it('writes big-endian integers', () => {
    const w = new ByteWriter()
    w.uint8(0xab).char('Z').int16(-2).int16(0x1234).int32(-1).int32(0x01020304).uint32(0xfffffffe)
    expect(hex(w.toBytes())).toBe('ab' + '5a' + 'fffe' + '1234' + 'ffffffff' + '01020304' + 'fffffffe')
    expect(w.length).toBe(1 + 1 + 2 + 2 + 4 + 4 + 4)
  })

  it('writes int64 and uint64 big-endian', () => {
    const w = new ByteWriter()
    w.int64(-2n).int64(0x0102030405060708n).uint64(0xfedcba9876543210n).uint64(0n).int64(-(2n ** 63n)).int64(2n ** 63n - 1n)
    expect(hex(w.toBytes())).toBe(
      'fffffffffffffffe' + '0102030405060708' + 'fedcba9876543210' + '0000000000000000' + '8000000000000000' + '7fffffffffffffff',
    )
  })

  it('uint32 accepts values above 2^31 and negative numbers as their unsigned bits', () => {
    const w = new ByteWriter()
    w.uint32(0x80000000).uint32(-1)
    expect(hex(w.toBytes())).toBe('80000000ffffffff')
  })

  it('grows past its initial size, keeping earlier bytes', () => {
    const w = new ByteWriter(1)
    const expected: number[] = []
    for (let i = 0; i < 1000; i++) {
      w.int32(i)
      expected.push((i >>> 24) & 0xff, (i >>> 16) & 0xff, (i >>> 8) & 0xff, i & 0xff)
    }
    expect(w.length).toBe(4000)
    expect(Array.from(w.toBytes())).toEqual(expected)
  })

  it('grows for a single write far larger than the buffer', () => {
    const w = new ByteWriter(4)
    const big = new Uint8Array(10_000).fill(7)
    w.uint8(1).bytes(big).uint8(2)
    const out = w.toBytes()
    expect(out.length).toBe(10_002)
    expect(out[0]).toBe(1)
    expect(out[5000]).toBe(7)
    expect(out[10_001]).toBe(2)
  })

  it('grows correctly across every integer width', () => {
    for (let initial = 1; initial <= 9; initial++) {
      const w = new ByteWriter(initial)
      w.uint8(1).int16(2).int32(3).int64(4n).uint64(5n).uint32(6)
      expect(hex(w.toBytes())).toBe('01' + '0002' + '00000003' + '0000000000000004' + '0000000000000005' + '00000006')
    }
  })

  // Regression: a zero initial size once looped forever on the first write
  // (the buffer size doubled from 0).
  it('grows from a zero initial size', () => {
    const w = new ByteWriter(0)
    w.int32(7).cstring('abc')
    expect([...w.toBytes()]).toEqual([0, 0, 0, 7, 0x61, 0x62, 0x63, 0])
  })

  it('cstring writes UTF-8 and a NUL terminator', () => {
    const w = new ByteWriter(2)
    w.cstring('héllo').cstring('').cstring('日本')
    expect(hex(w.toBytes())).toBe('68c3a96c6c6f00' + '00' + 'e697a5e69cac00')
  })

  it('lengthPrefixedText counts UTF-8 bytes for emoji and CJK', () => {
    const cases: [string, string][] = [
      ['', ''],
      ['a', '61'],
      ['é', 'c3a9'],
      ['日本語', 'e697a5e69cace8aa9e'],
      ['😀', 'f09f9880'],
      ['a😀日', '61f09f9880e697a5'],
      ['👨‍👩‍👧', 'f09f91a8e2808df09f91a9e2808df09f91a7'],
    ]
    for (const [s, bytes] of cases) {
      const w = new ByteWriter(1)
      w.lengthPrefixedText(s)
      const n = bytes.length / 2
      expect(hex(w.toBytes()), s).toBe(n.toString(16).padStart(8, '0') + bytes)
      expect(w.length).toBe(4 + n)
    }
  })

  it('lengthPrefixedText of a long all-3-byte string fills the worst-case reservation exactly', () => {
    const s = '€'.repeat(10_000) // 3 UTF-8 bytes per UTF-16 code unit: the estimate's worst case
    const w = new ByteWriter(1)
    w.uint8(9).lengthPrefixedText(s).uint8(8)
    const out = w.toBytes()
    expect(out.length).toBe(1 + 4 + 30_000 + 1)
    expect(new DataView(out.buffer).getInt32(1)).toBe(30_000)
    expect(new TextDecoder().decode(out.subarray(5, 5 + 30_000))).toBe(s)
    expect(out[out.length - 1]).toBe(8)
  })

  it('lengthPrefixedText of a lone surrogate writes U+FFFD (3 bytes)', () => {
    const w = new ByteWriter(1)
    w.lengthPrefixedText('a\ud800b')
    expect(hex(w.toBytes())).toBe('00000005' + '61efbfbd62')
  })

  it('patchInt32 overwrites an earlier position', () => {
    const w = new ByteWriter(2)
    w.char('X').int32(0).cstring('abc')
    w.patchInt32(1, w.length - 1)
    expect(hex(w.toBytes())).toBe('58' + '00000008' + '61626300')
  })

  it('toBytes returns an exact-size copy; reset starts over', () => {
    const w = new ByteWriter(64)
    w.int32(1)
    const a = w.toBytes()
    expect(a.length).toBe(4)
    expect(a.buffer.byteLength).toBe(4)
    w.reset()
    expect(w.length).toBe(0)
    w.int32(2)
    expect(hex(a)).toBe('00000001')
    expect(hex(w.toBytes())).toBe('00000002')
  })
})

describe('ByteReader', () => {
  it('reads what ByteWriter wrote', () => {
    const w = new ByteWriter(1)
    w.uint8(200).char('Q').int16(-300).int32(-70000).uint32(0xfffffff0).int64(-9n).uint64(0xffffffffffffffffn)
    w.cstring('日本😀').bytes(Uint8Array.from([1, 2, 3]))
    const r = new ByteReader(w.toBytes())
    expect(r.uint8()).toBe(200)
    expect(r.char()).toBe('Q')
    expect(r.int16()).toBe(-300)
    expect(r.int32()).toBe(-70000)
    expect(r.uint32()).toBe(0xfffffff0)
    expect(r.int64()).toBe(-9n)
    expect(r.uint64()).toBe(0xffffffffffffffffn)
    expect(r.cstring()).toBe('日本😀')
    expect(Array.from(r.bytesN(3))).toEqual([1, 2, 3])
    expect(r.remaining).toBe(0)
  })

  it('reads int64/uint64 from hand-built big-endian bytes', () => {
    const r = new ByteReader(Uint8Array.from([0x80, 0, 0, 0, 0, 0, 0, 1, 0x80, 0, 0, 0, 0, 0, 0, 1]))
    expect(r.int64()).toBe(-(2n ** 63n) + 1n)
    expect(r.uint64()).toBe(2n ** 63n + 1n)
  })

  it('respects the byteOffset of a subarray', () => {
    const outer = Uint8Array.from([0xee, 0xee, 0xee, 0x00, 0x00, 0x01, 0x02, 0x41, 0x00, 0xee])
    const r = new ByteReader(outer.subarray(3, 9))
    expect(r.int32()).toBe(0x102)
    expect(r.cstring()).toBe('A')
    expect(r.remaining).toBe(0)
    expect(() => r.uint8()).toThrow(ProtocolError)
  })

  it('cstring does not search past the end of a subarray', () => {
    const outer = Uint8Array.from([0x41, 0x42, 0x00])
    const r = new ByteReader(outer.subarray(0, 2))
    expect(protocolError(() => r.cstring()).offset).toBe(0)
  })

  it('bounds errors carry the offset where the read started', () => {
    const reads: [string, (r: ByteReader) => unknown, number][] = [
      ['byte', (r) => r.uint8(), 1],
      ['int16', (r) => r.int16(), 2],
      ['int32', (r) => r.int32(), 4],
      ['uint32', (r) => r.uint32(), 4],
      ['int64', (r) => r.int64(), 8],
      ['uint64', (r) => r.uint64(), 8],
    ]
    for (const [what, read, size] of reads) {
      for (let have = 0; have < size; have++) {
        const r = new ByteReader(new Uint8Array(3 + have))
        r.bytesN(3)
        const e = protocolError(() => read(r))
        expect(e.offset).toBe(3)
        expect(e.message).toBe(`truncated ${what} at offset 3: need ${size} bytes, have ${have}`)
        // a failed read does not advance
        expect(r.offset).toBe(3)
      }
    }
  })

  it('bytesN rejects negative and too-large lengths', () => {
    const r = new ByteReader(new Uint8Array(4))
    expect(r.bytesN(0).length).toBe(0)
    expect(protocolError(() => r.bytesN(-1)).offset).toBe(0)
    expect(protocolError(() => r.bytesN(5)).offset).toBe(0)
    r.bytesN(2)
    expect(protocolError(() => r.bytesN(3)).offset).toBe(2)
    expect(r.bytesN(2).length).toBe(2)
  })

  it('unterminated cstring throws at the string start', () => {
    const r = new ByteReader(Uint8Array.from([0x41, 0x00, 0x42, 0x43]))
    expect(r.cstring()).toBe('A')
    const e = protocolError(() => r.cstring())
    expect(e.offset).toBe(2)
    expect(e.message).toMatch(/unterminated string at offset 2/)
  })

  it('invalid UTF-8 in a cstring throws ProtocolError with the string offset', () => {
    const bad: number[][] = [
      [0xff],
      [0xc3, 0x28], // bad continuation
      [0xe2, 0x82], // truncated sequence
      [0xc0, 0xaf], // overlong '/'
      [0xed, 0xa0, 0x80], // encoded surrogate
      [0xf4, 0x90, 0x80, 0x80], // above U+10FFFF
    ]
    for (const seq of bad) {
      const r = new ByteReader(Uint8Array.from([0x41, 0x00, 0x61, ...seq, 0x00]))
      r.cstring()
      const e = protocolError(() => r.cstring())
      expect(e.offset).toBe(2)
      expect(e.message).toMatch(/invalid UTF-8 at offset 2/)
    }
  })

  it('utf8() decodes valid input and rejects invalid input with the given offset', () => {
    expect(utf8(Uint8Array.from([0xf0, 0x9f, 0x98, 0x80]))).toBe('😀')
    expect(utf8(new Uint8Array(0))).toBe('')
    expect(protocolError(() => utf8(Uint8Array.from([0x80]), 17)).offset).toBe(17)
  })

  // Regression: the decoder once dropped a leading U+FEFF (bytes EF BB BF)
  // from every string (TextDecoder without ignoreBOM). Values that start with
  // U+FEFF are legal PostgreSQL text and must survive unchanged.
  it('utf8() does not strip a leading BOM', () => {
    expect(utf8(Uint8Array.from([0xef, 0xbb, 0xbf, 0x41]))).toBe('\ufeffA')
  })

  it('cstring() does not strip a leading BOM (same bug)', () => {
    const w = new ByteWriter()
    w.cstring('\ufeffname')
    expect(new ByteReader(w.toBytes()).cstring()).toBe('\ufeffname')
  })

  it('a BOM that is not at the start of the string is kept', () => {
    expect(utf8(Uint8Array.from([0x41, 0xef, 0xbb, 0xbf]))).toBe('A\ufeff')
  })
})
