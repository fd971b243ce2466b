// A walsender session's output settings. PostgreSQL's pgoutput prints each
// value with its type's output function in the walsender's own session, so a
// replication connection that sets DateStyle, IntervalStyle, TimeZone,
// extra_float_digits or bytea_output (startup options, or SET) receives
// values in that form. The change log keeps text in canonical settings
// (capture/log.sql), so a session whose settings print differently has its
// values of the affected types printed again, by PostgreSQL itself
// (_tabgres.restyle in capture/reader.sql), one query per batch.

import { literal } from './exclusive'
import type { CatalogHistory } from './catalog'
import type { ChangeRow } from './reader'

/** DateStyle, IntervalStyle, TimeZone, extra_float_digits, bytea_output. */
export type OutputStyle = [string, string, string, string, string]

/** Types whose text output any of those settings changes (arrays and ranges of them too). */
const AFFECTED = new Set([
  17, 700, 701, 1082, 1083, 1114, 1184, 1186, 1266, // bytea, float4/8, date, time, timestamp(tz), interval, timetz
  1001, 1021, 1022, 1182, 1183, 1115, 1185, 1187, 1270, // their arrays
  3908, 3910, 3912, 4533, 4534, 4535, // ts/tstz/date ranges and multiranges
])

const UTC = new Set(['utc', 'gmt', 'etc/utc', 'etc/gmt', 'zulu', 'uct', 'etc/uct', 'etc/zulu', 'universal', 'etc/universal'])

/**
 * The session's style, or null when it prints every value as the change log
 * holds it: ISO dates (the field order does not change ISO output), postgres
 * intervals, a UTC zone, extra_float_digits >= 1 (shortest exact, as 1), hex bytea.
 */
export function outputStyle(show: (name: string) => string): OutputStyle | null {
  const style: OutputStyle = [show('DateStyle'), show('IntervalStyle'), show('TimeZone'), show('extra_float_digits'), show('bytea_output')]
  const canonical =
    /^iso\b/i.test(style[0]) &&
    style[1].toLowerCase() === 'postgres' &&
    UTC.has(style[2].toLowerCase()) &&
    Number(style[3]) >= 1 &&
    style[4].toLowerCase() === 'hex'
  return canonical ? null : style
}

/** Where a restyled value goes back: a row's parsed fields and the column. */
type Target = { fields: (string | null)[]; index: number }

/**
 * The query that prints the batch's affected values in `style`, and where
 * its results go (applyRestyle); null when the batch has none.
 */
export function restyleQuery(rows: ChangeRow[], catalog: CatalogHistory, style: OutputStyle): { sql: string; targets: Target[] } | null {
  const targets: Target[] = []
  const types: number[] = []
  const values: string[] = []
  for (const row of rows) {
    if (row.op !== 'I' && row.op !== 'U' && row.op !== 'D') continue
    const shape = catalog.relation(row.relid, row.seq)?.value
    if (!shape) continue
    shape.columns.forEach((c, index) => {
      if (!AFFECTED.has(c.typeOid)) return
      for (const fields of [row.newFields, row.oldFields]) {
        const v = fields?.[index]
        if (v === null || v === undefined) continue
        targets.push({ fields: fields!, index })
        types.push(c.typeOid)
        values.push(v)
      }
    })
  }
  if (targets.length === 0) return null
  const sql =
    `SELECT v FROM _tabgres.restyle(ARRAY[${style.map(literal).join(',')}]::text[], ` +
    `ARRAY[${types.join(',')}]::oid[]::regtype[], ARRAY[${values.map(literal).join(',')}]::text[]) ORDER BY i`
  return { sql, targets }
}

export function applyRestyle(targets: Target[], result: (string | null)[][]): void {
  targets.forEach((t, k) => (t.fields[t.index] = result[k][0]))
}
