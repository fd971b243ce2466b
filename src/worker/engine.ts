// The database a worker owns: PGlite on IndexedDB (idb://<name>) with change
// capture, group commit, and one owner per name (a Web Lock).
//
// Boot: a database this origin has never created starts from a template
// data directory (a fresh cluster with capture installed, dumped once and
// kept in IndexedDB) instead of running initdb again.

import { PGlite } from '@electric-sql/pglite'
import { INSTALL_SQL, installChangeTracking } from '../engine/install'
import { stopPruning } from '../engine/replication/prune'
import { GroupCommit } from './storage/group-commit'
import { GroupCommitIdbFs, type FlushStats } from './storage/idb-fs'
import { acquireNameLock, type OnLocked } from './storage/lock'
import { isKnownDatabase, loadTemplate, rememberDatabase, saveTemplate } from './storage/registry'

export interface EngineOptions {
  /** When another tab or worker has the name open: fail with 55006 (default) or wait. */
  onLocked?: OnLocked
  /**
   * 'durable' (default): a write resolves once it is in IndexedDB.
   * 'relaxed': a write resolves at commit and is flushed in the background
   * (a tab that dies may lose the last writes; streams still carry only
   * durable commits).
   */
  durability?: 'durable' | 'relaxed'
  /** Use (and make) the template data directory for new databases (default true). */
  template?: boolean
}

export interface BootInfo {
  ms: number
  created: boolean
  fromTemplate: boolean
}

export interface Engine {
  readonly name: string
  readonly db: PGlite
  readonly commits: GroupCommit
  readonly durability: 'durable' | 'relaxed'
  readonly boot: BootInfo
  /** What flushes wrote to IndexedDB (records, bytes), for diagnostics and benchmarks. */
  readonly storage: FlushStats
  /** Resolves once all committed writes are durable (no-op wait in relaxed mode is not skipped). */
  durable(): Promise<void>
  close(): Promise<void>
}

/**
 * initdb options for every cluster the engine creates. 1 MB WAL segments
 * (PostgreSQL's minimum; 16 MB by default): IndexedDB stores whole files, so
 * each group commit rewrites the WAL segment being written to, and its size
 * is most of a flush's cost.
 */
const INITDB_PARAMS = ['--wal-segsize=1']

/** A cheap fingerprint of the capture schema and the initdb options: a change makes a new template. */
function templateKey(): string {
  let h = 0
  for (const s of [...INSTALL_SQL, INITDB_PARAMS.join(' ')]) for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0
  return `pglite-0.5.17/capture-${(h >>> 0).toString(16)}`
}

async function makeTemplate(): Promise<Blob> {
  const t = await PGlite.create({ initDbStartParams: INITDB_PARAMS })
  try {
    await installChangeTracking(t)
    return await t.dumpDataDir('gzip')
  } finally {
    await t.close()
  }
}

async function templateData(): Promise<Blob> {
  const key = templateKey()
  const cached = await loadTemplate(key)
  if (cached) return cached
  const made = await makeTemplate()
  await saveTemplate(key, made)
  return made
}

export async function openEngine(name: string, options: EngineOptions = {}): Promise<Engine> {
  const t0 = performance.now()
  const release = await acquireNameLock(name, options.onLocked ?? 'fail')
  try {
    const known = await isKnownDatabase(name)
    const useTemplate = !known && options.template !== false
    let fs = new GroupCommitIdbFs(name)
    let db: PGlite
    let fromTemplate = false
    if (useTemplate) {
      const loadDataDir = await templateData()
      try {
        db = await PGlite.create({ fs, loadDataDir })
        fromTemplate = true
      } catch (e) {
        // Created earlier but not registered (the tab died in between): open it as it is.
        if (!String((e as Error)?.message).includes('already exists')) throw e
        fs = new GroupCommitIdbFs(name)
        db = await PGlite.create({ fs, initDbStartParams: INITDB_PARAMS })
      }
    } else {
      db = await PGlite.create({ fs, initDbStartParams: INITDB_PARAMS })
    }
    await installChangeTracking(db, { retention: 'discard' })
    const commits = new GroupCommit(db, async () => fs.snapshot())
    await commits.durable()
    if (!known) await rememberDatabase(name)
    const durability = options.durability ?? 'durable'
    let closing: Promise<void> | null = null
    return {
      name,
      db,
      commits,
      durability,
      boot: { ms: performance.now() - t0, created: !known, fromTemplate },
      storage: fs.flushStats,
      durable: () => commits.durable(),
      close() {
        closing ??= (async () => {
          try {
            // Nothing of the engine's may query PGlite once it closes (such a query never returns).
            await stopPruning(db)
            await commits.durable()
            await db.close()
          } finally {
            release()
          }
        })()
        return closing
      },
    }
  } catch (e) {
    release()
    throw e
  }
}
