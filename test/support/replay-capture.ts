// Replays a captured workload (setup, slot, START_REPLICATION, statements)
// against a fresh engine and records the stream, for comparison with what
// PostgreSQL sent for it (the conformance goldens, and our own under test/golden).

import { PGlite } from '@electric-sql/pglite'
import { expect } from 'vitest'
import { installChangeTracking } from '../../src/engine/install'
import type { ReplicationSession } from '../../src/engine/replication/session'
import { parseLsn } from '../../src/protocol/lsn'
import { handleReplicationQuery, handleStartReplication } from '../../src/wire/walsender'
import { recordStream, type Recorded } from './stream'

export interface Workload {
  setup: string[]
  workload: (string | { sql: string; expectError: string })[]
}

export interface Replay {
  db: PGlite
  stream: Recorded
  /** Per workload step: the SQLSTATE it failed with, or 'no error' for a step that should have failed. */
  errors: Record<number, string>
  close(): Promise<void>
}

/** Runs `w` after START_REPLICATION (`start`, on slot `slot`) and waits until the stream has passed its last change. */
export async function replayCapture(w: Workload, slot: string, start: string, options: { logicalDecodingWorkMem?: number } = {}): Promise<Replay> {
  const db = new PGlite()
  await installChangeTracking(db)
  for (const sql of w.setup) await db.exec(sql)
  const created = await handleReplicationQuery(`CREATE_REPLICATION_SLOT "${slot}" LOGICAL pgoutput`, db)
  expect(created![0]).toBe(0x54) // RowDescription, not ErrorResponse
  const stream = recordStream()
  let session: ReplicationSession | undefined
  const done = handleStartReplication(start, stream.writer, db, { ...options, onSession: (s) => (session = s) })
  await stream.waitFor((f) => f.tag === 'k')
  const errors: Record<number, string> = {}
  for (const [i, step] of w.workload.entries()) {
    const sql = typeof step === 'string' ? step : step.sql
    try {
      await db.exec(sql)
      if (typeof step !== 'string') errors[i] = 'no error'
    } catch (e) {
      errors[i] = (e as { code?: string }).code ?? String(e)
    }
  }
  const [{ lsn }] = (await db.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows
  const target = parseLsn(lsn)!
  await stream.waitFor((f) => f.tag === 'k' && f.walEnd >= target)
  return {
    db,
    stream,
    errors,
    async close() {
      session?.stop()
      await done
      await db.close()
    },
  }
}
