// tabgres in the page: openDatabase() spawns this tab's worker for the
// database and returns a typed handle (./database.ts) on whichever worker
// holds the data (./leadership.ts). Nothing here imports worker internals
// except the API's type; protocol types and codecs come from src/protocol.

import * as Comlink from 'comlink'
import { installErrorTransfer } from '../protocol/comlink-errors'
import type { CommandResult } from '../worker/api'
import { parseLsn, formatLsn, type Lsn } from '../protocol/lsn'
import type { WorkerApi, CreateSlotRequest } from '../worker/api'
import type { BootInfo, BootPhase, BootProgress, EngineOptions } from '../worker/engine'
import { Database, fixedLink } from './database'
import { Leadership, type LinkEvent } from './leadership'
import { requestPersistence } from './storage'

import { PgError } from '../protocol/errors'
export { PgError }
export { decodePgoutput, decodePgoutputInStream, PgoutputStreamDecoder } from '../protocol/pgoutput-decode'
export { ReplicationStream, type StreamMessage } from './stream'
export { SqlSession, type QueryOutcome, type StatementResult } from './sql-session'
export { Database, fixedLink, type Queryable, type StartReplicationOptions } from './database'
export { LINK_WAIT_MS, type LinkEvent } from './leadership'
export type { StorageState } from './storage'
export { leaderLost } from '../protocol/peers'
export { replicate, type ReplicateOptions, type XLogMessage } from './replicate'
export { ReplicaApplier, ReplicaApplyError, type AppliedCommit, type ApplierOptions, type ApplyTarget } from './replica/apply'
export { formatLsn, parseLsn, type Lsn }
export type { PgoutputMessage, RelationColumn, Tuple, TupleColumn } from '../protocol/pgoutput'
export { dateFromPgTimestamp } from '../protocol/pgoutput'
export type { BootInfo, BootPhase, BootProgress, CommandResult, CreateSlotRequest, EngineOptions }

export interface OpenOptions extends Omit<EngineOptions, 'onLocked'> {
  /**
   * When another tab or worker holds the database: 'share' (default) uses
   * it there, and this tab's worker takes over when that one goes
   * (./leadership.ts); 'wait' waits until it is free; 'fail' fails with 55006.
   */
  onLocked?: 'share' | 'wait' | 'fail'
  /** A worker to use instead of spawning the bundled one (tests, custom builds): it alone holds the data (no sharing). */
  worker?: Worker
  /** Hears each boot phase of this tab's worker as it starts, then 'ready' (a progress display). */
  onProgress?: (p: BootProgress) => void
  /** Hears a takeover: 'lost' when the leading worker went, 'linked' once a leader answers again (with how long it took). */
  onLeaderChange?: (e: LinkEvent) => void
  /**
   * A plain SQL dump to load into the database when it has none yet (db.dump()'s, or
   * pg_dump's plain format): its text, a Blob, or a URL (a URL object, or a string
   * that is one) to fetch it from. Loaded once, in one transaction; a database that
   * already has tables of its own is not loaded into (55000). db.seeded says what happened.
   */
  from?: string | URL | Blob
  /**
   * Ask the browser to keep this origin's storage (navigator.storage.persist()),
   * once per page; default true. Firefox asks the user. db.storage() says what was granted.
   */
  persist?: boolean
}

function spawnWorker(): Worker {
  return new Worker(new URL('../worker/index.ts', import.meta.url), { type: 'module', name: 'tabgres' })
}

/**
 * Opens (creating if needed) the database \`name\`, persisted in IndexedDB.
 * Every tab that opens it gets a working Database: one worker holds the data
 * (the first tab's) and the others reach it; when that tab goes, another's
 * worker takes over (./leadership.ts).
 */
export async function openDatabase(name: string, options: OpenOptions = {}): Promise<Database> {
  installErrorTransfer()
  const { from, persist = true, ...rest } = options
  if (persist) requestPersistence()
  const db = await open(name, rest)
  if (from === undefined) return db
  try {
    db.seeded = await db.seed(await dumpText(from))
    return db
  } catch (e) {
    await db.close()
    throw e
  }
}

/** A dump's text from what `from` was given. */
async function dumpText(from: string | URL | Blob): Promise<string> {
  if (from instanceof Blob) return from.text()
  // A dump always holds a newline; a URL never does.
  if (from instanceof URL || (!from.includes('\n') && /^(https?:|blob:|data:|\.{0,2}\/)/.test(from))) {
    const r = await fetch(from)
    if (!r.ok) throw new PgError({ code: '58030', message: `could not fetch the dump from ${String(from)}: HTTP ${r.status}` })
    return r.text()
  }
  return from
}

async function open(name: string, options: Omit<OpenOptions, 'from'>): Promise<Database> {
  const { worker: given, onProgress, onLeaderChange, onLocked = 'share', ...engine } = options
  if (given) {
    // A worker from the caller: it opens the data itself, nothing shared.
    const api = Comlink.wrap<WorkerApi>(given)
    try {
      const boot = await api.open(name, { ...engine, onLocked: onLocked === 'share' ? 'wait' : onLocked }, onProgress ? Comlink.proxy(onProgress) : undefined)
      return new Database(name, fixedLink(api, boot, () => given.terminate()), boot)
    } catch (e) {
      api[Comlink.releaseProxy]()
      given.terminate()
      throw e
    }
  }
  const leadership = new Leadership(name, {
    engine: onLocked === 'share' ? engine : { ...engine, onLocked },
    share: onLocked === 'share',
    spawn: spawnWorker,
    onProgress,
    onEvent: onLeaderChange,
  })
  try {
    const link = await leadership.start()
    return new Database(name, leadership, link.boot)
  } catch (e) {
    leadership.close()
    throw e
  }
}
