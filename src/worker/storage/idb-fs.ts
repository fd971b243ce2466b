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
// contents | link }), except that WAL segments are stored in chunks
// (./chunks.ts) and joined again after loading.
//
// Layered databases: one made from the template (src/engine/template.ts)
// stores only what differs from it. Its first flush writes the template's key
// (a record that is not a path) instead of ~30 MB of files that every such
// database shares; a template file it deletes is stored as a tombstone; a
// template WAL segment it writes to is stored whole the first time (a segment
// is stored in chunks from 0, never as a patch on another record). Loading
// (./idb-load.ts) writes the template's files, then the records on top.
//
// Tracking hooks the FS entry points every change goes through (Emscripten's
// syscalls call them): write, msync, truncate, node creation, symlink,
// unlink, rmdir, rename, chmod. A path is only remembered; at flush
// it is looked up again, and written if it exists or deleted if not, so
// create-then-unlink and rename chains need no bookkeeping.

import { IdbFs, type PGlite } from '@electric-sql/pglite'
import type { DataDirImage } from '../../engine/template-image'
import { CHUNK_SIZE, chunkKey, chunkRange, chunksCovering, isChunked, joinChunks, parseChunk } from './chunks'
import { BASE_KEY, loadCluster, type BaseRecord, type LoadFS, type LoadIDBFS, type StoredRecord } from './idb-load'

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
  position?: number
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
  readFile(path: string): Uint8Array
  writeFile(path: string, data: Uint8Array): void
  unlink(path: string): void
  chmod(path: string, mode: number): void
  analyzePath(path: string): { exists: boolean }
  isDir(mode: number): boolean
  isFile(mode: number): boolean
  isLink(mode: number): boolean
  [fn: string]: unknown
}
interface EmIDBFS extends LoadIDBFS {
  dbs: Record<string, IDBDatabase>
}
interface EmModule {
  FS: EmFS
  IDBFS: EmIDBFS
}

/** IDBFS's record for one path. */
type FsRecord = { timestamp: Date; mode: number; contents?: Uint8Array; link?: string }

/** Where PGlite's IdbFs mounts IDBFS for a data directory (its IndexedDB database has the same name). */
const mountFor = (dataDir: string) => `/pglite/${dataDir}`

export interface Layering {
  /**
   * For a database not stored yet: the template its files start from (only
   * its key is stored). A promise may be given: loading waits for it, so it
   * can be fetched while PGlite fetches and compiles its wasm.
   */
  base?: { key: string; image: DataDirImage } | Promise<{ key: string; image: DataDirImage }>
  /** The template's files for a stored template key (a database made earlier, maybe by another version). */
  resolveBase?: (key: string) => Promise<DataDirImage>
}

export interface FlushStats {
  flushes: number
  /** Records written or deleted, and file bytes written, over all flushes. */
  records: number
  bytes: number
}

export class GroupCommitIdbFs extends IdbFs {
  /** Paths to write whole (or delete). */
  private readonly dirty = new Set<string>()
  /** WAL segments changed in place: only these chunks to write. */
  private readonly dirtyChunks = new Map<string, Set<number>>()
  private mod: EmModule | null = null
  private mountpoint: string | null = null
  /** The template this database is layered on (null: it stores every file), and whether its key is stored yet. */
  private baseKey: string | null = null
  private baseStored = false
  /** The template's paths: deleting one stores a tombstone (else the template's file would come back at load). */
  private templatePaths = new Set<string>()
  /** Template WAL segments with nothing stored: their first change stores them whole. */
  private fromTemplate = new Set<string>()
  readonly flushStats: FlushStats = { flushes: 0, records: 0, bytes: 0 }
  /** What loading found: a new database (nothing stored), and the template it is layered on. */
  loaded: { created: boolean; baseKey: string | null } | null = null
  /**
   * When loading began (performance.now(): PGlite's wasm and file bundle are
   * ready by then), and how long it waited for the template and took to load.
   */
  loadTiming: { startedAt: number; baseWaitMs: number; loadMs: number } | null = null

  constructor(
    dataDir: string,
    private readonly layering: Layering = {},
  ) {
    super(dataDir)
  }

  override async init(pg: PGlite, opts: Parameters<IdbFs['init']>[1]): ReturnType<IdbFs['init']> {
    const result = await super.init(pg, opts)
    const preRun = result.emscriptenOpts.preRun ?? []
    // After IDBFS is mounted (super's preRun), before PostgreSQL touches a file.
    result.emscriptenOpts.preRun = [...preRun, (mod: EmModule) => this.track(mod)]
    return result
  }

  /**
   * Loads the cluster (./idb-load.ts, in place of IDBFS's populate) and joins
   * the WAL segments' chunks; what that wrote to memory is not a change.
   * Segments stored whole (by IDBFS, or before chunking existed) are
   * rewritten as chunks at the next flush.
   */
  override async initialSyncFs(): Promise<void> {
    const { FS, IDBFS } = this.mod!
    const mount = mountFor(this.dataDir!)
    if (!FS.analyzePath(mount).exists) throw new Error(`IDBFS is not mounted at ${mount}`)
    const noBase = (key: string) => Promise.reject(new Error(`database ${this.dataDir} is layered on template ${key}, and no template was given`))
    const startedAt = performance.now()
    const base = (await this.layering.base) ?? null
    const baseWaitMs = performance.now() - startedAt
    const loaded = await loadCluster(FS as unknown as LoadFS, IDBFS, mount, base, this.layering.resolveBase ?? noBase)
    this.loadTiming = { startedAt, baseWaitMs, loadMs: performance.now() - startedAt - baseWaitMs }
    const whole = joinLoadedChunks(FS, `${mount}/pg_wal`)
    this.mountpoint = mount
    this.baseKey = loaded.baseKey
    this.baseStored = !loaded.created
    this.templatePaths = loaded.templatePaths
    this.fromTemplate = loaded.fromTemplate
    this.loaded = { created: loaded.created, baseKey: loaded.baseKey }
    this.dirty.clear()
    this.dirtyChunks.clear()
    // (The template's own segments are files, not stored whole: they stay unwritten until changed.)
    for (const p of whole) if (!this.fromTemplate.has(p)) this.dirty.add(p)
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

  /** Writes everything changed since the last flush to IndexedDB, in one transaction, and waits for it. */
  flush(): Promise<void> {
    return this.snapshot().durable
  }

  /**
   * Copies everything changed since the last flush, now, and writes the copy
   * to IndexedDB in one transaction; `durable` resolves when that commits.
   * The caller holds PGlite's query lock only for the copy: statements may
   * run while IndexedDB writes.
   */
  snapshot(): { durable: Promise<void> } {
    // A new layered database stores its template's key at its first flush, changed or not.
    const storeBase = this.baseKey !== null && !this.baseStored
    if (this.dirty.size === 0 && this.dirtyChunks.size === 0 && !storeBase) return { durable: Promise.resolve() }
    const { FS, IDBFS } = this.mod!
    const whole = [...this.dirty].sort()
    const partial = [...this.dirtyChunks].filter(([p]) => !this.dirty.has(p))
    this.dirty.clear()
    this.dirtyChunks.clear()
    // Copied now, synchronously: the snapshot is of this moment (no statement runs).
    const ops: ((store: IDBObjectStore) => void)[] = []
    let bytes = 0
    const put = (key: string, rec: FsRecord | StoredRecord | BaseRecord) => {
      ops.push((store) => store.put(rec, key))
      bytes += ('contents' in rec && rec.contents?.byteLength) || 0
    }
    if (storeBase) put(BASE_KEY, { timestamp: new Date(), templateKey: this.baseKey! })
    /** A path that no longer exists: a tombstone where the template has it, else no record. */
    const gone = (path: string) => {
      if (this.templatePaths.has(path)) put(path, { timestamp: new Date(), deleted: true })
      else ops.push((store) => store.delete(path))
    }
    const putChunks = (path: string, rec: FsRecord, indexes: Iterable<number>) => {
      const data = rec.contents!
      for (const i of indexes) {
        if (i * CHUNK_SIZE >= data.byteLength) continue
        put(chunkKey(path, i), { ...rec, contents: data.slice(i * CHUNK_SIZE, (i + 1) * CHUNK_SIZE) })
      }
    }
    for (const path of whole) {
      const rec = this.record(FS, path)
      if (isChunked(path)) {
        // Whole: no chunk of an earlier version may outlive it (nor a record stored unchunked).
        this.fromTemplate.delete(path)
        ops.push((store) => store.delete(chunkRange(path)))
        if (rec?.contents) {
          ops.push((store) => store.delete(path))
          putChunks(path, rec, chunksCovering(0, rec.contents.byteLength))
        } else gone(path)
      } else if (rec) put(path, rec)
      else gone(path)
    }
    for (const [path, indexes] of partial) {
      const rec = this.record(FS, path)
      if (rec?.contents) putChunks(path, rec, [...indexes].sort((a, b) => a - b))
      else {
        ops.push((store) => store.delete(chunkRange(path)))
        gone(path)
      }
    }
    // The transaction starts here, synchronously: IndexedDB commits
    // readwrite transactions on one store in the order they were created.
    const durable = new Promise<void>((resolve, reject) => {
      const tx = IDBFS.dbs[this.mountpoint!].transaction([IDBFS.DB_STORE_NAME], 'readwrite')
      const store = tx.objectStore(IDBFS.DB_STORE_NAME)
      for (const op of ops) op(store)
      tx.oncomplete = () => resolve()
      tx.onerror = () => reject(tx.error)
      tx.onabort = () => reject(tx.error ?? new Error('IndexedDB transaction aborted'))
    }).then(
      () => {
        if (storeBase) this.baseStored = true
        this.flushStats.flushes++
        this.flushStats.records += ops.length
        this.flushStats.bytes += bytes
      },
      (e) => {
        // The next flush tries again, writing each of these whole (as they are then).
        for (const p of whole) this.dirty.add(p)
        for (const [p] of partial) this.dirty.add(p)
        throw e
      },
    )
    return { durable }
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
    // A write inside a WAL segment marks only the chunks it touched; one
    // that grows a file marks all of it (chunks must stay contiguous).
    wrap(
      'write',
      (args) => {
        const stream = args[0] as EmStream
        const node = stream.node
        if (this.mountpoint === null || node?.mount?.mountpoint !== this.mountpoint) return null
        const path = FS.getPath(node)
        const at = typeof args[4] === 'number' ? args[4] : (stream.position ?? 0)
        return { path, at, end: at + (args[3] as number), size: node.usedBytes ?? 0 }
      },
      (_args, _out, w) => {
        if (!w) return
        // A template segment's first change stores it whole (chunks from 0: ./idb-load.ts).
        if (!isChunked(w.path) || w.end > w.size || this.fromTemplate.delete(w.path)) this.dirty.add(w.path)
        else {
          let set = this.dirtyChunks.get(w.path)
          if (!set) this.dirtyChunks.set(w.path, (set = new Set()))
          for (const i of chunksCovering(w.at, w.end)) set.add(i)
        }
      },
    )
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

/**
 * Joins the chunk files IDBFS loaded into `walDir` back into segments and
 * removes them. Returns the segments that were stored whole (to rewrite as chunks).
 */
function joinLoadedChunks(FS: EmFS, walDir: string): string[] {
  if (!FS.analyzePath(walDir).exists) return []
  const groups = new Map<string, Map<number, string>>()
  const whole: string[] = []
  for (const name of FS.readdir(walDir)) {
    const path = `${walDir}/${name}`
    const chunk = parseChunk(path)
    if (chunk) {
      let g = groups.get(chunk.path)
      if (!g) groups.set(chunk.path, (g = new Map()))
      g.set(chunk.index, path)
    } else if (isChunked(path)) whole.push(path)
  }
  for (const [path, files] of groups) {
    const chunks = new Map([...files].map(([i, f]) => [i, FS.readFile(f)]))
    const mode = FS.lstat(files.get(0) ?? [...files.values()][0]).mode
    FS.writeFile(path, joinChunks(path, chunks))
    FS.chmod(path, mode)
    for (const f of files.values()) FS.unlink(f)
  }
  return whole.filter((p) => !groups.has(p))
}
