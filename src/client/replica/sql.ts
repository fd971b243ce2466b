// SQL text for the replica applier: identifiers, literals and the row
// statements. Pure, so the quoting rules are unit-tested without a database.
// Every value travels as a text parameter: pgoutput sends each value as its
// type's text output, and `$n::text::<type>` runs that type's input function
// on the target. The inner `::text` pins the parameter's type to text, so a
// client that serializes parameters by their inferred type (PGlite turns a
// string bound to a jsonb parameter into a JSON string literal, and expects a
// Uint8Array for bytea) passes the text through untouched.

/** A quoted identifier: always quoted, embedded quotes doubled (PostgreSQL's quote_ident, unconditionally). */
export function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`
}

/**
 * A relation's qualified name. pgoutput sends an empty namespace for
 * pg_catalog only (logicalrep_write_namespace).
 */
export function qualified(namespace: string, name: string): string {
  return `${ident(namespace === '' ? 'pg_catalog' : namespace)}.${ident(name)}`
}

/** A one-dimensional array literal of text elements, every element quoted. */
export function textArray(values: readonly string[]): string {
  return `{${values.map((v) => `"${v.replace(/[\\"]/g, (c) => `\\${c}`)}"`).join(',')}}`
}

/** A column as the applier knows it: its name and its type as the target spells it. */
export interface ColumnRef {
  name: string
  type: string
}

/** A value for one column: text output, null, or unchanged (absent). */
export type Cell = string | null | undefined

/** Accumulates `$n` parameters for one statement. */
export class Params {
  readonly values: (string | null)[] = []

  /** `$n::text::<type>` for a non-null value. */
  typed(value: string, type: string): string {
    this.values.push(value)
    return `$${this.values.length}::text::${type}`
  }

  /** `$n::text` (no cast to the column's type). */
  text(value: string): string {
    this.values.push(value)
    return `$${this.values.length}::text`
  }
}

export interface Statement {
  sql: string
  params: (string | null)[]
}

export function insertSql(table: string, columns: readonly ColumnRef[], cells: readonly Cell[]): Statement {
  const p = new Params()
  const names: string[] = []
  const values: string[] = []
  columns.forEach((c, i) => {
    const v = cells[i]
    // An unchanged TOAST value cannot occur in an insert; leave such a column to its default.
    if (v === undefined) return
    names.push(ident(c.name))
    values.push(v === null ? 'NULL' : p.typed(v, c.type))
  })
  const sql = names.length
    ? `INSERT INTO ${table} (${names.join(', ')}) VALUES (${values.join(', ')})`
    : `INSERT INTO ${table} DEFAULT VALUES`
  return { sql, params: p.values }
}

/** How a statement finds its row: by key columns (an index can serve) or by every column (REPLICA IDENTITY FULL). */
export type Locate = { by: 'key'; columns: number[]; cells: readonly Cell[] } | { by: 'full'; cells: readonly Cell[] }

/**
 * The WHERE clause for a row. Key columns compare with the type's equality
 * (a primary key index serves it). A full-row match compares each column's
 * text output as the target prints both sides, which is exact for every type
 * (json and point have no equality operator; numeric 1.0 = 1.00 and float
 * -0 = 0 are equal but print, and so replicate, differently). It can match
 * several identical rows: the caller touches one of them.
 */
function whereSql(columns: readonly ColumnRef[], locate: Locate, p: Params): string {
  const parts: string[] = []
  const indexes = locate.by === 'key' ? locate.columns : columns.map((_, i) => i)
  for (const i of indexes) {
    const c = columns[i]
    const v = locate.cells[i]
    if (v === undefined) continue
    if (v === null) parts.push(`${ident(c.name)} IS NULL`)
    else if (locate.by === 'key') parts.push(`${ident(c.name)} = ${p.typed(v, c.type)}`)
    else parts.push(`${ident(c.name)}::text = (${p.typed(v, c.type)})::text`)
  }
  return parts.length ? parts.join(' AND ') : 'true'
}

/** The target rows a statement may touch: one row, by ctid, for a full-row match. */
function targetSql(table: string, columns: readonly ColumnRef[], locate: Locate, p: Params): string {
  const where = whereSql(columns, locate, p)
  if (locate.by === 'key') return where
  return `ctid = (SELECT ctid FROM ${table} WHERE ${where} LIMIT 1)`
}

/** UPDATE ... RETURNING 1: a row comes back when the located row existed. */
export function updateSql(table: string, columns: readonly ColumnRef[], locate: Locate, cells: readonly Cell[]): Statement {
  const p = new Params()
  const sets: string[] = []
  columns.forEach((c, i) => {
    const v = cells[i]
    if (v === undefined) return // unchanged TOAST: the target keeps its value
    sets.push(`${ident(c.name)} = ${v === null ? 'NULL' : p.typed(v, c.type)}`)
  })
  // Every column unchanged (or none at all): still check that the row exists.
  if (!sets.length) {
    const where = targetSql(table, columns, locate, p)
    return { sql: `SELECT 1 FROM ${table} WHERE ${where} LIMIT 1`, params: p.values }
  }
  const where = targetSql(table, columns, locate, p)
  return { sql: `UPDATE ${table} SET ${sets.join(', ')} WHERE ${where} RETURNING 1`, params: p.values }
}

export function deleteSql(table: string, columns: readonly ColumnRef[], locate: Locate): Statement {
  const p = new Params()
  const where = targetSql(table, columns, locate, p)
  return { sql: `DELETE FROM ${table} WHERE ${where} RETURNING 1`, params: p.values }
}
