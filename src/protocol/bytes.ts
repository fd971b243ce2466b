// Big-endian byte writer and bounds-checked reader for PostgreSQL wire formats.
// Browser-safe: Uint8Array/DataView only, no Node Buffer.

const encoder = new TextEncoder()
// ignoreBOM: a value starting with U+FEFF is data and must survive decoding.
const strictDecoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** Thrown by ByteReader when input is short or malformed; carries the offset. */
export class ProtocolError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message)
    this.name = 'ProtocolError'
  }
}

export class ByteWriter {
  private buf: Uint8Array
  private view: DataView
  private pos = 0

  constructor(initialSize = 256) {
    this.buf = new Uint8Array(initialSize)
    this.view = new DataView(this.buf.buffer)
  }

  get length(): number {
    return this.pos
  }

  private ensure(n: number): void {
    const need = this.pos + n
    if (need <= this.buf.length) return
    let size = Math.max(this.buf.length * 2, 64)
    while (size < need) size *= 2
    const next = new Uint8Array(size)
    next.set(this.buf.subarray(0, this.pos))
    this.buf = next
    this.view = new DataView(next.buffer)
  }

  uint8(v: number): this {
    this.ensure(1)
    this.buf[this.pos++] = v
    return this
  }

  /** One ASCII character, e.g. a message tag. */
  char(c: string): this {
    return this.uint8(c.charCodeAt(0))
  }

  int16(v: number): this {
    this.ensure(2)
    this.view.setInt16(this.pos, v)
    this.pos += 2
    return this
  }

  int32(v: number): this {
    this.ensure(4)
    this.view.setInt32(this.pos, v)
    this.pos += 4
    return this
  }

  uint32(v: number): this {
    this.ensure(4)
    this.view.setUint32(this.pos, v >>> 0)
    this.pos += 4
    return this
  }

  int64(v: bigint): this {
    this.ensure(8)
    this.view.setBigInt64(this.pos, v)
    this.pos += 8
    return this
  }

  uint64(v: bigint): this {
    this.ensure(8)
    this.view.setBigUint64(this.pos, v)
    this.pos += 8
    return this
  }

  bytes(b: Uint8Array): this {
    this.ensure(b.length)
    this.buf.set(b, this.pos)
    this.pos += b.length
    return this
  }

  /** NUL-terminated UTF-8 string. */
  cstring(s: string): this {
    const b = encoder.encode(s)
    this.ensure(b.length + 1)
    this.buf.set(b, this.pos)
    this.pos += b.length
    this.buf[this.pos++] = 0
    return this
  }

  /** Int32 byte length followed by the UTF-8 bytes (no NUL), encoded in place. */
  lengthPrefixedText(s: string): this {
    // UTF-16 code units expand to at most 3 UTF-8 bytes each.
    this.ensure(4 + s.length * 3)
    const { written } = encoder.encodeInto(s, this.buf.subarray(this.pos + 4))
    this.view.setInt32(this.pos, written)
    this.pos += 4 + written
    return this
  }

  /** Overwrite an int32 at an earlier offset (message length back-patching). */
  patchInt32(at: number, v: number): void {
    this.view.setInt32(at, v)
  }

  /** A fresh, exactly-sized copy: safe to transfer or keep after reset. */
  toBytes(): Uint8Array {
    return this.buf.slice(0, this.pos)
  }

  reset(): void {
    this.pos = 0
  }

}

export class ByteReader {
  private readonly view: DataView
  offset = 0

  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  }

  get remaining(): number {
    return this.bytes.length - this.offset
  }

  private need(n: number, what: string): void {
    if (n < 0 || this.offset + n > this.bytes.length) {
      throw new ProtocolError(
        `truncated ${what} at offset ${this.offset}: need ${n} bytes, have ${this.remaining}`,
        this.offset,
      )
    }
  }

  uint8(): number {
    this.need(1, 'byte')
    return this.bytes[this.offset++]
  }

  char(): string {
    return String.fromCharCode(this.uint8())
  }

  int16(): number {
    this.need(2, 'int16')
    const v = this.view.getInt16(this.offset)
    this.offset += 2
    return v
  }

  int32(): number {
    this.need(4, 'int32')
    const v = this.view.getInt32(this.offset)
    this.offset += 4
    return v
  }

  uint32(): number {
    this.need(4, 'uint32')
    const v = this.view.getUint32(this.offset)
    this.offset += 4
    return v
  }

  int64(): bigint {
    this.need(8, 'int64')
    const v = this.view.getBigInt64(this.offset)
    this.offset += 8
    return v
  }

  uint64(): bigint {
    this.need(8, 'uint64')
    const v = this.view.getBigUint64(this.offset)
    this.offset += 8
    return v
  }

  bytesN(n: number): Uint8Array {
    this.need(n, `${n}-byte field`)
    const b = this.bytes.subarray(this.offset, this.offset + n)
    this.offset += n
    return b
  }

  /** NUL-terminated UTF-8 string; invalid UTF-8 is a protocol error. */
  cstring(): string {
    const start = this.offset
    const end = this.bytes.indexOf(0, start)
    if (end < 0) throw new ProtocolError(`unterminated string at offset ${start}`, start)
    this.offset = end + 1
    return utf8(this.bytes.subarray(start, end), start)
  }
}

/** Up to this many bytes, ASCII is decoded by hand (see utf8). */
const SHORT = 48

export function utf8(b: Uint8Array, offset = 0): string {
  // Most values on a stream are short ASCII, and TextDecoder's fixed cost per
  // call is many times the work of decoding them by hand.
  if (b.length <= SHORT) {
    let ascii = true
    for (let i = 0; i < b.length; i++) {
      if (b[i] > 0x7f) {
        ascii = false
        break
      }
    }
    if (ascii) return String.fromCharCode.apply(null, b as unknown as number[])
  }
  try {
    return strictDecoder.decode(b)
  } catch {
    throw new ProtocolError(`invalid UTF-8 at offset ${offset}`, offset)
  }
}

export const textEncoder = encoder

/** Bytes from hexadecimal text ("00ff..."; two digits a byte), as encode(..., 'hex') prints them. */
export function hexToBytes(hex: string): Uint8Array {
  const out = new Uint8Array(hex.length >> 1)
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.substr(i * 2, 2), 16)
  return out
}
