// The bytes behind the tab's SQLite VFS (vfs.c): every file in memory, in
// fixed chunks so that a write touches only the chunks it covers, with a
// record of the chunks changed since the last time persistence took them.
//
// Between two calls into SQLite no statement is half done, and WAL (wal2)
// keeps a database consistent at any point in the sequence of writes, so a
// copy of the changed chunks taken between calls is a crash-consistent image
// of every file at once. Persistence (a store of its own) takes that copy.

/** SQLite's open flags that matter here (sqlite3.h). */
const SQLITE_OPEN_CREATE = 0x4
const SQLITE_CANTOPEN = 14
const SQLITE_OK = 0
const SQLITE_IOERR_WRITE = 10 | (3 << 8)

export const CHUNK = 64 * 1024

interface File {
  chunks: (Uint8Array | undefined)[]
  size: number
}

/**
 * What changed since the previous `takeChanges()`, applied in this order:
 * files deleted (all their chunks go), chunks from `dropFrom` on dropped
 * (the file shrank: a later growth must not bring old bytes back), then the
 * changed chunks written and the sizes set.
 */
export interface FileChanges {
  deleted: string[]
  dropFrom: Map<string, number>
  chunks: { name: string; index: number; bytes: Uint8Array }[]
  sizes: Map<string, number>
}

export class MemoryFiles {
  readonly #files = new Map<string, File>()
  readonly #handles = new Map<number, { name: string; file: File }>()
  #next = 1
  /** Changed chunk indexes per file name, and files deleted, since the last take. */
  #dirty = new Map<string, Set<number>>()
  #deleted = new Set<string>()
  #dropFrom = new Map<string, number>()

  /** Files as persistence loaded them, before SQLite opens any. */
  load(name: string, size: number, chunks: Iterable<[number, Uint8Array]>): void {
    const file: File = { chunks: [], size }
    for (const [index, bytes] of chunks) file.chunks[index] = bytes
    this.#files.set(name, file)
  }

  names(): string[] {
    return [...this.#files.keys()]
  }

  size(name: string): number | undefined {
    return this.#files.get(name)?.size
  }

  /** Copies of the chunks changed since the last call (see the head of this file). */
  takeChanges(): FileChanges {
    const changes: FileChanges = { deleted: [...this.#deleted], dropFrom: this.#dropFrom, chunks: [], sizes: new Map() }
    for (const [name, indexes] of this.#dirty) {
      const file = this.#files.get(name)
      if (!file) continue
      changes.sizes.set(name, file.size)
      for (const index of indexes) {
        if (index * CHUNK >= file.size) continue
        const chunk = file.chunks[index]
        changes.chunks.push({ name, index, bytes: chunk ? chunk.slice() : new Uint8Array(CHUNK) })
      }
    }
    this.#dirty = new Map()
    this.#deleted = new Set()
    this.#dropFrom = new Map()
    return changes
  }

  get hasChanges(): boolean {
    return this.#dirty.size > 0 || this.#deleted.size > 0
  }

  // The VFS's calls (vfs.c's tab_* imports), with SQLite's result codes.

  open(name: string, flags: number): number {
    let file = this.#files.get(name)
    if (!file) {
      if (!(flags & SQLITE_OPEN_CREATE)) return -SQLITE_CANTOPEN
      file = { chunks: [], size: 0 }
      // A file deleted and made again in one window stays in #deleted: its old chunks go first.
      this.#files.set(name, file)
      this.#mark(name)
    }
    const id = this.#next++
    this.#handles.set(id, { name, file })
    return id
  }

  close(id: number): void {
    this.#handles.delete(id)
  }

  read(id: number, into: Uint8Array, offset: number): number {
    const { file } = this.#handle(id)
    const end = Math.min(offset + into.length, file.size)
    let done = 0
    for (let at = offset; at < end; ) {
      const index = Math.floor(at / CHUNK)
      const within = at - index * CHUNK
      const n = Math.min(CHUNK - within, end - at)
      const chunk = file.chunks[index]
      if (chunk) into.set(chunk.subarray(within, within + n), done)
      else into.fill(0, done, done + n)
      done += n
      at += n
    }
    return done
  }

  write(id: number, from: Uint8Array, offset: number): number {
    const { name, file } = this.#handle(id)
    if (!Number.isSafeInteger(offset + from.length)) return SQLITE_IOERR_WRITE
    const dirty = this.#mark(name)
    for (let done = 0; done < from.length; ) {
      const at = offset + done
      const index = Math.floor(at / CHUNK)
      const within = at - index * CHUNK
      const n = Math.min(CHUNK - within, from.length - done)
      const chunk = (file.chunks[index] ??= new Uint8Array(CHUNK))
      chunk.set(from.subarray(done, done + n), within)
      dirty.add(index)
      done += n
    }
    file.size = Math.max(file.size, offset + from.length)
    return SQLITE_OK
  }

  truncate(id: number, size: number): number {
    const { name, file } = this.#handle(id)
    if (size < file.size) {
      const last = Math.ceil(size / CHUNK)
      file.chunks.length = Math.min(file.chunks.length, last)
      const tail = size % CHUNK
      const partial = last > 0 && tail > 0 ? file.chunks[last - 1] : undefined
      if (partial) partial.fill(0, tail)
      const dirty = this.#mark(name)
      if (last > 0) dirty.add(last - 1)
      for (const index of dirty) if (index >= last) dirty.delete(index)
      this.#dropFrom.set(name, Math.min(this.#dropFrom.get(name) ?? last, last))
    }
    file.size = size
    return SQLITE_OK
  }

  fileSize(id: number): number {
    return this.#handle(id).file.size
  }

  delete(name: string): number {
    if (this.#files.delete(name)) {
      this.#dirty.delete(name)
      this.#dropFrom.delete(name)
      this.#deleted.add(name)
    }
    return SQLITE_OK
  }

  exists(name: string): boolean {
    return this.#files.has(name)
  }

  #handle(id: number): { name: string; file: File } {
    const h = this.#handles.get(id)
    if (!h) throw new Error(`sqlite file handle ${id} is not open`)
    return h
  }

  #mark(name: string): Set<number> {
    let set = this.#dirty.get(name)
    if (!set) this.#dirty.set(name, (set = new Set()))
    return set
  }
}
