// The worker's API, exposed to the page with Comlink (./index.ts). The page's
// typed handle (src/client) is built on `type WorkerApi = ReturnType<typeof makeApi>`.
//
// Serialization: PGlite is one backend session. Its transaction lock (taken
// by db.query/db.exec, and held by db.transaction from BEGIN to the end) keeps
// calls from interleaving with an interactive transaction; no lock of our own
// is added, so writes that wait together are also flushed together (group
// commit queues behind them on the same lock). Replication sessions read
// between transactions (replication/exclusive.ts).
// Durability: a call that may have written resolves after the group commit
// that makes it durable (engine.ts), unless the database was opened 'relaxed'.
// Errors: anything thrown leaves as a PgError (protocol/comlink-errors.ts), and
// the worker stays usable after any bad call.

import * as Comlink from 'comlink'
import { type PGlite, type QueryOptions, type Results, type Transaction } from '@electric-sql/pglite'
import { PgError, SqlState, toPgError } from '../protocol/errors'
import { setsSessionTimeout } from '../engine/backend/idle-timeouts'
import { formatLsn } from '../protocol/lsn'
import type { PageToWorker } from '../protocol/stream-port'
import type { BootInfo, BootProgress, Engine, EngineOptions } from './engine'
import { truncateIdentifier, type ReplicationCommand } from '../engine/replication/commands'
import { type ReplicationSession } from '../engine/replication/session'
import { runReplicationCommand, startReplication } from '../engine/replication/walsender'
import { positionLsn } from '../engine/replication/positions'
import { endWhenFree } from './transport/holder'
import { lead, type Leading } from './peers'
import { leaderLost } from '../protocol/peers'
import { PortWriter } from './transport/port-writer'
import { BytePort } from './transport/byte-port'
import { dumpDatabase } from '../engine/dump/dump'
import { seedFromDump, type SeedOutcome } from '../engine/dump/restore'
export type { SeedOutcome }
import { streamRequestOf, type CommandResult, type CreateSlotRequest, type StartReplicationRequest } from './requests'
import { ServerSession, type ServerOptions, type WireEngine } from '../wire/server-session'

export type { CommandResult, CreateSlotRequest, StartReplicationRequest } from './requests'

/** How long a stream waits at close() for its consumer to confirm what it was sent. */
const SHUTDOWN_WAIT_MS = 2000

type TxEntry = { tx: Transaction; finish: (commit: boolean) => void; done: Promise<void> }

/** How the API opens its database: idb (./index.ts) or in memory (./kit.ts). */
export type OpenEngine = (name: string, options: EngineOptions, onProgress?: (p: BootProgress) => void) => Promise<Engine>

/**
 * `view`: this API serves another tab on an engine its owner opened
 * (./peers.ts): close() ends what that tab opened (its transactions roll
 * back, its streams and sessions end) and leaves the engine open.
 */
export function makeApi(openDatabase: OpenEngine, { view = false } = {}) {
  let engine: Engine | null = null
  let opening: Promise<BootInfo> | null = null
  const transactions = new Map<number, TxEntry>()
  const streams = new Map<ReplicationSession, PortWriter>()
  const wireSessions = new Set<ServerSession>()
  let nextTx = 1
  let leading: Leading | null = null

  /** A view whose leader is handing over (or whose tab went): its calls fail as a lost leader's do, and are retried on the next. */
  let handedOver: string | null = null

  function current(): Engine {
    if (handedOver !== null) throw leaderLost(handedOver)
    if (!engine) throw new PgError({ code: '08003', message: 'the database is not open' }) // connection_does_not_exist
    return engine
  }

  async function afterWrite(e: Engine): Promise<void> {
    if (e.durability === 'durable') await e.durable()
    else e.durable().catch(() => {})
  }

  /** Run fn, then make what it wrote durable. */
  async function write<T>(fn: (db: PGlite) => Promise<T>): Promise<T> {
    const e = current()
    try {
      const out = await fn(e.db)
      await afterWrite(e)
      return out
    } catch (err) {
      throw toPgError(err)
    }
  }

  async function replicationCommand(cmd: ReplicationCommand): Promise<CommandResult> {
    const e = current()
    try {
      const r = await runReplicationCommand(cmd, e.db)
      await afterWrite(e)
      return { columns: r.fields.map((f) => f.name), rows: r.rows, commandTag: r.commandTag }
    } catch (err) {
      throw toPgError(err)
    }
  }

  /** The worker API is no connection: a timeout that ends one has nothing to end (backend/idle-timeouts.ts). */
  function refuseSessionTimeouts(sql: string): void {
    const name = setsSessionTimeout(sql)
    if (name) {
      throw new PgError({
        code: SqlState.featureNotSupported,
        message: `${name} cannot be set through the worker API`,
        detail: 'It ends a connection that sits idle; the worker API has none, and PGlite\'s one backend must never have it.',
        hint: 'Set it on a wire-protocol session (db.connect()), where it ends that session as in PostgreSQL.',
      })
    }
  }

  /** What a failed transaction call says: a lost leader's 08006 once this view was handed over (the transaction rolled back with it). */
  function txFailure(err: unknown): PgError {
    return handedOver !== null ? leaderLost(handedOver) : toPgError(err)
  }

  function tx(id: number): TxEntry {
    if (handedOver !== null) throw leaderLost(handedOver) // the transaction rolled back with the handover
    const t = transactions.get(id)
    if (!t) throw new PgError({ code: '25P01', message: `no transaction ${id} is open` }) // no_active_sql_transaction
    return t
  }

  return {
    /**
     * Opens (or creates) idb://<name>; idempotent for the same name.
     * onProgress (a Comlink proxy from the page) hears each boot phase start.
     */
    async open(name: string, options: EngineOptions = {}, onProgress?: (p: BootProgress) => void): Promise<BootInfo> {
      if (engine && engine.name !== name) {
        throw new PgError({ code: SqlState.objectInUse, message: `this worker already holds database "${engine.name}"` })
      }
      opening ??= openDatabase(name, options, onProgress).then(
        (e) => {
          engine = e
          return e.boot
        },
        (err) => {
          opening = null
          throw toPgError(err)
        },
      )
      // The page's callback is a Comlink proxy holding a port: let it go once the boot is over.
      void opening.finally(() => (onProgress as Partial<Comlink.Remote<unknown>> | undefined)?.[Comlink.releaseProxy]?.()).catch(() => {})
      return opening
    },

    async query(sql: string, params?: unknown[], options?: QueryOptions): Promise<Results> {
      refuseSessionTimeouts(sql)
      return write((db) => db.query(sql, params, options))
    },

    async exec(sql: string): Promise<Results[]> {
      refuseSessionTimeouts(sql)
      return write((db) => db.exec(sql))
    },

    /** Opens an interactive transaction; no other call runs until it ends. */
    async begin(): Promise<number> {
      const e = current()
      const id = nextTx++
      return new Promise<number>((resolveBegin, rejectBegin) => {
        // PGlite's transaction lock is held from BEGIN until the transaction ends.
        void (async () => {
          let finish!: (commit: boolean) => void
          const decided = new Promise<boolean>((res) => (finish = res))
          let ended!: (err?: unknown) => void
          const done = new Promise<void>((res, rej) => (ended = (err) => (err === undefined ? res() : rej(err))))
          done.catch(() => {})
          try {
            await e.db.transaction(async (t) => {
              transactions.set(id, { tx: t, finish, done })
              resolveBegin(id)
              if (!(await decided)) await t.rollback()
            })
            ended()
          } catch (err) {
            transactions.delete(id)
            rejectBegin(toPgError(err)) // ignored when begin() already resolved
            ended(err)
          }
        })()
      })
    },

    async txQuery(id: number, sql: string, params?: unknown[], options?: QueryOptions): Promise<Results> {
      try {
        refuseSessionTimeouts(sql)
        return await tx(id).tx.query(sql, params, options)
      } catch (err) {
        throw txFailure(err)
      }
    },

    async txExec(id: number, sql: string): Promise<Results[]> {
      try {
        refuseSessionTimeouts(sql)
        return await tx(id).tx.exec(sql)
      } catch (err) {
        throw txFailure(err)
      }
    },

    /** Ends the transaction; resolves once it is committed and durable. */
    async commit(id: number): Promise<void> {
      const t = tx(id)
      transactions.delete(id)
      t.finish(true)
      try {
        await t.done
      } catch (err) {
        throw toPgError(err)
      }
      await afterWrite(current())
    },

    async rollback(id: number): Promise<void> {
      const t = transactions.get(id)
      if (!t) return
      transactions.delete(id)
      t.finish(false)
      await t.done.catch(() => {})
    },

    async identifySystem(): Promise<CommandResult> {
      return replicationCommand({ kind: 'IDENTIFY_SYSTEM' })
    },

    async createSlot(name: string, options: CreateSlotRequest = {}): Promise<CommandResult> {
      const snapshot = options.snapshot ?? 'export'
      if (!['export', 'use', 'nothing'].includes(snapshot)) {
        throw new PgError({ code: SqlState.invalidParameterValue, message: `unrecognized value for CREATE_REPLICATION_SLOT option "snapshot": "${snapshot}"` })
      }
      return replicationCommand({
        kind: 'CREATE_REPLICATION_SLOT',
        slot: truncateIdentifier(name),
        temporary: options.temporary ?? false,
        physical: false,
        plugin: 'pgoutput',
        snapshot,
      })
    },

    async dropSlot(name: string, wait = false): Promise<void> {
      await replicationCommand({ kind: 'DROP_REPLICATION_SLOT', slot: truncateIdentifier(name), wait })
    },

    /** Streams on `port` (see protocol/stream-port.ts); resolves once streaming started. */
    async startReplication(port: MessagePort, req: StartReplicationRequest): Promise<void> {
      const e = current()
      const writer = new PortWriter(port, req.window)
      let session: ReplicationSession | null = null
      port.onmessage = (ev: MessageEvent<PageToWorker>) => {
        const m = ev.data
        try {
          if (m.type === 'credit') writer.credit(m.bytes)
          else if (m.type === 'copy-data') session?.receive(new Uint8Array(m.buffer))
          else if (m.type === 'copy-done') session?.endCopy()
        } catch (err) {
          // A malformed client message ends the stream with an error, as a walsender would.
          writer.fail(toPgError(err))
          session?.stop()
        }
      }
      try {
        session = await startReplication(e.db, streamRequestOf(req), writer, { durability: e.commits })
      } catch (err) {
        port.close()
        throw toPgError(err)
      }
      const s = session
      streams.set(s, writer)
      s.done.catch(() => {}).finally(() => streams.delete(s)) // how it ended is on the port
      await writer.started
    },

    /**
     * A PostgreSQL protocol 3.0 session on `port` (wire/server-session.ts):
     * the page posts frontend bytes as ArrayBuffers and receives backend bytes
     * the same way; null from either side ends the connection. The client's
     * StartupMessage says whether it is a replication connection.
     */
    async connect(port: MessagePort, options: ServerOptions & { holder?: string } = {}): Promise<void> {
      const e = current()
      // Relaxed durability starts the flush and answers without waiting for it.
      const awaitedIfDurable = (flush: () => Promise<void>) => (e.durability === 'durable' ? flush() : (flush().catch(() => {}), Promise.resolve()))
      const engine: WireEngine = {
        db: e.db,
        durable: () => awaitedIfDurable(() => e.durable()),
        durableNow: () => awaitedIfDurable(() => e.commits.durableNow()),
        durability: e.commits,
      }
      const out = new BytePort(port)
      const session = new ServerSession(engine, { send: (bytes) => out.send(bytes), close: () => out.close() }, options)
      wireSessions.add(session)
      void session.closed.then(() => wireSessions.delete(session))
      if (options.holder) endWhenFree(options.holder, session, port)
      port.onmessage = (ev: MessageEvent<ArrayBuffer | null>) => {
        if (ev.data === null) void session.end()
        else if (ev.data instanceof ArrayBuffer) session.receive(new Uint8Array(ev.data))
      }
    },

    /** Everything durable, streams ended, the name released (a view: what it opened ended, the engine left open). */
    async close({ handover = false } = {}): Promise<void> {
      if (!engine) return
      const e = engine
      if (view && handover) handedOver = e.name
      // An open transaction holds PGlite's transaction lock: what is left open
      // when the page goes away rolls back, as a dropped connection's does.
      const open = [...transactions.values()]
      transactions.clear()
      for (const t of open) t.finish(false)
      // Streams end as a walsender's at shutdown: acknowledgements already
      // posted reach their slots first (bounded; ReplicationSession.finish).
      await Promise.all([
        ...open.map((t) => t.done.catch(() => {})),
        // At a handover (or when the tab that read it has gone), the stream
        // stops with no last message: its consumer's Database re-attaches it
        // to the next leader from what it received.
        ...[...streams].map(([s, w]) => (handover ? (w.detach(), s.stop(), s.done.catch(() => {})) : s.finish(SHUTDOWN_WAIT_MS))),
        ...[...wireSessions].map((w) => w.shutdown()),
      ])
      // Other tabs' views end first (their transactions roll back, their
      // streams confirm), then the data closes and the leader's lock is let go.
      await leading?.closeViews()
      if (!view) await e.close()
      leading?.resign()
      leading = null
      engine = null
      opening = null
    },

    /**
     * This worker leads: other tabs' joins arrive on `joins` (from the
     * broker, worker/broker.ts), each served by a view of this engine.
     * Resolves with the leader's id, whose Web Lock it holds until it closes.
     */
    async lead(joins: MessagePort): Promise<string> {
      const e = current()
      if (leading) throw new PgError({ code: SqlState.objectInUse, message: `this worker already leads database "${e.name}"` })
      if (view) throw new PgError({ code: SqlState.featureNotSupported, message: 'a joined tab cannot lead through its view' })
      const l = await lead(e.name, joins, () => makeApi(async () => e, { view: true }))
      leading = l
      return l.id
    },

    /** What a joining tab learns first: the boot of the engine it reaches. */
    async hello(): Promise<BootInfo> {
      return current().boot
    },

    /** Diagnostics the page can read (console.log in a worker does not reach tests). */
    /** The whole database as a plain SQL dump that psql loads into PostgreSQL 15+ (engine/dump/dump.ts). */
    async dump(): Promise<string> {
      return dumpDatabase(current().db)
    },

    /** Loads a dump into this database unless it was seeded before (engine/dump/restore.ts). */
    async seed(script: string): Promise<SeedOutcome> {
      const e = current()
      const outcome = await seedFromDump(e.db, script)
      if (outcome === 'loaded') await e.durable()
      return outcome
    },

    async stats() {
      const e = current()
      return {
        flushes: e.commits.flushes,
        storage: { ...e.storage },
        durableLsn: formatLsn(positionLsn(e.commits.position())),
        /** When recent flushes made positions durable (see GroupCommit.durableAt). */
        durableAt: e.commits.durableAt.map((d) => ({ lsn: formatLsn(positionLsn(d.position)), at: d.at })),
        /** This worker's performance.timeOrigin + performance.now(), the clock durableAt uses. */
        clock: performance.timeOrigin + performance.now(),
        streams: [...streams.values()].map((w) => ({ ...w.posted, buffered: w.buffered })),
        boot: e.boot,
      }
    },
  }
}

export type WorkerApi = ReturnType<typeof makeApi>
