// What every session of one database shares besides PGlite itself: who may
// use the backend (./arbiter.ts), the replication slots (kept outside the
// backend), the sessions alive (for pg_terminate_backend), and what the
// server reports without asking the backend (database name, version, the
// parameter catalog). Made once per PGlite by installChangeTracking, while no
// transaction is open.

import type { PGlite } from '@electric-sql/pglite'
import type { PgErrorFields } from '../../shared/errors'
import { SlotStore, type SlotState, type StoreFs } from '../replication/slot-store'
import { Arbiter } from './arbiter'
import { GucCatalog } from './gucs'

/** How the engine reaches a session: to end it (pg_terminate_backend) or cancel what it waits for. */
export interface SessionControl {
  readonly pid: number
  /** A walsender (replication connection) rather than a normal backend. */
  readonly walsender: boolean
  terminate(error: PgErrorFields): void
  cancel(): void
}

export interface BackendOptions {
  /** The bound on a wait for the backend when a session set neither lock_timeout nor statement_timeout (ms). */
  maxWaitMs?: number
}

/** Default bound on waiting for the shared backend, when the session set no timeout of its own. */
export const DEFAULT_MAX_WAIT_MS = 60_000

type Rows = (string | null)[][]

export class Backend {
  readonly arbiter: Arbiter
  readonly sessions = new Map<number, SessionControl>()
  readonly roles: Set<string>

  constructor(
    readonly db: PGlite,
    readonly database: string,
    readonly serverVersion: string,
    roles: string[],
    readonly gucs: GucCatalog,
    readonly slots: SlotStore,
    options: BackendOptions,
  ) {
    this.roles = new Set(roles)
    this.arbiter = new Arbiter(
      (granted) => void db._runExclusiveTransaction(() => new Promise<void>((release) => granted(release))),
      options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS,
    )
  }

  /** Where the engine's own files live in PGlite's file system (the data directory). */
  static readonly INFO_SQL = `SELECT current_database(), current_setting('server_version'), current_setting('data_directory'),
    (SELECT string_agg(rolname, chr(1)) FROM pg_catalog.pg_roles WHERE rolcanlogin)`

  /** Reads what it needs in one round trip; `query` runs SQL while no transaction is open. */
  static async open(
    db: PGlite,
    query: (sql: string) => Promise<Rows[]>,
    migrateSlots: SlotState[],
    options: BackendOptions = {},
  ): Promise<Backend> {
    const [info, settings] = await query(`${Backend.INFO_SQL}; ${GucCatalog.SQL}`)
    const [database, version, dataDir, roles] = info[0]
    const slots = new SlotStore(db.Module.FS as unknown as StoreFs, dataDir!)
    slots.open(migrateSlots)
    return new Backend(db, database!, version!, (roles ?? '').split('\u0001'), GucCatalog.fromRows(settings), slots, options)
  }
}

const backends = new WeakMap<PGlite, Backend>()

export function setBackend(db: PGlite, b: Backend): void {
  backends.set(db, b)
}

/** The database's shared state; change tracking must be installed. */
export function backendOf(db: PGlite): Backend {
  const b = backends.get(db)
  if (!b) throw new Error('change tracking is not installed on this database')
  return b
}

export function hasBackend(db: PGlite): boolean {
  return backends.has(db)
}
