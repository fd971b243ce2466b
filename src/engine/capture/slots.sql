-- SQL for the catalog views consumers read about replication slots.
--
-- PGlite's walsender machinery is absent (no logical slots in single-user
-- mode), so its pg_catalog.pg_replication_slots is always empty. Consumers
-- (zero-cache, pg-logical-replication users, psql) query that view to find
-- their slot and its confirmed_flush_lsn, so tabgres replaces it with a view
-- of the same columns and types over the engine's slot file
-- (replication/slot-store.ts), read with pg_read_file at query time: it shows
-- a slot the moment it exists, whatever transaction the reader is in, just as
-- PostgreSQL's view reads shared memory. Replacing (rather than shadowing
-- through search_path) makes schema-qualified queries work too.
-- Column list: PostgreSQL 18's system_views.sql (PGlite 0.5.17 is 18.7).

-- The slot file's records, read at each call (VOLATILE: never cached in a plan).
DO $$ BEGIN
  IF to_regtype('_tabgres.slot_record') IS NULL THEN
    CREATE TYPE _tabgres.slot_record AS (slot_name text, plugin text, temporary boolean, restart_lsn pg_lsn,
      confirmed_flush_lsn pg_lsn, created_at timestamptz, active_pid int, inactive_since timestamptz);
  END IF;
END $$;
CREATE OR REPLACE FUNCTION _tabgres.slot_records() RETURNS SETOF _tabgres.slot_record
LANGUAGE sql VOLATILE AS $$
  SELECT * FROM json_to_recordset(COALESCE(pg_catalog.pg_read_file('pg_tabgres/slots.json', true), '[]')::json)
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

-- A built-in function cannot be replaced in place: fmgr calls a function
-- whose OID is in its built-in table straight from that table, without
-- reading pg_proc, so CREATE OR REPLACE would change the catalog row and not
-- what runs (only an inlined SQL body escapes that; capture/advisory.sql).
-- So the built-in row goes and the replacement is a new function with the
-- same signature and a new OID. The C function stays reachable under a name
-- of ours (LANGUAGE internal) where the replacement needs it.
CREATE OR REPLACE FUNCTION _tabgres.forget_builtin(signature text) RETURNS void
LANGUAGE plpgsql VOLATILE SET allow_system_table_mods = on AS $$
DECLARE f oid := pg_catalog.to_regprocedure(signature);
BEGIN
  -- 16384 is FirstNormalObjectId: below it, the OID is initdb's.
  IF f IS NOT NULL AND f < 16384 THEN
    DELETE FROM pg_catalog.pg_proc WHERE oid = f;
  END IF;
END $$;

-- The process ID of the session running SQL (the engine lists it for the
-- advisory locks, capture/advisory.sql), as the BackendKeyData it sent:
-- clients pass it to pg_terminate_backend / pg_cancel_backend. Outside any
-- wire session (the worker API) it is PGlite's own.
CREATE OR REPLACE FUNCTION _tabgres.pglite_backend_pid() RETURNS integer
LANGUAGE internal STABLE STRICT PARALLEL RESTRICTED AS 'pg_backend_pid';
SELECT _tabgres.forget_builtin('pg_catalog.pg_backend_pid()');
CREATE OR REPLACE FUNCTION pg_catalog.pg_backend_pid() RETURNS integer
LANGUAGE sql VOLATILE AS $$
  SELECT COALESCE((pg_catalog.pg_read_file('/tmp/tabgres/advisory.json', true)::json->>'holder')::int, _tabgres.pglite_backend_pid())
$$;

-- The slot functions and pg_terminate_backend / pg_cancel_backend act on what
-- the engine owns (the slot store, the sessions), not on PGlite's backend:
-- they check what they can read (the files above), then ask the engine with
-- a control notice (SQLSTATE TG000, JSON message), which the session
-- that ran the statement carries out as the statement returns and removes
-- from what its client sees. As in PostgreSQL, what they do is not undone
-- by a rollback. PGlite's own pg_terminate_backend would end its one backend.
CREATE OR REPLACE FUNCTION _tabgres.control(request json) RETURNS void
LANGUAGE plpgsql VOLATILE SET client_min_messages = notice AS $$
BEGIN
  RAISE NOTICE USING ERRCODE = 'TG000', MESSAGE = request::text;
END $$;

CREATE OR REPLACE FUNCTION _tabgres.session_pids() RETURNS SETOF int
LANGUAGE sql VOLATILE AS $$
  SELECT value::int FROM json_array_elements_text(COALESCE(pg_catalog.pg_read_file('/tmp/tabgres/sessions.json', true), '[]')::json)
$$;

CREATE OR REPLACE FUNCTION _tabgres.signal_backend(op text, pid int) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF pid IS NULL OR pid NOT IN (SELECT _tabgres.session_pids()) THEN
    RAISE WARNING 'PID % is not a PostgreSQL backend process', pid;
    RETURN false;
  END IF;
  PERFORM _tabgres.control(json_build_object('op', op, 'pid', pid));
  RETURN true;
END $$;

SELECT _tabgres.forget_builtin('pg_catalog.pg_terminate_backend(integer, bigint)');
CREATE OR REPLACE FUNCTION pg_catalog.pg_terminate_backend(pid integer, timeout bigint DEFAULT 0) RETURNS boolean
LANGUAGE plpgsql STRICT VOLATILE AS $$
BEGIN
  IF timeout < 0 THEN RAISE EXCEPTION '"timeout" must not be negative' USING ERRCODE = '22023'; END IF;
  RETURN _tabgres.signal_backend('terminate', pid);
END $$;

SELECT _tabgres.forget_builtin('pg_catalog.pg_cancel_backend(integer)');
CREATE OR REPLACE FUNCTION pg_catalog.pg_cancel_backend(integer) RETURNS boolean
LANGUAGE sql STRICT VOLATILE AS $$ SELECT _tabgres.signal_backend('cancel', $1) $$;

CREATE OR REPLACE FUNCTION _tabgres.slot_for_change(name text) RETURNS _tabgres.slot_record
LANGUAGE plpgsql VOLATILE AS $$
DECLARE s _tabgres.slot_record;
BEGIN
  SELECT * INTO s FROM _tabgres.slot_records() r WHERE r.slot_name = name;
  IF NOT FOUND THEN RAISE EXCEPTION 'replication slot "%" does not exist', name USING ERRCODE = '42704'; END IF;
  IF s.active_pid IS NOT NULL THEN
    RAISE EXCEPTION 'replication slot "%" is active for PID %', name, s.active_pid USING ERRCODE = '55006';
  END IF;
  RETURN s;
END $$;

SELECT _tabgres.forget_builtin('pg_catalog.pg_drop_replication_slot(name)');
CREATE OR REPLACE FUNCTION pg_catalog.pg_drop_replication_slot(name) RETURNS void
LANGUAGE plpgsql STRICT VOLATILE AS $$
BEGIN
  PERFORM _tabgres.slot_for_change($1);
  PERFORM _tabgres.control(json_build_object('op', 'drop_slot', 'slot', $1));
END $$;

CREATE OR REPLACE FUNCTION _tabgres.create_slot(name text, plugin text, temporary boolean) RETURNS pg_lsn
LANGUAGE plpgsql VOLATILE AS $$
DECLARE at pg_lsn := _tabgres_sql.pg_current_wal_lsn();
BEGIN
  IF pg_catalog.txid_current_if_assigned() IS NOT NULL THEN
    RAISE EXCEPTION 'cannot create logical replication slot in transaction that has performed writes' USING ERRCODE = '25001';
  END IF;
  IF name !~ '^[a-z0-9_]{1,63}$' THEN
    RAISE EXCEPTION 'replication slot name "%" contains invalid character', name USING ERRCODE = '42602',
      HINT = 'Replication slot names may only contain lower case letters, numbers, and the underscore character.';
  END IF;
  IF EXISTS (SELECT 1 FROM _tabgres.slot_records() r WHERE r.slot_name = name) THEN
    RAISE EXCEPTION 'replication slot "%" already exists', name USING ERRCODE = '42710';
  END IF;
  IF plugin <> 'pgoutput' THEN
    RAISE EXCEPTION 'could not access file "%": No such file or directory', plugin USING ERRCODE = '58P01';
  END IF;
  PERFORM _tabgres.control(json_build_object('op', 'create_slot', 'slot', name, 'temporary', temporary, 'lsn', at::text));
  RETURN at;
END $$;

SELECT _tabgres.forget_builtin('pg_catalog.pg_create_logical_replication_slot(name, name, boolean, boolean, boolean)');
CREATE OR REPLACE FUNCTION pg_catalog.pg_create_logical_replication_slot(
  slot_name name, plugin name, temporary boolean DEFAULT false, twophase boolean DEFAULT false,
  failover boolean DEFAULT false, OUT slot_name name, OUT lsn pg_lsn)
LANGUAGE sql STRICT VOLATILE AS $$ SELECT $1, _tabgres.create_slot($1, $2, $3) $$;

CREATE OR REPLACE FUNCTION _tabgres.advance_slot(name text, upto pg_lsn) RETURNS pg_lsn
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  s _tabgres.slot_record := _tabgres.slot_for_change(name);
  moveto pg_lsn := LEAST(upto, _tabgres_sql.pg_current_wal_lsn());
BEGIN
  IF upto = '0/0'::pg_lsn THEN RAISE EXCEPTION 'invalid target WAL LSN' USING ERRCODE = '22023'; END IF;
  IF moveto < s.confirmed_flush_lsn THEN
    RAISE EXCEPTION 'cannot advance replication slot to %, minimum is %', moveto, s.confirmed_flush_lsn USING ERRCODE = '22023';
  END IF;
  PERFORM _tabgres.control(json_build_object('op', 'advance_slot', 'slot', name, 'lsn', moveto::text));
  RETURN moveto;
END $$;

SELECT _tabgres.forget_builtin('pg_catalog.pg_replication_slot_advance(name, pg_lsn)');
CREATE OR REPLACE FUNCTION pg_catalog.pg_replication_slot_advance(
  slot_name name, upto_lsn pg_lsn, OUT slot_name name, OUT end_lsn pg_lsn)
LANGUAGE sql STRICT VOLATILE AS $$ SELECT $1, _tabgres.advance_slot($1, $2) $$;
