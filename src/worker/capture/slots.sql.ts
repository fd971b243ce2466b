// SQL for persisted replication slots and the catalog views consumers read.
//
// PGlite's walsender machinery is absent (no logical slots in single-user
// mode), so its pg_catalog.pg_replication_slots is always empty. Consumers
// (zero-cache, pg-logical-replication users, psql) query that view to find
// their slot and its confirmed_flush_lsn, so tabgres replaces it with a view
// of the same columns and types over _tabgres.slots. Replacing (rather than
// shadowing through search_path) makes schema-qualified queries work too.
// Column list: PostgreSQL 18's system_views.sql (PGlite 0.5.17 is 18.7).

export const SLOTS_SQL = /* sql */ `
CREATE TABLE IF NOT EXISTS _tabgres.slots (
  slot_name text PRIMARY KEY,
  plugin text NOT NULL DEFAULT 'pgoutput',
  slot_type text NOT NULL DEFAULT 'logical',
  database text NOT NULL DEFAULT current_database(),
  temporary boolean NOT NULL DEFAULT false,
  restart_lsn pg_lsn NOT NULL,
  confirmed_flush_lsn pg_lsn NOT NULL,
  wal_status text NOT NULL DEFAULT 'reserved',
  created_at timestamptz NOT NULL DEFAULT now(),
  -- Liveness, meaningful only while this engine runs; reset when it opens.
  active_pid int,
  inactive_since timestamptz DEFAULT now()
);

SET allow_system_table_mods = on;
CREATE OR REPLACE VIEW pg_catalog.pg_replication_slots AS
  SELECT s.slot_name::name COLLATE "C" AS slot_name,
         s.plugin::name COLLATE "C" AS plugin,
         s.slot_type,
         d.oid AS datoid,
         s.database::name COLLATE "C" AS database,
         s.temporary,
         s.active_pid IS NOT NULL AS active,
         s.active_pid,
         NULL::xid AS xmin,
         NULL::xid AS catalog_xmin,
         s.restart_lsn,
         s.confirmed_flush_lsn,
         s.wal_status,
         NULL::int8 AS safe_wal_size,
         false AS two_phase,
         NULL::pg_lsn AS two_phase_at,
         CASE WHEN s.active_pid IS NULL THEN s.inactive_since END AS inactive_since,
         false AS conflicting,
         NULL::text AS invalidation_reason,
         false AS failover,
         false AS synced
    FROM _tabgres.slots s LEFT JOIN pg_database d ON d.datname = s.database;

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
  SELECT slot_name, plugin, slot_type, database, temporary, restart_lsn::text AS restart_lsn,
         confirmed_flush_lsn::text AS confirmed_flush_lsn, wal_status, created_at
    FROM _tabgres.slots;
`

/**
 * Run when the engine opens: no session streams yet, and temporary slots,
 * like PostgreSQL's, do not survive a restart of the server.
 */
export const SLOTS_ON_OPEN_SQL = /* sql */ `
DELETE FROM _tabgres.slots WHERE temporary;
UPDATE _tabgres.slots SET active_pid = NULL, inactive_since = now() WHERE active_pid IS NOT NULL;
`
