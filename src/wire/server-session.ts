// One frontend/backend protocol 3.0 connection, transport-agnostic: bytes in
// through receive(), bytes out through Connection.send. A TCP socket (Node),
// a MessagePort (the tab) or a test carries them.
// Spec: PostgreSQL docs, "Frontend/Backend Protocol" (Message Flow) and
// "Streaming Replication Protocol".
//
// Many sessions share one PGlite backend:
// - A session holds the database (PGlite's transaction lock, which the worker
//   API's calls take too) from its first message until a ReadyForQuery says
//   it is idle again: a transaction block, or an extended-query sequence up to
//   its Sync, runs with nothing interleaved, and no session sees another's
//   uncommitted rows. A session that disconnects inside a transaction is
//   rolled back.
// - Prepared statement and portal names are per session (./statement-names.ts).
// - `replication=database` sessions take replication commands through simple
//   query and stream in CopyBoth (replication/handler.ts).

import type { PGlite } from '@electric-sql/pglite'
import { ByteReader, ProtocolError } from '../protocol/bytes'
import { PgError, SqlState, toPgError, type PgErrorFields } from '../protocol/errors'
import { handleReplicationQuery, handleStartReplication } from './walsender'
import { type ReplicationSession } from '../engine/replication/session'
import { isReplicationCommand, parseReplicationCommand } from '../engine/replication/commands'
import type { DurabilityGate } from '../engine/replication/session'
import { BUSY, execRaw, idle, readWhenIdle, run } from '../engine/replication/exclusive'
import { authenticationOk, createAuthExchange, type AuthExchange, type AuthMethod } from './auth'
import {
  backendKeyData,
  bindComplete,
  closeComplete,
  commandComplete,
  concatBytes,
  errorResponse,
  noData,
  parameterDescription,
  parameterStatus,
  parseComplete,
  readyForQuery,
  resultSet,
  TEXT_FIELD,
} from '../protocol/backend'
import { decodeBackendMessages, firstError, hasErrorResponse, lastReadyStatus } from '../protocol/backend-decode'
import { backendOf, type Backend } from '../engine/backend/backend'
import { cancelError, type Lease, type WaitBounds } from '../engine/backend/arbiter'
import { isSessionOnly } from '../engine/backend/idle-timeouts'
import type { SnapshotGroup } from '../engine/backend/snapshots'
import { transactionStatement, type TransactionStatement } from './transaction-statements'
import { FrontendReader, query, queryText, SYNC, type FrontendMessage } from '../protocol/frontend'
import { StatementNames } from './statement-names'
import { SessionSettings } from './session-settings'
import { malformedMessage } from '../protocol/frontend-validate'
import { filterBackendOutput } from './backend-filter'
import { ADVISORY_BUSY } from '../engine/capture/advisory.sql.ts'
import { signalCommit } from '../engine/replication/notifier'

export interface WireEngine {
  db: PGlite
  /** Make committed writes durable (group commit); resolves at once where nothing needs flushing. */
  durable(): Promise<void>
  /** Streams carry only durable commits when given. */
  durability?: DurabilityGate
}

/** The engine for a database name, or null when there is no such database. */
export type EngineResolver = (database: string) => Promise<WireEngine | null>

export interface Connection {
  send(bytes: Uint8Array): void
  /** Backpressure for streaming: resolves when the transport can take more. */
  drain?(): Promise<void> | void
  close(): void
}

export interface ServerOptions {
  /** 'trust' (default without a password) or a password method (default 'scram-sha-256' with one). */
  auth?: AuthMethod
  password?: string
  /**
   * Receives each statement a client sends (simple Query text, Parse text,
   * replication commands) and each error sent back, one line each, as
   * PostgreSQL's log_statement = 'all' and log_min_error_statement do.
   */
  log?: (line: string) => void
  /**
   * At a shutdown, how long a walsender waits for its consumer to confirm
   * what it was sent (PostgreSQL waits up to wal_sender_timeout). Default 2 s.
   */
  shutdownWaitMs?: number
}

type State = 'startup' | 'auth' | 'ready' | 'copy-in' | 'copy-both' | 'closed'

/**
 * COPY ... FROM STDIN. PGlite's backend cannot read COPY data from the raw
 * protocol (it exits), so the session collects the client's CopyData itself
 * and runs the COPY from PGlite's /dev/blob device.
 */
const COPY_FROM_STDIN = /^\s*copy\s+([\s\S]+?)\s+from\s+stdin\b([^;]*);?\s*$/i

let nextProcessId = 1000
/** Live sessions of this process by process ID, for CancelRequest. */
const sessions = new Map<number, ServerSession>()


export class ServerSession {
  private readonly reader = new FrontendReader()
  private state: State = 'startup'
  private work: Promise<void> = Promise.resolve()
  private auth: AuthExchange | null = null
  private user = ''
  private replication = false
  /** The shared backend, held from a statement that needs it until ReadyForQuery says idle. */
  private lease: Lease | null = null
  /** A transaction block the backend has not seen yet, or one reading an imported snapshot. */
  private block: Block | null = null
  /** Aborts the current wait for the backend (cancel, hang-up, termination). */
  private waitAbort: AbortController | null = null
  /** Ends the member turn of a snapshot-importing transaction. */
  private memberTurnEnd: (() => void) | null = null
  /** A statement answered here failed inside an extended-query sequence: discard up to Sync. */
  private discarding = false
  /** Statements this session keeps to itself (transaction control), by client name. */
  private readonly localStatements = new Map<string, LocalStatement>()
  /** Portals bound to such statements. */
  private readonly localPortals = new Map<string, { statement: string; bind: Uint8Array }>()
  private idleTimer: ReturnType<typeof setTimeout> | null = null
  /** transaction_timeout of the transaction in progress. */
  private txTimer: ReturnType<typeof setTimeout> | null = null
  private readonly processId = nextProcessId++
  readonly secretKey = (Math.random() * 0x7fffffff) | 0
  private readonly names = new StatementNames(`_tg${this.processId}_`)
  private stream: ReplicationSession | null = null
  /** shutdown() is finishing the stream: its end ends the session. */
  private shuttingDown = false
  /** Settles with the stream once START_REPLICATION has started it, or null when it failed. */
  private streamStarted: Promise<ReplicationSession | null> = Promise.resolve(null)
  private streamDone: Promise<void> | null = null
  /** Temporary slots this connection created: any ERROR drops them, as PostgreSQL does. */
  private readonly temporarySlots = new Set<string>()
  private settingsOf: SessionSettings | null = null
  /** This session's run-time parameters (./session-settings.ts); the database is known from start-up on. */
  private get settings(): SessionSettings {
    return (this.settingsOf ??= new SessionSettings(this.engine.db))
  }
  /** Settles when the session has ended and released everything. */
  readonly closed: Promise<void>
  private resolveClosed!: () => void

  /** The database this session connected to (chosen by the start-up packet when the server has several). */
  private engine: WireEngine

  constructor(
    engines: WireEngine | EngineResolver,
    private readonly conn: Connection,
    private readonly options: ServerOptions = {},
  ) {
    this.closed = new Promise((r) => (this.resolveClosed = r))
    if (typeof engines === 'function') {
      this.resolve = engines
      this.engine = null as unknown as WireEngine
    } else this.engine = engines
  }

  private resolve: EngineResolver | null = null

  /** Bytes from the client, in any chunking. Processed in order. */
  receive(chunk: Uint8Array): void {
    if (this.state === 'closed') return
    let messages: FrontendMessage[]
    try {
      messages = this.reader.push(chunk)
    } catch (e) {
      this.fatal({ code: SqlState.protocolViolation, message: e instanceof ProtocolError ? e.message : String(e) })
      return
    }
    if (!messages.length) return
    this.inbox.push(...messages)
    if (this.draining) return
    this.draining = true
    this.work = this.work.then(() => this.drain()).catch((e) => this.fatal(sessionError(e)))
  }

  /** Messages received and not yet handled, in order (message() may take a run of them at once). */
  private readonly inbox: FrontendMessage[] = []
  private draining = false

  private async drain(): Promise<void> {
    try {
      for (let m = this.inbox.shift(); m; m = this.inbox.shift()) await this.handle(m)
    } finally {
      this.draining = false
    }
  }

  /** The transport closed: roll back, stop streaming, release. */
  async end(): Promise<void> {
    if (this.state !== 'closed') this.state = 'closed'
    this.stream?.stop()
    this.waitAbort?.abort(new PgError({ code: '08006', message: 'the client went away' }))
    this.clearIdleTimer()
    if (this.txTimer) clearTimeout(this.txTimer)
    sessions.delete(this.processId)
    await this.work.catch(() => {})
    await this.streamDone?.catch(() => {})
    await this.cleanup()
  }

  /** CancelRequest (or pg_cancel_backend): a wait for the backend ends with 57014. A running statement finishes (PGlite cannot be interrupted). */
  cancel(): void {
    this.waitAbort?.abort(cancelError())
  }

  /**
   * The server stops (PostgreSQL's fast shutdown): a walsender finishes as
   * PostgreSQL's does, asking its consumer to confirm what it was sent
   * (ReplicationSession.finish), so acknowledgements already on their way
   * reach the slot, then ends with CommandComplete as WalSndDone does; every
   * other session gets FATAL 57P01. Resolves once the session has ended.
   */
  async shutdown(): Promise<void> {
    if (this.stream && this.state === 'copy-both') {
      this.shuttingDown = true
      await this.stream.finish(this.options.shutdownWaitMs ?? 2000)
    } else {
      this.terminate({ code: '57P01', message: 'terminating connection due to administrator command' })
    }
    await this.end()
  }

  /** pg_terminate_backend, or a timeout that ends the session: FATAL, then the session ends. */
  terminate(e: PgErrorFields): void {
    this.stream?.stop()
    this.waitAbort?.abort(new PgError(e))
    this.fatal(e)
  }

  private logStatement(tag: string, body: Uint8Array, text: string | null): void {
    const log = this.options.log!
    if (tag === 'Q') log(`[${this.processId}] statement: ${text ?? '(not UTF-8)'}`)
    else if (tag === 'P') {
      const r = new ByteReader(body)
      const name = r.cstring()
      log(`[${this.processId}] parse ${name || '<unnamed>'}: ${r.cstring()}`)
    }
  }

  private send(...parts: Uint8Array[]): void {
    if (this.state !== 'closed' || parts.length) {
      const bytes = parts.length === 1 ? parts[0] : concatBytes(parts)
      if (this.options.log) this.logErrors(bytes)
      this.conn.send(bytes)
    }
  }

  private logErrors(bytes: Uint8Array): void {
    if (!bytes.includes(0x45)) return
    try {
      for (const m of decodeBackendMessages(bytes)) {
        if (m.tag === 'E') this.options.log!(`[${this.processId}] ${m.fields.severity ?? 'ERROR'} ${m.fields.code}: ${m.fields.message}`)
      }
    } catch {
      // A partial reply (a stream's CopyData): nothing to log.
    }
  }

  private fatal(e: PgErrorFields): void {
    if (this.state === 'closed') return
    this.options.log?.(`[${this.processId}] FATAL ${e.code}: ${e.message}`)
    this.conn.send(errorResponse({ ...e, severity: 'FATAL' }))
    this.state = 'closed'
    this.conn.close()
    void this.end()
  }

  private async cleanup(): Promise<void> {
    if (!this.engine) return this.resolveClosed() // closed before start-up chose a database
    const db = this.engine.db
    const backend = this.backendOrNull()
    try {
      backend?.snapshots.expire(this.processId)
      backend?.removeSession(this.processId)
      if (!db.closed) {
        const closes = this.names.closeAll()
        if (this.lease || this.memberTurnEnd) {
          // Disconnected inside a transaction block: it is rolled back. The Sync
          // first ends an extended-query sequence that failed without one: the
          // backend would otherwise ignore everything, ROLLBACK and the
          // engine's own queries included, until a Sync.
          await db.runExclusive(() => execRaw(db, concatBytes([SYNC, query('ROLLBACK')])))
          await this.settings.resetBackend()
        }
        this.endMemberTurn()
        this.endBlock()
        if (closes.length) {
          if (!this.lease) this.lease = await backend!.arbiter.acquire(this.processId, { lockTimeoutMs: 0, statementDeadline: Infinity })
          await db.runExclusive(() => execRaw(db, concatBytes(closes)))
        }
        for (const slot of this.temporarySlots) {
          await handleReplicationQuery(`DROP_REPLICATION_SLOT "${slot}"`, db)
        }
      }
    } catch {
      // The database closed under us: nothing left to release in it.
    } finally {
      this.endMemberTurn()
      this.endBlock()
      this.lease?.release()
      this.lease = null
      this.resolveClosed()
    }
  }

  private backendOrNull(): Backend | null {
    try {
      return backendOf(this.engine.db)
    } catch {
      return null
    }
  }

  private async handle(m: FrontendMessage): Promise<void> {
    if (this.state === 'closed') return
    switch (this.state) {
      case 'startup':
        return this.startup(m)
      case 'auth':
        return this.authenticate(m)
      case 'copy-both':
        return this.copyBoth(m)
      case 'copy-in':
        return this.copyIn(m)
      case 'ready':
        if (m.kind !== 'message') return this.fatal({ code: SqlState.protocolViolation, message: 'unexpected start-up packet' })
        return this.message(m.tag, m.bytes, m.body)
    }
  }

  private async startup(m: FrontendMessage): Promise<void> {
    if (m.kind === 'ssl-request' || m.kind === 'gssenc-request') {
      // No encryption: 'N', then the client sends its start-up packet in the clear.
      this.conn.send(new Uint8Array([0x4e]))
      return
    }
    if (m.kind === 'cancel') {
      // PostgreSQL answers nothing and closes; the named session's wait, if
      // the key matches, ends with 57014.
      const target = sessions.get(m.processId)
      if (target && target.secretKey === m.secretKey) target.cancel()
      this.state = 'closed'
      this.conn.close()
      void this.end() // not awaited: end() waits for the work queue this runs in
      return
    }
    if (m.kind !== 'startup') return this.fatal({ code: SqlState.protocolViolation, message: 'expected a start-up packet' })
    if (m.version >> 16 !== 3) {
      return this.fatal({
        code: SqlState.featureNotSupported,
        message: `unsupported frontend protocol ${m.version >> 16}.${m.version & 0xffff}: server supports 3.0 to 3.0`,
      })
    }
    const p = m.params
    this.user = p.user ?? ''
    if (!this.user) return this.fatal({ code: '28000', message: 'no PostgreSQL user name specified in startup packet' })
    const rep = (p.replication ?? 'false').toLowerCase()
    if (rep === 'database') this.replication = true
    else if (['true', 'on', 'yes', '1'].includes(rep)) {
      return this.fatal({ code: SqlState.featureNotSupported, message: 'physical replication connections are not supported by tabgres' })
    } else if (!['false', 'off', 'no', '0'].includes(rep)) {
      return this.fatal({ code: SqlState.invalidParameterValue, message: `invalid value for parameter "replication": "${p.replication}"` })
    }
    const database = p.database ?? this.user
    if (this.resolve) {
      const engine = await this.resolve(database)
      if (!engine) return this.fatal({ code: '3D000', message: `database "${database}" does not exist` })
      this.engine = engine
    }
    const db = this.engine.db
    const info = await readStartupInfo(db, this.user)
    if (!info.roleExists) return this.fatal({ code: '28000', message: `role "${this.user}" does not exist` })
    if (database !== info.database) return this.fatal({ code: '3D000', message: `database "${database}" does not exist` })
    this.startupInfo = { ...info, applicationName: p.application_name ?? '' }
    const method = this.options.auth ?? (this.options.password !== undefined ? 'scram-sha-256' : 'trust')
    if (method === 'trust') return this.ready()
    this.auth = createAuthExchange(method, this.user, this.options.password ?? '')
    this.state = 'auth'
    this.conn.send(await this.auth.begin())
  }

  /**
   * PostgreSQL's connection limits, over every session of this process (one
   * cluster): max_connections for ordinary sessions, max_wal_senders for
   * replication connections, each FATAL 53300 past it. (Every tabgres role
   * acts as a superuser, so superuser_reserved_connections changes nothing.)
   */
  private connectionLimitError(): PgErrorFields | null {
    const { gucs } = backendOf(this.engine.db)
    let ordinary = 0
    let walsenders = 0
    for (const s of sessions.values()) {
      if (s.replication) walsenders++
      else ordinary++
    }
    if (this.replication) {
      const max = Number(gucs.get('max_wal_senders')?.boot ?? 10)
      if (walsenders >= max) {
        return { code: '53300', message: `number of requested standby connections exceeds max_wal_senders (currently ${max})` }
      }
    } else {
      const max = Number(gucs.get('max_connections')?.boot ?? 100)
      if (ordinary >= max) return { code: '53300', message: 'sorry, too many clients already' }
    }
    return null
  }

  private startupInfo: StartupInfo & { applicationName: string } = { roleExists: true, database: '', serverVersion: '', applicationName: '' }

  private async authenticate(m: FrontendMessage): Promise<void> {
    if (m.kind !== 'message' || m.tag !== 'p') {
      return this.fatal({ code: SqlState.protocolViolation, message: 'expected password response' })
    }
    try {
      const { reply, done } = await this.auth!.step(m.body)
      if (reply) this.conn.send(reply)
      if (done) await this.ready()
    } catch (e) {
      this.fatal(sessionError(e))
    }
  }

  private async ready(): Promise<void> {
    const i = this.startupInfo
    const params: [string, string][] = [
      ['application_name', i.applicationName],
      ['client_encoding', 'UTF8'],
      ['DateStyle', 'ISO, MDY'],
      ['default_transaction_read_only', 'off'],
      ['in_hot_standby', 'off'],
      ['integer_datetimes', 'on'],
      ['IntervalStyle', 'postgres'],
      ['is_superuser', 'on'],
      ['scram_iterations', '4096'],
      ['server_encoding', 'UTF8'],
      ['server_version', i.serverVersion],
      ['session_authorization', this.user],
      ['standard_conforming_strings', 'on'],
      ['TimeZone', 'UTC'],
    ]
    const full = this.connectionLimitError()
    if (full) return this.fatal(full)
    this.state = 'ready'
    sessions.set(this.processId, this)
    backendOf(this.engine.db).addSession({
      pid: this.processId,
      walsender: this.replication,
      terminate: (e) => this.terminate(e),
      cancel: () => this.cancel(),
    })
    this.send(
      authenticationOk(),
      ...params.map(([k, v]) => parameterStatus(k, v)),
      backendKeyData(this.processId, this.secretKey),
      readyForQuery('I'),
    )
  }

  private async message(tag: string, bytes: Uint8Array, body: Uint8Array): Promise<void> {
    this.clearIdleTimer()
    if (tag === 'X') {
      this.state = 'closed'
      this.conn.close()
      void this.end() // not awaited: end() waits for the work queue this runs in
      return
    }
    // Outside COPY, PostgreSQL ignores CopyData/CopyDone/CopyFail (the tail of
    // a failed COPY); forwarding them would hold the database with no reply.
    if (tag === 'd' || tag === 'c' || tag === 'f') return
    // PostgreSQL answers a malformed message with ERROR 08P01; tabgres closes
    // the connection instead, since PGlite's backend must never see one.
    const malformed = malformedMessage(tag, body)
    if (malformed !== null) return this.fatal({ code: SqlState.protocolViolation, message: malformed })
    // A query that is not UTF-8 goes to PGlite as it came: its backend
    // answers it as PostgreSQL does (22021).
    const text = tag === 'Q' ? decodableQuery(body) : null
    if (this.options.log) this.logStatement(tag, body, text)
    if (this.replication && text !== null && !this.lease) {
      // Any command of the exporting connection ends its exported snapshot.
      backendOf(this.engine.db).snapshots.expire(this.processId)
      if (isReplicationCommand(text)) return this.replicationCommand(text)
      if (this.walsenderSetting(text)) return
    }
    if (this.replication && tag !== 'Q') {
      // A walsender takes only simple queries.
      return this.fatal({ code: SqlState.protocolViolation, message: 'extended query protocol not supported in a replication connection' })
    }
    if (!this.lease && !this.memberTurnEnd) {
      if (this.discarding) {
        if (tag !== 'S') return
        this.discarding = false
        if (!this.extendedOpen) return this.send(readyForQuery(this.localStatus()))
      }
      if (await this.answerLocally(tag, body, text)) return
      if (this.block?.failed && !this.block.group && tag !== 'S' && tag !== 'H') {
        // An aborted block the backend does not hold (it failed here, or the
        // backend's was rolled back): nothing runs until it ends. It has no
        // savepoints, so ROLLBACK TO names one that does not exist.
        const stmt = text === null ? null : transactionStatement(text)
        return this.localError(
          stmt?.kind === 'rollback-to'
            ? new PgError({ code: '3B001', message: `savepoint "${stmt.name}" does not exist` })
            : new PgError({ code: '25P02', message: 'current transaction is aborted, commands ignored until end of transaction block' }),
          tag,
        )
      }
    }
    // After an extended-query error the backend ignores everything up to Sync,
    // a COPY included: it goes to PGlite to be ignored, not started here.
    if (text !== null && !this.awaitingSync) {
      const copy = COPY_FROM_STDIN.exec(text)
      if (copy) return this.beginCopyIn(copy[1], copy[2])
    }
    if (!(await this.takeBackend(tag))) return
    await this.materialize(tag, body)
    if (await this.forward(this.withFollowers(tag, this.rewriteNames(tag, body) ?? bytes))) {
      // A waiting advisory lock function found the lock held by another
      // session: wait for a release, bounded as any lock wait, then run the
      // statement again (it failed and was rolled back).
      if (await this.waitForAdvisoryRelease()) return this.message(tag, bytes, body)
    }
  }

  /**
   * An extended-query message about to go to the backend, joined by the
   * messages received right behind it up to Sync (Bind, Execute, Sync...):
   * one call into PGlite for the run instead of one per message, each
   * message still handled as message() would (names rewritten, logged).
   * A message that needs more than that (a statement the session answered
   * itself, an unusual one) ends the run and is handled on its own.
   */
  private withFollowers(tag: string, first: Uint8Array): Uint8Array {
    if (!'PBDECH'.includes(tag) || !this.lease || this.memberTurnEnd) return first
    const run = [first]
    for (let m = this.inbox[0]; m?.kind === 'message' && 'PBDECHS'.includes(m.tag); m = this.inbox[0]) {
      if (malformedMessage(m.tag, m.body) !== null || this.pendingMaterial(m.tag, m.body)) break
      this.inbox.shift()
      if (this.options.log) this.logStatement(m.tag, m.body, null)
      this.noteMaterial(m.tag, m.body)
      run.push(this.rewriteNames(m.tag, m.body) ?? m.bytes)
      if (m.tag === 'S') break
    }
    return run.length === 1 ? first : concatBytes(run)
  }

  /** Waits for an advisory lock to be released; false when the wait ended with an error (answered). */
  private async waitForAdvisoryRelease(): Promise<boolean> {
    this.waitAbort = new AbortController()
    const backend = backendOf(this.engine.db)
    try {
      await backend.advisory.waitForRelease(this.waitBounds(this.waitAbort.signal), backend.arbiter.maxWaitMs)
      return true
    } catch (e) {
      if (this.state !== 'closed') this.localError(toPgError(e), 'Q')
      return false
    } finally {
      this.waitAbort = null
    }
  }

  /** I, T or E while the backend has not seen this session's transaction block. */
  private localStatus(): 'I' | 'T' | 'E' {
    return this.block ? (this.block.failed ? 'E' : 'T') : 'I'
  }

  /**
   * Takes the backend for a statement (or the group's turn for an importing
   * transaction). A wait that ends (lock_timeout, statement_timeout, cancel)
   * answers the statement with its error, as PostgreSQL answers a lock wait;
   * returns false then.
   */
  private async takeBackend(tag: string): Promise<boolean> {
    if (this.lease || this.memberTurnEnd) return true
    const group = this.block?.group
    try {
      if (group) {
        this.memberTurnEnd = await group.turn()
        // The group's hold is the first importer's: name this turn's session for advisory locks.
        backendOf(this.engine.db).advisory.setHolder(this.processId)
        await this.settings.restore()
        const b = this.block!
        const mode = b.begin.readOnly === false ? 'READ WRITE' : 'READ ONLY'
        await this.silently(query([`BEGIN ISOLATION LEVEL REPEATABLE READ ${mode}`, ...b.locals].join('; ')))
        b.queried = true
        return true
      }
      this.waitAbort = new AbortController()
      try {
        this.lease = await backendOf(this.engine.db).arbiter.acquire(this.processId, this.waitBounds(this.waitAbort.signal))
      } finally {
        this.waitAbort = null
      }
      await this.settings.restore()
      if (this.block) {
        // The block's first statement that needs the backend: it starts there now.
        const b = this.block
        this.block = null
        await this.silently(query([b.begin.text, ...b.locals].join('; ')))
      }
      return true
    } catch (e) {
      if (this.state === 'closed') return false
      this.localError(toPgError(e), tag)
      return false
    }
  }

  /** Bounds of a wait for the backend, from the session's lock_timeout and statement_timeout. */
  private waitBounds(signal: AbortSignal): WaitBounds {
    const statementMs = this.settings.ms('statement_timeout')
    return {
      lockTimeoutMs: this.settings.ms('lock_timeout'),
      statementDeadline: statementMs > 0 ? performance.now() + statementMs : Infinity,
      signal,
    }
  }

  /**
   * A statement that named a session-only timeout ran and the backend is
   * ready: what it set moves from the backend into this session
   * (backend/idle-timeouts.ts). In an aborted transaction nothing can be read
   * or reset, and the abort has undone only what the failed (sub)transaction
   * set: one set before a savepoint in the same message would stay armed.
   * So the backend's transaction is rolled back now and the session keeps the
   * aborted block itself: 25P02 until ROLLBACK as before; a ROLLBACK TO
   * SAVEPOINT gets 3B001 from a new block (the savepoint went with the
   * rollback). PostgreSQL's abort undoes the SET too, so no timeout is in
   * force afterwards. Returns the status to report.
   */
  private async guardTimeouts(status: string): Promise<string> {
    const db = this.engine.db
    if (status === 'E') {
      this.settings.guardSkipped()
      if (this.memberTurnEnd) return status // its turn ends with a ROLLBACK right away (afterRun)
      await db.runExclusive(() => run(db, 'ROLLBACK', false))
      await this.settings.save()
      this.block = { begin: { kind: 'begin', text: 'BEGIN', isolation: null, readOnly: null, deferrable: null }, locals: [], failed: true, group: null, queried: true }
      const lease = this.lease
      this.lease = null
      lease?.release()
      return status
    }
    await this.settings.guard()
    return status
  }

  /** An error answered here: with ReadyForQuery for a simple query, else discard to Sync. */
  private localError(e: PgError, tag: string): void {
    if (this.block) this.block.failed = true
    const out = errorResponse(e)
    if (tag === 'Q') {
      this.send(out, readyForQuery(this.extendedOpen ? 'E' : this.localStatus()))
      this.afterReady(this.localStatus())
    } else {
      this.discarding = true
      this.send(out)
    }
  }

  /** Requests of the slot functions and pg_terminate_backend in what the backend said. */
  private controls(requests: string[]): void {
    if (!requests.length) return
    const backend = backendOf(this.engine.db)
    for (const r of requests) {
      const { createdTemporary } = backend.control(r, this.processId)
      if (createdTemporary) this.temporarySlots.add(createdTemporary)
    }
  }

  /** Runs a message in the backend whose reply the client must not see (it got its own). */
  private async silently(bytes: Uint8Array): Promise<void> {
    const db = this.engine.db
    const out = await db.runExclusive(() => execRaw(db, bytes))
    const filtered = filterBackendOutput(out)
    if (filtered.commits.length) signalCommit(db, filtered.commits)
    this.controls(filtered.controls)
    if (hasErrorResponse(filtered.bytes)) throw new PgError(firstError(filtered.bytes))
  }

  /**
   * The backend has not seen a statement or portal that the session answered
   * itself: it gets their Parse (and Bind) now, before a message using them.
   */
  private async materialize(tag: string, body: Uint8Array): Promise<void> {
    const pending = this.pendingMaterial(tag, body)
    this.noteMaterial(tag, body)
    if (!pending) return
    const { local, portal, bound } = pending
    if (local && !local.inBackend) {
      await this.silently(this.rewriteNames('P', local.parse.subarray(5))!)
      local.inBackend = true
    }
    if (bound && portal !== null) {
      await this.silently(this.rewriteNames('B', bound.bind.subarray(5))!)
      this.localPortals.delete(portal)
    }
  }

  /** What materialize() must send to the backend before this message: null when nothing (the usual case). */
  private pendingMaterial(
    tag: string,
    body: Uint8Array,
  ): { local: LocalStatement | undefined; portal: string | null; bound: { statement: string; bind: Uint8Array } | undefined } | null {
    const r = new ByteReader(body)
    let statement: string | null = null
    let portal: string | null = null
    if (tag === 'B') {
      r.cstring()
      statement = r.cstring()
    } else if (tag === 'D') {
      const what = r.char()
      const name = r.cstring()
      if (what === 'S') statement = name
      else portal = name
    } else if (tag === 'E') portal = r.cstring()
    else return null
    const bound = portal !== null ? this.localPortals.get(portal) : undefined
    if (bound) statement = bound.statement
    const local = statement !== null ? this.localStatements.get(statement) : undefined
    return (local && !local.inBackend) || bound ? { local, portal, bound } : null
  }

  /** The session's bookkeeping of statements it answers itself, for a Parse or Close going to the backend. */
  private noteMaterial(tag: string, body: Uint8Array): void {
    const r = new ByteReader(body)
    if (tag === 'C') {
      const what = r.char()
      const name = r.cstring()
      if (what === 'S') this.localStatements.delete(name)
      else this.localPortals.delete(name)
    } else if (tag === 'P') {
      // Transaction control prepared while the session held the backend is
      // still answered here when bound later without it (the COMMIT that
      // ends a snapshot-importing transaction, above all).
      const name = r.cstring()
      const stmt = localStatement(r.cstring())
      if (stmt) this.localStatements.set(name, { stmt, parse: this.messageBytes('P', body), inBackend: true })
      else this.localStatements.delete(name)
    }
  }

  /**
   * Transaction control and settings the session answers without the backend
   * while it does not hold it (transaction-statements.ts): true when answered.
   */
  private async answerLocally(tag: string, body: Uint8Array, text: string | null): Promise<boolean> {
    switch (tag) {
      case 'Q': {
        if (text === null) return false
        const stmt = localStatement(text)
        if (!stmt || !this.locallyAnswerable(stmt)) return false
        if (this.extendedOpen) return false
        const reply = await this.runLocal(stmt)
        if (reply.error) {
          this.localError(reply.error, 'Q')
          return true
        }
        const status = this.localStatus()
        this.send(...reply.out, readyForQuery(status))
        this.afterReady(status)
        return true
      }
      case 'P': {
        const r = new ByteReader(body)
        const name = r.cstring()
        const sql = r.cstring()
        const stmt = localStatement(sql)
        if (!stmt || !this.locallyAnswerable(stmt)) {
          this.localStatements.delete(name)
          return false
        }
        this.localStatements.set(name, { stmt, parse: this.messageBytes('P', body), inBackend: false })
        this.send(parseComplete())
        return true
      }
      case 'B': {
        const r = new ByteReader(body)
        const portal = r.cstring()
        const name = r.cstring()
        const local = this.localStatements.get(name)
        if (!local || !this.locallyAnswerable(local.stmt)) {
          this.localPortals.delete(portal)
          return false
        }
        this.localPortals.set(portal, { statement: name, bind: this.messageBytes('B', body) })
        this.send(bindComplete())
        return true
      }
      case 'D': {
        const r = new ByteReader(body)
        const what = r.char()
        const name = r.cstring()
        const local = what === 'S' ? this.localStatements.get(name) : this.localStatements.get(this.localPortals.get(name)?.statement ?? '\0')
        if (!local || (what === 'P' && !this.localPortals.has(name))) return false
        if (what === 'S') this.send(parameterDescription([]))
        this.send(local.stmt.kind === 'show' ? rowDescriptionOf(local.stmt.name) : noData())
        return true
      }
      case 'E': {
        const portal = new ByteReader(body).cstring()
        const bound = this.localPortals.get(portal)
        const local = bound && this.localStatements.get(bound.statement)
        if (!local) return false
        if (portal === '') this.localPortals.delete(portal)
        const reply = await this.runLocal(local.stmt, true)
        if (reply.error) this.localError(reply.error, 'E')
        else this.send(...reply.out)
        return true
      }
      case 'C': {
        const r = new ByteReader(body)
        const what = r.char()
        const name = r.cstring()
        const local = what === 'S' ? this.localStatements.get(name) : this.localPortals.get(name)
        if (!local || (what === 'S' && (local as LocalStatement).inBackend)) return false
        if (what === 'S') this.localStatements.delete(name)
        else this.localPortals.delete(name)
        this.send(closeComplete())
        return true
      }
      case 'S':
        if (this.extendedOpen) return false
        this.send(readyForQuery(this.localStatus()))
        this.afterReady(this.localStatus())
        return true
      case 'H':
        return !this.extendedOpen
      default:
        return false
    }
  }

  /** The whole message again (tag and length), for replaying it to the backend later. */
  private messageBytes(tag: string, body: Uint8Array): Uint8Array {
    const out = new Uint8Array(body.length + 5)
    out[0] = tag.charCodeAt(0)
    new DataView(out.buffer).setInt32(1, body.length + 4)
    out.set(body, 5)
    return out
  }

  /** Savepoints need the backend, except in an importing transaction (which reads only). */
  private locallyAnswerable(stmt: LocalStatementKind): boolean {
    if (stmt.kind === 'savepoint' || stmt.kind === 'release' || stmt.kind === 'rollback-to') return !!this.block?.group
    if (stmt.kind === 'set-session' || stmt.kind === 'reset') {
      // Outside a block only (inside one a SET is undone by ROLLBACK), and
      // only what the catalog checks completely: a string setting
      // (search_path, TimeZone) is for the backend to check.
      if (this.block) return false
      if (stmt.name === 'all' && stmt.kind === 'reset') return true
      const def = backendOf(this.engine.db).gucs.get(stmt.name)
      return !!def && def.vartype !== 'string'
    }
    return true
  }

  /** Runs a statement answered here; the reply without ReadyForQuery. */
  private async runLocal(stmt: LocalStatementKind, extended = false): Promise<{ out: Uint8Array[]; error?: PgError }> {
    const b = this.block
    const warning = (code: string, message: string) => errorResponse({ severity: 'WARNING', code, message }, 'N')
    if (b?.failed && stmt.kind !== 'commit' && stmt.kind !== 'rollback' && stmt.kind !== 'rollback-to') {
      return {
        out: [],
        error: new PgError({ code: '25P02', message: 'current transaction is aborted, commands ignored until end of transaction block' }),
      }
    }
    switch (stmt.kind) {
      case 'show': {
        const value = stmt.value ?? this.settings.show(stmt.name)
        return { out: resultSet([{ name: stmt.name, ...TEXT_FIELD }], [[value]], 'SHOW').slice(extended ? 1 : 0) }
      }
      case 'begin':
        if (b) return { out: [warning('25001', 'there is already a transaction in progress'), commandComplete('BEGIN')] }
        this.block = { begin: stmt, locals: [], failed: false, group: null, queried: false }
        return { out: [commandComplete('BEGIN')] }
      case 'commit':
      case 'rollback': {
        if (!b) return { out: [warning('25P01', 'there is no transaction in progress'), commandComplete(stmt.kind.toUpperCase())] }
        const tag = b.failed ? 'ROLLBACK' : stmt.kind.toUpperCase()
        this.endBlock()
        return { out: [commandComplete(tag)] }
      }
      case 'set-local': {
        if (!b) return { out: [warning('25P01', 'SET LOCAL can only be used in transaction blocks'), commandComplete('SET')] }
        try {
          this.settings.setLocal(stmt.name, stmt.value)
        } catch (e) {
          return { out: [], error: toPgError(e) }
        }
        // Session-only timeouts never reach the backend (backend/idle-timeouts.ts): txLocals has them.
        if (!isSessionOnly(stmt.name)) b.locals.push(stmt.text)
        return { out: [commandComplete('SET')] }
      }
      case 'set-snapshot': {
        if (!b) return { out: [warning('25P01', 'SET TRANSACTION can only be used in transaction blocks'), commandComplete('SET')] }
        if (b.group || b.queried) {
          return { out: [], error: new PgError({ code: '0A000', message: 'SET TRANSACTION SNAPSHOT must be called before any query' }) }
        }
        const iso = b.begin.isolation ?? this.settings.defaultIsolation()
        if (iso !== 'repeatable read' && iso !== 'serializable') {
          return {
            out: [],
            error: new PgError({ code: '0A000', message: 'a snapshot-importing transaction must have isolation level SERIALIZABLE or REPEATABLE READ' }),
          }
        }
        this.waitAbort = new AbortController()
        try {
          b.group = await backendOf(this.engine.db).snapshots.import(stmt.id, this.processId, this.waitBounds(this.waitAbort.signal))
        } catch (e) {
          return { out: [], error: toPgError(e) }
        } finally {
          this.waitAbort = null
        }
        return { out: [commandComplete('SET')] }
      }
      case 'set-session':
      case 'reset':
        try {
          return { out: this.settings.set(stmt.kind === 'reset' ? stmt.name : stmt.name, stmt.kind === 'reset' ? null : stmt.value) }
        } catch (e) {
          return { out: [], error: toPgError(e) }
        }
      case 'savepoint':
        return { out: [commandComplete('SAVEPOINT')] }
      case 'release':
        return { out: [commandComplete('RELEASE')] }
      case 'rollback-to':
        if (b) b.failed = false
        return { out: [commandComplete('ROLLBACK')] }
    }
  }

  /** The transaction block ended without the backend (or its importing transaction ended). */
  private endBlock(): void {
    const b = this.block
    this.block = null
    this.settings.endTransaction()
    if (b?.group) backendOf(this.engine.db).snapshots.leave(b.group)
  }

  private endMemberTurn(): void {
    const end = this.memberTurnEnd
    this.memberTurnEnd = null
    if (end && this.block?.group) backendOf(this.engine.db).advisory.setHolder(this.block.group.lease.pid)
    end?.()
  }

  /**
   * After a ReadyForQuery, the session's idle timeouts start as PostgreSQL's
   * do when its backend waits for the client: idle_in_transaction_session_timeout
   * inside a transaction (FATAL 25P03), idle_session_timeout outside one
   * (57P05). transaction_timeout (25P04) runs from the first ReadyForQuery
   * of a transaction to its end. The backend never has them (backend/idle-timeouts.ts).
   */
  private afterReady(status: string): void {
    if (this.state === 'closed') return
    if (status === 'I') {
      this.settings.endTransaction()
      if (this.txTimer) clearTimeout(this.txTimer)
      this.txTimer = null
    } else if (!this.txTimer) {
      const ms = this.settings.ms('transaction_timeout')
      if (ms > 0) this.txTimer = this.timeout(ms, '25P04', 'terminating connection due to transaction timeout')
    }
    const [name, code, message] =
      status === 'I'
        ? ['idle_session_timeout', '57P05', 'terminating connection due to idle-session timeout']
        : ['idle_in_transaction_session_timeout', '25P03', 'terminating connection due to idle-in-transaction timeout']
    const ms = this.settings.ms(name)
    if (ms <= 0) return
    this.clearIdleTimer()
    this.idleTimer = this.timeout(ms, code, message)
  }

  /** A timer that ends the session with FATAL `code` after whatever it is doing now. */
  private timeout(ms: number, code: string, message: string): ReturnType<typeof setTimeout> {
    return setTimeout(() => {
      this.work = this.work.then(() => this.terminate({ code, message }))
    }, ms)
  }

  private clearIdleTimer(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer)
    this.idleTimer = null
  }

  /** SET, RESET on a replication connection: as on any other, never waiting. True when answered. */
  private walsenderSetting(text: string): boolean {
    const stmt = transactionStatement(text)
    if (stmt?.kind !== 'set-session' && stmt?.kind !== 'reset') return false
    try {
      const out = this.settings.set(stmt.name, stmt.kind === 'reset' ? null : stmt.value, stmt.kind === 'reset')
      this.send(...out, readyForQuery('I'))
    } catch (e) {
      this.send(errorResponse(toPgError(e)), readyForQuery('I'))
    }
    return true
  }

  /**
   * Statement and portal names made per session. A message whose names do not
   * even parse goes to PGlite unchanged: its backend fails on the same field
   * with PostgreSQL's error (08P01 or 22021), before any name is used.
   */
  private rewriteNames(tag: string, body: Uint8Array): Uint8Array | null {
    try {
      return this.names.rewrite(tag, body)
    } catch (e) {
      if (e instanceof ProtocolError) return null
      throw e
    }
  }

  /** An extended-query message failed: the backend ignores all but Sync. */
  private awaitingSync = false

  private copyTarget: { target: string; options: string; chunks: Uint8Array[] } | null = null

  private async beginCopyIn(target: string, options: string): Promise<void> {
    if (!(await this.takeBackend('Q'))) return
    if (this.memberTurnEnd) {
      // An importing transaction reads only: PostgreSQL's error, without running it.
      const out = errorResponse({ code: '25006', message: 'cannot execute COPY FROM in a read-only transaction' })
      return this.afterRun(concatBytes([out, readyForQuery('E')]))
    }
    const before = await this.endExtended()
    if (before?.length) await this.afterRun(before)
    this.copyTarget = { target, options, chunks: [] }
    this.state = 'copy-in'
    // CopyInResponse: overall format (binary if asked), no per-column formats.
    const binary = /\bbinary\b/i.test(options) ? 1 : 0
    this.send(new Uint8Array([0x47, 0, 0, 0, 7, binary, 0, 0]))
  }

  private async copyIn(m: FrontendMessage): Promise<void> {
    if (m.kind !== 'message') return this.fatal({ code: SqlState.protocolViolation, message: 'unexpected start-up packet' })
    const c = this.copyTarget!
    if (m.tag === 'd') {
      c.chunks.push(m.body.slice())
      return
    }
    if (m.tag === 'H' || m.tag === 'S') return // allowed during COPY, ignored (as PostgreSQL does)
    this.state = 'ready'
    this.copyTarget = null
    if (m.tag === 'f') {
      const reason = new TextDecoder().decode(m.body.subarray(0, Math.max(0, m.body.indexOf(0))))
      await this.finishCopy(errorResponse({ code: '57014', message: `COPY from stdin failed: ${reason}` }))
      return
    }
    if (m.tag !== 'c') {
      await this.finishCopy(errorResponse({ code: SqlState.protocolViolation, message: `unexpected message type 0x${m.tag.charCodeAt(0).toString(16)} during COPY from stdin` }))
      return
    }
    const db = this.engine.db
    const sql = `COPY ${c.target} FROM '/dev/blob'${c.options}`
    const out = await db.runExclusive(async () => {
      await db._handleBlob(new Blob(c.chunks as BlobPart[]))
      try {
        return await execRaw(db, query(sql))
      } finally {
        await db._cleanupBlob()
      }
    })
    await this.afterRun(out)
  }

  /** A COPY that failed before running: its error, and the transaction state after it. */
  private async finishCopy(error: Uint8Array): Promise<void> {
    const db = this.engine.db
    // Inside a transaction block the failure aborts it, as in PostgreSQL: a
    // failing statement puts the block in the aborted state (its own error is
    // not sent; the client sees the COPY's).
    const inBlock = db.isInTransaction()
    if (inBlock) await db.runExclusive(() => execRaw(db, query('SELECT 1/0')))
    await this.afterRun(concatBytes([error, readyForQuery(inBlock ? 'E' : 'I')]))
  }

  /**
   * Run one message in PGlite, holding the database until it is idle again.
   * True (nothing sent) when it was a simple Query outside a transaction
   * block that a waiting advisory lock function ended: the caller waits and
   * runs it again.
   */
  private async forward(bytes: Uint8Array, retryable = true): Promise<boolean> {
    const db = this.engine.db
    this.settings.noteSent(latin1.decode(bytes.subarray(5)))
    const before = bytes[0] === 0x51 ? await this.endExtended() : null
    if ('PBDECH'.includes(String.fromCharCode(bytes[0]))) this.extendedOpen = true
    if (bytes[0] === 0x51 && !this.memberTurnEnd) this.noteLocal(bytes)
    let out: Uint8Array
    try {
      out = await db.runExclusive(() => execRaw(db, bytes))
    } catch (e) {
      // PGlite itself failed (not an SQL error, which comes back as ErrorResponse).
      out = concatBytes([errorResponse(toPgError(e)), readyForQuery(db.isInTransaction() ? 'E' : 'I')])
    }
    if (retryable && bytes[0] === 0x51 && !before && !this.memberTurnEnd && lastReadyStatus(out) === 'I' && isAdvisoryBusy(out)) {
      // Locks the statement took before the busy one stay taken, as in PostgreSQL.
      this.controls(filterBackendOutput(out).controls)
      await this.settings.save()
      const lease = this.lease
      this.lease = null
      lease?.release()
      return true
    }
    await this.afterRun(before ? concatBytes([before, out]) : out)
    return false
  }

  /** A SET LOCAL sent to the backend still bounds this transaction's later waits. */
  private noteLocal(bytes: Uint8Array): void {
    const text = decodableQuery(bytes.subarray(5))
    const stmt = text === null ? null : transactionStatement(text)
    if (stmt?.kind !== 'set-local') return
    try {
      this.settings.setLocal(stmt.name, stmt.value)
    } catch {
      // The backend reports the error itself.
    }
  }

  /** Extended-query messages went to the backend since its last ReadyForQuery. */
  private extendedOpen = false

  /**
   * A simple Query in the middle of an extended-query sequence: PostgreSQL
   * runs it in that sequence's implicit transaction and commits both, but
   * PGlite loses track (its ReadyForQuery says 'T', the insert is lost and
   * the next statement fails with XX000 "unexpected state STARTED"). A Sync
   * first does what PostgreSQL does; its ReadyForQuery is dropped, as the
   * client never asked for it. Returns what the Sync produced.
   */
  private async endExtended(): Promise<Uint8Array | null> {
    if (!this.extendedOpen || this.awaitingSync) return null
    this.extendedOpen = false
    const db = this.engine.db
    const out = await db.runExclusive(() => execRaw(db, SYNC))
    return out.subarray(0, out.length - 6) // its ReadyForQuery is last
  }

  /** Send a backend reply; let go of the database once it says idle. */
  private async afterRun(out: Uint8Array): Promise<void> {
    const db = this.engine.db
    const filtered = filterBackendOutput(out)
    out = filtered.bytes
    if (filtered.commits.length) signalCommit(db, filtered.commits)
    this.controls(filtered.controls)
    let status = lastReadyStatus(out)
    if (status !== null) this.awaitingSync = this.extendedOpen = false
    else if (hasErrorResponse(out)) this.awaitingSync = true
    if (status !== null && this.settings.guardPending) status = await this.guardTimeouts(status)
    if (status !== null && this.memberTurnEnd) {
      // An importing transaction's statement ran in its own read-only
      // transaction, inside the group's hold: end that, and report the
      // importing transaction's status instead.
      const b = this.block!
      if (status === 'E') b.failed = true
      await this.silently(query(status === 'E' ? 'ROLLBACK' : 'COMMIT')).catch(() => {})
      await this.settings.save()
      this.endMemberTurn()
      out[out.length - 1] = b.failed ? 0x45 : 0x54
      this.send(out)
      this.afterReady(b.failed ? 'E' : 'T')
      return
    }
    if (status === 'I') {
      await this.settings.save()
      const lease = this.lease
      this.lease = null
      lease?.release()
      // The client learns of its commit only once it is durable.
      await this.engine.durable()
    }
    if (out.length) this.send(out)
    if (status !== null) this.afterReady(status)
  }

  private async replicationCommand(text: string): Promise<void> {
    const db = this.engine.db
    let cmd
    try {
      cmd = parseReplicationCommand(text)
    } catch (e) {
      return this.replicationError(toPgError(e))
    }
    if (cmd.kind !== 'START_REPLICATION') {
      const backend = backendOf(db)
      const reply = await handleReplicationQuery(text, db, {
        pid: this.processId,
        show: (name) => (name.toLowerCase() === 'wal_level' ? 'logical' : this.settings.show(name)),
        exportSnapshot: (slot) => backend.snapshots.export(this.processId, slot),
      })
      if (reply === null) {
        await this.forward(query(text), false)
        return
      }
      if (reply[0] === 0x45) return this.replicationError(null, reply)
      if (cmd.kind === 'CREATE_REPLICATION_SLOT' && cmd.temporary) this.temporarySlots.add(cmd.slot)
      if (cmd.kind === 'DROP_REPLICATION_SLOT') this.temporarySlots.delete(cmd.slot)
      await this.engine.durable()
      this.send(reply, readyForQuery('I'))
      return
    }
    this.state = 'copy-both'
    let failed = false
    const writer = {
      write: (b: Uint8Array) => {
        if (b[0] === 0x45) failed = true
        // A client that hung up while the stream started gets nothing more.
        if (this.state !== 'closed') this.conn.send(b)
      },
      drain: () => this.conn.drain?.(),
    }
    let started!: (s: ReplicationSession | null) => void
    this.streamStarted = new Promise((r) => (started = r))
    const done = handleStartReplication(text, writer, db, {
      pid: this.processId,
      durability: this.engine.durability,
      onSession: (s) => {
        this.stream = s
        // The client hung up while the stream was starting: nothing will stop it later.
        if (this.state === 'closed') s.stop()
        started(s)
      },
    })
    void done.then(
      () => started(null),
      () => started(null),
    )
    // Streaming continues in the background; client CopyData/CopyDone arrive through copyBoth().
    this.streamDone = done.then(
      () => this.afterStream(false),
      () => this.afterStream(true),
    )
    void failed
  }

  private async afterStream(error: boolean): Promise<void> {
    this.stream = null
    if (this.state === 'closed') return
    if (this.shuttingDown) {
      this.send(commandComplete('COPY 0'))
      this.state = 'closed'
      this.conn.close()
      return
    }
    this.state = 'ready'
    if (error) {
      await this.dropTemporarySlots()
      this.send(readyForQuery('I'))
    } else {
      this.send(commandComplete('START_REPLICATION'), readyForQuery('I'))
    }
  }

  private async copyBoth(m: FrontendMessage): Promise<void> {
    if (m.kind !== 'message') return this.fatal({ code: SqlState.protocolViolation, message: 'unexpected start-up packet' })
    if (m.tag === 'X') return this.message('X', m.bytes, m.body)
    // Messages pipelined behind START_REPLICATION can arrive before the stream
    // has started: they are the stream's, so wait for it.
    if (!this.stream && !(await this.streamStarted)) {
      // It failed to start: the session is ready again and takes the message there.
      await this.streamDone
      return this.handle(m)
    }
    if (m.tag === 'd') {
      try {
        this.stream?.receive(m.body)
      } catch (e) {
        this.stream?.stop()
        return this.fatal({ code: SqlState.protocolViolation, message: toPgError(e).message })
      }
      return
    }
    if (m.tag === 'c') {
      this.stream?.endCopy()
      await this.streamDone
      return
    }
    return this.fatal({ code: SqlState.protocolViolation, message: `unexpected message type 0x${m.tag.charCodeAt(0).toString(16)} during COPY from stdin` })
  }

  private async replicationError(err: PgError | null, bytes?: Uint8Array): Promise<void> {
    await this.dropTemporarySlots()
    this.send(bytes ?? errorResponse(err!), readyForQuery('I'))
  }

  private async dropTemporarySlots(): Promise<void> {
    for (const slot of this.temporarySlots) {
      await handleReplicationQuery(`DROP_REPLICATION_SLOT "${slot}"`, this.engine.db)
    }
    this.temporarySlots.clear()
  }
}

interface StartupInfo {
  roleExists: boolean
  database: string
  serverVersion: string
}

const STARTUP_SQL = `SELECT current_database(), current_setting('server_version'),
  (SELECT string_agg(rolname, chr(1)) FROM pg_catalog.pg_roles WHERE rolcanlogin)`

interface StartupCache {
  database: string
  serverVersion: string
  roles: Set<string>
}
const startupCache = new WeakMap<PGlite, StartupCache>()

/**
 * What start-up needs to know, without PGlite's transaction lock: a new
 * connection must get in while another session has a transaction open. Read
 * between transactions (replication/exclusive.ts) and cached; re-read when a
 * role is not (yet) known.
 */
async function readStartupInfo(db: PGlite, user: string): Promise<StartupInfo> {
  let info = startupCache.get(db)
  if (!info || !info.roles.has(user)) {
    const rows = info ? await readOnce(db) : await idle(db, (s) => s.query(STARTUP_SQL))
    if (rows) {
      const [database, serverVersion, roles] = rows[0]
      info = { database: database!, serverVersion: serverVersion!, roles: new Set((roles ?? '').split('\u0001')) }
      startupCache.set(db, info)
    }
  }
  return { roleExists: info!.roles.has(user), database: info!.database, serverVersion: info!.serverVersion }
}

/** One read when no transaction is open, else null (keep what is cached). */
async function readOnce(db: PGlite) {
  const sets = await readWhenIdle(db, STARTUP_SQL)
  return sets === BUSY ? null : sets[0]
}


const latin1 = new TextDecoder('latin1')

/** The query string of a Query message, or null when it is not NUL-terminated UTF-8. */
function decodableQuery(body: Uint8Array): string | null {
  try {
    return queryText(body)
  } catch {
    return null
  }
}

/** What ends a session that failed unexpectedly: a malformed message is a protocol violation. */
function sessionError(e: unknown): PgErrorFields {
  if (e instanceof ProtocolError) return { code: SqlState.protocolViolation, message: e.message }
  return toPgError(e).toFields()
}

interface Block {
  begin: Extract<TransactionStatement, { kind: 'begin' }>
  /** SET LOCAL statements, replayed when the block reaches the backend. */
  locals: string[]
  failed: boolean
  /** Set once SET TRANSACTION SNAPSHOT imported a snapshot: statements run in the group's turns. */
  group: SnapshotGroup | null
  /** A statement that reads data ran (SET TRANSACTION SNAPSHOT must come before). */
  queried: boolean
}

/**
 * SHOW wal_level says 'logical' on every connection: tabgres provides logical
 * decoding itself. SHOW of a session-only timeout (value null) shows the
 * session's own (backend/idle-timeouts.ts); while the session holds the
 * backend, SHOW goes there and says 0.
 */
type LocalStatementKind = TransactionStatement | { kind: 'show'; name: string; value: string | null }

interface LocalStatement {
  stmt: LocalStatementKind
  /** The client's Parse, replayed if the backend needs the statement later. */
  parse: Uint8Array
  inBackend: boolean
}

const SHOW_WAL_LEVEL = /^\s*show\s+wal_level\s*;?\s*$/i
const SHOW_NAME = /^\s*show\s+([a-z_]+)\s*;?\s*$/i

/** The reply holds the 55P03 of a waiting advisory lock function (capture/advisory.sql.ts). */
function isAdvisoryBusy(out: Uint8Array): boolean {
  if (!hasErrorResponse(out)) return false
  const e = firstError(out)
  return e.code === '55P03' && e.message === ADVISORY_BUSY
}

function localStatement(sql: string): LocalStatementKind | null {
  if (SHOW_WAL_LEVEL.test(sql)) return { kind: 'show', name: 'wal_level', value: 'logical' }
  const show = SHOW_NAME.exec(sql)
  if (show && isSessionOnly(show[1])) return { kind: 'show', name: show[1].toLowerCase(), value: null }
  return transactionStatement(sql)
}

function rowDescriptionOf(name: string): Uint8Array {
  return resultSet([{ name, ...TEXT_FIELD }], [], '')[0]
}
