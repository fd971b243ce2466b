// The replica applier against real PGlite: a primary with change tracking
// streams pgoutput (the engine's walsender) into a second PGlite through the
// applier; after each scenario both sides are compared table by table.
// Some cases feed hand-built messages to reach paths a stream rarely takes.

import { PGlite } from '@electric-sql/pglite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { PgoutputMessage } from '../../protocol/pgoutput'
import { compareDatabases, streamInto, type StreamedReplica } from '../../../test/support/replica'
import { ReplicaApplier, ReplicaApplyError, type ApplyTarget } from './apply'
import { ident, insertSql, textArray, updateSql } from './sql'

// PGlite boots in seconds: one streamed pair for the stream cases (each
// with its own tables, compared as a whole) and one target for hand-built messages.
let primary: PGlite
let replica: PGlite
let stream: StreamedReplica
let scratch: PGlite

beforeAll(async () => {
  primary = new PGlite()
  replica = new PGlite()
  scratch = new PGlite()
  stream = await streamInto(primary, replica, { slot: 's', publication: 'p' })
})

afterAll(async () => {
  await stream.stop()
  for (const db of [primary, replica, scratch]) await db.close()
})

function pair(): { primary: PGlite; replica: PGlite; stream: StreamedReplica } {
  return { primary, replica, stream }
}

async function expectEqual(primary: PGlite, replica: PGlite): Promise<void> {
  expect(await compareDatabases(primary, replica)).toBeNull()
}

const rel = (oid: number, name: string, cols: [string, number, number?][], identity: 'd' | 'f' = 'd'): PgoutputMessage => ({
  tag: 'R',
  relationOid: oid,
  namespace: 'public',
  relation: name,
  replicaIdentity: identity,
  columns: cols.map(([n, typeOid, flags]) => ({ name: n, typeOid, typeMod: -1, flags: flags ?? 0 })),
})
const B = (xid: number): PgoutputMessage => ({ tag: 'B', finalLsn: BigInt(xid) * 100n, commitTime: 0n, xid })
const C = (xid: number): PgoutputMessage => ({ tag: 'C', flags: 0, commitLsn: BigInt(xid) * 100n, endLsn: BigInt(xid) * 100n + 16n, commitTime: 0n })
const ins = (oid: number, ...v: (string | null)[]): PgoutputMessage => ({
  tag: 'I',
  relationOid: oid,
  new: { kind: 'N', columns: v.map((x) => (x === null ? { kind: 'n' } : { kind: 't', value: x })) },
})

describe('sql text', () => {
  it('quotes identifiers with quotes, backslashes, semicolons and unicode', () => {
    expect(ident('a"b')).toBe('"a""b"')
    expect(ident('x; DROP TABLE t; --')).toBe('"x; DROP TABLE t; --"')
    expect(ident('Ünï "ç" ✓')).toBe('"Ünï ""ç"" ✓"')
    expect(textArray(['a', 'b"c', 'd\\e', ''])).toBe('{"a","b\\"c","d\\\\e",""}')
  })

  it('binds every value as text cast to its column type, NULL inline, unchanged TOAST left out', () => {
    const cols = [
      { name: 'id', type: 'integer' },
      { name: 'j', type: 'jsonb' },
      { name: 'big', type: 'text' },
    ]
    expect(insertSql('"public"."t"', cols, ['1', null, 'x'])).toEqual({
      sql: 'INSERT INTO "public"."t" ("id", "j", "big") VALUES ($1::text::integer, NULL, $2::text::text)',
      params: ['1', 'x'],
    })
    expect(updateSql('"public"."t"', cols, { by: 'key', columns: [0], cells: ['1', null, undefined] }, ['1', '{}', undefined])).toEqual({
      sql: 'UPDATE "public"."t" SET "id" = $1::text::integer, "j" = $2::text::jsonb WHERE "id" = $3::text::integer RETURNING 1',
      params: ['1', '{}', '1'],
    })
  })
})

describe('replica applier', () => {
  it('replicates inserts, updates, key changes and deletes of many types, hostile names included', async () => {
    const { primary, replica, stream } = pair()
    await primary.exec(`
      CREATE SCHEMA "Odd ""Schema"" ✓";
      CREATE TABLE "Odd ""Schema"" ✓"."t; DROP TABLE x; --" (
        "id ""k""" int PRIMARY KEY, "Ünïcode" text, n numeric(12, 3), b bool, ts timestamptz, j jsonb, js json,
        raw bytea, arr text[], ia int[], u uuid, big bigint, f float8, d date, iv interval, p point, v varchar(5));
      CREATE TABLE plain (a int, b text, PRIMARY KEY (b, a));`)
    const t = `"Odd ""Schema"" ✓"."t; DROP TABLE x; --"`
    await primary.query(
      `INSERT INTO ${t} VALUES (1, $1, 1.5, true, '2024-01-02 03:04:05.678+02', '{"a": [1, "x"]}', '{"k":  1}', '\\x00ff',
         ARRAY['a"b', NULL, 'c,d', ''], '{1,NULL,3}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 9007199254740993, -0, '2024-02-29',
         '1 day 02:00', '(1,2)', 'abcde')`,
      ["it's \"quoted\"\nline two\ttab \\ backslash ✓ 😀"],
    )
    await primary.exec(`INSERT INTO ${t} ("id ""k""") VALUES (2); INSERT INTO plain VALUES (1, 'x'), (2, 'y')`)
    await primary.exec(`UPDATE ${t} SET "Ünïcode" = 'changed', f = 'NaN', n = NULL WHERE "id ""k""" = 1`)
    await primary.exec(`UPDATE ${t} SET "id ""k""" = 10 WHERE "id ""k""" = 2`)
    await primary.exec(`UPDATE plain SET a = 3, b = 'z' WHERE a = 1`)
    await primary.exec(`DELETE FROM plain WHERE a = 2`)
    await stream.catchUp()
    await expectEqual(primary, replica)
    const { rows } = await replica.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${t} WHERE "id ""k""" = 10`)
    expect(rows[0].n).toBe(1)
  })

  it('applies a transaction as one transaction on the target and resolves the Commit with its LSNs', async () => {
    const replica = scratch
    const applier = new ReplicaApplier(replica)
    await applier.apply(B(1))
    await applier.apply(rel(16400, 'one', [['id', 23, 1]]))
    await applier.apply(ins(16400, '1'))
    expect(applier.inTransaction).toBe(true)
    // Another caller on the same PGlite waits for the replicated transaction (PGlite's transaction lock).
    let seen: number | null = null
    const reader = replica.query<{ n: number }>('SELECT count(*)::int AS n FROM one').then((r) => (seen = r.rows[0].n))
    await applier.apply(ins(16400, '2'))
    expect(seen).toBeNull()
    const commit = await applier.apply(C(1))
    await reader
    expect(seen).toBe(2)
    expect(commit).toEqual({ xid: 1, commitLsn: 100n, endLsn: 116n })
    expect(applier.lastCommit).toEqual(commit)
    expect(applier.transactions).toBe(1)
  })

  it('works on a target without transaction(): BEGIN and COMMIT of its own', async () => {
    const execs: string[] = []
    const target: ApplyTarget = {
      query: (sql, params) => scratch.query(sql, params),
      exec: (sql) => (execs.push(sql), scratch.exec(sql)),
    }
    const applier = new ReplicaApplier(target)
    const upd: PgoutputMessage = { tag: 'U', relationOid: 16401, new: { kind: 'N', columns: [{ kind: 't', value: '1' }, { kind: 't', value: 'c' }] } }
    for (const m of [B(1), rel(16401, 'plainly', [['id', 23, 1], ['v', 25]]), ins(16401, '1', 'a'), ins(16401, '2', 'b'), upd, C(1)]) {
      await applier.apply(m)
    }
    expect(execs[0]).toBe('BEGIN')
    expect(execs.at(-1)).toBe('COMMIT')
    expect((await scratch.query('SELECT * FROM plainly ORDER BY id')).rows).toEqual([{ id: 1, v: 'c' }, { id: 2, v: 'b' }])
    await applier.apply(B(2))
    await applier.apply(ins(16401, '3', 'x'))
    await applier.reset()
    expect(execs.at(-1)).toBe('ROLLBACK')
  })

  it('follows added, dropped and retyped columns, a renamed table and a changed primary key', async () => {
    const { primary, replica, stream } = pair()
    await primary.exec(`CREATE TABLE t (id int PRIMARY KEY, a text, b int); INSERT INTO t VALUES (1, 'x', 1)`)
    await primary.exec(`ALTER TABLE t ADD COLUMN c jsonb; INSERT INTO t VALUES (2, 'y', 2, '[1]')`)
    await primary.exec(`ALTER TABLE t DROP COLUMN a; UPDATE t SET b = 3 WHERE id = 1`)
    await primary.exec(`ALTER TABLE t ALTER COLUMN b TYPE bigint; INSERT INTO t VALUES (3, 5000000000, NULL)`)
    await primary.exec(`ALTER TABLE t RENAME TO "renamed ✓"; INSERT INTO "renamed ✓" VALUES (4, 4, '{}')`)
    await primary.exec(`ALTER TABLE "renamed ✓" DROP CONSTRAINT t_pkey, ADD PRIMARY KEY (id, b); INSERT INTO "renamed ✓" VALUES (4, 5, NULL)`)
    await primary.exec(`UPDATE "renamed ✓" SET c = '"k"' WHERE id = 4 AND b = 5`)
    await stream.catchUp()
    await expectEqual(primary, replica)
    const { rows } = await replica.query<{ t: string }>(`SELECT format_type(atttypid, atttypmod) AS t FROM pg_attribute WHERE attrelid = '"renamed ✓"'::regclass AND attname = 'b'`)
    expect(rows[0].t).toBe('bigint')
    expect((await replica.query(`SELECT 1 FROM pg_class WHERE relname = 't'`)).rows).toEqual([])
  })

  it('an update and a delete under REPLICA IDENTITY FULL without a key touch one of two identical rows', async () => {
    const { primary, replica, stream } = pair()
    await primary.exec(`CREATE TABLE f (a int, j json, p point, n numeric); ALTER TABLE f REPLICA IDENTITY FULL;
      INSERT INTO f VALUES (1, '{"x":1}', '(1,1)', 1.0), (1, '{"x":1}', '(1,1)', 1.0), (1, '{"x":1}', '(1,1)', 1.00), (2, NULL, NULL, NULL)`)
    await primary.exec(`UPDATE f SET a = 5 WHERE ctid = (SELECT ctid FROM f WHERE a = 1 LIMIT 1)`)
    await primary.exec(`UPDATE f SET a = 6 WHERE n::text = '1.00'`)
    await primary.exec(`DELETE FROM f WHERE a = 2`)
    await stream.catchUp()
    await expectEqual(primary, replica)
  })

  it('an update that leaves a large TOASTed value unchanged keeps it on the replica', async () => {
    const { primary, replica, stream } = pair()
    await primary.exec(`CREATE TABLE big (id int PRIMARY KEY, doc text, n int); ALTER TABLE big ALTER COLUMN doc SET STORAGE EXTERNAL`)
    await primary.query('INSERT INTO big VALUES (1, $1, 0)', ['x'.repeat(100_000)])
    await primary.exec('UPDATE big SET n = 1')
    const frames: string[] = []
    const orig = stream.applier.apply.bind(stream.applier)
    stream.applier.apply = (m) => {
      if (m.tag === 'U') frames.push(m.new.columns.map((c) => c.kind).join(''))
      return orig(m)
    }
    await stream.catchUp().finally(() => (stream.applier.apply = orig))
    expect(frames).toEqual(['tut'])
    await expectEqual(primary, replica)
  })

  it('replicates TRUNCATE, rolled-back work and savepoints', async () => {
    const { primary, replica, stream } = pair()
    await primary.exec(`CREATE TABLE a (id int PRIMARY KEY); CREATE TABLE b (id int PRIMARY KEY);
      INSERT INTO a SELECT generate_series(1, 5); INSERT INTO b VALUES (1)`)
    await primary.exec(`BEGIN; INSERT INTO a VALUES (6); SAVEPOINT s; DELETE FROM a; ROLLBACK TO SAVEPOINT s; INSERT INTO a VALUES (7); COMMIT`)
    await primary.exec(`BEGIN; DELETE FROM b; ROLLBACK`)
    await primary.exec(`TRUNCATE a, b; INSERT INTO b VALUES (2)`)
    await stream.catchUp()
    await expectEqual(primary, replica)
    expect((await replica.query('SELECT id FROM b')).rows).toEqual([{ id: 2 }])
  })

  it('an enum column is text on a replica without the type, and the enum on one that has it', async () => {
    const { primary, replica, stream } = pair()
    await replica.exec(`CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy')`)
    await primary.exec(`CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy'); CREATE DOMAIN pos AS int CHECK (VALUE > 0);
      CREATE TABLE e (id pos PRIMARY KEY, m mood, ms mood[]); INSERT INTO e VALUES (1, 'ok', '{sad,happy}')`)
    await stream.catchUp()
    await expectEqual(primary, replica)
    const { rows } = await replica.query<{ c: string; t: string }>(
      `SELECT attname AS c, format_type(atttypid, atttypmod) AS t FROM pg_attribute WHERE attrelid = 'e'::regclass AND attnum > 0 ORDER BY attnum`,
    )
    // The domain arrives as its base type (pgoutput names a domain's base type).
    expect(rows).toEqual([{ c: 'id', t: 'integer' }, { c: 'm', t: 'mood' }, { c: 'ms', t: 'mood[]' }])

    const other = scratch
    const applier = new ReplicaApplier(other)
    for (const m of [
      { tag: 'Y', typeOid: 16500, namespace: 'public', typeName: 'mood' },
      B(1),
      rel(16501, 'e2', [['id', 23, 1], ['m', 16500]]),
      ins(16501, '1', 'ok'),
      C(1),
    ] as PgoutputMessage[]) {
      await applier.apply(m)
    }
    expect((await other.query(`SELECT format_type(atttypid, -1) AS t FROM pg_attribute WHERE attrelid = 'e2'::regclass AND attname = 'm'`)).rows).toEqual([{ t: 'text' }])
  })

  it('an error on the target rejects with that error, rolls back, and stops the applier until reset()', async () => {
    const replica = scratch
    await replica.exec('CREATE TABLE dup (id int PRIMARY KEY); INSERT INTO dup VALUES (1)')
    const applier = new ReplicaApplier(replica)
    await applier.apply(B(1))
    await applier.apply(rel(16400, 'dup', [['id', 23, 1]]))
    await applier.apply(ins(16400, '2'))
    const err = await applier.apply(ins(16400, '1')).catch((e) => e)
    expect(err.code).toBe('23505')
    expect(applier.inTransaction).toBe(false)
    await expect(applier.apply(C(1))).rejects.toBeInstanceOf(ReplicaApplyError)
    expect((await replica.query('SELECT id FROM dup')).rows).toEqual([{ id: 1 }])
    await applier.reset()
    for (const m of [B(2), rel(16400, 'dup', [['id', 23, 1]]), ins(16400, '2'), C(2)]) await applier.apply(m)
    expect((await replica.query('SELECT id FROM dup ORDER BY id')).rows).toEqual([{ id: 1 }, { id: 2 }])
  })

  it('an update or delete of a row the replica lacks is an error (or skipped when asked)', async () => {
    const replica = scratch
    const del: PgoutputMessage = { tag: 'D', relationOid: 16400, old: { kind: 'K', columns: [{ kind: 't', value: '9' }] } }
    const strict = new ReplicaApplier(replica)
    await strict.apply(B(1))
    await strict.apply(rel(16400, 'missing', [['id', 23, 1]]))
    await expect(strict.apply(del)).rejects.toThrow(/did not find the row to be deleted in "public"."missing"/)
    const lenient = new ReplicaApplier(replica, { missingRow: 'skip' })
    for (const m of [B(2), rel(16400, 'missing', [['id', 23, 1]]), del, C(2)]) await lenient.apply(m)
    expect(lenient.lastCommit?.xid).toBe(2)
  })

  it('reset() rolls back a transaction whose stream ended before its Commit', async () => {
    const replica = scratch
    const applier = new ReplicaApplier(replica)
    for (const m of [B(1), rel(16400, 'never', [['id', 23, 1]]), ins(16400, '1')]) await applier.apply(m)
    await applier.reset()
    expect(applier.inTransaction).toBe(false)
    expect((await replica.query(`SELECT to_regclass('never') AS r`)).rows).toEqual([{ r: null }])
  })

  it('a table renamed while the stream was down is renamed on the replica, not created again (found by the fuzz with reconnects)', async () => {
    const applier = new ReplicaApplier(scratch)
    const named = (name: string) => rel(16600, name, [['id', 23, 1]])
    for (const m of [B(1), named('before'), ins(16600, '1'), C(1)]) await applier.apply(m)
    await applier.reset()
    for (const m of [B(2), named('after'), ins(16600, '2'), C(2)]) await applier.apply(m)
    // A rename in a transaction that never committed is forgotten with it.
    await applier.reset()
    for (const m of [B(3), named('never'), ins(16600, '3')]) await applier.apply(m)
    await applier.reset()
    for (const m of [B(4), named('last'), ins(16600, '4'), C(4)]) await applier.apply(m)
    const { rows } = await scratch.query<{ t: string | null }>(
      `SELECT to_regclass('before')::text AS t UNION ALL SELECT to_regclass('after')::text UNION ALL SELECT to_regclass('never')::text`,
    )
    expect(rows).toEqual([{ t: null }, { t: null }, { t: null }])
    expect((await scratch.query('SELECT id FROM last ORDER BY id')).rows).toEqual([{ id: 1 }, { id: 2 }, { id: 4 }])
  })

  it('rejects protocol misuse: a second Begin, a row change before its Relation, binary tuples', async () => {
    // Each failure rolls its transaction back, which frees the target for the next.
    const a = new ReplicaApplier(scratch)
    await a.apply(B(1))
    await expect(a.apply(B(2))).rejects.toThrow(/inside the open transaction/)
    const b = new ReplicaApplier(scratch)
    await b.apply(B(1))
    await expect(b.apply(ins(1, '1'))).rejects.toThrow(/before its Relation/)
    const c = new ReplicaApplier(scratch)
    await c.apply(B(1))
    await c.apply(rel(16400, 'bin', [['id', 23, 1]]))
    await expect(c.apply({ tag: 'I', relationOid: 16400, new: { kind: 'N', columns: [{ kind: 'b', value: new Uint8Array([1]) }] } })).rejects.toThrow(/binary/)
    expect(await scratch.query('SELECT 1 AS one')).toMatchObject({ rows: [{ one: 1 }] })
  })
})
