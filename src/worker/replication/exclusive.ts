// Running engine SQL between transactions only.
//
// PGlite is one backend session: SQL we send while the application has an
// explicit transaction open would run inside it (and see its uncommitted rows,
// or be rolled back with it). We take PGlite's query lock, send an empty probe
// query and read its ReadyForQuery status: 'I' means no transaction block is
// open, and none can open while we hold the lock.

import type { PGlite } from '@electric-sql/pglite'
import { protocol } from '@electric-sql/pglite'
import { toPgError } from '../../shared/errors'

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

async function run(db: PGlite, sql: string, sync: boolean): Promise<{ rows: Rows; status: string }> {
  let result
  try {
    result = await db.execProtocol(protocol.serialize.query(sql), { syncToFs: sync, throwOnError: true })
  } catch (e) {
    throw toPgError(e)
  }
  let rows: Rows = []
  let status = '?'
  for (const m of result.messages as unknown as Message[]) {
    if (m.name === 'rowDescription') rows = []
    else if (m.name === 'dataRow') rows.push(m.fields!)
    else if (m.name === 'readyForQuery') status = m.status!
  }
  return { rows, status }
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
      query: async (sql) => (await run(db, sql, durable)).rows,
    })
  })
}

/** Quote a value as an SQL string literal (standard_conforming_strings on). */
export function literal(s: string): string {
  if (s.includes('\0')) throw toPgError({ code: '22021', message: 'invalid byte sequence for encoding "UTF8": 0x00' })
  return `'${s.replace(/'/g, "''")}'`
}

/** Retry fn until the application has no transaction open. */
export async function idle<T>(db: PGlite, fn: (s: IdleSession) => Promise<T>, durable = false): Promise<T> {
  for (let delay = 1; ; delay = Math.min(delay * 2, 50)) {
    const r = await whenIdle(db, fn, durable)
    if (r !== BUSY) return r
    // An application transaction is open; wait for it to end (no commit signal
    // fires for a rollback or for a transaction with no captured change).
    await new Promise((res) => setTimeout(res, delay))
  }
}
