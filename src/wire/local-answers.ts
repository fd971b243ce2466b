// The third layer of a wire session (see ./session-core.ts): what a session
// answers without the shared backend. PostgreSQL clients open transaction
// blocks early and hold them (postgres.js's begin(), zero-cache's pools:
// BEGIN, SET LOCAL ..., SET TRANSACTION SNAPSHOT, then a keepalive every few
// seconds), so the session keeps BEGIN and the settings that follow it to
// itself until a statement needs data (./transaction-statements.ts
// recognizes them), in the simple and the extended protocol; a statement it
// prepared that the backend needs later is replayed there first.

import { ByteReader } from '../protocol/bytes'
import { PgError, toPgError } from '../protocol/errors'
import { bindComplete, closeComplete, commandComplete, errorResponse, noData, parameterDescription, parseComplete, readyForQuery, resultSet, TEXT_FIELD } from '../protocol/backend'
import { backendOf } from '../engine/backend/backend'
import { isSessionOnly } from '../engine/backend/idle-timeouts'
import { transactionStatement, type TransactionStatement } from './transaction-statements'
import { BackendTurns } from './backend-turns'

export abstract class LocalAnswers extends BackendTurns {
  /** Statements this session keeps to itself (transaction control), by client name. */
  protected readonly localStatements = new Map<string, LocalStatement>()
  /** Portals bound to such statements. */
  protected readonly localPortals = new Map<string, { statement: string; bind: Uint8Array }>()

  /**
   * Transaction control and settings the session answers without the backend
   * while it does not hold it (transaction-statements.ts): true when answered.
   */
  protected async answerLocally(tag: string, body: Uint8Array, text: string | null): Promise<boolean> {
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
  protected messageBytes(tag: string, body: Uint8Array): Uint8Array {
    const out = new Uint8Array(body.length + 5)
    out[0] = tag.charCodeAt(0)
    new DataView(out.buffer).setInt32(1, body.length + 4)
    out.set(body, 5)
    return out
  }

  /** Savepoints need the backend, except in an importing transaction (which reads only). */
  protected locallyAnswerable(stmt: LocalStatementKind): boolean {
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
  protected async runLocal(stmt: LocalStatementKind, extended = false): Promise<{ out: Uint8Array[]; error?: PgError }> {
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

  /**
   * The backend has not seen a statement or portal that the session answered
   * itself: it gets their Parse (and Bind) now, before a message using them.
   */
  protected async materialize(tag: string, body: Uint8Array): Promise<void> {
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
  protected pendingMaterial(
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
  protected noteMaterial(tag: string, body: Uint8Array): void {
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

export function localStatement(sql: string): LocalStatementKind | null {
  if (SHOW_WAL_LEVEL.test(sql)) return { kind: 'show', name: 'wal_level', value: 'logical' }
  const show = SHOW_NAME.exec(sql)
  if (show && isSessionOnly(show[1])) return { kind: 'show', name: show[1].toLowerCase(), value: null }
  return transactionStatement(sql)
}

function rowDescriptionOf(name: string): Uint8Array {
  return resultSet([{ name, ...TEXT_FIELD }], [], '')[0]
}
