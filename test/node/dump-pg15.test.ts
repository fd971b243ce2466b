// Leaving the tab for a real PostgreSQL: the dump of a tracked database loads
// into Debian's PostgreSQL 15 with psql -v ON_ERROR_STOP=1 (any error fails
// the load), and the server then holds the same tables, rows, sequences,
// keys, indexes, views, functions, triggers and publications, and none of
// tabgres's own objects.

import { PGlite } from '@electric-sql/pglite'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dumpDatabase } from '../../src/engine/dump/dump'
import { seedFromDump } from '../../src/engine/dump/restore'
import { installChangeTracking } from '../../src/engine/install'
import { run } from '../../src/engine/replication/exclusive'
import { freePort } from '../support/free-port'
import { PG_BIN, startPg15, type Pg15 } from '../support/pg15'

const SCHEMA = `
  CREATE SCHEMA app;
  CREATE TYPE app.mood AS ENUM ('sad', 'ok', 'happy');
  CREATE DOMAIN app.positive AS int CHECK (VALUE > 0);
  CREATE TYPE app.pair AS (a int, b text);
  CREATE SEQUENCE app.tickets START WITH 100 INCREMENT BY 5;
  CREATE FUNCTION app.shout(t text) RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT upper(t) || '!' $$;
  CREATE FUNCTION app.touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.updated := NEW.updated + 1; RETURN NEW; END $$;
  CREATE TABLE app.people (
    id serial PRIMARY KEY,
    name text NOT NULL UNIQUE,
    mood app.mood DEFAULT 'ok',
    age app.positive,
    loud text GENERATED ALWAYS AS (app.shout(name)) STORED,
    updated int NOT NULL DEFAULT 0,
    CHECK (length(name) < 100)
  );
  COMMENT ON TABLE app.people IS 'who''s who';
  COMMENT ON COLUMN app.people.mood IS 'today';
  CREATE TRIGGER people_touch BEFORE UPDATE ON app.people FOR EACH ROW EXECUTE FUNCTION app.touch();
  CREATE TABLE public.notes (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    person int REFERENCES app.people (id) ON DELETE CASCADE,
    body text, tags text[], doc jsonb, raw bytea, at timestamptz, d date, span interval, n numeric(12, 4),
    f double precision, p app.pair, ticket int DEFAULT nextval('app.tickets')
  );
  CREATE INDEX notes_body_lower ON public.notes (lower(body)) WHERE body IS NOT NULL;
  ALTER TABLE public.notes REPLICA IDENTITY FULL;
  CREATE TABLE public.events (id int, day date NOT NULL, what text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
  CREATE TABLE public.events_2026 PARTITION OF public.events FOR VALUES FROM ('2026-01-01') TO ('2027-01-01');
  CREATE TABLE public.events_rest PARTITION OF public.events DEFAULT;
  CREATE INDEX events_what ON public.events (what);
  CREATE TABLE public.empty ();
  CREATE VIEW app.cheerful AS SELECT id, name FROM app.people WHERE mood = 'happy';
  CREATE MATERIALIZED VIEW app.counts AS SELECT mood, count(*) AS n FROM app.people GROUP BY mood;
  CREATE PUBLICATION everything FOR ALL TABLES WITH (publish = 'insert, update');
  CREATE PUBLICATION "some" FOR TABLE public.notes (id, body) WHERE (id > 1), app.people;
  CREATE PUBLICATION by_schema FOR TABLES IN SCHEMA app;
`

const DATA = `
  INSERT INTO app.people (name, mood, age) VALUES ('ann', 'happy', 30), ('bob', NULL, NULL), (E'tab\\there', 'sad', 1);
  UPDATE app.people SET age = 31 WHERE name = 'ann';
  INSERT INTO public.notes (person, body, tags, doc, raw, at, d, span, n, f, p) VALUES
    (1, E'line one\\nline two\\r\\nback\\\\slash', '{a,"b c",NULL}', '{"k": [1, "x\\ty"]}', '\\x00ff0a', '2026-12-07 01:02:03.456789+05', '2026-02-28', '1 day 02:03:04', 12345678.1234, 'NaN', ROW(1, 'x')),
    (2, '', '{}', 'null', '', '-infinity', 'infinity', '-3 months', -0.0001, '-Infinity', NULL),
    (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 1e-300, ROW(NULL, E'q''uote')),
    (3, 'ünïcødé ✓ 😀', '{"\\\\"}', '{"a": "é"}', '\\x5c', '2000-01-01 00:00:00+00', '0001-01-01 BC', '0', 0, 0.1, ROW(2, ''));
  INSERT INTO public.events VALUES (1, '2026-03-01', 'this year'), (2, '2020-01-01', 'before');
  INSERT INTO public.empty DEFAULT VALUES;
  INSERT INTO public.empty DEFAULT VALUES;
  SELECT nextval('app.tickets');
  REFRESH MATERIALIZED VIEW app.counts;
`

/** Rows of every user table and view as sorted record text, keyed by name. */
const CONTENTS = `SELECT c.oid::regclass::text AS name, c.relkind::text AS kind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE n.nspname IN ('public', 'app') AND c.relkind IN ('r', 'p', 'v', 'm') ORDER BY 1`

/** What else must match: constraints (NOT NULL aside: PostgreSQL 18 lists them), indexes, sequences, publications, triggers, comments. */
const CATALOG = [
  `SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint
     WHERE connamespace IN ('public'::regnamespace, 'app'::regnamespace) AND contype <> 'n' ORDER BY 1, 2`,
  `SELECT schemaname, tablename, indexname, indexdef FROM pg_indexes WHERE schemaname IN ('public', 'app') ORDER BY 1, 2, 3`,
  `SELECT schemaname, sequencename, last_value, start_value, increment_by FROM pg_sequences WHERE schemaname IN ('public', 'app') ORDER BY 1, 2`,
  // (pg_publication_tables' attnames differ by version: PostgreSQL 18 leaves generated columns out.)
  `SELECT pubname, schemaname, tablename, rowfilter FROM pg_publication_tables ORDER BY 1, 2, 3`,
  `SELECT p.pubname, r.prrelid::regclass::text, r.prattrs::text, pg_get_expr(r.prqual, r.prrelid)
     FROM pg_publication_rel r JOIN pg_publication p ON p.oid = r.prpubid ORDER BY 1, 2`,
  `SELECT p.pubname, s.pnnspid::regnamespace::text FROM pg_publication_namespace s JOIN pg_publication p ON p.oid = s.pnpubid ORDER BY 1, 2`,
  `SELECT pubname, pubinsert, pubupdate, pubdelete, pubtruncate, pubviaroot FROM pg_publication ORDER BY 1`,
  `SELECT tgrelid::regclass::text, tgname FROM pg_trigger WHERE NOT tgisinternal AND tgname NOT LIKE '\\_tabgres%' ORDER BY 1, 2`,
  `SELECT c.oid::regclass::text, c.relreplident FROM pg_class c WHERE c.relnamespace IN ('public'::regnamespace, 'app'::regnamespace) AND c.relkind IN ('r', 'p') ORDER BY 1`,
  `SELECT obj_description('app.people'::regclass, 'pg_class'), col_description('app.people'::regclass, 3)`,
]

const SETTINGS = `SET TimeZone = 'UTC'; SET DateStyle = 'ISO, MDY'; SET IntervalStyle = 'postgres'; SET extra_float_digits = 1; SET bytea_output = 'hex'`
const raw = { getTypeParser: () => (v: string) => v }

interface Side {
  query(sql: string): Promise<string[][]>
}

describe('db dump, loaded into PostgreSQL 15', () => {
  let db: PGlite
  let server: Pg15
  let target: pg.Client
  let dump: string
  let scratch: string

  beforeAll(async () => {
    db = new PGlite()
    await installChangeTracking(db, { retention: 'discard' })
    await db.exec(SCHEMA)
    await db.exec(DATA)
    dump = await dumpDatabase(db)
    server = startPg15(await freePort(), ['postgres', 'restored'])
    scratch = mkdtempSync(join(tmpdir(), 'tabgres-dump-'))
    target = new pg.Client({ connectionString: server.url('restored') })
    await target.connect()
    for (const side of [(sql: string) => target.query(sql), (sql: string) => db.exec(sql)]) await side(SETTINGS)
  }, 120_000)

  afterAll(async () => {
    await target?.end().catch(() => {})
    server?.stop()
    await db?.close()
    if (scratch) rmSync(scratch, { recursive: true, force: true })
  })

  // Both sides answer in text as the server prints it (no client-side parsing), under the same settings.
  const ours: Side = { query: async (sql) => ((await run(db, sql, false)).sets.at(-1) ?? []).map((r) => r.map(text)) }
  const theirs: Side = { query: async (sql) => (await target.query({ text: sql, rowMode: 'array', types: raw })).rows.map((r: (string | null)[]) => r.map(text)) }

  it('loads with psql -v ON_ERROR_STOP=1, without a single error', () => {
    const file = join(scratch, 'dump.sql')
    writeFileSync(file, dump)
    const r = spawnSync(join(PG_BIN, 'psql'), ['-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', server.url('restored'), '-f', file], { encoding: 'utf8' })
    expect(r.stderr).toBe('')
    expect(r.status).toBe(0)
  })

  it('leaves every table, view and materialized view with the same rows', async () => {
    const relations = await ours.query(CONTENTS)
    expect(await theirs.query(CONTENTS)).toEqual(relations)
    expect(relations.length).toBe(8)
    for (const [name] of relations) {
      const rows = `SELECT t::text FROM ${name} t ORDER BY 1`
      const mine = await ours.query(rows)
      expect({ name, rows: await theirs.query(rows) }).toEqual({ name, rows: mine })
    }
    expect((await ours.query(`SELECT count(*) FROM public.notes`))[0][0]).toBe('4')
  })

  it('carries constraints, indexes, sequence positions, publications, triggers, identities and comments', async () => {
    for (const sql of CATALOG) expect({ sql, rows: await theirs.query(sql) }).toEqual({ sql, rows: await ours.query(sql) })
    // Nothing of tabgres's own: no schema, function or capture trigger.
    expect(await theirs.query(`SELECT nspname FROM pg_namespace WHERE nspname LIKE '%tabgres%'
      UNION ALL SELECT proname FROM pg_proc WHERE proname LIKE '%tabgres%' UNION ALL SELECT tgname FROM pg_trigger WHERE tgname LIKE '%tabgres%'`)).toEqual([])
    expect((await ours.query(`SELECT count(*) FROM pg_trigger WHERE tgname LIKE '\\_tabgres%'`))[0][0]).not.toBe('0')
  })

  it('continues where the tab left off: sequences, identity, generated columns and triggers work on the server', async () => {
    const next = `INSERT INTO app.people (name) VALUES ('new') RETURNING id, loud, (SELECT nextval('app.tickets'))`
    expect(await theirs.query(next)).toEqual(await ours.query(next))
    const identity = `INSERT INTO public.notes (body) VALUES ('x') RETURNING id, ticket`
    expect(await theirs.query(identity)).toEqual(await ours.query(identity))
    const touched = `UPDATE app.people SET age = 40 WHERE name = 'bob' RETURNING updated`
    expect(await theirs.query(touched)).toEqual([['1']])
  })

  it('loads back into a new tabgres database: its own dump, and pg_dump 15\'s of the server\'s copy', async () => {
    const compare = async (a: Side, b: Side) => {
      const relations = await a.query(CONTENTS)
      expect(await b.query(CONTENTS)).toEqual(relations)
      for (const [name] of relations) {
        const rows = `SELECT t::text FROM ${name} t ORDER BY 1`
        expect({ name, rows: await b.query(rows) }).toEqual({ name, rows: await a.query(rows) })
      }
      for (const sql of CATALOG.slice(0, 3)) expect({ sql, rows: await b.query(sql) }).toEqual({ sql, rows: await a.query(sql) })
    }
    const fresh = async () => {
      const d = new PGlite()
      await installChangeTracking(d, { retention: 'discard' })
      await d.exec(SETTINGS)
      return { d, side: { query: async (sql: string) => ((await run(d, sql, false)).sets.at(-1) ?? []).map((r) => r.map(text)) } as Side }
    }
    // A dump recomputes a materialized view on load (as pg_dump's does): bring both sources up to date first.
    for (const side of [ours, theirs]) await side.query('REFRESH MATERIALIZED VIEW app.counts')
    const own = await fresh()
    const fromServer = await fresh()
    try {
      expect(await seedFromDump(own.d, await dumpDatabase(db))).toBe('loaded')
      await compare(ours, own.side)
      // Once: a second load is a no-op.
      expect(await seedFromDump(own.d, dump)).toBe('already-loaded')
      // PostgreSQL 15's own pg_dump, plain format, of what the server holds now.
      const pgDump = spawnSync(join(PG_BIN, 'pg_dump'), ['--no-owner', '-d', server.url('restored')], { encoding: 'utf8', maxBuffer: 64 << 20 })
      expect(pgDump.stderr).toBe('')
      expect(await seedFromDump(fromServer.d, pgDump.stdout)).toBe('loaded')
      await compare(theirs, fromServer.side)
      // Loaded rows are captured like any others: the change log holds them.
      expect(Number((await fromServer.side.query(`SELECT count(*) FROM _tabgres.changes`))[0][0])).toBeGreaterThan(10)
    } finally {
      await own.d.close()
      await fromServer.d.close()
    }
  })

  it('loads nothing when a statement fails (its error intact), and never into a database with tables of its own', async () => {
    const d = new PGlite()
    await installChangeTracking(d, { retention: 'discard' })
    try {
      const broken = `CREATE TABLE public.a (id int);\nCOPY public.a (id) FROM stdin;\n1\n\\.\nCREATE TABLE public.b (id int REFERENCES public.nowhere);\n`
      await expect(seedFromDump(d, broken)).rejects.toMatchObject({ code: '42P01', message: 'relation "public.nowhere" does not exist' })
      expect((await d.query(`SELECT to_regclass('public.a') AS a`)).rows).toEqual([{ a: null }])
      await expect(seedFromDump(d, `\\connect other\nSELECT 1;`)).rejects.toMatchObject({ code: '0A000' })
      await d.exec(`CREATE TABLE mine (id int)`)
      await expect(seedFromDump(d, dump)).rejects.toMatchObject({ code: '55000' })
      expect((await d.query(`SELECT to_regclass('app.people') AS p`)).rows).toEqual([{ p: null }])
    } finally {
      await d.close()
    }
  })

  it('lists what it cannot carry in its header instead of dropping it in silence', async () => {
    await db.exec(`CREATE POLICY mine ON public.notes USING (true); ALTER TABLE public.notes ENABLE ROW LEVEL SECURITY`)
    try {
      const header = (await dumpDatabase(db)).split('\n').filter((l) => l.startsWith('--   '))
      expect(header).toEqual(['--   row-level security policy mine on public.notes', '--   row-level security of public.notes (enabled)'])
    } finally {
      await db.exec(`ALTER TABLE public.notes DISABLE ROW LEVEL SECURITY; DROP POLICY mine ON public.notes`)
    }
  })
})

const text = (v: string | null) => v ?? 'NULL'
