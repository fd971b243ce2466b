// Streaming replication CopyData payloads: XLogData 'w', primary keepalive 'k',
// standby status update 'r'. Expected bytes are built by hand with DataView.

import { describe, it, expect } from 'vitest'
import { decodeFrame, encodeFrame, XLOG_DATA_HEADER, type ReplicationFrame } from './replication-frames'
import { ByteWriter, ProtocolError } from './bytes'

function frameBytes(tag: string, size: number, fill: (dv: DataView) => void): Uint8Array {
  const b = new Uint8Array(size)
  const dv = new DataView(b.buffer)
  dv.setUint8(0, tag.charCodeAt(0))
  fill(dv)
  return b
}

function hex(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')
}

const payload = Uint8Array.from([0x42, 0, 0, 0, 0, 1, 0x95, 0xf3, 0xa8, 0xff])

interface Case {
  name: string
  frame: ReplicationFrame
  bytes: () => Uint8Array
}

const cases: Case[] = [
  {
    name: "XLogData 'w' with payload",
    frame: { tag: 'w', walStart: 0x1_0195_f138n, walEnd: 0xffff_ffff_ffff_ff00n, clock: 761_000_123_456_789n, data: payload },
    bytes: () => {
      const b = frameBytes('w', 25 + payload.length, (dv) => {
        dv.setBigUint64(1, 0x1_0195_f138n)
        dv.setBigUint64(9, 0xffff_ffff_ffff_ff00n)
        dv.setBigInt64(17, 761_000_123_456_789n)
      })
      b.set(payload, 25)
      return b
    },
  },
  {
    name: "XLogData 'w' with empty payload and negative clock",
    frame: { tag: 'w', walStart: 0n, walEnd: 0n, clock: -5n, data: new Uint8Array(0) },
    bytes: () => frameBytes('w', 25, (dv) => dv.setBigInt64(17, -5n)),
  },
  {
    name: "keepalive 'k', reply requested",
    frame: { tag: 'k', walEnd: 0x195f3d8n, clock: 123n, replyRequested: true },
    bytes: () =>
      frameBytes('k', 18, (dv) => {
        dv.setBigUint64(1, 0x195f3d8n)
        dv.setBigInt64(9, 123n)
        dv.setUint8(17, 1)
      }),
  },
  {
    name: "keepalive 'k', no reply requested",
    frame: { tag: 'k', walEnd: 0x8000_0000_0000_0000n, clock: -1n, replyRequested: false },
    bytes: () =>
      frameBytes('k', 18, (dv) => {
        dv.setBigUint64(1, 0x8000_0000_0000_0000n)
        dv.setBigInt64(9, -1n)
      }),
  },
  {
    name: "standby status update 'r'",
    frame: { tag: 'r', written: 0x30n, flushed: 0x20n, applied: 0x10n, clock: 999_999_999_999n, replyRequested: false },
    bytes: () =>
      frameBytes('r', 34, (dv) => {
        dv.setBigUint64(1, 0x30n)
        dv.setBigUint64(9, 0x20n)
        dv.setBigUint64(17, 0x10n)
        dv.setBigInt64(25, 999_999_999_999n)
      }),
  },
  {
    name: "standby status update 'r', reply requested, max LSNs",
    frame: {
      tag: 'r',
      written: 0xffff_ffff_ffff_ffffn,
      flushed: 0xffff_ffff_0000_0000n,
      applied: 0x0000_0000_ffff_ffffn,
      clock: 0n,
      replyRequested: true,
    },
    bytes: () =>
      frameBytes('r', 34, (dv) => {
        dv.setBigUint64(1, 0xffff_ffff_ffff_ffffn)
        dv.setBigUint64(9, 0xffff_ffff_0000_0000n)
        dv.setBigUint64(17, 0x0000_0000_ffff_ffffn)
        dv.setUint8(33, 1)
      }),
  },
]

function protocolError(f: () => unknown): ProtocolError {
  try {
    f()
  } catch (e) {
    expect(e).toBeInstanceOf(ProtocolError)
    return e as ProtocolError
  }
  throw new Error('expected a ProtocolError')
}

describe('replication frames: exact bytes', () => {
  it.each(cases)('encode $name', ({ frame, bytes }) => {
    expect(hex(encodeFrame(frame))).toBe(hex(bytes()))
  })

  it.each(cases)('decode $name', ({ frame, bytes }) => {
    expect(decodeFrame(bytes())).toStrictEqual(frame)
  })

  it('lengths: w = 25 + data, k = 18, r = 34', () => {
    expect(XLOG_DATA_HEADER).toBe(25)
    expect(encodeFrame(cases[0].frame).length).toBe(25 + payload.length)
    expect(encodeFrame(cases[1].frame).length).toBe(25)
    expect(encodeFrame(cases[2].frame).length).toBe(18)
    expect(encodeFrame(cases[4].frame).length).toBe(34)
    expect(encodeFrame(cases[5].frame).length).toBe(34)
  })

  it("a keepalive's reply byte other than 1 decodes as not requested", () => {
    const b = cases[2].bytes()
    b[17] = 0
    expect(decodeFrame(b)).toMatchObject({ replyRequested: false })
  })
})

describe('replication frames: round trips', () => {
  it.each(cases)('$name', ({ frame }) => {
    const bytes = encodeFrame(frame)
    expect(decodeFrame(bytes)).toStrictEqual(frame)
    expect(hex(encodeFrame(decodeFrame(bytes)))).toBe(hex(bytes))
  })

  it('a large XLogData payload round trips through a small shared writer', () => {
    const data = new Uint8Array(100_000)
    for (let i = 0; i < data.length; i++) data[i] = (i * 7) & 0xff
    const w = new ByteWriter(2)
    const bytes = encodeFrame({ tag: 'w', walStart: 1n, walEnd: 2n, clock: 3n, data }, w)
    expect(bytes.length).toBe(25 + data.length)
    const f = decodeFrame(bytes)
    expect(f.tag).toBe('w')
    const got = (f as Extract<ReplicationFrame, { tag: 'w' }>).data
    expect(got.length).toBe(data.length)
    let diff = -1
    for (let i = 0; i < data.length; i++) if (got[i] !== data[i]) { diff = i; break }
    expect(diff).toBe(-1)
  })

  it('reusing a writer yields independent copies', () => {
    const w = new ByteWriter(4)
    const a = encodeFrame(cases[2].frame, w)
    const b = encodeFrame(cases[4].frame, w)
    expect(hex(a)).toBe(hex(cases[2].bytes()))
    expect(hex(b)).toBe(hex(cases[4].bytes()))
  })

  it('decodes from a subarray with a non-zero byteOffset', () => {
    const inner = cases[4].bytes()
    const outer = new Uint8Array(inner.length + 9)
    outer.set(inner, 5)
    expect(decodeFrame(outer.subarray(5, 5 + inner.length))).toStrictEqual(cases[4].frame)
  })
})

describe('replication frames: errors', () => {
  it('empty input is a ProtocolError at offset 0', () => {
    expect(protocolError(() => decodeFrame(new Uint8Array(0))).offset).toBe(0)
  })

  it.each(cases.filter((c) => c.frame.tag !== 'w'))('every truncation throws: $name', ({ bytes }) => {
    const full = bytes()
    for (let cut = 1; cut < full.length; cut++) {
      const e = protocolError(() => decodeFrame(full.subarray(0, cut)))
      expect(typeof e.offset).toBe('number')
      expect(e.offset).toBeLessThanOrEqual(cut)
      expect(e.message).toMatch(/truncated/)
    }
  })

  it("XLogData truncated inside its 25-byte header throws", () => {
    const full = cases[0].bytes()
    for (let cut = 1; cut < XLOG_DATA_HEADER; cut++) {
      const e = protocolError(() => decodeFrame(full.subarray(0, cut)))
      expect(e.message).toMatch(/truncated/)
    }
    // Any length from the header on is a valid (shorter) payload.
    for (let cut = XLOG_DATA_HEADER; cut <= full.length; cut++) {
      const f = decodeFrame(full.subarray(0, cut))
      expect(f.tag).toBe('w')
      expect((f as Extract<ReplicationFrame, { tag: 'w' }>).data.length).toBe(cut - XLOG_DATA_HEADER)
    }
  })

  it.each(cases.filter((c) => c.frame.tag !== 'w'))('trailing bytes throw: $name', ({ bytes }) => {
    const full = bytes()
    const extra = new Uint8Array(full.length + 3)
    extra.set(full)
    const e = protocolError(() => decodeFrame(extra))
    expect(e.offset).toBe(full.length)
    expect(e.message).toMatch(/3 trailing bytes/)
  })

  it('unknown tag throws at offset 0 naming the tag in hex', () => {
    for (const t of ['x', 'Z', 'd', '\u0000']) {
      const b = new Uint8Array(34)
      b[0] = t.charCodeAt(0)
      const e = protocolError(() => decodeFrame(b))
      expect(e.offset).toBe(0)
      expect(e.message).toContain(`0x${t.charCodeAt(0).toString(16)}`)
    }
  })
})
