// The engine on TCP (Node): each connection is a ServerSession over a socket.
// For debugging, tooling (psql, pg_recvlogical, postgres.js) and CI; the tab
// runs the same session over a MessagePort. Listens on 127.0.0.1 only.
//
// One server can serve several databases: each name is its own PGlite (one
// backend each), chosen by the start-up packet's database, as PostgreSQL's
// postmaster hands a connection to a backend of the database it names.

import { createServer, type Server, type Socket } from 'node:net'
import type { PGlite } from '@electric-sql/pglite'
import { ServerSession, type ServerOptions, type WireEngine } from '../wire/server-session'

export interface TcpServer {
  readonly port: number
  readonly host: string
  /** Stop listening and end every open session. */
  close(): Promise<void>
}

/** The PGlite serving a database name (change tracking installed), or null: 3D000. */
export type DatabaseResolver = (database: string) => Promise<PGlite | null>

function socketConnection(socket: Socket) {
  let corked = false
  return {
    // What a session sends in one turn of the event loop (a reply is often
    // several backend messages, sent piece by piece) leaves in one write.
    send: (bytes: Uint8Array) => {
      if (socket.destroyed) return
      if (!corked) {
        corked = true
        socket.cork()
        process.nextTick(() => {
          corked = false
          socket.uncork()
        })
      }
      socket.write(bytes)
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

/** Node's file systems need no flush: a commit is durable when it returns. */
const engineOf = (db: PGlite): WireEngine => ({ db, durable: () => Promise.resolve() })

/** Serves `db` (change tracking installed), or every database `db` resolves, on host:port; port 0 picks a free one. */
export async function listen(
  db: PGlite | DatabaseResolver,
  { port = 0, host = '127.0.0.1', ...options }: ServerOptions & { port?: number; host?: string } = {},
): Promise<TcpServer> {
  const engines = new Map<PGlite, WireEngine>()
  const target =
    typeof db === 'function'
      ? async (name: string) => {
          const found = await db(name)
          if (!found) return null
          let e = engines.get(found)
          if (!e) engines.set(found, (e = engineOf(found)))
          return e
        }
      : engineOf(db)
  const sessions = new Set<ServerSession>()
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    socket.setNoDelay(true)
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    const session = new ServerSession(target, socketConnection(socket), options)
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
      // A fast shutdown, as PostgreSQL's SIGINT: every session is told and
      // rolled back; walsenders first collect what their consumers confirm
      // (bounded), as PostgreSQL's do before they exit.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      await Promise.all([...sessions].map((s) => s.shutdown()))
      for (const socket of sockets) socket.destroy()
      await closed
    },
  }
}
