// The second layer of a wire session (see ./session-core.ts): every session
// shares PGlite's one backend. A session holds it (a lease from the arbiter,
// bounded as a lock wait) from its first message that needs it until a
// ReadyForQuery says idle: a transaction block, or an extended-query
// sequence up to its Sync, runs with nothing interleaved, and no session
// sees another's uncommitted rows. A session that disconnects inside a
// transaction is rolled back. Prepared statement and portal names are per
// session (./statement-names.ts).

import { ProtocolError } from '../protocol/bytes'
import { PgError, toPgError } from '../protocol/errors'
import { handleReplicationQuery } from './walsender'
import { execRaw, run } from '../engine/replication/exclusive'
import { concatBytes, errorResponse, readyForQuery, TransactionStatus } from '../protocol/backend'
import { firstError, hasErrorResponse, lastReadyStatus } from '../protocol/backend-decode'
import { backendOf } from '../engine/backend/backend'
import { cancelError, type Lease, type WaitBounds } from '../engine/backend/arbiter'
import type { SnapshotGroup } from '../engine/backend/snapshots'
import { transactionStatement, type TransactionStatement } from './transaction-statements'
import { FrontendTag, query, SYNC } from '../protocol/frontend'
import { StatementNames } from './statement-names'
import { malformedMessage } from '../protocol/frontend-validate'
import { filterBackendOutput } from './backend-filter'
import { ADVISORY_BUSY } from '../engine/capture/names'
import { signalCommit } from '../engine/replication/notifier'
import { SessionCore, latin1, decodableQuery } from './session-core'

export abstract class BackendTurns extends SessionCore {
  /** The shared backend, held from a statement that needs it until ReadyForQuery says idle. */
  protected lease: Lease | null = null
  /** A transaction block the backend has not seen yet, or one reading an imported snapshot. */
  protected block: Block | null = null
  /** Aborts the current wait for the backend (cancel, hang-up, termination). */
  protected waitAbort: AbortController | null = null
  /** Ends the member turn of a snapshot-importing transaction. */
  protected memberTurnEnd: (() => void) | null = null

  /** A statement answered here failed inside an extended-query sequence: discard up to Sync. */
  protected discarding = false
  protected readonly names = new StatementNames(`_tg${this.processId}_`)
  /** Temporary slots this connection created: any ERROR drops them, as PostgreSQL does. */
  protected readonly temporarySlots = new Set<string>()
  /** Extended-query messages went to the backend since its last ReadyForQuery. */
  protected extendedOpen = false
  /** An extended-query message failed: the backend ignores all but Sync. */
  protected awaitingSync = false
  /** What must reach the backend before this message (a statement the session answered itself), or null. */
  protected abstract pendingMaterial(tag: string, body: Uint8Array): unknown
  /** The session's bookkeeping of statements it answers itself, for a Parse or Close going to the backend. */
  protected abstract noteMaterial(tag: string, body: Uint8Array): void

  cancel(): void {
    this.waitAbort?.abort(cancelError())
  }

  protected interrupt(reason: PgError): void {
    this.waitAbort?.abort(reason)
    this.clearIdleTimer()
    if (this.txTimer) clearTimeout(this.txTimer)
  }

  protected async cleanup(): Promise<void> {
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

  /**
   * An extended-query message about to go to the backend, joined by the
   * messages received right behind it up to Sync (Bind, Execute, Sync...):
   * one call into PGlite for the run instead of one per message, each
   * message still handled as message() would (names rewritten, logged).
   * A message that needs more than that (a statement the session answered
   * itself, an unusual one) ends the run and is handled on its own.
   */
  protected withFollowers(tag: string, first: Uint8Array): Uint8Array {
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
  protected async waitForAdvisoryRelease(): Promise<boolean> {
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
  protected localStatus(): 'I' | 'T' | 'E' {
    return this.block ? (this.block.failed ? 'E' : 'T') : 'I'
  }

  /**
   * Takes the backend for a statement (or the group's turn for an importing
   * transaction). A wait that ends (lock_timeout, statement_timeout, cancel)
   * answers the statement with its error, as PostgreSQL answers a lock wait;
   * returns false then.
   */
  protected async takeBackend(tag: string): Promise<boolean> {
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
  protected waitBounds(signal: AbortSignal): WaitBounds {
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
  protected async guardTimeouts(status: string): Promise<string> {
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
  protected localError(e: PgError, tag: string): void {
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
  protected controls(requests: string[]): void {
    if (!requests.length) return
    const backend = backendOf(this.engine.db)
    for (const r of requests) {
      const { createdTemporary } = backend.control(r, this.processId)
      if (createdTemporary) this.temporarySlots.add(createdTemporary)
    }
  }

  /** Runs a message in the backend whose reply the client must not see (it got its own). */
  protected async silently(bytes: Uint8Array): Promise<void> {
    const db = this.engine.db
    const out = await db.runExclusive(() => execRaw(db, bytes))
    const filtered = filterBackendOutput(out)
    if (filtered.commits.length) signalCommit(db, filtered.commits)
    this.controls(filtered.controls)
    if (hasErrorResponse(filtered.bytes)) throw new PgError(firstError(filtered.bytes))
  }

  /** The transaction block ended without the backend (or its importing transaction ended). */
  protected endBlock(): void {
    const b = this.block
    this.block = null
    this.settings.endTransaction()
    if (b?.group) backendOf(this.engine.db).snapshots.leave(b.group)
  }

  protected endMemberTurn(): void {
    const end = this.memberTurnEnd
    this.memberTurnEnd = null
    if (end && this.block?.group) backendOf(this.engine.db).advisory.setHolder(this.block.group.lease.pid)
    end?.()
  }

  /**
   * Statement and portal names made per session. A message whose names do not
   * even parse goes to PGlite unchanged: its backend fails on the same field
   * with PostgreSQL's error (08P01 or 22021), before any name is used.
   */
  protected rewriteNames(tag: string, body: Uint8Array): Uint8Array | null {
    try {
      return this.names.rewrite(tag, body)
    } catch (e) {
      if (e instanceof ProtocolError) return null
      throw e
    }
  }

  /**
   * Run one message in PGlite, holding the database until it is idle again.
   * True (nothing sent) when it was a simple Query outside a transaction
   * block that a waiting advisory lock function ended: the caller waits and
   * runs it again.
   */
  protected async forward(bytes: Uint8Array, retryable = true): Promise<boolean> {
    const db = this.engine.db
    this.settings.noteSent(latin1.decode(bytes.subarray(5)))
    const before = bytes[0] === FrontendTag.Query ? await this.endExtended() : null
    if ('PBDECH'.includes(String.fromCharCode(bytes[0]))) this.extendedOpen = true
    if (bytes[0] === FrontendTag.Query && !this.memberTurnEnd) this.noteLocal(bytes)
    let out: Uint8Array
    try {
      out = await db.runExclusive(() => execRaw(db, bytes))
    } catch (e) {
      // PGlite itself failed (not an SQL error, which comes back as ErrorResponse).
      out = concatBytes([errorResponse(toPgError(e)), readyForQuery(db.isInTransaction() ? 'E' : 'I')])
    }
    if (retryable && bytes[0] === FrontendTag.Query && !before && !this.memberTurnEnd && lastReadyStatus(out) === 'I' && isAdvisoryBusy(out)) {
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
  protected noteLocal(bytes: Uint8Array): void {
    const text = decodableQuery(bytes.subarray(5))
    const stmt = text === null ? null : transactionStatement(text)
    if (stmt?.kind !== 'set-local') return
    try {
      this.settings.setLocal(stmt.name, stmt.value)
    } catch {
      // The backend reports the error itself.
    }
  }

  /**
   * A simple Query in the middle of an extended-query sequence: PostgreSQL
   * runs it in that sequence's implicit transaction and commits both, but
   * PGlite loses track (its ReadyForQuery says 'T', the insert is lost and
   * the next statement fails with XX000 "unexpected state STARTED"). A Sync
   * first does what PostgreSQL does; its ReadyForQuery is dropped, as the
   * client never asked for it. Returns what the Sync produced.
   */
  protected async endExtended(): Promise<Uint8Array | null> {
    if (!this.extendedOpen || this.awaitingSync) return null
    this.extendedOpen = false
    const db = this.engine.db
    const out = await db.runExclusive(() => execRaw(db, SYNC))
    return out.subarray(0, out.length - 6) // its ReadyForQuery is last
  }

  /** Send a backend reply; let go of the database once it says idle. */
  protected async afterRun(out: Uint8Array): Promise<void> {
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
      out[out.length - 1] = b.failed ? TransactionStatus.Failed : TransactionStatus.InTransaction
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
}

export interface Block {
  begin: Extract<TransactionStatement, { kind: 'begin' }>
  /** SET LOCAL statements, replayed when the block reaches the backend. */
  locals: string[]
  failed: boolean
  /** Set once SET TRANSACTION SNAPSHOT imported a snapshot: statements run in the group's turns. */
  group: SnapshotGroup | null
  /** A statement that reads data ran (SET TRANSACTION SNAPSHOT must come before). */
  queried: boolean
}

/** The reply holds the 55P03 of a waiting advisory lock function (capture/advisory.sql). */
function isAdvisoryBusy(out: Uint8Array): boolean {
  if (!hasErrorResponse(out)) return false
  const e = firstError(out)
  return e.code === '55P03' && e.message === ADVISORY_BUSY
}
