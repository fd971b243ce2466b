// `node:net` for the tab: a loopback network inside one worker. zero-cache's
// services talk over loopback (the replicator reaches the change-streamer by
// WebSocket, the dispatcher listens on its port), and postgres.js reaches its
// upstream with `new net.Socket().connect(port, host)`. Here `listen(port)`
// registers a server in this worker's table and `connect(port)` pairs two
// sockets in memory, so fastify, ws and postgres.js run unchanged. Every host
// name is this worker: there is no other machine to reach from a tab.
//
// Bytes written on one socket arrive on its peer on a later task, as they
// would from the kernel, so no reader runs inside its writer's call stack.

import { Duplex } from 'readable-stream'
import { Buffer } from './buffer'
import { EventEmitter } from './events'
import { nextTask } from './tasks'

const servers = new Map<number, Server>()
let nextEphemeral = 49152
const listenWaiters = new Map<number, (() => void)[]>()

/** Runs `fn` when a server starts listening on `port` (the host learns that zero-cache is up). */
export function onListen(port: number, fn: () => void): void {
  if (servers.has(port)) return fn()
  listenWaiters.set(port, [...(listenWaiters.get(port) ?? []), fn])
}

function sysError(code: string, syscall: string, port: number, message: string): Error {
  return Object.assign(new Error(`${syscall} ${code} ${message} port ${port}`), { code, errno: code, syscall, port, address: '127.0.0.1' })
}

type ConnectArgs = [port: number | string | { port?: number | string; host?: string; path?: string }, host?: string | (() => void), cb?: () => void]

function portOf(args: ConnectArgs): { port: number; listener?: () => void } {
  const [a, b, c] = args
  const listener = typeof b === 'function' ? b : c
  const port = typeof a === 'object' ? Number(a.port ?? a.path) : Number(a)
  return { port, listener }
}

/** What one read of a TCP socket returns at most (libuv's read buffer). */
const READ_SIZE = 64 * 1024

export class Socket extends Duplex {
  /** @internal */ peer?: Socket
  connecting = false
  pending = true
  bytesRead = 0
  bytesWritten = 0
  remoteAddress?: string
  remotePort?: number
  remoteFamily?: string
  localAddress?: string
  localPort?: number
  #timeoutMs = 0
  #timer?: ReturnType<typeof setTimeout>
  #inbound: (Buffer | null)[] = []
  #flushing = false

  constructor(options: { allowHalfOpen?: boolean } = {}) {
    super({ allowHalfOpen: options.allowHalfOpen ?? false, decodeStrings: true })
  }

  get readyState(): 'opening' | 'open' | 'readOnly' | 'writeOnly' | 'closed' {
    if (this.connecting) return 'opening'
    if (this.destroyed) return 'closed'
    if (this.readable && this.writable) return 'open'
    if (this.readable) return 'readOnly'
    if (this.writable) return 'writeOnly'
    return 'closed'
  }

  connect(...args: ConnectArgs): this {
    const { port, listener } = portOf(args)
    if (listener) this.once('connect', listener)
    this.connecting = true
    nextTask(() => {
      const server = servers.get(port)
      if (!server || this.destroyed) {
        this.connecting = false
        this.destroy(sysError('ECONNREFUSED', 'connect', port, 'connection refused'))
        return
      }
      const local = nextEphemeral++
      const other = new Socket({ allowHalfOpen: server.allowHalfOpen })
      Socket.pair(this, other, local, port)
      this.connecting = false
      this.pending = false
      other.pending = false
      server.accept(other)
      this.emit('connect')
      this.emit('ready')
    })
    return this
  }

  /** @internal Joins two sockets as the two ends of one connection. */
  static pair(client: Socket, server: Socket, clientPort: number, serverPort: number): void {
    client.peer = server
    server.peer = client
    for (const s of [client, server]) (s.remoteAddress = s.localAddress = '127.0.0.1'), (s.remoteFamily = 'IPv4')
    client.localPort = server.remotePort = clientPort
    client.remotePort = server.localPort = serverPort
  }

  override _read(): void {}

  override _write(chunk: Buffer, enc: string, cb: (e?: Error | null) => void): void {
    // Written while connecting: sent once connected, as Node queues it (the stream holds later writes behind this one).
    if (!this.peer && this.connecting) return void this.once('connect', () => this._write(chunk, enc, cb))
    const peer = this.peer
    if (!peer) return cb(sysError('ENOTCONN', 'write', 0, 'socket is not connected'))
    this.bytesWritten += chunk.length
    this.#touch()
    peer.#deliver(Buffer.from(chunk))
    cb()
  }

  override _final(cb: (e?: Error | null) => void): void {
    if (!this.peer && this.connecting) return void this.once('connect', () => this._final(cb))
    const peer = this.peer
    if (peer) peer.#deliver(null)
    cb()
  }

  override _destroy(err: Error | null, cb: (e?: Error | null) => void): void {
    clearTimeout(this.#timer)
    const peer = this.peer
    // The other end sees the connection end, as after a FIN (or a reset: both close it).
    if (peer && !peer.destroyed) nextTask(() => peer.destroy())
    cb(err)
  }

  // A TCP socket hands its reader at most one read's worth (libuv reads 64 KiB) per turn of the event loop,
  // and consumers depend on that: postgres.js pauses the socket when a COPY stream's buffer fills, and if
  // the COPY's last rows and its CopyDone arrive in the same 'data' event the socket is never resumed
  // (porsager/postgres#1016). A whole COPY result in one message here made that certain for any table
  // over 16 KiB; reads of at most 64 KiB, one per task, make it as rare as on a real socket.
  #deliver(chunk: Buffer | null): void {
    if (chunk) for (let at = 0; at < chunk.length; at += READ_SIZE) this.#inbound.push(chunk.subarray(at, at + READ_SIZE))
    else this.#inbound.push(null)
    if (!this.#flushing) this.#scheduleRead()
  }

  #scheduleRead(): void {
    this.#flushing = true
    nextTask(() => {
      let budget = READ_SIZE
      while (this.#inbound.length > 0 && budget > 0) {
        if (this.destroyed) return void (this.#inbound.length = 0)
        const c = this.#inbound[0]
        if (c && c.length > budget) {
          this.#inbound[0] = c.subarray(budget)
          this.#read(c.subarray(0, budget))
          break
        }
        this.#inbound.shift()
        if (c) budget -= c.length
        this.#read(c)
      }
      if (this.#inbound.length > 0) this.#scheduleRead()
      else this.#flushing = false
    })
  }

  #read(c: Buffer | null): void {
    if (c) (this.bytesRead += c.length), this.#touch()
    this.push(c)
  }

  setTimeout(ms: number, cb?: () => void): this {
    this.#timeoutMs = ms
    if (cb) this.once('timeout', cb)
    this.#touch()
    return this
  }

  #touch(): void {
    clearTimeout(this.#timer)
    if (this.#timeoutMs > 0 && !this.destroyed) this.#timer = setTimeout(() => this.emit('timeout'), this.#timeoutMs)
  }

  setNoDelay(): this {
    return this
  }
  setKeepAlive(): this {
    return this
  }
  ref(): this {
    return this
  }
  unref(): this {
    return this
  }
  address(): { address: string; family: string; port: number } | Record<string, never> {
    return this.localPort === undefined ? {} : { address: '127.0.0.1', family: 'IPv4', port: this.localPort }
  }
}

export class Server extends EventEmitter {
  readonly allowHalfOpen: boolean
  #port?: number
  #host = '::'
  #connections = new Set<Socket>()
  #closeCallbacks: ((e?: Error) => void)[] = []
  maxConnections?: number

  constructor(options?: { allowHalfOpen?: boolean } | ((s: Socket) => void), listener?: (s: Socket) => void) {
    super()
    if (typeof options === 'function') (listener = options), (options = {})
    this.allowHalfOpen = options?.allowHalfOpen ?? false
    if (listener) this.on('connection', listener)
  }

  get listening(): boolean {
    return this.#port !== undefined
  }

  listen(...args: unknown[]): this {
    const cb = args.find((a) => typeof a === 'function') as (() => void) | undefined
    const first = args[0]
    let port = 0
    if (typeof first === 'object' && first !== null) {
      const o = first as { port?: number | string; host?: string }
      port = Number(o.port ?? 0)
      if (o.host) this.#host = o.host
    } else if (first !== undefined && typeof first !== 'function') {
      port = Number(first)
      if (typeof args[1] === 'string') this.#host = args[1]
    }
    if (cb) this.once('listening', cb)
    if (port === 0) while (servers.has(nextEphemeral)) nextEphemeral++
    const p = port || nextEphemeral++
    nextTask(() => {
      if (servers.has(p)) return void this.emit('error', sysError('EADDRINUSE', 'listen', p, 'address already in use'))
      servers.set(p, this)
      this.#port = p
      this.emit('listening')
      for (const fn of listenWaiters.get(p) ?? []) fn()
      listenWaiters.delete(p)
    })
    return this
  }

  address(): { address: string; family: string; port: number } | null {
    if (this.#port === undefined) return null
    const v6 = this.#host.includes(':')
    return { address: this.#host, family: v6 ? 'IPv6' : 'IPv4', port: this.#port }
  }

  /** @internal A connection from `Socket.connect`. */
  accept(socket: Socket): void {
    this.#connections.add(socket)
    socket.once('close', () => {
      this.#connections.delete(socket)
      this.#maybeClosed()
    })
    this.emit('connection', socket)
  }

  /** @internal The open connections (http.Server closes idle ones). */
  get connections(): ReadonlySet<Socket> {
    return this.#connections
  }

  /** Stops accepting; the callback runs once every connection has ended, as in Node. */
  close(cb?: (e?: Error) => void): this {
    if (this.#port === undefined) {
      if (cb) nextTask(() => cb(Object.assign(new Error('Server is not running.'), { code: 'ERR_SERVER_NOT_RUNNING' })))
      return this
    }
    if (servers.get(this.#port) === this) servers.delete(this.#port)
    this.#port = undefined
    if (cb) this.#closeCallbacks.push(cb)
    this.#maybeClosed()
    return this
  }

  #maybeClosed(): void {
    if (this.#port !== undefined || this.#connections.size > 0) return
    const cbs = this.#closeCallbacks.splice(0)
    nextTask(() => {
      for (const cb of cbs) cb()
      this.emit('close')
    })
  }

  getConnections(cb: (e: Error | null, n: number) => void): this {
    nextTask(() => cb(null, this.#connections.size))
    return this
  }
  ref(): this {
    return this
  }
  unref(): this {
    return this
  }
}

export function createServer(options?: ConstructorParameters<typeof Server>[0], listener?: (s: Socket) => void): Server {
  return new Server(options, listener)
}

export function connect(...args: ConnectArgs): Socket {
  return new Socket().connect(...args)
}
export const createConnection = connect

export function isIPv4(s: string): boolean {
  return /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/.test(s)
}
export function isIPv6(s: string): boolean {
  return s.includes(':') && /^[0-9a-fA-F:.]+$/.test(s)
}
export function isIP(s: string): 0 | 4 | 6 {
  return isIPv4(s) ? 4 : isIPv6(s) ? 6 : 0
}

export default { Socket, Server, createServer, connect, createConnection, isIP, isIPv4, isIPv6 }
