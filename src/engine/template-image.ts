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

/** Emscripten's FS, as far as an image is written with it. */
export interface ImageTarget {
  mkdirTree(path: string, mode?: number): void
  writeFile(path: string, data: Uint8Array): void
  chmod(path: string, mode: number): void
}

/** Decodes a data directory archive (PGlite's dumpDataDir: tar, gzip or not). */
export async function readImage(archive: Blob | Uint8Array): Promise<DataDirImage> {
  let bytes = archive instanceof Uint8Array ? archive : new Uint8Array(await archive.arrayBuffer())
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    const gunzip = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new DecompressionStream('gzip'))
    bytes = new Uint8Array(await new Response(gunzip).arrayBuffer())
  }
  const entries = untar(bytes)
  return { entries, bytes: entries.reduce((n, e) => n + (e.data?.byteLength ?? 0), 0) }
}

/** Writes the image's files under `root` (each file a copy: databases never share bytes). */
export function writeImage(FS: ImageTarget, root: string, image: DataDirImage): void {
  FS.mkdirTree(root)
  for (const e of image.entries) {
    const path = e.path ? `${root}/${e.path}` : root
    if (e.data === null) FS.mkdirTree(path)
    else {
      FS.mkdirTree(path.slice(0, path.lastIndexOf('/')))
      FS.writeFile(path, e.data)
    }
    FS.chmod(path, e.mode)
  }
}

/** PGlite's in-memory file system, starting from `image` instead of an empty directory. */
export class ImageMemoryFs extends MemoryFS {
  constructor(private readonly image: DataDirImage) {
    super()
  }

  override async initialSyncFs(): Promise<void> {
    await super.initialSyncFs()
    // After the module exists, before PGlite looks for PG_VERSION (it then resumes the cluster).
    const mod = (this as unknown as { pg: { Module: { FS: ImageTarget; ENV: Record<string, string> } } }).pg.Module
    writeImage(mod.FS, mod.ENV.PGDATA, this.image)
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
