// A SQL dump of the database in pg_dump's plain format, for leaving the tab
// for a real PostgreSQL (15 or later): `psql -v ON_ERROR_STOP=1 -f dump.sql`
// loads it. Same order as pg_dump: schema objects, then the data as COPY
// blocks, then sequence positions, keys, indexes, foreign keys, triggers,
// replica identities and publications (keys after the data so the load does
// not check row by row).
//
// It is written here rather than by pg_dump because the dump must load into
// an older server: PGlite is PostgreSQL 18, and pg_dump writes for its own
// version (settings and syntax PostgreSQL 15 refuses). Definitions still come
// from PostgreSQL's own pg_get_*def functions (./catalog.ts). tabgres's own
// objects (its schemas, its capture triggers) are left out; what the dump
// cannot carry is listed in its header, never dropped in silence.
//
// One REPEATABLE READ transaction, with the database to itself (no other
// session's transaction open), so the dump is one consistent snapshot.

import type { PGlite } from '@electric-sql/pglite'
import { idle, literal, type IdleSession, type Rows } from '../replication/exclusive'
import * as q from './catalog'
import { copyRow } from './copy-text'

/** The settings the values are printed in: what pg_dump sets, so any server reads them back the same. */
const SNAPSHOT = `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;
  SET LOCAL search_path = ''; SET LOCAL DateStyle = 'ISO, MDY'; SET LOCAL IntervalStyle = 'postgres';
  SET LOCAL extra_float_digits = 3; SET LOCAL bytea_output = 'hex'; SET LOCAL TimeZone = 'UTC'`

const HEADER = `--
-- PostgreSQL database dump, written by tabgres for PostgreSQL 15 or later
--

SET statement_timeout = 0;
SET lock_timeout = 0;
SET idle_in_transaction_session_timeout = 0;
SET client_encoding = 'UTF8';
SET standard_conforming_strings = on;
SELECT pg_catalog.set_config('search_path', '', false);
SET check_function_bodies = false;
SET xmloption = content;
SET client_min_messages = warning;
SET row_security = off;
`

export async function dumpDatabase(db: PGlite): Promise<string> {
  return idle(db, async (s) => {
    await s.query(SNAPSHOT)
    try {
      return await write(s)
    } finally {
      await s.query('ROLLBACK')
    }
  })
}

async function write(s: IdleSession): Promise<string> {
  const out: string[] = [HEADER]
  const section = (title: string, lines: string[]) => {
    if (lines.length > 0) out.push(`\n--\n-- ${title}\n--\n\n${lines.join('\n')}\n`)
  }

  const notes = await s.query(q.NOT_DUMPED)
  if (notes.length > 0) {
    out.push(`\n-- Not in this dump as it is in the database:\n${notes.map(([n]) => `--   ${n}`).join('\n')}\n`)
  }

  section('Schemas', (await s.query(q.SCHEMAS)).map(([n]) => `CREATE SCHEMA ${n};`))
  section('Extensions', (await s.query(q.EXTENSIONS)).map(([e, n]) => `CREATE EXTENSION IF NOT EXISTS ${e} WITH SCHEMA ${n};`))
  section('Types', (await s.query(q.TYPES)).map(typeDef))
  section('Functions', (await s.query(q.FUNCTIONS)).map(([def]) => `${def};`))

  const sequences = await s.query(q.SEQUENCES)
  section('Sequences', sequences.map(sequenceDef))

  const tables = await s.query(q.TABLES)
  const tableLines: string[] = []
  const data: string[] = []
  const identities: string[] = []
  for (const [relid, name, kind, partKey, parent, bound, replident, comment] of tables) {
    const columns = await s.query(q.COLUMNS(relid!))
    tableLines.push(...tableDef(name!, kind!, partKey, parent, bound, columns))
    if (comment !== null) tableLines.push(`COMMENT ON TABLE ${name} IS ${literal(comment)};`)
    for (const [col, , , , , , , , colComment] of columns) {
      if (colComment !== null) tableLines.push(`COMMENT ON COLUMN ${name}.${col} IS ${literal(colComment)};`)
    }
    if (replident === 'f') identities.push(`ALTER TABLE ONLY ${name} REPLICA IDENTITY FULL;`)
    if (replident === 'n') identities.push(`ALTER TABLE ONLY ${name} REPLICA IDENTITY NOTHING;`)
    if (kind === 'r') data.push(await tableData(s, name!, columns))
  }
  section('Tables', tableLines)
  section('Sequence ownership', sequences.filter((r) => r[9] !== null).map((r) => `ALTER SEQUENCE ${r[1]} OWNED BY ${r[9]};`))

  const views = await s.query(q.VIEWS)
  section('Views', views.map(([kind, name, def]) => kind === 'm'
    ? `CREATE MATERIALIZED VIEW ${name} AS\n${trimDef(def!)}\n  WITH NO DATA;`
    : `CREATE VIEW ${name} AS\n${trimDef(def!)};`))

  if (data.length > 0) out.push(`\n--\n-- Data\n--\n\n${data.join('\n')}`)
  section('Sequence positions', (await s.query(q.SEQUENCE_VALUES)).map(([name, value, called]) =>
    `SELECT pg_catalog.setval(${literal(name!)}, ${value}, ${called});`))

  const constraints = await s.query(q.CONSTRAINTS)
  const alter = (table: string, partitioned: string | null) => (partitioned === 'true' ? `ALTER TABLE ${table}` : `ALTER TABLE ONLY ${table}`)
  section('Keys and checks', constraints.filter((c) => c[3] === 'false').map(([t, n, def, , p]) => `${alter(t!, p)} ADD CONSTRAINT ${n} ${def};`))
  // An index on a partitioned table made ON ONLY would not reach its partitions (whose own are not listed).
  section('Indexes', (await s.query(q.INDEXES)).map(([def]) => `${def!.replace(/ ON ONLY /, ' ON ')};`))
  section('Foreign keys', constraints.filter((c) => c[3] === 'true').map(([t, n, def, , p]) => `${alter(t!, p)} ADD CONSTRAINT ${n} ${def};`))
  section('Triggers', (await s.query(q.TRIGGERS)).map(([def]) => `${def};`))
  const usingIndex = (await s.query(q.IDENTITY_INDEXES)).map(([t, i]) => `ALTER TABLE ONLY ${t} REPLICA IDENTITY USING INDEX ${i};`)
  section('Replica identities', [...identities, ...usingIndex])
  section('Publications', (await s.query(q.PUBLICATIONS)).map(publicationDef))
  section('Materialized view contents', views.filter(([k]) => k === 'm').map(([, name]) => `REFRESH MATERIALIZED VIEW ${name};`))
  out.push('\n--\n-- PostgreSQL database dump complete\n--\n')
  return out.join('')
}

function typeDef([kind, name, def]: (string | null)[]): string {
  if (kind === 'e') return `CREATE TYPE ${name} AS ENUM (${def ?? ''});`
  if (kind === 'c') return `CREATE TYPE ${name} AS (${def ?? ''});`
  return `CREATE DOMAIN ${name} AS ${def};`
}

function sequenceDef([, name, type, start, increment, min, max, cache, cycle]: (string | null)[]): string {
  return `CREATE SEQUENCE ${name} AS ${type} START WITH ${start} INCREMENT BY ${increment} MINVALUE ${min} MAXVALUE ${max} CACHE ${cache}${cycle === 'true' ? ' CYCLE' : ''};`
}

function tableDef(name: string, kind: string, partKey: string | null, parent: string | null, bound: string | null, columns: Rows): string[] {
  if (parent !== null) return [`CREATE TABLE ${name} PARTITION OF ${parent} ${bound};`]
  const cols = columns.map(([col, type, collation, def, notNull, identity, identityOptions, generated]) => {
    let line = `    ${col} ${type}`
    if (collation !== null) line += ` COLLATE ${collation}`
    if (generated === 's' || generated === 'v') line += ` GENERATED ALWAYS AS (${def}) STORED`
    else if (identity === 'a' || identity === 'd') {
      line += ` GENERATED ${identity === 'a' ? 'ALWAYS' : 'BY DEFAULT'} AS IDENTITY (${identityOptions ?? ''})`
    } else if (def !== null) line += ` DEFAULT ${def}`
    if (notNull === 'true') line += ' NOT NULL'
    return line
  })
  return [`CREATE TABLE ${name} (\n${cols.join(',\n')}\n)${kind === 'p' ? ` PARTITION BY ${partKey}` : ''};`]
}

/** One table's rows as a COPY block; generated columns are computed again on load. */
async function tableData(s: IdleSession, name: string, columns: Rows): Promise<string> {
  const stored = columns.filter((c) => c[7] === '').map((c) => c[0]!)
  // A table without columns still has rows: one empty line each.
  const rows = await s.query(`SELECT ${stored.join(', ')} FROM ONLY ${name}`)
  const list = stored.length > 0 ? ` (${stored.join(', ')})` : ''
  return `COPY ${name}${list} FROM stdin;\n${rows.map((r) => `${copyRow(r)}\n`).join('')}\\.\n`
}

function publicationDef([name, all, actions, viaRoot, tables, schemas]: (string | null)[]): string {
  const what = all === 'true'
    ? ' FOR ALL TABLES'
    : [tables && `TABLE ${tables}`, schemas && `TABLES IN SCHEMA ${schemas}`].filter(Boolean).map((w, i) => (i === 0 ? ` FOR ${w}` : `, ${w}`)).join('')
  return `CREATE PUBLICATION ${name}${what} WITH (publish = ${literal(actions ?? '')}, publish_via_partition_root = ${viaRoot});`
}

/** A view's query as pg_get_viewdef prints it, without its final semicolon. */
const trimDef = (def: string) => def.trimEnd().replace(/;$/, '')
