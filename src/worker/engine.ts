// The database a worker owns: PGlite on IndexedDB (idb://<name>) with change
// capture, group commit, and one owner per name (a Web Lock).
//
// Boot: a database this origin has never created starts from the template
// data directory (./storage/template.ts: made at build time, shipped as an
// asset, kept in IndexedDB after its first use) instead of running initdb.

import { PGlite } from '@electric-sql/pglite'
import { installChangeTracking } from '../engine/install'
import { stopPruning } from '../engine/replication/prune'
import { ENGINE_START_PARAMS } from '../engine/start-params'
import { GroupCommit } from './storage/group-commit'
import { GroupCommitIdbFs, type FlushStats } from './storage/idb-fs'
import { acquireNameLock, type OnLocked } from './storage/lock'
import { isKnownDatabase, loadTemplate, rememberDatabase, saveTemplate } from './storage/registry'
import { INITDB_PARAMS, makeTemplate, templateKey } from './storage/template'

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

/** A boot phase starting (page: a progress display); 'ready' when the database answers. */
export interface BootProgress {
  phase: BootPhase | 'ready'
  /** Since the open began. */
  elapsedMs: number
}
export type BootPhase = 'lock' | 'registry' | 'template' | 'pglite' | 'install' | 'flush' | 'register'

/** Where a new database's template came from: this origin's registry, the shipped asset, or made in the tab. */
export type TemplateSource = 'registry' | 'asset' | 'made'

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

/** Where the build put the template (scripts/template-asset.ts); bundlers hash and copy it. */
const TEMPLATE_URL = new URL('./storage/template.tar.gz', import.meta.url)

/**
 * The template: kept in this origin's registry after the first use; else the
 * asset made at build time; else (the asset is missing, as in a build without
 * the step) made here, which runs initdb in WASM.
 */
async function templateData(): Promise<{ data: Blob; source: TemplateSource }> {
  const key = templateKey()
  const cached = await loadTemplate(key)
  if (cached) return { data: cached, source: 'registry' }
  let data: Blob | null = null
  let source: TemplateSource = 'asset'
  try {
    const res = await fetch(TEMPLATE_URL)
    if (res.ok) data = await res.blob()
  } catch {
    // Offline before the asset was cached, or no asset: make it below.
  }
  if (!data) {
    data = await makeTemplate()
    source = 'made'
  }
  await saveTemplate(key, data)
  return { data, source }
}

export async function openEngine(
  name: string,
  options: EngineOptions = {},
  onProgress?: (p: BootProgress) => void,
): Promise<Engine> {
  const t0 = performance.now()
  const phases: Record<string, number> = {}
  let mark = t0
  let current: BootPhase = 'lock'
  const progress = (p: BootPhase | 'ready') => {
    // A display's failure is not the database's (a Comlink proxy's call returns a promise).
    try {
      const r: unknown = onProgress?.({ phase: p, elapsedMs: performance.now() - t0 })
      if (r instanceof Promise) r.catch(() => {})
    } catch {
      // as above
    }
  }
  /** Ends the current phase and starts `next`. */
  const phase = (next: BootPhase | 'ready') => {
    const now = performance.now()
    phases[current] = now - mark
    mark = now
    if (next !== 'ready') current = next
    progress(next)
  }
  progress('lock')
  const release = await acquireNameLock(name, options.onLocked ?? 'fail')
  phase('registry')
  try {
    const known = await isKnownDatabase(name)
    const useTemplate = !known && options.template !== false
    let fs = new GroupCommitIdbFs(name)
    let db: PGlite
    let fromTemplate = false
    let template: TemplateSource | undefined
    if (useTemplate) {
      phase('template')
      const t = await templateData()
      template = t.source
      phase('pglite')
      try {
        db = await PGlite.create({ fs, loadDataDir: t.data, startParams: [...ENGINE_START_PARAMS] })
        fromTemplate = true
      } catch (e) {
        // Created earlier but not registered (the tab died in between): open it as it is.
        if (!String((e as Error)?.message).includes('already exists')) throw e
        fs = new GroupCommitIdbFs(name)
        db = await PGlite.create({ fs, initDbStartParams: INITDB_PARAMS, startParams: [...ENGINE_START_PARAMS] })
      }
    } else {
      phase('pglite')
      db = await PGlite.create({ fs, initDbStartParams: INITDB_PARAMS, startParams: [...ENGINE_START_PARAMS] })
    }
    phase('install')
    await installChangeTracking(db, { retention: 'discard' })
    phase('flush')
    const commits = new GroupCommit(db, async () => fs.snapshot())
    await commits.durable()
    phase('register')
    if (!known) await rememberDatabase(name)
    phase('ready')
    const durability = options.durability ?? 'durable'
    let closing: Promise<void> | null = null
    return {
      name,
      db,
      commits,
      durability,
      boot: { ms: performance.now() - t0, created: !known, fromTemplate, template, phases },
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
