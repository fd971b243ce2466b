// Loading a database's cluster from IndexedDB into memory, in place of
// IDBFS's populate (which lists both sides and removes every local file the
// store lacks). A database made from the template stores only what differs
// from it (./idb-fs.ts): the template's files are written first (shared,
// copy on write: src/engine/template-image.ts), then its records on top, and
// its tombstones remove what it deleted. A database without a base (made by
// initdb, or by plain IDBFS) holds every file, and loads as before.

import { writeImage, type DataDirImage } from '../../engine/template-image'
import { isChunked, parseChunk } from './chunks'
import { request } from './registry'

/** IDBFS's record for one path, and the two kinds of record only tabgres writes. */
export type StoredRecord =
  | { timestamp: Date; mode: number; contents?: Uint8Array; link?: string; deleted?: undefined }
  /** The path was deleted (a layered database: the template may hold it). */
  | { timestamp: Date; deleted: true }

/** The record naming the template a layered database was made from. Not a path: paths start with '/'. */
export const BASE_KEY = 'tabgres:base'
export interface BaseRecord {
  timestamp: Date
  templateKey: string
}

/** Emscripten's FS and IDBFS, as far as loading uses them. */
export interface LoadFS {
  analyzePath(path: string): { exists: boolean; object?: { mode: number } | null }
  mkdirTree(path: string, mode?: number): void
  writeFile(path: string, data: Uint8Array, opts?: { canOwn?: boolean }): void
  symlink(target: string, path: string): void
  unlink(path: string): void
  rmdir(path: string): void
  readdir(path: string): string[]
  lstat(path: string): { mode: number }
  chmod(path: string, mode: number): void
  utime(path: string, atime: number, mtime: number): void
  isDir(mode: number): boolean
  lookupPath(path: string): { node: never }
}
export interface LoadIDBFS {
  getDB(name: string, cb: (err: unknown, db?: IDBDatabase) => void): void
  DB_STORE_NAME: string
}

export interface Loaded {
  db: IDBDatabase
  /** Nothing was stored: a new database. */
  created: boolean
  /** The template this database is layered on, or null (it holds every file). */
  baseKey: string | null
  /** The template's paths (absolute), empty when not layered. */
  templatePaths: Set<string>
  /** WAL segments holding the template's bytes, with no chunks stored yet: their first change is written whole. */
  fromTemplate: Set<string>
}

export function openStore(IDBFS: LoadIDBFS, mount: string): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => IDBFS.getDB(mount, (err, db) => (err || !db ? reject(err ?? new Error(`cannot open ${mount}`)) : resolve(db))))
}

async function readAll(db: IDBDatabase, store: string): Promise<[string[], unknown[]]> {
  const tx = db.transaction([store], 'readonly')
  const s = tx.objectStore(store)
  const [keys, values] = await Promise.all([request(s.getAllKeys()), request(s.getAll())])
  return [keys as string[], values]
}

/**
 * Loads `mount` from its store. `base`: for a database being created, the
 * template to lay it on (its key is stored at the first flush); `image`
 * resolves a stored base's key to the template's files.
 */
export async function loadCluster(
  FS: LoadFS,
  IDBFS: LoadIDBFS,
  mount: string,
  base: { key: string; image: DataDirImage } | null,
  image: (key: string) => Promise<DataDirImage>,
): Promise<Loaded> {
  const db = await openStore(IDBFS, mount)
  const [keys, values] = await readAll(db, IDBFS.DB_STORE_NAME)
  const at = keys.indexOf(BASE_KEY)
  const stored = at >= 0 ? (values[at] as BaseRecord).templateKey : null
  // An existing database keeps its base; a new one (nothing stored) takes the given one.
  const created = keys.length === 0
  const baseKey = stored ?? (created && base ? base.key : null)
  const templatePaths = new Set<string>()
  const fromTemplate = new Set<string>()
  if (baseKey !== null) {
    const files = base && base.key === baseKey ? base.image : await image(baseKey)
    writeImage(FS as never, mount, files)
    for (const e of files.entries) {
      const path = `${mount}/${e.path}`
      templatePaths.add(path)
      if (e.data && isChunked(path)) fromTemplate.add(path)
    }
  }
  // Keys sort parents before children; each path has one record, its last state.
  const removed: string[] = []
  keys.forEach((key, i) => {
    if (key === BASE_KEY) return
    const rec = values[i] as StoredRecord
    const chunk = parseChunk(key)
    if (chunk) fromTemplate.delete(chunk.path)
    if (rec.deleted) return void removed.push(key)
    // As IDBFS's populate stores an entry: the mode, and the time as both atime and mtime.
    const time = rec.timestamp.getTime()
    if (FS.isDir(rec.mode)) {
      FS.mkdirTree(key, rec.mode)
      FS.chmod(key, rec.mode)
      FS.utime(key, time, time)
    } else {
      if (FS.analyzePath(key).exists) FS.unlink(key)
      if (rec.link !== undefined) FS.symlink(rec.link, key)
      else {
        FS.writeFile(key, rec.contents ?? new Uint8Array(0), { canOwn: true })
        FS.chmod(key, rec.mode)
        FS.utime(key, time, time)
      }
    }
  })
  // Deepest first: a deleted directory's files go before it.
  for (const path of removed.sort().reverse()) removePath(FS, path)
  return { db, created, baseKey, templatePaths, fromTemplate }
}

function removePath(FS: LoadFS, path: string): void {
  const found = FS.analyzePath(path)
  if (!found.exists || !found.object) return
  if (FS.isDir(FS.lstat(path).mode)) {
    for (const name of FS.readdir(path)) if (name !== '.' && name !== '..') removePath(FS, `${path}/${name}`)
    FS.rmdir(path)
  } else FS.unlink(path)
}
