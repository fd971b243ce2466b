// The testing kit's worker (tabgres/testing/browser): many databases in one
// worker, each in memory and made from the template's files, which this
// worker decodes once. Each database has its own API (./api.ts) on its own
// MessagePort, so the page's Database handle is the same class openDatabase
// returns. One database is kept booted ahead of the next request: booting
// runs here, while the page runs the previous test.

import * as Comlink from 'comlink'
import { installErrorTransfer } from '../protocol/comlink-errors'
import type { DataDirImage } from '../engine/template-image'
import { makeApi } from './api'
import { openMemoryEngine, type BootInfo, type Engine } from './engine'
import { currentTemplate } from './storage/template-source'

/** Relative to this entry module (see ./index.ts). */
const TEMPLATE_URL = new URL('./storage/template.tar.gz', import.meta.url)

/** Decoded once per worker (./storage/template-source.ts keeps it). */
const templateImage = (): Promise<DataDirImage> => currentTemplate(TEMPLATE_URL).then((t) => t.image)

let made = 0
let spare: Promise<Engine> | null = null
let live = 0
/** Open databases, for stats. */
const engines = new Set<Engine>()

async function boot(): Promise<Engine> {
  made++
  return openMemoryEngine('test', await templateImage())
}

export interface KitStats {
  /** Databases made so far, and open now. */
  made: number
  live: number
  /** The worker's JS heap in use (Chromium's performance.memory), when known. */
  heapBytes: number | null
  /** The WebAssembly memory of the open databases (PGlite's heap: shared buffers, caches). */
  wasmBytes: number
}

/**
 * Boots the next database while this worker is idle. Not while one of its
 * databases is open: a boot is ~100-200 ms of this thread's time, and the
 * open database's test would wait behind it (its first query did, by ~170 ms).
 */
function warmWhenIdle(): void {
  if (spare || live > 0) return
  spare = boot()
  spare.catch(() => (spare = null)) // the next open boots again and reports its error
}

const kit = {
  /** Boots a database ahead of the first open (the page's kit asks each worker when it starts). */
  warm(): void {
    warmWhenIdle()
  },

  /** A fresh database whose API is served on `port`; resolves with its boot. `prewarm`: boot the next one once this worker is idle. */
  async open(port: MessagePort, name: string, prewarm: boolean): Promise<BootInfo> {
    const taken = spare ?? boot()
    spare = null
    live++
    let engine: Engine
    try {
      // Booted before its name was known (a spare): named now, for the API's messages.
      engine = { ...(await taken), name }
    } catch (e) {
      live--
      throw e
    }
    engines.add(engine)
    const api = makeApi(async () => engine)
    await api.open(engine.name)
    const close = api.close
    let closed = false
    api.close = async () => {
      try {
        await close()
      } finally {
        if (!closed) {
          closed = true
          live--
          engines.delete(engine)
          if (prewarm) warmWhenIdle()
        }
      }
    }
    Comlink.expose(api, port)
    return engine.boot
  },

  stats(): KitStats {
    const memory = (performance as Performance & { memory?: { usedJSHeapSize: number } }).memory
    let wasmBytes = 0
    for (const e of engines) wasmBytes += (e.db as unknown as { Module: { HEAPU8: Uint8Array } }).Module.HEAPU8.byteLength
    return { made, live, heapBytes: memory ? memory.usedJSHeapSize : null, wasmBytes }
  },
}

export type KitWorkerApi = typeof kit

installErrorTransfer()
Comlink.expose(kit)
