// The tab's SQLite files (files.ts) in IndexedDB: one database per replica,
// a store of chunks keyed [file, index] and a store of file sizes. Each batch
// of changes is one readwrite transaction, so what a reload finds is always
// a whole batch boundary: the crash-consistent image files.ts describes.

import type { FileChanges, MemoryFiles } from './files'
import type { FileStore } from './persist'

const CHUNKS = 'chunks'
const SIZES = 'sizes'

function done<T>(req: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result)
    req.onerror = () => reject(req.error)
  })
}

function committed(tx: IDBTransaction): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve()
    tx.onerror = () => reject(tx.error)
    tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'))
  })
}

export class IdbFileStore implements FileStore {
  readonly #db: IDBDatabase

  private constructor(db: IDBDatabase) {
    this.#db = db
  }

  /** Opens (or creates) the store called `name` in this origin. */
  static async open(name: string): Promise<IdbFileStore> {
    const req = indexedDB.open(name, 1)
    req.onupgradeneeded = () => {
      req.result.createObjectStore(CHUNKS)
      req.result.createObjectStore(SIZES)
    }
    return new IdbFileStore(await done(req))
  }

  /** Hands every stored file to `files`, before SQLite opens any. */
  async loadInto(files: MemoryFiles): Promise<void> {
    const tx = this.#db.transaction([CHUNKS, SIZES], 'readonly')
    const [names, sizes, keys, chunks] = await Promise.all([
      done(tx.objectStore(SIZES).getAllKeys()),
      done(tx.objectStore(SIZES).getAll()),
      done(tx.objectStore(CHUNKS).getAllKeys()),
      done(tx.objectStore(CHUNKS).getAll()),
    ])
    const byFile = new Map<string, [number, Uint8Array][]>()
    keys.forEach((key, i) => {
      const [name, index] = key as [string, number]
      let list = byFile.get(name)
      if (!list) byFile.set(name, (list = []))
      list.push([index, chunks[i] as Uint8Array])
    })
    names.forEach((name, i) => files.load(name as string, sizes[i] as number, byFile.get(name as string) ?? []))
  }

  apply(c: FileChanges): Promise<void> {
    const tx = this.#db.transaction([CHUNKS, SIZES], 'readwrite')
    const chunks = tx.objectStore(CHUNKS)
    const sizes = tx.objectStore(SIZES)
    const from = (name: string, index: number) => IDBKeyRange.bound([name, index], [name, Infinity])
    for (const name of c.deleted) {
      chunks.delete(from(name, 0))
      sizes.delete(name)
    }
    for (const [name, index] of c.dropFrom) chunks.delete(from(name, index))
    for (const { name, index, bytes } of c.chunks) chunks.put(bytes, [name, index])
    for (const [name, size] of c.sizes) sizes.put(size, name)
    return committed(tx)
  }

  close(): void {
    this.#db.close()
  }
}
