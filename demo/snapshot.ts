// The replica's initial copy, as PostgreSQL's table synchronization does it:
// in one transaction on the primary, read the current WAL position and every
// published table (its shape and its rows, as text). The replica loads that,
// then streams from the position, so each later commit is applied exactly
// once: transactions at or below it are in the copy, the slot sends only
// those after it. Only public SQL is used (a consumer of a real PostgreSQL
// server would send the same queries).

import type { Database, PgoutputMessage } from '../src/client'
import { ident } from './checksum'

export type Relation = Extract<PgoutputMessage, { tag: 'R' }>

export interface TableCopy {
  relation: Relation
  rows: (string | null)[][]
}

export interface Snapshot {
  lsn: string
  tables: TableCopy[]
}

export async function takeSnapshot(db: Database, publication: string): Promise<Snapshot> {
  return db.transaction(async (tx) => {
    const [{ lsn }] = (await tx.query<{ lsn: string }>('SELECT pg_current_wal_lsn()::text AS lsn')).rows
    const rels = await tx.query<{ oid: number; nspname: string; relname: string; relreplident: string }>(
      `SELECT c.oid::int8::float8 AS oid, n.nspname, c.relname, c.relreplident::text
         FROM pg_publication_tables pt
         JOIN pg_namespace n ON n.nspname = pt.schemaname
         JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = pt.tablename
        WHERE pt.pubname = $1 ORDER BY 2, 3`,
      [publication],
    )
    const tables: TableCopy[] = []
    for (const r of rels.rows) {
      // The columns pgoutput's Relation message carries: not dropped, not
      // generated, flagged when part of the replica identity.
      const cols = await tx.query<{ name: string; type_oid: number; type_mod: number; key: boolean }>(
        `SELECT a.attname AS name, a.atttypid::int8::float8 AS type_oid, a.atttypmod AS type_mod,
                CASE c.relreplident WHEN 'f' THEN true WHEN 'n' THEN false
                  ELSE EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = c.oid AND a.attnum = ANY (i.indkey)
                                 AND ((c.relreplident = 'd' AND i.indisprimary) OR (c.relreplident = 'i' AND i.indisreplident)))
                END AS key
           FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
          WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
          ORDER BY a.attnum`,
        [r.oid],
      )
      const relation: Relation = {
        tag: 'R',
        relationOid: r.oid,
        namespace: r.nspname,
        relation: r.relname,
        replicaIdentity: r.relreplident as Relation['replicaIdentity'],
        columns: cols.rows.map((c) => ({ flags: c.key ? 1 : 0, name: c.name, typeOid: c.type_oid, typeMod: c.type_mod })),
      }
      const list = cols.rows.map((c) => `${ident(c.name)}::text`).join(', ')
      const data = cols.rows.length
        ? await tx.query<(string | null)[]>(`SELECT ${list} FROM ${ident(r.nspname)}.${ident(r.relname)}`, [], { rowMode: 'array' })
        : { rows: [] }
      tables.push({ relation, rows: data.rows })
    }
    return { lsn, tables }
  })
}
