// `http.request` for the tab (./http.ts): a request over a loopback socket
// (./net.ts, or the connection a caller such as ws creates), its response
// read by ./http-messages.ts, and 'upgrade' on a 101.

import { Buffer } from './buffer'
import { framing, MessageReader, type Headers } from './http-messages'
import { OutgoingMessage } from './http-outgoing'
import { IncomingMessage } from './http-incoming'
import * as net from './net'

export interface RequestOptions {
  method?: string
  host?: string
  hostname?: string
  port?: number | string
  path?: string
  headers?: Headers
  timeout?: number
  signal?: AbortSignal
  createConnection?: (options: RequestOptions) => net.Socket
  [k: string]: unknown
}

export class ClientRequest extends OutgoingMessage {
  readonly method: string
  readonly path: string
  readonly host: string
  #socket: net.Socket
  aborted = false
  reusedSocket = false

  constructor(options: RequestOptions, cb?: (res: IncomingMessage) => void) {
    super()
    this.method = (options.method ?? 'GET').toUpperCase()
    this.path = options.path ?? '/'
    this.host = options.hostname ?? options.host ?? 'localhost'
    const port = Number(options.port ?? 80)
    for (const [k, v] of Object.entries(options.headers ?? {})) if (v !== undefined) this.setHeader(k, v)
    if (!this.hasHeader('host')) this.setHeader('Host', `${this.host}:${port}`)
    if (cb) this.once('response', cb)
    this.#socket = options.createConnection?.({ ...options, port, host: this.host }) ?? net.connect(port, this.host)
    if (options.timeout) this.setTimeout(options.timeout)
    options.signal?.addEventListener('abort', () => this.destroy(Object.assign(new Error('The operation was aborted'), { name: 'AbortError', code: 'ABORT_ERR' })), { once: true })
    this.#socket.once('connect', () => this.emit('socket', this.#socket))
    this.#socket.on('error', (e: Error) => this.emit('error', e))
    this.#listen()
  }

  get socket(): net.Socket {
    return this.#socket
  }
  get connection(): net.Socket {
    return this.#socket
  }
  protected startLine(): string {
    return `${this.method} ${this.path} HTTP/1.1`
  }
  protected override bodyless(): boolean {
    return this.method === 'GET' || this.method === 'HEAD'
  }

  #listen(): void {
    const socket = this.#socket
    let res: IncomingMessage | undefined
    const reader = new MessageReader(
      (head) => {
        const m = /^HTTP\/1\.([01]) (\d{3}) ?(.*)$/.exec(head.firstLine)
        if (!m) throw Object.assign(new Error('Parse Error: Invalid response status'), { code: 'HPE_INVALID_STATUS' })
        res = new IncomingMessage(socket)
        Object.assign(res, { statusCode: Number(m[2]), statusMessage: m[3], headers: head.headers, rawHeaders: head.rawHeaders, httpVersionMinor: Number(m[1]), httpVersion: `1.${m[1]}` })
        if (res.statusCode === 101) return 'stop'
        this.emit('response', res)
        if (this.method === 'HEAD' || res.statusCode === 204 || res.statusCode === 304) return { kind: 'length', length: 0 }
        const f = framing(head.headers)
        return f.kind === 'length' && head.headers['content-length'] === undefined && !head.headers['transfer-encoding'] ? { kind: 'close' } : f
      },
      (chunk) => res!.push(chunk),
      () => ((res!.complete = true), res!.push(null), socket.end()),
      (rest) => {
        socket.off('data', onData)
        ;(socket as { readableFlowing: boolean | null }).readableFlowing = null
        if (this.listenerCount('upgrade') > 0) this.emit('upgrade', res, socket, rest)
        else socket.destroy()
      },
    )
    const onData = (chunk: Buffer) => {
      try {
        reader.push(chunk)
      } catch (e) {
        socket.destroy()
        this.emit('error', e)
      }
    }
    socket.on('data', onData)
    socket.on('end', () => reader.end())
    socket.on('close', () => {
      if (!res) this.emit('error', Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }))
      else if (!res.complete && res.statusCode !== 101) (res.aborted = true), res.emit('aborted'), res.destroy(Object.assign(new Error('aborted'), { code: 'ECONNRESET' }))
      this.emit('close')
    })
  }

  setTimeout(ms: number, cb?: () => void): this {
    if (cb) this.once('timeout', cb)
    this.#socket.setTimeout(ms, () => this.emit('timeout'))
    return this
  }
  setNoDelay(): void {}
  setSocketKeepAlive(): void {}
  abort(): void {
    this.aborted = true
    this.destroy()
  }
  override _destroy(err: Error | null, cb: (e?: Error | null) => void): void {
    this.#socket.destroy()
    cb(err)
  }
}

function toOptions(url: string | URL | RequestOptions, options?: RequestOptions | ((res: IncomingMessage) => void)): RequestOptions {
  const extra = typeof options === 'object' ? options : {}
  if (typeof url === 'object' && !(url instanceof URL)) return { ...url, ...extra }
  const u = new URL(url)
  return { protocol: u.protocol, hostname: u.hostname, port: u.port || 80, path: u.pathname + u.search, ...extra }
}

export function request(url: string | URL | RequestOptions, options?: RequestOptions | ((res: IncomingMessage) => void), cb?: (res: IncomingMessage) => void): ClientRequest {
  return new ClientRequest(toOptions(url, options), typeof options === 'function' ? options : cb)
}

export function get(url: string | URL | RequestOptions, options?: RequestOptions | ((res: IncomingMessage) => void), cb?: (res: IncomingMessage) => void): ClientRequest {
  const req = request(url, options, cb)
  req.end()
  return req
}

