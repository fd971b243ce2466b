// WAL segments stored in chunks. A flush after a small commit changes a few
// kilobytes of the WAL segment being written, but IDBFS's format stores a
// file as one record, so every flush would rewrite the whole segment (1 MB).
// Segment files are therefore stored as fixed-size chunk records next to the
// ordinary ones: key `<path>#chunk.<index>` (index zero-padded, so keys sort
// in file order), value an IDBFS file record holding that range. IDBFS loads
// them as files named that way; the loader (idb-fs.ts) joins them back into
// the segment before PostgreSQL starts.

export const CHUNK_SIZE = 64 * 1024
export const CHUNK_SEPARATOR = '#chunk.'

/** WAL segment files: pg_wal/ and a 24-hex-digit name. */
const SEGMENT = /\/pg_wal\/[0-9A-F]{24}$/

export const isChunked = (path: string): boolean => SEGMENT.test(path)

export const chunkKey = (path: string, index: number): string => `${path}${CHUNK_SEPARATOR}${String(index).padStart(5, '0')}`

/** All chunk keys of `path`, as an IndexedDB key range. */
export const chunkRange = (path: string): IDBKeyRange => IDBKeyRange.bound(`${path}${CHUNK_SEPARATOR}`, `${path}${CHUNK_SEPARATOR}\uffff`)

/** The file a chunk key or chunk file name belongs to, and the chunk's index; null for other paths. */
export function parseChunk(key: string): { path: string; index: number } | null {
  const at = key.lastIndexOf(CHUNK_SEPARATOR)
  if (at < 0) return null
  const index = Number(key.slice(at + CHUNK_SEPARATOR.length))
  return Number.isInteger(index) ? { path: key.slice(0, at), index } : null
}

/** Chunk indexes covering bytes [start, end). */
export function chunksCovering(start: number, end: number): number[] {
  const out: number[] = []
  if (end <= start) return out
  for (let i = Math.floor(start / CHUNK_SIZE); i * CHUNK_SIZE < end; i++) out.push(i)
  return out
}

/**
 * Joins a file's chunks (index → bytes). They must run from 0 without a gap
 * and every chunk but the last must be full: anything else means a chunk was
 * lost, and the file is refused rather than rebuilt wrong.
 */
export function joinChunks(path: string, chunks: Map<number, Uint8Array>): Uint8Array {
  const n = chunks.size
  let size = 0
  for (let i = 0; i < n; i++) {
    const c = chunks.get(i)
    if (!c) throw new Error(`${path}: chunk ${i} of ${n} is missing`)
    if (i < n - 1 && c.byteLength !== CHUNK_SIZE) throw new Error(`${path}: chunk ${i} holds ${c.byteLength} bytes, not ${CHUNK_SIZE}`)
    size += c.byteLength
  }
  const out = new Uint8Array(size)
  for (let i = 0; i < n; i++) out.set(chunks.get(i)!, i * CHUNK_SIZE)
  return out
}
