// Change capture: installation and the orez-compatible read API.
// The capture itself is SQL (../capture/schema.sql.ts); the replication reader
// (./reader.ts) reads the same change log as whole committed transactions.

import type { PGlite } from '@electric-sql/pglite'
import { INSTALL_SQL, SEARCH_PATH, TRACK_ALL_SQL, searchPathSql } from '../capture/schema.sql.ts'
import { LEGACY_SLOTS_SQL, SLOTS_SQL } from '../capture/slots.sql.ts'
import { ADVISORY_SQL } from '../capture/advisory.sql.ts'
import { Backend, hasBackend, setBackend, type BackendOptions } from '../backend/backend'
import { parseLsn } from '../../protocol/lsn'
import { run } from './exclusive'
import { startCommitSignal } from './notifier'
import { startPruning, type Retention } from './prune'
import type { SlotState } from './slot-store'

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
  /** How sessions share the backend (see backend/backend.ts). */
  backend?: BackendOptions
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
  await db.exec(ADVISORY_SQL)
  await db.exec(searchPathSql(rows[0].db))
  await db.exec(TRACK_ALL_SQL)
  if (!hasBackend(db)) {
    const query = async (sql: string) => (await db.runExclusive(() => run(db, sql, false))).sets
    const legacy = (await db.query<{ t: boolean }>(`SELECT to_regclass('_tabgres.slots') IS NOT NULL AS t`)).rows[0].t
    const migrate: SlotState[] = legacy
      ? (await query(LEGACY_SLOTS_SQL))[0].map(([name, plugin, temporary, confirmed, restart, created]) => ({
          name: name!,
          plugin: plugin!,
          temporary: temporary === 'true',
          confirmedFlush: parseLsn(confirmed!)!,
          restart: parseLsn(restart!)!,
          createdAt: new Date(created!).toISOString(),
          activePid: null,
          inactiveSince: new Date().toISOString(),
        }))
      : []
    const backend = await Backend.open(db, query, migrate, options.backend)
    if (legacy) await db.exec('DROP TABLE _tabgres.slots')
    setBackend(db, backend)
    const [[position]] = (await query('SELECT _tabgres.position()'))[0]
    await startCommitSignal(db, BigInt(position!))
  }
  installed.add(db)
  await startPruning(db, options.retention ?? 'keep')
}

export function isChangeTrackingInstalled(db: PGlite): boolean {
  return installed.has(db)
}

const OP_NAMES = { I: 'INSERT', U: 'UPDATE', D: 'DELETE' } as const
/** SQL: the change c is a row change of an existing table (row_json needs its row type). */
const ROW_CHANGE = `r.relname IS NOT NULL AND c.op IN ('I', 'U', 'D')`

/** Row changes after `watermark`, oldest first, with values as typed JSON (orez's format). */
export async function getChangesSince(db: PGlite, watermark: number, limit = 1000): Promise<ChangeRecord[]> {
  const changes: ChangeRecord[] = []
  // The log also holds messages, TRUNCATEs and changes of dropped tables,
  // which this API skips: read on until `limit` row changes or the end.
  for (let after = watermark; changes.length < limit; ) {
    const want = limit - changes.length
    const { rows } = await db.query<{
      seq: string
      relname: string | null
      op: string
      row_data: Record<string, unknown> | null
      old_data: Record<string, unknown> | null
      changed_at: string
    }>(
      `SELECT c.seq::text AS seq, r.relname, c.op::text AS op,
              CASE WHEN ${ROW_CHANGE} THEN _tabgres.row_json(c.relid, c.new_row) END AS row_data,
              CASE WHEN ${ROW_CHANGE} THEN _tabgres.row_json(c.relid, c.old_row) END AS old_data,
              x.commit_time::text AS changed_at
         FROM _tabgres.changes_after($1, $2) c
         LEFT JOIN pg_class r ON r.oid = c.relid
         LEFT JOIN _tabgres.xacts x ON x.xid = c.xid
        ORDER BY c.seq`,
      [after, want],
    )
    for (const r of rows) {
      if (r.relname === null || !(r.op in OP_NAMES)) continue
      changes.push({
        id: Number(r.seq),
        watermark: Number(r.seq),
        table_name: r.relname,
        op: OP_NAMES[r.op as keyof typeof OP_NAMES],
        row_data: r.row_data,
        old_data: r.old_data,
        changed_at: r.changed_at,
      })
    }
    if (rows.length < want) break
    after = Number(rows[rows.length - 1].seq)
  }
  return changes
}

/** The position of the latest captured change (0 before any). */
export async function getCurrentWatermark(db: PGlite): Promise<number> {
  const result = await db.query<{ p: string }>('SELECT _tabgres.position()::text AS p')
  return Number(result.rows[0].p)
}
