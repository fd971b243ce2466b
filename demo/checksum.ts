// Per-table checksums, computed the same way on the primary and on the
// replica so equal numbers mean equal contents: the count and an md5 over the
// rows' text forms, sorted. Only the columns a subscriber receives take part
// (pgoutput sends neither dropped nor generated columns), read from each
// side's own catalog, in attribute order.

export interface Queryable {
  query<T>(sql: string, params?: unknown[]): Promise<{ rows: T[] }>
}

export interface TableRef {
  schema: string
  name: string
}

export interface TableChecksum extends TableRef {
  /** null: the table does not exist on this side (yet). */
  rows: number | null
  md5: string | null
}

/** A quoted SQL identifier. */
export const ident = (s: string) => `"${s.replace(/"/g, '""')}"`

/** A table's columns in attribute order, from this side's own catalog; `sent`: only those pgoutput sends (not generated). */
function columns(db: Queryable, t: TableRef, sent: boolean) {
  return db.query<{ attname: string }>(
    `SELECT a.attname FROM pg_attribute a
       JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped${sent ? " AND a.attgenerated = ''" : ''}
      ORDER BY a.attnum`,
    [t.schema, t.name],
  )
}

export async function checksum(db: Queryable, t: TableRef): Promise<TableChecksum> {
  const cols = await columns(db, t, true)
  if (cols.rows.length === 0) return { ...t, rows: null, md5: null }
  const row = `ROW(${cols.rows.map((c) => ident(c.attname)).join(', ')})::text`
  const r = await db.query<{ n: number; md5: string }>(
    `SELECT count(*)::int AS n, md5(coalesce(string_agg(r, E'\\n' ORDER BY r COLLATE "C"), '')) AS md5
       FROM (SELECT ${row} AS r FROM ${ident(t.schema)}.${ident(t.name)}) s`,
  )
  return { ...t, rows: r.rows[0].n, md5: r.rows[0].md5 }
}

export async function checksums(db: Queryable, tables: TableRef[]): Promise<TableChecksum[]> {
  const out: TableChecksum[] = []
  for (const t of tables) out.push(await checksum(db, t))
  return out
}

export interface TableRows {
  fields: string[]
  rows: (string | null)[][]
  /** All rows of the table (the sample shows the first `limit` by its first column). */
  total: number
}

/** The first `limit` rows of a table as text, in its first column's order: what the replica panel shows. */
export async function sampleRows(db: Queryable, t: TableRef, limit: number): Promise<TableRows | null> {
  const cols = await columns(db, t, false)
  if (cols.rows.length === 0) return null
  const fields = cols.rows.map((c) => c.attname)
  const table = `${ident(t.schema)}.${ident(t.name)}`
  const list = fields.map((f, i) => `${ident(f)}::text AS c${i}`).join(', ')
  const r = await db.query<Record<string, string | null>>(`SELECT ${list} FROM ${table} ORDER BY 1 LIMIT ${limit}`)
  const n = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)
  return { fields, rows: r.rows.map((row) => fields.map((_, i) => row[`c${i}`])), total: n.rows[0].n }
}
