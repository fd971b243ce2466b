// What a connection's start-up needs to know of its database, read without
// PGlite's transaction lock: a new connection must get in while another
// session has a transaction open.

import type { PGlite } from '@electric-sql/pglite'
import { BUSY, idle, readWhenIdle } from '../engine/replication/exclusive'

export interface StartupInfo {
  roleExists: boolean
  database: string
  serverVersion: string
}

const STARTUP_SQL = `SELECT current_database(), current_setting('server_version'),
  (SELECT string_agg(rolname, chr(1)) FROM pg_catalog.pg_roles WHERE rolcanlogin)`

interface StartupCache {
  database: string
  serverVersion: string
  roles: Set<string>
}
const startupCache = new WeakMap<PGlite, StartupCache>()

/**
 * What start-up needs to know, without PGlite's transaction lock: a new
 * connection must get in while another session has a transaction open. Read
 * between transactions (replication/exclusive.ts) and cached; re-read when a
 * role is not (yet) known.
 */
export async function readStartupInfo(db: PGlite, user: string): Promise<StartupInfo> {
  let info = startupCache.get(db)
  if (!info || !info.roles.has(user)) {
    const rows = info ? await readOnce(db) : await idle(db, (s) => s.query(STARTUP_SQL))
    if (rows) {
      const [database, serverVersion, roles] = rows[0]
      info = { database: database!, serverVersion: serverVersion!, roles: new Set((roles ?? '').split('\u0001')) }
      startupCache.set(db, info)
    }
  }
  return { roleExists: info!.roles.has(user), database: info!.database, serverVersion: info!.serverVersion }
}

/** One read when no transaction is open, else null (keep what is cached). */
async function readOnce(db: PGlite) {
  const sets = await readWhenIdle(db, STARTUP_SQL)
  return sets === BUSY ? null : sets[0]
}
