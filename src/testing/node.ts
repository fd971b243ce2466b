// tabgres/testing for Node: a fresh database per test. Each is an in-memory
// PGlite with the engine installed, made from the template's files (the
// template archive is decoded once per process, PGlite's wasm compiled once),
// and the kit keeps `prewarm` of them booted ahead of the next fresh().

import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { installChangeTracking, type TrackingOptions } from '../engine/install'
import { stopPruning } from '../engine/replication/prune'
import { TEST_START_PARAMS } from '../engine/start-params'
import { makeTemplate, templateKey } from '../engine/template'
import { ImageMemoryFs, readImage, type DataDirImage } from '../engine/template-image'

export interface TestKitOptions {
  /** Capture options for every database (default: the engine's). */
  tracking?: TrackingOptions
  /** Databases booted ahead of fresh() (default 1; 0 boots each on demand). */
  prewarm?: number
}

export interface TestKit {
  /** A new, empty database with capture installed; close it when done (kit.close() closes any left). */
  fresh(): Promise<PGlite>
  /** Closes every database the kit made, spares included. */
  close(): Promise<void>
}

/** Where the build put the template (scripts/template-asset.ts), relative to this module in src/ and in dist/. */
const TEMPLATE_ASSET = new URL('../worker/storage/template.tar.gz', import.meta.url)

interface Shared {
  image: DataDirImage
  pgliteWasmModule: WebAssembly.Module
  initdbWasmModule: WebAssembly.Module
  fsBundle: Blob
}
let shared: Promise<Shared> | null = null

/** The template's files and PGlite's compiled wasm, once per process. */
function load(): Promise<Shared> {
  shared ??= (async () => {
    const dist = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'))
    const [archive, pglite, initdb, bundle] = await Promise.all([
      templateArchive(),
      readFile(join(dist, 'pglite.wasm')),
      readFile(join(dist, 'initdb.wasm')),
      readFile(join(dist, 'pglite.data')),
    ])
    return {
      image: await readImage(archive),
      pgliteWasmModule: await WebAssembly.compile(pglite),
      // Never run (the template replaces initdb), but PGlite fetches it unless given.
      initdbWasmModule: await WebAssembly.compile(initdb),
      fsBundle: new Blob([bundle]),
    }
  })()
  shared.catch(() => (shared = null))
  return shared
}

/** The shipped template when it was made for this code (its key beside it), else one made now. */
async function templateArchive(): Promise<Uint8Array> {
  try {
    const key = await readFile(new URL(`${TEMPLATE_ASSET.href}.key`), 'utf8')
    if (key === templateKey()) return await readFile(TEMPLATE_ASSET)
  } catch {
    // No asset (a checkout that never built one): make it below.
  }
  return makeTemplate()
}

export async function createTestKit(options: TestKitOptions = {}): Promise<TestKit> {
  const prewarm = Math.max(0, options.prewarm ?? 1)
  const s = await load()
  const open = new Set<PGlite>()
  const spares: Promise<PGlite>[] = []
  let closed = false

  async function boot(): Promise<PGlite> {
    const db = await PGlite.create({
      fs: new ImageMemoryFs(s.image),
      startParams: [...TEST_START_PARAMS],
      pgliteWasmModule: s.pgliteWasmModule,
      initdbWasmModule: s.initdbWasmModule,
      fsBundle: s.fsBundle,
    })
    open.add(db)
    await installChangeTracking(db, options.tracking)
    return db
  }
  const refill = () => {
    while (!closed && spares.length < prewarm) {
      const spare = boot()
      spare.catch(() => {}) // reported to the fresh() that takes it
      spares.push(spare)
    }
  }
  refill()

  return {
    async fresh() {
      if (closed) throw new Error('this test kit is closed')
      const next = spares.shift() ?? boot()
      refill()
      const db = await next
      // Closed by the test: nothing to do for it at kit.close().
      const close = db.close.bind(db)
      db.close = async () => {
        open.delete(db)
        // Nothing of the engine's may query PGlite once it closes (such a query never returns).
        await stopPruning(db)
        await close()
      }
      return db
    },
    async close() {
      closed = true
      await Promise.allSettled(spares.splice(0))
      await Promise.allSettled(
        [...open].map(async (db) => {
          open.delete(db)
          await stopPruning(db)
          await db.close()
        }),
      )
    },
  }
}
