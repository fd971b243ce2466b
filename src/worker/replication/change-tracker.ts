// Change capture: installation and the orez-compatible read API.
// The capture itself is SQL (../capture/schema.sql.ts); the replication reader
// (./reader.ts) reads the same change log as whole committed transactions.

import type { PGlite } from '@electric-sql/pglite'
import { INSTALL_SQL, SEARCH_PATH, TRACK_ALL_SQL, searchPathSql } from '../capture/schema.sql'
import { SLOTS_ON_OPEN_SQL, SLOTS_SQL } from '../capture/slots.sql'
import { startPruning, type Retention } from './prune'

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
 * Session settings the engine relies on, for a backend whose settings were
 * RESET (wire sessions do that between clients): PGlite's backend started
 * before installChangeTracking set the database's default search_path.
 */
export const ENGINE_SESSION_SQL = `SET search_path = ${SEARCH_PATH};`

export interface TrackingOptions {
  /**
   * What happens to captured changes while no replication slot exists.
   * 'keep' (the default, for the orez-compatible getChangesSince) keeps them;
   * 'discard' prunes them as PostgreSQL discards WAL no slot needs. Either way,
   * changes every slot has acknowledged are pruned.
   */
  retention?: Retention
}

/**
 * Installs capture on every user table in every non-system schema, now and
 * later (an event trigger tracks tables created afterwards), and starts
 * pruning acknowledged changes. Idempotent; run it each time the database opens.
 */
export async function installChangeTracking(db: PGlite, options: TrackingOptions = {}): Promise<void> {
  const { rows } = await db.query<{ db: string }>('SELECT current_database() AS db')
  await db.exec(INSTALL_SQL)
  await db.exec(SLOTS_SQL)
  await db.exec(searchPathSql(rows[0].db))
  await db.exec(TRACK_ALL_SQL)
  await db.exec(SLOTS_ON_OPEN_SQL)
  installed.add(db)
  await startPruning(db, options.retention ?? 'keep')
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
