// What trigger-based capture can cost at least, next to what tabgres's costs
// (Node, in-memory PGlite). The engine bench's overhead targets (x1.15 for
// row inserts, x1.5 for a 10,000-row INSERT ... SELECT) are compared here
// with the cheapest triggers that could capture anything at all:
// - tabgres: installChangeTracking, as shipped;
// - empty: an AFTER STATEMENT trigger with a transition table whose
//   PL/pgSQL function only returns (the price of being told at all);
// - minimal: that trigger plus the least a capture can store, one INSERT of
//   each statement's rows as record text into an unindexed one-column table
//   (no sequence number, transaction id, or output-settings guard);
// - text: that trigger plus only turning the rows into record text, stored
//   nowhere (what storing values as PostgreSQL's text output costs);
// - typed: the rows built as an array of the table's own row type instead of
//   text, stored nowhere (cheaper; but a log holding values of that type would
//   stop the table from being altered or dropped).
//
// Each sample runs on a fresh database, warmed up, with only it open; the
// variants take turns and the minimum of the samples is reported (the
// machine's noise only ever adds time). With --server the row inserts run in
// a PL/pgSQL loop inside the database: no JavaScript between statements, so
// the figures show the database's own cost per statement.
//
//   npm run bench:capture-floor [-- --quick] [-- --server]

import { PGlite } from '@electric-sql/pglite'
import { mkdirSync, writeFileSync } from 'node:fs'
import { installChangeTracking } from '../src/engine/install'
import { bulkInsert, ITEMS_TABLE, rowInserts } from './capture-workload'

const quick = process.argv.includes('--quick')
const server = process.argv.includes('--server')
const ROWS = quick ? 1000 : 3000
const BULK = 10_000
const SAMPLES = quick ? 3 : 7

const RECORD = `ROW(r.id, r.name, r.qty, r.price, r.at)`

/** A statement trigger with a transition table running `body` (PL/pgSQL). */
const statementTrigger = (body: string, setup = '') => `${setup}
  CREATE FUNCTION floor_capture() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN ${body} RETURN NULL; END $$;
  CREATE TRIGGER floor_capture AFTER INSERT ON items REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION floor_capture();`

const VARIANTS: Record<string, (db: PGlite) => Promise<unknown>> = {
  plain: async () => {},
  tabgres: async (db) => {
    await installChangeTracking(db)
    await db.exec('CREATE PUBLICATION p FOR ALL TABLES')
  },
  empty: (db) => db.exec(statementTrigger('')),
  minimal: (db) => db.exec(statementTrigger(`INSERT INTO floor_log SELECT ${RECORD}::text FROM new_rows r;`, 'CREATE TABLE floor_log (row_text text);')),
  text: (db) => db.exec(statementTrigger(`PERFORM array_agg(${RECORD}::text) FROM new_rows r;`)),
  typed: (db) => db.exec(statementTrigger(`PERFORM array_agg(${RECORD}::items) FROM new_rows r;`)),
}

async function sample(variant: string) {
  const db = new PGlite()
  await db.exec(ITEMS_TABLE)
  await VARIANTS[variant](db)
  await rowInserts(db, 1_000_000, ROWS, server)
  await bulkInsert(db, 2_000_000, BULK)
  const row = await rowInserts(db, 3_000_000, ROWS, server)
  const bulk = await bulkInsert(db, 4_000_000, BULK)
  await db.close()
  return { row, bulk }
}

const times: Record<string, { row: number[]; bulk: number[] }> = {}
for (let s = 0; s < SAMPLES; s++) {
  for (const v of Object.keys(VARIANTS)) {
    const t = await sample(v)
    times[v] ??= { row: [], bulk: [] }
    times[v].row.push(t.row)
    times[v].bulk.push(t.bulk)
  }
}

const best = (xs: number[]) => Math.min(...xs)
const plain = { row: best(times.plain.row), bulk: best(times.plain.bulk) }
const results = Object.fromEntries(
  Object.entries(times).map(([v, t]) => [
    v,
    {
      rowInsertUs: (best(t.row) * 1000) / ROWS,
      rowCaptureUs: ((best(t.row) - plain.row) * 1000) / ROWS,
      rowRatio: best(t.row) / plain.row,
      bulkRowUs: (best(t.bulk) * 1000) / BULK,
      bulkCaptureUs: ((best(t.bulk) - plain.bulk) * 1000) / BULK,
      bulkRatio: best(t.bulk) / plain.bulk,
    },
  ]),
)
console.table(
  Object.fromEntries(
    Object.entries(results).map(([v, r]) => [
      v,
      {
        'row insert (us)': r.rowInsertUs.toFixed(1),
        'row: capture (us)': r.rowCaptureUs.toFixed(1),
        'row (x)': r.rowRatio.toFixed(3),
        'bulk: capture per row (us)': r.bulkCaptureUs.toFixed(2),
        'bulk (x)': r.bulkRatio.toFixed(3),
      },
    ]),
  ),
)
const file = server ? 'capture-floor-server.json' : 'capture-floor.json'
mkdirSync(new URL('./results/', import.meta.url), { recursive: true })
writeFileSync(
  new URL(`./results/${file}`, import.meta.url),
  JSON.stringify({ date: new Date().toISOString(), node: process.version, quick, server, rows: ROWS, bulkRows: BULK, samples: SAMPLES, results, times }, null, 2),
)
console.log(`wrote bench/results/${file}`)
