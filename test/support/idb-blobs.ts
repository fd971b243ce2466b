// In the page: every Blob (or File) stored anywhere in this origin's
// IndexedDB, as "database/store/key: path". WebKit refuses a Blob in
// IndexedDB in a fresh profile (and Safari's private mode always has), so
// tabgres stores bytes (Uint8Array/ArrayBuffer) only; tests check it here.

const request = <T>(r: IDBRequest<T>) =>
  new Promise<T>((resolve, reject) => {
    r.onsuccess = () => resolve(r.result)
    r.onerror = () => reject(r.error)
  })

function* blobPaths(v: unknown, path: string, seen = new Set<unknown>()): Generator<string> {
  if (v instanceof Blob) yield path
  if (v === null || typeof v !== 'object' || seen.has(v) || ArrayBuffer.isView(v) || v instanceof ArrayBuffer) return
  seen.add(v)
  const entries = v instanceof Map ? [...v.entries()] : Array.isArray(v) ? v.entries() : Object.entries(v)
  for (const [k, x] of entries) yield* blobPaths(x, `${path}.${String(k)}`, seen)
}

/** Walks every database and store (a cursor: one value in memory at a time). */
export async function blobsInIndexedDB(): Promise<{ databases: string[]; values: number; blobs: string[] }> {
  const blobs: string[] = []
  let values = 0
  const names = (await indexedDB.databases()).map((d) => d.name!).filter(Boolean)
  for (const name of names) {
    const db = await request(indexedDB.open(name))
    try {
      for (const store of Array.from(db.objectStoreNames)) {
        const cursor = db.transaction(store, 'readonly').objectStore(store).openCursor()
        await new Promise<void>((resolve, reject) => {
          cursor.onerror = () => reject(cursor.error)
          cursor.onsuccess = () => {
            const c = cursor.result
            if (!c) return resolve()
            values++
            for (const p of blobPaths(c.value, `${name}/${store}/${String(c.key)}`)) blobs.push(p)
            c.continue()
          }
        })
      }
    } finally {
      db.close()
    }
  }
  return { databases: names, values, blobs }
}
