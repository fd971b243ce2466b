// PGlite's IndexedDB file system with flushing taken over by group commit,
// writing only the files that changed.
//
// PGlite keeps the cluster in Emscripten's in-memory file system and copies
// it to IndexedDB with Emscripten's IDBFS, which on every sync lists the whole
// tree on both sides (every file's stat, an IndexedDB cursor over every
// record) to find what changed: a fixed cost of tens of milliseconds per
// flush on a cluster of ~1,000 files. Here PGlite's per-statement syncs do
// nothing; GroupCommit (./group-commit.ts) calls flush() once per group of
// writes, under PGlite's query lock, so the copy lies between statements
// (crash-consistent, like a disk after a power cut: WAL recovery handles it
// at the next open). flush() writes the paths the file system reports as
// changed since the last flush, in one IndexedDB transaction.
//
// Records keep IDBFS's format (key: absolute path; value: { timestamp, mode,
// contents | link }), so the boot path is IDBFS's own, unchanged.
//
// Tracking hooks the FS entry points every change goes through (Emscripten's
// syscalls call them): write, msync, truncate, node creation, symlink,
// unlink, rmdir, rename, chmod. A path is only remembered; at flush
// it is looked up again, and written if it exists or deleted if not, so
// create-then-unlink and rename chains need no bookkeeping.

import { IdbFs, type PGlite } from '@electric-sql/pglite'

/** The parts of Emscripten's FS object used here (untyped in PGlite's typings). */
interface EmNode {
  name: string
  mode: number
  mount?: { mountpoint: string }
  contents?: ArrayBufferView | Record<string, EmNode> | null
  usedBytes?: number
  link?: string
}
interface EmStream {
  node: EmNode
}
interface EmStat {
  mode: number
  mtime: Date
}
interface EmFS {
  getPath(node: EmNode): string
  lookupPath(path: string, opts?: { follow?: boolean; parent?: boolean }): { path: string; node: EmNode }
  lstat(path: string): EmStat
  readlink(path: string): string
  readdir(path: string): string[]
  isDir(mode: number): boolean
  isFile(mode: number): boolean
  isLink(mode: number): boolean
  [fn: string]: unknown
}
interface EmIDBFS {
  dbs: Record<string, IDBDatabase>
  DB_STORE_NAME: string
}
interface EmModule {
  FS: EmFS
  IDBFS: EmIDBFS
}

/** IDBFS's record for one path. */
type FsRecord = { timestamp: Date; mode: number; contents?: Uint8Array; link?: string }

export interface FlushStats {
  flushes: number
  /** Records written or deleted, and file bytes written, over all flushes. */
  records: number
  bytes: number
}

export class GroupCommitIdbFs extends IdbFs {
  private readonly dirty = new Set<string>()
  private mod: EmModule | null = null
  private mountpoint: string | null = null
  readonly flushStats: FlushStats = { flushes: 0, records: 0, bytes: 0 }

  override async init(pg: PGlite, opts: Parameters<IdbFs['init']>[1]) {
    const result = await super.init(pg, opts)
    const preRun = result.emscriptenOpts.preRun ?? []
    // After IDBFS is mounted (super's preRun), before PostgreSQL touches a file.
    result.emscriptenOpts.preRun = [...preRun, (mod: EmModule) => this.track(mod)]
    return result
  }

  /** Loads the cluster from IndexedDB; what that wrote to memory is not a change. */
  override async initialSyncFs(): Promise<void> {
    await super.initialSyncFs()
    const dbs = Object.keys(this.mod!.IDBFS.dbs)
    if (dbs.length !== 1) throw new Error(`expected one IDBFS mount, found ${dbs.length}`)
    this.mountpoint = dbs[0]
    this.dirty.clear()
  }

  /** Called by PGlite after each statement: deferred to the group commit. */
  override syncToFs(): Promise<void> {
    return Promise.resolve()
  }

  /** PGlite's shutdown checkpoint happens after the last group commit: persist it too. */
  override async closeFs(): Promise<void> {
    await this.flush()
    return super.closeFs()
  }

  /** Writes every path changed since the last flush to IndexedDB, in one transaction, and waits for it. */
  async flush(): Promise<void> {
    if (this.dirty.size === 0) return
    const { FS, IDBFS } = this.mod!
    const paths = [...this.dirty].sort()
    this.dirty.clear()
    // Copied now, synchronously: the snapshot is of this moment (no statement runs).
    const puts: [string, FsRecord][] = []
    const deletes: string[] = []
    let bytes = 0
    for (const path of paths) {
      const rec = this.record(FS, path)
      if (rec) {
        puts.push([path, rec])
        bytes += rec.contents?.byteLength ?? 0
      } else deletes.push(path)
    }
    try {
      await new Promise<void>((resolve, reject) => {
        const tx = IDBFS.dbs[this.mountpoint!].transaction([IDBFS.DB_STORE_NAME], 'readwrite')
        const store = tx.objectStore(IDBFS.DB_STORE_NAME)
        for (const [path, rec] of puts) store.put(rec, path)
        for (const path of deletes) store.delete(path)
        tx.oncomplete = () => resolve()
        tx.onerror = () => reject(tx.error)
        tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'))
      })
    } catch (e) {
      for (const p of paths) this.dirty.add(p) // the next flush tries again
      throw e
    }
    this.flushStats.flushes++
    this.flushStats.records += paths.length
    this.flushStats.bytes += bytes
  }

  /** The record IDBFS would store for `path` now, or null when it no longer exists. */
  private record(FS: EmFS, path: string): FsRecord | null {
    let node: EmNode
    let stat: EmStat
    try {
      node = FS.lookupPath(path, { follow: false }).node
      stat = FS.lstat(path)
    } catch {
      return null
    }
    if (FS.isDir(stat.mode)) return { timestamp: stat.mtime, mode: stat.mode }
    if (FS.isLink(stat.mode)) return { timestamp: stat.mtime, mode: stat.mode, link: node.link }
    // MEMFS holds a typed array of any element type (a slice of HEAP8 is an
    // Int8Array) with spare capacity past usedBytes. Store an exact-size
    // Uint8Array copy, as IDBFS does: IndexedDB would keep a view's whole buffer.
    const c = node.contents
    const used = node.usedBytes ?? 0
    const data = ArrayBuffer.isView(c) ? new Uint8Array(c.buffer, c.byteOffset, used).slice() : new Uint8Array(0)
    return { timestamp: stat.mtime, mode: stat.mode, contents: data }
  }

  private track(mod: EmModule): void {
    this.mod = mod
    const FS = mod.FS
    /** Remembers a node of this mount. Until the mount is loaded, nothing counts (initialSyncFs). */
    const markNode = (node: EmNode | undefined) => {
      if (this.mountpoint === null || node?.mount?.mountpoint !== this.mountpoint) return
      this.dirty.add(FS.getPath(node))
    }
    const nodeAt = (path: string): EmNode | undefined => {
      try {
        return FS.lookupPath(path, { follow: false }).node
      } catch {
        return undefined // does not exist
      }
    }
    /** A node and, for a directory, everything under it (a renamed tree moves all its paths). */
    const markTree = (node: EmNode | undefined) => {
      if (!node) return
      markNode(node)
      if (FS.isDir(node.mode) && node.contents && !ArrayBuffer.isView(node.contents)) {
        for (const child of Object.values(node.contents)) markTree(child)
      }
    }
    /**
     * Replaces FS[name]: `before` sees the arguments before the call, `after`
     * its result. Tracking never changes what the call does or throws; a bug
     * in it would be a silent loss, which test/browser/storage.test.ts checks for.
     */
    const wrap = <C>(name: string, before: (args: unknown[]) => C, after: (args: unknown[], out: unknown, ctx: C) => void) => {
      const original = FS[name] as (...args: unknown[]) => unknown
      if (typeof original !== 'function') throw new Error(`Emscripten FS.${name} is missing: storage tracking cannot work`)
      FS[name] = (...args: unknown[]) => {
        const ctx = before(args)
        const out = original.apply(FS, args)
        after(args, out, ctx)
        return out
      }
    }
    const none = () => undefined
    const streamNode = (args: unknown[]) => markNode((args[0] as EmStream).node)
    const secondArgNode = (args: unknown[]) => markNode(args[1] as EmNode)
    wrap('write', none, streamNode)
    wrap('msync', none, streamNode)
    // truncate, ftruncate and fallocate (which extends with ftruncate): (stream, node, length).
    wrap('doTruncate', none, secondArgNode)
    // chmod, lchmod and fchmod: (stream, node, mode, dontFollow).
    wrap('doChmod', none, secondArgNode)
    // Every file, directory and device is created through mknod (open with O_CREAT, mkdir, ...).
    wrap('mknod', none, (_args, node) => markNode(node as EmNode))
    wrap('symlink', none, (args) => markNode(nodeAt(args[1] as string)))
    // Removed paths: remembered before they go, written as deletions.
    wrap('unlink', (args) => markNode(nodeAt(args[0] as string)), none)
    wrap('rmdir', (args) => markNode(nodeAt(args[0] as string)), none)
    wrap(
      'rename',
      (args) => markTree(nodeAt(args[0] as string)),
      (args) => markTree(nodeAt(args[1] as string)),
    )
  }
}
