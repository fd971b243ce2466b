// The fourth layer of a wire session (see ./session-core.ts): COPY ... FROM
// STDIN. PGlite's backend cannot read COPY data from the raw protocol (it
// exits), so the session collects the client's CopyData itself and runs the
// COPY from PGlite's /dev/blob device.

import { SqlState } from '../protocol/errors'
import { COPY_DATA_SOURCE, execRaw, withCopyData } from '../engine/replication/exclusive'
import { concatBytes, copyInResponse, errorResponse, readyForQuery } from '../protocol/backend'
import { query, type FrontendMessage } from '../protocol/frontend'
import { LocalAnswers } from './local-answers'

export const COPY_FROM_STDIN = /^\s*copy\s+([\s\S]+?)\s+from\s+stdin\b([^;]*);?\s*$/i

export abstract class CopyInSession extends LocalAnswers {
  protected copyTarget: { target: string; options: string; chunks: Uint8Array[] } | null = null

  protected async beginCopyIn(target: string, options: string): Promise<void> {
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
    this.send(copyInResponse(/\bbinary\b/i.test(options)))
  }

  protected async copyIn(m: FrontendMessage): Promise<void> {
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
    const sql = `COPY ${c.target} FROM ${COPY_DATA_SOURCE}${c.options}`
    const out = await db.runExclusive(() => withCopyData(db, c.chunks as BlobPart[], () => execRaw(db, query(sql))))
    await this.afterRun(out)
  }

  /** A COPY that failed before running: its error, and the transaction state after it. */
  protected async finishCopy(error: Uint8Array): Promise<void> {
    const db = this.engine.db
    // Inside a transaction block the failure aborts it, as in PostgreSQL: a
    // failing statement puts the block in the aborted state (its own error is
    // not sent; the client sees the COPY's).
    const inBlock = db.isInTransaction()
    if (inBlock) await db.runExclusive(() => execRaw(db, query('SELECT 1/0')))
    await this.afterRun(concatBytes([error, readyForQuery(inBlock ? 'E' : 'I')]))
  }
}
