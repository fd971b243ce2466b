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
import { ENGINE_START_PARAMS, TEST_START_PARAMS } from '../engine/start-params'
import { INITDB_PARAMS } from '../engine/template'
import { ImageMemoryFs, type DataDirImage } from '../engine/template-image'
import { downloadOf, startBootClock, type BootClock, type BootPhase, type BootProgress } from './boot-clock'
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
  /** Where the time went, in order (ms): name lock, registry, PGlite (its parts as 'pglite: ...'), capture install. */
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
  /** The boot's first flush and a new database's registration, which run after the database answers. */
  readonly settled: Promise<void>
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
    clock.phase('pglite')
    const pgliteAt = performance.now()
    // The template is fetched and decoded while PGlite fetches and compiles
    // its wasm (PGlite.create starts both downloads at once; the file system
    // waits for the template only when it loads the cluster).
    const template = !known && options.template !== false ? currentTemplate(templateUrl) : null
    template?.catch(() => {}) // awaited below, or by the load; PGlite may fail first
    const fs = new GroupCommitIdbFs(name, { base: template ?? undefined, resolveBase: (key) => templateImage(key, templateUrl) })
    // Without a template (or with a store made without one), PGlite runs initdb.
    const db = await PGlite.create({ fs, initDbStartParams: INITDB_PARAMS, startParams: startParams() })
    const timing = fs.loadTiming
    if (timing) {
      clock.phases['pglite: wasm'] = timing.startedAt - pgliteAt
      // When the downloads ended (this worker's resource timing; a cached response ends early).
      const downloads = {
        'pglite.wasm': downloadOf('pglite', '.wasm', pgliteAt),
        'pglite.data': downloadOf('pglite', '.data', pgliteAt),
        template: downloadOf('template.tar', '.gz', pgliteAt),
      }
      for (const [file, e] of Object.entries(downloads)) if (e) clock.phases[`pglite: ${file} fetched at`] = e.responseEnd - pgliteAt
      clock.phases['pglite: template wait'] = timing.baseWaitMs
      clock.phases['pglite: load'] = timing.loadMs
      clock.phases['pglite: start'] = performance.now() - timing.startedAt - timing.baseWaitMs - timing.loadMs
    }
    // The template must be in the registry before the database names it in its store.
    const t = template ? await template : null
    await t?.saved
    const fromTemplate = fs.loaded!.created && fs.loaded!.baseKey !== null
    const engine = await finishBoot(name, db, clock, {
      flush: async () => fs.snapshot(),
      storage: fs.flushStats,
      durability: options.durability ?? 'durable',
      register: known ? null : () => rememberDatabase(name),
      boot: { created: !known, fromTemplate, template: fromTemplate ? t?.source : undefined },
      release,
    })
    return engine
  } catch (e) {
    release()
    throw e
  }
}

/**
 * A database in memory made from `image`'s files (the testing kit, with its
 * smaller buffers: src/engine/start-params.ts): no
 * name lock, no IndexedDB; a write is durable when it commits.
 */
export async function openMemoryEngine(name: string, image: DataDirImage, onProgress?: (p: BootProgress) => void): Promise<Engine> {
  const clock = startBootClock('pglite', onProgress)
  const fs = new ImageMemoryFs(image)
  const t0 = performance.now()
  const db = await PGlite.create({ fs, startParams: [...TEST_START_PARAMS] })
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
  /** Records a new database once its first flush is durable. */
  register: (() => Promise<void>) | null
  boot: Omit<BootInfo, 'ms' | 'phases'>
  /** Lets go of the name (after close). */
  release: () => void
}

/**
 * Capture, then the database answers. The first flush (what start-up wrote,
 * and a new database's template key) and a new database's registration run
 * after 'ready': nothing a client wrote is in them, so nothing waits for
 * them but the next durable write (which shares that flush). If the tab dies
 * first, the store still holds the last flushed state (a new database: none,
 * and the next open creates it again); registration only spares a known
 * database the template's fetch, so it follows the flush that makes it true.
 */
async function finishBoot(name: string, db: PGlite, clock: BootClock, f: Finish): Promise<Engine> {
  clock.phase('install')
  await installChangeTracking(db, { retention: 'discard' })
  const commits = new GroupCommit(db, f.flush)
  const settled = commits.durable().then(() => f.register?.())
  settled.catch(() => {}) // a failed flush is retried by the next; durable() callers see its error
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
    settled,
    close() {
      closing ??= (async () => {
        try {
          // Nothing of the engine's may query PGlite once it closes (such a query never returns).
          await stopPruning(db)
          await commits.durable()
          await settled.catch(() => {}) // registration: durable() above already reported a failed flush
          await db.close()
        } finally {
          f.release()
        }
      })()
      return closing
    },
  }
}
