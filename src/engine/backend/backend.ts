// What every session of one database shares besides PGlite itself: who may
// use the backend (./arbiter.ts), the replication slots (kept outside the
// backend), the sessions alive (for pg_terminate_backend), and what the
// server reports without asking the backend (database name, version, the
// parameter catalog). Made once per PGlite by installChangeTracking, while no
// transaction is open.

import type { PGlite } from '@electric-sql/pglite'
import type { PgErrorFields } from '../../protocol/errors'
import { MessageFiles, type MessageFs } from '../replication/message-files'
import { SlotStore, type SlotState, type StoreFs } from '../replication/slot-store'
import { AdvisoryLocks, type AdvisoryMode } from './advisory'
import { Arbiter } from './arbiter'
import { GucCatalog } from './gucs'
import { Snapshots } from './snapshots'
import { committedPosition, signalCommit } from '../replication/notifier'
import { positionLsn } from '../replication/positions'
import { parseLsn } from '../../protocol/lsn'
import { SESSIONS_FILE } from '../capture/names'

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
  readonly snapshots: Snapshots
  readonly advisory: AdvisoryLocks

  constructor(
    readonly db: PGlite,
    readonly database: string,
    readonly serverVersion: string,
    roles: string[],
    readonly gucs: GucCatalog,
    readonly slots: SlotStore,
    readonly messages: MessageFiles,
    options: BackendOptions,
  ) {
    this.roles = new Set(roles)
    this.advisory = new AdvisoryLocks(db.Module.FS as unknown as StoreFs)
    this.arbiter = new Arbiter(
      (granted) => void db._runExclusiveTransaction(() => new Promise<void>((release) => granted(release))),
      options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS,
      (pid) => this.advisory.setHolder(pid),
    )
    this.snapshots = new Snapshots({
      arbiter: this.arbiter,
      committed: () => committedPosition(db),
      advanceSlot: (slot, position) => void slots.confirm(slot, positionLsn(position)),
    })
  }

  /** A session started: pg_terminate_backend and pg_cancel_backend can name it. */
  addSession(control: SessionControl): void {
    this.sessions.set(control.pid, control)
    this.writeSessions()
  }

  removeSession(pid: number): void {
    // A session's advisory locks end with it, as in PostgreSQL.
    this.advisory.unlockAll(pid)
    if (this.sessions.delete(pid)) this.writeSessions()
  }

  private writeSessions(): void {
    const fs = this.db.Module.FS as unknown as StoreFs
    const dir = SESSIONS_FILE.slice(0, SESSIONS_FILE.lastIndexOf('/'))
    if (!fs.analyzePath(dir).exists) fs.mkdir(dir)
    fs.writeFile(SESSIONS_FILE, JSON.stringify([...this.sessions.keys()]))
  }

  /**
   * Carries out a control notice's request; `pid` is the session that ran
   * the statement (a temporary slot it creates is its own). Returns the slot
   * created, if any.
   */
  control(json: string, pid: number): { createdTemporary?: string } {
    const r = JSON.parse(json) as ControlRequest
    switch (r.op) {
      case 'drop_slot':
        if (this.slots.get(r.slot!)?.activePid === null) this.slots.drop(r.slot!)
        return {}
      case 'create_slot':
        if (!this.slots.get(r.slot!)) this.slots.create(r.slot!, r.temporary === true, parseLsn(r.lsn!)!)
        return r.temporary ? { createdTemporary: r.slot } : {}
      case 'advance_slot':
        this.slots.confirm(r.slot!, parseLsn(r.lsn!)!)
        return {}
      case 'terminate':
        this.sessions.get(r.pid!)?.terminate({ code: '57P01', message: 'terminating connection due to administrator command' })
        return {}
      case 'cancel':
        this.sessions.get(r.pid!)?.cancel()
        return {}
      case 'advisory_lock':
        this.advisory.lock(pid, r.key!, r.mode!)
        return {}
      case 'advisory_unlock':
        this.advisory.unlock(pid, r.key!, r.mode!)
        return {}
      case 'advisory_unlock_all':
        this.advisory.unlockAll(pid)
        return {}
      case 'wake':
        // A non-transactional message was written: readers must look even if its transaction rolls back.
        signalCommit(this.db, [])
        return {}
    }
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
    const messages = new MessageFiles(db.Module.FS as unknown as MessageFs, dataDir!)
    return new Backend(db, database!, version!, (roles ?? '').split('\u0001'), GucCatalog.fromRows(settings), slots, messages, options)
  }
}

/** What the engine does for a control notice (capture/slots.sql): slot functions, signals to sessions. */
export interface ControlRequest {
  op: 'drop_slot' | 'create_slot' | 'advance_slot' | 'terminate' | 'cancel' | 'advisory_lock' | 'advisory_unlock' | 'advisory_unlock_all' | 'wake'
  slot?: string
  /** An advisory lock's key ('b<bigint>' or 'i<int4>:<int4>') and mode. */
  key?: string
  mode?: AdvisoryMode
  temporary?: boolean
  lsn?: string
  pid?: number
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
