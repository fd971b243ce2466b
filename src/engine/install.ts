// Installing the engine in a PGlite: change capture (SQL in ./capture), the
// slot store and the sessions' shared backend, the commit signal, pruning.
// The replication reader (./replication/reader.ts) reads the change log as
// whole committed transactions.

import type { PGlite } from '@electric-sql/pglite'
import { ENGINE_SQL, LOG_SQL } from './capture/sql.generated'
import { LEGACY_SLOTS_SQL, SEARCH_PATH, TRACK_ALL_SQL, searchPathSql } from './capture/names'
import { POSITION_LSN_SQL } from './replication/positions'
import { Backend, hasBackend, setBackend, type BackendOptions } from './backend/backend'
import { parseLsn } from '../protocol/lsn'
import { run } from './replication/exclusive'
import { startCommitSignal } from './replication/notifier'
import { startPruning, type Retention } from './replication/prune'
import type { SlotState } from './replication/slot-store'

const installed = new WeakSet<PGlite>()

/**
 * Session settings the engine relies on, for a backend whose settings were
 * RESET (wire sessions do that between clients): PGlite's backend started
 * before installChangeTracking set the database's default search_path.
 */
export const ENGINE_SESSION_SQL = `SET search_path = ${SEARCH_PATH};`

/**
 * Every SQL script the install runs, in order: the capture files, with the
 * LSN formula (made from positions.ts) right after the log, whose schema it
 * needs and which the later files call. The worker's template key hashes
 * this same list.
 */
export const INSTALL_SQL: readonly string[] = ENGINE_SQL.flatMap((sql) => (sql === LOG_SQL ? [sql, POSITION_LSN_SQL] : [sql]))

export interface TrackingOptions {
  /**
   * What happens to captured changes while no replication slot exists.
   * 'discard' (the default) prunes them as PostgreSQL discards WAL no slot
   * needs; 'keep' keeps them (orez's getChangesSince reads them). Either way,
   * changes every slot has acknowledged are pruned.
   */
  retention?: Retention
  /** Tables never captured, as LIKE patterns on their names (orez excludes '\\_zero\\_%'). */
  excludeTables?: string[]
  /** How sessions share the backend (see backend/backend.ts). */
  backend?: BackendOptions
}

/**
 * Installs capture on every user table in every non-system schema, now and
 * later (an event trigger tracks tables created afterwards), and starts
 * pruning acknowledged changes. Idempotent; run it each time the database opens.
 */
export async function installChangeTracking(db: PGlite, options: TrackingOptions = {}): Promise<void> {
  const exclude = options.excludeTables ?? []
  const { rows } = await db.query<{ db: string; mark: string | null }>(
    `SELECT current_database() AS db, obj_description(to_regnamespace('_tabgres'), 'pg_namespace') AS mark`,
  )
  const mark = installMark(rows[0].db, exclude)
  if (rows[0].mark === mark) {
    // Installed by this version with these options (a reopen, or a database
    // made from the template): its SQL would change nothing, and re-running
    // it was most of a reopen's install time. Tables are tracked as they are
    // created; tracking any that are not is cheap and keeps that a fact.
    await db.exec(ENGINE_SESSION_SQL + TRACK_ALL_SQL)
  } else {
    for (const sql of INSTALL_SQL) await db.exec(sql)
    await db.exec(searchPathSql(rows[0].db))
    await db.query('DELETE FROM _tabgres.excluded_tables')
    for (const pattern of exclude) await db.query('INSERT INTO _tabgres.excluded_tables VALUES ($1)', [pattern])
    await db.exec(TRACK_ALL_SQL)
    // Last: a database whose install was cut short has no mark and installs again.
    await db.query(`COMMENT ON SCHEMA _tabgres IS ${quoteLiteral(mark)}`)
  }
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
  await startPruning(db, options.retention ?? 'discard')
}

/**
 * What the schema _tabgres's comment says once an install completed: a hash
 * of the install SQL, the database (its search_path default names it) and
 * the excluded tables. Any change to them installs again.
 */
export function installMark(database: string, excludeTables: readonly string[]): string {
  let h = 0
  for (const s of [...INSTALL_SQL, database, ...excludeTables.map((p) => `exclude ${p}`)]) {
    for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0
    h = (Math.imul(h, 31) + 10) | 0 // a separator: ['ab', 'c'] and ['a', 'bc'] differ
  }
  return `tabgres capture installed: ${(h >>> 0).toString(16)}`
}

const quoteLiteral = (s: string) => `'${s.replace(/'/g, "''")}'`

export function isChangeTrackingInstalled(db: PGlite): boolean {
  return installed.has(db)
}
