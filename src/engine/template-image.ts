// A data directory held in memory as its files (the template, decoded once),
// and a PGlite file system that starts from one. A fresh database is then a
// copy of those files: no initdb, and no tarball parsed again per database
// (PGlite's loadDataDir reads the archive through a stream each time).

import { MemoryFS } from '@electric-sql/pglite'

/** One file or directory, its path relative to the data directory. `data` null: a directory. */
export interface ImageEntry {
  path: string
  mode: number
  data: Uint8Array | null
}

export interface DataDirImage {
  readonly entries: readonly ImageEntry[]
  /** File bytes in all: what each copy costs. */
  readonly bytes: number
}

/** A node of Emscripten's in-memory file system (MEMFS), as far as an image is written into it. */
interface MemNode {
  mode: number
  contents?: Uint8Array | null
  usedBytes?: number
  node_ops: { mknod(parent: MemNode, name: string, mode: number, dev: number): MemNode }
  stream_ops: StreamOps
}
/** MEMFS's file stream operations; only write changes a file's bytes where they are. */
interface StreamOps {
  write(stream: { node: MemNode }, buffer: Uint8Array, offset: number, length: number, position: number, canOwn?: boolean): number
  [op: string]: unknown
}

/** Emscripten's FS, as far as an image is written with it. */
export interface ImageTarget {
  mkdirTree(path: string, mode?: number): void
  lookupPath(path: string): { node: MemNode }
}

const S_IFDIR = 0o040000
const S_IFREG = 0o100000

/** Decodes a data directory archive (PGlite's dumpDataDir: tar, gzip or not). */
export async function readImage(archive: Uint8Array): Promise<DataDirImage> {
  let bytes = archive
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    const gunzip = new Response(archive as Uint8Array<ArrayBuffer>).body!.pipeThrough(new DecompressionStream('gzip'))
    bytes = new Uint8Array(await new Response(gunzip).arrayBuffer())
  }
  const entries = untar(bytes)
  return { entries, bytes: entries.reduce((n, e) => n + (e.data?.byteLength ?? 0), 0) }
}

/**
 * Writes the image's files under `root`. A file's bytes are the image's own
 * until the database first writes to it, then its own copy (MEMFS writes in
 * place; every other change, truncation or growth, makes a new array): most
 * files of a test database are never written, and copying all ~30 MB took
 * ~100 ms of a boot in Chromium. Nodes are made in their parent directly, as
 * MEMFS keeps them, not through paths.
 */
export function writeImage(FS: ImageTarget, root: string, image: DataDirImage): void {
  const dirs = new Map<string, MemNode>()
  const dir = (path: string): MemNode => {
    let node = dirs.get(path)
    if (!node) {
      const abs = path ? `${root}/${path}` : root
      FS.mkdirTree(abs)
      node = FS.lookupPath(abs).node
      dirs.set(path, node)
    }
    return node
  }
  for (const e of image.entries) {
    if (e.data === null) {
      dir(e.path).mode = S_IFDIR | e.mode
      continue
    }
    const slash = e.path.lastIndexOf('/')
    const parent = dir(slash < 0 ? '' : e.path.slice(0, slash))
    const node = parent.node_ops.mknod(parent, e.path.slice(slash + 1), S_IFREG | e.mode, 0)
    node.contents = e.data
    node.usedBytes = e.data.byteLength
    node.stream_ops = copyOnWrite(node.stream_ops)
    shared.add(node)
  }
}

/** Files whose bytes are still the image's. */
const shared = new WeakSet<MemNode>()
const cowOps = new WeakMap<StreamOps, StreamOps>()

/** `ops`, except that a write to a file still holding the image's bytes first gives it its own copy. */
function copyOnWrite(ops: StreamOps): StreamOps {
  let cow = cowOps.get(ops)
  if (!cow) {
    cow = {
      ...ops,
      write(stream, buffer, offset, length, position, canOwn) {
        const node = stream.node
        if (shared.delete(node) && node.contents) node.contents = node.contents.slice(0, node.usedBytes)
        return ops.write(stream, buffer, offset, length, position, canOwn)
      },
    }
    cowOps.set(ops, cow)
  }
  return cow
}

/** PGlite's in-memory file system, starting from `image` instead of an empty directory. */
export class ImageMemoryFs extends MemoryFS {
  /** How long writing the image took (ms): part of PGlite's start, reported with a boot's phases. */
  writeMs = 0

  constructor(private readonly image: DataDirImage) {
    super()
  }

  override async initialSyncFs(): Promise<void> {
    await super.initialSyncFs()
    // After the module exists, before PGlite looks for PG_VERSION (it then resumes the cluster).
    const mod = (this as unknown as { pg: { Module: { FS: ImageTarget; ENV: Record<string, string> } } }).pg.Module
    const t0 = performance.now()
    writeImage(mod.FS, mod.ENV.PGDATA, this.image)
    this.writeMs = performance.now() - t0
  }
}

/**
 * The entries of a POSIX tar archive: regular files and directories, the
 * only kinds a data directory dump holds (anything else is refused, not
 * skipped). ustar's name prefix and pax path records are honoured.
 */
export function untar(bytes: Uint8Array): ImageEntry[] {
  const entries: ImageEntry[] = []
  const text = new TextDecoder()
  let paxPath: string | null = null
  for (let off = 0; off + 512 <= bytes.length; ) {
    const header = bytes.subarray(off, off + 512)
    if (header.every((b) => b === 0)) break // end of archive
    const field = (at: number, length: number) => {
      const raw = header.subarray(at, at + length)
      const end = raw.indexOf(0)
      return text.decode(end < 0 ? raw : raw.subarray(0, end))
    }
    const octal = (at: number, length: number) => parseInt(field(at, length).trim() || '0', 8)
    const size = octal(124, 12)
    const type = header[156] === 0 ? '0' : String.fromCharCode(header[156])
    const prefix = field(257, 6).startsWith('ustar') ? field(345, 155) : ''
    const name = paxPath ?? (prefix ? `${prefix}/${field(0, 100)}` : field(0, 100))
    paxPath = null
    const body = bytes.subarray(off + 512, off + 512 + size)
    if (body.length < size) throw new Error(`tar archive cut short in ${name}`)
    off += 512 + Math.ceil(size / 512) * 512
    if (type === 'x') {
      paxPath = paxRecord(text.decode(body), 'path')
      continue
    }
    if (type === 'g') continue // global pax header: nothing a data directory needs
    const path = name.replace(/^(\.?\/)+/, '').replace(/\/+$/, '')
    const mode = octal(100, 8) & 0o7777
    if (type === '5') entries.push({ path, mode, data: null })
    else if (type === '0' || type === '7') entries.push({ path, mode, data: body })
    else throw new Error(`tar entry ${name}: type '${type}' is not a file or directory`)
  }
  return entries
}

/** A pax extended header's record ("<length> <key>=<value>\n"), or null. */
function paxRecord(records: string, key: string): string | null {
  for (const line of records.split('\n')) {
    const m = /^\d+ ([^=]+)=(.*)$/s.exec(line)
    if (m && m[1] === key) return m[2]
  }
  return null
}
