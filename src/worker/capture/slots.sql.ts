// SQL for the catalog views consumers read about replication slots.
//
// PGlite's walsender machinery is absent (no logical slots in single-user
// mode), so its pg_catalog.pg_replication_slots is always empty. Consumers
// (zero-cache, pg-logical-replication users, psql) query that view to find
// their slot and its confirmed_flush_lsn, so tabgres replaces it with a view
// of the same columns and types over the engine's slot file
// (replication/slot-store.ts), read with pg_read_file at query time: it shows
// a slot the moment it exists, whatever transaction the reader is in, just as
// PostgreSQL's view reads shared memory. Replacing (rather than shadowing
// through search_path) makes schema-qualified queries work too.
// Column list: PostgreSQL 18's system_views.sql (PGlite 0.5.17 is 18.7).

import { SLOTS_FILE } from '../replication/slot-store'

export const SLOTS_SQL = /* sql */ `
-- The slot file's records, read at each call (VOLATILE: never cached in a plan).
CREATE OR REPLACE FUNCTION _tabgres.slot_records()
RETURNS TABLE (slot_name text, plugin text, temporary boolean, restart_lsn pg_lsn, confirmed_flush_lsn pg_lsn,
               created_at timestamptz, active_pid int, inactive_since timestamptz)
LANGUAGE sql VOLATILE AS $$
  SELECT * FROM json_to_recordset(COALESCE(pg_catalog.pg_read_file('${SLOTS_FILE}', true), '[]')::json)
    AS s(slot_name text, plugin text, temporary boolean, restart_lsn pg_lsn, confirmed_flush_lsn pg_lsn,
         created_at timestamptz, active_pid int, inactive_since timestamptz)
$$;

SET allow_system_table_mods = on;
CREATE OR REPLACE VIEW pg_catalog.pg_replication_slots AS
  SELECT s.slot_name::name COLLATE "C" AS slot_name,
         s.plugin::name COLLATE "C" AS plugin,
         'logical'::text AS slot_type,
         d.oid AS datoid,
         d.datname AS database,
         s.temporary,
         s.active_pid IS NOT NULL AS active,
         s.active_pid,
         NULL::xid AS xmin,
         NULL::xid AS catalog_xmin,
         s.restart_lsn,
         s.confirmed_flush_lsn,
         'reserved'::text AS wal_status,
         NULL::int8 AS safe_wal_size,
         false AS two_phase,
         NULL::pg_lsn AS two_phase_at,
         CASE WHEN s.active_pid IS NULL THEN s.inactive_since END AS inactive_since,
         false AS conflicting,
         NULL::text AS invalidation_reason,
         false AS failover,
         false AS synced
    FROM _tabgres.slot_records() s
    LEFT JOIN pg_database d ON d.datname = current_database();

-- PostgreSQL 18's pg_publication_tables, less the engine's own tables: to
-- PostgreSQL they are user tables (their OIDs are above FirstNormalObjectId),
-- so FOR ALL TABLES and FOR TABLES IN SCHEMA would list them, although the
-- capture never streams them. Consumers read this view to learn what a
-- publication carries (a subscriber copies those tables), so it must name
-- exactly what the stream carries.
CREATE OR REPLACE VIEW pg_catalog.pg_publication_tables AS
  SELECT p.pubname,
         n.nspname AS schemaname,
         c.relname AS tablename,
         (SELECT array_agg(a.attname ORDER BY a.attnum)
            FROM pg_attribute a
           WHERE a.attrelid = gpt.relid AND a.attnum = ANY (gpt.attrs::smallint[])) AS attnames,
         pg_get_expr(gpt.qual, gpt.relid) AS rowfilter
    FROM pg_publication p,
         LATERAL pg_get_publication_tables(VARIADIC ARRAY[p.pubname::text]) gpt(pubid, relid, attrs, qual),
         pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE c.oid = gpt.relid AND n.nspname NOT IN ('_tabgres', '_tabgres_sql');
RESET allow_system_table_mods;

-- The ancestor's (orez) view, kept for its clients.
CREATE OR REPLACE VIEW public._zero_replication_slots AS
  SELECT slot_name, plugin, 'logical'::text AS slot_type, current_database()::text AS database, temporary,
         restart_lsn::text AS restart_lsn, confirmed_flush_lsn::text AS confirmed_flush_lsn, 'reserved'::text AS wal_status,
         created_at
    FROM _tabgres.slot_records();
`

/** Slots an older version kept in a table, read once into the slot file; then the table goes. */
export const LEGACY_SLOTS_SQL = /* sql */ `
SELECT slot_name, plugin, temporary::text, confirmed_flush_lsn::text, restart_lsn::text, created_at::text FROM _tabgres.slots`
