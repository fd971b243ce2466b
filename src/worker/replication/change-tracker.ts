// Change capture: installation and the orez-compatible read API.
// The capture itself is SQL (../capture/schema.sql.ts); the replication reader
// (./reader.ts) reads the same change log as whole committed transactions.

import type { PGlite } from '@electric-sql/pglite'
import { INSTALL_SQL, TRACK_ALL_SQL, searchPathSql } from '../capture/schema.sql'

export interface ChangeRecord {
  id: number
  watermark: number
  table_name: string
  op: 'INSERT' | 'UPDATE' | 'DELETE'
  row_data: Record<string, unknown> | null
  old_data: Record<string, unknown> | null
  changed_at: string
}

const installed = new WeakSet<PGlite>()

/**
 * Installs capture on every user table in every non-system schema, now and
 * later (an event trigger tracks tables created afterwards). Idempotent.
 */
export async function installChangeTracking(db: PGlite): Promise<void> {
  const { rows } = await db.query<{ db: string }>('SELECT current_database() AS db')
  await db.exec(INSTALL_SQL)
  await db.exec(searchPathSql(rows[0].db))
  await db.exec(TRACK_ALL_SQL)
  // Temporary slots do not survive a restart of the server (here: of the engine).
  await db.exec('DELETE FROM _tabgres.slots WHERE temporary')
  installed.add(db)
}

export function isChangeTrackingInstalled(db: PGlite): boolean {
  return installed.has(db)
}

const OP_NAMES = { I: 'INSERT', U: 'UPDATE', D: 'DELETE' } as const

/** Row changes after `watermark`, oldest first, with values as typed JSON (orez's format). */
export async function getChangesSince(db: PGlite, watermark: number, limit = 1000): Promise<ChangeRecord[]> {
  const result = await db.query<{
    seq: string
    relname: string
    op: 'I' | 'U' | 'D'
    row_data: Record<string, unknown> | null
    old_data: Record<string, unknown> | null
    changed_at: string
  }>(
    `SELECT c.seq::text AS seq, r.relname, c.op::text AS op,
            _tabgres.row_json(c.relid, c.new_row) AS row_data,
            _tabgres.row_json(c.relid, c.old_row) AS old_data,
            x.commit_time::text AS changed_at
       FROM _tabgres.changes c
       JOIN pg_class r ON r.oid = c.relid
       LEFT JOIN _tabgres.xacts x ON x.xid = c.xid
      WHERE c.seq > $1 AND c.op IN ('I', 'U', 'D')
      ORDER BY c.seq LIMIT $2`,
    [watermark, limit],
  )
  return result.rows.map((r) => ({
    id: Number(r.seq),
    watermark: Number(r.seq),
    table_name: r.relname,
    op: OP_NAMES[r.op],
    row_data: r.row_data,
    old_data: r.old_data,
    changed_at: r.changed_at,
  }))
}

/** The position of the latest captured change (0 before any). */
export async function getCurrentWatermark(db: PGlite): Promise<number> {
  const result = await db.query<{ p: string }>('SELECT _tabgres.position()::text AS p')
  return Number(result.rows[0].p)
}
