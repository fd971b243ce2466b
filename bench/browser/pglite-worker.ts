// The baseline for group commit: a bare PGlite on idb://<name> in its own
// worker, as PGlite ships it (default durability: every statement flushes the
// changed files to IndexedDB before it returns).

import { PGlite } from '@electric-sql/pglite'

export interface PgliteInsertRequest {
  name: string
  inserts: number
}

export interface PgliteInsertResult {
  bootMs: number
  inserts: number
  ms: number
}

self.onmessage = async (ev: MessageEvent<PgliteInsertRequest>) => {
  const { name, inserts } = ev.data
  const t0 = performance.now()
  const db = await PGlite.create(`idb://${name}`)
  await db.exec(`CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, qty int, price numeric(10,2), at timestamptz DEFAULT now())`)
  const t1 = performance.now()
  // Each insert awaited: PGlite runs one statement (and its flush) at a time anyway.
  for (let i = 0; i < inserts; i++) {
    await db.query('INSERT INTO items (id, name, qty, price) VALUES ($1, $2, $3, $4)', [i, `item ${i}`, i, '12.50'])
  }
  const t2 = performance.now()
  await db.close()
  const result: PgliteInsertResult = { bootMs: t1 - t0, inserts, ms: t2 - t1 }
  self.postMessage(result)
}
