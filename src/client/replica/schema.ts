// Keeps the target's tables shaped like the Relation messages of the stream:
// creates a table on first sight, renames it when the same relation OID comes
// with a new name, and adds, drops or retypes columns when its shape changed.
// pgoutput describes columns by name and type only (no attnum, no defaults,
// no constraints), so a column renamed on the primary arrives here as one
// dropped and one added, and a column dropped and added again under the same
// name and type looks unchanged. Column types are the target's own spelling
// of the type OID and typmod (format_type), which is exact when the target
// runs the same PostgreSQL major version as the source (a PGlite replica of
// PGlite, or of PostgreSQL 18).

import type { PgoutputMessage } from '../../protocol/pgoutput'
import { ident, qualified, textArray, type ColumnRef } from './sql'

export type RelationMessage = Extract<PgoutputMessage, { tag: 'R' }>
export type TypeMessage = Extract<PgoutputMessage, { tag: 'Y' }>

/** What the applier needs from a database session: PGlite, its Transaction, or any client that answers rows as objects. */
export interface ApplySession {
  query(sql: string, params?: unknown[]): Promise<{ rows: any[] }>
  exec(sql: string): Promise<unknown>
}

/** pgoutput's key flag on a Relation column (LOGICALREP_IS_REPLICA_IDENTITY). */
export const KEY_FLAG = 1

/**
 * Built-in types have OIDs below FirstGenbkiObjectId; pgoutput sends a Type
 * message for every other type. Those OIDs mean nothing on another cluster,
 * so they are resolved by the name the Type message gave.
 */
const FIRST_GENBKI_OBJECT_ID = 10000

/**
 * The target's spelling of each column's type. A built-in type by OID and
 * typmod. Any other type (an enum, a domain's base type, a composite, an
 * extension's type) by the namespace and name of its Type message, if the
 * target has such a type; otherwise text. Text keeps the value as the
 * primary printed it, so the replica stays equal row by row, but loses the
 * type's operators and checks: create the type on the replica beforehand
 * (CREATE TYPE ... AS ENUM ...) to keep it.
 */
export async function columnTypes(
  s: ApplySession,
  m: RelationMessage,
  types: ReadonlyMap<number, TypeMessage>,
): Promise<string[]> {
  if (m.columns.length === 0) return []
  const oids: string[] = []
  const names: string[] = []
  for (const c of m.columns) {
    const t = types.get(c.typeOid)
    if (c.typeOid < FIRST_GENBKI_OBJECT_ID) {
      oids.push(String(c.typeOid))
      names.push('')
    } else {
      oids.push('0')
      names.push(t ? qualified(t.namespace, t.typeName) : '')
    }
  }
  const { rows } = await s.query(
    `SELECT CASE WHEN u.o <> 0 AND EXISTS (SELECT 1 FROM pg_catalog.pg_type t WHERE t.oid = u.o)
                   THEN pg_catalog.format_type(u.o, u.m)
                 ELSE COALESCE(pg_catalog.format_type(pg_catalog.to_regtype(NULLIF(u.n, '')), u.m), 'text') END AS t
       FROM unnest($1::text::oid[], $2::text::int4[], $3::text::text[]) WITH ORDINALITY AS u(o, m, n, i)
      ORDER BY u.i`,
    [`{${oids.join(',')}}`, `{${m.columns.map((c) => c.typeMod).join(',')}}`, textArray(names)],
  )
  return rows.map((r) => String(r.t))
}

interface TargetTable {
  columns: ColumnRef[]
  primaryKey: { name: string; columns: string[] } | null
}

/** The target table's columns and primary key, or null when there is no such table. */
async function describe(s: ApplySession, table: string): Promise<TargetTable | null> {
  const { rows } = await s.query(
    `SELECT c.oid IS NOT NULL AS found,
            (SELECT COALESCE(json_agg(json_build_array(a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod)) ORDER BY a.attnum), '[]')::text
               FROM pg_catalog.pg_attribute a
              WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns,
            (SELECT json_build_array(k.conname, ARRAY(SELECT a.attname FROM unnest(k.conkey) WITH ORDINALITY AS u(n, i)
                                                         JOIN pg_catalog.pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.n
                                                        ORDER BY u.i))::text
               FROM pg_catalog.pg_constraint k WHERE k.conrelid = c.oid AND k.contype = 'p') AS pk
       FROM (SELECT pg_catalog.to_regclass($1::text)::oid AS oid) c`,
    [table],
  )
  const r = rows[0]
  if (!r || !r.found) return null
  const columns = (JSON.parse(String(r.columns)) as [string, string][]).map(([name, type]) => ({ name, type }))
  const pk = r.pk === null || r.pk === undefined ? null : (JSON.parse(String(r.pk)) as [string, string[]])
  return { columns, primaryKey: pk ? { name: pk[0], columns: pk[1] } : null }
}

/** The key the target's primary key should have, or null to leave it as it is. */
function wantedKey(m: RelationMessage): string[] | null {
  // Under REPLICA IDENTITY FULL every column carries the key flag and says
  // nothing about the primary key; under NOTHING no column does.
  if (m.replicaIdentity !== 'd' && m.replicaIdentity !== 'i') return null
  return m.columns.filter((c) => c.flags & KEY_FLAG).map((c) => c.name)
}

const sameList = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x, i) => x === b[i])

/**
 * Brings the target table in line with a Relation message. `previous` is the
 * last Relation seen for the same OID (its name, if it differs, is where the
 * table is now). Returns the columns as the applier binds them.
 */
export async function syncRelation(
  s: ApplySession,
  m: RelationMessage,
  previous: RelationMessage | undefined,
  types: ReadonlyMap<number, TypeMessage>,
): Promise<ColumnRef[]> {
  const wanted = await columnTypes(s, m, types)
  const columns = m.columns.map((c, i) => ({ name: c.name, type: wanted[i] }))
  const table = qualified(m.namespace, m.relation)
  const schema = ident(m.namespace === '' ? 'pg_catalog' : m.namespace)
  let current = await describe(s, table)

  if (!current && previous && (previous.namespace !== m.namespace || previous.relation !== m.relation)) {
    // The same relation OID under a new name: the primary renamed (or moved) it.
    let from = qualified(previous.namespace, previous.relation)
    if (await describe(s, from)) {
      if (previous.namespace !== m.namespace) {
        await s.exec(`CREATE SCHEMA IF NOT EXISTS ${schema}; ALTER TABLE ${from} SET SCHEMA ${schema}`)
        from = qualified(m.namespace, previous.relation)
      }
      if (previous.relation !== m.relation) await s.exec(`ALTER TABLE ${from} RENAME TO ${ident(m.relation)}`)
      current = await describe(s, table)
    }
  }

  const key = wantedKey(m)
  if (!current) {
    const defs = columns.map((c) => `${ident(c.name)} ${c.type}`)
    if (key?.length) defs.push(`PRIMARY KEY (${key.map(ident).join(', ')})`)
    await s.exec(`CREATE SCHEMA IF NOT EXISTS ${schema}; CREATE TABLE ${table} (${defs.join(', ')})`)
    return columns
  }

  const have = new Map(current.columns.map((c) => [c.name, c.type]))
  const names = new Set(columns.map((c) => c.name))
  const actions: string[] = []
  for (const c of current.columns) if (!names.has(c.name)) actions.push(`DROP COLUMN ${ident(c.name)}`)
  for (const c of columns) {
    const type = have.get(c.name)
    if (type === undefined) actions.push(`ADD COLUMN ${ident(c.name)} ${c.type}`)
    // Converted through text, as the primary's values would print and read back.
    else if (type !== c.type) actions.push(`ALTER COLUMN ${ident(c.name)} TYPE ${c.type} USING ${ident(c.name)}::text::${c.type}`)
  }
  // A dropped primary key column takes the constraint with it.
  const pk = current.primaryKey && current.primaryKey.columns.every((c) => names.has(c)) ? current.primaryKey : null
  if (key !== null && !sameList(key, pk?.columns ?? [])) {
    // A key the target lacks would let duplicates the primary refuses pass, and
    // a key the primary dropped would refuse rows the primary accepts.
    if (pk) actions.push(`DROP CONSTRAINT ${ident(pk.name)}`)
    if (key.length) actions.push(`ADD PRIMARY KEY (${key.map(ident).join(', ')})`)
  }
  if (actions.length) await s.exec(`ALTER TABLE ${table} ${actions.join(', ')}`)
  return columns
}
