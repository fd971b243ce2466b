// `node:http` for the tab: HTTP/1.1 over the loopback sockets of ./net, so
// that fastify serves and ws connects and upgrades unchanged. Both ends speak
// bytes on the socket, as over TCP: ws writes its 101 response itself and
// reads frames after it, and fastify's handlers write through ServerResponse.
//
// This module is the server side; the client is http-client.ts, framing
// http-messages.ts. A request with `Upgrade` goes to the server's 'upgrade'
// listeners with the socket and the bytes read past the head.

import { Buffer } from './buffer'
import { ClientRequest, get, request, type RequestOptions } from './http-client'
import { IncomingMessage } from './http-incoming'
import { CRLF, framing, isUpgrade, maxHeaderSize, MessageReader, type Headers } from './http-messages'
import { OutgoingMessage } from './http-outgoing'
import * as net from './net'

export const METHODS = ['ACL', 'BIND', 'CHECKOUT', 'CONNECT', 'COPY', 'DELETE', 'GET', 'HEAD', 'LINK', 'LOCK', 'M-SEARCH', 'MERGE', 'MKACTIVITY', 'MKCALENDAR', 'MKCOL', 'MOVE', 'NOTIFY', 'OPTIONS', 'PATCH', 'POST', 'PROPFIND', 'PROPPATCH', 'PURGE', 'PUT', 'QUERY', 'REBIND', 'REPORT', 'SEARCH', 'SOURCE', 'SUBSCRIBE', 'TRACE', 'UNBIND', 'UNLINK', 'UNLOCK', 'UNSUBSCRIBE']

export const STATUS_CODES: Record<number, string> = {
  100: 'Continue', 101: 'Switching Protocols', 200: 'OK', 201: 'Created', 202: 'Accepted', 204: 'No Content', 206: 'Partial Content',
  301: 'Moved Permanently', 302: 'Found', 303: 'See Other', 304: 'Not Modified', 307: 'Temporary Redirect', 308: 'Permanent Redirect',
  400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 405: 'Method Not Allowed', 406: 'Not Acceptable', 408: 'Request Timeout',
  409: 'Conflict', 410: 'Gone', 411: 'Length Required', 413: 'Payload Too Large', 414: 'URI Too Long', 415: 'Unsupported Media Type', 426: 'Upgrade Required',
  429: 'Too Many Requests', 431: 'Request Header Fields Too Large', 500: 'Internal Server Error', 501: 'Not Implemented', 502: 'Bad Gateway', 503: 'Service Unavailable', 504: 'Gateway Timeout',
}

export class ServerResponse extends OutgoingMessage {
  statusCode = 200
  statusMessage?: string
  #socket: net.Socket | null
  #bodyless = false

  constructor(readonly req: IncomingMessage) {
    super()
    this.#socket = req.socket
    this.#bodyless = req.method === 'HEAD'
  }
  get socket(): net.Socket | null {
    return this.#socket
  }
  get connection(): net.Socket | null {
    return this.#socket
  }
  protected startLine(): string {
    return `HTTP/1.1 ${this.statusCode} ${this.statusMessage ?? STATUS_CODES[this.statusCode] ?? 'Unknown'}`
  }
  protected override bodyless(): boolean {
    return this.#bodyless || this.statusCode === 204 || this.statusCode === 304 || this.statusCode < 200
  }
  writeHead(statusCode: number, message?: string | Headers | string[], headers?: Headers | string[]): this {
    if (typeof message !== 'string') (headers = message), (message = undefined)
    this.statusCode = statusCode
    if (message) this.statusMessage = message
    if (Array.isArray(headers)) for (let i = 0; i < headers.length; i += 2) this.setHeader(headers[i]!, headers[i + 1]!)
    else for (const [k, v] of Object.entries(headers ?? {})) if (v !== undefined) this.setHeader(k, v)
    return this
  }
  writeContinue(): void {
    this.#socket?.write('HTTP/1.1 100 Continue' + CRLF + CRLF)
  }
  assignSocket(socket: net.Socket): void {
    this.#socket = socket
  }
  detachSocket(): void {
    this.#socket = null
  }
}

export class Server extends net.Server {
  timeout = 0
  keepAliveTimeout = 5000
  headersTimeout = 60000
  requestTimeout = 300000
  maxHeadersCount: number | null = null
  maxRequestsPerSocket: number | null = null
  readonly #idle = new Set<net.Socket>()

  constructor(options?: Record<string, unknown> | ((req: IncomingMessage, res: ServerResponse) => void), handler?: (req: IncomingMessage, res: ServerResponse) => void) {
    super()
    if (typeof options === 'function') handler = options
    if (handler) this.on('request', handler)
    this.on('connection', (socket: net.Socket) => this.#serve(socket))
  }

  #serve(socket: net.Socket): void {
    let req: IncomingMessage | undefined
    /** The response being written: its 'close' comes at its end, or the connection's if that is first (as Node's). */
    let res: ServerResponse | undefined
    this.#idle.add(socket)
    const reader = new MessageReader(
      (head) => {
        const [method = '', url = '', version = ''] = head.firstLine.split(' ')
        if (!/^HTTP\/1\.[01]$/.test(version)) throw Object.assign(new Error('Parse Error: Invalid HTTP version'), { code: 'HPE_INVALID_VERSION' })
        req = new IncomingMessage(socket)
        Object.assign(req, { method, url, headers: head.headers, rawHeaders: head.rawHeaders, httpVersion: version.slice(5), httpVersionMinor: Number(version.slice(7)) })
        this.#idle.delete(socket)
        if (isUpgrade(head.headers) && this.listenerCount('upgrade') > 0) return 'stop'
        const r = (res = new ServerResponse(req))
        r.once('finish', () => {
          if (res === r) res = undefined
          r.emit('close')
          this.#idle.add(socket)
          if (String(req?.headers.connection ?? '').toLowerCase() === 'close') socket.end()
        })
        const f = framing(head.headers)
        // The request is emitted with its head; its body follows as it arrives.
        queueMicrotask(() => this.emit('request', req, r))
        return f
      },
      (chunk) => req!.push(chunk),
      () => ((req!.complete = true), req!.push(null)),
      (rest) => {
        socket.off('data', onData)
        // As Node does: what arrives next waits in the socket until the new protocol's reader attaches.
        ;(socket as { readableFlowing: boolean | null }).readableFlowing = null
        this.emit('upgrade', req, socket, rest)
      },
    )
    const onData = (chunk: Buffer) => {
      try {
        reader.push(chunk)
      } catch (e) {
        if (this.listenerCount('clientError')) this.emit('clientError', e, socket)
        else socket.end('HTTP/1.1 400 Bad Request' + CRLF + 'Connection: close' + CRLF + CRLF)
      }
    }
    socket.on('data', onData)
    socket.on('end', () => reader.end())
    socket.on('close', () => {
      this.#idle.delete(socket)
      res?.emit('close')
      if (req && !req.complete) (req.aborted = true), req.emit('aborted'), req.destroy()
    })
  }

  setTimeout(ms: number, cb?: () => void): this {
    this.timeout = ms
    if (cb) this.on('timeout', cb)
    return this
  }
  closeAllConnections(): void {
    for (const s of this.connections) s.destroy()
  }
  closeIdleConnections(): void {
    for (const s of this.#idle) s.destroy()
  }
}

export function createServer(options?: ConstructorParameters<typeof Server>[0], handler?: ConstructorParameters<typeof Server>[1]): Server {
  return new Server(options, handler)
}

export class Agent {
  constructor(readonly options: Record<string, unknown> = {}) {}
  destroy(): void {}
}
export const globalAgent = new Agent()

export function validateHeaderName(name: string): void {
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw Object.assign(new TypeError(`Header name must be a valid HTTP token ["${name}"]`), { code: 'ERR_INVALID_HTTP_TOKEN' })
}
export function validateHeaderValue(name: string, value: unknown): void {
  if (value === undefined) throw Object.assign(new TypeError(`Invalid value "undefined" for header "${name}"`), { code: 'ERR_HTTP_INVALID_HEADER_VALUE' })
}

export { OutgoingMessage, IncomingMessage, ClientRequest, request, get, maxHeaderSize, type RequestOptions }
export default { METHODS, STATUS_CODES, maxHeaderSize, IncomingMessage, ServerResponse, OutgoingMessage, Server, createServer, ClientRequest, request, get, Agent, globalAgent, validateHeaderName, validateHeaderValue }
