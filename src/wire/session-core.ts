// One frontend/backend protocol 3.0 connection, transport-agnostic: bytes in
// through receive(), bytes out through Connection.send. A TCP socket (Node),
// a MessagePort (the tab) or a test carries them.
// Spec: PostgreSQL docs, "Frontend/Backend Protocol" (Message Flow).
//
// A session is built in layers, one job each, this one at the bottom:
//   session-core.ts      the connection: messages in order, replies, errors, the end, idle timers
//   backend-turns.ts     taking the shared backend, running messages in it, letting it go
//   local-answers.ts     what the session answers without the backend (transaction control)
//   copy-in.ts           COPY FROM STDIN
//   walsender-connection.ts  replication commands and streaming
//   server-session.ts    start-up, authentication, and each message's way through the rest

import type { PGlite } from '@electric-sql/pglite'
import { ByteReader, ProtocolError } from '../protocol/bytes'
import { PgError, SqlState, toPgError, type PgErrorFields } from '../protocol/errors'
import type { DurabilityGate } from '../engine/replication/session'
import { type AuthMethod } from './auth'
import { BackendTag, concatBytes, errorResponse } from '../protocol/backend'
import { decodeBackendMessages } from '../protocol/backend-decode'
import { backendOf, type Backend } from '../engine/backend/backend'
import { FrontendReader, queryText, type FrontendMessage } from '../protocol/frontend'
import { SessionSettings } from './session-settings'

export interface WireEngine {
  db: PGlite
  /** Make committed writes durable (group commit); resolves at once where nothing needs flushing. */
  durable(): Promise<void>
  /** As durable(), without waiting for another session's open transaction (walsender commands); durable() where not given. */
  durableNow?(): Promise<void>
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

let nextProcessId = 1000
/** Live sessions of this process by process ID (CancelRequest, connection limits). */
export const sessions = new Map<number, SessionCore>()

export abstract class SessionCore {
  protected readonly reader = new FrontendReader()
  protected state: State = 'startup'
  protected work: Promise<void> = Promise.resolve()
  protected user = ''
  /** A replication connection (`replication=database`). */
  replication = false
  protected readonly processId = nextProcessId++
  readonly secretKey = (Math.random() * 0x7fffffff) | 0
  protected settingsOf: SessionSettings | null = null
  /** This session's run-time parameters (./session-settings.ts); the database is known from start-up on. */
  protected get settings(): SessionSettings {
    return (this.settingsOf ??= new SessionSettings(this.engine.db))
  }

  /** Settles when the session has ended and released everything. */
  readonly closed: Promise<void>

  protected resolveClosed!: () => void

  /** The database this session connected to (chosen by the start-up packet when the server has several). */
  protected engine: WireEngine
  protected resolve: EngineResolver | null = null
  /** Messages received and not yet handled, in order (message() may take a run of them at once). */
  protected readonly inbox: FrontendMessage[] = []
  protected draining = false

  constructor(
    engines: WireEngine | EngineResolver,
    protected readonly conn: Connection,
    protected readonly options: ServerOptions = {},
  ) {
    this.closed = new Promise((r) => (this.resolveClosed = r))
    if (typeof engines === 'function') {
      this.resolve = engines
      this.engine = null as unknown as WireEngine
    } else this.engine = engines
  }

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

  protected async drain(): Promise<void> {
    try {
      for (let m = this.inbox.shift(); m; m = this.inbox.shift()) await this.handle(m)
    } finally {
      this.draining = false
    }
  }

  /** The transport closed: roll back, stop streaming, release. */
  async end(): Promise<void> {
    if (this.state !== 'closed') this.state = 'closed'
    this.interrupt(new PgError({ code: '08006', message: 'the client went away' }))
    sessions.delete(this.processId)
    await this.work.catch(() => {})
    await this.settle()
    await this.cleanup()
  }

  /** pg_terminate_backend, or a timeout that ends the session: FATAL, then the session ends. */
  terminate(e: PgErrorFields): void {
    this.interrupt(new PgError(e))
    this.fatal(e)
  }

  /** CancelRequest (or pg_cancel_backend). */
  abstract cancel(): void

  /** Stop what the session is doing (a wait, a stream, its timers): it is ending with `reason`. */
  protected interrupt(_reason: PgError): void {}

  /** After the message queue: wait for what still runs (a stream). */
  protected async settle(): Promise<void> {}

  /** Release everything the session holds; resolves `closed`. */
  protected abstract cleanup(): Promise<void>

  protected abstract startup(m: FrontendMessage): Promise<void>
  protected abstract authenticate(m: FrontendMessage): Promise<void>
  protected abstract copyBoth(m: FrontendMessage): Promise<void>
  protected abstract copyIn(m: FrontendMessage): Promise<void>
  protected abstract message(tag: string, bytes: Uint8Array, body: Uint8Array): Promise<void>

  protected logStatement(tag: string, body: Uint8Array, text: string | null): void {
    const log = this.options.log!
    if (tag === 'Q') log(`[${this.processId}] statement: ${text ?? '(not UTF-8)'}`)
    else if (tag === 'P') {
      const r = new ByteReader(body)
      const name = r.cstring()
      log(`[${this.processId}] parse ${name || '<unnamed>'}: ${r.cstring()}`)
    }
  }

  protected send(...parts: Uint8Array[]): void {
    if (this.state !== 'closed' || parts.length) {
      const bytes = parts.length === 1 ? parts[0] : concatBytes(parts)
      if (this.options.log) this.logErrors(bytes)
      this.conn.send(bytes)
    }
  }

  protected logErrors(bytes: Uint8Array): void {
    if (!bytes.includes(BackendTag.ErrorResponse)) return
    try {
      for (const m of decodeBackendMessages(bytes)) {
        if (m.tag === 'E') this.options.log!(`[${this.processId}] ${m.fields.severity ?? 'ERROR'} ${m.fields.code}: ${m.fields.message}`)
      }
    } catch {
      // A partial reply (a stream's CopyData): nothing to log.
    }
  }

  protected fatal(e: PgErrorFields): void {
    if (this.state === 'closed') return
    this.options.log?.(`[${this.processId}] FATAL ${e.code}: ${e.message}`)
    this.conn.send(errorResponse({ ...e, message: e.message, severity: 'FATAL' }))
    this.state = 'closed'
    this.conn.close()
    void this.end()
  }

  protected backendOrNull(): Backend | null {
    try {
      return backendOf(this.engine.db)
    } catch {
      return null
    }
  }

  protected async handle(m: FrontendMessage): Promise<void> {
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

  // ---- idle timers (a session's own: the backend never has them)

  protected idleTimer: ReturnType<typeof setTimeout> | null = null
  /** transaction_timeout of the transaction in progress. */
  protected txTimer: ReturnType<typeof setTimeout> | null = null

  /**
   * After a ReadyForQuery, the session's idle timeouts start as PostgreSQL's
   * do when its backend waits for the client: idle_in_transaction_session_timeout
   * inside a transaction (FATAL 25P03), idle_session_timeout outside one
   * (57P05). transaction_timeout (25P04) runs from the first ReadyForQuery
   * of a transaction to its end. The backend never has them (backend/idle-timeouts.ts).
   */
  protected afterReady(status: string): void {
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
  protected timeout(ms: number, code: string, message: string): ReturnType<typeof setTimeout> {
    return setTimeout(() => {
      this.work = this.work.then(() => this.terminate({ code, message }))
    }, ms)
  }

  protected clearIdleTimer(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer)
    this.idleTimer = null
  }
}

export const latin1 = new TextDecoder('latin1')

/** The query string of a Query message, or null when it is not NUL-terminated UTF-8. */
export function decodableQuery(body: Uint8Array): string | null {
  try {
    return queryText(body)
  } catch {
    return null
  }
}

/** What ends a session that failed unexpectedly: a malformed message is a protocol violation. */
export function sessionError(e: unknown): PgErrorFields {
  if (e instanceof ProtocolError) return { code: SqlState.protocolViolation, message: e.message }
  return toPgError(e).toFields()
}
