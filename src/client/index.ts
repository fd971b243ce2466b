// tabgres in the page: openDatabase() spawns the database's dedicated worker
// and returns a typed handle. Nothing here imports worker internals except the
// API's type; protocol types and codecs come from src/protocol.

import * as Comlink from 'comlink'
import type { QueryOptions, Results } from '@electric-sql/pglite'
import { installErrorTransfer } from '../protocol/comlink-errors'
import type { CommandResult } from '../worker/api'
import { parseLsn, formatLsn, type Lsn } from '../protocol/lsn'
import type { WorkerApi, StartReplicationRequest, CreateSlotRequest } from '../worker/api'
import type { BootInfo, BootPhase, BootProgress, EngineOptions } from '../worker/engine'
import { ReplicationStream } from './stream'

import { PgError } from '../protocol/errors'
export { PgError }
export { decodePgoutput } from '../protocol/pgoutput-decode'
export { ReplicationStream, type StreamMessage } from './stream'
export { replicate, type ReplicateOptions, type XLogMessage } from './replicate'
export { ReplicaApplier, ReplicaApplyError, type AppliedCommit, type ApplierOptions, type ApplyTarget } from './replica/apply'
export { formatLsn, parseLsn, type Lsn }
export type { PgoutputMessage, RelationColumn, Tuple, TupleColumn } from '../protocol/pgoutput'
export { dateFromPgTimestamp } from '../protocol/pgoutput'
export type { BootInfo, BootPhase, BootProgress, CommandResult, CreateSlotRequest, EngineOptions }

export interface OpenOptions extends EngineOptions {
  /** A worker to use instead of spawning the bundled one (tests, custom builds). */
  worker?: Worker
  /** Hears each boot phase as it starts, then 'ready' (a progress display). */
  onProgress?: (p: BootProgress) => void
}

export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>>
  exec(sql: string): Promise<Results[]>
}

export interface StartReplicationOptions {
  slot: string
  /** Where to start (the slot's confirmed position wins when greater); default 0/0. */
  startLsn?: Lsn | string
  /** pgoutput options: proto_version, publication_names, messages, binary, ... */
  options: Record<string, string>
  /** Flow-control window: bytes of frames the worker may send ahead of the consumer. */
  window?: number
}

export class Database implements Queryable {
  private closing: Promise<void> | null = null

  /**
   * `end` lets go of what carries the API: ends the database's worker, or
   * closes its port when a worker holds several (the testing kit).
   */
  constructor(
    readonly name: string,
    readonly boot: BootInfo,
    private readonly remote: Comlink.Remote<WorkerApi>,
    private readonly end: () => void,
  ) {}

  /** The worker's API; after close(), calls fail as on a closed connection (08003). */
  private get api(): Comlink.Remote<WorkerApi> {
    if (this.ended) throw new PgError({ code: '08003', message: `database "${this.name}" is closed` }) // connection_does_not_exist
    return this.remote
  }
  private ended = false

  /** Resolves once the statement ran and, unless opened 'relaxed', is durable in IndexedDB. */
  async query<T = Record<string, unknown>>(sql: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>> {
    return this.api.query(sql, params, options) as Promise<Results<T>>
  }

  async exec(sql: string): Promise<Results[]> {
    return this.api.exec(sql)
  }

  /**
   * An interactive transaction: fn's queries run in one transaction and no
   * other call interleaves. Commits when fn resolves (durably), rolls back
   * when it throws.
   */
  async transaction<R>(fn: (tx: Queryable) => Promise<R>): Promise<R> {
    const id = await this.api.begin()
    const tx: Queryable = {
      query: <T>(sql: string, params?: unknown[], options?: QueryOptions) =>
        this.api.txQuery(id, sql, params, options) as Promise<Results<T>>,
      exec: (sql: string) => this.api.txExec(id, sql),
    }
    let result: R
    try {
      result = await fn(tx)
    } catch (e) {
      await this.api.rollback(id)
      throw e
    }
    await this.api.commit(id)
    return result
  }

  async identifySystem(): Promise<CommandResult> {
    return this.api.identifySystem()
  }

  async createSlot(name: string, options: CreateSlotRequest = {}): Promise<CommandResult> {
    return this.api.createSlot(name, options)
  }

  async dropSlot(name: string, options: { wait?: boolean } = {}): Promise<void> {
    return this.api.dropSlot(name, options.wait ?? false)
  }

  /** START_REPLICATION on a dedicated MessagePort, read in this page. */
  async startReplication(opts: StartReplicationOptions): Promise<ReplicationStream> {
    return new ReplicationStream(await this.replicationPort(opts), opts.window)
  }

  /**
   * START_REPLICATION, but the stream's port is handed back unread: transfer
   * it to another worker (a replica, a sync engine) and read it there with
   * `new ReplicationStream(port, window)`, so frames go from the database's
   * worker to the consumer's without passing through the page.
   */
  async replicationPort(opts: StartReplicationOptions): Promise<MessagePort> {
    const { port1, port2 } = new MessageChannel()
    const startLsn = typeof opts.startLsn === 'bigint' ? formatLsn(opts.startLsn) : opts.startLsn
    const req: StartReplicationRequest = { slot: opts.slot, startLsn, options: opts.options, window: opts.window }
    try {
      await this.api.startReplication(Comlink.transfer(port2, [port2]), req)
    } catch (e) {
      port1.close()
      throw e
    }
    return port1
  }

  /**
   * A PostgreSQL wire-protocol session (protocol 3.0) on a MessagePort: post
   * frontend bytes as ArrayBuffers, receive backend bytes; post null to
   * disconnect. Send `replication: 'database'` in the StartupMessage for a
   * replication session. Any PostgreSQL client library with a pluggable
   * stream can run over it.
   *
   * `holder` names a Web Lock that whoever uses the port holds for as long
   * as it does (take it before calling connect). A port handed to another
   * worker says nothing when that worker ends, as a process's socket does
   * when it dies; the lock does: once it is free, the session ends as on a
   * lost connection (an open transaction rolls back, locks are released).
   */
  async connect(options: { password?: string; auth?: 'trust' | 'password' | 'md5' | 'scram-sha-256'; holder?: string } = {}): Promise<MessagePort> {
    const { port1, port2 } = new MessageChannel()
    await this.api.connect(Comlink.transfer(port2, [port2]), options)
    return port1
  }

  /** Diagnostics from the worker. */
  async stats() {
    return this.api.stats()
  }

  /** Makes everything durable, stops streams, releases the name, ends the worker (or the kit's port). */
  close(): Promise<void> {
    this.closing ??= (async () => {
      try {
        await this.api.close()
      } finally {
        this.ended = true
        this.remote[Comlink.releaseProxy]()
        this.end()
      }
    })()
    return this.closing
  }

  /** Ends the worker at once, as a crashed or closed tab would (tests). */
  terminate(): void {
    this.ended = true
    this.end()
  }
}

function spawnWorker(): Worker {
  return new Worker(new URL('../worker/index.ts', import.meta.url), { type: 'module', name: 'tabgres' })
}

/** Opens (creating if needed) the database `name`, persisted in IndexedDB, in its own worker. */
export async function openDatabase(name: string, options: OpenOptions = {}): Promise<Database> {
  installErrorTransfer()
  const { worker: given, onProgress, ...engineOptions } = options
  const worker = given ?? spawnWorker()
  const api = Comlink.wrap<WorkerApi>(worker)
  try {
    const boot = await api.open(name, engineOptions, onProgress ? Comlink.proxy(onProgress) : undefined)
    return new Database(name, boot, api, () => worker.terminate())
  } catch (e) {
    api[Comlink.releaseProxy]()
    worker.terminate()
    throw e
  }
}
