// HTTP/1.1 message framing for ./http.ts (RFC 9112 sections 2-7): a head
// (start line and header fields) and a body delimited by Content-Length,
// chunked transfer coding, or the end of the connection. One reader per
// connection and direction; it hands the bytes after an upgrade's head back
// untouched, since they belong to the next protocol.

import { Buffer } from './buffer'

export const maxHeaderSize = 16384
export const CRLF = '\r\n'
const HEAD_END = Buffer.from('\r\n\r\n')

export type Headers = Record<string, string | string[] | undefined>

export interface Head {
  firstLine: string
  headers: Headers
  rawHeaders: string[]
}

export function parseHead(text: string): Head {
  const [firstLine = '', ...lines] = text.split(CRLF)
  const headers: Headers = {}
  const rawHeaders: string[] = []
  for (const line of lines) {
    const colon = line.indexOf(':')
    if (colon <= 0) throw Object.assign(new Error('Parse Error: Invalid header value char'), { code: 'HPE_INVALID_HEADER_TOKEN' })
    const name = line.slice(0, colon).trim()
    const value = line.slice(colon + 1).trim()
    rawHeaders.push(name, value)
    const key = name.toLowerCase()
    const prev = headers[key]
    if (prev === undefined) headers[key] = key === 'set-cookie' ? [value] : value
    else if (Array.isArray(prev)) prev.push(value)
    else headers[key] = key === 'cookie' ? `${prev}; ${value}` : `${prev}, ${value}`
  }
  return { firstLine, headers, rawHeaders }
}

/**
 * Reads messages (head, then body) off a socket's bytes. `onHead` decides
 * what follows the head: a body of a length, chunks, the rest of the
 * connection, or nothing more to parse (an upgrade: the bytes after the head
 * belong to the new protocol).
 */
export class MessageReader {
  #buf: Buffer = Buffer.alloc(0)
  #body: { kind: 'length'; left: number } | { kind: 'chunked'; left: number; trailer: boolean } | { kind: 'close' } | undefined
  #stopped = false

  constructor(
    private readonly onHead: (head: Head) => { kind: 'length'; length: number } | { kind: 'chunked' } | { kind: 'close' } | 'stop',
    private readonly onBody: (chunk: Buffer) => void,
    private readonly onEnd: () => void,
    private readonly onStop: (rest: Buffer) => void,
  ) {}

  push(chunk: Buffer): void {
    if (this.#stopped) return
    this.#buf = this.#buf.length ? Buffer.concat([this.#buf, chunk]) : chunk
    while (this.#buf.length && !this.#stopped) if (!this.#step()) break
  }

  /** The connection ended: a body read "until close" ends with it. */
  end(): void {
    if (this.#body?.kind === 'close') (this.#body = undefined), this.onEnd()
  }

  #step(): boolean {
    const body = this.#body
    if (!body) {
      const at = this.#buf.indexOf(HEAD_END)
      if (at < 0) {
        if (this.#buf.length > maxHeaderSize) throw Object.assign(new Error('Parse Error: Header overflow'), { code: 'HPE_HEADER_OVERFLOW' })
        return false
      }
      const head = parseHead(this.#buf.subarray(0, at).toString('latin1'))
      this.#buf = this.#buf.subarray(at + 4)
      const next = this.onHead(head)
      if (next === 'stop') {
        this.#stopped = true
        this.onStop(this.#buf)
        return false
      }
      if (next.kind === 'length') {
        if (next.length === 0) return this.onEnd(), true
        this.#body = { kind: 'length', left: next.length }
      } else this.#body = next.kind === 'chunked' ? { kind: 'chunked', left: -1, trailer: false } : { kind: 'close' }
      return true
    }
    if (body.kind === 'close') {
      this.onBody(this.#buf)
      this.#buf = Buffer.alloc(0)
      return false
    }
    if (body.kind === 'length') {
      const take = this.#buf.subarray(0, body.left)
      this.#buf = this.#buf.subarray(take.length)
      body.left -= take.length
      this.onBody(take)
      if (body.left === 0) (this.#body = undefined), this.onEnd()
      return true
    }
    // chunked: size line, data, CRLF; a zero size, then trailers until an empty line.
    if (body.left < 0 || body.trailer) {
      const eol = this.#buf.indexOf(CRLF)
      if (eol < 0) return false
      const line = this.#buf.subarray(0, eol).toString('latin1')
      this.#buf = this.#buf.subarray(eol + 2)
      if (body.trailer) {
        if (line === '') (this.#body = undefined), this.onEnd()
        return true
      }
      const size = parseInt(line.split(';')[0]!, 16)
      if (Number.isNaN(size)) throw Object.assign(new Error('Parse Error: Invalid character in chunk size'), { code: 'HPE_INVALID_CHUNK_SIZE' })
      if (size === 0) body.trailer = true
      else body.left = size
      return true
    }
    if (this.#buf.length < body.left + 2) {
      if (this.#buf.length > body.left) return false
      const take = this.#buf
      this.#buf = Buffer.alloc(0)
      body.left -= take.length
      this.onBody(take)
      return false
    }
    this.onBody(this.#buf.subarray(0, body.left))
    this.#buf = this.#buf.subarray(body.left + 2)
    body.left = -1
    return true
  }
}

export function framing(headers: Headers): { kind: 'length'; length: number } | { kind: 'chunked' } {
  if (String(headers['transfer-encoding'] ?? '').toLowerCase().includes('chunked')) return { kind: 'chunked' }
  return { kind: 'length', length: Number(headers['content-length'] ?? 0) }
}

export function isUpgrade(headers: Headers): boolean {
  return headers.upgrade !== undefined && String(headers.connection ?? '').toLowerCase().includes('upgrade')
}

