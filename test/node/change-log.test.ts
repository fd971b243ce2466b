// The change log's storage: one _tabgres.statement_changes row per capturing
// statement, read back as one change per sequence number. Whatever the
// storage, readers must see exactly what a row per change gave: consecutive
// sequence numbers in statement order, old/new pairs and TOAST flags per row,
// batches that may cut a statement anywhere, pruning by whole transactions.

import { PGlite } from '@electric-sql/pglite'
import { afterEach, describe, expect, it } from 'vitest'
import { getChangesSince, installChangeTracking as installOrez } from '../../src/orez/change-tracker'
import { installChangeTracking } from '../../src/engine/install'
import { handleReplicationQuery } from '../../src/wire/walsender'
import { idle } from '../../src/engine/replication/exclusive'
import { pruneChangeLog, slotHorizon, stopPruning, type Retention } from '../../src/engine/replication/prune'
import { Consumer } from '../support/consumer'

let db: PGlite | undefined
afterEach(async () => {
  await db?.close()
  db = undefined
})

/** One prune; callers stop background pruning first (acknowledgements and commits start one), so the result is this prune's. */
async function pruneOnce(db: PGlite, retention: Retention) {
  return idle(db, (s) => pruneChangeLog(s, retention, slotHorizon(db)), true)
}

async function open(install: (db: PGlite) => Promise<void> = installChangeTracking): Promise<PGlite> {
  db = new PGlite()
  await install(db)
  await db.exec(`CREATE TABLE t (id int PRIMARY KEY, v text); CREATE PUBLICATION p FOR TABLE t;`)
  return db
}

type Change = { seq: number; op: string; new_row: string | null; old_row: string | null; toast_unchanged: number[] | null }

/** Earlier versions left no install mark (install.ts installMark), so an open installs again. */
async function asEarlierVersion(db: PGlite) {
  await db.exec('COMMENT ON SCHEMA _tabgres IS NULL')
}

async function changes(db: PGlite): Promise<Change[]> {
  const { rows } = await db.query<Change>(
    `SELECT seq::int AS seq, op::text AS op, new_row, old_row, toast_unchanged FROM _tabgres.changes ORDER BY seq`,
  )
  return rows
}

async function one<T>(db: PGlite, sql: string): Promise<T> {
  return Object.values((await db.query<Record<string, T>>(sql)).rows[0])[0]
}

/** The reader's lines ("seq xid relid op toast new old") after `after`, read `lim` at a time. */
async function readAll(db: PGlite, after: number, lim: number): Promise<string[]> {
  const lines: string[] = []
  for (;;) {
    const { rows } = await db.query<{ n: number; c: string | null; m: string | null }>(
      `SELECT batch_count::int AS n, batch_changes AS c, batch_messages AS m FROM _tabgres.read_batch($1, $2)`,
      [after, lim],
    )
    const batch = rows[0].c?.split('\n') ?? []
    expect(batch.length).toBe(rows[0].n)
    // Non-transactional messages come from their files, in the same span of sequence numbers.
    const messages = (rows[0].m ?? '').split('\n').filter(Boolean)
    const seq = (l: string) => Number(l.split(' ')[0])
    lines.push(...[...batch, ...messages].sort((a, b) => seq(a) - seq(b)))
    if (rows[0].n < lim) return lines
    after = Number(batch[batch.length - 1].split(' ')[0])
  }
}

describe('change log storage', () => {
  it('stores one row per statement and shows one change per sequence number, in statement order', async () => {
    const db = await open()
    await db.exec(`INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 5) g`)
    await db.exec(`INSERT INTO t SELECT g, 'none' FROM generate_series(1, 0) g`)
    await db.exec(`UPDATE t SET v = v || '!' WHERE id IN (2, 4)`)
    await db.exec(`BEGIN; INSERT INTO t VALUES (9, 'gone'); ROLLBACK`)
    await db.exec(`BEGIN; DELETE FROM t WHERE id > 3; TRUNCATE t; SELECT pg_logical_emit_message(true, 'pre', 'hi'); COMMIT`)
    // 5 inserts, 2 updates, 1 rolled back (a gap), 2 deletes, a truncate, a message.
    expect(await one(db, 'SELECT count(*)::int FROM _tabgres.statement_changes')).toBe(5)
    expect(await one(db, 'SELECT _tabgres.position()::int')).toBe(12)
    const got = await changes(db)
    const relid = await one(db, `SELECT 't'::regclass::oid::int`)
    expect(got.map((c) => [c.seq, c.op, c.new_row, c.old_row])).toEqual([
      [1, 'I', '(1,v1)', null],
      [2, 'I', '(2,v2)', null],
      [3, 'I', '(3,v3)', null],
      [4, 'I', '(4,v4)', null],
      [5, 'I', '(5,v5)', null],
      [6, 'U', '(2,v2!)', '(2,v2)'],
      [7, 'U', '(4,v4!)', '(4,v4)'],
      [9, 'D', null, '(4,v4!)'],
      [10, 'D', null, '(5,v5)'],
      // A TRUNCATE statement: its flags and its tables' OIDs.
      [11, 'T', `(0,${relid})`, null],
      [12, 'M', '6869', 'pre'],
    ])
    // The rolled-back insert's sequence number stays a gap; the next change follows it.
    await db.exec(`INSERT INTO t VALUES (1, 'again')`)
    expect((await changes(db)).at(-1)?.seq).toBe(13)
  })

  it('keeps old/new pairs and unchanged-TOAST flags per row within one statement', async () => {
    const db = await open()
    // Values too large and too random to stay inline: stored out of line.
    const big = (k: number) => `(SELECT string_agg(md5(i::text || '${k}'), '') FROM generate_series(1, 200) i)`
    await db.exec(`INSERT INTO t VALUES (1, ${big(1)}), (2, ${big(2)}), (3, ${big(3)})`)
    await db.exec(`UPDATE t SET id = id + 10, v = CASE WHEN id = 2 THEN 'small' ELSE v END`)
    const updates = (await changes(db)).filter((c) => c.op === 'U')
    expect(updates.map((c) => [c.seq, c.toast_unchanged])).toEqual([
      [4, [2]],
      [5, null],
      [6, [2]],
    ])
    for (const u of updates) {
      const oldId = Number(u.old_row!.slice(1, u.old_row!.indexOf(',')))
      expect(u.new_row!.startsWith(`(${oldId + 10},`)).toBe(true)
    }
    expect(updates[1].new_row).toBe('(12,small)')
    // The reader sees the same flags.
    const lines = await readAll(db, 3, 2)
    expect(lines.map((l) => l.split(' ').slice(0, 5).join(' ').replace(/^\d+ \d+ \d+ /, ''))).toEqual(['U 2', 'U ', 'U 2'])
  })

  it('reads the same changes whatever the batch limit, cutting statements anywhere', async () => {
    const db = await open()
    await db.exec(`INSERT INTO t SELECT g, 'a' || g FROM generate_series(1, 40) g`)
    await db.exec(`BEGIN; UPDATE t SET v = 'b' WHERE id <= 7; SELECT pg_logical_emit_message(false, 'x', 'y');
                   DELETE FROM t WHERE id > 30; COMMIT`)
    await db.exec(`BEGIN; INSERT INTO t VALUES (100, 'rolled back'); ROLLBACK`)
    await db.exec(`INSERT INTO t SELECT g, 'c' || g FROM generate_series(41, 53) g`)
    const whole = await readAll(db, 0, 1000)
    expect(whole.length).toBe(40 + 7 + 1 + 10 + 13)
    expect(whole.map((l) => Number(l.split(' ')[0]))).toEqual([
      ...Array.from({ length: 58 }, (_, k) => k + 1),
      ...Array.from({ length: 13 }, (_, k) => k + 60),
    ])
    for (const lim of [1, 2, 3, 7, 13, 40, 58]) expect(await readAll(db, 0, lim)).toEqual(whole)
    // Starting anywhere, inside a statement or in the gap, reads the rest.
    for (const after of [0, 1, 39, 40, 41, 47, 58, 59, 60, 72]) {
      expect(await readAll(db, after, 5)).toEqual(whole.filter((l) => Number(l.split(' ')[0]) > after))
    }
  })

  it('getChangesSince pages through statements change by change, skipping messages and dropped tables', async () => {
    // getChangesSince is orez's API: it reads what orez's install keeps.
    const db = await open((db) => installOrez(db))
    await db.exec(`INSERT INTO t SELECT g, 'a' || g FROM generate_series(1, 10) g`)
    await db.exec(`SELECT pg_logical_emit_message(true, 'skipped', 'by getChangesSince')`)
    await db.exec(`CREATE TABLE gone (id int); INSERT INTO gone VALUES (1), (2); DROP TABLE gone`)
    await db.exec(`UPDATE t SET v = 'b' WHERE id <= 4`)
    const ids: number[] = []
    for (let w = 0; ; ) {
      const page = await getChangesSince(db, w, 3)
      if (page.length === 0) break
      expect(page.length === 3 || ids.length + page.length === 14).toBe(true)
      ids.push(...page.map((c) => c.id))
      w = page.at(-1)!.watermark
    }
    expect(ids).toEqual([...Array.from({ length: 10 }, (_, k) => k + 1), 14, 15, 16, 17])
  })

  it('prunes whole transactions only, even when the acknowledged position is inside a statement', async () => {
    const db = await open()
    await stopPruning(db)
    await handleReplicationQuery('CREATE_REPLICATION_SLOT s LOGICAL pgoutput', db)
    await db.exec(`INSERT INTO t VALUES (1, 'a')`)
    await db.exec(`INSERT INTO t SELECT g, 'b' FROM generate_series(2, 4) g`)
    const c = new Consumer('s', { publication: 'p', ackEvery: 0 })
    await c.connect(db, 0n)
    await c.until(() => c.commitLsns.length === 2)
    // Between the first and the second change of the three-row statement.
    c.ack(c.commitLsns[0] + 64n + 16n)
    await c.stop()
    const r = await pruneOnce(db, 'keep')
    expect([r.changes, r.transactions]).toEqual([1, 1])
    expect((await changes(db)).map((x) => x.seq)).toEqual([2, 3, 4])
    expect(await one(db, 'SELECT count(*)::int FROM _tabgres.statement_changes')).toBe(1)
  })

  it("retention 'discard' prunes multi-row statements whole", async () => {
    const db = await open()
    await stopPruning(db)
    await db.exec(`INSERT INTO t SELECT g, 'a' FROM generate_series(1, 50) g`)
    await db.exec(`UPDATE t SET v = 'b'`)
    const r = await pruneOnce(db, 'discard')
    expect(r.changes).toBe(100)
    expect(await one(db, 'SELECT count(*)::int FROM _tabgres.statement_changes')).toBe(0)
  })

  it('stores a large statement out of line uncompressed, also in a log created by an earlier version', async () => {
    const db = await open()
    const storage = () => db.query<{ attstorage: string }>(
      `SELECT attstorage FROM pg_attribute WHERE attrelid = '_tabgres.statement_changes'::regclass
        AND attname IN ('new_rows', 'old_rows', 'toast_unchanged') ORDER BY attname`)
    // Earlier versions left the arrays compressible (STORAGE EXTENDED); opening again changes that.
    await db.exec(`ALTER TABLE _tabgres.statement_changes ALTER COLUMN new_rows SET STORAGE EXTENDED`)
    await asEarlierVersion(db)
    await installChangeTracking(db)
    expect((await storage()).rows.map((r) => r.attstorage)).toEqual(['e', 'e', 'e'])
    // Highly compressible rows: pglz would shrink them to a fraction.
    await db.exec(`INSERT INTO t SELECT g, repeat('x', 100) FROM generate_series(1, 500) g`)
    const { rows } = await db.query<{ compression: string | null; stored: number; raw: number }>(
      `SELECT pg_column_compression(new_rows) AS compression, pg_column_size(new_rows) AS stored,
              octet_length(new_rows::text) AS raw FROM _tabgres.statement_changes`)
    expect(rows).toHaveLength(1)
    expect(rows[0].compression).toBeNull()
    expect(rows[0].stored).toBeGreaterThan(500 * 100)
    expect((await changes(db)).map((c) => c.new_row)).toEqual(
      Array.from({ length: 500 }, (_, k) => `(${k + 1},${'x'.repeat(100)})`))
  })

  it('moves a change log stored a row per change (earlier versions) into statement rows on open', async () => {
    const db = await open()
    await db.exec(`INSERT INTO t VALUES (1, 'a'), (2, 'b')`)
    const before = await changes(db)
    // The earlier layout: a table with a row per change, and capture functions that write to it.
    await db.exec(`
      CREATE TABLE _tabgres.old_changes AS SELECT * FROM _tabgres.changes;
      DROP VIEW _tabgres.changes;
      DELETE FROM _tabgres.statement_changes;
      ALTER TABLE _tabgres.old_changes RENAME TO changes;
      ALTER TABLE _tabgres.changes ADD PRIMARY KEY (seq);
      CREATE OR REPLACE FUNCTION _tabgres.capture_insert_${await one(db, `SELECT 't'::regclass::oid`)}() RETURNS trigger
        LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'old capture function'; END $$;`)
    await asEarlierVersion(db)
    await installChangeTracking(db)
    expect(await changes(db)).toEqual(before)
    await db.exec(`INSERT INTO t VALUES (3, 'c')`)
    expect((await changes(db)).map((x) => [x.seq, x.new_row])).toEqual([
      [1, '(1,a)'],
      [2, '(2,b)'],
      [3, '(3,c)'],
    ])
  })

  it('tables tracked before TRUNCATE statements were grouped: each TRUNCATE row names its own table until the open adds the trigger', async () => {
    const db = await open()
    await db.exec(`CREATE TABLE u (id int PRIMARY KEY)`)
    const [t, u] = [await one<number>(db, `SELECT 't'::regclass::oid::int`), await one<number>(db, `SELECT 'u'::regclass::oid::int`)]
    const truncates = async () => (await changes(db)).filter((c) => c.op === 'T').map((c) => c.new_row)
    // Earlier versions had no BEFORE TRUNCATE trigger.
    await db.exec(`DROP TRIGGER _tabgres_0_truncate ON t; DROP TRIGGER _tabgres_0_truncate ON u`)
    await db.exec(`TRUNCATE t, u RESTART IDENTITY`)
    expect(await truncates()).toEqual([`(2,${t})`, `(2,${u})`])
    await asEarlierVersion(db)
    await installChangeTracking(db)
    await db.exec(`TRUNCATE t, u`)
    expect((await truncates()).slice(2)).toEqual([`(0,"${t} ${u}")`])
  })
})
