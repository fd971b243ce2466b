// One side of the capture-overhead pairs (bench/overhead.ts), in its own
// worker thread with its own PGlite, so neither database's background work
// (garbage collection, heap growth, a prune) lands inside the other's timing.
// Each request times one workload on a fresh items table, after the side has
// settled: a prune (captured side) and a garbage collection.

import { PGlite } from '@electric-sql/pglite'
import v8 from 'node:v8'
import { runInNewContext } from 'node:vm'
import { parentPort, workerData } from 'node:worker_threads'
import { installChangeTracking } from '../../src/engine/install'
import { pruneNow } from '../../src/engine/replication/prune'
import { bulkInsert, ITEMS_TABLE, rowInserts } from '../capture-workload'

export type Workload = 'rows' | 'bulk'
export interface Request {
  workload: Workload
  count: number
}

const captured: boolean = workerData.captured
const db = new PGlite()
if (captured) {
  // 'discard': with no slot the change log is pruned, so it never grows across pairs.
  await installChangeTracking(db, { retention: 'discard' })
  await db.exec('CREATE PUBLICATION bench FOR ALL TABLES')
}
// A worker cannot be started with --expose-gc; the flag can still be set from inside.
v8.setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

async function settle(): Promise<void> {
  if (captured) await pruneNow(db)
  gc()
}

parentPort!.on('message', async (r: Request | 'close') => {
  if (r === 'close') {
    await db.close()
    parentPort!.postMessage('closed')
    return
  }
  await db.exec(`DROP TABLE IF EXISTS items; ${ITEMS_TABLE}`)
  await settle()
  const ms = r.workload === 'rows' ? await rowInserts(db, 1, r.count) : await bulkInsert(db, 1, r.count)
  parentPort!.postMessage(ms)
})
parentPort!.postMessage('ready')
