// The fifth layer of a wire session (see ./session-core.ts): a
// `replication=database` connection takes replication commands through
// simple Query, answered from the engine's state without the backend
// (./walsender.ts turns the engine's results into messages), and streams in
// CopyBoth. Spec: PostgreSQL docs, "Streaming Replication Protocol".

import { outputStyle } from '../engine/replication/output-style'
import { PgError, SqlState, toPgError } from '../protocol/errors'
import { handleReplicationQuery, handleStartReplication } from './walsender'
import { type ReplicationSession } from '../engine/replication/session'
import { parseReplicationCommand } from '../engine/replication/commands'
import { BackendTag, commandComplete, errorResponse, readyForQuery } from '../protocol/backend'
import { backendOf } from '../engine/backend/backend'
import { transactionStatement } from './transaction-statements'
import { query, type FrontendMessage } from '../protocol/frontend'
import { CopyInSession } from './copy-in'

export abstract class WalsenderConnection extends CopyInSession {
  protected stream: ReplicationSession | null = null
  /** shutdown() is finishing the stream: its end ends the session. */
  protected shuttingDown = false
  /** Settles with the stream once START_REPLICATION has started it, or null when it failed. */
  protected streamStarted: Promise<ReplicationSession | null> = Promise.resolve(null)
  protected streamDone: Promise<void> | null = null

  protected interrupt(reason: PgError): void {
    this.stream?.stop()
    super.interrupt(reason)
  }

  protected async settle(): Promise<void> {
    await this.streamDone?.catch(() => {})
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

  /** SET, RESET on a replication connection: as on any other, never waiting. True when answered. */
  protected walsenderSetting(text: string): boolean {
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

  protected async replicationCommand(text: string): Promise<void> {
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
      if (reply[0] === BackendTag.ErrorResponse) return this.replicationError(null, reply)
      if (cmd.kind === 'CREATE_REPLICATION_SLOT' && cmd.temporary) this.temporarySlots.add(cmd.slot)
      if (cmd.kind === 'DROP_REPLICATION_SLOT') this.temporarySlots.delete(cmd.slot)
      // A slot is durable before its command returns, as in PostgreSQL, even while another session's transaction is open.
      await (this.engine.durableNow ? this.engine.durableNow() : this.engine.durable())
      this.send(reply, readyForQuery('I'))
      return
    }
    this.state = 'copy-both'
    let failed = false
    const writer = {
      write: (b: Uint8Array) => {
        if (b[0] === BackendTag.ErrorResponse) failed = true
        // A client that hung up while the stream started gets nothing more.
        if (this.state !== 'closed') this.conn.send(b)
      },
      drain: () => this.conn.drain?.(),
    }
    let started!: (s: ReplicationSession | null) => void
    this.streamStarted = new Promise((r) => (started = r))
    const done = handleStartReplication(text, writer, db, {
      pid: this.processId,
      // The connection's own setting (options '-c logical_decoding_work_mem=...', or SET).
      logicalDecodingWorkMem: this.settings.bytes('logical_decoding_work_mem'),
      // Values print as this connection's DateStyle, TimeZone, ... would print them.
      outputStyle: outputStyle((name) => this.settings.show(name)),
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

  protected async afterStream(error: boolean): Promise<void> {
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

  protected async copyBoth(m: FrontendMessage): Promise<void> {
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

  protected async replicationError(err: PgError | null, bytes?: Uint8Array): Promise<void> {
    await this.dropTemporarySlots()
    this.send(bytes ?? errorResponse(err!), readyForQuery('I'))
  }

  protected async dropTemporarySlots(): Promise<void> {
    for (const slot of this.temporarySlots) {
      await handleReplicationQuery(`DROP_REPLICATION_SLOT "${slot}"`, this.engine.db)
    }
    this.temporarySlots.clear()
  }
}
