// The loopback network and HTTP that zero-cache runs on in the tab
// (src/zero/node/net.ts, http.ts): the parts fastify, ws and postgres.js use.

import { describe, expect, it } from 'vitest'
import { Buffer } from '../../src/zero/node/buffer'
import * as http from '../../src/zero/node/http'
import * as net from '../../src/zero/node/net'
import { Readable } from '../../src/zero/node/stream'

let port = 30000
const nextPort = () => port++

function body(res: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = []
    res.on('data', (c: Buffer) => parts.push(c))
    res.on('end', () => resolve(Buffer.concat(parts).toString()))
    res.on('error', reject)
  })
}

function listening(server: net.Server, p: number): Promise<void> {
  return new Promise((resolve) => server.listen(p, '::', () => resolve()))
}

describe('loopback net', () => {
  it('pairs a client with a listening server, both ways, and ends both', async () => {
    const p = nextPort()
    const got: string[] = []
    const server = net.createServer((s) => {
      s.on('data', (c: Buffer) => s.write(`echo:${c.toString()}`))
      s.on('end', () => got.push('server saw end'))
    })
    await listening(server, p)
    expect(server.address()).toEqual({ address: '::', family: 'IPv6', port: p })
    const client = net.connect(p, '127.0.0.1')
    await new Promise<void>((r) => client.once('connect', () => r()))
    expect(client.readyState).toBe('open')
    const echoed = new Promise<string>((r) => client.once('data', (c: Buffer) => r(c.toString())))
    client.write('hello')
    expect(await echoed).toBe('echo:hello')
    const closed = new Promise<void>((r) => server.close(() => r()))
    client.end()
    await closed
    expect(got).toEqual(['server saw end'])
  })

  it('refuses a port nobody listens on, as ECONNREFUSED', async () => {
    const s = new net.Socket()
    const err = await new Promise<Error & { code?: string }>((r) => s.once('error', r).connect(nextPort(), 'localhost'))
    expect(err.code).toBe('ECONNREFUSED')
  })

  it('hands a large write to the reader as reads of at most 64 KiB, one per task, as a TCP socket does', async () => {
    // postgres.js pauses the socket from its 'data' handler when a COPY stream's buffer is full and only
    // resumes it when the stream is read; a COPY's end arriving in that same 'data' event leaves the
    // connection stuck (the 2,000-row initial sync of issue 18).
    const p = nextPort()
    const sent = Buffer.alloc(200 * 1024)
    for (let i = 0; i < sent.length; i++) sent[i] = i % 251
    const server = net.createServer((s) => s.end(sent))
    await listening(server, p)
    const client = net.connect(p)
    const events: string[] = []
    const parts: Buffer[] = []
    await new Promise<void>((resolve) => {
      client.on('data', (c: Buffer) => {
        parts.push(c)
        events.push(`data ${c.length}`)
        // A microtask queued by a 'data' handler runs before the next read, as on a socket.
        queueMicrotask(() => events.push('microtask'))
      })
      client.on('end', () => resolve())
    })
    expect(Buffer.concat(parts).equals(sent)).toBe(true)
    expect(events).toEqual(['data 65536', 'microtask', 'data 65536', 'microtask', 'data 65536', 'microtask', 'data 8192', 'microtask'])
    server.close()
  })

  it('delivers nothing more after pause() in a data handler until resume()', async () => {
    const p = nextPort()
    const server = net.createServer((s) => s.end(Buffer.alloc(150 * 1024, 7)))
    await listening(server, p)
    const client = net.connect(p)
    const first = await new Promise<Buffer>((r) => client.once('data', (c: Buffer) => (client.pause(), r(c))))
    expect(first.length).toBe(64 * 1024)
    // The rest has arrived and waits in the socket; a later task still sees no 'data' while paused.
    let more = 0
    client.on('data', (c: Buffer) => (more += c.length))
    await new Promise<void>((r) => setImmediate(r))
    await new Promise<void>((r) => setImmediate(r))
    expect(more).toBe(0)
    const ended = new Promise<void>((r) => client.once('end', () => r()))
    client.resume()
    await ended
    expect(more).toBe(150 * 1024 - 64 * 1024)
    server.close()
  })

  it("buffers 64 KiB in a stream by default, as Node 22's streams do", () => {
    expect(new Readable().readableHighWaterMark).toBe(64 * 1024)
  })

  it('answers EADDRINUSE for a second server on one port', async () => {
    const p = nextPort()
    const a = net.createServer()
    await listening(a, p)
    const err = await new Promise<Error & { code?: string }>((r) => net.createServer().once('error', r).listen(p))
    expect(err.code).toBe('EADDRINUSE')
    a.close()
  })
})

describe('loopback http', () => {
  it('carries a request body by Content-Length and a response in chunks', async () => {
    const p = nextPort()
    const server = http.createServer(async (req, res) => {
      const text = await body(req)
      res.setHeader('X-Method', req.method!)
      res.write(`got ${text.length} bytes`)
      res.end(` from ${req.url}`)
    })
    await listening(server, p)
    const req = http.request({ port: p, method: 'POST', path: '/a?b=1', headers: { 'content-length': '5' } })
    req.end('12345')
    const res = await new Promise<http.IncomingMessage>((r) => req.once('response', r))
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-method']).toBe('POST')
    expect(res.headers['transfer-encoding']).toBe('chunked')
    expect(await body(res)).toBe('got 5 bytes from /a?b=1')
    server.close()
  })

  it('hands an Upgrade to the server with the socket and the bytes after the head, and the 101 to the client', async () => {
    const p = nextPort()
    const server = http.createServer(() => {
      throw new Error('an upgrade is not a request')
    })
    server.on('upgrade', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
      // The client's bytes after its head come in `head` or as data, however the connection cut them: both are echoed.
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: ${req.headers.upgrade}\r\nConnection: Upgrade\r\n\r\n${head.length ? `<${head.toString()}>` : ''}`)
      socket.on('data', (c: Buffer) => socket.write(`<${c.toString()}>`))
    })
    await listening(server, p)
    const req = http.request({ port: p, path: '/sync', headers: { Connection: 'Upgrade', Upgrade: 'websocket' } })
    const upgraded = new Promise<[http.IncomingMessage, net.Socket, Buffer]>((r) => req.once('upgrade', (...a: [http.IncomingMessage, net.Socket, Buffer]) => r(a)))
    req.end()
    req.socket.once('connect', () => req.socket.write('early'))
    const [res, socket, head] = await upgraded
    expect(res.statusCode).toBe(101)
    expect(res.headers.upgrade).toBe('websocket')
    let seen = head.toString()
    const more = new Promise<void>((r) =>
      socket.on('data', (c: Buffer) => {
        seen += c.toString()
        if (seen.includes('<ping>')) r()
      }),
    )
    socket.write('ping')
    await more
    // Nothing lost between the parser and the new protocol's reader, nothing reordered.
    expect(seen).toBe('<early><ping>')
    socket.destroy()
    server.close()
  })
})
