// A received HTTP message (./http.ts's requests, ./http-client.ts's
// responses): the parsed head, and the body as a readable stream.

import { Readable } from 'readable-stream'
import type { Headers } from './http-messages'
import type * as net from './net'

export class IncomingMessage extends Readable {
  headers: Headers = {}
  rawHeaders: string[] = []
  trailers: Headers = {}
  rawTrailers: string[] = []
  httpVersion = '1.1'
  httpVersionMajor = 1
  httpVersionMinor = 1
  method?: string
  url?: string
  statusCode?: number
  statusMessage?: string
  complete = false
  aborted = false
  constructor(readonly socket: net.Socket) {
    super()
  }
  get connection(): net.Socket {
    return this.socket
  }
  override _read(): void {}
  setTimeout(ms: number, cb?: () => void): this {
    this.socket.setTimeout(ms, cb)
    return this
  }
}

