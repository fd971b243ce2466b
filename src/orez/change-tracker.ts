// orez compatibility (npm orez 0.0.1, tabgres's ancestor): its change-tracker
// API, kept for its clients and its tests (./change-tracker.test.ts, byte for
// byte the ancestor's). What differs from the engine's defaults lives here:
// captured changes are kept while no slot exists (getChangesSince reads
// them), tables named _zero_* are not captured, and the ancestor's
// _zero_replication_slots view exists.

import type { PGlite } from '@electric-sql/pglite'
import { installChangeTracking as installEngine, type TrackingOptions } from '../engine/install'

export interface ChangeRecord {
  id: number
  watermark: number
  table_name: string
  op: 'INSERT' | 'UPDATE' | 'DELETE'
  row_data: Record<string, unknown> | null
  old_data: Record<string, unknown> | null
  changed_at: string
}

const ZERO_TABLES = '\\_zero\\_%'

/** A row's values as typed JSON, for getChangesSince. */
const ROW_JSON_SQL = /* sql */ `
CREATE OR REPLACE FUNCTION _tabgres.row_json(rel oid, row_text text) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE j jsonb;
BEGIN
  IF row_text IS NULL THEN RETURN NULL; END IF;
  EXECUTE format('SELECT to_jsonb($1::%s)', (SELECT reltype::regtype::text FROM pg_class WHERE oid = rel))
    INTO j USING row_text;
  RETURN j;
END $$;`

const ZERO_SLOTS_VIEW = /* sql */ `
CREATE OR REPLACE VIEW public._zero_replication_slots AS
  SELECT slot_name, plugin, 'logical'::text AS slot_type, current_database()::text AS database, temporary,
         restart_lsn::text AS restart_lsn, confirmed_flush_lsn::text AS confirmed_flush_lsn, 'reserved'::text AS wal_status,
         created_at
    FROM _tabgres.slot_records()`

/** The engine with orez's defaults (see above); options override them. */
export async function installChangeTracking(db: PGlite, options: TrackingOptions = {}): Promise<void> {
  await installEngine(db, { retention: 'keep', excludeTables: [ZERO_TABLES], ...options })
  await db.exec(ZERO_SLOTS_VIEW)
  await db.exec(ROW_JSON_SQL)
}

const OP_NAMES = { I: 'INSERT', U: 'UPDATE', D: 'DELETE' } as const
/** SQL: the change c is a row change of an existing table (row_json needs its row type). */
const ROW_CHANGE = `r.relname IS NOT NULL AND c.op IN ('I', 'U', 'D')`

/** Row changes after `watermark`, oldest first, with values as typed JSON (orez's format). */
export async function getChangesSince(db: PGlite, watermark: number, limit = 1000): Promise<ChangeRecord[]> {
  const changes: ChangeRecord[] = []
  // The log also holds messages, TRUNCATEs and changes of dropped tables,
  // which this API skips: read on until `limit` row changes or the end.
  for (let after = watermark; changes.length < limit; ) {
    const want = limit - changes.length
    const { rows } = await db.query<{
      seq: string
      relname: string | null
      op: string
      row_data: Record<string, unknown> | null
      old_data: Record<string, unknown> | null
      changed_at: string
    }>(
      `SELECT c.seq::text AS seq, r.relname, c.op::text AS op,
              CASE WHEN ${ROW_CHANGE} THEN _tabgres.row_json(c.relid, c.new_row) END AS row_data,
              CASE WHEN ${ROW_CHANGE} THEN _tabgres.row_json(c.relid, c.old_row) END AS old_data,
              x.commit_time::text AS changed_at
         FROM _tabgres.changes_after($1, $2) c
         LEFT JOIN pg_class r ON r.oid = c.relid
         LEFT JOIN _tabgres.xacts x ON x.xid = c.xid
        ORDER BY c.seq`,
      [after, want],
    )
    for (const r of rows) {
      if (r.relname === null || !(r.op in OP_NAMES)) continue
      changes.push({
        id: Number(r.seq),
        watermark: Number(r.seq),
        table_name: r.relname,
        op: OP_NAMES[r.op as keyof typeof OP_NAMES],
        row_data: r.row_data,
        old_data: r.old_data,
        changed_at: r.changed_at,
      })
    }
    if (rows.length < want) break
    after = Number(rows[rows.length - 1].seq)
  }
  return changes
}

/** The position of the latest captured change (0 before any). */
export async function getCurrentWatermark(db: PGlite): Promise<number> {
  const result = await db.query<{ p: string }>('SELECT _tabgres.position()::text AS p')
  return Number(result.rows[0].p)
}
