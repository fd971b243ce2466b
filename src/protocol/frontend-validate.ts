// Structural checks of the frontend messages a session hands to PGlite's
// backend. PGlite does not survive every malformed message: a Parse whose
// parameter type list is cut short returns nothing, and the next message
// crashes the whole process (found by test/fuzz/protocol.ts). So nothing
// goes to the backend unless its fields fit its length exactly.
// Spec: PostgreSQL docs, "Message Formats" (Query, Parse, Bind, Describe,
// Execute, Close, Sync, Flush, FunctionCall).
//
// Only framing is checked here: strings are NUL-terminated bytes, counts are
// not negative, every field lies inside the body and nothing trails it. What
// the fields mean (bad UTF-8, an unknown statement, a wrong Describe kind)
// stays PGlite's to judge: its backend answers those as PostgreSQL does.

class Cursor {
  private off = 0
  private readonly view: DataView
  constructor(private readonly body: Uint8Array) {
    this.view = new DataView(body.buffer, body.byteOffset, body.byteLength)
  }
  private need(n: number): void {
    if (this.off + n > this.body.length) throw new Malformed('insufficient data left in message')
  }
  byte(): void {
    this.need(1)
    this.off += 1
  }
  int16(): number {
    this.need(2)
    const v = this.view.getInt16(this.off)
    this.off += 2
    return v
  }
  int32(): number {
    this.need(4)
    const v = this.view.getInt32(this.off)
    this.off += 4
    return v
  }
  count(): number {
    const n = this.int16()
    if (n < 0) throw new Malformed('invalid message format')
    return n
  }
  string(): void {
    const end = this.body.indexOf(0, this.off)
    if (end < 0) throw new Malformed('invalid string in message')
    this.off = end + 1
  }
  /** Int32 length (-1 for NULL) and that many bytes. */
  value(): void {
    const len = this.int32()
    if (len < -1) throw new Malformed('invalid message format')
    if (len > 0) {
      this.need(len)
      this.off += len
    }
  }
  end(): void {
    if (this.off !== this.body.length) throw new Malformed('invalid message format')
  }
}

class Malformed extends Error {}

function check(tag: string, c: Cursor): void {
  switch (tag) {
    case 'Q':
      c.string()
      break
    case 'P': {
      c.string()
      c.string()
      for (let n = c.count(); n > 0; n--) c.int32()
      break
    }
    case 'B': {
      c.string()
      c.string()
      for (let n = c.count(); n > 0; n--) c.int16()
      for (let n = c.count(); n > 0; n--) c.value()
      for (let n = c.count(); n > 0; n--) c.int16()
      break
    }
    case 'D':
    case 'C':
      c.byte()
      c.string()
      break
    case 'E':
      c.string()
      c.int32()
      break
    case 'F': {
      c.int32()
      for (let n = c.count(); n > 0; n--) c.int16()
      for (let n = c.count(); n > 0; n--) c.value()
      c.int16()
      break
    }
    case 'S':
    case 'H':
      break
    default:
      throw new Malformed(`invalid frontend message type ${tag.charCodeAt(0)}`)
  }
  c.end()
}

/** Why a message must not reach the backend (PostgreSQL's wording), or null when it is well formed. */
export function malformedMessage(tag: string, body: Uint8Array): string | null {
  try {
    check(tag, new Cursor(body))
    return null
  } catch (e) {
    if (e instanceof Malformed) return e.message
    throw e
  }
}
