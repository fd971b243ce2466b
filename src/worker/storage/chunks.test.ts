import { describe, expect, it } from 'vitest'
import { CHUNK_SIZE, chunkKey, chunksCovering, isChunked, joinChunks, parseChunk } from './chunks'

describe('WAL chunks', () => {
  const seg = '/pglite/db/pg_wal/000000010000000000000003'

  it('only WAL segment files are chunked', () => {
    expect(isChunked(seg)).toBe(true)
    expect(isChunked('/pglite/db/pg_wal/archive_status')).toBe(false)
    expect(isChunked('/pglite/db/base/5/000000010000000000000003')).toBe(false)
    expect(isChunked(`${seg}.partial`)).toBe(false)
  })

  it('keys name their file and index, and sort in file order', () => {
    expect(parseChunk(chunkKey(seg, 12))).toEqual({ path: seg, index: 12 })
    expect(parseChunk(seg)).toBeNull()
    expect(chunkKey(seg, 2) < chunkKey(seg, 10)).toBe(true)
  })

  it('a byte range maps to the chunks it touches', () => {
    expect(chunksCovering(0, 1)).toEqual([0])
    expect(chunksCovering(CHUNK_SIZE - 1, CHUNK_SIZE + 1)).toEqual([0, 1])
    expect(chunksCovering(CHUNK_SIZE, 2 * CHUNK_SIZE)).toEqual([1])
    expect(chunksCovering(5, 5)).toEqual([])
  })

  it('joins contiguous chunks and refuses gaps or short middle chunks', () => {
    const full = new Uint8Array(CHUNK_SIZE).fill(1)
    const joined = joinChunks(seg, new Map([[0, full], [1, new Uint8Array([2, 3])]]))
    expect(joined.byteLength).toBe(CHUNK_SIZE + 2)
    expect(joined[CHUNK_SIZE + 1]).toBe(3)
    expect(() => joinChunks(seg, new Map([[0, full], [2, full]]))).toThrow(/chunk 1 of 2 is missing/)
    expect(() => joinChunks(seg, new Map([[0, new Uint8Array(3)], [1, full]]))).toThrow(/chunk 0 holds 3 bytes/)
  })
})
