// tabgres/testing/browser: a fresh database per test in the browser (Vitest
// browser mode, Playwright pages). One kit worker holds every database the
// kit makes, in memory, made from the template's files; each comes back as
// the same Database class openDatabase returns, on its own MessagePort.

import * as Comlink from 'comlink'
import { installErrorTransfer } from '../protocol/comlink-errors'
import { Database, fixedLink } from '../client'
import type { WorkerApi } from '../worker/api'
import type { KitStats, KitWorkerApi } from '../worker/kit'

export { watchStream, type StreamWatch, type WatchedTransaction } from './watch'
export type { KitStats }

export interface BrowserTestKitOptions {
  /** Boot each worker's next database ahead, while that worker is idle (default true). */
  prewarm?: boolean
  /**
   * Kit workers, used in turn (default 2). A worker runs one thing at a
   * time and boots its next database only while none of its databases is
   * open; with two, one boots (on another core) while the other's database
   * runs a test.
   */
  workers?: number
  /** Kit workers to use instead of spawning the bundled one (custom builds). */
  spawn?: () => Worker
}

export interface BrowserTestKit {
  /** A new, empty database with capture installed (named test_<n>); close it when the test ends. */
  fresh(): Promise<Database>
  /** What the kit workers hold: databases made and open, their memory. */
  stats(): Promise<KitStats>
  /** Ends the kit workers and every database in them. */
  close(): void
}

function spawnKitWorker(): Worker {
  return new Worker(new URL('../worker/kit.ts', import.meta.url), { type: 'module', name: 'tabgres-kit' })
}

export function createTestKit(options: BrowserTestKitOptions = {}): BrowserTestKit {
  installErrorTransfer()
  const prewarm = options.prewarm ?? true
  const workers = Array.from({ length: Math.max(1, options.workers ?? 2) }, () => {
    const worker = (options.spawn ?? spawnKitWorker)()
    // A worker that fails to load (its script, PGlite's files) never answers
    // Comlink: its error event fails every call instead of leaving it waiting.
    const failed = new Promise<never>((_, reject) => {
      worker.addEventListener('error', (e) => {
        e.preventDefault()
        reject(new Error(`the testing kit's worker failed: ${e.message || 'it could not load (its script or the files it fetches)'}`))
      })
    })
    failed.catch(() => {}) // reported to the call that meets it
    const kit = Comlink.wrap<KitWorkerApi>(worker)
    if (prewarm) Promise.race([kit.warm(), failed]).catch(() => {}) // a failure is reported by fresh()
    return { worker, kit, failed }
  })
  let turn = 0
  return {
    async fresh() {
      const { kit, failed } = workers[turn++ % workers.length]
      const name = `test_${turn}`
      const { port1, port2 } = new MessageChannel()
      try {
        const boot = await Promise.race([kit.open(Comlink.transfer(port2, [port2]), name, prewarm), failed])
        const api = Comlink.wrap<WorkerApi>(port1)
        return new Database(name, fixedLink(api, boot, () => (api[Comlink.releaseProxy](), port1.close())), boot)
      } catch (e) {
        port1.close()
        throw e
      }
    },
    async stats() {
      const all = await Promise.all(workers.map((w) => Promise.race([w.kit.stats(), w.failed])))
      return all.reduce((sum, s) => ({
        made: sum.made + s.made,
        live: sum.live + s.live,
        heapBytes: sum.heapBytes === null || s.heapBytes === null ? null : sum.heapBytes + s.heapBytes,
        wasmBytes: sum.wasmBytes + s.wasmBytes,
      }))
    },
    close() {
      for (const { worker, kit } of workers) {
        kit[Comlink.releaseProxy]()
        worker.terminate()
      }
    },
  }
}
