// Bare PGlite in a worker of a tabs-bench page (./page.ts), as PGlite ships
// it: the anchor for the tabs' figures, in the same engine and run.
//   { open: null }       in memory, then answers each { query } (round trips);
//   { open: '<name>' }   on idb://<name>: boots, answers SELECT 1, closes
//                        (a reopen, once the name exists).

import { PGlite } from '@electric-sql/pglite'

export type BareRequest = { open: string | null } | { query: string }

let db: PGlite | null = null

self.onmessage = async (ev: MessageEvent<BareRequest>) => {
  const req = ev.data
  if ('query' in req) {
    await db!.query(req.query)
    return self.postMessage(null)
  }
  const t0 = performance.now()
  const opened = await PGlite.create(req.open === null ? undefined : `idb://${req.open}`)
  await opened.query('SELECT 1')
  const workerMs = performance.now() - t0
  if (req.open === null) db = opened
  else await opened.close()
  self.postMessage({ workerMs })
}
