// What a server's response and a client's request share (./http.ts,
// ./http-client.ts): header fields kept case-insensitively, then a body sent
// with Content-Length when end() gives all of it at once, chunked otherwise.

import { Writable } from 'readable-stream'
import { Buffer } from './buffer'
import { CRLF } from './http-messages'
import type * as net from './net'

/** Headers kept by name, case-insensitively, as Node's OutgoingMessage keeps them. */
class OutgoingHeaders {
  readonly #h = new Map<string, [string, number | string | string[]]>()
  set(name: string, value: number | string | string[]): void {
    this.#h.set(name.toLowerCase(), [name, value])
  }
  get(name: string): number | string | string[] | undefined {
    return this.#h.get(name.toLowerCase())?.[1]
  }
  has(name: string): boolean {
    return this.#h.has(name.toLowerCase())
  }
  delete(name: string): void {
    this.#h.delete(name.toLowerCase())
  }
  object(): Record<string, number | string | string[]> {
    return Object.fromEntries([...this.#h].map(([k, [, v]]) => [k, v]))
  }
  names(): string[] {
    return [...this.#h.keys()]
  }
  lines(): string {
    let out = ''
    for (const [, [name, value]] of this.#h) for (const v of Array.isArray(value) ? value : [value]) out += `${name}: ${v}${CRLF}`
    return out
  }
}

/** What ServerResponse and ClientRequest share: headers, then a body with Content-Length or chunked. */
export abstract class OutgoingMessage extends Writable {
  readonly #headers = new OutgoingHeaders()
  headersSent = false
  #chunked = false
  sendDate = true
  chunkedEncoding = false

  constructor() {
    // Finishing a message ends the message, not the connection (Node's OutgoingMessage is no Writable that destroys itself).
    super({ autoDestroy: false })
  }

  abstract get socket(): net.Socket | null
  protected abstract startLine(): string
  /** Messages that never carry a body (a 1xx, 204 or 304 response, HEAD's answer). */
  protected bodyless(): boolean {
    return false
  }

  setHeader(name: string, value: number | string | string[]): this {
    if (this.headersSent) throw Object.assign(new Error('Cannot set headers after they are sent to the client'), { code: 'ERR_HTTP_HEADERS_SENT' })
    this.#headers.set(name, value)
    return this
  }
  appendHeader(name: string, value: string | string[]): this {
    const prev = this.#headers.get(name)
    this.#headers.set(name, prev === undefined ? value : [...[prev].flat().map(String), ...[value].flat()])
    return this
  }
  getHeader(name: string): number | string | string[] | undefined {
    return this.#headers.get(name)
  }
  getHeaders(): Record<string, number | string | string[]> {
    return this.#headers.object()
  }
  getHeaderNames(): string[] {
    return this.#headers.names()
  }
  hasHeader(name: string): boolean {
    return this.#headers.has(name)
  }
  removeHeader(name: string): void {
    this.#headers.delete(name)
  }
  flushHeaders(): void {
    this.#sendHead(undefined)
  }

  #sendHead(firstBody: Buffer | undefined, last = false): void {
    if (this.headersSent) return
    if (!this.bodyless() && !this.#headers.has('content-length') && !this.#headers.has('transfer-encoding')) {
      if (last) this.#headers.set('Content-Length', firstBody?.length ?? 0)
      else (this.#headers.set('Transfer-Encoding', 'chunked'), (this.#chunked = this.chunkedEncoding = true))
    }
    this.headersSent = true
    this.socket?.write(this.startLine() + CRLF + this.#headers.lines() + CRLF)
  }

  override _write(chunk: Buffer, _enc: string, cb: (e?: Error | null) => void): void {
    this.#sendHead(chunk)
    if (chunk.length && !this.bodyless()) this.socket?.write(this.#chunked ? Buffer.concat([Buffer.from(chunk.length.toString(16) + CRLF), chunk, Buffer.from(CRLF)]) : chunk)
    cb()
  }

  override _final(cb: (e?: Error | null) => void): void {
    this.#sendHead(Buffer.alloc(0), true)
    if (this.#chunked) this.socket?.write('0' + CRLF + CRLF)
    this.finished()
    cb()
  }

  // Node writes a whole body given to end() with one Content-Length.
  override end(chunk?: unknown, encoding?: unknown, cb?: unknown): this {
    if (!this.headersSent && chunk !== undefined && typeof chunk !== 'function') {
      const body = typeof chunk === 'string' ? Buffer.from(chunk, (typeof encoding === 'string' ? encoding : 'utf8') as BufferEncoding) : Buffer.from(chunk as Uint8Array)
      this.#sendHead(body, true)
    }
    return super.end(chunk as never, encoding as never, cb as never) as this
  }

  /** The last byte of this message is on the socket. */
  protected finished(): void {}
}

