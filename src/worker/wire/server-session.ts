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
import { ProtocolError } from '../../shared/bytes'
import { PgError, SqlState, toPgError, type PgErrorFields } from '../../shared/errors'
import { handleReplicationQuery, handleStartReplication, type ReplicationSession } from '../replication/handler'
import { isReplicationCommand, parseReplicationCommand } from '../replication/commands'
import type { DurabilityGate } from '../replication/session'
import { BUSY, idle, literal, readWhenIdle, run } from '../replication/exclusive'
import { authenticationOk, createAuthExchange, type AuthExchange, type AuthMethod } from './auth'
import { backendKeyData, commandComplete, concatBytes, errorResponse, parameterStatus, readyForQuery } from './backend'
import { FrontendReader, PROTOCOL_3_0, queryText, type FrontendMessage } from './frontend'
import { StatementNames } from './statement-names'
import { malformedMessage } from './frontend-validate'
import { filterBackendOutput } from './backend-filter'
import { signalCommit } from '../replication/notifier'
import { ENGINE_SESSION_SQL } from '../replication/change-tracker'

export interface WireEngine {
  db: PGlite
  /** Make committed writes durable (group commit); resolves at once where nothing needs flushing. */
  durable(): Promise<void>
  /** Streams carry only durable commits when given. */
  durability?: DurabilityGate
}

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
}

type State = 'startup' | 'auth' | 'ready' | 'copy-in' | 'copy-both' | 'closed'

/**
 * COPY ... FROM STDIN. PGlite's backend cannot read COPY data from the raw
 * protocol (it exits), so the session collects the client's CopyData itself
 * and runs the COPY from PGlite's /dev/blob device.
 */
const COPY_FROM_STDIN = /^\s*copy\s+([\s\S]+?)\s+from\s+stdin\b([^;]*);?\s*$/i

let nextProcessId = 1000

const utf8 = new TextEncoder()

export class ServerSession {
  private readonly reader = new FrontendReader()
  private state: State = 'startup'
  private work: Promise<void> = Promise.resolve()
  private auth: AuthExchange | null = null
  private user = ''
  private replication = false
  private release: (() => void) | null = null
  private readonly processId = nextProcessId++
  private readonly names = new StatementNames(`_tg${this.processId}_`)
  private stream: ReplicationSession | null = null
  /** Settles with the stream once START_REPLICATION has started it, or null when it failed. */
  private streamStarted: Promise<ReplicationSession | null> = Promise.resolve(null)
  private streamDone: Promise<void> | null = null
  /** Temporary slots this connection created: any ERROR drops them, as PostgreSQL does. */
  private readonly temporarySlots = new Set<string>()
  /** Settles when the session has ended and released everything. */
  readonly closed: Promise<void>
  private resolveClosed!: () => void

  constructor(
    private readonly engine: WireEngine,
    private readonly conn: Connection,
    private readonly options: ServerOptions = {},
  ) {
    this.closed = new Promise((r) => (this.resolveClosed = r))
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
    for (const m of messages) {
      this.work = this.work.then(() => this.handle(m)).catch((e) => this.fatal(sessionError(e)))
    }
  }

  /** The transport closed: roll back, stop streaming, release. */
  async end(): Promise<void> {
    if (this.state !== 'closed') this.state = 'closed'
    this.stream?.stop()
    await this.work.catch(() => {})
    await this.streamDone?.catch(() => {})
    await this.cleanup()
  }

  private send(...parts: Uint8Array[]): void {
    if (this.state !== 'closed' || parts.length) this.conn.send(parts.length === 1 ? parts[0] : concatBytes(parts))
  }

  private fatal(e: PgErrorFields): void {
    if (this.state === 'closed') return
    this.conn.send(errorResponse({ ...e, severity: 'FATAL' }))
    this.state = 'closed'
    this.conn.close()
    void this.end()
  }

  private async cleanup(): Promise<void> {
    const db = this.engine.db
    try {
      if (!db.closed) {
        const closes = this.names.closeAll()
        if (this.release) {
          // Disconnected inside a transaction block: it is rolled back. The Sync
          // first ends an extended-query sequence that failed without one: the
          // backend would otherwise ignore everything, ROLLBACK and the
          // engine's own queries included, until a Sync.
          await db.runExclusive(() => db.execProtocolRaw(concatBytes([SYNC, query('ROLLBACK')]), { syncToFs: false }))
          if (this.dirty) await db.runExclusive(() => runSql(db, `RESET ALL; ${ENGINE_SESSION_SQL}`))
        }
        if (closes.length) {
          if (!this.release) this.release = await acquire(db)
          await db.runExclusive(() => db.execProtocolRaw(concatBytes(closes), { syncToFs: false }))
        }
        for (const slot of this.temporarySlots) {
          await handleReplicationQuery(`DROP_REPLICATION_SLOT "${slot}"`, db, { mode: 'postgres' })
        }
      }
    } catch {
      // The database closed under us: nothing left to release in it.
    } finally {
      this.release?.()
      this.release = null
      this.resolveClosed()
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
      // Cancel requests are not supported: PostgreSQL closes such a connection silently.
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
    const db = this.engine.db
    const info = await readStartupInfo(db, this.user)
    if (!info.roleExists) return this.fatal({ code: '28000', message: `role "${this.user}" does not exist` })
    const database = p.database ?? this.user
    if (database !== info.database) return this.fatal({ code: '3D000', message: `database "${database}" does not exist` })
    this.startupInfo = { ...info, applicationName: p.application_name ?? '' }
    const method = this.options.auth ?? (this.options.password !== undefined ? 'scram-sha-256' : 'trust')
    if (method === 'trust') return this.ready()
    this.auth = createAuthExchange(method, this.user, this.options.password ?? '')
    this.state = 'auth'
    this.conn.send(await this.auth.begin())
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
    this.state = 'ready'
    this.send(
      authenticationOk(),
      ...params.map(([k, v]) => parameterStatus(k, v)),
      backendKeyData(this.processId, (Math.random() * 0x7fffffff) | 0),
      readyForQuery('I'),
    )
  }

  private async message(tag: string, bytes: Uint8Array, body: Uint8Array): Promise<void> {
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
    if (this.replication && text !== null && !this.release) {
      if (isReplicationCommand(text)) return this.replicationCommand(text)
    }
    if (this.replication && tag !== 'Q') {
      // A walsender takes only simple queries.
      return this.fatal({ code: SqlState.protocolViolation, message: 'extended query protocol not supported in a replication connection' })
    }
    // After an extended-query error the backend ignores everything up to Sync,
    // a COPY included: it goes to PGlite to be ignored, not started here.
    if (text !== null && !this.awaitingSync) {
      const copy = COPY_FROM_STDIN.exec(text)
      if (copy) return this.beginCopyIn(copy[1], copy[2])
    }
    await this.forward(this.rewriteNames(tag, body) ?? bytes)
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
    const db = this.engine.db
    if (!this.release) {
      this.release = await acquire(db)
      await this.restoreSettings()
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
        return await db.execProtocolRaw(query(sql), { syncToFs: false })
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
    if (inBlock) await db.runExclusive(() => db.execProtocolRaw(query('SELECT 1/0'), { syncToFs: false }))
    await this.afterRun(concatBytes([error, readyForQuery(inBlock ? 'E' : 'I')]))
  }

  /** Run one message in PGlite, holding the database until it is idle again. */
  private async forward(bytes: Uint8Array): Promise<void> {
    const db = this.engine.db
    if (!this.release) {
      this.release = await acquire(db)
      await this.restoreSettings()
    }
    if (!this.dirty && SETTING_WORDS.test(latin1.decode(bytes.subarray(5)))) this.dirty = true
    const before = bytes[0] === 0x51 ? await this.endExtended() : null
    if ('PBDECH'.includes(String.fromCharCode(bytes[0]))) this.extendedOpen = true
    let out: Uint8Array
    try {
      out = await db.runExclusive(() => db.execProtocolRaw(bytes, { syncToFs: false }))
    } catch (e) {
      // PGlite itself failed (not an SQL error, which comes back as ErrorResponse).
      out = concatBytes([errorResponse(toPgError(e)), readyForQuery(db.isInTransaction() ? 'E' : 'I')])
    }
    await this.afterRun(before ? concatBytes([before, out]) : out)
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
    const out = await db.runExclusive(() => db.execProtocolRaw(SYNC, { syncToFs: false }))
    return out.subarray(0, out.length - 6) // its ReadyForQuery is last
  }

  /** Send a backend reply; let go of the database once it says idle. */
  private async afterRun(out: Uint8Array): Promise<void> {
    const db = this.engine.db
    const filtered = filterBackendOutput(out)
    out = filtered.bytes
    if (filtered.commits.length) signalCommit(db, filtered.commits)
    const status = lastReadyStatus(out)
    if (status !== null) this.awaitingSync = this.extendedOpen = false
    else if (hasErrorResponse(out)) this.awaitingSync = true
    if (status === 'I') {
      await this.saveSettings()
      const release = this.release
      this.release = null
      release?.()
      // The client learns of its commit only once it is durable.
      await this.engine.durable()
    }
    if (out.length) this.send(out)
  }

  /*
   * Session settings (SET, set_config) live in PGlite's one backend, so one
   * client's `SET search_path = ''` (pg_recvlogical and pg_dump send it)
   * would change every other client's, and the worker's own queries. A
   * session that may have changed settings saves them and RESETs the backend
   * (to the database's defaults) before it lets go, and puts them back when
   * it next takes the database.
   */
  private settings: [string, string][] = []
  private dirty = false

  private async restoreSettings(): Promise<void> {
    if (this.settings.length === 0) return
    const db = this.engine.db
    const sql = this.settings.map(([n, v]) => `SELECT pg_catalog.set_config(${literal(n)}, ${literal(v)}, false);`).join('')
    await db.runExclusive(() => runSql(db, sql))
    this.dirty = true
  }

  private async saveSettings(): Promise<void> {
    if (!this.dirty) return
    const db = this.engine.db
    await db.runExclusive(async () => {
      const rows = await runSql(db, `SELECT name, setting FROM pg_catalog.pg_settings WHERE source = 'session'`)
      this.settings = rows.map(([n, v]) => [n!, v!])
      await runSql(db, `RESET ALL; ${ENGINE_SESSION_SQL}`)
    })
    this.dirty = false
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
      const reply = await handleReplicationQuery(text, db, { mode: 'postgres' })
      if (reply === null) return this.forward(query(text))
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
      mode: 'postgres',
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
      await handleReplicationQuery(`DROP_REPLICATION_SLOT "${slot}"`, this.engine.db, { mode: 'postgres' })
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

async function runSql(db: PGlite, sql: string) {
  const r = await run(db, sql, false)
  return r.sets.at(-1) ?? []
}

/** Statements that may change session settings (SET, RESET, set_config(), ...). */
const SETTING_WORDS = /\b(set|reset|set_config|discard)\b/i
const latin1 = new TextDecoder('latin1')

/** PGlite's transaction lock, held until the returned release is called. */
function acquire(db: PGlite): Promise<() => void> {
  return new Promise((resolve) => {
    void db._runExclusiveTransaction(() => new Promise<void>((release) => resolve(release)))
  })
}

const SYNC = new Uint8Array([0x53, 0, 0, 0, 4])

/** A simple Query message. */
function query(sql: string): Uint8Array {
  const text = utf8.encode(sql)
  const out = new Uint8Array(text.length + 6)
  out[0] = 0x51
  new DataView(out.buffer).setInt32(1, text.length + 5)
  out.set(text, 5)
  return out
}

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

/** True when a backend byte stream carries an ErrorResponse. */
function hasErrorResponse(out: Uint8Array): boolean {
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength)
  for (let off = 0; off + 5 <= out.length; off += 1 + view.getInt32(off + 1)) {
    if (out[off] === 0x45) return true
  }
  return false
}

/** The status of the last ReadyForQuery in a backend byte stream, or null. */
export function lastReadyStatus(out: Uint8Array): string | null {
  let status: string | null = null
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength)
  for (let off = 0; off + 5 <= out.length; ) {
    const len = view.getInt32(off + 1)
    if (out[off] === 0x5a && len === 5) status = String.fromCharCode(out[off + 5])
    off += 1 + len
  }
  return status
}
