// The workload behind the capture-overhead figures, shared by bench/engine.ts
// and bench/capture-floor.ts so both time exactly the same statements: a table
// of typical columns, parameterised single-row inserts in one transaction,
// and one INSERT ... SELECT.

import type { PGlite } from '@electric-sql/pglite'
import { performance } from 'node:perf_hooks'

export const ITEMS_TABLE = `CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL, qty int, price numeric(10,2), at timestamptz DEFAULT now())`

/**
 * `count` single-row INSERTs into items, ids from `from`, in one transaction;
 * returns the milliseconds taken. Driven from JavaScript, one query each, or,
 * with `server`, by a PL/pgSQL loop inside the database (no JavaScript
 * between statements: the database's own cost per statement).
 */
export async function rowInserts(db: PGlite, from: number, count: number, server = false): Promise<number> {
  const t0 = performance.now()
  if (server) {
    await db.exec(`DO $$ BEGIN FOR i IN 0..${count - 1} LOOP
      INSERT INTO items (id, name, qty, price) VALUES (${from} + i, 'row ' || i, i, 12.50); END LOOP; END $$`)
  } else {
    await db.transaction(async (tx) => {
      for (let i = 0; i < count; i++) {
        await tx.query('INSERT INTO items (id, name, qty, price) VALUES ($1, $2, $3, $4)', [from + i, `row ${i}`, i, '12.50'])
      }
    })
  }
  return performance.now() - t0
}

/** One INSERT ... SELECT of `rows` rows into items, ids from `from`; returns the milliseconds taken. */
export async function bulkInsert(db: PGlite, from: number, rows: number): Promise<number> {
  const t0 = performance.now()
  await db.query(`INSERT INTO items (id, name, qty, price) SELECT g, 'bulk ' || g, g, 12.5 FROM generate_series(${from}, ${from + rows - 1}) g`)
  return performance.now() - t0
}
