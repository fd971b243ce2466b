// An in-process wire-protocol client for fuzz and hostile-input tests: it
// builds frontend messages by hand, feeds them to a ServerSession through a
// fake Connection, and splits what comes back into backend messages.
// Spec: PostgreSQL docs, "Message Formats". No TCP: every byte is ours to mangle.

import type { PGlite } from '@electric-sql/pglite'
import { ServerSession, type ServerOptions, type WireEngine } from '../../src/wire/server-session'

const utf8 = new TextEncoder()

export function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let o = 0
  for (const p of parts) {
    out.set(p, o)
    o += p.length
  }
  return out
}

export function int32(v: number): Uint8Array {
  const b = new Uint8Array(4)
  new DataView(b.buffer).setInt32(0, v)
  return b
}

function int16(v: number): Uint8Array {
  const b = new Uint8Array(2)
  new DataView(b.buffer).setInt16(0, v)
  return b
}

export const cstr = (s: string): Uint8Array => concat([utf8.encode(s), new Uint8Array([0])])

/** A tagged frontend message: tag, int32 length counting itself, body. */
export function msg(tag: string, ...body: Uint8Array[]): Uint8Array {
  const b = concat(body)
  return concat([new Uint8Array([tag.charCodeAt(0)]), int32(b.length + 4), b])
}

export function startup(params: Record<string, string>): Uint8Array {
  const body = concat([...Object.entries(params).flatMap(([k, v]) => [cstr(k), cstr(v)]), new Uint8Array([0])])
  return concat([int32(body.length + 8), int32(196608), body])
}

export const sslRequest = (): Uint8Array => concat([int32(8), int32(80877103)])
export const cancelRequest = (pid: number, key: number): Uint8Array => concat([int32(16), int32(80877102), int32(pid), int32(key)])
export const query = (sql: string): Uint8Array => msg('Q', cstr(sql))
export const parse = (name: string, sql: string, oids: number[] = []): Uint8Array =>
  msg('P', cstr(name), cstr(sql), int16(oids.length), ...oids.map(int32))
/** Bind with text parameters and text results. */
export function bind(portal: string, stmt: string, params: (string | null)[]): Uint8Array {
  const values = params.flatMap((p) => (p === null ? [int32(-1)] : [int32(utf8.encode(p).length), utf8.encode(p)]))
  return msg('B', cstr(portal), cstr(stmt), int16(0), int16(params.length), ...values, int16(0))
}
export const describe = (kind: 'S' | 'P', name: string): Uint8Array => msg('D', new Uint8Array([kind.charCodeAt(0)]), cstr(name))
export const execute = (portal: string, maxRows = 0): Uint8Array => msg('E', cstr(portal), int32(maxRows))
export const close = (kind: 'S' | 'P', name: string): Uint8Array => msg('C', new Uint8Array([kind.charCodeAt(0)]), cstr(name))
export const sync = (): Uint8Array => msg('S')
export const flush = (): Uint8Array => msg('H')
export const terminate = (): Uint8Array => msg('X')
export const copyData = (b: Uint8Array): Uint8Array => msg('d', b)
export const copyDone = (): Uint8Array => msg('c')
export const copyFail = (why: string): Uint8Array => msg('f', cstr(why))
export const password = (pw: string): Uint8Array => msg('p', cstr(pw))

export interface BackendMessage {
  tag: string
  body: Uint8Array
}

/** Splits backend bytes into messages; throws when the framing is broken. */
export function splitBackend(bytes: Uint8Array): BackendMessage[] {
  const out: BackendMessage[] = []
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let off = 0
  while (off < bytes.length) {
    // The only untagged backend reply: 'N' to SSLRequest, alone in its chunk.
    if (off + 5 > bytes.length) throw new Error(`backend framing: ${bytes.length - off} stray bytes at ${off}`)
    const len = view.getInt32(off + 1)
    if (len < 4 || off + 1 + len > bytes.length) throw new Error(`backend framing: bad length ${len} at ${off}`)
    out.push({ tag: String.fromCharCode(bytes[off]), body: bytes.subarray(off + 5, off + 1 + len) })
    off += 1 + len
  }
  return out
}

/** ErrorResponse/NoticeResponse fields by their code letter. */
export function errorFields(body: Uint8Array): Record<string, string> {
  const f: Record<string, string> = {}
  const dec = new TextDecoder()
  let i = 0
  while (i < body.length && body[i] !== 0) {
    const end = body.indexOf(0, i + 1)
    if (end < 0) throw new Error('ErrorResponse field without terminator')
    f[String.fromCharCode(body[i])] = dec.decode(body.subarray(i + 1, end))
    i = end + 1
  }
  if (i !== body.length - 1) throw new Error('ErrorResponse without final terminator')
  return f
}

/** DataRow fields as text (null for SQL NULL). */
export function dataRowValues(body: Uint8Array): (string | null)[] {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength)
  const n = view.getInt16(0)
  const out: (string | null)[] = []
  let off = 2
  for (let i = 0; i < n; i++) {
    const len = view.getInt32(off)
    off += 4
    if (len < 0) out.push(null)
    else {
      out.push(new TextDecoder().decode(body.subarray(off, off + len)))
      off += len
    }
  }
  return out
}

export const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('')

/**
 * A ServerSession over a fake Connection. The server's replies are kept as
 * raw chunks (the 'N' answering SSLRequest is a chunk of its own).
 */
export class InProcessClient {
  readonly session: ServerSession
  readonly chunks: Uint8Array[] = []
  closed = false
  /** Bytes the server sent after it closed the connection. */
  sentAfterClose = 0
  private waiters: (() => void)[] = []

  constructor(db: PGlite, options: ServerOptions = {}) {
    const engine: WireEngine = { db, durable: () => Promise.resolve() }
    this.session = new ServerSession(
      engine,
      {
        send: (b) => {
          if (this.closed) this.sentAfterClose += b.length
          this.chunks.push(b.slice())
          this.notify()
        },
        close: () => {
          this.closed = true
          this.notify()
        },
      },
      options,
    )
  }

  private notify(): void {
    for (const w of this.waiters.splice(0)) w()
  }

  send(...bytes: Uint8Array[]): void {
    for (const b of bytes) this.session.receive(b)
  }

  /** Backend messages so far (the SSLRequest answer left out). */
  messages(): BackendMessage[] {
    return splitBackend(concat(this.chunks.filter((c) => !(c.length === 1 && (c[0] === 0x4e || c[0] === 0x53)))))
  }

  /** Resolves when pred holds over the messages so far, or when the server closes. */
  async until(pred: (m: BackendMessage[]) => boolean): Promise<BackendMessage[]> {
    for (;;) {
      const m = this.messages()
      if (pred(m) || this.closed) return m
      await new Promise<void>((r) => this.waiters.push(r))
    }
  }

  /**
   * Resolves once every message received so far has been handled. Reads the
   * session's private work queue: that is the one place that knows.
   */
  async settled(): Promise<void> {
    const s = this.session as unknown as { work: Promise<void> }
    for (;;) {
      const w = s.work
      await w.catch(() => {})
      if (s.work === w) return
    }
  }

  get state(): string {
    return (this.session as unknown as { state: string }).state
  }

  /** One simple query; resolves with the messages of its reply (up to ReadyForQuery). */
  async query(sql: string): Promise<BackendMessage[]> {
    const before = this.messages().length
    this.send(query(sql))
    const all = await this.until((m) => m.slice(before).some((x) => x.tag === 'Z'))
    return all.slice(before)
  }
}

/** Connect (trust) and wait for the first ReadyForQuery. */
export async function connect(db: PGlite, params: Record<string, string> = {}): Promise<InProcessClient> {
  const c = new InProcessClient(db)
  c.send(startup({ user: 'postgres', database: 'postgres', ...params }))
  const m = await c.until((ms) => ms.some((x) => x.tag === 'Z'))
  const err = m.find((x) => x.tag === 'E')
  if (err) throw new Error(`connect failed: ${JSON.stringify(errorFields(err.body))}`)
  return c
}
