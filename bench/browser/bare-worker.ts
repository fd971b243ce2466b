// Bare PGlite in a worker, as PGlite ships it, for the boot comparison: boots
// (in memory, or on idb://<name>), answers SELECT 1, closes, and reports.

import { PGlite } from '@electric-sql/pglite'

export interface BareBootRequest {
  /** null: in memory. */
  idb: string | null
}

self.onmessage = async (ev: MessageEvent<BareBootRequest>) => {
  const t0 = performance.now()
  const db = await PGlite.create(ev.data.idb === null ? undefined : `idb://${ev.data.idb}`)
  await db.query('SELECT 1')
  const workerMs = performance.now() - t0
  await db.close()
  self.postMessage({ workerMs })
}
