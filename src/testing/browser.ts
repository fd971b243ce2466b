// tabgres/testing/browser: a fresh database per test in the browser (Vitest
// browser mode, Playwright pages). One kit worker holds every database the
// kit makes, in memory, made from the template's files; each comes back as
// the same Database class openDatabase returns, on its own MessagePort.

import * as Comlink from 'comlink'
import { installErrorTransfer } from '../protocol/comlink-errors'
import { Database } from '../client'
import type { WorkerApi } from '../worker/api'
import type { KitStats, KitWorkerApi } from '../worker/kit'

export { watchStream, type StreamWatch, type WatchedTransaction } from './watch'
export type { KitStats }

export interface BrowserTestKitOptions {
  /** Boot the next database while a test runs (default true). */
  prewarm?: boolean
  /** A kit worker to use instead of spawning the bundled one (custom builds). */
  worker?: Worker
}

export interface BrowserTestKit {
  /** A new, empty database with capture installed (named test_<n>); close it when the test ends. */
  fresh(): Promise<Database>
  /** What the kit worker holds: databases made and open, its heap. */
  stats(): Promise<KitStats>
  /** Ends the kit worker and every database in it. */
  close(): void
}

function spawnKitWorker(): Worker {
  return new Worker(new URL('../worker/kit.ts', import.meta.url), { type: 'module', name: 'tabgres-kit' })
}

export function createTestKit(options: BrowserTestKitOptions = {}): BrowserTestKit {
  installErrorTransfer()
  const worker = options.worker ?? spawnKitWorker()
  const kit = Comlink.wrap<KitWorkerApi>(worker)
  const prewarm = options.prewarm ?? true
  return {
    async fresh() {
      const { port1, port2 } = new MessageChannel()
      try {
        const { name, ...boot } = await kit.open(Comlink.transfer(port2, [port2]), prewarm)
        return new Database(name, boot, Comlink.wrap<WorkerApi>(port1), () => port1.close())
      } catch (e) {
        port1.close()
        throw e
      }
    },
    stats: () => kit.stats(),
    close() {
      kit[Comlink.releaseProxy]()
      worker.terminate()
    },
  }
}
