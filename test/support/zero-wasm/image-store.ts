// A FileStore for zero-cache on the tab's SQLite in Node tests: every file's
// chunks in one image file, replaced whole (write, then rename) per batch, so
// a process killed mid-write leaves the previous image. Small replicas only:
// each batch rewrites the image. The tab keeps its files in IndexedDB.

import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import type { FileChanges, MemoryFiles } from '../../../src/zero/sqlite/files'
import type { FileStore } from '../../../src/zero/sqlite/persist'

type Image = Map<string, { size: number; chunks: Map<number, Uint8Array> }>

export class ImageStore implements FileStore {
  readonly #path: string
  readonly #image: Image = new Map()

  constructor(path: string) {
    this.#path = path
    if (!existsSync(path)) return
    const bytes = readFileSync(path)
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    const header = view.getUint32(0)
    const index = JSON.parse(bytes.subarray(4, 4 + header).toString('utf8')) as { name: string; size: number; chunks: [number, number, number][] }[]
    for (const f of index) {
      const chunks = new Map<number, Uint8Array>()
      for (const [i, at, n] of f.chunks) chunks.set(i, new Uint8Array(bytes.subarray(4 + header + at, 4 + header + at + n)))
      this.#image.set(f.name, { size: f.size, chunks })
    }
  }

  /** Hands the stored files to a MemoryFiles, before SQLite opens any. */
  loadInto(files: MemoryFiles): void {
    for (const [name, f] of this.#image) files.load(name, f.size, f.chunks)
  }

  apply(c: FileChanges): void {
    for (const name of c.deleted) this.#image.delete(name)
    for (const [name, from] of c.dropFrom) {
      const f = this.#image.get(name)
      if (f) for (const i of [...f.chunks.keys()]) if (i >= from) f.chunks.delete(i)
    }
    const file = (name: string) => {
      let f = this.#image.get(name)
      if (!f) this.#image.set(name, (f = { size: 0, chunks: new Map() }))
      return f
    }
    for (const { name, index, bytes } of c.chunks) file(name).chunks.set(index, bytes)
    for (const [name, size] of c.sizes) file(name).size = size
    const index: { name: string; size: number; chunks: [number, number, number][] }[] = []
    const parts: Uint8Array[] = []
    let at = 0
    for (const [name, f] of this.#image) {
      const entry = { name, size: f.size, chunks: [] as [number, number, number][] }
      for (const [i, bytes] of f.chunks) {
        entry.chunks.push([i, at, bytes.length])
        parts.push(bytes)
        at += bytes.length
      }
      index.push(entry)
    }
    const head = Buffer.from(JSON.stringify(index))
    const len = Buffer.alloc(4)
    len.writeUInt32BE(head.length)
    writeFileSync(`${this.#path}.tmp`, Buffer.concat([len, head, ...parts]))
    renameSync(`${this.#path}.tmp`, this.#path)
  }
}
