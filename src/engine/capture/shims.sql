-- SQL-visible shims, in schema _tabgres_sql, which installChangeTracking puts
-- before pg_catalog on the search_path.

-- Logical decoding messages. PGlite writes their WAL record but nothing decodes
-- it, so these shims (found before pg_catalog on the search_path) capture them.
CREATE OR REPLACE FUNCTION _tabgres_sql.pg_logical_emit_message(transactional boolean, prefix text, content bytea, flush boolean DEFAULT false)
RETURNS pg_lsn LANGUAGE plpgsql AS $$
DECLARE x bigint := _tabgres.xact();
BEGIN
  INSERT INTO _tabgres.statement_changes (first_seq, n, xid, relid, op, new_rows, old_rows)
    VALUES (nextval('_tabgres.change_seq'), 1, x, 0, CASE WHEN transactional THEN 'M' ELSE 'm' END,
            ARRAY[encode(content, 'hex')], ARRAY[prefix]);
  RETURN _tabgres_sql.pg_current_wal_lsn();
END $$;

CREATE OR REPLACE FUNCTION _tabgres_sql.pg_logical_emit_message(transactional boolean, prefix text, content text, flush boolean DEFAULT false)
RETURNS pg_lsn LANGUAGE sql AS $$
  SELECT _tabgres_sql.pg_logical_emit_message(transactional, prefix, convert_to(content, 'UTF8'), flush)
$$;

-- WAL positions as the replication stream numbers them (_tabgres.position_lsn
-- is made from engine/replication/positions.ts, the one formula).
CREATE OR REPLACE FUNCTION _tabgres_sql.pg_current_wal_lsn() RETURNS pg_lsn
LANGUAGE sql STABLE AS $$ SELECT _tabgres.position_lsn(_tabgres.position()) $$;
CREATE OR REPLACE FUNCTION _tabgres_sql.pg_current_wal_insert_lsn() RETURNS pg_lsn
LANGUAGE sql STABLE AS $$ SELECT _tabgres_sql.pg_current_wal_lsn() $$;
CREATE OR REPLACE FUNCTION _tabgres_sql.pg_current_wal_flush_lsn() RETURNS pg_lsn
LANGUAGE sql STABLE AS $$ SELECT _tabgres_sql.pg_current_wal_lsn() $$;

-- tabgres provides logical decoding, so it reports wal_level = logical.
CREATE OR REPLACE FUNCTION _tabgres_sql.current_setting(setting_name text) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN lower(setting_name) = 'wal_level' THEN 'logical' ELSE pg_catalog.current_setting(setting_name) END
$$;
CREATE OR REPLACE FUNCTION _tabgres_sql.current_setting(setting_name text, missing_ok boolean) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN lower(setting_name) = 'wal_level' THEN 'logical' ELSE pg_catalog.current_setting(setting_name, missing_ok) END
$$;
