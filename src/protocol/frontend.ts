// Framing of frontend (client) messages, protocol 3.0.
// Spec: PostgreSQL docs, "Message Flow" (Start-up, SSL and GSSAPI session
// encryption, Canceling Requests) and "Message Formats".
//
// The first message of a connection has no tag: int32 length, int32 code
// (protocol version or a request code), then a body. Every later message is a
// tag byte and an int32 length that counts itself. Bytes arrive in arbitrary
// chunks; the reader keeps what is incomplete.

import { ByteReader, ByteWriter, ProtocolError } from './bytes'
import { concatBytes } from './backend'

export const PROTOCOL_3_0 = 196608 // 3 << 16

/** Frontend message tags (after start-up). */
export const enum FrontendTag {
  Bind = 0x42, // 'B'
  Close = 0x43, // 'C'
  CopyData = 0x64, // 'd'
  CopyDone = 0x63, // 'c'
  CopyFail = 0x66, // 'f'
  Describe = 0x44, // 'D'
  Execute = 0x45, // 'E'
  Flush = 0x48, // 'H'
  Parse = 0x50, // 'P'
  Password = 0x70, // 'p': PasswordMessage, SASLInitialResponse, SASLResponse
  Query = 0x51, // 'Q'
  Sync = 0x53, // 'S'
  Terminate = 0x58, // 'X'
}
export const SSL_REQUEST_CODE = 80877103
export const GSSENC_REQUEST_CODE = 80877104
export const CANCEL_REQUEST_CODE = 80877102

/** PostgreSQL's MAX_STARTUP_PACKET_LENGTH. */
const MAX_STARTUP_LENGTH = 10000
/** PostgreSQL's PQ_LARGE_MESSAGE_LIMIT (1 GB - 1): larger length fields are protocol violations. */
const MAX_MESSAGE_LENGTH = 0x3fffffff

export type FrontendMessage =
  | { kind: 'startup'; version: number; params: Record<string, string> }
  | { kind: 'ssl-request' }
  | { kind: 'gssenc-request' }
  | { kind: 'cancel'; processId: number; secretKey: number }
  /** A tagged message; `bytes` is the whole message (tag and length included). */
  | { kind: 'message'; tag: string; bytes: Uint8Array; body: Uint8Array }

const decoder = new TextDecoder('utf-8', { fatal: true })

function parseStartupBody(code: number, body: Uint8Array): FrontendMessage {
  if (code === SSL_REQUEST_CODE) return { kind: 'ssl-request' }
  if (code === GSSENC_REQUEST_CODE) return { kind: 'gssenc-request' }
  const r = new ByteReader(body)
  if (code === CANCEL_REQUEST_CODE) return { kind: 'cancel', processId: r.int32(), secretKey: r.int32() }
  const params: Record<string, string> = {}
  // Name/value pairs of NUL-terminated strings, ended by an empty name.
  for (;;) {
    const name = r.cstring()
    if (name === '') break
    params[name] = r.cstring()
  }
  return { kind: 'startup', version: code, params }
}

export class FrontendReader {
  private buf: Uint8Array = new Uint8Array(0)
  /** True until the start-up packet (SSLRequest answers leave it true). */
  startup = true

  /** Append a chunk; returns every message now complete. Throws ProtocolError on a bad length. */
  push(chunk: Uint8Array): FrontendMessage[] {
    this.buf = this.buf.length === 0 ? chunk.slice() : concatBytes([this.buf, chunk])
    const out: FrontendMessage[] = []
    let off = 0
    for (;;) {
      const avail = this.buf.length - off
      if (this.startup) {
        if (avail < 8) break
        const view = new DataView(this.buf.buffer, this.buf.byteOffset + off)
        const len = view.getInt32(0)
        if (len < 8 || len > MAX_STARTUP_LENGTH) throw new ProtocolError(`invalid length of startup packet: ${len}`, off)
        if (avail < len) break
        const code = view.getInt32(4)
        const m = parseStartupBody(code, this.buf.subarray(off + 8, off + len))
        // After SSLRequest/GSSENCRequest the client sends the real start-up packet.
        if (m.kind === 'startup' || m.kind === 'cancel') this.startup = false
        out.push(m)
        off += len
      } else {
        if (avail < 5) break
        const view = new DataView(this.buf.buffer, this.buf.byteOffset + off)
        const len = view.getInt32(1)
        if (len < 4 || len > MAX_MESSAGE_LENGTH) throw new ProtocolError(`invalid message length ${len}`, off + 1)
        if (avail < len + 1) break
        const bytes = this.buf.slice(off, off + len + 1)
        out.push({ kind: 'message', tag: String.fromCharCode(bytes[0]), bytes, body: bytes.subarray(5) })
        off += len + 1
      }
    }
    this.buf = off === this.buf.length ? new Uint8Array(0) : this.buf.slice(off)
    return out
  }

  /** Bytes received but not yet a complete message. */
  get pending(): number {
    return this.buf.length
  }
}


/** The NUL-terminated query string of a Query ('Q') message body. */
export function queryText(body: Uint8Array): string {
  const end = body.indexOf(0)
  if (end < 0) throw new ProtocolError('query string is not NUL-terminated', 0)
  return decoder.decode(body.subarray(0, end))
}

/** A simple Query message (the frontend messages tabgres itself sends to PGlite's backend). */
export function query(sql: string): Uint8Array {
  const text = utf8.encode(sql)
  const out = new Uint8Array(text.length + 6)
  out[0] = FrontendTag.Query
  new DataView(out.buffer).setInt32(1, text.length + 5)
  out.set(text, 5)
  return out
}

/** A StartupMessage for protocol 3.0 with `params` (user, database, application_name, ...). */
export function startupMessage(params: Record<string, string>): Uint8Array {
  const w = new ByteWriter(64)
  w.int32(0).int32(PROTOCOL_3_0)
  for (const [k, v] of Object.entries(params)) w.cstring(k).cstring(v)
  w.uint8(0)
  w.patchInt32(0, w.length)
  return w.toBytes()
}

/** A Sync message. */
export const SYNC: Uint8Array = new Uint8Array([FrontendTag.Sync, 0, 0, 0, 4])

/** Close of a prepared statement ('S') or portal ('P') by name. */
export function close(kind: 'S' | 'P', name: string): Uint8Array {
  const w = new ByteWriter(name.length * 3 + 8)
  w.char('C').int32(0).char(kind).cstring(name)
  w.patchInt32(1, w.length - 1)
  return w.toBytes()
}

const utf8 = new TextEncoder()
