// The database a worker holds: PGlite with change capture and group commit,
// either on IndexedDB (idb://<name>, one owner per name: a Web Lock) or in
// memory from the template's files (the testing kit: ./kit.ts).
//
// Boot: a database this origin has never created starts from the template
// data directory (src/engine/template.ts: made at build time, shipped as an
// asset, kept in IndexedDB after its first use) instead of running initdb,
// and stores only what differs from it (./storage/idb-fs.ts): its first
// flush writes a few records, not the template's ~30 MB.

import { PGlite } from '@electric-sql/pglite'
import { installChangeTracking } from '../engine/install'
import { stopPruning } from '../engine/replication/prune'
import { ENGINE_START_PARAMS } from '../engine/start-params'
import { INITDB_PARAMS } from '../engine/template'
import { ImageMemoryFs, type DataDirImage } from '../engine/template-image'
import { startBootClock, type BootClock, type BootPhase, type BootProgress } from './boot-clock'
import { GroupCommit, noFlush, type Flush } from './storage/group-commit'
import { GroupCommitIdbFs, type FlushStats } from './storage/idb-fs'
import { acquireNameLock, type OnLocked } from './storage/lock'
import { isKnownDatabase, rememberDatabase } from './storage/registry'
import { currentTemplate, templateImage, type TemplateSource } from './storage/template-source'

export type { BootPhase, BootProgress, TemplateSource }

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
  template?: TemplateSource
  /** Where the time went, in order (ms): name lock, registry, template, PGlite, capture install, first flush, registration. */
  phases: Record<string, number>
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

/** How every PGlite here starts (src/engine/start-params.ts). */
const startParams = () => [...ENGINE_START_PARAMS]

/**
 * Opens (creating from the template if new) idb://<name>. `templateUrl`:
 * where the worker's bundle put the template asset (the entry module names
 * it, so that the URL is relative to a file the build keeps in place).
 */
export async function openEngine(
  name: string,
  options: EngineOptions,
  onProgress: ((p: BootProgress) => void) | undefined,
  templateUrl: URL,
): Promise<Engine> {
  const clock = startBootClock('lock', onProgress)
  const release = await acquireNameLock(name, options.onLocked ?? 'fail')
  clock.phase('registry')
  try {
    const known = await isKnownDatabase(name)
    let base: { key: string; image: DataDirImage } | undefined
    let template: TemplateSource | undefined
    let saved: Promise<void> = Promise.resolve()
    if (!known && options.template !== false) {
      clock.phase('template')
      const t = await currentTemplate(templateUrl)
      base = { key: t.key, image: t.image }
      template = t.source
      saved = t.saved
    }
    clock.phase('pglite')
    const fs = new GroupCommitIdbFs(name, { base, resolveBase: (key) => templateImage(key, templateUrl) })
    // Without a template (or with a store made without one), PGlite runs initdb.
    const db = await PGlite.create({ fs, initDbStartParams: INITDB_PARAMS, startParams: startParams() })
    // The template must be in the registry before the database names it in its store.
    await saved
    const fromTemplate = fs.loaded!.created && fs.loaded!.baseKey !== null
    const engine = await finishBoot(name, db, clock, {
      flush: async () => fs.snapshot(),
      storage: fs.flushStats,
      durability: options.durability ?? 'durable',
      register: known ? null : () => rememberDatabase(name),
      boot: { created: !known, fromTemplate, template: fromTemplate ? template : undefined },
      release,
    })
    return engine
  } catch (e) {
    release()
    throw e
  }
}

/**
 * A database in memory made from `image`'s files (the testing kit): no
 * name lock, no IndexedDB; a write is durable when it commits.
 */
export async function openMemoryEngine(name: string, image: DataDirImage, onProgress?: (p: BootProgress) => void): Promise<Engine> {
  const clock = startBootClock('pglite', onProgress)
  const fs = new ImageMemoryFs(image)
  const t0 = performance.now()
  const db = await PGlite.create({ fs, startParams: startParams() })
  // Within 'pglite': the copy of the template's files, and the rest of PGlite's start.
  clock.phases['pglite: files'] = fs.writeMs
  clock.phases['pglite: create'] = performance.now() - t0 - fs.writeMs
  return finishBoot(name, db, clock, {
    flush: noFlush,
    storage: { flushes: 0, records: 0, bytes: 0 },
    durability: 'durable',
    register: null,
    boot: { created: true, fromTemplate: true, template: 'asset' },
    release: () => {},
  })
}

interface Finish {
  flush: Flush
  storage: FlushStats
  durability: 'durable' | 'relaxed'
  /** Records a new database once it is durable. */
  register: (() => Promise<void>) | null
  boot: Omit<BootInfo, 'ms' | 'phases'>
  /** Lets go of the name (after close). */
  release: () => void
}

/** Capture, the first flush, registration: the end of every boot. */
async function finishBoot(name: string, db: PGlite, clock: BootClock, f: Finish): Promise<Engine> {
  clock.phase('install')
  await installChangeTracking(db, { retention: 'discard' })
  clock.phase('flush')
  const commits = new GroupCommit(db, f.flush)
  await commits.durable()
  clock.phase('register')
  await f.register?.()
  clock.phase('ready')
  let closing: Promise<void> | null = null
  return {
    name,
    db,
    commits,
    durability: f.durability,
    boot: { ...f.boot, ms: clock.elapsed(), phases: clock.phases },
    storage: f.storage,
    durable: () => commits.durable(),
    close() {
      closing ??= (async () => {
        try {
          // Nothing of the engine's may query PGlite once it closes (such a query never returns).
          await stopPruning(db)
          await commits.durable()
          await db.close()
        } finally {
          f.release()
        }
      })()
      return closing
    },
  }
}
