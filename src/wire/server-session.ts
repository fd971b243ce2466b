// A PostgreSQL frontend/backend protocol 3.0 session over any transport
// (see ./session-core.ts for the layers): start-up and authentication, then
// each message's way through the layers below.
// Spec: PostgreSQL docs, "Frontend/Backend Protocol" (Message Flow) and
// "Streaming Replication Protocol".

import { PgError, SqlState, toPgError, type PgErrorFields } from '../protocol/errors'
import { isReplicationCommand } from '../engine/replication/commands'
import { authenticationOk, createAuthExchange, type AuthExchange } from './auth'
import { backendKeyData, parameterStatus, readyForQuery } from '../protocol/backend'
import { backendOf } from '../engine/backend/backend'
import { transactionStatement } from './transaction-statements'
import { type FrontendMessage } from '../protocol/frontend'
import { malformedMessage } from '../protocol/frontend-validate'
import { decodableQuery, sessions, sessionError } from './session-core'
import { COPY_FROM_STDIN } from './copy-in'
import { WalsenderConnection } from './walsender-connection'
import { readStartupInfo, type StartupInfo } from './startup-info'

export type { Connection, EngineResolver, ServerOptions, WireEngine } from './session-core'

export class ServerSession extends WalsenderConnection {
  protected auth: AuthExchange | null = null
  protected startupInfo: StartupInfo & { applicationName: string } = { roleExists: true, database: '', serverVersion: '', applicationName: '' }
  /** The start-up packet's parameters: its settings are applied once the client is authenticated. */
  private startupParams: Record<string, string> = {}

  protected async startup(m: FrontendMessage): Promise<void> {
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
    this.startupParams = p
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
  protected connectionLimitError(): PgErrorFields | null {
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

  protected async authenticate(m: FrontendMessage): Promise<void> {
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

  protected async ready(): Promise<void> {
    const i = this.startupInfo
    // The start-up packet's settings, as PostgreSQL applies them once the
    // client is authenticated (an unknown name or a bad value is FATAL).
    let settings: [string, string][]
    try {
      settings = startupSettings(this.startupParams)
      for (const [name, value] of settings) this.settings.set(name, value)
    } catch (e) {
      return this.fatal(toPgError(e))
    }
    const set = new Set(settings.map(([n]) => n.toLowerCase()))
    const reported = (name: string, fallback: string) => (set.has(name.toLowerCase()) ? this.settings.show(name) : fallback)
    const params: [string, string][] = [
      ['application_name', i.applicationName],
      ['client_encoding', 'UTF8'],
      ['DateStyle', reported('DateStyle', 'ISO, MDY')],
      ['default_transaction_read_only', 'off'],
      ['in_hot_standby', 'off'],
      ['integer_datetimes', 'on'],
      ['IntervalStyle', reported('IntervalStyle', 'postgres')],
      ['is_superuser', 'on'],
      ['scram_iterations', '4096'],
      ['server_encoding', 'UTF8'],
      ['server_version', i.serverVersion],
      ['session_authorization', this.user],
      ['standard_conforming_strings', 'on'],
      ['TimeZone', reported('TimeZone', 'UTC')],
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

  protected async message(tag: string, bytes: Uint8Array, body: Uint8Array): Promise<void> {
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
}

/** Start-up parameters that are not settings (or are answered elsewhere). */
const NOT_SETTINGS = new Set(['user', 'database', 'replication', 'options', 'application_name', 'client_encoding'])

/**
 * The settings a start-up packet carries, in the order PostgreSQL applies
 * them: the `options` parameter's switches (-c name=value, -cname=value,
 * --name=value; a backslash escapes the next character, so a value may hold
 * spaces), then every other parameter, which wins.
 */
export function startupSettings(params: Record<string, string>): [string, string][] {
  const out: [string, string][] = []
  const tokens: string[] = []
  let cur: string | null = null
  const text = params.options ?? ''
  for (let i = 0; i < text.length; i++) {
    const c = text[i]
    if (c === '\\' && i + 1 < text.length) cur = (cur ?? '') + text[++i]
    else if (/\s/.test(c)) {
      if (cur !== null) tokens.push(cur)
      cur = null
    } else cur = (cur ?? '') + c
  }
  if (cur !== null) tokens.push(cur)
  const setting = (arg: string) => {
    const eq = arg.indexOf('=')
    if (eq <= 0) throw new PgError({ code: SqlState.syntaxError, message: `-c ${arg} requires a value` })
    out.push([arg.slice(0, eq).replace(/-/g, '_'), arg.slice(eq + 1)])
  }
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]
    if (t === '-c') {
      if (i + 1 >= tokens.length) throw new PgError({ code: SqlState.syntaxError, message: 'invalid command-line argument for server process: -c' })
      setting(tokens[++i])
    } else if (t.startsWith('-c')) setting(t.slice(2))
    else if (t.startsWith('--')) setting(t.slice(2))
    else throw new PgError({ code: SqlState.syntaxError, message: `invalid command-line argument for server process: ${t}`, hint: 'Try "postgres --help" for more information.' })
  }
  // _pq_.* names are protocol options, not settings (PostgreSQL answers unknown ones with NegotiateProtocolVersion).
  for (const [name, value] of Object.entries(params)) if (!NOT_SETTINGS.has(name) && !name.startsWith('_pq_.')) out.push([name, value])
  return out
}
