// The engine on TCP (Node): each connection is a ServerSession over a socket.
// For debugging, tooling (psql, pg_recvlogical, postgres.js) and CI; the tab
// runs the same session over a MessagePort. Listens on 127.0.0.1 only.

import { createServer, type Server, type Socket } from 'node:net'
import type { PGlite } from '@electric-sql/pglite'
import { ServerSession, type ServerOptions, type WireEngine } from '../worker/wire/server-session'

export interface TcpServer {
  readonly port: number
  readonly host: string
  /** Stop listening and end every open session. */
  close(): Promise<void>
}

function socketConnection(socket: Socket) {
  return {
    send: (bytes: Uint8Array) => {
      if (!socket.destroyed) socket.write(bytes)
    },
    drain: () =>
      socket.writableNeedDrain && !socket.destroyed
        ? new Promise<void>((resolve) => {
            const done = () => {
              socket.off('drain', done)
              socket.off('close', done)
              resolve()
            }
            socket.on('drain', done).on('close', done)
          })
        : undefined,
    close: () => socket.end(),
  }
}

/** Serves `db` (change tracking installed) on host:port; port 0 picks a free one. */
export async function listen(
  db: PGlite,
  { port = 0, host = '127.0.0.1', ...options }: ServerOptions & { port?: number; host?: string } = {},
): Promise<TcpServer> {
  // Node's file systems need no flush: a commit is durable when it returns.
  const engine: WireEngine = { db, durable: () => Promise.resolve() }
  const sessions = new Set<ServerSession>()
  const server: Server = createServer((socket) => {
    socket.setNoDelay(true)
    const session = new ServerSession(engine, socketConnection(socket), options)
    sessions.add(session)
    socket.on('data', (chunk) => session.receive(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength)))
    socket.on('error', () => socket.destroy())
    socket.on('close', () => {
      void session.end().finally(() => sessions.delete(session))
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve())
  })
  const address = server.address()
  const bound = typeof address === 'object' && address ? address.port : port
  return {
    port: bound,
    host,
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      for (const s of sessions) await s.end()
      await closed
    },
  }
}
