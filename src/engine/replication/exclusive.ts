// Running engine SQL between transactions only.
//
// PGlite is one backend session: SQL we send while the application has an
// explicit transaction open would run inside it (and see its uncommitted rows,
// or be rolled back with it). We take PGlite's query lock, send an empty probe
// query and read its ReadyForQuery status: 'I' means no transaction block is
// open, and none can open while we hold the lock.

import type { PGlite } from '@electric-sql/pglite'
import { concatBytes } from '../../protocol/backend'
import { query } from '../../protocol/frontend'
import { PgError, toPgError } from '../../protocol/errors'

export const BUSY = Symbol('transaction in progress')

export type Rows = (string | null)[][]

export interface IdleSession {
  /** Simple-query protocol; returns the DataRow fields of the last result set. */
  query(sql: string): Promise<Rows>
}

interface Message {
  name: string
  fields?: (string | null)[]
  status?: string
}

/**
 * Protocol bytes to PGlite's backend and its reply as bytes, for callers that
 * read the reply themselves (wire sessions). PGlite's execProtocolRaw also
 * parses every reply message into objects, to dispatch notifications; the
 * streaming form with our own callback skips that (a fifth of a simple
 * statement's time in PGlite, measured on 1,800 queries of bench:wire), and
 * the wire session takes the notifications it needs out of the bytes
 * (wire/backend-filter.ts). The caller holds PGlite's query lock.
 */
export async function execRaw(db: PGlite, bytes: Uint8Array): Promise<Uint8Array> {
  const chunks: Uint8Array[] = []
  await db.execProtocolRawStream(bytes, {
    syncToFs: false,
    // A view of WASM memory, reused for the next chunk: copied.
    onRawData: (chunk) => void chunks.push(chunk.slice()),
  })
  return chunks.length === 1 ? chunks[0] : concatBytes(chunks)
}

/** Where a COPY reads the data of withCopyData(): PGlite's blob device. */
export const COPY_DATA_SOURCE = "'/dev/blob'"

/**
 * Runs `fn` (a COPY ... FROM COPY_DATA_SOURCE) with `data` as the COPY's
 * input. PGlite's backend cannot read COPY data from the protocol (it exits),
 * so the data goes through its /dev/blob device, which is one per backend:
 * the caller holds PGlite's query lock (runExclusive) until it is cleaned up.
 */
export async function withCopyData<T>(db: PGlite, data: BlobPart[], fn: () => Promise<T>): Promise<T> {
  await db._handleBlob(new Blob(data))
  try {
    return await fn()
  } finally {
    await db._cleanupBlob()
  }
}

/**
 * One simple-query round trip; returns every result set and the final
 * transaction status. The caller must hold PGlite's query lock (runExclusive).
 */
export async function run(db: PGlite, sql: string, sync: boolean): Promise<{ sets: Rows[]; status: string }> {
  // execProtocol does not check, and a query sent into a closing PGlite
  // never returns (its backend has shut down): the engine's own queries
  // (reader, pruning, group commit) stop here instead.
  if (!db.ready) {
    await db.waitReady // not started yet: fine, wait for it
    if (!db.ready) throw new PgError({ code: '57P01', message: 'the database is closing' }) // admin_shutdown
  }
  let result
  try {
    result = await db.execProtocol(query(sql), { syncToFs: sync, throwOnError: true })
  } catch (e) {
    throw toPgError(e)
  }
  const sets: Rows[] = []
  let status = '?'
  for (const m of result.messages as unknown as Message[]) {
    if (m.name === 'rowDescription') sets.push([])
    else if (m.name === 'dataRow') sets[sets.length - 1].push(m.fields!)
    else if (m.name === 'readyForQuery') status = m.status!
  }
  return { sets, status }
}

/**
 * Runs read-only SQL (several statements allowed) in one round trip, or
 * returns BUSY. No probe is needed: if an application transaction block was
 * open, the read ran inside it and ends in status 'T' or 'E', and its result,
 * which may include uncommitted rows, is discarded.
 */
export async function readWhenIdle(db: PGlite, sql: string): Promise<Rows[] | typeof BUSY> {
  return db.runExclusive(async () => {
    let r
    try {
      r = await run(db, sql, false)
    } catch (e) {
      // 25P02: the application's open transaction had already failed.
      if (toPgError(e).code === '25P02') return BUSY
      throw e
    }
    return r.status === 'I' ? r.sets : BUSY
  })
}

/**
 * Runs fn with exclusive use of the database, outside any transaction block,
 * or returns BUSY when the application has one open. `durable` flushes writes
 * to the file system after each statement (PGlite's syncToFs).
 */
export async function whenIdle<T>(
  db: PGlite,
  fn: (s: IdleSession) => Promise<T>,
  durable = false,
): Promise<T | typeof BUSY> {
  return db.runExclusive(async () => {
    const probe = await run(db, '', false)
    if (probe.status !== 'I') return BUSY
    return fn({
      query: async (sql) => (await run(db, sql, durable)).sets.at(-1) ?? [],
    })
  })
}

/** Quote a value as an SQL string literal (standard_conforming_strings on). */
export function literal(s: string): string {
  if (s.includes('\0')) throw toPgError({ code: '22021', message: 'invalid byte sequence for encoding "UTF8": 0x00' })
  return `'${s.replace(/'/g, "''")}'`
}

/** Wait a little while an application transaction is open. */
export async function backoff(attempt: number): Promise<void> {
  // No commit signal fires for a rollback or for a transaction with no
  // captured change, so the end of a transaction block is polled, briefly.
  await new Promise((res) => setTimeout(res, Math.min(2 ** attempt, 50)))
}

/** Retry fn until the application has no transaction open. */
export async function idle<T>(db: PGlite, fn: (s: IdleSession) => Promise<T>, durable = false): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const r = await whenIdle(db, fn, durable)
    if (r !== BUSY) return r
    await backoff(attempt)
  }
}
