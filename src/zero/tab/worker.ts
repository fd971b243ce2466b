// zero-cache's worker in the page: the entry of the zero-cache bundle
// (scripts/build-zero.ts). It runs zero-cache 1.9.0's own runner, unmodified,
// in one thread (SINGLE_PROCESS), on:
//   - the tab's SQLite (src/zero/sqlite), its files kept in IndexedDB;
//   - a loopback network (src/zero/node/net.ts), where zero-cache's services
//     reach each other as over TCP, and each database port named in its
//     connection strings leads to a tabgres database's wire protocol
//     (`Database.connect()`, a MessagePort to that database's worker).
// The page starts it with a StartMessage (start.ts).

import { runWorker } from '@rocicorp/zero/out/zero-cache/src/server/runner/run-worker.js'
import { instantiateSqlite } from '../sqlite/binding'
import Database, { useSqlite } from '../sqlite/database'
import { MemoryFiles } from '../sqlite/files'
import { IdbFileStore } from '../sqlite/idb-store'
import { compileSqlite } from '../sqlite/load'
import { Persister } from '../sqlite/persist'
import { Buffer } from '../node/buffer'
import { mountSqliteFiles } from '../node/fs'
import * as net from '../node/net'
import { process, ProcessExit } from '../node/process'
import { errorFields, type ConnectReply, type ConnectRequest, type ReplicaQuery, type SocketOpen, type StartMessage, type StopMessage, type WorkerEvent } from './messages'
import { routeFetch } from './endpoints'
import { serveSocket } from './sockets'
import { holdLock } from '../../protocol/web-locks'

declare const self: DedicatedWorkerGlobalScope

function post(e: WorkerEvent): void {
  self.postMessage(e)
}

/** A connection to a database: its wire port, and the lock that keeps its session alive. */
interface Wire {
  port: MessagePort
  release: () => void
}

/** Asks the page for a new wire-protocol port to the database behind `connector`. */
function connector(port: MessagePort): () => Promise<Wire> {
  let next = 1
  const waiting = new Map<number, { resolve: (p: MessagePort) => void; reject: (e: Error) => void }>()
  port.onmessage = ({ data }: MessageEvent<ConnectReply>) => {
    const w = waiting.get(data.id)
    waiting.delete(data.id)
    if ('port' in data) w?.resolve(data.port)
    else w?.reject(Object.assign(new Error(data.error.message), { code: data.error.code }))
  }
  return async () => {
    // The database ends the session named with this lock once it is free (src/worker/transport/holder.ts),
    // so a zero-cache stopped by terminate() leaves no session, and no transaction, behind.
    const holder = `tabgres:zero-cache:connection:${crypto.randomUUID()}`
    const release = await holdLock(holder)
    try {
      const wire = await new Promise<MessagePort>((resolve, reject) => {
        const id = next++
        waiting.set(id, { resolve, reject })
        port.postMessage({ id, holder } satisfies ConnectRequest)
      })
      return { port: wire, release }
    } catch (e) {
      release()
      throw e
    }
  }
}

/**
 * One TCP connection of zero-cache's to a database, carried by a wire port:
 * bytes as transferred ArrayBuffers each way, null to end (src/worker/api.ts).
 */
/** Every connection to a database that is open: a process's end closes them (see `exit`). */
const wires = new Set<Wire>()

function endWire(wire: Wire): void {
  if (wires.delete(wire)) closeWire(wire)
}

function closeWire({ port, release }: Wire): void {
  port.postMessage(null)
  port.close()
  release()
}

function bridge(socket: net.Socket, wire: Wire): void {
  wires.add(wire)
  wire.port.onmessage = ({ data }: MessageEvent<ArrayBuffer | null>) => {
    if (data === null) socket.end()
    else socket.write(Buffer.from(data))
  }
  socket.on('data', (chunk: Buffer) => {
    const copy = chunk.buffer.slice(chunk.byteOffset, chunk.byteOffset + chunk.byteLength) as ArrayBuffer
    wire.port.postMessage(copy, [copy])
  })
  socket.on('close', () => endWire(wire))
}

function listenForDatabase(port: number, connect: () => Promise<Wire>): void {
  net
    .createServer((socket) => {
      connect().then(
        (wire) => (socket.destroyed ? closeWire(wire) : bridge(socket, wire)),
        // As a server that refused: the client sees the connection end.
        () => socket.destroy(),
      )
    })
    .listen(port)
}

/** zero-cache logs to the console; its lines go to the page, which shows them or hands them to its onLog. */
function forwardConsole(): void {
  for (const level of ['debug', 'info', 'warn', 'error'] as const) {
    console[level] = (...args: unknown[]) => post({ type: 'log', level, text: args.map((a) => (typeof a === 'string' ? a : a instanceof Error ? (a.stack ?? a.message) : safeJson(a))).join(' ') })
  }
  console.log = console.info
}

function safeJson(v: unknown): string {
  try {
    return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x))
  } catch {
    return String(v)
  }
}

/**
 * How long a zero-cache waits for another one to let go of its replica
 * store: after a reload, the old page's worker is still ending for a moment
 * (longer on a busy machine) and holds the store until it has.
 */
const REPLICA_LOCK_MS = 30_000

/**
 * Takes the replica store's Web Lock for as long as this worker lives (or
 * until the returned release): two zero-caches writing one store's files
 * would corrupt the replica. Fails with 55006 (object_in_use) as
 * openDatabase does, when another zero-cache keeps it past REPLICA_LOCK_MS.
 */
async function lockReplicaStore(name: string): Promise<() => void> {
  try {
    return await holdLock(`tabgres:zero-replica:${name}`, AbortSignal.timeout(REPLICA_LOCK_MS))
  } catch (e) {
    if ((e as Error)?.name !== 'TimeoutError') throw e
    throw Object.assign(new Error(`zero-cache's replica store "${name}" is in use by another zero-cache (waited ${REPLICA_LOCK_MS / 1000} s)`), {
      code: '55006',
    })
  }
}

async function start(m: StartMessage): Promise<void> {
  forwardConsole()
  Object.assign(process.env, m.env, { SINGLE_PROCESS: '1' })
  const releaseStore = await lockReplicaStore(m.replicaStore)
  const files = new MemoryFiles()
  const [module, store] = await Promise.all([compileSqlite(), IdbFileStore.open(m.replicaStore)])
  await store.loadInto(files)
  useSqlite(await instantiateSqlite(module, files))
  mountSqliteFiles(files)
  const persister = new Persister(files, store, {
    onError: (e) => post({ type: 'error', message: `keeping the replica in IndexedDB failed: ${String(e)}` }),
    onApplied: () => post({ type: 'replica-changed' }),
  })
  replicaFile = m.env.ZERO_REPLICA_FILE
  for (const [port, c] of Object.entries(m.connectors)) listenForDatabase(Number(port), connector(c))
  routeFetch(m.endpoints)
  // zero-cache listens on its port once every worker of its is ready.
  const port = Number(m.env.ZERO_PORT ?? 4848)
  net.onListen(port, () => post({ type: 'ready' }))
  // zero-cache ends by process.exit, or in one process by emitting 'exit' on the process it runs in.
  let exited = false
  const exit = (code: number) => {
    if (exited) return
    exited = true
    // As the kernel closes an exiting process's sockets: each database sees its sessions end (and rolls back what they left open).
    for (const wire of [...wires]) endWire(wire)
    void persister.close().finally(() => (releaseStore(), post({ type: 'exit', code })))
  }
  process.on('exit', exit)
  try {
    await runWorker(null, process.env)
    exit(0)
  } catch (e) {
    if (!(e instanceof ProcessExit)) throw e
  }
}

let replicaFile: string | undefined
let reader: Database | undefined

/** A read of the replica on a connection of its own, between zero-cache's own calls into SQLite. */
function query({ id, sql }: ReplicaQuery): void {
  try {
    if (!replicaFile) throw new Error('zero-cache has not started')
    reader ??= new Database(replicaFile, { readonly: true, fileMustExist: true })
    post({ type: 'rows', id, rows: reader.prepare(sql).all() as Record<string, unknown>[] })
  } catch (e) {
    post({ type: 'query-error', id, ...errorFields(e) })
  }
}

self.onmessage = ({ data }: MessageEvent<StartMessage | StopMessage | ReplicaQuery | SocketOpen>) => {
  if (data.type === 'stop') return void process.emit('SIGTERM', 'SIGTERM')
  if (data.type === 'socket') return serveSocket(data, Number(process.env.ZERO_PORT ?? 4848))
  if (data.type === 'query') return query(data)
  start(data).catch((e: unknown) => post({ type: 'error', ...errorFields(e), stack: (e as Error)?.stack }))
}
// An exit thrown from a callback ends that callback, not the worker: it was reported already.
// Node ends a process on an unhandled rejection; here the page hears of it as a failure.
self.addEventListener('unhandledrejection', (ev) => {
  ev.preventDefault()
  if (ev.reason instanceof ProcessExit) return
  const e = ev.reason as Error | undefined
  post({ type: 'error', message: `unhandled rejection: ${String(e?.message ?? e)} ${safeJson(e)}`, stack: e?.stack })
})
self.addEventListener('error', (ev) => {
  if (ev.error instanceof ProcessExit) ev.preventDefault()
  else post({ type: 'error', message: ev.message, stack: (ev.error as Error | undefined)?.stack })
})
