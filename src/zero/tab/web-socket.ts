// The page's side of a WebSocket to zero-cache in the tab: the browser's
// WebSocket interface (events, readyState, send, close) over a MessagePort
// to zero-cache's worker (sockets.ts). The Zero client takes its WebSocket
// from the page's global: `routeWebSockets` puts a class there that sends the
// origin zero-cache answers on through a port and every other URL to the
// browser's own WebSocket.

import type { SocketFrame, SocketOpen } from './messages'

const CONNECTING = 0
const OPEN = 1
const CLOSING = 2
const CLOSED = 3

export class PortWebSocket extends EventTarget {
  static readonly CONNECTING = CONNECTING
  static readonly OPEN = OPEN
  static readonly CLOSING = CLOSING
  static readonly CLOSED = CLOSED
  readonly CONNECTING = CONNECTING
  readonly OPEN = OPEN
  readonly CLOSING = CLOSING
  readonly CLOSED = CLOSED
  readonly url: string
  readonly extensions = ''
  protocol = ''
  binaryType: BinaryType = 'blob'
  bufferedAmount = 0
  readyState: number = CONNECTING
  onopen: ((ev: Event) => void) | null = null
  onmessage: ((ev: MessageEvent) => void) | null = null
  onerror: ((ev: Event) => void) | null = null
  onclose: ((ev: CloseEvent) => void) | null = null
  readonly #port: MessagePort

  constructor(url: string, protocols: string | string[] | undefined, worker: Worker) {
    super()
    this.url = url
    const { port1, port2 } = new MessageChannel()
    this.#port = port1
    port1.onmessage = ({ data }: MessageEvent<SocketFrame>) => this.#frame(data)
    const u = new URL(url)
    const open: SocketOpen = { type: 'socket', path: u.pathname + u.search, protocols: protocols === undefined ? [] : [protocols].flat(), port: port2 }
    worker.postMessage(open, [port2])
  }

  #frame(f: SocketFrame): void {
    if (f.type === 'open') {
      this.readyState = OPEN
      this.protocol = f.protocol
      this.#dispatch(new Event('open'))
    } else if (f.type === 'message') {
      const data = typeof f.data === 'string' || this.binaryType === 'arraybuffer' ? f.data : new Blob([f.data])
      this.#dispatch(new MessageEvent('message', { data, origin: new URL(this.url).origin }))
    } else if (f.type === 'error') this.#dispatch(new Event('error'))
    else if (f.type === 'close') {
      if (this.readyState === CLOSED) return
      this.readyState = CLOSED
      this.#port.close()
      this.#dispatch(new CloseEvent('close', { code: f.code, reason: f.reason, wasClean: f.wasClean }))
    }
  }

  #dispatch(ev: Event): void {
    const handler = { open: this.onopen, message: this.onmessage, error: this.onerror, close: this.onclose }[ev.type] as ((e: Event) => void) | null
    handler?.call(this, ev)
    this.dispatchEvent(ev)
  }

  send(data: string | ArrayBuffer | ArrayBufferView): void {
    if (this.readyState === CONNECTING) throw new DOMException("Failed to execute 'send' on 'WebSocket': Still in CONNECTING state.", 'InvalidStateError')
    if (this.readyState !== OPEN) return
    if (typeof data === 'string') return this.#port.postMessage({ type: 'send', data } satisfies SocketFrame)
    const bytes = data instanceof ArrayBuffer ? data.slice(0) : (data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer)
    this.#port.postMessage({ type: 'send', data: bytes } satisfies SocketFrame, [bytes])
  }

  close(code?: number, reason?: string): void {
    if (this.readyState === CLOSING || this.readyState === CLOSED) return
    this.readyState = CLOSING
    this.#port.postMessage({ type: 'end', code, reason } satisfies SocketFrame)
  }
}

const routes = new Map<string, Worker>()

/**
 * Routes WebSockets to `origin` (an http(s) or ws(s) origin used only for
 * this) to zero-cache's `worker`; returns the undo. The page's global
 * WebSocket is wrapped once, and URLs of no route keep the browser's.
 */
export function routeWebSockets(origin: string, worker: Worker): () => void {
  const key = socketOrigin(origin)
  const g = globalThis as { WebSocket: typeof WebSocket }
  if (!(g.WebSocket as unknown as { tabgres?: boolean }).tabgres) {
    const Native = g.WebSocket
    const Routed = function (this: unknown, url: string | URL, protocols?: string | string[]) {
      const w = routes.get(socketOrigin(String(url)))
      return w ? new PortWebSocket(String(url), protocols, w) : new Native(url, protocols)
    } as unknown as typeof WebSocket & { tabgres: boolean }
    Object.assign(Routed, { CONNECTING, OPEN, CLOSING, CLOSED, tabgres: true, prototype: Native.prototype })
    g.WebSocket = Routed
  }
  routes.set(key, worker)
  return () => void (routes.get(key) === worker && routes.delete(key))
}

function socketOrigin(url: string): string {
  const u = new URL(url)
  const scheme = u.protocol === 'https:' || u.protocol === 'wss:' ? 'wss:' : 'ws:'
  return `${scheme}//${u.host}`
}
